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

`--zone big` serves `big.test.` (1,276,513 records, `gen_zones.py DIR big`, made once into
`--zone-dir`) and each update adds a TXT record at an existing name of it. `--memory` (with
`--zone big`, shardns alone) reports the resident size after the updates against a fresh start
on the same data (the zone file with the added records appended), and the journal's size;
`--time-limit` bounds the updates' run (the figures then count those answered).

`--signed` signs the zone (shardns `--sign`, knotd `dnssec-signing: on`, both one ECDSA
P-256 CSK), so each update's changes are signed before the answer (named is left out).

`--baseline BIN` runs a second shardns binary (an older build) as `shardns-base` in the same
interleaved rounds, for a before/after ratio measured under the same noise.

Usage:
  bench/update_bench.py [--rounds 3] [--count 5000] [--clients 16] [--servers shardns,knotd,named]
                        [--baseline BIN]
                        [--zone small|big] [--zone-dir DIR] [--memory] [--time-limit S] [--signed]
                        [--shardns PATH]
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
import subprocess
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
BIG = 425502  # names of big.test. (gen_zones.py)
ZONE_DIR = None  # where big.test.zone is (--zone-dir)
KEY = "upd."
SECRET = base64.b64encode(bytes(range(32))).decode()
PORTS = {"shardns": 5401, "knotd": 5402, "named": 5403, "shardns-base": 5404}
BINARIES = {}  # "shardns-base": another shardns binary (--baseline), measured beside
SIGNED = False  # --signed: the zone signed (ECDSA P-256, one CSK) and each update signed


def zone_text():
    names = "".join(f"h{i} 300 IN A 192.0.2.{i % 250 + 1}\n" for i in range(1000))
    return (f"$ORIGIN {ZONE}\n$TTL 300\n@ SOA ns1 hostmaster 1 3600 600 86400 300\n@ NS ns1\n"
            f"ns1 A 127.0.0.1\n{names}")


def big_file():
    """big.test.'s zone file, made once into ZONE_DIR."""
    zf = os.path.join(ZONE_DIR, "big.test.zone")
    if not os.path.exists(zf):
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run([sys.executable, os.path.join(here, "gen_zones.py"), ZONE_DIR, "big"],
                       check=True)
    return zf


def start(procs, work, name, shardns, extra=None, keep=False):
    """Starts `name` on its zone made anew (with `extra` lines), or on the files it left
    (`keep`)."""
    d = os.path.join(work, name)
    zf = os.path.join(d, f"{ZONE}zone")
    if not keep:
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        if ZONE == "upd.test.":
            with open(zf, "w") as f:
                f.write(zone_text())
        else:
            shutil.copyfile(big_file(), zf)
        if extra:
            with open(zf, "a") as f:
                f.writelines(extra)
    port = PORTS[name]
    if name.startswith("shardns"):
        shardns = BINARIES.get(name, shardns)
        # The default [limits] updates_per_second (100 per key) would refuse most of them.
        conf = os.path.join(d, "shardns.toml")
        with open(conf, "w") as f:
            f.write("[limits]\nupdates_per_second = 0\n")
        cmd = [shardns, "serve", "--config", conf, "--listen", f"127.0.0.1:{port}",
               "--workers", "1", "--zone", f"{ZONE}={zf}",
               "--update-key", f"hmac-sha256:{KEY}:{SECRET}"]
        if SIGNED:
            # Every --zone signed; a CSK of the default algorithm (ECDSA P-256) made at start.
            os.makedirs(os.path.join(d, "keys"), mode=0o700, exist_ok=True)
            cmd += ["--sign", "--key-dir", os.path.join(d, "keys")]
    elif name == "knotd":
        cmd = lab.knot_conf(d, "127.0.0.1", port, ZONE, zf)
        conf = os.path.join(d, "knot.conf")
        text = open(conf).read()
        text = text.replace("    journal-content: none\n", "    journal-content: changes\n")
        text = text.replace("zone:\n", f"key:\n  - id: {KEY}\n    algorithm: hmac-sha256\n"
                            f"    secret: {SECRET}\nacl:\n  - id: upd\n    key: {KEY}\n"
                            "    action: update\nzone:\n", 1)
        text += "    acl: upd\n"
        if SIGNED:
            # knotd signs as we do: one CSK, ECDSA P-256, each update's changes signed.
            text = text.replace("zone:\n", "policy:\n  - id: bench\n    algorithm: "
                                "ecdsap256sha256\n    single-type-signing: on\nzone:\n", 1)
            text += "    dnssec-signing: on\n    dnssec-policy: bench\n"
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
    probe = f"h1.{ZONE}" if ZONE == "upd.test." else f"h000001.{ZONE}"
    procs.wait_ready(name, p, lambda: lab.probe("127.0.0.1", port, probe), timeout=300)
    return p


def owner(tag, i):
    """The name update i adds its TXT at: a new one in the small zone, an existing one of
    big.test. (spread over it)."""
    if ZONE == "upd.test.":
        return f"u{tag}-{i}"
    return "h%06d" % (i * 7919 % BIG)


