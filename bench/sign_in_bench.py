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
- the outgoing IXFR from serial 1 of the signed zone (our journal): time and records;
- peak RSS (VmHWM) of the secondary at the end.

Usage: bench/sign_in_bench.py [--rounds 3] [--names 33331] [--shardns target/release/shardns]
Needs: knotd and knotc (Debian's knot), dig, a release build (`cargo build --release -p shardns`).
"""

import argparse
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
    a = ap.parse_args()
    big = os.path.join(a.zones, "big.test.zone")
    if not os.path.exists(big):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_zones.py"), a.zones, "big"],
                       check=True)
    results = []
    for r in range(a.rounds):
        work = tempfile.mkdtemp(prefix="shardns-sign-in-")
        try:
            medium = trimmed(big, a.names, work)
            with open(medium) as f:
                records = sum(1 for line in f if " IN " in line)
            res = round_once(a.shardns, medium, work)
            print(f"round {r + 1} ({records} records): "
                  + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                              for k, v in res.items()), flush=True)
            results.append(res)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print("medians:")
    for k in results[0]:
        print(f"  {k}: {statistics.median(r[k] for r in results):.3f}")


if __name__ == "__main__":
    main()
