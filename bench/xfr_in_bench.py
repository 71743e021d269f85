#!/usr/bin/env python3
"""Zone transfers in and IXFR (issue 14): the 1,276,513-record zone into shardns as a
secondary against knotd as the same secondary, an IXFR of 1,000 changes into it, and the
outgoing IXFR of those changes from shardns's journal against knotd's.

Transfers in: one primary, knotd (pinned to core 1), serves big.test (bench/gen_zones.py big)
with a journal (`zonefile-load: difference`), so that a reload of a version with 1,000
changed records is sent as an IXFR. Per round, each secondary in turn (pinned to core 0; one
worker of each kind; the zone kept in memory only: shardns `--secondary`, knotd
`zonefile-sync: -1`, `journal-content: none`) is started with no copy; reported: the time
from its start until it answers the SOA of serial 1 (the AXFR, start-up included) and its
peak RSS (VmHWM) then; then version 2 is written, `knotc -b zone-reload` run on the
primary (which NOTIFYs the secondary) and the time from its return until the secondary
answers serial 2 (the IXFR applied and served), and the peak RSS after.

Outgoing IXFR: each primary in turn (shardns with `allow_transfer`, which journals; knotd
with `zonefile-load: difference`) loads version 1, reloads version 2 (the reload time is
reported: for shardns it includes the diff), and a client (this script, core 1) asks IXFR
from serial 1 and reads the answer to its end: the time and the records.

Rounds are interleaved (shardns, knotd, shardns, knotd, ...); medians are printed.

--answering: the answering rate of a shardns secondary while the big zone AXFRs in, against
the same without a transfer. One shardns (one worker, pinned to core 0) serves bench.test
from its file and big.test as a secondary of knotd (core 1); its transfer thread is moved to
core 1, beside the load generator, as a transfer would run on a core of its own. dnsperf
(core 1) sends the A queries of bench.test (another zone) or of big.test (the zone being
transferred) at a fixed --rate (below what either window can answer on this machine, where
the load generator shares core 1 with the primary and the transfer thread) for --duration
seconds; during the "transfer" windows `shardns zone
retransfer` is asked again each time the last AXFR is served (each one a whole AXFR, build
and swap). Reported per window: answers per second, queries lost, answers per CPU-second of the worker
thread (from /proc/PID/task/TID/stat) and of the whole process, and the AXFRs completed.
Windows interleave (quiet, transfer, quiet, ...); medians over --rounds.

Usage: bench/xfr_in_bench.py [--rounds 3] [--zone /tmp/shardns-bench-zones/big.test.zone]
       bench/xfr_in_bench.py --answering [--rounds 3] [--duration 8]
Needs: knotd and knotc (Debian's knot), a release build of shardns (built here).
"""

import argparse
import os
import re
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab import build_shardns, cpu_ticks, encode_name, terminate  # noqa: E402

ZONE = "big.test"
PRIMARY, SECONDARY, OURS_PRIMARY = 5661, 5662, 5663
CHANGES = 1000


