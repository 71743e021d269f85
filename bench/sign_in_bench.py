#!/usr/bin/env python3
"""Signing transferred zones (issue 29 item 4, "bump in the wire"): a zone of about 100,000
records AXFRed from knotd into a shardns secondary with `dnssec = true`, signed whole and
served; then an IXFR of 1,000 changed records, signed incrementally and served.

The zone: the first NAMES names of big.test (bench/gen_zones.py big; made here if missing)
with its apex: 7 + 3 x NAMES records (33,331 names: 100,000 records). knotd (the primary,
with a journal, `zonefile-load: difference`) serves version 1 unsigned; shardns (release
build, one worker, a fresh key directory: its first key is made at the first signing, the
copy kept in a file) is started with no copy. Reported per round:

- arrival: from the secondary's start until it answers the SOA of serial 1 (start-up,
  AXFR, signing whole, building, serving), and the signing's own time from its log;
- IXFR: version 2 (the first 1,000 names' A records changed, serial 2) written, `knotc -b
  zone-reload` (knotd NOTIFYs the secondary), and the time from its return until the
  secondary answers serial 2 (the IXFR, the change signed by itself, the signed version
  built, swapped in and journaled), with the incremental signing's own time from the log;
  an RRSIG of a changed name is checked to be served;
- the outgoing IXFR from serial 1 of the signed zone (our journal, once its record is
  written): time and records;
- peak RSS (VmHWM) of the secondary at the end.

--knotd: knotd (`dnssec-signing: on` on the secondary zone, a CSK, `signing-threads: 2`) as
the signing secondary too, timed the same way from outside (served signed: an RRSIG on
the SOA; the IXFR: the changed A record answered with its RRSIG), after shardns in each
round.

Usage: bench/sign_in_bench.py [--rounds 3] [--names 33331] [--knotd] [--shardns PATH]
                              [--logs DIR]
Needs: knotd and knotc (Debian's knot), dig, a release build (`cargo build --release -p shardns`).
"""

import argparse
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab import ROOT, terminate  # noqa: E402
from xfr_in_bench import (ZONE, knot_conf, knotc, ixfr, peak_rss_mib, serial_at,  # noqa: E402
                          versions, wait_serial)

PRIMARY, SECONDARY = 5671, 5672


def trimmed(big, names, d):
    """The apex of big.test and its first `names` names, in d."""
    out = os.path.join(d, "medium.zone")
    keep = re.compile(r"^h(\d+) ")
    with open(big) as src, open(out, "w") as dst:
        for line in src:
            m = keep.match(line)
            if m and int(m.group(1)) >= names:
                break
            dst.write(line)
    return out


def logged(log, pattern):
    with open(log) as f:
        m = re.search(pattern, f.read())
    return float(m.group(1)) if m else float("nan")


def dig_short(args):
    return subprocess.run(["dig", "@127.0.0.1", "-p", str(SECONDARY), "+dnssec", "+short",
                           "+time=1", "+tries=1", *args], capture_output=True, text=True).stdout


def wait_until(test, limit=600):
    """Polls `test` until it is true; the time it became so."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if test():
            return time.monotonic()
        time.sleep(0.005)
    raise RuntimeError(f"not done after {limit} s")


def knotd_round(medium, work):
    """The same with knotd as the signing secondary (`dnssec-signing: on`, a CSK as ours,
    `signing-threads: 2` as ours signs on every core): served signed is an RRSIG on the
    SOA, the IXFR served signed the changed A record with its RRSIG."""
    v1, v2 = versions(medium, work)
    zonefile = os.path.join(work, "big.test.zone")
    shutil.copy(v1, zonefile)
    pd, sd = os.path.join(work, "p"), os.path.join(work, "k")
    os.makedirs(pd)
    os.makedirs(f"{sd}/db")
    prim = subprocess.Popen(knot_conf(pd, PRIMARY, zonefile, notify=SECONDARY),
                            stdout=subprocess.DEVNULL, stderr=open(f"{pd}/log", "w"))
    sec = None
    try:
        wait_serial(PRIMARY, 1, 120)
        with open(f"{sd}/knot.conf", "w") as f:
            f.write(f"""server:
    rundir: "{sd}"
    pidfile: "{sd}/knot.pid"
    listen: 127.0.0.1@{SECONDARY}
    udp-workers: 1
    tcp-workers: 1
    background-workers: 2
control:
    listen: "{sd}/knot.sock"
log:
  - target: stderr
    any: info
database:
    storage: "{sd}/db"
remote:
  - id: primary
    address: 127.0.0.1@{PRIMARY}
acl:
  - id: local
    address: 127.0.0.1
    action: [transfer, notify]
policy:
  - id: csk
    algorithm: ecdsap256sha256
    single-type-signing: on
    signing-threads: 2
zone:
  - domain: {ZONE}
    master: primary
    acl: local
    file: "{sd}/copy.zone"
    dnssec-signing: on
    dnssec-policy: csk
