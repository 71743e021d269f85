#!/usr/bin/env python3
"""CPU per answered query of shardns-bench against dnsperf, same server, same load, in both modes:
`rate` (`shardns-bench rate --qps R` against `dnsperf -Q R`, the same rate) and `rr`
(`shardns-bench rr --streams N` against `dnsperf -q N`, closed loop at the same concurrency:
N queries outstanding; at full load, as fast as the server answers).

The server (knotd, one UDP worker; `shardns serve --workers 1`; or `floor`, the no-DNS-work
responder of crates/server/examples/udp_floor.rs) runs pinned to core 0 and each tool pinned to
core 1. Runs are interleaved (for each round: for each mode and load: dnsperf, then each
shardns-bench), so minutes of heavy hypervisor steal or of other load hit all tools alike.

A tool's CPU is the user + system time of its whole process, all threads, as the kernel
accounts it (the rusage that wait4 returns when the process ends: the same counters as
/proc/PID/stat, read at the last moment), divided by the queries it reports answered. The
server's CPU is read from /proc/PID/stat (all threads) just before and after each run, and
divided by the same count. Both tools send for DURATION seconds; each run is preceded by a 2 s
warm-up with the same tool. In rate mode dnsperf runs with `-c 4 -q 500` by default: four
sockets like shardns-bench, and enough queries outstanding to offer 100k q/s (with -q 100 it
could not). In rr mode it runs with `-c 4 -T 2 -q N` (the lab's dnsperf of bench/compare.py)
and shardns-bench with `rr --streams N --runs 1` (four sockets by default).

Usage:
  crates/loadgen/scripts/vs_dnsperf.py --bench [LABEL=]'PATH [OPTIONS]' [--bench ...]
      [--server knotd|shardns|floor] [--shardns PATH] [--floor PATH] [--modes rate,rr]
      [--rates 50000,100000] [--streams 200] [--rounds 3] [--duration 10]
      [--addr 127.0.0.100] [--port 6300] [--dnsperf-args "-c 4 -q 500"]
      [--rr-dnsperf-args "-c 4 -T 2"] [--no-dnsperf] [--rt]
Several --bench tools (e.g. before=/tmp/old after=/tmp/new 'smooth=/tmp/new --tick 100us')
are run in turn after dnsperf in every round; the last column is each one against dnsperf.
Needs: knotd (for --server knotd), dnsperf, kdig, taskset; bench/gen_zones.py for the zone.
"""

import argparse
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time

# The knotd config is the one bench/compare.py uses (bench/lab.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench"))
sys.dont_write_bytecode = True
import lab  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid):
    """utime + stime of all threads of pid, seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def steal_pct(a, b):
    """Machine steal between two /proc/stat 'cpu' lines, percent."""
    da = [y - x for x, y in zip(a, b)]
    total = sum(da[:8])
    return 100.0 * da[7] / total if total else 0.0


def cpu_line():
    with open("/proc/stat") as f:
        return list(map(int, f.readline().split()[1:]))


def wait_answer(addr, port, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        r = subprocess.run(["kdig", f"@{addr}", "-p", str(port), "host0001.bench.test", "A",
                            "+short", "+time=1", "+retry=0"], capture_output=True, text=True)
        # The zone's hosts are in 10/8; the floor answers 192.0.2.1 to every name.
        if r.stdout.strip().startswith(("10.", "192.0.2.")):
            return True
        time.sleep(0.1)
    return False


def run_tool(cmd):
    """Runs cmd; returns (stdout+stderr, CPU seconds of the whole process from wait4)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        print(f"{cmd[0:4]} exited {p.returncode}:\n{out}", file=sys.stderr)
    return out, ru.ru_utime + ru.ru_stime


