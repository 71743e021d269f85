#!/usr/bin/env python3
"""Many zones (issue 19): shardns, NSD and knotd serving N small zones, in the same run.

Generates N zones `z000000.test.` .. of 12 records each (SOA, 2 NS, MX, apex A and TXT, A for
ns1, ns2, mail and www, AAAA for mail, CNAME ftp -> www; ~390 bytes a file) into DIR/zones,
and per size the configs of the three servers, on loopback ports of their own:

  shardns  DIR/N/shardns.toml: one `[[zone]]` table per zone, or with --shardns-form list a
           `server.zone_list` file of `NAME FILE` lines (the form for very many zones),
           `server.control_socket` set, default workers (one per core).
  nsd      DIR/N/nsd/nsd.conf: one `pattern:` (zonefile "%s.zone") and the zones in a
           `zonelistfile` ("add NAME PATTERN" lines, what `nsd-control addzone` writes), which
           is how NSD is run with very many zones (--nsd-form conf writes one `zone:` block per
           zone instead); remote control on a Unix socket (no keys needed); default server-count
           (1 serving process, plus NSD's main and xfrd processes); response rate limiting
           off (NSD's default 200/s would drop the 1 ms polls that time a reload).
  knotd    DIR/N/knot/knot.conf: one template (storage DIR/zones, file "%s.zone", no journal,
           zone file loaded whole, never written back) and one `zone:` entry per zone;
           default udp/tcp/background workers (one per core); knotc through its socket.

Then, for each round and each server in turn (interleaved: A B C A B C), with every server
started unpinned with its default worker/thread counts on both cores:

 1. start -> the last zone answers: the time from starting the server until an SOA query for
    the last zone of the config is answered NOERROR with AA (a raw UDP query every ~5 ms,
    bounded by --timeout); and the server's CPU seconds by then (utime+stime of every thread
    of its processes, plus its reaped children's, from /proc). A start that times out is
    reported as "timeout after X s" and not tried again at that size.
 2. peak RSS: VmHWM summed over the server's processes once start-up work has settled (its CPU
    idle for 0.5 s), and again after the reloads; also the summed Pss (smaps_rollup) at the
    end, since NSD's forked processes share pages that a sum of RSS counts twice.
 3. reloads, each once the server's CPU is idle: (a) nothing changed: the control command
    (shardns reload / knotc reload / nsd-control reload), then the time until the server's
    CPU is idle again (last clock tick seen, 10 ms resolution) and the CPU it used;
    (b) one zone changed (the middle zone's serial and its www A record, written in place):
    the same command, then the time until the new address is served (a UDP query every
    ~1 ms), and the CPU used; with --shardns-reload sighup, shardns gets a SIGHUP instead of
    `shardns reload` for (a) and (b), timed from the signal;
    (c) one more change, reloaded by name (`shardns reload Z`, knotc zone-reload Z,
    nsd-control reload Z), time until served.
 4. queries per server CPU-second (--no-qps skips): shardns --workers 1 pinned
    to core 0, dnsperf pinned to core 1 (compare.py's load), first with one zone, then with the
    N zones, queries spread over all zones (www/mail/ns1 A, mail AAAA, MX, SOA, TXT); the
    server's CPU time read from /proc inside the sending window. With --qps-peers knotd,nsd
    the same runs go to knotd (one UDP worker) and NSD (one server process) too, pinned the
    same way; they serve all N zones in every run.

Usage:
  bench/many_zones.py [--zones 10000,100000] [--servers shardns,nsd,knotd] [--rounds 3]
      [--timeout 300] [--timeout shardns=60] [--qps-duration 10] [--no-qps]
      [--markdown FILE] [--dir DIR] [--keep] [--nsd-form zonelist|conf] [--jobs N]
      [--shardns-form tables|list] [--shardns-reload command|sighup]
The zone files for the largest size are written once into DIR/zones (default a new directory
under /tmp, removed at the end unless --keep; an existing DIR with enough zones is reused).
Needs knotd/knotc, nsd/nsd-control, dnsperf, taskset; builds shardns in release.
"""

import argparse
import multiprocessing
import os
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no bench/__pycache__ in the worktree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab import CLK_TCK, build_shardns, encode_name, port_free, proc_kib, terminate  # noqa: E402
from compare import loadgen_cmd, parse_qps  # noqa: E402

ADDR = "127.0.0.1"
PORTS = {"shardns": 5661, "nsd": 5662, "knotd": 5663, "shardns-qps": 5664, "knotd-qps": 5665,
         "nsd-qps": 5666}
