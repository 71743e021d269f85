#!/usr/bin/env python3
"""Side by side: shardns against Knot DNS and NSD (authoritative) or Unbound (caching), same
zone, same load.

Each server runs one worker pinned to core 0; the load generator runs pinned to core 1.
Rounds are interleaved (A B C A B C ...) so the hypervisor's changing CPU steal hits every
server alike. Each run starts the server fresh, waits for an answer, sends 2 s of warm-up,
then measures DURATION seconds. The server's CPU time (all its threads and children) is read
from /proc inside the sending window, so the headline figure, queries per server CPU-second,
holds even when the load generator is the bottleneck.

`--servers` may include `floor`: a responder that does no DNS work (one recvmmsg and one
sendmmsg per batch, a fixed A record appended to each query; build it with `cargo build --release
-p shardns-server --example udp_floor`). Its queries per CPU-second is the ceiling any server
using the socket API reaches on this machine. `xdpfloor` is the same responder on AF_XDP
(generic XDP on lo, copy mode; crates/server/examples/xdp_floor.rs; needs root; the script
sets net.ipv4.conf.lo.route_localnet and accept_local to 1 for the run and restores them).
With AF_XDP on lo the XDP program and the copy into the UMEM run in the *sender's* softirq,
so `--per-query` adds a table of CPU microseconds per query of the server, the load
generator and both, to tell a saving from cost moved to the client.
`shardns-xdp` is shardns with `--xdp lo` (its UDP over AF_XDP, worker 0 on lo's one queue;
`shardns-val-xdp` is `shardns-val` below in that mode);
`knotd-xdp` is knotd with `xdp: listen: lo@PORT` (Knot's own XDP mode; knotd leaves its
program on lo when it exits, so the script takes it off after each run).

Workloads: `small` (1,000 names), `big` (the same count of names spread over a 1,276,513-record
zone), `signed` (the 1,000 names from bench.test. signed with NSEC, every query with DO=1: each
answer carries its RRSIG), `nsec3nx` (bench.test. signed with NSEC3, DO=1 queries for 1,000 names
that do not exist: NSEC3 name errors, two hashes per query for a server that hashes at query
time; both zones made by gen_zones.py OUTDIR signed, which needs bind9-utils), and `cache`: resolvers answering from a warm cache (the peers' workload B): each resolver
sends bench.test to an authoritative shardns on 127.0.0.1:5301 pinned to core 1 (Unbound as a
stub zone, shardns as a forward zone), every name is resolved once, then the measured load.
In `cache`, `shardns` runs with `--no-validation`; `shardns-val` is the same with DNSSEC
validation on (a trust anchor for another name only: bench.test is provably insecure, and
every cache hit reads the verdict stored with its set). `cache-signed` is `cache` over the
signed bench.test (NSEC), every query with DO=1, validation on in `shardns-val` and in
Unbound (`validator iterator`), both from the zone's KSK as trust anchor (a DS made by
dnssec-dsfromkey): every hit is secure (AD) and carries its RRSIG; `shardns` is
`--no-validation` there too (it still gives DO clients the RRSIGs).

Usage:
  bench/compare.py [--rounds 3] [--duration 10] [--workload small|big|signed|nsec3nx|cache|cache-signed] \
      [--servers shardns,knotd,nsd | shardns,unbound] [--loadgen dnsperf|shardns] [--markdown FILE]
      [--plot FILE.png]
Needs: knotd, nsd, unbound, dnsperf, dig (Debian packages), a release build of shardns;
matplotlib for --plot only (without it the plot is skipped with a message).
"""

import argparse
import atexit
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no bench/__pycache__ in the worktree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab import (CLK_TCK, ROOT, build_shardns, busy_pct, children, cpu_ticks, knot_conf,  # noqa: E402
                 loopback_root_hints, port_free, rss_kib, steal_idle, steal_pct, terminate,
                 unbound_server)

PORTS = {"shardns": 5631, "knotd": 5632, "nsd": 5633, "unbound": 5634, "floor": 5635,
         "xdpfloor": 5636, "shardns-xdp": 5637, "knotd-xdp": 5638, "shardns-baseline": 5639,
         "shardns-many": 5640, "shardns-val": 5641, "shardns-val-xdp": 5642}