def answered(kind, out, mode="rate"):
    if kind == "dnsperf":
        m = re.search(r"Queries completed:\s+(\d+)", out)
        s = re.search(r"Queries sent:\s+(\d+)", out)
        return (int(m.group(1)) if m else 0), (int(s.group(1)) if s else 0)
    if mode == "rr":
        # `shardns-bench rr` ends with "queries sent 425,815, lost 0"; every query not lost
        # was answered (the run waits for the last answers or their timeouts).
        m = re.search(r"queries sent ([\d,]+), lost ([\d,]+)", out)
        if not m:
            return 0, 0
        sent, lost = (int(x.replace(",", "")) for x in m.groups())
        return sent - lost, sent
    # The totals row of `shardns-bench rate`: "sent answered sent q/s ...".
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.split()[:2] == ["sent", "answered"] and i + 1 < len(lines):
            v = lines[i + 1].split()
            return int(v[1].replace(",", "")), int(v[0].replace(",", ""))
    return 0, 0


def tool_cmd(tool, args, mode, load, seconds):
    """tool: ("dnsperf", None) or (label, "PATH [EXTRA ARGS]"); load: the rate (rate mode) or
    the streams, i.e. queries outstanding (rr mode)."""
    pin = ["taskset", "-c", args.tool_core]
    label, spec = tool
    if label == "dnsperf":
        cmd = pin + ["dnsperf", "-s", args.addr, "-p", str(args.port), "-d", args.queries,
                     "-l", str(seconds), "-t", "1"]
        if mode == "rr":
            return cmd + ["-q", str(load)] + shlex.split(args.rr_dnsperf_args)
        return cmd + ["-Q", str(load)] + shlex.split(args.dnsperf_args)
    path, *extra = shlex.split(spec)
    cmd = pin + [path, mode, "--server", f"{args.addr}:{args.port}", "--queries", args.queries,
                 "--duration", str(seconds)]
    if mode == "rr":
        return cmd + ["--streams", str(load), "--runs", "1"] + extra
    return cmd + ["--qps", str(load)] + extra


