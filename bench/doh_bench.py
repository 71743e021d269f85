#!/usr/bin/env python3
"""DNS over HTTPS (and DNS over TLS) per server CPU-second: shardns vs Unbound and BIND.

Each server answers the same zone (crates/shardns/data/example.test.zone: shardns's
embedded one, Unbound's `auth-zone`, BIND's primary zone) with one thread pinned to core 0
(shardns --workers 1, unbound num-threads 1, named -n 1), the same self-signed P-256
certificate; dnsperf 2.10 on core 1 with reused connections (-c clients, -q in flight).
Rounds are interleaved (shardns, unbound, named, shardns, ...), each run preceded by a 2 s
warm-up on its own connections; the figure is answers per server CPU-second (utime+stime of
the server's processes from /proc around the measured run), medians over the rounds, and
the ratio of shardns's median to each peer's.

    bench/doh_bench.py --rounds 3 --duration 10                 # DoH (GET) and DoT
    bench/doh_bench.py --rounds 3 --modes doh-post --servers shardns,unbound

Needs dnsperf, unbound (1.17: built with nghttp2), bind9 (named 9.18) and openssl.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lab  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZONE = os.path.join(ROOT, "crates/shardns/data/example.test.zone")
QUERIES = "www.example.test A\nexample.test SOA\nmail.example.test A\nexample.test NS\n"
# Each server's (UDP, DoT, DoH) ports.
PORTS = {"shardns": (15553, 15853, 15443), "unbound": (16553, 16853, 16443),
         "named": (17553, 17853, 17443)}


def make_cert(work):
    cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    return cert, key


def start(procs, name, work, bin_, cert, key):
    udp, dot, doh = PORTS[name]
    if name == "shardns":
        cmd = [bin_, "serve", "--listen", f"127.0.0.1:{udp}", "--workers", "1",
               "--control", os.path.join(work, "ctl"), "--tls-listen", f"127.0.0.1:{dot}",
               "--https-listen", f"127.0.0.1:{doh}", "--tls-cert", cert, "--tls-key", key]
    elif name == "unbound":
        conf = os.path.join(work, "unbound.conf")
        with open(conf, "w") as f:
            f.write(f"""server:
    interface: 127.0.0.1@{udp}
    interface: 127.0.0.1@{dot}
    interface: 127.0.0.1@{doh}
    tls-port: {dot}
    https-port: {doh}
    tls-service-key: "{key}"
    tls-service-pem: "{cert}"
    http-endpoint: "/dns-query"
    num-threads: 1
    do-daemonize: no
    username: ""
    chroot: ""
    directory: "{work}"
    pidfile: ""
    use-syslog: no
    logfile: ""
    access-control: 127.0.0.0/8 allow
    incoming-num-tcp: 100
    # Unbound serves test. as a locally served empty zone by default (RFC 6761).
    local-zone: "test." nodefault
auth-zone:
    name: "example.test"
    zonefile: "{ZONE}"
    for-downstream: yes
    for-upstream: no
""")
        cmd = ["unbound", "-d", "-c", conf]
    else:
        conf = os.path.join(work, "named.conf")
        with open(conf, "w") as f:
            f.write(f"""tls local-tls {{ key-file "{key}"; cert-file "{cert}"; }};
http local-http {{ endpoints {{ "/dns-query"; }}; }};
controls {{ }};
options {{
    directory "{work}";
    pid-file none;
    listen-on port {udp} {{ 127.0.0.1; }};
    listen-on port {dot} tls local-tls {{ 127.0.0.1; }};
    listen-on port {doh} tls local-tls http local-http {{ 127.0.0.1; }};
    listen-on-v6 {{ none; }};
    recursion no;
}};
zone "example.test" {{ type primary; file "{ZONE}"; }};
""")
        cmd = ["named", "-g", "-n", "1", "-c", conf]
    p = procs.start(name, ["taskset", "-c", "0"] + cmd)
    procs.wait_ready(name, p, lambda: lab.probe("127.0.0.1", udp, "www.example.test"))
    return p


def dnsperf(qfile, name, mode, seconds, clients, inflight):
    udp, dot, doh = PORTS[name]
    cmd = ["taskset", "-c", "1", "dnsperf", "-d", qfile, "-l", str(seconds), "-c", str(clients),
           "-q", str(inflight), "-s", "127.0.0.1"]
    if mode == "dot":
        cmd += ["-p", str(dot), "-m", "dot"]
    else:
        method = "POST" if mode == "doh-post" else "GET"
        cmd += ["-p", str(doh), "-m", "doh", "-O", f"doh-method={method}"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60).stdout
    m = re.search(r"Queries completed:\s+(\d+)", out)
    lost = re.search(r"Queries lost:\s+(\d+)", out)
    rcodes = re.search(r"Response codes:\s+(.*)", out)
    return (int(m.group(1)) if m else 0, int(lost.group(1)) if lost else -1,
            rcodes.group(1) if rcodes else "?")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--servers", default="shardns,unbound,named")
    ap.add_argument("--modes", default="doh,dot", help="doh (GET), doh-post, dot")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--inflight", type=int, default=200)
    args = ap.parse_args()
    bin_ = lab.build_shardns()
    servers = args.servers.split(",")
    results = {}
    with tempfile.TemporaryDirectory(prefix="doh-bench-") as work:
        cert, key = make_cert(work)
        qfile = os.path.join(work, "q.txt")
        with open(qfile, "w") as f:
            f.write(QUERIES)
        for mode in args.modes.split(","):
            for r in range(args.rounds):
                for name in servers:
                    procs = lab.Procs(work)
                    try:
                        p = start(procs, name, work, bin_, cert, key)
                        dnsperf(qfile, name, mode, 2, args.clients, args.inflight)
                        pids = lab.children(p.pid)
                        before = lab.cpu_ticks(pids)
                        done, lost, rcodes = dnsperf(qfile, name, mode, args.duration,
                                                     args.clients, args.inflight)
                        cpu = (lab.cpu_ticks(pids) - before) / os.sysconf("SC_CLK_TCK")
                    finally:
                        procs.stop_all()
                    per_cpu = done / cpu if cpu > 0 else 0.0
                    results.setdefault((mode, name), []).append(per_cpu)
                    print(f"{mode} round {r + 1} {name}: {done / args.duration:,.0f} answers/s, "
                          f"server CPU {cpu:.2f} s, {per_cpu:,.0f} answers per CPU-s, "
                          f"lost {lost}, rcodes {rcodes}", flush=True)
    print(f"\nload average at the end: {os.getloadavg()}")
    print("| mode | server | answers per server CPU-second (runs) | median | shardns / it |")
    print("|---|---|---|---|---|")
    for (mode, name), v in results.items():
        med = statistics.median(v)
        base = results.get((mode, "shardns"))
        ratio = statistics.median(base) / med if base and med else float("nan")
        runs = "; ".join(f"{x:,.0f}" for x in v)
        print(f"| {mode} | {name} | {runs} | {med:,.0f} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
