#!/usr/bin/env python3
"""A release stress test: a root, an authoritative and a
recursive server on one host, the recursive one driven at fixed rates over UDP and TCP, IPv4
and IPv6, with response times every second, the response codes, and memory over time.

Topology (loopback only, every server on the same port number on its own address):
  127.0.0.1:PORT  shardns root        zone `.`: delegates test. to ns.test. (glue 127.0.0.2)
  127.0.0.2:PORT  shardns authoritative, zones `test.` (delegating bench.test. to
                  ns.bench.test., glue 127.0.0.2) and `bench.test.` (host0000..host0999 A)
  127.0.0.3:PORT  the resolver, also on [::1]:PORT:
                  shardns --recursion --root-hints (127.0.0.1@PORT) --upstream-port PORT, or
                  with --recursive unbound, Unbound (see below)
The load is `shardns bench rate` against the resolver, 4 legs (udp4, tcp4, udp6, tcp6) one
after the other against the same resolver process (so the first leg starts with a cold cache
and memory is followed across all legs), each with --pid RESOLVER --json --plot.

Unbound cannot take a port from root hints nor apply one to the addresses learned from
referrals (it always sends to port 53), so in its configuration the root hints are a
`stub-zone` for "." at 127.0.0.1@PORT and test. is a `stub-zone` at 127.0.0.2@PORT: Unbound
goes straight to the authoritative server for test. and below and never follows the root's
referral, whereas shardns iterates root -> test. from the hints and referrals
(--upstream-port supplies the port that glue lacks).

Usage:
  bench/stress.py [--port 5353] [--qps 5000] [--duration 20] [--legs udp4,tcp4,udp6,tcp6]
      [--recursive shardns|unbound] [--ttl 3600] [--workers 1] [--plot-dir docs]
      [--markdown FILE] [--keep-json DIR]
"""

import argparse
import json
import re
import shlex
import shutil
import os
import signal
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no bench/__pycache__ in the worktree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab import (ROOT, Procs, build_shardns, family_sum, port_free, shardns_stats,  # noqa: E402
                 unbound_version)

ROOT_IP, AUTH_IP, RES_IP, RES_IP6 = "127.0.0.1", "127.0.0.2", "127.0.0.3", "::1"
LEGS = {  # leg -> (resolver address family, --tcp)
    "udp4": (4, False),
    "tcp4": (4, True),
    "udp6": (6, False),
    "tcp6": (6, True),
}
NAMES = 1000


def zones(d, ttl):
    """Write the root, test. and bench.test. zones, the root hints and the query list."""
    files = {}

    def w(name, text):
        p = os.path.join(d, name)
        with open(p, "w") as f:
            f.write(text)
        files[name] = p

    w("root.zone", """$TTL 86400
.                   IN SOA a.root-servers.net. admin.root-servers.net. 1 3600 600 86400 300
.                   IN NS  a.root-servers.net.
a.root-servers.net. IN A   127.0.0.1
test.               IN NS  ns.test.
ns.test.            IN A   127.0.0.2
""")
    w("test.zone", """$ORIGIN test.
$TTL 86400
@        IN SOA ns.test. admin.test. 1 3600 600 86400 300
@        IN NS  ns.test.
ns       IN A   127.0.0.2
www      IN A   192.0.2.1
bench    IN NS  ns.bench.test.
ns.bench IN A   127.0.0.2
""")
    hosts = "".join("host%04d IN A 10.%d.%d.1\n" % (i, i // 256, i % 256) for i in range(NAMES))
    w("bench.test.zone", f"""$ORIGIN bench.test.
$TTL {ttl}
@  IN SOA ns.bench.test. admin.bench.test. 1 3600 600 86400 {min(ttl, 300)}
@  IN NS  ns.bench.test.
ns IN A   127.0.0.2
""" + hosts)
    w("queries.txt", "".join("host%04d.bench.test A\n" % i for i in range(NAMES)))
    return files


def dig_ok(ip, port, qname, tcp=False):
    cmd = ["dig", f"@{ip}", "-p", str(port), qname, "A", "+time=1", "+tries=1"]
    if tcp:
        cmd.append("+tcp")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=5)
    except subprocess.TimeoutExpired:
        return False
    return "status: NOERROR" in r.stdout and "ANSWER: 0," not in r.stdout


def shardns_cmd(bin_, listen, args, work, name, workers):
    cmd = [bin_, "serve", "--control", os.path.join(work, f"{name}.ctl"), "--workers", str(workers),
           "--log-level", "warn"]
    for a in listen:
        cmd += ["--listen", a]
    return cmd + args


def unbound_cmd(work, port, workers):
    d = os.path.join(work, "unbound")
    os.makedirs(d, exist_ok=True)
    conf = os.path.join(d, "unbound.conf")
    with open(conf, "w") as f:
        f.write(f"""server:
    interface: {RES_IP}
    interface: {RES_IP6}
    port: {port}
    num-threads: {workers}
    do-daemonize: no
    username: ""
    chroot: ""
    directory: "{d}"
    pidfile: "{d}/unbound.pid"
    use-syslog: no
    logfile: ""
    verbosity: 1
    access-control: 127.0.0.0/8 allow
    access-control: ::1/128 allow
    do-ip6: yes
    prefer-ip4: yes
    do-not-query-localhost: no
    module-config: "iterator"
    local-zone: "test." nodefault
    incoming-num-tcp: 64
remote-control:
    control-enable: no
# Unbound's root hints carry no port: the root is a stub zone instead.
stub-zone:
    name: "."
    stub-addr: {ROOT_IP}@{port}
# Referrals carry no port either (Unbound always uses 53), so test. is a stub zone too.
stub-zone:
    name: "test."
    stub-addr: {AUTH_IP}@{port}
""")
    return ["unbound", "-d", "-c", conf]


def run_leg(bin_, leg, args, port, qfile, pid, timeout_s):
    fam, tcp = LEGS[leg]
    server = f"{RES_IP}:{port}" if fam == 4 else f"[{RES_IP6}]:{port}"
    cmd = [bin_, "bench", "rate", "--server", server, "--queries", qfile, "--qps", str(args.qps),
           "--duration", str(args.duration), "--pid", str(pid), "--json"]
    if tcp:
        cmd.append("--tcp")
    plot = None
    if args.plot_dir:
        plot = os.path.join(args.plot_dir, f"stress-{leg}.png")
        cmd += ["--plot", plot]
    print(f"leg {leg}: {' '.join(cmd)}", file=sys.stderr)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=None, text=True)
    try:
        out, _ = p.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate(timeout=10)
        raise RuntimeError(f"leg {leg}: bench did not finish within {timeout_s} s")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
    if p.returncode != 0:
        raise RuntimeError(f"leg {leg}: bench exited {p.returncode}")
    rep = json.loads(out)
    rep["_plot"] = plot
    return rep