def server_rt(args, cmd):
    """The server under `chrt -f 1` with --rt (needs root): on a machine shared with other
    work it then runs as soon as it wakes, instead of after the running compile's time slice
    (which let knotd's socket overflow at 50k q/s: 30 % of the queries dropped while it
    waited ~1 ms per wake-up). The kernel still caps real-time tasks at 95 % of a core
    (sched_rt_runtime_us), and knotd does not spin. The tools stay ordinary tasks: dnsperf
    as SCHED_FIFO busy-waits, 95 % of a core at any rate, which would flatter us."""
    return (["chrt", "-f", "1"] + cmd) if args.rt else cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", action="append", required=True,
                    help="LABEL='PATH [ARGS]': a shardns-bench binary and extra options of its mode (e.g. --tick "
                    "in rate mode only); repeat to compare several")
    ap.add_argument("--server", choices=["knotd", "shardns", "floor"], default="knotd")
    ap.add_argument("--shardns", help="the shardns binary (for --server shardns)")
    ap.add_argument("--floor", help="the udp_floor example (for --server floor; default "
                    "target/release/examples/udp_floor)")
    ap.add_argument("--modes", default="rate", help="rate, rr, or both: rate,rr")
    ap.add_argument("--rates", default="50000,100000", help="rate mode: queries per second")
    ap.add_argument("--streams", default="200", help="rr mode: streams (dnsperf -q), comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--addr", default="127.0.0.100")
    ap.add_argument("--port", type=int, default=6300)
    ap.add_argument("--server-core", default="0")
    ap.add_argument("--tool-core", default="1")
    ap.add_argument("--dnsperf-args", default="-c 4 -q 500", help="dnsperf's options in rate mode")
    ap.add_argument("--rr-dnsperf-args", default="-c 4 -T 2", help="dnsperf's options in rr mode (besides -q)")
    ap.add_argument("--no-dnsperf", action="store_true", help="only the --bench tools")
    ap.add_argument("--rt", action="store_true", help="run the server as SCHED_FIFO 1 (needs root)")
    ap.add_argument("--work", help="work directory (default: a new temporary one)")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="vs-dnsperf-")
    zone_dir = os.path.join(work, "zone")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_zones.py"), zone_dir, "small"], check=True)
    args.queries = os.path.join(zone_dir, "queries-A.txt")
    if args.server == "knotd":
        cmd = lab.knot_conf(os.path.join(work, "knot"), args.addr, args.port, "bench.test",
                             os.path.join(zone_dir, "bench.test.zone"))
    elif args.server == "floor":
        floor = args.floor or os.path.join(ROOT, "target", "release", "examples", "udp_floor")
        cmd = [floor, f"{args.addr}:{args.port}"]
    else:
        cmd = [args.shardns, "serve", "--listen", f"{args.addr}:{args.port}", "--zone",
               f"bench.test={zone_dir}/bench.test.zone", "--workers", "1", "--log-level", "warn"]
    log = open(os.path.join(work, "server.log"), "ab")
    srv = subprocess.Popen(server_rt(args, ["taskset", "-c", args.server_core] + cmd), stdout=log, stderr=log)
    modes = args.modes.split(",")
    loads = [(m, int(x)) for m in modes
             for x in (args.rates if m == "rate" else args.streams).split(",")]
    tools = [] if args.no_dnsperf else [("dnsperf", None)]
    for b in args.bench:
        label, _, spec = b.partition("=")
        tools.append((label, spec) if spec else ("shardns-bench", label))
    rows = {(t[0], ml): [] for t in tools for ml in loads}
    try:
        if not wait_answer(args.addr, args.port):
            sys.exit("the server did not answer")
        for rnd in range(args.rounds):
            for mode, load in loads:
                for tool in tools:
                    kind = tool[0]
                    run_tool(tool_cmd(tool, args, mode, load, 2))
                    s0, c0, t0 = proc_cpu_s(srv.pid), cpu_line(), time.time()
                    out, cpu = run_tool(tool_cmd(tool, args, mode, load, args.duration))
                    s1, c1, t1 = proc_cpu_s(srv.pid), cpu_line(), time.time()
                    ans, sent = answered(kind, out, mode)
                    r = {"answered": ans, "sent": sent, "tool_cpu": cpu, "srv_cpu": s1 - s0,
                         "wall": t1 - t0, "steal": steal_pct(c0, c1),
                         "tool_us": cpu * 1e6 / ans if ans else float("nan"),
                         "srv_us": (s1 - s0) * 1e6 / ans if ans else float("nan")}
                    rows[(kind, (mode, load))].append(r)
                    what = f"{load:>7} q/s" if mode == "rate" else f"rr {load:>4} str"
                    print(f"round {rnd + 1} {what} {kind:12}: answered {ans:>9,} of {sent:>9,}  "
                          f"tool {cpu:6.2f} CPU-s = {r['tool_us']:5.2f} us/q  "
                          f"server {r['srv_us']:5.2f} us/q  steal {r['steal']:4.1f}%", flush=True)
    finally:
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()
    print()
    print("| mode, load | tool | answered q/s | tool CPU µs per answer, each run | median | vs dnsperf | server CPU µs per answer |")
    print("|---|---|---|---|---|---|---|")
    for mode, load in loads:
        base = rows.get(("dnsperf", (mode, load)))
        base = statistics.median(x["tool_us"] for x in base) if base else None
        for label, _ in tools:
            rs = rows[(label, (mode, load))]
            if not rs:
                continue
            med = statistics.median(x["tool_us"] for x in rs)
            ratio = f"{med / base:.2f}x" if base else "-"
            what = f"rate {load:,} q/s" if mode == "rate" else f"rr {load} streams"
            print(f"| {what} | {label} | "
                  f"{statistics.median(x['answered'] for x in rs) / args.duration:,.0f} | "
                  f"{' / '.join('%.2f' % x['tool_us'] for x in rs)} | **{med:.2f}** | {ratio} | "
                  f"{statistics.median(x['srv_us'] for x in rs):.2f} |")


if __name__ == "__main__":
    main()
