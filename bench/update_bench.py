#!/usr/bin/env python3
"""Dynamic updates (RFC 2136) side by side: shardns against Knot DNS and BIND 9.18, same zone,
same key, same load.

Each server runs pinned to core 0 (shardns with one worker; knotd with one UDP, one TCP and one
background worker; named with -n 1), the clients pinned to core 1. Every update adds one TXT
record at a name of its own, TSIG-signed (hmac-sha256); the messages are made and signed before
the clock starts, so the clients only send and read. `--clients` TCP connections (16 by
default, and 1 with `--clients 1`) each send one update and wait for its answer, COUNT updates
in all. Every server keeps its changes durably: shardns in its journal beside the zone file,
knotd in its journal (`journal-content: changes`), named in its `.jnl`.

Reported per server (median of the rounds, rounds interleaved A B C A B C): updates per second,
updates per server CPU-second (utime + stime of all its threads, from /proc), the answer's
latency (median and p99), and in a last step how long after an update's NOERROR the new record
is answered over UDP (each of 200 updates followed at once by a UDP query for its record).

Usage:
  bench/update_bench.py [--rounds 3] [--count 5000] [--clients 16] [--servers shardns,knotd,named]
Needs: knotd, named (bind9), python3-dnspython (Debian's /usr/bin/python3), a release build of
shardns (built here).
"""

import argparse
import base64
import os
import shutil
import socket
import statistics
import struct
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lab  # noqa: E402

try:
    import dns.message
    import dns.name
    import dns.query
    import dns.rcode
    import dns.tsig
    import dns.tsigkeyring
    import dns.update
except ImportError:
    sys.exit("update_bench.py needs dnspython: apt-get install python3-dnspython (and run it "
             "with /usr/bin/python3)")

ZONE = "upd.test."
KEY = "upd."
SECRET = base64.b64encode(bytes(range(32))).decode()
PORTS = {"shardns": 5401, "knotd": 5402, "named": 5403}


def zone_text():
    names = "".join(f"h{i} 300 IN A 192.0.2.{i % 250 + 1}\n" for i in range(1000))
    return (f"$ORIGIN {ZONE}\n$TTL 300\n@ SOA ns1 hostmaster 1 3600 600 86400 300\n@ NS ns1\n"
            f"ns1 A 127.0.0.1\n{names}")


def start(procs, work, name, shardns):
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    zf = os.path.join(d, "upd.test.zone")
    with open(zf, "w") as f:
        f.write(zone_text())
    port = PORTS[name]
    if name == "shardns":
        cmd = [shardns, "serve", "--listen", f"127.0.0.1:{port}", "--workers", "1",
               "--zone", f"{ZONE}={zf}", "--update-key", f"hmac-sha256:{KEY}:{SECRET}"]
    elif name == "knotd":
        cmd = lab.knot_conf(d, "127.0.0.1", port, ZONE, zf)
        conf = os.path.join(d, "knot.conf")
        text = open(conf).read()
        text = text.replace("    journal-content: none\n", "    journal-content: changes\n")
        text = text.replace("zone:\n", f"key:\n  - id: {KEY}\n    algorithm: hmac-sha256\n"
                            f"    secret: {SECRET}\nacl:\n  - id: upd\n    key: {KEY}\n"
                            "    action: update\nzone:\n", 1)
        text += "    acl: upd\n"
        with open(conf, "w") as f:
            f.write(text)
    else:
        conf = os.path.join(d, "named.conf")
        with open(conf, "w") as f:
            f.write(f"""key "{KEY}" {{ algorithm hmac-sha256; secret "{SECRET}"; }};
controls {{ }};
options {{
    directory "{d}";
    pid-file none;
    listen-on port {port} {{ 127.0.0.1; }};
    listen-on-v6 {{ none; }};
    recursion no;
}};
zone "{ZONE}" {{ type primary; file "{zf}"; update-policy {{ grant {KEY} zonesub ANY; }}; }};
""")
        cmd = ["named", "-g", "-n", "1", "-c", conf]
    p = procs.start(name, ["taskset", "-c", "0"] + cmd)
    procs.wait_ready(name, p, lambda: lab.probe("127.0.0.1", port, f"h1.{ZONE}"))
    return p


