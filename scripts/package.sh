#!/usr/bin/env bash
# Builds the Debian package: a release build, the man pages (`shardns man`), then cargo-deb
# (installed with `cargo install cargo-deb --locked` if missing). Prints the .deb's path.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-deb >/dev/null 2>&1 || cargo install cargo-deb --locked --quiet
cargo build --release --locked -q -p shardns -p shardns-bench
TARGET=${CARGO_TARGET_DIR:-target}
rm -rf target/man
"$TARGET/release/shardns" man target/man
cargo deb --no-build --locked -p shardns 2>&1 | tail -1
