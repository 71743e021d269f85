#!/usr/bin/env python3
"""Huge pages on or off, big zone against small zone: what transparent huge pages on the
zone's arrays are worth (issue 3's "big zone at 95 % of the small zone's efficiency").

Each round runs, one after the other: shardns on the 1,276,513-record zone, on the 1,000-name
zone, then both again with THP disabled for the process (`prctl(PR_SET_THP_DISABLE)`, which
also makes the server's MADV_COLLAPSE fail, so no huge pages at all). Each run: one worker
pinned to core 0, `dnsperf -T 2 -c 4 -q 200` pinned to core 1 over the workload's 1,000 names,
2 s of warm-up, then 10 s measured; the figure is queries per server CPU-second (/proc).

Usage: bench/thp_ab.py [ROUNDS]   (default 4; zones from gen_zones.py in $ZONES or
/tmp/shardns-bench-zones, generated when missing)
"""

import os
import re
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no bench/__pycache__ in the worktree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab import CLK_TCK, ROOT, build_shardns, cpu_ticks  # noqa: E402

PORT = 5631
PR_SET_THP_DISABLE = 41
# Sets the flag, then execs the server: the flag is inherited across exec.
NO_THP = ["python3", "-c",
          f"import ctypes,os,sys; ctypes.CDLL(None).prctl({PR_SET_THP_DISABLE},1,0,0,0); "
          "os.execvp(sys.argv[1], sys.argv[1:])"]


def dnsperf(qfile, seconds):
    return subprocess.run(["taskset", "-c", "1", "dnsperf", "-s", "127.0.0.1", "-p", str(PORT), "-d", qfile,
                           "-l", str(seconds), "-T", "2", "-c", "4", "-q", "200"],
                          capture_output=True, text=True, timeout=seconds + 60).stdout


def run(binary, thp, zone, zonefile, qfile):
    cmd = ([] if thp else NO_THP) + ["taskset", "-c", "0", binary, "serve", "--listen", f"127.0.0.1:{PORT}",
                                     "--zone", f"{zone}={zonefile}", "--workers", "1", "--log-level", "warn"]
    srv = subprocess.Popen(cmd)
    try:
        end = time.time() + 120
        while not subprocess.run(["dig", "+short", "+time=1", "+tries=1", "@127.0.0.1", "-p", str(PORT), zone,
                                  "SOA"], capture_output=True, text=True).stdout.strip():
            if time.time() > end or srv.poll() is not None:
                raise RuntimeError(f"shardns did not answer for {zone}")
            time.sleep(0.1)
        dnsperf(qfile, 2)
        t0 = cpu_ticks([srv.pid])
        out = dnsperf(qfile, 10)
        t1 = cpu_ticks([srv.pid])
        answered = int(re.search(r"Queries completed:\s+(\d+)", out).group(1))
        return answered / ((t1 - t0) / CLK_TCK) / 1000
    finally:
        srv.terminate()
        srv.wait(timeout=30)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    binary = build_shardns()
    zones = os.environ.get("ZONES", "/tmp/shardns-bench-zones")
    work = {"big": ("big.test", f"{zones}/big.test.zone", f"{zones}/queries-big-A.txt"),
            "small": ("bench.test", f"{zones}/bench.test.zone", f"{zones}/queries-A.txt")}
    for gen, (_, zonefile, _) in work.items():
        if not os.path.exists(zonefile):
            subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_zones.py"), zones, gen], check=True)
    results = {}
    for r in range(rounds):
        for thp in (True, False):
            for size, (zone, zonefile, qfile) in work.items():
                k = run(binary, thp, zone, zonefile, qfile)
                results.setdefault((thp, size), []).append(k)
                print(f"round {r + 1}: {'thp' if thp else 'nothp'} {size} {k:.1f} kq/CPU-s", flush=True)
    for thp in (True, False):
        label = "huge pages" if thp else "THP disabled"
        big, small = (statistics.median(results[(thp, s)]) for s in ("big", "small"))
        runs = lambda s: "/".join(f"{x:.0f}" for x in results[(thp, s)])  # noqa: E731
        print(f"{label}: big {big:.1f} ({runs('big')}), small {small:.1f} ({runs('small')}), "
              f"big/small {big / small:.1%}")


if __name__ == "__main__":
    main()