SERVERS = ("shardns", "nsd", "knotd")
T_A, T_SOA = 1, 6
GEN_VERSION = "1"  # bump when the zone contents change, so a kept --dir is regenerated


# ---- zones ---------------------------------------------------------------------------------

def zone_name(i):
    return "z%06d.test." % i


def www_addr(i, version=0):
    """The www A record of zone i; version > 0 is a changed zone's new address."""
    if version:
        return "172.%d.%d.%d" % (16 + version % 16, (i >> 8) & 255, i & 255)
    return "10.%d.%d.%d" % ((i >> 16) & 255, (i >> 8) & 255, i & 255)


def zone_text(i, serial=1, version=0):
    n = zone_name(i)
    return (f"$ORIGIN {n}\n$TTL 3600\n"
            f"@ SOA ns1 hostmaster {serial} 3600 900 604800 300\n"
            "@ NS ns1\n@ NS ns2\n@ MX 10 mail\n"
            f"@ A 192.0.2.{i % 250 + 1}\n"
            f'@ TXT "zone {i}"\n'
            f"ns1 A 198.51.100.{i % 250 + 1}\nns2 A 203.0.113.{i % 250 + 1}\n"
            f"mail A 192.0.2.{(i + 1) % 250 + 1}\nmail AAAA 2001:db8::{i & 0xffff:x}\n"
            f"www A {www_addr(i, version)}\n"
            "ftp CNAME www\n")


def zone_path(zdir, i):
    # "%s.zone" in the peers' configs: the name without its final dot.
    return os.path.join(zdir, zone_name(i)[:-1] + ".zone")


def _write_range(args):
    zdir, lo, hi = args
    for i in range(lo, hi):
        with open(zone_path(zdir, i), "w") as f:
            f.write(zone_text(i))
    return hi - lo


