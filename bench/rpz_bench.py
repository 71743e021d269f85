#!/usr/bin/env python3
"""Response policy zones: the cost of a big policy zone on cache-hit answers, and its memory.

Runs a shardns resolver (one worker, pinned to core 0, validation off) forwarding `bench.test.`
to an authoritative shardns, warms its cache with every query name, then measures cache-hit
queries per server CPU-second with dnsperf (pinned to core 1) in two configurations,
interleaved (none, rpz, none, rpz ...): without policy zones, and with one policy zone of
`--entries` QNAME triggers (default 1,000,000: `blockN.example CNAME .` plus a wildcard
every 100th) that none of the queried names meets, so every answer pays the lookups and
none is rewritten. Also the resolver's RSS after the load in each configuration, and with
`--unbound` the same two for Unbound (`rpz:` clause over the same file, `module-config:
"respip iterator"`): the policy zone's memory is the difference.

  bench/rpz_bench.py [--entries 1000000] [--duration 10] [--rounds 3] [--unbound]
                     [--bin target/release/shardns]

`--bin` skips the release build (a smoke run of the script with a debug build: its figures
mean nothing). Figures go to docs/benchmarks-log.md, the current row to docs/BENCHMARKS.md.
Loopback only; every process it starts is stopped by PID when it ends.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no bench/__pycache__ in the worktree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab import (CLK_TCK, build_shardns, children, cpu_ticks, loopback_root_hints,  # noqa: E402
                 port_free, proc_kib, rss_kib, terminate, unbound_server)

UPSTREAM = 5651
RESOLVER = 5652
UNBOUND = 5653
NAMES = 1000


def write_inputs(d, entries):
    """The upstream zone, the query file and the policy zone; returns their paths."""
    zone = os.path.join(d, "bench.test.zone")
    with open(zone, "w") as f:
        f.write("$TTL 86400\n@ SOA ns.bench.test. admin.bench.test. 1 3600 600 864000 3600\n"
                "@ NS ns.bench.test.\nns A 127.0.0.1\n")
        for i in range(NAMES):
            f.write(f"h{i} A 192.0.2.{i % 250 + 1}\n")
    queries = os.path.join(d, "queries.txt")
    with open(queries, "w") as f:
        for i in range(NAMES):
            f.write(f"h{i}.bench.test. A\n")
    rpz = os.path.join(d, "policy.rpz")
    with open(rpz, "w") as f:
        f.write("$TTL 300\n@ SOA localhost. admin.localhost. 1 3600 600 86400 300\n@ NS localhost.\n")
        for i in range(entries):
            if i % 100 == 99:
                f.write(f"*.wild{i}.example CNAME .\n")
            else:
                f.write(f"block{i}.example CNAME .\n")
    return zone, queries, rpz


def start(cmd, log):
    return subprocess.Popen(["taskset", "-c", "0"] + cmd, stdout=log, stderr=log)


def wait_answer(port, qname, timeout=300):
    end = time.time() + timeout
    while time.time() < end:
        r = subprocess.run(["dig", "@127.0.0.1", "-p", str(port), qname, "A", "+short",
                            "+time=1", "+tries=1"], capture_output=True, text=True)
        if r.stdout.strip() and not r.stdout.startswith(";"):
            return True
        time.sleep(0.2)
    return False


def resolver_cmd(kind, d, bin_, rpz):
    hints = loopback_root_hints(os.path.join(d, "root.hints"), "127.0.0.1", UPSTREAM)
    cmd = [bin_, "serve", "--listen", f"127.0.0.1:{RESOLVER}", "--recursion", "--no-validation",
           "--allow-loopback-upstreams", "--local-zone", "test. nodefault",
           "--forward", f"bench.test.=127.0.0.1:{UPSTREAM}",
           "--root-hints", hints, "--workers", "1", "--log-level", "warn",
           "--control", os.path.join(d, f"{kind}.ctl")]
    if kind == "rpz":
        conf = os.path.join(d, "rpz.toml")
        with open(conf, "w") as f:
            f.write(f'[[resolver.rpz]]\nname = "policy.rpz."\nfile = "{rpz}"\nlog = false\n')
        cmd += ["--config", conf]
    return cmd


def unbound_cmd(kind, d, rpz):
    conf = os.path.join(d, f"unbound-{kind}.conf")
    policy = f'rpz:\n    name: "policy.rpz."\n    zonefile: "{rpz}"\n' if kind == "rpz" else ""
    with open(conf, "w") as f:
        f.write(unbound_server(d, "127.0.0.1", UNBOUND, extra="""\
    module-config: "respip iterator"
    local-zone: "test." nodefault
""") + f"""remote-control:
    control-enable: no
