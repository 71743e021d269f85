#!/usr/bin/env python3
"""What shardns's workers share, counted per query with 2 workers under load: the argument
for how it scales past the cores this lab has (ARCHITECTURE.md, "Why it scales past two
cores").

`perf c2c` (cache lines written by two cores) needs memory-sampling events that this lab's
VMs do not have, so the count comes from the server and the kernel:
- the server's own counters (`shardns stats`): locks taken on the request path
  (`shardns_request_locks_total`: the resolver cache's shard locks and stderr's), the cache's
  shard locks alone, and heap allocations on the request path;
- `perf stat` of the futex system calls the server makes while the load runs: an uncontended
  lock takes none, so a futex call per query would mean workers waiting for each other (or a
  thread sleeping: the count includes the idle threads' own waits, which do not grow with the
  load), and context switches.

Workloads: `small` (the 1,000-name zone over UDP), `cache` (the same names answered from the
resolver's cache, forwarded once to an authoritative shardns), `dot` (the zone over DNS over
TLS, a few pipelined connections per load thread), and `hot` (cache hits for one name only:
every worker on one cache shard's lock, the worst case).

Usage: bench/contention.py [--workers 2] [--duration 10] [--workloads small,cache,dot,hot]
Needs: dnsperf, dig, openssl, perf (linux-perf), a release build (built by the script).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab import (ROOT, build_shardns, family_sum, loopback_root_hints, port_free,  # noqa: E402
                 shardns_stats, terminate)
from compare import wait_answer  # noqa: E402
from scaling import make_cert  # noqa: E402

PORT, TLS_PORT, UPSTREAM_PORT = 5661, 5662, 5663


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--workloads", default="small,cache,dot,hot")
    args = ap.parse_args()
    bin_ = build_shardns()
    zones = os.environ.get("ZONES", "/tmp/shardns-bench-zones")
    zone, zonefile, qfile = "bench.test", f"{zones}/bench.test.zone", f"{zones}/queries-A.txt"
    if not os.path.exists(zonefile):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_zones.py"), zones, "small"], check=True)
    work = tempfile.mkdtemp(prefix="shardns-contention-")
    key, cert = make_cert(work)
    hot = os.path.join(work, "hot.txt")
    with open(hot, "w") as f:
        f.write("host0001.bench.test A\n")
    for p in (PORT, TLS_PORT, UPSTREAM_PORT):
        if not port_free("127.0.0.1", p):
            sys.exit(f"port {p} is in use")
    upstream = subprocess.Popen([bin_, "serve", "--listen", f"127.0.0.1:{UPSTREAM_PORT}", "--zone",
                                 f"{zone}={zonefile}", "--workers", "1", "--log-level", "warn",
                                 "--control", os.path.join(work, "up.ctl")])
    rows = []
    try:
        if not wait_answer(UPSTREAM_PORT, "host0000.bench.test"):
            sys.exit("the upstream did not answer")
        hints = loopback_root_hints(os.path.join(work, "root.hints"), "127.0.0.1", UPSTREAM_PORT)
        for wl in args.workloads.split(","):
            control = os.path.join(work, f"{wl}.ctl")
            cmd = [bin_, "serve", "--listen", f"127.0.0.1:{PORT}", "--workers", str(args.workers),
                   "--log-level", "warn", "--control", control]
            if wl in ("cache", "hot"):
                cmd += ["--recursion", "--local-zone", "test. nodefault", "--allow-loopback-upstreams", "--no-validation", "--forward", f"{zone}=127.0.0.1:{UPSTREAM_PORT}",
                        "--root-hints", hints]
            else:
                cmd += ["--zone", f"{zone}={zonefile}"]
            if wl == "dot":
                cmd += ["--tls-listen", f"127.0.0.1:{TLS_PORT}", "--tls-key", key, "--tls-cert", cert]
            srv = subprocess.Popen(cmd)
            try:
                if not wait_answer(PORT, "host0000.bench.test"):
                    print(f"{wl}: no answer", file=sys.stderr)
                    continue
                q = hot if wl == "hot" else qfile
                if wl in ("cache", "hot"):
                    subprocess.run(["dnsperf", "-s", "127.0.0.1", "-p", str(PORT), "-d", q, "-n", "1",
                                    "-c", "1", "-q", "10", "-l", "30"], capture_output=True, timeout=60)
                port = TLS_PORT if wl == "dot" else PORT
                perf_cmd = ["dnsperf", "-s", "127.0.0.1", "-p", str(port), "-d", q, "-l", str(args.duration),
                            "-T", "2", "-c", "8", "-q", "400"] + (["-m", "dot"] if wl == "dot" else [])
                before = shardns_stats(bin_, control)
                perf = subprocess.Popen(["perf", "stat", "-x", ",", "-e",
                                         "syscalls:sys_enter_futex,context-switches", "-p", str(srv.pid),
                                         "--", "sleep", str(args.duration)],
                                        stderr=subprocess.PIPE, text=True)
                out = subprocess.run(perf_cmd, capture_output=True, text=True, timeout=args.duration + 60).stdout
                _, perr = perf.communicate(timeout=args.duration + 30)
                after = shardns_stats(bin_, control)
                d = lambda fam: family_sum(after, fam) - family_sum(before, fam)
                queries = d("shardns_queries_total")
                counts = {}
                for line in perr.splitlines():
                    parts = line.split(",")
                    if len(parts) > 2 and parts[0].strip().isdigit():
                        counts[parts[2]] = int(parts[0])
                m = re.search(r"Queries per second:\s+([\d.]+)", out)
                per = lambda x: x / queries if queries else float("nan")
                rows.append((wl, queries, float(m.group(1)) if m else 0.0,
                             per(d("shardns_request_locks_total")),
                             per(d("shardns_resolver_cache_locks_total")),
                             per(d("shardns_request_allocations_total")),
                             per(counts.get("syscalls:sys_enter_futex", 0)),
                             per(counts.get("context-switches", 0))))
            finally:
                terminate(srv)
    finally:
        terminate(upstream)
    print(f"shardns with {args.workers} workers, {args.duration} s of dnsperf each; per query:")
    print()
    print("| workload | queries | q/s | request locks | cache shard locks | request allocations | futex calls | context switches |")
    print("|---|---|---|---|---|---|---|---|")
    for wl, n, qps, locks, cache, alloc, futex, cs in rows:
        print(f"| {wl} | {n:,.0f} | {qps:,.0f} | {locks:.3f} | {cache:.3f} | {alloc:.4f} | {futex:.5f} | {cs:.5f} |")


if __name__ == "__main__":
    main()