def generate_zones(zdir, n, jobs):
    """Writes zones 0..n-1 into zdir (skipped if a marker says they are there already)."""
    marker = os.path.join(zdir, ".generated")
    try:
        with open(marker) as f:
            ver, have = f.read().split()
        if ver == GEN_VERSION and int(have) >= n:
            print(f"zones: {have} already in {zdir}", file=sys.stderr)
            return
    except (OSError, ValueError):
        pass
    os.makedirs(zdir, exist_ok=True)
    t0 = time.time()
    step = max(1000, n // (jobs * 8))
    chunks = [(zdir, lo, min(n, lo + step)) for lo in range(0, n, step)]
    if jobs > 1 and n > 20000:
        with multiprocessing.Pool(jobs) as pool:
            sum(pool.imap_unordered(_write_range, chunks))
    else:
        for c in chunks:
            _write_range(c)
    with open(marker, "w") as f:
        f.write(f"{GEN_VERSION} {n}\n")
    print(f"zones: wrote {n:,} zone files into {zdir} in {time.time() - t0:.1f} s", file=sys.stderr)


# ---- configs -------------------------------------------------------------------------------

def write_shardns_conf(path, zdir, zones, port, control, form="tables"):
    """shardns's config for `zones` (indexes): [server], and one [[zone]] table per zone
    (form "tables") or a `server.zone_list` file beside the config with one `NAME FILE` line
    per zone (form "list", the form for very many zones; docs/CONFIG.md)."""
    zone_list = os.path.join(os.path.dirname(path), "zones.list")
    with open(path, "w") as f:
        extra = f'zone_list = "{zone_list}"\n' if form == "list" else ""
        f.write(f'[server]\nlisten = ["{ADDR}:{port}"]\ncontrol_socket = "{control}"\n{extra}\n'
                '[log]\nlevel = "warn"\n\n')
        if form == "tables":
            w = f.write
            for i in zones:
                w(f'[[zone]]\nname = "{zone_name(i)}"\nfile = "{zone_path(zdir, i)}"\n')
        elif form == "list":
            with open(zone_list, "w") as z:
                z.write("".join(f"{zone_name(i)} {zone_path(zdir, i)}\n" for i in zones))
        else:
            raise ValueError(form)


def write_nsd_conf(d, zdir, n, port, form="zonelist", server_extra=""):
    """nsd.conf with one pattern; the zones in a zonelistfile (form "zonelist") or as one
    `zone:` block each (form "conf"). Returns the command (foreground)."""
    os.makedirs(d, exist_ok=True)
    zlist = f"{d}/zone.list"
    with open(f"{d}/nsd.conf", "w") as f:
        f.write(f"""server:
    ip-address: {ADDR}
    port: {port}
    username: ""
    chroot: ""
    zonesdir: "{zdir}"
    database: ""
    pidfile: "{d}/nsd.pid"
    xfrdfile: "{d}/xfrd.state"
    zonelistfile: "{zlist}"
    xfrdir: "{d}"
    logfile: "{d}/nsd.log"
    verbosity: 1
    zonefiles-write: 0
    # NSD limits responses by default (200/s per /24); the 1 ms polls after a reload would be
    # dropped or truncated, and a slow reload never seen. knotd and shardns limit nothing by
    # default.
    rrl-ratelimit: 0
{server_extra}remote-control:
    control-enable: yes
    control-interface: "{d}/nsd.ctl"
pattern:
    name: many
    zonefile: "%s.zone"
""")
        if form == "conf":
            w = f.write
            for i in range(n):
                w(f"zone:\n    name: {zone_name(i)}\n    include-pattern: many\n")
    with open(zlist, "w") as f:
        # The format `nsd-control addzone` writes (NSD 4.6): two comment lines, then one
        # "add NAME PATTERN" line per zone.
        f.write("# NSD zone list\n# name pattern\n")
        if form == "zonelist":
            w = f.write
            for i in range(n):
                w(f"add {zone_name(i)[:-1]} many\n")
    return ["nsd", "-d", "-c", f"{d}/nsd.conf"]


def write_knot_conf(d, zdir, n, port, server_extra=""):
    """knot.conf with one template and one `zone:` entry per zone. Returns the command."""
    os.makedirs(f"{d}/db", exist_ok=True)
    with open(f"{d}/knot.conf", "w") as f:
        f.write(f"""server:
    rundir: "{d}"
    pidfile: "{d}/knot.pid"
    listen: {ADDR}@{port}
{server_extra}control:
    listen: "{d}/knot.sock"
log:
  - target: stderr
    any: warning
database:
    storage: "{d}/db"
template:
  - id: default
    storage: "{zdir}"
    file: "%s.zone"
    zonefile-sync: -1
    zonefile-load: whole
    journal-content: none
zone:
""")
        w = f.write
        for i in range(n):
            w(f"  - domain: {zone_name(i)}\n")
    cmd = ["knotd", "-c", f"{d}/knot.conf"]
    if n > 200000:
        # The configuration database's size cap (default 500 MiB), not a performance setting.
        cmd += ["-m", "4000"]
    return cmd


# ---- probes --------------------------------------------------------------------------------

def make_query(qid, name, qtype):
    return struct.pack("!HHHHHH", qid, 0, 1, 0, 0, 0) + encode_name(name) + struct.pack("!HH", qtype, 1)


class Prober:
    """One UDP socket sending a query until a check of the answer passes (bounded)."""

    def __init__(self, port):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.s.connect((ADDR, port))
        self.qid = 1

    def close(self):
        self.s.close()

    def ask(self, name, qtype, wait):
        """One query; the answer's (flags, ancount, rdata of the first A answer or None), or
        None without an answer within `wait` seconds."""
        self.qid = (self.qid + 1) & 0xFFFF
        q = make_query(self.qid, name, qtype)
        try:
            self.s.send(q)
            end = time.monotonic() + wait
            while True:
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self.s.settimeout(left)
                r = self.s.recv(4096)
                if len(r) >= 12 and r[:2] == q[:2]:
                    break
        except (socket.timeout, ConnectionRefusedError, OSError):
            return None
        flags, an = struct.unpack("!H", r[2:4])[0], struct.unpack("!H", r[6:8])[0]
        addr = None
        if an and qtype == T_A:
            # The question is ours (same length); the first answer follows it.
            off = len(q)
            if off + 12 <= len(r) and r[off] & 0xC0 == 0xC0:
                rtype, _c, _t, rdlen = struct.unpack("!HHIH", r[off + 2:off + 12])
                if rtype == T_A and rdlen == 4:
                    addr = socket.inet_ntoa(r[off + 12:off + 16])
        return flags, an, addr

    def until(self, name, qtype, ok, timeout, step, alive=lambda: True):
        """Seconds until ok(answer) holds, querying every `step` s; None after `timeout` s or
        when alive() turns false."""
        t0 = time.monotonic()
        for _ in range(int(timeout / step) + 10):
            t = time.monotonic()
            a = self.ask(name, qtype, step)
            if a is not None and ok(a):
                return time.monotonic() - t0
            now = time.monotonic()
            if now - t0 > timeout or not alive():
                return None
            if now - t < step:  # an answer that does not pass, or a refusal (nothing bound yet)
                time.sleep(step - (now - t))
        return None


def soa_ok(a):
    flags, an, _ = a
    return flags & 0x8000 and flags & 0x0400 and flags & 0xF == 0 and an > 0  # QR, AA, NOERROR


# ---- process accounting --------------------------------------------------------------------

def tree(pid):
    """pid and its descendants, from the children files of their threads (cheaper than
    lab.children's scan of all of /proc, which this script would run every few ms)."""
    out, todo = [], [pid]
    while todo and len(out) < 10000:
        p = todo.pop()
        out.append(p)
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            pass
    return out


def proc_stat(p):
    with open(f"/proc/{p}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def tree_cpu(pids):
    """CPU seconds of the processes: utime+stime of all their threads, plus cutime+cstime (the
    children they reaped, e.g. an NSD reload process that exited)."""
    t = 0
    for p in pids:
        try:
            v = proc_stat(p)
            t += int(v[11]) + int(v[12]) + int(v[13]) + int(v[14])
        except (OSError, IndexError, ValueError):
            pass
    return t / CLK_TCK


def status_kib(pids, key):
    return proc_kib(pids, "status", key)


def pss_kib(pids):
    return proc_kib(pids, "smaps_rollup", "Pss")


class Server:
    """A server we started: its Popen and its process tree, stopped by PID."""

    def __init__(self, name, cmd, log_path):
        self.name = name
        self.log = open(log_path, "ab")
        self.t0 = time.monotonic()
        self.p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        self.known = {}  # pid -> start time, every process of the tree we saw

    def pids(self):
        out = tree(self.p.pid)
        for q in out:
            if q not in self.known:
                try:
                    self.known[q] = proc_stat(q)[19]
                except (OSError, IndexError):
                    pass
        return out

    def alive(self):
        return self.p.poll() is None

    def cpu(self):
        return tree_cpu(self.pids())

    def wait_idle(self, quiet=0.5, timeout=60.0):
        """Waits until the tree's CPU time has not moved for `quiet` s (bounded); returns the
        time (monotonic) of the last change seen."""
        last_v, last_t = self.cpu(), time.monotonic()
        end = last_t + timeout
        while time.monotonic() < end and self.alive():
            time.sleep(0.01)
            v = self.cpu()
            now = time.monotonic()
            if v != last_v:
                last_v, last_t = v, now
            elif now - last_t >= quiet:
                break
        return last_t

    def stop(self):
        self.pids()
        try:
            terminate(self.p)
        finally:
            # NSD forks: anything of the tree still running (same PID and start time) is killed.
            for q, start in self.known.items():
                try:
                    if q != self.p.pid and proc_stat(q)[19] == start:
                        os.kill(q, signal.SIGKILL)
                except (OSError, IndexError):
                    pass
            self.log.close()


# ---- one server's run ----------------------------------------------------------------------

class Run:
    """Everything for one size: the configs, the changed zone, the commands."""

    def __init__(self, args, work, zdir, n, shardns_bin):
        self.args, self.work, self.zdir, self.n, self.bin = args, work, zdir, n, shardns_bin
        self.mid = n // 2
        self.version = 0
        self.mtime = 0.0
        d = os.path.join(work, str(n))
        os.makedirs(d, exist_ok=True)
        self.d = d
        self.cmds = {}
        self.peer_cmds = {}
        t0 = time.time()
        if "shardns" in args.servers:
            self.shardns_conf = f"{d}/shardns.toml"
            self.shardns_ctl = f"{d}/shardns.ctl"
            write_shardns_conf(self.shardns_conf, zdir, range(n), PORTS["shardns"], self.shardns_ctl,
                               args.shardns_form)
            self.cmds["shardns"] = [shardns_bin, "serve", "-c", self.shardns_conf]
            print(f"shardns config: {self.shardns_conf} ({args.shardns_form})", file=sys.stderr)
        if "nsd" in args.servers:
            self.cmds["nsd"] = write_nsd_conf(f"{d}/nsd", zdir, n, PORTS["nsd"], args.nsd_form)
        if "knotd" in args.servers:
            self.cmds["knotd"] = write_knot_conf(f"{d}/knot", zdir, n, PORTS["knotd"])
        print(f"configs for {n:,} zones in {d} ({time.time() - t0:.1f} s)", file=sys.stderr)

    def reset_zone(self):
        """The changed zone back to its generated content before a server starts."""
        self.write_zone(serial=1, version=0)

    def write_zone(self, serial, version):
        path = zone_path(self.zdir, self.mid)
        with open(path, "w") as f:
            f.write(zone_text(self.mid, serial, version))
        # An mtime a whole second past the last one, so a server comparing mtimes in seconds
        # sees the change.
        t = max(time.time(), self.mtime + 1.01)
        os.utime(path, (t, t))
        self.mtime = t

    def fresh_state(self, name):
        if name == "nsd":
            for f in ("xfrd.state", "nsd.pid"):
                try:
                    os.remove(f"{self.d}/nsd/{f}")
                except OSError:
                    pass
        elif name == "knotd":
            shutil.rmtree(f"{self.d}/knot/db", ignore_errors=True)
            os.makedirs(f"{self.d}/knot/db")

    def reload_cmd(self, name, zone=None):
        if name == "shardns":
            return [self.bin, "reload", "--control", self.shardns_ctl] + ([zone] if zone else [])
        if name == "knotd":
            sock = ["knotc", "-s", f"{self.d}/knot/knot.sock", "-t", str(int(self.args.timeout_for("knotd")))]
            return sock + (["zone-reload", zone] if zone else ["reload"])
        if name == "nsd":
            return ["nsd-control", "-c", f"{self.d}/nsd/nsd.conf", "reload"] + ([zone] if zone else [])
        raise ValueError(name)

    def run_server(self, name):
        """One start, RSS, and reloads of `name`; a dict of figures, or {'timeout': s}."""
        res = {}
        port = PORTS[name]
        if not port_free(ADDR, port):
            print(f"{name}: port {port} is already in use, run skipped", file=sys.stderr)
            return None
        self.reset_zone()
        self.fresh_state(name)
        timeout = self.args.timeout_for(name)
        last = zone_name(self.n - 1)
        srv = Server(name, self.cmds[name], os.path.join(self.d, f"{name}.log"))
        pr = Prober(port)
        try:
            secs = pr.until(last, T_SOA, soa_ok, timeout, 0.005, srv.alive)
            if secs is None:
                if not srv.alive():
                    print(f"{name} exited ({srv.p.returncode}); see {self.d}/{name}.log", file=sys.stderr)
                    return None
                res["timeout"] = timeout
                res["cpu_timeout"] = srv.cpu()
                res["rss_timeout"] = status_kib(srv.pids(), "VmHWM") / 1024
                return res
            res["start_s"] = time.monotonic() - srv.t0
            res["start_cpu"] = srv.cpu()
            # A server may load its zones in any order: also 100 zones spread over the config.
            for k in range(100):
                left = timeout - (time.monotonic() - srv.t0)
                if pr.until(zone_name(k * self.n // 100), T_SOA, soa_ok, max(0.01, left), 0.005,
                            srv.alive) is None:
                    break
            else:
                res["sample_s"] = time.monotonic() - srv.t0
            res["procs"] = len(srv.pids())
            srv.wait_idle(timeout=min(60, timeout))
            res["hwm_start"] = status_kib(srv.pids(), "VmHWM") / 1024
            # (a) nothing changed
            res["none_cmd"], res["none_idle"], res["none_cpu"] = self.reload(srv, name, None)
            # (b) one zone changed, the whole server reloaded
            res["one_cmd"], res["one_served"], res["one_cpu"] = self.reload(srv, name, pr)
            # (c) the changed zone reloaded by name (`shardns reload ZONE`, knotc zone-reload,
            # nsd-control reload ZONE)
            res["byname_cmd"], res["byname_served"], res["byname_cpu"] = \
                self.reload(srv, name, pr, by_name=True)
            srv.wait_idle(timeout=min(60, timeout))
            pids = srv.pids()
            res["hwm_end"] = status_kib(pids, "VmHWM") / 1024
            res["pss_end"] = pss_kib(pids) / 1024
            res["procs_end"] = len(pids)
            return res
        finally:
            pr.close()
            srv.stop()

    def reload(self, srv, name, pr, by_name=False):
        """(command seconds, seconds until done, CPU seconds). Done: with pr, the changed
        record served; without, the server's CPU idle again (time of its last tick)."""
        srv.wait_idle(timeout=30)
        if pr is not None:
            self.version += 1
            self.write_zone(serial=1 + self.version, version=self.version)
            want = www_addr(self.mid, self.version)
        cmd = self.reload_cmd(name, zone_name(self.mid) if by_name else None)
        c0 = srv.cpu()
        t0 = time.monotonic()
        if name == "shardns" and self.args.shardns_reload == "sighup" and not by_name:
            # The signal itself (what `shardns reload` sends the server after its socket
            # round trip): times from SIGHUP, without starting a client process.
            os.kill(srv.p.pid, signal.SIGHUP)
        else:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=self.args.timeout_for(name) + 30)
            if r.returncode != 0:
                print(f"{name}: {' '.join(cmd)} exited {r.returncode}: {r.stdout}{r.stderr}", file=sys.stderr)
        t_cmd = time.monotonic() - t0
        if pr is None:
            last = srv.wait_idle(quiet=0.5, timeout=self.args.timeout_for(name))
            done = max(t_cmd, last - t0)
        else:
            left = self.args.timeout_for(name) - t_cmd
            served = pr.until(f"www.{zone_name(self.mid)}", T_A, lambda a: a[2] == want, max(1, left), 0.001,
                              srv.alive)
            done = None if served is None else t_cmd + served
            srv.wait_idle(quiet=0.5, timeout=self.args.timeout_for(name))
        return t_cmd, done, srv.cpu() - c0

    # ---- queries per CPU-second (shardns) ----

    def qps_files(self):
        names = [("www", "A"), ("mail", "A"), ("ns1", "A"), ("mail", "AAAA"), ("@", "MX"),
                 ("@", "SOA"), ("@", "TXT")]
        spreads = sorted({max(len(names), min(self.n, k)) for k in self.args.qps_spread})
        files = {}
        sets = [("1", [0] * spreads[0])]
        sets += [(f"{self.n}/{k}", [j * self.n // k for j in range(k)]) for k in spreads]
        for label, zones in sets:
            path = f"{self.d}/queries-{label.replace('/', '-')}.txt"
            with open(path, "w") as f:
                for j, z in enumerate(zones):
                    host, t = names[j % len(names)]
                    zn = zone_name(z)[:-1]
                    f.write(f"{zn if host == '@' else host + '.' + zn} {t}\n")
            files[label] = path
        conf1 = f"{self.d}/shardns-1.toml"
        write_shardns_conf(conf1, self.zdir, [0], PORTS["shardns-qps"], f"{self.d}/shardns-qps.ctl",
                           self.args.shardns_form)
        confn = f"{self.d}/shardns-qps.toml"
        write_shardns_conf(confn, self.zdir, range(self.n), PORTS["shardns-qps"], f"{self.d}/shardns-qps.ctl",
                           self.args.shardns_form)
        out = {"1": (conf1, files["1"], zone_name(0))}
        for k in spreads:
            out[f"{self.n}/{k}"] = (confn, files[f"{self.n}/{k}"], zone_name(self.n - 1))
        return out

    def run_qps(self, conf, qfile, last, binary=None):
        cmd = ["taskset", "-c", "0", binary or self.bin, "serve", "-c", conf, "--workers", "1"]
        return self.measure_qps("shardns", cmd, qfile, last)

    def peer_qps_cmd(self, name):
        """The command of a peer's qps runs: the N zones, one answering thread (knotd one UDP
        worker, NSD one server process), written once per size."""
        if name not in self.peer_cmds:
            d = f"{self.d}/{name}-qps"
            if name == "knotd":
                extra = "    udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\n"
                cmd = write_knot_conf(d, self.zdir, self.n, PORTS["knotd-qps"], extra)
            else:
                cmd = write_nsd_conf(d, self.zdir, self.n, PORTS["nsd-qps"], self.args.nsd_form,
                                     "    server-count: 1\n")
            self.peer_cmds[name] = ["taskset", "-c", "0"] + cmd
        return self.peer_cmds[name]

    def measure_qps(self, name, cmd, qfile, last):
        port = PORTS[f"{name}-qps"]
        if not port_free(ADDR, port):
            print(f"{name}-qps: port {port} is already in use, run skipped", file=sys.stderr)
            return None
        self.reset_zone()
        srv = Server(f"{name}-qps", cmd, os.path.join(self.d, f"{name}-qps.log"))
        pr = Prober(port)
        dur = self.args.qps_duration
        try:
            if pr.until(last, T_SOA, soa_ok, self.args.timeout_for(name), 0.005, srv.alive) is None:
                return {"timeout": self.args.timeout_for(name)}
            srv.wait_idle(timeout=60)
            subprocess.run(loadgen_cmd("dnsperf", port, qfile, 2, self.bin), capture_output=True, timeout=60)
            lg = subprocess.Popen(loadgen_cmd("dnsperf", port, qfile, dur, self.bin),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            try:
                time.sleep(0.5)
                t0, s0 = time.monotonic(), srv.cpu()
                time.sleep(dur - 1)
                t1, s1 = time.monotonic(), srv.cpu()
                out, _ = lg.communicate(timeout=dur + 30)
            finally:
                terminate(lg)
            qps, lost = parse_qps("dnsperf", out)
            cpu = (s1 - s0) / (t1 - t0)
            return {"qps": qps, "lost": lost, "srv_cpu": cpu,
                    "kq_per_cpu_s": qps / cpu / 1000 if cpu > 0 else 0.0,
                    "rss": status_kib(srv.pids(), "VmHWM") / 1024}
        finally:
            pr.close()
            srv.stop()


# ---- report --------------------------------------------------------------------------------

def med(rs, k):
    v = [r[k] for r in rs if r.get(k) is not None]
    return statistics.median(v) if v else None


def fmt(v, f="{:.2f}"):
    return "–" if v is None else f.format(v)


def runs(rs, k, f="{:.2f}"):
    return "/".join(fmt(r.get(k), f) for r in rs)


def table(n, servers, results, loads, qps):
    la = lambda t: "/".join(f"{x:.2f}" for x in t)
    lines = [f"**{n:,} zones**: load average (1/5/15 min) {la(loads[0])} at the start, "
             f"{la(loads[1])} at the end; medians of the rounds, each run after the slash.", "",
             "| server | start → last zone answers, s | runs | and 100 zones spread over the config, s | CPU s by then | peak RSS MiB (VmHWM) after start / after reloads | Pss MiB at end | reload, nothing changed: s until idle / CPU s | reload, one zone changed: s until served / CPU s | that zone reloaded by name: s until served |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for s in servers:
        rs = results.get(s, [])
        to = [r for r in rs if "timeout" in r]
        ok = [r for r in rs if "timeout" not in r]
        if to and not ok:
            r = to[0]
            lines.append(f"| {s} | timeout after {r['timeout']:.0f} s | – | – | {r['cpu_timeout']:.1f} (at the timeout) | "
                         f"{r['rss_timeout']:.0f} (at the timeout) | – | – | – | – |")
            continue
        if not ok:
            lines.append(f"| {s} | no run | | | | | | | | |")
            continue
        by = f"{fmt(med(ok, 'byname_served'), '{:.3f}')} ({runs(ok, 'byname_served', '{:.3f}')})"
        lines.append(
            f"| {s} | {fmt(med(ok, 'start_s'))} | {runs(ok, 'start_s')} | {fmt(med(ok, 'sample_s'))} | "
            f"{fmt(med(ok, 'start_cpu'))} | "
            f"{fmt(med(ok, 'hwm_start'), '{:.0f}')} / {fmt(med(ok, 'hwm_end'), '{:.0f}')} | "
            f"{fmt(med(ok, 'pss_end'), '{:.0f}')} | "
            f"{fmt(med(ok, 'none_idle'), '{:.3f}')} / {fmt(med(ok, 'none_cpu'))} | "
            f"{fmt(med(ok, 'one_served'), '{:.3f}')} / {fmt(med(ok, 'one_cpu'))} | {by} |")
    if not servers:
        lines = lines[:2]
    if qps:
        lines += ["", f"shardns `--workers 1` (knotd one UDP worker, NSD one server process) pinned to core 0, "
                  "dnsperf (`-T 2 -c 4 -q 200`) pinned to core 1, queries spread over the zones served:", "",
                  "| zones served / queried | kq per server CPU-s | runs | q/s | server CPU % | lost | VmHWM MiB |",
                  "|---|---|---|---|---|---|---|"]
        for label, rs in qps.items():
            ok = [r for r in rs if r and "timeout" not in r]
            if not ok:
                why = f"timeout after {rs[0]['timeout']:.0f} s" if rs and rs[0] and "timeout" in rs[0] else "no run"
                lines.append(f"| {label} | {why} | | | | | |")
                continue
            lines.append(f"| {label} | {med(ok, 'kq_per_cpu_s'):.0f} | {runs(ok, 'kq_per_cpu_s', '{:.0f}')} | "
                         f"{med(ok, 'qps'):,.0f} | {100 * med(ok, 'srv_cpu'):.0f} | {med(ok, 'lost'):.0f} | "
                         f"{med(ok, 'rss'):.0f} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zones", default="10000", help="sizes, e.g. 10000,100000,1000000")
    ap.add_argument("--servers", default="shardns,nsd,knotd")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timeout", action="append", default=[], metavar="S|NAME=S",
                    help="seconds a start (and each reload) may take; NAME=S for one server (default 300)")
    ap.add_argument("--qps-duration", type=int, default=10)
    ap.add_argument("--qps-only", action="store_true", help="only the queries per CPU-second runs")
    ap.add_argument("--qps-spread", default="10000", type=lambda v: [int(x) for x in v.split(",")],
                    help="how many of the N zones the N-zone qps runs query, e.g. 10000,100000 (one run each)")
    ap.add_argument("--shardns-bins", metavar="TAG=PATH,TAG=PATH",
                    help="no build: the qps runs A/B these shardns binaries (the first also does the rest)")
    ap.add_argument("--no-qps", action="store_true", help="skip the queries per CPU-second runs")
    ap.add_argument("--qps-peers", default="", type=lambda v: [x for x in v.split(",") if x],
                    help="also run the qps runs against these peers (knotd, nsd): one answering thread "
                         "pinned to core 0, serving all N zones in every run (so their '1' row is one zone "
                         "queried of N)")
    ap.add_argument("--markdown", help="also write the tables to this file")
    ap.add_argument("--dir", help="generated files (default: a new directory under /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--nsd-form", choices=["zonelist", "conf"], default="zonelist")
    ap.add_argument("--shardns-form", choices=["tables", "list"], default="tables")
    ap.add_argument("--shardns-reload", choices=["command", "sighup"], default="command",
                    help="reload shardns (nothing changed, one zone changed) with `shardns reload` or "
                         "a SIGHUP sent to it, timing from the signal; by name always uses the command")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes writing zone files")
    args = ap.parse_args()
    args.servers = [s for s in args.servers.split(",") if s]
    for s in args.qps_peers:
        if s not in ("knotd", "nsd"):
            sys.exit(f"--qps-peers: unknown peer {s}; known: knotd,nsd")
    for s in args.servers:
        if s not in SERVERS:
            sys.exit(f"unknown server {s}; known: {','.join(SERVERS)}")
    timeouts = {"": 300.0}
    for t in args.timeout:
        k, _, v = t.rpartition("=")
        timeouts[k] = float(v)
    args.timeout_for = lambda name: timeouts.get(name, timeouts[""])
    sizes = [int(x.replace("_", "")) for x in args.zones.split(",")]
    if max(sizes) > 1000000:
        sys.exit("at most 1,000,000 zones (the names have six digits)")

    bins = [("", None)]
    if args.shardns_bins:
        # A/B: each qps run goes to every binary in turn (A B A B), labelled by its tag.
        bins = [tuple(b.split("=", 1)) for b in args.shardns_bins.split(",")]
    shardns_bin = (bins[0][1] or build_shardns()) if "shardns" in args.servers else None
    made_dir = args.dir is None
    top = args.dir or tempfile.mkdtemp(prefix="shardns-many-zones-")
    os.makedirs(top, exist_ok=True)
    out = []
    try:
        zdir = os.path.join(top, "zones")
        generate_zones(zdir, max(sizes), args.jobs)
        for n in sizes:
            run = Run(args, top, zdir, n, shardns_bin)
            results = {s: [] for s in args.servers}
            qps = {}
            qfiles = run.qps_files() if "shardns" in args.servers and not args.no_qps else {}
            loads = [os.getloadavg()]
            for r in range(args.rounds):
                for s in [] if args.qps_only else args.servers:
                    if any("timeout" in x for x in results[s]):
                        continue  # timed out at this size: not tried again
                    res = run.run_server(s)
                    if res is None:
                        continue
                    results[s].append(res)
                    print(f"{n} zones, round {r + 1}, {s}: " + ", ".join(
                        f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in res.items())
                        + f"; load {os.getloadavg()[0]:.2f}", file=sys.stderr)
                for qlabel, (conf, qfile, last) in qfiles.items():
                    for tag, binary in bins:
                        label = f"{qlabel} {tag}".strip()
                        if any(x and "timeout" in x for x in qps.get(label, [])):
                            continue
                        res = run.run_qps(conf, qfile, last, binary)
                        qps.setdefault(label, []).append(res)
                        print(f"{n} zones, round {r + 1}, shardns --workers 1 with {label} zones: {res}",
                              file=sys.stderr)
                    for peer in args.qps_peers:
                        label = f"{qlabel} {peer}"
                        if any(x and "timeout" in x for x in qps.get(label, [])):
                            continue
                        res = run.measure_qps(peer, run.peer_qps_cmd(peer), qfile, last)
                        qps.setdefault(label, []).append(res)
                        print(f"{n} zones, round {r + 1}, {peer} (one thread) with {label} zones: {res}",
                              file=sys.stderr)
            loads.append(os.getloadavg())
            t = table(n, [] if args.qps_only else args.servers, results, loads, qps)
            print(t + "\n", flush=True)
            out.append(t)
            if not args.keep:
                shutil.rmtree(run.d, ignore_errors=True)
    finally:
        if not args.keep:
            if made_dir:
                shutil.rmtree(top, ignore_errors=True)
            else:
                shutil.rmtree(os.path.join(top, "zones"), ignore_errors=True)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n\n".join(out) + "\n")


if __name__ == "__main__":
    main()
