#!/usr/bin/env bash
# Zone loading: time from process start to the first answer, and resident memory after load,
# for shardns and knotd on the same 1,276,513-record zone, interleaved (A B A B), 3 rounds.
# Usage: bench/zone-load.sh [ROUNDS]   (needs knotd, dig; builds shardns in release)
# Output: a markdown table on stdout; raw figures in $OUT (default /tmp/shardns-zone-load).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
OUT=${OUT:-/tmp/shardns-zone-load}; mkdir -p "$OUT"
ZONES=$OUT/zones
[ -s "$ZONES/big.test.zone" ] || python3 bench/gen_zones.py "$ZONES" big
cargo build --release -q -p shardns
BIN=${CARGO_TARGET_DIR:-target}/release/shardns
PORT_S=5541 PORT_K=5542

# knotd: one zone, no journal, no DNSSEC; the same settings the peers' figures used.
K=$OUT/knot; mkdir -p "$K/db"
cat > "$K/knot.conf" <<K
server:
    rundir: "$K"
    pidfile: "$K/knot.pid"
    listen: 127.0.0.1@$PORT_K
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
control:
    listen: "$K/knot.sock"
log:
  - target: stderr
    any: warning
database:
    storage: "$K/db"
template:
  - id: default
    storage: "$ZONES"
    zonefile-sync: -1
    zonefile-load: whole
    journal-content: none
    semantic-checks: off
zone:
  - domain: big.test
    file: big.test.zone
K

now() { date +%s.%N; }
# run_one NAME PORT CMD... -> prints "seconds rss_kib"
run_one() { local name=$1 port=$2; shift 2; local t0 pid secs rss
  cat "$ZONES/big.test.zone" > /dev/null   # same warm page cache for both
  rm -rf "$K/db"/*
  t0=$(now); "$@" > "$OUT/$name.log" 2>&1 & pid=$!
  while :; do
    if [ -n "$(dig @127.0.0.1 -p "$port" big.test SOA +norec +time=1 +tries=1 +short 2>/dev/null | grep -v '^;')" ]; then break; fi
    kill -0 "$pid" 2>/dev/null || { echo "$name died: $(tail -3 "$OUT/$name.log")" >&2; echo "FAIL 0"; return; }
    awk -v a="$t0" -v b="$(now)" 'BEGIN{exit !(b-a>120)}' && { kill "$pid"; echo "TIMEOUT 0"; return; }
    sleep 0.02
  done
  secs=$(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.3f", b-a}')
  sleep 2
  rss=$(awk '/^VmRSS/{print $2}' "/proc/$pid/status")
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  echo "$secs $rss"; }

: > "$OUT/raw.tsv"
for r in $(seq "$ROUNDS"); do
  read -r s m < <(run_one shardns $PORT_S "$BIN" serve --listen 127.0.0.1:$PORT_S --zone "big.test=$ZONES/big.test.zone" --workers 1)
  printf 'shardns\t%s\t%s\n' "$s" "$m" | tee -a "$OUT/raw.tsv" >&2
  read -r s m < <(run_one knotd $PORT_K knotd -c "$K/knot.conf")
  printf 'knotd\t%s\t%s\n' "$s" "$m" | tee -a "$OUT/raw.tsv" >&2
done

python3 - "$OUT/raw.tsv" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
by = {}
for name, secs, rss in rows:
    by.setdefault(name, []).append((float(secs), int(rss)))
print("| server | median s to first answer | runs s | median RSS MiB |")
print("|---|---|---|---|")
med = {}
for name in ("shardns", "knotd"):
    v = by.get(name, [])
    if not v:
        continue
    med[name] = statistics.median(s for s, _ in v)
    print("| %s | %.2f | %s | %.0f |" % (name, med[name], "/".join("%.2f" % s for s, _ in v),
                                        statistics.median(m for _, m in v) / 1024))
if "shardns" in med and "knotd" in med:
    print("\nknotd / shardns load time: %.1fx" % (med["knotd"] / med["shardns"]))
PY