""")
        start = time.monotonic()
        sec = subprocess.Popen(["knotd", "-c", f"{sd}/knot.conf"], stdout=subprocess.DEVNULL,
                               stderr=open(f"{sd}/log", "w"))
        arrival = wait_until(lambda: re.search(r"^SOA 13 ", dig_short([ZONE, "SOA"]), re.M)) - start
        shutil.copy(v2, zonefile)
        knotc(pd, "zone-reload", ZONE)
        changed = time.monotonic()

        def changed_signed():
            a = dig_short([f"h000007.{ZONE}", "A"])
            return "10.255.0.8" in a and re.search(r"^A 13 ", a, re.M)
        ixfr_in = wait_until(changed_signed) - changed
        return {"arrival s": arrival, "reload to IXFR signed and served s": ixfr_in,
                "peak RSS MiB": peak_rss_mib(sec.pid)}
    finally:
        for p in (sec, prim):
            if p:
                terminate(p)


def round_once(shardns, medium, work):
    v1, v2 = versions(medium, work)
    zonefile = os.path.join(work, "big.test.zone")
    shutil.copy(v1, zonefile)
    pd = os.path.join(work, "p")
    os.makedirs(pd)
    prim = subprocess.Popen(knot_conf(pd, PRIMARY, zonefile, notify=SECONDARY),
                            stdout=subprocess.DEVNULL, stderr=open(f"{pd}/log", "w"))
    sec = None
    try:
        wait_serial(PRIMARY, 1, 120)
        keys = os.path.join(work, "keys")
        os.makedirs(keys)
        conf = os.path.join(work, "s.toml")
        with open(conf, "w") as f:
            f.write(f"""[server]
listen = ["127.0.0.1:{SECONDARY}"]
allow_transfer = ["127.0.0.1"]
key_directory = "{keys}"
control_socket = "{work}/ctl"
[[zone]]
name = "{ZONE}."
primary = ["127.0.0.1:{PRIMARY}"]
file = "{work}/copy.zone"
dnssec = true
""")
        slog = os.path.join(work, "s.log")
        start = time.monotonic()
        sec = subprocess.Popen([shardns, "serve", "--workers", "1", "--config", conf],
                               stdout=subprocess.DEVNULL, stderr=open(slog, "w"))
        arrival = wait_serial(SECONDARY, 1, 600) - start
        shutil.copy(v2, zonefile)
        t = time.monotonic()
        knotc(pd, "zone-reload", ZONE)
        changed = time.monotonic()
        ixfr_in = wait_serial(SECONDARY, 2, 600) - changed
        sig = subprocess.run(["dig", "@127.0.0.1", "-p", str(SECONDARY), "+dnssec", "+short",
                              f"h000007.{ZONE}", "A"], capture_output=True, text=True).stdout
        assert "10.255.0.8" in sig and re.search(r"^A 13 ", sig, re.M), sig
        # The journal is written just after the swap (NOTIFY waits for it): an IXFR asked
        # before it gets the zone in AXFR form.
        end = time.monotonic() + 30
        while math.isnan(logged(slog, r"journal: serial 1 -> 2: .* in ([\d.]+) s")):
            assert time.monotonic() < end, "no journal record"
            time.sleep(0.01)
        out_s, out_records = ixfr(SECONDARY, 1)
        return {
            "arrival s": arrival,
            "signing whole s (log)": logged(slog, r"signed whole as serial 1 in ([\d.]+) s"),
            "AXFR s (log)": logged(slog, r"by AXFR from \S+ \(announced 1\): .* in ([\d.]+) s"),
            "reload to IXFR signed and served s": ixfr_in,
            "knotc zone-reload s": changed - t,
            "IXFR in s (log)": logged(slog, r"by IXFR from \S+ \(announced 2\): .* in ([\d.]+) s"),
            "incremental signing s (log)": logged(slog, r"signed incrementally as serial 2 in ([\d.]+) s"),
            "journal s (log)": logged(slog, r"journal: serial 1 -> 2: .* in ([\d.]+) s"),
            "IXFR out s": out_s,
            "IXFR out records": out_records,
            "peak RSS MiB": peak_rss_mib(sec.pid),
        }
    finally:
        for p in (sec, prim):
            if p:
                terminate(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--names", type=int, default=33331)
    ap.add_argument("--zones", default="/tmp/shardns-bench-zones")
    ap.add_argument("--shardns", default=os.path.join(ROOT, "target", "release", "shardns"))
    ap.add_argument("--knotd", action="store_true", help="knotd as the signing secondary too")
    ap.add_argument("--logs", help="a directory to keep each round's shardns log in")
    a = ap.parse_args()
    big = os.path.join(a.zones, "big.test.zone")
    if not os.path.exists(big):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_zones.py"), a.zones, "big"],
                       check=True)
    results = {}
    for r in range(a.rounds):
        work = tempfile.mkdtemp(prefix="shardns-sign-in-")
        try:
            medium = trimmed(big, a.names, work)
            with open(medium) as f:
                records = sum(1 for line in f if " IN " in line)
            for who in ["shardns"] + (["knotd"] if a.knotd else []):
                d = os.path.join(work, who)
                os.makedirs(d)
                res = round_once(a.shardns, medium, d) if who == "shardns" else knotd_round(medium, d)
                if who == "shardns" and a.logs:
                    os.makedirs(a.logs, exist_ok=True)
                    shutil.copy(os.path.join(d, "s.log"), os.path.join(a.logs, f"round{r + 1}.log"))
                print(f"round {r + 1}, {who} ({records} records): "
                      + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                                  for k, v in res.items()), flush=True)
                results.setdefault(who, []).append(res)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    for who, rs in results.items():
        print(f"medians, {who}:")
        for k in rs[0]:
            print(f"  {k}: {statistics.median(r[k] for r in rs):.3f}")


if __name__ == "__main__":
    main()