def messages(count, tag):
    ring = dns.tsigkeyring.from_text({KEY: SECRET})
    out = []
    for i in range(count):
        u = dns.update.UpdateMessage(ZONE, keyring=ring, keyname=KEY,
                                     keyalgorithm=dns.tsig.HMAC_SHA256)
        u.add(owner(tag, i), 60, "TXT", f'"update {tag} {i}"')
        out.append(u.to_wire())
    return out


def added_lines(count, tag):
    """The records `messages(count, tag)` adds, as zone file lines."""
    return [f'{owner(tag, i)}.{ZONE} 60 IN TXT "update {tag} {i}"\n' for i in range(count)]


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def tcp_client(port, msgs, lat, rcodes, deadline):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        for m in msgs:
            if time.perf_counter() > deadline:
                break
            t = time.perf_counter()
            s.sendall(struct.pack("!H", len(m)) + m)
            n = struct.unpack("!H", recv_exact(s, 2))[0]
            a = recv_exact(s, n)
            lat.append(time.perf_counter() - t)
            rcodes[a[3] & 0x0F] = rcodes.get(a[3] & 0x0F, 0) + 1


def run(name, p, msgs, clients, limit=None):
    port = PORTS[name]
    pids = lab.children(p.pid)  # the pid and its descendants
    share = [msgs[i::clients] for i in range(clients)]
    lat, rcodes = [], {}
    deadline = time.perf_counter() + (limit or 1e9)
    threads = [threading.Thread(target=tcp_client, args=(port, s, lat, rcodes, deadline))
               for s in share]
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


def memory(a, shardns):
    """Resident size after COUNT updates to big.test. against a fresh start on the same data."""
    work = tempfile.mkdtemp(prefix="update-bench-")
    procs = lab.Procs(work)
    try:
        p = start(procs, work, "shardns", shardns)
        pids = lab.children(p.pid)  # the pid and its descendants
        loaded = lab.rss_kib(pids)
        res = run("shardns", p, messages(a.count, "m"), a.clients, a.time_limit)
        time.sleep(2)
        after = lab.rss_kib(pids)
        journal = os.path.join(work, "shardns", f"{ZONE}zone.journal")
        jsize = os.path.getsize(journal) if os.path.exists(journal) else 0
        procs.stop(p)
        done = res["noerror"]
        # The same server started again on its own files: the zone file (as it last wrote
        # it) and the journal replayed over it, whose history it then keeps in memory too.
        p = start(procs, work, "shardns", shardns, keep=True)
        time.sleep(2)
        again = lab.rss_kib(lab.children(p.pid))
        procs.stop(p)
        p = start(procs, work, "shardns", shardns, added_lines(done, "m"))
        time.sleep(2)
        fresh = lab.rss_kib(lab.children(p.pid))
        procs.stop(p)
    finally:
        procs.stop_all()
    print(f"\n{done} of {a.count} updates to {ZONE} over {a.clients} TCP connection(s) in "
          f"{res['total'] / res['ups']:.0f} s ({res['ups']:.0f}/s, {res['per_cpu']:.0f} per CPU-s, "
          f"p99 {res['p99']:.1f} ms)\n")
    print("| shardns | RSS MiB |")
    print("|---|---|")
    print(f"| loaded, before the updates | {loaded / 1024:.0f} |")
    print(f"| after the updates | {after / 1024:.0f} |")
    print(f"| fresh start on the same data (the zone file with the records added, no journal) "
          f"| {fresh / 1024:.0f} |")
    print(f"| restart on its own files (zone file and journal) | {again / 1024:.0f} |")
    print(f"| after / fresh | {after / max(fresh, 1):.2f} |")
    print(f"| journal file | {jsize / 1024:.0f} KiB |")
    shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--servers", default="shardns,knotd,named")
    ap.add_argument("--zone", choices=("small", "big"), default="small")
    ap.add_argument("--signed", action="store_true",
                    help="the zone signed (ECDSA P-256 CSK) by shardns and knotd (not named)")
    ap.add_argument("--zone-dir", default=None, help="where big.test.zone is or is made")
    ap.add_argument("--memory", action="store_true")
    ap.add_argument("--time-limit", type=float, default=None)
    ap.add_argument("--shardns", default=None, help="a release binary (else built here)")
    ap.add_argument("--baseline", default=None,
                    help="another shardns binary, measured as server shardns-base")
    a = ap.parse_args()
    if a.baseline:
        BINARIES["shardns-base"] = a.baseline
        if "shardns-base" not in a.servers:
            a.servers = "shardns-base," + a.servers
    global ZONE, ZONE_DIR, SIGNED
    SIGNED = a.signed
    if SIGNED and "named" in a.servers.split(","):
        sys.exit("--signed: named is not set up to sign (--servers shardns,knotd)")
    if a.zone == "big":
        ZONE = "big.test."
        ZONE_DIR = a.zone_dir or tempfile.mkdtemp(prefix="update-bench-zones-")
    shardns = a.shardns or lab.build_shardns()
    if a.memory:
        return memory(a, shardns)
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
                    if r == a.rounds - 1 and a.zone == "small":
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
