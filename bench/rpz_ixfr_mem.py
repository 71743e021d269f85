#!/usr/bin/python3
"""Response policy zones: a transferred policy zone's memory before and after an IXFR.

knotd serves a policy zone of `--entries` QNAME triggers (`blockN.example CNAME .`) from
its journal (`zonefile-load: difference`, `journal-content: changes`); a shardns resolver
(one worker) transfers it (AXFR, the first time), then knotd's zone file is changed
(`--changes` triggers deleted and as many added, serial 2) and reloaded: its NOTIFY makes
the resolver ask IXFR and make the changes to its table (with `--axfr`, knotd keeps no
journal and answers the IXFR with the whole zone: the AXFR path, to compare). Printed: the resolver's RSS
(VmRSS) and peak RSS (VmHWM) before the change and after it has been applied, and
how it came (IXFR or AXFR, from the resolver's log).

  bench/rpz_ixfr_mem.py [--entries 1000000] [--changes 1000] [--axfr]
                        [--bin target/release/shardns]

Needs dnspython (Debian's python3-dnspython, hence /usr/bin/python3). Without `--bin` it
builds the release binary. Loopback only; every process it starts is
stopped by PID when it ends; every wait is bounded.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import dns.message
import dns.query
import dns.rcode

sys.dont_write_bytecode = True  # no bench/__pycache__ in the worktree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab import build_shardns, loopback_root_hints, port_free, proc_kib, terminate  # noqa: E402

KNOT = 5661
RESOLVER = 5662


def policy(path, serial, entries, changes):
    """The policy zone: at serial 2 the first `changes` triggers are gone and as many new."""
    with open(path, "w") as f:
        f.write(f"$TTL 300\n@ SOA localhost. admin.localhost. {serial} 3600 600 86400 300\n"
                "@ NS localhost.\n")
        start = changes if serial > 1 else 0
        for i in range(start, entries):
            f.write(f"block{i}.example CNAME .\n")
        if serial > 1:
            for i in range(changes):
                f.write(f"added{i}.example CNAME .\n")


def rcode(name):
    q = dns.message.make_query(name, "A")
    try:
        return dns.query.udp(q, "127.0.0.1", port=RESOLVER, timeout=1).rcode()
    except Exception:  # noqa: BLE001 (no answer yet)
        return None


def wait_rcode(name, want, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if rcode(name) == want:
            return True
        time.sleep(0.2)
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--changes", type=int, default=1000)
    ap.add_argument("--bin", help="a shardns binary (default: build the release one)")
    ap.add_argument("--axfr", action="store_true",
                    help="knotd keeps no journal: the change comes as a whole zone (AXFR), to compare")
    args = ap.parse_args()
    for port in (KNOT, RESOLVER):
        if not port_free("127.0.0.1", port):
            sys.exit(f"port {port} is in use")
    knotd, knotc = shutil.which("knotd"), shutil.which("knotc")
    if not knotd or not knotc:
        sys.exit("knotd and knotc are needed (apt-get install knot)")
    bin_ = args.bin or build_shardns()
    d = tempfile.mkdtemp(prefix="rpz-ixfr-mem-")
    zone = os.path.join(d, "policy.rpz")
    policy(zone, 1, args.entries, args.changes)
    os.makedirs(os.path.join(d, "db"))
    with open(os.path.join(d, "knot.conf"), "w") as f:
        f.write(f"""server:
    rundir: "{d}"
    listen: 127.0.0.1@{KNOT}
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
control:
    listen: "{d}/knot.sock"
log:
  - target: stderr
    any: info
database:
    storage: "{d}/db"
remote:
  - id: resolver
    address: 127.0.0.1@{RESOLVER}
acl:
  - id: xfr
    address: 127.0.0.0/8
    action: transfer
