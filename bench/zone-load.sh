#!/usr/bin/env bash
# Zone loading: time from process start to the first answer, and resident memory after load,
# for shardns and knotd on the same 1,276,513-record zone, interleaved (A B A B), 3 rounds.
# Usage: bench/zone-load.sh [ROUNDS]   (needs knotd, dig; builds shardns in release)
#        ZFILE=big.test.signed.zone bench/zone-load.sh   the same zone signed (gen_zones.py's
#        big zone through dnssec-signzone; see docs/BENCHMARKS.md), from $OUT/zones
# Output: a markdown table on stdout; raw figures in $OUT (default /tmp/shardns-zone-load).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
OUT=${OUT:-/tmp/shardns-zone-load}; mkdir -p "$OUT"
ZONES=$OUT/zones
ZFILE=${ZFILE:-big.test.zone}
[ -s "$ZONES/big.test.zone" ] || python3 bench/gen_zones.py "$ZONES" big
[ -s "$ZONES/$ZFILE" ] || { echo "no $ZONES/$ZFILE" >&2; exit 1; }
# SHARDNS_BIN=PATH runs that binary instead of building; SHARDNS_BASE=PATH also runs a second
# one in each round (row "shardns-base"), for an A/B of two builds beside knotd.
if [ -n "${SHARDNS_BIN:-}" ]; then BIN=$SHARDNS_BIN; else
  cargo build --release -q -p shardns
  BIN=${CARGO_TARGET_DIR:-target}/release/shardns
fi
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
    file: $ZFILE
K

# run_one NAME PORT CMD... -> prints "seconds rss_kib". A small poller starts the server and
# sends an SOA query over UDP every 5 ms until one is answered, so the measurement adds a few
# milliseconds at most (a shell loop around dig adds ~100 ms); then RSS is read 2 s later.
run_one() { local name=$1 port=$2; shift 2
  cat "$ZONES/$ZFILE" > /dev/null   # same warm page cache for both
  rm -rf "${K:?}/db"/*
  python3 - "$name" "$port" "$OUT/$name.log" "$@" <<'PY'
import os, signal, socket, struct, subprocess, sys, time
name, port, log, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
q = struct.pack(">HHHHHH", 0x5a5a, 0, 1, 0, 0, 0) + b"\x03big\x04test\x00" + struct.pack(">HH", 6, 1)
t0 = time.monotonic()
srv = subprocess.Popen(cmd, stdout=open(log, "wb"), stderr=subprocess.STDOUT)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.005)
secs = None
while time.monotonic() - t0 < 120 and srv.poll() is None:
    try:
        s.sendto(q, ("127.0.0.1", port))
        r, _ = s.recvfrom(4096)
        if len(r) > 12 and r[:2] == q[:2] and r[3] & 0x0F == 0 and struct.unpack(">H", r[6:8])[0] > 0:
            secs = time.monotonic() - t0
            break
    except (socket.timeout, ConnectionRefusedError):
        time.sleep(0.005)
if secs is None:
    print(f"{name} gave no answer: {open(log).read()[-300:]}", file=sys.stderr)
    print("FAIL 0")
else:
    time.sleep(2)
    rss = next(int(l.split()[1]) for l in open(f"/proc/{srv.pid}/status") if l.startswith("VmRSS"))
    print(f"{secs:.3f} {rss}")
srv.send_signal(signal.SIGTERM)
try:
    srv.wait(10)
except subprocess.TimeoutExpired:
    srv.kill()
PY
}

: > "$OUT/raw.tsv"
for r in $(seq "$ROUNDS"); do
  read -r s m < <(run_one shardns $PORT_S "$BIN" serve --listen 127.0.0.1:$PORT_S --zone "big.test=$ZONES/$ZFILE" --workers 1)
  printf 'shardns\t%s\t%s\n' "$s" "$m" | tee -a "$OUT/raw.tsv" >&2
  if [ -n "${SHARDNS_BASE:-}" ]; then
    read -r s m < <(run_one shardns-base $PORT_S "$SHARDNS_BASE" serve --listen 127.0.0.1:$PORT_S --zone "big.test=$ZONES/$ZFILE" --workers 1)
    printf 'shardns-base\t%s\t%s\n' "$s" "$m" | tee -a "$OUT/raw.tsv" >&2
  fi
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
for name in ("shardns", "shardns-base", "knotd"):
    v = by.get(name, [])
    if not v:
        continue
    med[name] = statistics.median(s for s, _ in v)
    print("| %s | %.2f | %s | %.0f |" % (name, med[name], "/".join("%.2f" % s for s, _ in v),
                                        statistics.median(m for _, m in v) / 1024))
for name in ("shardns", "shardns-base"):
    if name in med and "knotd" in med:
        print("\nknotd / %s load time: %.1fx" % (name, med["knotd"] / med[name]))
PY
