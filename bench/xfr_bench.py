#!/usr/bin/env python3
"""Outgoing zone transfer (AXFR) of the 1,276,513-record zone: shardns against knotd.

Each server runs pinned to core 0 with the big zone (bench/gen_zones.py) and transfer allowed
to 127.0.0.1; this script, pinned to core 1, is the client: it sends one AXFR over TCP, reads
the length-prefixed messages, checks each is a NOERROR response with our ID, and adds up
ANCOUNT until the whole zone (and the closing SOA) is in; the records themselves are not
parsed, so the client costs little. Per transfer it reports the wall time, the server's CPU
time (utime + stime from /proc, all threads) and the bytes and messages received. Rounds are
interleaved (A B A B); each round starts each server fresh, waits for its SOA answer, then
runs --transfers transfers back to back.

Usage: bench/xfr_bench.py [--rounds 3] [--transfers 2] [--servers shardns,knotd] [--markdown FILE]
Needs: knotd (Debian's knot), a release build of shardns (built here).
"""

import argparse
import atexit
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab import ROOT, CLK_TCK, Procs, build_shardns, children, cpu_ticks, encode_name, knot_conf  # noqa: E402

PORTS = {"shardns": 5651, "knotd": 5652}
ZONE = "big.test"
RECORDS = 1_276_513  # bench/gen_zones.py big; the transfer carries the SOA once more


def soa_ready(port):
    """True once the server answers the zone's SOA over UDP."""
    q = struct.pack("!HHHHHH", 0x5A5A, 0, 1, 0, 0, 0) + encode_name(ZONE) + struct.pack("!HH", 6, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(0.2)
        try:
            s.sendto(q, ("127.0.0.1", port))
            r = s.recv(4096)
        except OSError:
            return False
    return len(r) >= 12 and r[3] & 0x0F == 0 and struct.unpack("!H", r[6:8])[0] == 1


def read_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise RuntimeError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def axfr(port, expect, timeout=120):
    """One AXFR; returns (seconds, bytes, messages). Raises unless exactly `expect` records
    arrive in NOERROR messages carrying the query's ID."""
    qid = 0x4AF7
    q = struct.pack("!HHHHHH", qid, 0, 1, 0, 0, 0) + encode_name(ZONE) + struct.pack("!HH", 252, 1)
    start = time.monotonic()
    records = size = messages = 0
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(struct.pack("!H", len(q)) + q)
        while records < expect:
            (n,) = struct.unpack("!H", read_exact(s, 2))
            m = read_exact(s, n)
            rid, flags, _, ancount = struct.unpack("!HHHH", m[:8])
            if rid != qid or flags & 0x8000 == 0 or flags & 0x000F != 0:
                raise RuntimeError(f"message {messages}: id {rid:#x} flags {flags:#06x}")
            records += ancount
            size += n + 2
            messages += 1
    if records != expect:
        raise RuntimeError(f"{records} records, expected {expect}")
    return time.monotonic() - start, size, messages


def server_cmd(name, work, zonefile, bin_):
    port = PORTS[name]
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    if name == "shardns":
        return [bin_, "serve", "--listen", f"127.0.0.1:{port}", "--workers", "1", "--zone",
                f"{ZONE}={zonefile}", "--allow-transfer", "127.0.0.1", "--control", f"{d}/ctl",
                "--log-level", "warn"]
    cmd = knot_conf(d, "127.0.0.1", port, ZONE, zonefile, transfer_from="127.0.0.1")
    return cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--transfers", type=int, default=2)
    ap.add_argument("--servers", default="shardns,knotd")
    ap.add_argument("--markdown")
    args = ap.parse_args()

    bin_ = build_shardns()
    zones = os.environ.get("ZONES", "/tmp/shardns-bench-zones")
    zonefile = f"{zones}/big.test.zone"
    if not os.path.exists(zonefile):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_zones.py"), zones, "big"], check=True)
    work = tempfile.mkdtemp(prefix="xfr-bench-")
    procs = Procs(work)
    atexit.register(procs.stop_all)
    servers = args.servers.split(",")
    runs = {s: [] for s in servers}
    for r in range(1, args.rounds + 1):
        for name in servers:
            p = procs.start(name, ["taskset", "-c", "0"] + server_cmd(name, work, zonefile, bin_))
            procs.wait_ready(name, p, lambda: soa_ready(PORTS[name]), timeout=120)
            for t in range(args.transfers):
                pids = children(p.pid)
                before = cpu_ticks(pids)
                secs, size, msgs = axfr(PORTS[name], RECORDS + 1)
                cpu = (cpu_ticks(pids) - before) / CLK_TCK
                runs[name].append((secs, cpu, size, msgs))
                print(f"round {r} {name} transfer {t + 1}: {secs:.2f} s, server CPU {cpu:.2f} s, "
                      f"{size / 1e6:.1f} MB in {msgs} messages", flush=True)
            procs.stop(p)

    rows = ["| server | wall s (median) | runs (wall s) | server CPU s (median) | runs (CPU s) | "
            "records per server CPU-s | MB | messages |",
            "|---|---|---|---|---|---|---|---|"]
    for name in servers:
        wall = [x[0] for x in runs[name]]
        cpu = [x[1] for x in runs[name]]
        mcpu = statistics.median(cpu)
        rows.append(f"| {name} | {statistics.median(wall):.2f} | {'/'.join(f'{w:.2f}' for w in wall)} | "
                    f"{mcpu:.2f} | {'/'.join(f'{c:.2f}' for c in cpu)} | "
                    f"{(RECORDS + 1) / mcpu / 1e6:.2f} M | {runs[name][0][2] / 1e6:.1f} | {runs[name][0][3]} |")
    text = (f"AXFR of {ZONE} ({RECORDS:,} records), server pinned to core 0, client to core 1, "
            f"{args.rounds} interleaved rounds of {args.transfers} transfers, medians.\n\n" + "\n".join(rows) + "\n")
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    if os.sched_getaffinity(0) != {1}:
        # The client runs on core 1, away from the server.
        os.execvp("taskset", ["taskset", "-c", "1", sys.executable] + sys.argv)
    main()
