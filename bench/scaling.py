#!/usr/bin/env python3
"""How each server scales with its workers: shardns against knotd and NSD (authoritative, the
1,000-name zone over UDP), Unbound (a resolver answering from a warm cache) and NSD (the same
zone over DNS over TLS), with 1, 2, 4, ... N/2 workers on a machine of N cores.

The server's workers are pinned to cores 0..W-1 and the load generator (dnsperf, one thread
per core it has) to the other half of the machine, cores N/2..N-1, so the two never share a
core. On a machine with fewer than 2W cores (W=2 on 2 cores, as here) they must share: the row
says "shared", its queries per second are not the server's ceiling, and only its queries per
server CPU-second still mean something (the CPU is read per process from /proc).

For each workload, server and W it reports queries per second, the server's CPU in cores,
queries per server CPU-second (kq/CPU-s) and the efficiency per core against 1 worker
(kq/CPU-s at W divided by kq/CPU-s at 1: 1.00 is perfect scaling, a server whose workers
contend for shared memory falls below it as W grows). Rounds are interleaved (every W and
server once, then again) and medians reported, as in compare.py.

Usage:
  bench/scaling.py [--workloads small,cache,dot] [--workers 1,2,4] [--rounds 3] [--duration 10]
                   [--markdown FILE]
Needs: knotd, nsd, unbound, dnsperf (2.x, for `-m dot`), dig, openssl (Debian packages), a
release build of shardns (built by the script).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import wait_answer, write_nsd_conf, write_unbound_conf  # noqa: E402
from lab import (CLK_TCK, ROOT, build_shardns, children, cpu_ticks, knot_conf,  # noqa: E402
                 loopback_root_hints, port_free, terminate)

PORT = 5651
TLS_PORT = 5652
UPSTREAM_PORT = 5653
SERVERS = {"small": ["shardns", "knotd", "nsd"], "cache": ["shardns", "unbound"],
           "dot": ["shardns", "nsd"]}


def cores(w, n):
    """The server's cores and the load generator's, and whether they share."""
    server = list(range(w))
    half = max(1, n // 2)
    if w <= n - half and w <= half:
        return server, list(range(half, n)), False
    return server, list(range(n)), True


def cpuset(cs):
    return ",".join(map(str, cs))


def make_cert(d):
    key, cert = os.path.join(d, "key.pem"), os.path.join(d, "cert.pem")
    if not os.path.exists(cert):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return key, cert


def server_cmd(name, workload, w, d, zone, zonefile, shardns_bin, tls):
    if name == "shardns":
        cmd = [shardns_bin, "serve", "--listen", f"127.0.0.1:{PORT}", "--workers", str(w),
               "--log-level", "warn"]
        if workload == "cache":
            hints = loopback_root_hints(os.path.join(d, "root.hints"), "127.0.0.1", UPSTREAM_PORT)
            return cmd + ["--recursion", "--local-zone", "test. nodefault", "--allow-loopback-upstreams", "--no-validation", "--forward",
                          f"{zone}=127.0.0.1:{UPSTREAM_PORT}", "--root-hints", hints]
        cmd += ["--zone", f"{zone}={zonefile}"]
        if workload == "dot":
            cmd += ["--tls-listen", f"127.0.0.1:{TLS_PORT}", "--tls-key", tls[0], "--tls-cert", tls[1]]
        return cmd
    if name == "knotd":
        cmd = knot_conf(d, "127.0.0.1", PORT, zone, zonefile)
        conf = os.path.join(d, "knot.conf")
        with open(conf) as f:
            text = f.read()
        text = re.sub(r"udp-workers: \d+", f"udp-workers: {w}", text)
        text = re.sub(r"tcp-workers: \d+", f"tcp-workers: {w}", text)
        with open(conf, "w") as f:
            f.write(text)
        return cmd
    if name == "nsd":
        return write_nsd_conf(d, PORT, zone, zonefile, workers=w,
                              tls=(TLS_PORT, tls[0], tls[1]) if workload == "dot" else None)
    if name == "unbound":
        return write_unbound_conf(d, PORT, zone, workers=w, upstream=UPSTREAM_PORT)
    raise ValueError(name)


def dnsperf(lg_cores, workload, qfile, seconds):
    port = TLS_PORT if workload == "dot" else PORT
    t = len(lg_cores)
    # Enough queries in flight per thread to keep W workers busy; DoT: a few connections
    # per thread, each pipelining.
    mode = ["-m", "dot", "-c", str(4 * t), "-q", str(100 * t)] if workload == "dot" else \
        ["-c", str(4 * t), "-q", str(200 * t)]
    return ["taskset", "-c", cpuset(lg_cores), "dnsperf", "-s", "127.0.0.1", "-p", str(port), "-d", qfile,
            "-l", str(seconds), "-T", str(t)] + mode


def run_one(name, workload, w, n, args, work, zone, zonefile, qfile, first_q, shardns_bin, tls):
    srv_cores, lg_cores, shared = cores(w, n)
    for p in (PORT, TLS_PORT):
        if not port_free("127.0.0.1", p):
            print(f"port {p} is in use: run skipped", file=sys.stderr)
            return None
    d = os.path.join(work, f"{workload}-{name}-{w}")
    os.makedirs(d, exist_ok=True)
    cmd = ["taskset", "-c", cpuset(srv_cores)] + server_cmd(name, workload, w, d, zone, zonefile,
                                                            shardns_bin, tls)
    log = open(os.path.join(d, "server.log"), "ab")
    srv = subprocess.Popen(cmd, stdout=log, stderr=log)
    try:
        if not wait_answer(PORT, first_q):
            print(f"{workload} {name} W={w}: no answer (see {d}/server.log)", file=sys.stderr)
            return None
        if workload == "cache":
            subprocess.run(["dnsperf", "-s", "127.0.0.1", "-p", str(PORT), "-d", qfile, "-n", "1",
                            "-c", "1", "-q", "10", "-l", "30"], capture_output=True, timeout=60)
        subprocess.run(dnsperf(lg_cores, workload, qfile, 2), capture_output=True, timeout=60)
        lg = subprocess.Popen(dnsperf(lg_cores, workload, qfile, args.duration), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        time.sleep(0.5)
        pids = children(srv.pid)
        t0, s0 = time.time(), cpu_ticks(pids)
        time.sleep(args.duration - 1)
        t1, s1 = time.time(), cpu_ticks(children(srv.pid))
        out, _ = lg.communicate(timeout=args.duration + 60)
        m = re.search(r"Queries per second:\s+([\d.]+)", out)
        qps = float(m.group(1)) if m else 0.0
        lost = re.search(r"Queries lost:\s+(\d+)", out)
        cpu = (s1 - s0) / CLK_TCK / (t1 - t0)
        return {"qps": qps, "cpu": cpu, "kq": qps / cpu / 1000 if cpu > 0 else 0.0, "shared": shared,
                "lost": int(lost.group(1)) if lost else -1}
    finally:
        terminate(srv)
        log.close()


def main():
    n = os.cpu_count() or 1
    default_w = [1]
    while default_w[-1] * 2 <= max(1, n // 2):
        default_w.append(default_w[-1] * 2)
    if n == 2:
        default_w = [1, 2]  # this lab's machines: 2 shares the cores with the load generator
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default="small,cache,dot")
    ap.add_argument("--workers", default=",".join(map(str, default_w)))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--servers", help="only these (comma-separated), where the workload has them")
    ap.add_argument("--markdown", help="also write the table to this file")
    args = ap.parse_args()
    workers = [int(x) for x in args.workers.split(",")]
    shardns_bin = build_shardns()
    zones = os.environ.get("ZONES", "/tmp/shardns-bench-zones")
    zone, zonefile, qfile = "bench.test", f"{zones}/bench.test.zone", f"{zones}/queries-A.txt"
    if not os.path.exists(zonefile):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_zones.py"), zones, "small"], check=True)
    with open(qfile) as f:
        first_q = f.readline().split()[0]
    work = tempfile.mkdtemp(prefix="shardns-scaling-")
    tls = make_cert(work)
    only = set(args.servers.split(",")) if args.servers else None
    plan = [(wl, s) for wl in args.workloads.split(",") for s in SERVERS[wl] if not only or s in only]
    upstream = None
    if any(wl == "cache" for wl, _ in plan):
        if not port_free("127.0.0.1", UPSTREAM_PORT):
            sys.exit(f"port {UPSTREAM_PORT} (upstream) is in use")
        # The cache workload's authoritative server, on the load generator's cores.
        upstream = subprocess.Popen(["taskset", "-c", cpuset(cores(1, n)[1]), shardns_bin, "serve", "--listen",
                                     f"127.0.0.1:{UPSTREAM_PORT}", "--zone", f"{zone}={zonefile}",
                                     "--workers", "1", "--log-level", "warn"])
        if not wait_answer(UPSTREAM_PORT, first_q):
            terminate(upstream)
            sys.exit("the upstream authoritative server did not answer")
    results = {}
    try:
        for r in range(args.rounds):
            for wl, s in plan:
                for w in workers:
                    res = run_one(s, wl, w, n, args, work, zone, zonefile, qfile, first_q, shardns_bin, tls)
                    if res:
                        results.setdefault((wl, s, w), []).append(res)
                        print(f"round {r + 1} {wl} {s} W={w}: {res['qps']:.0f} q/s, server CPU "
                              f"{res['cpu']:.2f} cores, {res['kq']:.0f} kq/CPU-s, lost {res['lost']}"
                              f"{' (cores shared with the load generator)' if res['shared'] else ''}",
                              file=sys.stderr)
    finally:
        if upstream:
            terminate(upstream)
    med = lambda key, k: statistics.median(x[k] for x in results[key])
    lines = [f"{n} cores; workers on cores 0..W-1, dnsperf on cores {cpuset(cores(1, n)[1])} "
             f"(all cores where marked shared); {args.rounds} interleaved rounds of {args.duration} s, medians.",
             "",
             "| workload | server | W | q/s | q/s per worker | server CPU (cores) | kq/CPU-s | efficiency vs W=1 | runs (kq/CPU-s) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for wl, s in plan:
        one = med((wl, s, 1), "kq") if (wl, s, 1) in results else None
        for w in workers:
            key = (wl, s, w)
            if key not in results:
                continue
            kq = med(key, "kq")
            eff = f"{kq / one:.2f}" if one else "-"
            shared = " (shared)" if results[key][0]["shared"] else ""
            runs = "/".join(f"{x['kq']:.0f}" for x in results[key])
            lines.append(f"| {wl} | {s} | {w}{shared} | {med(key, 'qps'):,.0f} | {med(key, 'qps') / w:,.0f} | "
                         f"{med(key, 'cpu'):.2f} | {kq:.0f} | {eff} | {runs} |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
