#!/usr/bin/env bash
# A build with nothing changed must do nothing: no build script run again, no crate compiled,
# no binary linked again (a release link is fat LTO, over a minute). Builds the binary once,
# then again, and fails if the second build did any work. Arguments go to both cargo builds
# (CI passes none: the debug build its tests already made; `--release` checks the release
# profile the same way).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -p shardns --locked "$@"
second=$(cargo build -p shardns --locked -v "$@" 2>&1)
if grep -E '^\s*(Compiling|Running) ' <<<"$second"; then
  echo "noop-build: the second build did work (above): something it watches changes on every build" >&2
  exit 1
fi
echo "noop-build: the second build did nothing"
