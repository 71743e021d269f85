//! shardns -> shardns -> shardns.