# `--baseline PATH`: another build of shardns (e.g. main before a change), run as the server
# kind "shardns-baseline" in the same interleaved rounds, so a change is judged as a ratio.
BASELINE = None
# `--zone-list FILE`: the server kind "shardns-many" is shardns serving the workload's zone
# and every zone that list names (e.g. 100,000 small zones from bench/many_zones.py), so the
# cost of a large zone set on the answer path shows as a ratio against "shardns".
MANY_ZONES = None
# Kinds that take their UDP queries from `lo` with AF_XDP (root only). The replies they send
# into lo carry 127.0.0.1 without the route the kernel's own sender attaches, so lo must
# accept local-network sources and destinations on input for them to arrive.
XDP_KINDS = ("xdpfloor", "shardns-xdp", "knotd-xdp", "shardns-val-xdp")
XDP_SYSCTLS = ("net.ipv4.conf.lo.route_localnet", "net.ipv4.conf.lo.accept_local")
UPSTREAM_PORT = 5301
# The workload's queries set DO (signed zones): dnsperf -D.
DNSSEC_OK = False
# `--floor-reply-size N`: the floor pads its replies to N octets (0: its one A record), to
# match a workload whose answers are long (a signed NSEC3 denial: 726 octets).
FLOOR_REPLY_SIZE = 0
# `cache-signed`: the trust anchor (DS records of bench.test.'s KSK) both resolvers validate from.
ANCHOR = None


def write_nsd_conf(d, port, zone, zonefile, workers=1, tls=None):
    """d/nsd.conf for NSD serving `zone` on 127.0.0.1@port with `workers` processes (sharing
    the port with SO_REUSEPORT when more than one), and DNS over TLS too when `tls` is
    (port, key file, certificate file); returns the command."""
    os.makedirs(d, exist_ok=True)
    extra = "    reuseport: yes\n" if workers > 1 else ""
    if tls:
        extra += (f"    ip-address: 127.0.0.1@{tls[0]}\n    tls-port: {tls[0]}\n"
                  f"    tls-service-key: \"{tls[1]}\"\n    tls-service-pem: \"{tls[2]}\"\n")
    with open(f"{d}/nsd.conf", "w") as f:
        f.write(f"""server:
    ip-address: 127.0.0.1
    port: {port}
    server-count: {workers}
{extra}    username: ""
    chroot: ""
    zonesdir: "{os.path.dirname(zonefile)}"
    database: ""
    pidfile: "{d}/nsd.pid"
    xfrdfile: "{d}/xfrd.state"
    zonelistfile: "{d}/zone.list"
    xfrdir: "{d}"
    logfile: "{d}/nsd.log"
    verbosity: 1
    zonefiles-write: 0
remote-control:
    control-enable: no
zone:
    name: {zone}
    zonefile: "{zonefile}"
""")
    return ["nsd", "-d", "-c", f"{d}/nsd.conf"]


def write_unbound_conf(d, port, zone, anchor=None, workers=1, upstream=None):
    """d/unbound.conf for Unbound on 127.0.0.1@port with `workers` threads, `zone` a stub
    zone at 127.0.0.1@upstream (default UPSTREAM_PORT), validating from `anchor` if given;
    returns the command."""
    os.makedirs(d, exist_ok=True)
    upstream = upstream or UPSTREAM_PORT
    # With a trust anchor (cache-signed): validating, as Unbound is deployed.
    modules = "validator iterator" if anchor else "iterator"
    trust = f'    trust-anchor-file: "{anchor}"\n    val-log-level: 1\n' if anchor else ""
    with open(f"{d}/unbound.conf", "w") as f:
        f.write(unbound_server(d, "127.0.0.1", port, workers, verbosity=1, pidfile=f"{d}/unbound.pid",
                               extra=f"""    module-config: "{modules}"
{trust}    local-zone: "test." nodefault
""") + f"""remote-control:
    control-enable: no
stub-zone:
    name: "{zone}"
    stub-addr: 127.0.0.1@{upstream}
""")
    return ["unbound", "-d", "-c", f"{d}/unbound.conf"]


