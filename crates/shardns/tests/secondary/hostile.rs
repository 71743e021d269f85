//! A primary of our own making that misbehaves.