def stats(bin_, work, name):
    """A few counters of a running shardns instance (from `shardns stats`), each summed over its
    label sets, or {}."""
    samples = shardns_stats(bin_, os.path.join(work, f"{name}.ctl"))
    families = {k.split("{", 1)[0] for k in samples}
    return {f: family_sum(samples, f) for f in families
            if re.fullmatch(r"shardns_(?:queries_total|resolver_\w+_total)", f)}


def mib(kib):
    return "-" if kib is None else f"{kib / 1024:.1f}"


def fmt_ms(v):
    return "-" if v is None else (f"{v:.2f}" if v < 10 else f"{v:.0f}")


def summary(args, reps, cmdline, resolver_desc, counters):
    lines = [
        f"Resolver: {resolver_desc}. {args.qps:,} q/s for {args.duration} s per leg, legs run one "
        f"after the other against the same resolver process ({NAMES} names, TTL {args.ttl} s; "
        f"the first leg starts with a cold cache).",
        "",
        f"Command: `{cmdline}`",
        "",
        "| leg | sent | answered | timeouts | rcodes | p50 ms | p99 ms | max ms | resolver CPU % "
        "| RSS start MiB | RSS end MiB | RSS max/s MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for leg, r in reps:
        t, lat, u = r["tally"], r["latency"], r.get("server_usage") or {}
        rss_s = [s["server_rss_kib"] for s in r["seconds"] if s.get("server_rss_kib") is not None]
        rcodes = ", ".join(f"{k} {v:,}" for k, v in sorted(t["rcodes"].items())) or "-"
        cpu = u.get("cpu_pct")
        lines.append(
            f"| {leg} | {t['sent']:,} | {t['answered']:,} | {t['lost']:,} | {rcodes} | "
            f"{fmt_ms(lat.get('p50_ms'))} | {fmt_ms(lat.get('p99_ms'))} | {fmt_ms(lat.get('max_ms'))} | "
            f"{'-' if cpu is None else f'{cpu:.0f}'} | {mib(u.get('rss_start_kib'))} | "
            f"{mib(u.get('rss_end_kib'))} | {mib(max(rss_s) if rss_s else None)} |")
    q = lambda n, k: int(counters.get(n, {}).get(k, 0))
    if counters.get("root") or counters.get("auth"):
        extra = (f"Queries received over all legs (including the readiness check): root "
                 f"{q('root', 'shardns_queries_total'):,}, authoritative {q('auth', 'shardns_queries_total'):,}")
        if counters.get("resolver"):
            extra += (f"; resolver upstream queries {q('resolver', 'shardns_resolver_upstream_queries_total'):,}, "
                      f"cache hits {q('resolver', 'shardns_resolver_cache_hits_total'):,}, "
                      f"misses {q('resolver', 'shardns_resolver_cache_misses_total'):,}, "
                      f"SERVFAILs {q('resolver', 'shardns_resolver_servfails_total'):,}")
        lines += ["", extra + "."]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=5353, help="port of every server (unprivileged)")
    ap.add_argument("--qps", type=int, default=5000)
    ap.add_argument("--duration", type=int, default=20, help="seconds per leg")
    ap.add_argument("--legs", default="udp4,tcp4,udp6,tcp6")
    ap.add_argument("--recursive", choices=["shardns", "unbound"], default="shardns")
    ap.add_argument("--ttl", type=int, default=3600, help="TTL of the bench.test. names")
    ap.add_argument("--workers", type=int, default=1, help="workers of each server")
    ap.add_argument("--plot-dir", default=os.path.join(ROOT, "docs"),
                    help="write stress-LEG.png here ('' for none)")
    ap.add_argument("--markdown", help="also write the summary to this file")
    ap.add_argument("--keep-json", help="write each leg's JSON report into this directory")
    args = ap.parse_args()
    legs = [l for l in args.legs.split(",") if l]
    for l in legs:
        if l not in LEGS:
            ap.error(f"unknown leg {l!r} (use {','.join(LEGS)})")
    if not 1024 <= args.port <= 65535:
        ap.error("--port must be an unprivileged port (1024-65535)")
    if args.recursive == "unbound" and not shutil.which("unbound"):
        sys.exit("unbound is not installed")

    # SIGTERM runs the finally blocks too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    bin_ = build_shardns()

    port = args.port
    busy = [ip for ip in (ROOT_IP, AUTH_IP, RES_IP, RES_IP6) if not port_free(ip, port)]
    if busy:
        sys.exit(f"port {port} is already in use on {', '.join(busy)}: pick another with --port")

    work = tempfile.mkdtemp(prefix="shardns-stress-")
    files = zones(work, args.ttl)
    hints = os.path.join(work, "root.hints")
    with open(hints, "w") as f:
        f.write(f". 3600000 NS a.root-servers.net.\na.root-servers.net. 3600000 A {ROOT_IP}@{port}\n")
    procs = Procs(work)
    reps, counters, failed, desc = [], {}, False, args.recursive
    try:
        root = procs.start("root", shardns_cmd(bin_, [f"{ROOT_IP}:{port}"],
                                               ["--zone", f".={files['root.zone']}"], work, "root", args.workers))
        auth = procs.start("auth", shardns_cmd(
            bin_, [f"{AUTH_IP}:{port}"],
            ["--zone", f"test.={files['test.zone']}", "--zone", f"bench.test.={files['bench.test.zone']}"],
            work, "auth", args.workers))
        procs.wait_ready("root", root, lambda: dig_ok(ROOT_IP, port, "a.root-servers.net"), every=0.2)
        procs.wait_ready("auth", auth, lambda: dig_ok(AUTH_IP, port, "host0000.bench.test"), every=0.2)
        if args.recursive == "shardns":
            res = procs.start("resolver", shardns_cmd(
                bin_, [f"{RES_IP}:{port}", f"[{RES_IP6}]:{port}"],
                ["--recursion", "--local-zone", "test. nodefault", "--allow-loopback-upstreams", "--no-validation", "--root-hints", hints, "--upstream-port", str(port)],
                work, "resolver", args.workers))
            desc = (f"shardns --recursion --root-hints ({ROOT_IP}@{port}) --upstream-port {port}, "
                    f"{args.workers} worker(s), on {RES_IP} and [{RES_IP6}]")
        else:
            res = procs.start("resolver", unbound_cmd(work, port, args.workers))
            desc = (f"Unbound {unbound_version()} ({args.workers} thread(s), iterator only), root and test. "
                    f"as stub zones at {ROOT_IP}@{port} and {AUTH_IP}@{port}, on {RES_IP} and [{RES_IP6}]")
        # Readiness: a name outside bench.test., so the measured names all start uncached.
        procs.wait_ready("resolver", res, lambda: dig_ok(RES_IP, port, "www.test"), every=0.2)
        leg_timeout = args.duration + 60
        for leg in legs:
            reps.append((leg, run_leg(bin_, leg, args, port, files["queries.txt"], res.pid, leg_timeout)))
            if res.poll() is not None:
                raise RuntimeError(f"the resolver exited during leg {leg}:\n{procs.log('resolver')[-2000:]}")
            if args.keep_json:
                os.makedirs(args.keep_json, exist_ok=True)
                with open(os.path.join(args.keep_json, f"stress-{leg}.json"), "w") as f:
                    json.dump(reps[-1][1], f, indent=1)
        # Before stopping: how many queries reached the root and the authoritative server.
        counters = {n: stats(bin_, work, n) for n in ("root", "auth", "resolver")}
    except Exception as e:  # report what was measured so far
        failed = True
        print(f"stress: {e}\n(logs kept in {work})", file=sys.stderr)
        if not reps:
            procs.stop_all()
            sys.exit(1)
    finally:
        procs.stop_all()
        if not failed:
            shutil.rmtree(work, ignore_errors=True)

    cmdline = shlex.join(["bench/stress.py"] + sys.argv[1:])
    text = summary(args, reps, cmdline, desc, counters)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    if len(reps) < len(legs):
        sys.exit(1)


if __name__ == "__main__":
    main()