def server_cmd(name, work, zone, zonefile, shardns_bin, cache=False):
    port = PORTS[name]
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    # shardns-xdp: shardns reading its UDP queries from lo with AF_XDP (`--xdp lo`).
    xdp = ["--xdp", "lo"] if name in ("shardns-xdp", "shardns-val-xdp") else []
    if cache and name in ("shardns", "shardns-xdp", "shardns-val", "shardns-val-xdp"):
        # shardns-val: validation on, with a trust anchor for another name only, so that
        # the (unsigned) bench zone is provably insecure: every hit reads its verdict.
        # shardns-val-xdp: the same in AF_XDP mode.
        if name.startswith("shardns-val") and ANCHOR:
            validation = ["--trust-anchor", ANCHOR]
        elif name.startswith("shardns-val"):
            anchor = os.path.join(d, "anchor.ds")
            with open(anchor, "w") as f:
                f.write("anchor.invalid. IN DS 1 13 2 " + "00" * 32 + "\n")
            validation = ["--trust-anchor", anchor]
        else:
            validation = ["--no-validation"]
        # Root hints naming the upstream only: nothing outside the forward zone leaves loopback.
        hints = loopback_root_hints(os.path.join(d, "root.hints"), "127.0.0.1", UPSTREAM_PORT)
        return [shardns_bin, "serve", "--listen", f"127.0.0.1:{port}", "--recursion", "--local-zone", "test. nodefault", "--allow-loopback-upstreams"] + validation + [
                "--forward", f"{zone}=127.0.0.1:{UPSTREAM_PORT}", "--root-hints", hints, "--workers", "1",
                "--log-level", "warn"] + xdp
    if name == "unbound":
        return write_unbound_conf(d, port, zone, ANCHOR)
    if name == "xdpfloor":
        # The same floor on AF_XDP (crates/server/examples/xdp_floor.rs).
        return [os.path.join(os.path.dirname(shardns_bin), "examples", "xdp_floor"), f"127.0.0.1:{port}", "lo"]
    if name == "floor":
        # Not a DNS server: the kernel UDP path's ceiling (crates/server/examples/udp_floor.rs).
        return [os.path.join(os.path.dirname(shardns_bin), "examples", "udp_floor"), f"127.0.0.1:{port}",
                str(FLOOR_REPLY_SIZE)]
    if name == "shardns-many":
        return [shardns_bin, "serve", "--listen", f"127.0.0.1:{port}", "--zone",
                f"{zone}={zonefile}", "--zone-list", MANY_ZONES, "--workers", "1", "--log-level", "warn"]
    if name == "shardns-baseline":
        return [BASELINE, "serve", "--listen", f"127.0.0.1:{port}", "--zone",
                f"{zone}={zonefile}", "--workers", "1", "--log-level", "warn"]
    if name in ("shardns", "shardns-xdp"):
        return [shardns_bin, "serve", "--listen", f"127.0.0.1:{port}", "--zone",
                f"{zone}={zonefile}", "--workers", "1", "--log-level", "warn"] + xdp
    if name == "knotd":
        return knot_conf(d, "127.0.0.1", port, zone, zonefile)
    if name == "knotd-xdp":
        # Knot's own XDP mode on lo (UDP; TCP stays on its sockets).
        cmd = knot_conf(d, "127.0.0.1", port, zone, zonefile)
        with open(f"{d}/knot.conf", "a") as f:
            f.write(f"xdp:\n    listen: lo@{port}\n    udp: on\n    tcp: off\n")
        return cmd
    if name == "nsd":
        return write_nsd_conf(d, port, zone, zonefile)
    raise ValueError(name)


