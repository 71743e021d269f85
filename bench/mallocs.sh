#!/usr/bin/env bash
# Heap allocations per answer as the C library sees them: glibc malloc calls made by the
# server process (Rust's allocator and C libraries such as aws-lc alike) while it answers a
# bounded number of queries, counted with a perf uprobe on libc's malloc. The server's own
# counter (`shardns_request_allocations_total`) sees only Rust's allocations; this sees all.
# Usage: bench/mallocs.sh ZONE_NAME ZONE_FILE QUERY_FILE [QUERIES]   (root; perf, dnsperf, dig)
#        SHARDNS_BIN=PATH to run that binary instead of target/release/shardns
# Output: one line "queries N mallocs M frees F per-query X".
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=$1 ZFILE=$2 QFILE=$3 N=${4:-20000}
BIN=${SHARDNS_BIN:-target/release/shardns}
PORT=${PORT:-5931}
LIBC=$(ldd "$BIN" | awk '/libc\.so/{print $3}')
perf probe -q -x "$LIBC" --add malloc 2>/dev/null || true
perf probe -q -x "$LIBC" --add free 2>/dev/null || true
OUT=$(mktemp -d)
"$BIN" serve --listen 127.0.0.1:$PORT --zone "$NAME=$ZFILE" --workers 1 >"$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$OUT"' EXIT
for _ in $(seq 100); do
  dig +short +tries=1 +time=1 @127.0.0.1 -p $PORT "$NAME" SOA >/dev/null 2>&1 && break
  sleep 0.1
done
# Counting starts after the first answer, so start-up's allocations are not counted.
perf stat -e probe_libc:malloc,probe_libc:free -p $SERVER -x, -o "$OUT/stat" &
STAT=$!
sleep 0.5
SENT=$(dnsperf -s 127.0.0.1 -p $PORT -d "$QFILE" -n $((N / $(wc -l < "$QFILE") + 1)) -c 2 -D -q 100 -l 60 \
  | awk '/Queries completed/{print $3}')
sleep 0.5
kill -INT $STAT; wait $STAT 2>/dev/null || true
M=$(awk -F, '/probe_libc:malloc/{print $1}' "$OUT/stat")
F=$(awk -F, '/probe_libc:free/{print $1}' "$OUT/stat")
python3 -c "import sys; q,m,f=map(int,sys.argv[1:]); print(f'queries {q} mallocs {m} frees {f} per-query {m/q:.4f}')" "$SENT" "$M" "$F"