template:
  - id: default
    storage: "{d}"
    zonefile-sync: -1
    zonefile-load: {"whole" if args.axfr else "difference"}
    journal-content: {"none" if args.axfr else "changes"}
    journal-max-usage: 200M
    dnssec-signing: off
    acl: xfr
    notify: resolver
zone:
  - domain: policy.rpz.
    file: "{zone}"
""")
    with open(os.path.join(d, "resolver.toml"), "w") as f:
        f.write(f'[[resolver.rpz]]\nname = "policy.rpz."\nprimaries = ["127.0.0.1:{KNOT}"]\n'
                "refresh = 3600\nlog = false\n")
    klog = open(os.path.join(d, "knotd.log"), "w")
    rlog_path = os.path.join(d, "resolver.log")
    rlog = open(rlog_path, "w")
    procs = []
    try:
        knot = subprocess.Popen([knotd, "-c", os.path.join(d, "knot.conf")], stdout=klog, stderr=klog)
        procs.append(knot)
        # knotd answers the zone's SOA once it has loaded it.
        end = time.time() + 300
        while time.time() < end:
            try:
                r = dns.query.udp(dns.message.make_query("policy.rpz.", "SOA"), "127.0.0.1",
                                  port=KNOT, timeout=1)
                if r.answer:
                    break
            except Exception:  # noqa: BLE001
                pass
            time.sleep(0.5)
        else:
            sys.exit("knotd did not load the zone in 300 s")
        # Names the policy does not (yet) block go to knotd (REFUSED), never further.
        hints = loopback_root_hints(os.path.join(d, "root.hints"), "127.0.0.1", KNOT)
        res = subprocess.Popen([bin_, "serve", "--listen", f"127.0.0.1:{RESOLVER}", "--recursion",
                                "--no-validation", "--workers", "1", "--log-level", "info",
                                "--allow-loopback-upstreams", "--root-hints", hints,
                                "--forward", f"example.=127.0.0.1:{KNOT}",
                                "--control", os.path.join(d, "res.ctl"),
                                "--config", os.path.join(d, "resolver.toml")],
                               stdout=rlog, stderr=rlog)
        procs.append(res)
        t0 = time.time()
        if not wait_rcode("block999999.example." if args.entries == 1_000_000
                          else f"block{args.entries - 1}.example.", dns.rcode.NXDOMAIN, 300):
            sys.exit(f"the first transfer did not end in 300 s; see {rlog_path}")
        print(f"first transfer (AXFR) applied in {time.time() - t0:.1f} s")
        time.sleep(2)
        before = (proc_kib([res.pid], "status", "VmRSS"), proc_kib([res.pid], "status", "VmHWM"))
        policy(zone, 2, args.entries, args.changes)
        subprocess.run([knotc, "-c", os.path.join(d, "knot.conf"), "zone-reload", "policy.rpz."],
                       check=True, timeout=60, capture_output=True)
        t0 = time.time()
        if not wait_rcode(f"added{args.changes - 1}.example.", dns.rcode.NXDOMAIN, 300):
            sys.exit(f"the change did not arrive in 300 s; see {rlog_path}")
        print(f"change applied {time.time() - t0:.1f} s after the reload")
        time.sleep(2)
        after = (proc_kib([res.pid], "status", "VmRSS"), proc_kib([res.pid], "status", "VmHWM"))
        with open(rlog_path) as f:
            ixfr = [line.strip() for line in f if "updated by IXFR" in line or "by AXFR" in line]
        print(f"entries {args.entries}, changes {args.changes} deleted + {args.changes} added")
        print(f"before: RSS {before[0] / 1024:.1f} MiB, peak {before[1] / 1024:.1f} MiB")
        print(f"after:  RSS {after[0] / 1024:.1f} MiB, peak {after[1] / 1024:.1f} MiB")
        print("how: " + (ixfr[-1] if ixfr else "unknown (see the resolver's log)"))
    finally:
        for p in reversed(procs):
            terminate(p)
        klog.close()
        rlog.close()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