def serial_at(port):
    """The SOA serial the server on 127.0.0.1:port answers for the zone, or None."""
    q = struct.pack("!HHHHHH", 0x5A5B, 0, 1, 0, 0, 0) + encode_name(ZONE) + struct.pack("!HH", 6, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(0.2)
        try:
            s.sendto(q, ("127.0.0.1", port))
            r = s.recv(4096)
        except OSError:
            return None
    if len(r) < 12 or r[3] & 0x0F != 0 or struct.unpack("!H", r[6:8])[0] < 1:
        return None
    # The SOA's rdata is the last 20 octets' first 4: serial, refresh, retry, expire, minimum.
    return struct.unpack("!I", r[-20:-16])[0]


def wait_serial(port, serial, limit=600):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if serial_at(port) == serial:
            return time.monotonic()
        time.sleep(0.005)
    raise RuntimeError(f"no serial {serial} on port {port} after {limit} s")


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def versions(src, d):
    """Writes version 1 (the zone as generated, serial 1) and version 2 (serial 2, the first
    CHANGES A records of h* names changed) into d; returns both paths."""
    with open(src) as f:
        text = f.read()
    soa = re.compile(r"^(@ IN SOA \S+ \S+ )\d+", re.M)
    v1 = soa.sub(r"\g<1>1", text, count=1)
    v2 = soa.sub(r"\g<1>2", text, count=1)
    n = 0

    def change(m):
        nonlocal n
        if n >= CHANGES:
            return m.group(0)
        n += 1
        return f"{m.group(1)} IN A 10.255.{n >> 8}.{n & 255}"

    v2 = re.sub(r"^(h\d+) IN A \S+", change, v2, flags=re.M)
    paths = []
    for name, body in (("v1", v1), ("v2", v2)):
        p = os.path.join(d, f"big.test.{name}.zone")
        with open(p, "w") as f:
            f.write(body)
        paths.append(p)
    return paths


def knot_conf(d, port, zonefile, primary=None, notify=None):
    """knotd on 127.0.0.1@port: a primary of zonefile with a journal (NOTIFY to `notify`),
    or a secondary of 127.0.0.1@primary keeping the zone in memory."""
    os.makedirs(f"{d}/db", exist_ok=True)
    remotes, zone = "", f"  - domain: {ZONE}\n    file: \"{zonefile}\"\n"
    if primary:
        remotes = f"remote:\n  - id: primary\n    address: 127.0.0.1@{primary}\n"
        zone += "    master: primary\n    acl: local\n    zonefile-sync: -1\n    journal-content: none\n"
    else:
        zone += "    zonefile-sync: -1\n    zonefile-load: difference\n    journal-content: changes\n    acl: local\n"
        if notify:
            remotes = f"remote:\n  - id: secondary\n    address: 127.0.0.1@{notify}\n"
            zone += "    notify: secondary\n"
    conf = f"""server:
    rundir: "{d}"
    pidfile: "{d}/knot.pid"
    listen: 127.0.0.1@{port}
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
control:
    listen: "{d}/knot.sock"
log:
  - target: stderr
    any: {"info" if primary else "warning"}
database:
    storage: "{d}/db"
{remotes}acl:
  - id: local
    address: 127.0.0.1
    action: [transfer, notify]
zone:
{zone}"""
    with open(f"{d}/knot.conf", "w") as f:
        f.write(conf)
    return ["knotd", "-c", f"{d}/knot.conf"]


def knotc(d, *args):
    subprocess.run(["knotc", "-c", f"{d}/knot.conf", "-s", f"{d}/knot.sock", "-b", "-t", "600", *args],
                   check=True, capture_output=True, timeout=900)


def spawn(cmd, core, log):
    return subprocess.Popen(["taskset", "-c", str(core), *cmd], stdout=subprocess.DEVNULL,
                            stderr=open(log, "w"))


def ixfr(port, serial, timeout=300):
    """Asks IXFR from `serial` over TCP; reads to the closing SOA. Returns (seconds, records)."""
    soa = (encode_name("ns1." + ZONE) + encode_name("hostmaster." + ZONE)
           + struct.pack("!IIIII", serial, 0, 0, 0, 0))
    q = (struct.pack("!HHHHHH", 0x1995, 0, 1, 0, 1, 0) + encode_name(ZONE) + struct.pack("!HH", 251, 1)
         + encode_name(ZONE) + struct.pack("!HHIH", 6, 1, 0, len(soa)) + soa)
    start = time.monotonic()
    # The SOAs of serial 1 and 2 (serial, then REFRESH 3600), as they appear in rdata.
    soa1, soa2 = struct.pack("!II", 1, 3600), struct.pack("!II", 2, 3600)
    records, n1, n2 = 0, 0, 0
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(struct.pack("!H", len(q)) + q)
        buf = b""
        while True:
            while len(buf) < 2:
                chunk = s.recv(65536)
                if not chunk:
                    raise RuntimeError("closed before the end")
                buf += chunk
            n = struct.unpack("!H", buf[:2])[0]
            while len(buf) < 2 + n:
                chunk = s.recv(65536)
                if not chunk:
                    raise RuntimeError("closed mid-message")
                buf += chunk
            msg, buf = buf[2:2 + n], buf[2 + n:]
            if msg[3] & 0x0F:
                raise RuntimeError(f"RCODE {msg[3] & 0x0F}")
            records += struct.unpack("!H", msg[6:8])[0]
            n1 += msg.count(soa1)
            n2 += msg.count(soa2)
            # The end: a message whose last record is the SOA of serial 2, the third one in
            # incremental form (an SOA of serial 1 came), the second in AXFR form.
            if msg[-20:-12] == soa2 and (n2 >= 3 or (n2 >= 2 and n1 == 0)):
                break
    return time.monotonic() - start, records


def thread_ticks(pid, prefix):
    """utime + stime (clock ticks) of the process's threads whose name starts with prefix."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if not f.read().startswith(prefix):
                    continue
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total


def thread_ids(pid, prefix):
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().startswith(prefix):
                    out.append(tid)
        except OSError:
            pass
    return out


def axfrs_done(log):
    with open(log) as f:
        return sum(1 for line in f if " by AXFR from " in line)


def answering(a, shardns):
    """The answering rate with and without a transfer in (see --answering)."""
    import threading
    zdir = os.path.dirname(a.zone)
    small = os.path.join(zdir, "bench.test.zone")
    workloads = {"other zone": os.path.join(zdir, "queries-A.txt"),
                 "same zone": os.path.join(zdir, "queries-big-A.txt")}
    for f in [small] + list(workloads.values()):
        if not os.path.exists(f):
            sys.exit(f"{f} is missing: python3 bench/gen_zones.py {zdir} big (and the small set)")
    work = tempfile.mkdtemp(prefix="shardns-xfr-answering-")
    clk = os.sysconf("SC_CLK_TCK")
    prim = sec = None
    try:
        v1, _ = versions(a.zone, work)
        zonefile = os.path.join(work, "big.test.zone")
        shutil.copy(v1, zonefile)
        pd = os.path.join(work, "p")
        os.makedirs(pd)
        prim = spawn(knot_conf(pd, PRIMARY, zonefile), 1, f"{pd}/log")
        wait_serial(PRIMARY, 1)
        sd = os.path.join(work, "s")
        os.makedirs(sd)
        log = f"{sd}/log"
        sec = spawn([shardns, "serve", "--workers", "1", "--listen", f"127.0.0.1:{SECONDARY}",
                     "--control", f"{sd}/ctl", "--zone", f"bench.test={small}",
                     "--secondary", f"{ZONE}=127.0.0.1:{PRIMARY}"], 0, log)
        wait_serial(SECONDARY, 1)
        for tid in thread_ids(sec.pid, "shardns-seconda"):
            subprocess.run(["taskset", "-p", "-c", "1", tid], check=True, capture_output=True)
        res = {}
        for rnd in range(a.rounds):
            for wl, qfile in workloads.items():
                for mode in ("quiet", "transfer"):
                    stop = threading.Event()

                    def transfers():
                        # Each AXFR asked for is waited for, the last one too: none runs into
                        # the next window.
                        while not stop.is_set():
                            before = axfrs_done(log)
                            subprocess.run([shardns, "zone", "retransfer", "--control", f"{sd}/ctl", ZONE],
                                           check=True, capture_output=True, timeout=60)
                            end = time.monotonic() + 60
                            while axfrs_done(log) == before and time.monotonic() < end:
                                time.sleep(0.01)

                    lg = subprocess.Popen(["taskset", "-c", "1", "dnsperf", "-s", "127.0.0.1", "-p", str(SECONDARY),
                                           "-d", qfile, "-l", str(a.duration), "-t", "2", "-c", "4", "-q", "200",
                                           "-T", "2"] + (["-Q", str(a.rate)] if a.rate else []), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                    th = threading.Thread(target=transfers) if mode == "transfer" else None
                    time.sleep(0.5)
                    if th:
                        th.start()
                        time.sleep(0.3)
                    n0 = axfrs_done(log)
                    t0, w0, p0 = time.monotonic(), thread_ticks(sec.pid, "shardns-worker"), cpu_ticks([sec.pid])
                    time.sleep(a.duration - 1.5)
                    t1, w1, p1 = time.monotonic(), thread_ticks(sec.pid, "shardns-worker"), cpu_ticks([sec.pid])
                    n1 = axfrs_done(log)
                    out, _ = lg.communicate(timeout=a.duration + 30)
                    stop.set()
                    if th:
                        th.join(timeout=120)
                    m = re.search(r"Queries per second:\s+([\d.]+)", out)
                    qps = float(m.group(1)) if m else 0.0
                    win = t1 - t0
                    lost = re.search(r"Queries lost:\s+(\d+)", out)
                    r = dict(qps=qps, lost=int(lost.group(1)) if lost else -1, kq_worker=qps / ((w1 - w0) / clk / win) / 1000 if w1 > w0 else 0.0,
                             kq_process=qps / ((p1 - p0) / clk / win) / 1000 if p1 > p0 else 0.0,
                             axfrs=n1 - n0)
                    print(f"round {rnd + 1} {wl}, {mode}: " + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}"
                                                                    for k, v in r.items()), flush=True)
                    res.setdefault((wl, mode), []).append(r)
        print("\nmedians:")
        for (wl, mode), rs in res.items():
            med = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
            print(f"{wl}, {mode}: {med['qps']:.0f} q/s, {med['lost']:.0f} lost, {med['kq_worker']:.1f} k answers per worker CPU-s, "
                  f"{med['kq_process']:.1f} k per process CPU-s, {med['axfrs']:.0f} AXFRs in the window "
                  f"(runs: " + " / ".join(f"{r['kq_worker']:.1f}" for r in rs) + ")")
    finally:
        if sec:
            terminate(sec)
        if prim:
            terminate(prim)
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--zone", default="/tmp/shardns-bench-zones/big.test.zone")
    ap.add_argument("--answering", action="store_true", help="the answering rate during a transfer in")
    ap.add_argument("--duration", type=int, default=8, help="seconds per window (--answering)")
    ap.add_argument("--rate", type=int, default=25000,
                    help="queries per second dnsperf sends (--answering; 0: as many as it can)")
    a = ap.parse_args()
    shardns = build_shardns()
    if a.answering:
        answering(a, shardns)
        return
    work = tempfile.mkdtemp(prefix="shardns-xfr-in-")
    try:
        v1, v2 = versions(a.zone, work)
        zonefile = os.path.join(work, "big.test.zone")
        res = {}
        for rnd in range(a.rounds):
            for name in ("shardns", "knotd"):
                # --- transfers in ---
                shutil.copy(v1, zonefile)
                pd = os.path.join(work, f"p{rnd}{name}")
                os.makedirs(pd)
                prim = spawn(knot_conf(pd, PRIMARY, zonefile, notify=SECONDARY), 1, f"{pd}/log")
                sec = None
                try:
                    wait_serial(PRIMARY, 1)
                    sd = os.path.join(work, f"s{rnd}{name}")
                    os.makedirs(sd)
                    if name == "shardns":
                        cmd = [shardns, "serve", "--workers", "1", "--listen", f"127.0.0.1:{SECONDARY}",
                               "--control", f"{sd}/ctl", "--secondary", f"{ZONE}=127.0.0.1:{PRIMARY}"]
                    else:
                        cmd = knot_conf(sd, SECONDARY, f"{sd}/copy.zone", primary=PRIMARY)
                    t0 = time.monotonic()
                    sec = spawn(cmd, 0, f"{sd}/log")
                    axfr_s = wait_serial(SECONDARY, 1) - t0
                    rss_axfr = peak_rss_mib(sec.pid)
                    shutil.copy(v2, zonefile)
                    knotc(pd, "zone-reload", ZONE)
                    t1 = time.monotonic()
                    ixfr_s = wait_serial(SECONDARY, 2) - t1
                    rss_ixfr = peak_rss_mib(sec.pid)
                    # Each one's own account of the transfers (time, messages, octets).
                    for line in open(f"{sd}/log"):
                        if " by AXFR " in line or " by IXFR " in line or "incoming" in line and "finished" in line:
                            print(f"  {name}:", line.split("secondary: ", 1)[-1].strip()[:200])
                finally:
                    if sec:
                        terminate(sec)
                    terminate(prim)
                # --- outgoing IXFR ---
                shutil.copy(v1, zonefile)
                if os.path.exists(zonefile + ".journal"):
                    os.remove(zonefile + ".journal")
                od = os.path.join(work, f"o{rnd}{name}")
                os.makedirs(od)
                if name == "shardns":
                    cmd = [shardns, "serve", "--workers", "1", "--listen", f"127.0.0.1:{OURS_PRIMARY}",
                           "--control", f"{od}/ctl", "--zone", f"{ZONE}={zonefile}",
                           "--allow-transfer", "127.0.0.1"]
                else:
                    cmd = knot_conf(od, OURS_PRIMARY, zonefile)
                prim = spawn(cmd, 0, f"{od}/log")
                try:
                    wait_serial(OURS_PRIMARY, 1)
                    shutil.copy(v2, zonefile)
                    t2 = time.monotonic()
                    if name == "shardns":
                        subprocess.run([shardns, "reload", "--control", f"{od}/ctl"], check=True,
                                       capture_output=True, timeout=600)
                        # The diff is recorded after the swap: wait for the journal line.
                        end = time.monotonic() + 600
                        while "journal: serial 1 -> 2" not in open(f"{od}/log").read():
                            if time.monotonic() > end:
                                raise RuntimeError("no journal line")
                            time.sleep(0.01)
                    else:
                        knotc(od, "zone-reload", ZONE)
                    reload_s = time.monotonic() - t2
                    wait_serial(OURS_PRIMARY, 2)
                    out_s, out_records = ixfr(OURS_PRIMARY, 1)
                finally:
                    terminate(prim)
                r = dict(axfr_s=axfr_s, rss_axfr=rss_axfr, ixfr_s=ixfr_s, rss_ixfr=rss_ixfr,
                         reload_s=reload_s, out_s=out_s, out_records=out_records)
                print(f"round {rnd + 1} {name}: " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                                                        for k, v in r.items()), flush=True)
                res.setdefault(name, []).append(r)
        print("\nmedians:")
        for name, rs in res.items():
            med = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
            print(f"{name}: AXFR in {med['axfr_s']:.2f} s, peak RSS {med['rss_axfr']:.0f} MiB; "
                  f"IXFR of {CHANGES} changes in {med['ixfr_s']:.3f} s, peak RSS after {med['rss_ixfr']:.0f} MiB; "
                  f"as primary: reload with the diff {med['reload_s']:.2f} s, outgoing IXFR {med['out_s']:.3f} s "
                  f"({med['out_records']:.0f} records)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
