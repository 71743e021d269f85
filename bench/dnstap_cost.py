#!/usr/bin/env python3
"""The cost of dnstap, and of a new DoQ connection, in server CPU.

1. dnstap: shardns (release, one worker, pinned to core 0) answering dnsperf's UDP load
   (core 1) without dnstap, with dnstap to a Unix socket read by fstrm_capture (core 1,
   writing to /dev/null), and with dnstap to a file; rounds interleaved (A B C A B C), the
   headline is answers per server CPU-second (the writer thread is part of the server).
   The dnstap counters (sent, dropped, lost) are printed for each run.
2. New connections (--connections N): N sequential `kdig` queries, each on a new
   connection, over TCP, DoT and DoQ (kdig on core 1): server CPU per connection, which is
   what a client that does not reuse its connection costs (handshake included).

    bench/dnstap_cost.py --rounds 3 --duration 10
    bench/dnstap_cost.py --rounds 0 --connections 300

Needs dnsperf, fstrm-bin (fstrm_capture), knot-dnsutils (kdig) and openssl.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lab  # noqa: E402

PORT, TLS_PORT, QUIC_PORT = 15453, 15853, 15854
QUERIES = "www.example.test A\nexample.test SOA\nmail.example.test A\nexample.test NS\n"


def start_server(procs, bin_, work, extra):
    ctl = os.path.join(work, "ctl")
    cmd = ["taskset", "-c", "0", bin_, "serve", "--listen", f"127.0.0.1:{PORT}", "--workers",
           "1", "--control", ctl] + extra
    p = procs.start("shardns", cmd)
    procs.wait_ready("shardns", p, lambda: lab.probe("127.0.0.1", PORT, "www.example.test"))
    return p, ctl


def dnsperf(qfile, seconds):
    out = subprocess.run(["taskset", "-c", "1", "dnsperf", "-d", qfile, "-l", str(seconds), "-c",
                          "8", "-q", "200", "-s", "127.0.0.1", "-p", str(PORT)],
                         capture_output=True, text=True, timeout=seconds + 60).stdout
    done = int(re.search(r"Queries completed:\s+(\d+)", out).group(1))
    return done


def dnstap_round(bin_, work, mode, seconds):
    procs = lab.Procs(work)
    try:
        extra = []
        if mode == "socket":
            sock = os.path.join(work, "tap.sock")
            if os.path.exists(sock):
                os.unlink(sock)
            procs.start("fstrm_capture", ["taskset", "-c", "1", "fstrm_capture", "-t",
                                          "protobuf:dnstap.Dnstap", "-u", sock, "-w",
                                          "/dev/null"])
            end = time.time() + 10
            while not os.path.exists(sock) and time.time() < end:
                time.sleep(0.05)
            extra = ["--dnstap-socket", sock]
        elif mode == "file":
            extra = ["--dnstap-file", os.path.join(work, "tap.fstrm")]
        p, ctl = start_server(procs, bin_, work, extra)
        qfile = os.path.join(work, "q.txt")
        with open(qfile, "w") as f:
            f.write(QUERIES)
        dnsperf(qfile, 2)
        pids = lab.children(p.pid)
        before = lab.cpu_ticks(pids)
        done = dnsperf(qfile, seconds)
        cpu = (lab.cpu_ticks(pids) - before) / os.sysconf("SC_CLK_TCK")
        stats = lab.shardns_stats(bin_, ctl)
        tap = lab.by_label(stats, "shardns_dnstap_frames_total", "result")
        return done / seconds, cpu, tap
    finally:
        procs.stop_all()


def connections(bin_, work, n):
    certs = os.path.join(work, "c.pem"), os.path.join(work, "k.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=dns.test",
                    "-keyout", certs[1], "-out", certs[0]], check=True, capture_output=True)
    procs = lab.Procs(work)
    try:
        p, _ = start_server(procs, bin_, work, [
            "--tls-listen", f"127.0.0.1:{TLS_PORT}", "--quic-listen", f"127.0.0.1:{QUIC_PORT}",
            "--tls-cert", certs[0], "--tls-key", certs[1]])
        pids = lab.children(p.pid)
        rows = []
        for name, port, opts in [("TCP", PORT, ["+tcp"]), ("DoT", TLS_PORT, ["+tls"]),
                                 ("DoQ", QUIC_PORT, ["+quic"])]:
            before = lab.cpu_ticks(pids)
            ok = 0
            t0 = time.time()
            for _ in range(n):
                r = subprocess.run(["taskset", "-c", "1", "kdig", "@127.0.0.1", "-p", str(port),
                                    "+short", "+time=2", "+retry=0"] + opts
                                   + ["www.example.test", "A"],
                                   capture_output=True, text=True, timeout=30)
                ok += "192.0.2.10" in r.stdout
            wall = time.time() - t0
            cpu = (lab.cpu_ticks(pids) - before) / os.sysconf("SC_CLK_TCK")
            rows.append((name, ok, n, cpu, wall))
        return rows
    finally:
        procs.stop_all()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=0)
    a = ap.parse_args()
    bin_ = lab.build_shardns()
    with tempfile.TemporaryDirectory(prefix="shardns-dnstap-bench-") as work:
        if a.rounds:
            modes = ["off", "socket", "file"]
            runs = {m: [] for m in modes}
            for r in range(a.rounds):
                for m in modes:
                    qps, cpu, tap = dnstap_round(bin_, work, m, a.duration)
                    runs[m].append((qps, cpu))
                    print(f"round {r + 1} {m}: {qps:,.0f} answers/s, server CPU {cpu:.2f} s, "
                          f"{qps * a.duration / max(cpu, 0.01):,.0f} per CPU-s, dnstap {tap}",
                          file=sys.stderr)
            base = statistics.median(q * a.duration / max(c, 0.01) for q, c in runs["off"])
            print("| dnstap | answers/s (runs) | answers per server CPU-s (median) | vs off |")
            print("|---|---|---|---|")
            for m in modes:
                per = statistics.median(q * a.duration / max(c, 0.01) for q, c in runs[m])
                qs = "; ".join(f"{q:,.0f}" for q, _ in runs[m])
                print(f"| {m} | {qs} | {per:,.0f} | {per / base:.2f}x |")
        if a.connections:
            print("| transport | answered | server CPU ms per connection | wall ms per query |")
            print("|---|---|---|---|")
            for name, ok, n, cpu, wall in connections(bin_, work, a.connections):
                print(f"| {name} | {ok}/{n} | {1000 * cpu / n:.2f} | {1000 * wall / n:.1f} |")


if __name__ == "__main__":
    main()