stub-zone:
    name: "bench.test."
    stub-addr: 127.0.0.1@{UPSTREAM}
{policy}""")
    return ["unbound", "-d", "-c", conf]


def measure(port, queries, seconds, srv):
    """Warms the cache, then dnsperf for `seconds`: (answers per server CPU-second, q/s)."""
    subprocess.run(["taskset", "-c", "1", "dnsperf", "-s", "127.0.0.1", "-p", str(port), "-d", queries,
                    "-n", "1", "-c", "1", "-q", "10", "-l", "30"], capture_output=True)
    lg = subprocess.Popen(["taskset", "-c", "1", "dnsperf", "-s", "127.0.0.1", "-p", str(port),
                           "-d", queries, "-l", str(seconds), "-c", "4", "-q", "200", "-T", "2"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(0.5)
    pids = children(srv.pid)
    t0, c0 = time.time(), cpu_ticks(pids)
    time.sleep(max(seconds - 1, 0.5))
    t1, c1 = time.time(), cpu_ticks(pids)
    out, _ = lg.communicate(timeout=seconds + 30)
    m = re.search(r"Queries per second:\s+([\d.]+)", out)
    qps = float(m.group(1)) if m else 0.0
    cpu = (c1 - c0) / CLK_TCK / (t1 - t0)
    return (qps / cpu if cpu > 0 else 0.0), qps


def run(kind, args, d, bin_, paths, unbound=False):
    zone, queries, rpz = paths
    port = UNBOUND if unbound else RESOLVER
    if not port_free("127.0.0.1", port):
        sys.exit(f"port {port} is in use")
    log = open(os.path.join(d, f"{'unbound' if unbound else 'shardns'}-{kind}.log"), "ab")
    cmd = unbound_cmd(kind, d, rpz) if unbound else resolver_cmd(kind, d, bin_, rpz)
    t = time.time()
    srv = start(cmd, log)
    try:
        if not wait_answer(port, "h0.bench.test."):
            sys.exit(f"{kind}: no answer (see {d})")
        ready = time.time() - t
        # The peak while loading: what reading the policy zone costs at its height.
        peak = proc_kib(children(srv.pid), "status", "VmHWM")
        rss = rss_kib(children(srv.pid))
        if unbound:
            return None, None, rss, ready, peak
        per_cpu, qps = measure(port, queries, args.duration, srv)
        return per_cpu, qps, rss_kib(children(srv.pid)), ready, peak
    finally:
        terminate(srv)
        log.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--unbound", action="store_true", help="also Unbound's RSS with and without the zone")
    ap.add_argument("--bin", help="a shardns binary (default: build the release one)")
    args = ap.parse_args()
    bin_ = args.bin or build_shardns()
    with tempfile.TemporaryDirectory(prefix="rpz-bench-") as d:
        paths = write_inputs(d, args.entries)
        up_log = open(os.path.join(d, "upstream.log"), "ab")
        upstream = subprocess.Popen([bin_, "serve", "--listen", f"127.0.0.1:{UPSTREAM}", "--zone",
                                     f"bench.test.={paths[0]}", "--workers", "1", "--log-level", "warn",
                                     "--control", os.path.join(d, "up.ctl")], stdout=up_log, stderr=up_log)
        try:
            if not wait_answer(UPSTREAM, "h0.bench.test."):
                sys.exit("upstream: no answer")
            res = {"none": [], "rpz": []}
            for _ in range(args.rounds):
                for kind in ("none", "rpz"):
                    res[kind].append(run(kind, args, d, bin_, paths))
            print(f"policy zone: {args.entries:,} QNAME triggers; {NAMES} cached names; "
                  f"{args.rounds} rounds of {args.duration} s (medians)")
            med = {k: [statistics.median(r[i] for r in v) for i in range(5)] for k, v in res.items()}
            for kind in ("none", "rpz"):
                per_cpu, qps, rss, ready, peak = med[kind]
                print(f"shardns {kind:4}: {per_cpu:10,.0f} answers per server CPU-s ({qps:,.0f} q/s), "
                      f"RSS {rss / 1024:6.1f} MiB (peak at load {peak / 1024:.1f}), ready in {ready:.1f} s")
            ratio = med["rpz"][0] / med["none"][0] if med["none"][0] else 0.0
            print(f"with/without: {ratio:.3f} per CPU-s; policy zone memory "
                  f"{(med['rpz'][2] - med['none'][2]) / 1024:.1f} MiB")
            if args.unbound:
                u = {k: run(k, args, d, bin_, paths, unbound=True) for k in ("none", "rpz")}
                print(f"unbound: RSS {u['none'][2] / 1024:.1f} MiB without, {u['rpz'][2] / 1024:.1f} MiB "
                      f"with (peak {u['rpz'][4] / 1024:.1f}, ready in {u['rpz'][3]:.1f} s): policy zone "
                      f"memory {(u['rpz'][2] - u['none'][2]) / 1024:.1f} MiB")
        finally:
            terminate(upstream)
            up_log.close()


if __name__ == "__main__":
    main()
