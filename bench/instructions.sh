#!/bin/bash
# User-space instructions (valgrind's callgrind, every thread) that a shardns binary spends
# answering N UDP queries of the 1,000-name zone one at a time, and with none: the
# difference over N is the whole path per query (event loop, recvmmsg/sendmmsg wrappers,
# dispatch, answer), a count the hypervisor's CPU steal does not move. Compare two builds
# with the same N:
#   bench/instructions.sh BIN PORT 0 TAG; bench/instructions.sh BIN PORT 5000 TAG
# Needs valgrind, dig, python3, the zone from bench/gen_zones.py /tmp/shardns-bench-zones small.
set -euo pipefail
bin=$1; port=$2; n=$3; tag=$4
rm -f /tmp/cg-$tag.out
valgrind --tool=callgrind --callgrind-out-file=/tmp/cg-$tag.out $bin serve --listen 127.0.0.1:$port --zone bench.test=/tmp/shardns-bench-zones/bench.test.zone --workers 1 --log-level warn --control /tmp/cg-$port.ctl >/dev/null 2>/tmp/cg-$tag.err &
pid=$!
for _ in $(seq 300); do dig @127.0.0.1 -p "$port" host0001.bench.test +short +time=1 +tries=1 >/dev/null 2>&1 && break; sleep 0.2; done
if [ "$n" -gt 0 ]; then
  python3 - "$port" "$n" <<'PY'
import socket, struct, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
names = [l.split()[0] for l in open('/tmp/shardns-bench-zones/queries-A.txt')]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5)
def q(i, name):
    h = struct.pack('>HHHHHH', i & 0xffff, 0, 1, 0, 0, 0)
    b = b''.join(bytes([len(x)]) + x.encode() for x in name.rstrip('.').split('.')) + b'\0'
    return h + b + struct.pack('>HH', 1, 1)
got = 0
for i in range(n):
    s.sendto(q(i, names[i % len(names)]), ('127.0.0.1', port))
    try:
        s.recv(4096); got += 1
    except socket.timeout:
        pass
print(got, file=sys.stderr)
PY
fi
kill -TERM $pid; wait $pid 2>/dev/null || true
grep -E "^summary|^totals" /tmp/cg-$tag.out | head -1