def messages(count, tag):
    ring = dns.tsigkeyring.from_text({KEY: SECRET})
    out = []
    for i in range(count):
        u = dns.update.UpdateMessage(ZONE, keyring=ring, keyname=KEY,
                                     keyalgorithm=dns.tsig.HMAC_SHA256)
        u.add(f"u{tag}-{i}", 60, "TXT", f'"update {i}"')
        out.append(u.to_wire())
    return out


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def tcp_client(port, msgs, lat, rcodes):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        for m in msgs:
            t = time.perf_counter()
            s.sendall(struct.pack("!H", len(m)) + m)
            n = struct.unpack("!H", recv_exact(s, 2))[0]
            a = recv_exact(s, n)
            lat.append(time.perf_counter() - t)
            rcodes[a[3] & 0x0F] = rcodes.get(a[3] & 0x0F, 0) + 1


def run(name, p, msgs, clients):
    port = PORTS[name]
    pids = [p.pid] + lab.children(p.pid)
    share = [msgs[i::clients] for i in range(clients)]
    lat, rcodes = [], {}
    threads = [threading.Thread(target=tcp_client, args=(port, s, lat, rcodes)) for s in share]
    cpu0, t0 = lab.cpu_ticks(pids), time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds, cpu = time.perf_counter() - t0, (lab.cpu_ticks(pids) - cpu0) / lab.CLK_TCK
    lat.sort()
    return {
        "ups": len(lat) / seconds,
        "per_cpu": len(lat) / max(cpu, 1e-9),
        "p50": lat[len(lat) // 2] * 1000,
        "p99": lat[int(len(lat) * 0.99)] * 1000,
        "noerror": rcodes.get(0, 0),
        "total": len(lat),
    }


def visible_after(name, count=200):
    """Milliseconds from an update's answer to its record answered over UDP (median, p99)."""
    port = PORTS[name]
    ring = dns.tsigkeyring.from_text({KEY: SECRET})
    delays = []
    for i in range(count):
        owner = f"v{i}.{ZONE}"
        u = dns.update.UpdateMessage(ZONE, keyring=ring, keyname=KEY,
                                     keyalgorithm=dns.tsig.HMAC_SHA256)
        u.add(owner, 60, "TXT", '"seen"')
        dns.query.tcp(u, "127.0.0.1", port=port, timeout=5)
        t = time.perf_counter()
        while True:
            q = dns.message.make_query(owner, "TXT")
            r = dns.query.udp(q, "127.0.0.1", port=port, timeout=2)
            if r.answer:
                break
            if time.perf_counter() - t > 5:
                break
        delays.append((time.perf_counter() - t) * 1000)
    delays.sort()
    return statistics.median(delays), delays[int(len(delays) * 0.99)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--servers", default="shardns,knotd,named")
    a = ap.parse_args()
    shardns = lab.build_shardns()
    servers = a.servers.split(",")
    work = tempfile.mkdtemp(prefix="update-bench-")
    procs = lab.Procs(work)
    results = {s: [] for s in servers}
    seen = {}
    try:
        for r in range(a.rounds):
            for name in servers:
                msgs = messages(a.count, f"{r}")
                p = start(procs, work, name, shardns)
                try:
                    res = run(name, p, msgs, a.clients)
                    if r == a.rounds - 1:
                        seen[name] = visible_after(name)
                finally:
                    procs.stop(p)
                results[name].append(res)
                print(f"round {r + 1} {name}: {res['ups']:.0f} updates/s, "
                      f"{res['per_cpu']:.0f} per CPU-s, p50 {res['p50']:.2f} ms, "
                      f"p99 {res['p99']:.2f} ms, {res['noerror']}/{res['total']} NOERROR",
                      file=sys.stderr)
    finally:
        procs.stop_all()
    print(f"\n{a.count} updates (one TXT each, TSIG) over {a.clients} TCP connection(s), "
          f"median of {a.rounds} rounds\n")
    print("| server | updates/s | updates per server CPU-s | answer p50 ms | answer p99 ms "
          "| answer to UDP-visible p50 / p99 ms |")
    print("|---|---|---|---|---|---|")
    for name in servers:
        rs = results[name]
        med = {k: statistics.median(x[k] for x in rs) for k in ("ups", "per_cpu", "p50", "p99")}
        v = seen.get(name, (float("nan"), float("nan")))
        print(f"| {name} | {med['ups']:.0f} | {med['per_cpu']:.0f} | {med['p50']:.2f} "
              f"| {med['p99']:.2f} | {v[0]:.2f} / {v[1]:.2f} |")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