def wait_answer(port, qname, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        r = subprocess.run(["dig", "@127.0.0.1", "-p", str(port), qname, "A", "+short",
                            "+time=1", "+tries=1"], capture_output=True, text=True)
        if r.stdout.strip() and not r.stdout.startswith(";"):
            return True
        time.sleep(0.1)
    return False


def loadgen_cmd(kind, port, qfile, seconds, shardns_bin):
    if kind == "dnsperf":
        # -D: the DO bit (and EDNS) on every query, for the signed workloads.
        return ["taskset", "-c", "1", "dnsperf", "-s", "127.0.0.1", "-p", str(port), "-d", qfile,
                "-l", str(seconds), "-t", "2", "-c", "4", "-q", "200", "-T", "2"] + (["-D"] if DNSSEC_OK else [])
    return ["taskset", "-c", "1", shardns_bin, "bench", "rr", "--server", f"127.0.0.1:{port}",
            "--queries", qfile, "--streams", "200", "--duration", str(seconds), "--runs", "1"]


def parse_qps(kind, text):
    if kind == "dnsperf":
        m = re.search(r"Queries per second:\s+([\d.]+)", text)
        lost = re.search(r"Queries lost:\s+(\d+)", text)
        return (float(m.group(1)) if m else 0.0), (int(lost.group(1)) if lost else -1)
    # `shardns bench rr` prints "peak: 212,828 ops/s" and "queries sent 425,815, lost 0".
    m = re.search(r"peak:?\s+([\d,.]+)\s*ops/s", text) or re.search(r"([\d,.]+)\s*ops/s", text)
    lost = re.search(r"queries sent [\d,]+, lost ([\d,]+)", text) or re.search(r"lost\D+([\d,]+)", text)
    return ((float(m.group(1).replace(",", "")) if m else 0.0),
            (int(lost.group(1).replace(",", "")) if lost else -1))


def run_one(name, args, work, zone, zonefile, qfile, first_q, shardns_bin):
    cache = args.workload in ("cache", "cache-signed")
    if not port_free("127.0.0.1", PORTS[name]):
        print(f"{name}: port {PORTS[name]} is already in use, run skipped", file=sys.stderr)
        return None
    cmd = ["taskset", "-c", "0"] + server_cmd(name, work, zone, zonefile, shardns_bin, cache)
    log = open(os.path.join(work, f"{name}.log"), "ab")
    srv = subprocess.Popen(cmd, stdout=log, stderr=log)
    try:
        port = PORTS[name]
        if not wait_answer(port, first_q):
            print(f"{name} did not answer", file=sys.stderr)
            return None
        if name in XDP_KINDS and "prog/xdp" not in subprocess.run(
                ["ip", "link", "show", "lo"], capture_output=True, text=True).stdout:
            print(f"{name}: no XDP program on lo (see {work}/{name}.log), run skipped", file=sys.stderr)
            return None
        if cache:
            # Every name once, one at a time: the cache holds the whole list before measuring.
            subprocess.run(["taskset", "-c", "1", "dnsperf", "-s", "127.0.0.1", "-p", str(port), "-d", qfile,
                            "-n", "1", "-c", "1", "-q", "10", "-l", "30"], capture_output=True)
            if ANCHOR and name in ("shardns-val", "shardns-val-xdp", "unbound"):
                # cache-signed: the validators must answer secure (AD) with the RRSIG.
                r = subprocess.run(["dig", "@127.0.0.1", "-p", str(port), "+dnssec", first_q, "A",
                                    "+time=2", "+tries=1"], capture_output=True, text=True).stdout
                m = re.search(r";; flags:([^;]*);", r)
                if not m or " ad" not in m.group(1) or "RRSIG" not in r:
                    print(f"{name}: the answer is not secure with its RRSIG, run skipped:\n{r}", file=sys.stderr)
                    return None
        subprocess.run(loadgen_cmd(args.loadgen, port, qfile, 2, shardns_bin), capture_output=True)
        lg = subprocess.Popen(loadgen_cmd(args.loadgen, port, qfile, args.duration, shardns_bin),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(0.5)
        pids = children(srv.pid)
        lgp = children(lg.pid)  # taskset execs, so this is dnsperf itself
        t0, s0, l0, c0 = time.time(), cpu_ticks(pids), cpu_ticks(lgp), steal_idle()
        u0 = cpu_ticks(pids, kernel=False)
        time.sleep(args.duration - 1)
        t1, s1, l1, c1 = time.time(), cpu_ticks(pids), cpu_ticks(lgp), steal_idle()
        u1 = cpu_ticks(pids, kernel=False)
        out, _ = lg.communicate(timeout=args.duration + 30)
        rss = rss_kib(pids)
        qps, lost = parse_qps(args.loadgen, out)
        win = t1 - t0
        srv_cpu = (s1 - s0) / CLK_TCK / win
        # The server's user-space share alone: what a change to the answer code moves, apart
        # from the kernel's UDP path, whose cost swings with the machine.
        srv_user = (u1 - u0) / CLK_TCK / win
        lg_cpu = (l1 - l0) / CLK_TCK / win
        steal = [steal_pct(c0, c1, c) for c in ("cpu0", "cpu1")]
        busy = [busy_pct(c0, c1, c) / 100 for c in ("cpu0", "cpu1")]
        us = lambda cpu: 1e6 * cpu / qps if qps > 0 else 0.0
        return {"srv_us": us(srv_cpu), "srv_user_us": us(srv_user), "lg_us": us(lg_cpu), "sum_us": us(srv_cpu + lg_cpu),
                "core0_us": us(busy[0]), "core1_us": us(busy[1]), "cores_us": us(busy[0] + busy[1]),
                "qps": qps, "lost": lost, "srv_cpu": srv_cpu, "lg_cpu": lg_cpu,
                "kq_per_cpu_s": qps / srv_cpu / 1000 if srv_cpu > 0 else 0.0,
                "rss_mib": rss / 1024, "steal0": steal[0], "steal1": steal[1]}
    finally:
        terminate(srv)
        log.close()
        if name == "knotd-xdp":
            # knotd leaves its XDP program on lo when it exits; take it off (ours go by themselves).
            if "xdp_redirect" in subprocess.run(["ip", "link", "show", "lo"], capture_output=True,
                                                text=True).stdout:
                subprocess.run(["ip", "link", "set", "dev", "lo", "xdpgeneric", "off"], check=False)


def plot_kq(path, servers, results, title):
    """Bar chart of kq per server CPU-second: the median per server, each run as a dot.
    matplotlib is optional: without it, say so and return."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"--plot: matplotlib is not installed (pip install matplotlib); {path} not written",
              file=sys.stderr)
        return
    names = [s for s in servers if results[s]]
    if not names:
        print("--plot: no results to draw", file=sys.stderr)
        return
    meds = [statistics.median(x["kq_per_cpu_s"] for x in results[s]) for s in names]
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    xs = range(len(names))
    bars = ax.bar(xs, meds, width=0.6, color="#8fb3d9", edgecolor="#2b5d8c", label="median", zorder=2)
    for i, s in enumerate(names):
        runs = [x["kq_per_cpu_s"] for x in results[s]]
        n = len(runs)
        offs = [(k - (n - 1) / 2) * min(0.12, 0.45 / max(1, n)) for k in range(n)]
        ax.scatter([i + o for o in offs], runs, s=18, color="black", zorder=3,
                   label="each run" if i == 0 else None)
    for b, m in zip(bars, meds):
        ax.text(b.get_x() + b.get_width() / 2, m / 2, f"{m:.0f}", ha="center", va="center",
                fontsize=10, color="#173a5e")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(names)
    ax.set_ylabel("kq per server CPU-second")
    ax.set_ylim(0, max(max(x["kq_per_cpu_s"] for x in results[s]) for s in names) * 1.15)
    ax.set_title(title, fontsize=9)
    ax.grid(axis="y", alpha=0.3, zorder=0)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    print(f"plot written to {path}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--workload", choices=["small", "big", "signed", "nsec3nx", "cache", "cache-signed"],
                    default="small")
    ap.add_argument("--servers", help="default: shardns,knotd,nsd; for cache: shardns,unbound")
    ap.add_argument("--loadgen", choices=["dnsperf", "shardns"], default="dnsperf")
    ap.add_argument("--markdown", help="also write the table to this file")
    ap.add_argument("--port", action="append", default=[], metavar="NAME=PORT",
                    help="serve NAME on PORT instead of its default (e.g. shardns=5639 when 5631 is taken; "
                    "upstream=PORT moves the cache workload's authoritative server off 5301)")
    ap.add_argument("--per-query", action="store_true",
                    help="also a table of CPU microseconds per query: server, load generator, their "
                    "sum (process accounting), and cores 0, 1 and both busy (all processes, softirq)")
    ap.add_argument("--baseline", metavar="PATH",
                    help="a shardns binary to run as the server 'shardns-baseline' (add it to --servers), "
                    "e.g. a release build of the commit before a change")
    ap.add_argument("--floor-reply-size", type=int, default=0, metavar="OCTETS",
                    help="pad the floor's replies to this many octets (e.g. the workload's answer size)")
    ap.add_argument("--zone-list", metavar="FILE",
                    help="a zone list (NAME FILE per line) for the server 'shardns-many' (add it to --servers)")
    ap.add_argument("--plot", help="also draw kq per server CPU-second (median bar, each run a dot) "
                    "into this .png or .svg (needs matplotlib)")
    args = ap.parse_args()
    global BASELINE, MANY_ZONES, FLOOR_REPLY_SIZE
    BASELINE = args.baseline
    FLOOR_REPLY_SIZE = args.floor_reply_size
    MANY_ZONES = args.zone_list
    global UPSTREAM_PORT
    for spec in args.port:
        name, port = spec.split("=", 1)
        if name == "upstream":  # the cache workload's authoritative server
            UPSTREAM_PORT = int(port)
        else:
            PORTS[name] = int(port)

    shardns_bin = build_shardns()
    for kind, example in (("floor", "udp_floor"), ("xdpfloor", "xdp_floor")):
        if kind in (args.servers or "").split(","):
            subprocess.run(["cargo", "build", "--release", "-q", "-p", "shardns-server", "--example",
                            example], cwd=ROOT, check=True)
    zones = os.environ.get("ZONES", "/tmp/shardns-bench-zones")
    if args.workload == "big":
        zone, zonefile, qfile = "big.test", f"{zones}/big.test.zone", f"{zones}/queries-big-A.txt"
    elif args.workload in ("signed", "cache-signed"):
        zone, zonefile, qfile = "bench.test", f"{zones}/bench.test.signed.zone", f"{zones}/queries-A.txt"
    elif args.workload == "nsec3nx":
        zone, zonefile, qfile = "bench.test", f"{zones}/bench.test.nsec3.zone", f"{zones}/queries-nx.txt"
    else:
        zone, zonefile, qfile = "bench.test", f"{zones}/bench.test.zone", f"{zones}/queries-A.txt"
    if args.workload in ("signed", "nsec3nx", "cache-signed") and not os.path.exists(f"{zones}/bench.test.zone"):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_zones.py"), zones, "small"], check=True)
    if not os.path.exists(zonefile):
        gen = {"big": "big", "signed": "signed", "nsec3nx": "signed",
               "cache-signed": "signed"}.get(args.workload, "small")
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_zones.py"), zones, gen], check=True)
    global DNSSEC_OK
    DNSSEC_OK = args.workload in ("signed", "nsec3nx", "cache-signed")
    if args.servers is None:
        args.servers = ("shardns,unbound" if args.workload == "cache"
                        else "shardns-val,unbound" if args.workload == "cache-signed"
                        else "shardns,knotd,nsd")
    with open(qfile) as f:
        first_q = f.readline().split()[0]
    if args.workload == "nsec3nx":
        first_q = "host0000.bench.test"  # the queried names do not exist: wait for one that does
    servers = [s for s in args.servers.split(",")
               if s in ("shardns", "shardns-val", "shardns-val-xdp", "floor", "xdpfloor", "shardns-xdp")
               or shutil.which(s.split("-")[0])
               or (s == "shardns-baseline" and BASELINE) or (s == "shardns-many" and MANY_ZONES)]
    if any(s in XDP_KINDS for s in servers) and os.geteuid() != 0:
        sys.exit("xdpfloor, shardns-xdp, shardns-val-xdp and knotd-xdp need root (CAP_NET_ADMIN and CAP_BPF)")
    saved_sysctls = {}
    if any(s in XDP_KINDS for s in servers):
        for k in XDP_SYSCTLS:
            path = "/proc/sys/" + k.replace(".", "/")
            with open(path) as f:
                saved_sysctls[path] = f.read().strip()
            with open(path, "w") as f:
                f.write("1")

        def restore():
            for path, v in saved_sysctls.items():
                with open(path, "w") as f:
                    f.write(v)
        atexit.register(restore)
    work = tempfile.mkdtemp(prefix="shardns-compare-")
    results = {s: [] for s in servers}
    upstream = None
    if args.workload == "cache-signed":
        global ANCHOR
        ANCHOR = os.path.join(work, "bench.test.ds")
        ds = subprocess.run(["dnssec-dsfromkey", "-2", "-f", zonefile, zone + "."],
                            capture_output=True, text=True, check=True).stdout
        with open(ANCHOR, "w") as f:
            f.write(ds)
    if args.workload in ("cache", "cache-signed"):
        if not port_free("127.0.0.1", UPSTREAM_PORT):
            sys.exit(f"port {UPSTREAM_PORT} (upstream) is already in use")
        upstream = subprocess.Popen(["taskset", "-c", "1", shardns_bin, "serve", "--listen",
                                     f"127.0.0.1:{UPSTREAM_PORT}", "--zone", f"{zone}={zonefile}",
                                     "--workers", "1", "--log-level", "warn"])
        if not wait_answer(UPSTREAM_PORT, first_q):
            upstream.kill()
            sys.exit("the upstream authoritative server did not answer")
    for r in range(args.rounds):
        for s in servers:
            res = run_one(s, args, work, zone, zonefile, qfile, first_q, shardns_bin)
            if res:
                results[s].append(res)
                print(f"round {r + 1} {s}: {res['qps']:.0f} q/s, server CPU {100 * res['srv_cpu']:.0f}%, "
                      f"{res['kq_per_cpu_s']:.0f} kq/CPU-s, load generator CPU {100 * res['lg_cpu']:.0f}%, "
                      f"lost {res['lost']}, steal {res['steal0']:.0f}/{res['steal1']:.0f}%, "
                      f"µs/q server {res['srv_us']:.2f} (user {res['srv_user_us']:.2f}) + load gen {res['lg_us']:.2f} = {res['sum_us']:.2f}, "
                      f"cores {res['core0_us']:.2f} + {res['core1_us']:.2f}", file=sys.stderr)

    if upstream:
        upstream.send_signal(signal.SIGTERM)
        upstream.wait(10)
    med = lambda s, k: statistics.median(x[k] for x in results[s]) if results[s] else 0.0
    base = next((b for b in ("knotd", "unbound") if results.get(b)), None)
    lines = [
        f"Workload `{args.workload}` ({zone}, {qfile.rsplit('/', 1)[1]}), load generator {args.loadgen}, "
        f"{args.rounds} interleaved rounds of {args.duration} s, medians.",
        "",
        "| server | kq per server CPU-s | runs (kq/CPU-s) | q/s | server CPU % | load gen CPU % | lost | RSS MiB |"
        + (f" vs {base} (kq/CPU-s) |" if base else ""),
        "|---|---|---|---|---|---|---|---|" + ("---|" if base else ""),
    ]
    for s in servers:
        if not results[s]:
            continue
        row = (f"| {s} | {med(s, 'kq_per_cpu_s'):.0f} | "
               + "/".join(f"{x['kq_per_cpu_s']:.0f}" for x in results[s])
               + f" | {med(s, 'qps'):,.0f} | {100 * med(s, 'srv_cpu'):.0f} | {100 * med(s, 'lg_cpu'):.0f} | "
               f"{med(s, 'lost'):.0f} | {med(s, 'rss_mib'):.1f} |")
        if base:
            row += f" {med(s, 'kq_per_cpu_s') / med(base, 'kq_per_cpu_s'):.2f}x |"
        lines.append(row)
    if args.per_query:
        lines += ["", "CPU microseconds per query (medians): process accounting of the server and the load "
                  "generator, and whole cores busy (every process and softirq on the core, minus idle and steal).",
                  "", "| server | server µs/q | of it user space | load gen µs/q | sum µs/q | core 0 µs/q | "
                  "core 1 µs/q | both cores µs/q |",
                  "|---|---|---|---|---|---|---|---|"]
        for s in servers:
            if results[s]:
                lines.append(f"| {s} | " + " | ".join(f"{med(s, k):.2f}" for k in
                             ("srv_us", "srv_user_us", "lg_us", "sum_us", "core0_us", "core1_us",
                              "cores_us")) + " |")
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")
    if args.plot:
        plot_kq(args.plot, servers, results,
                f"workload {args.workload}, load generator {args.loadgen}, "
                f"{args.rounds} interleaved rounds of {args.duration} s")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
