//! signing::tools -- the operator's commands: `shardns key list|ds` and `shardns sign`.
