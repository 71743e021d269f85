"""Shared helpers of the bench/ scripts (stdlib only): process accounting from /proc, port
probes, a process set stopped by PID, `shardns stats` parsing, and a minimal DNS message
encoder/decoder for clients written in Python.

compare.py, stress.py, soak.py and coldfill.py all take these from here; a script imports this
module by putting its own directory first on sys.path.
"""

import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ---- peer configs ------------------------------------------------------------------------

def knot_conf(d, addr, port, zone, zonefile, transfer_from=None):
    """Writes d/knot.conf for knotd serving `zone` from `zonefile` on addr@port with one UDP,
    one TCP and one background worker (the peers' equal settings), letting the address
    `transfer_from` (if given) transfer the zone; returns the command."""
    acl = (f"acl:\n  - id: xfr\n    address: {transfer_from}\n    action: transfer\n"
           if transfer_from else "")
    zone_acl = "    acl: xfr\n" if transfer_from else ""
    os.makedirs(f"{d}/db", exist_ok=True)
    with open(f"{d}/knot.conf", "w") as f:
        f.write(f"""server:
    rundir: "{d}"
    pidfile: "{d}/knot.pid"
    listen: {addr}@{port}
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
control:
    listen: "{d}/knot.sock"
log:
  - target: stderr
    any: warning
database:
    storage: "{d}/db"
template:
  - id: default
    storage: "{os.path.dirname(zonefile)}"
    zonefile-sync: -1
    zonefile-load: whole
    journal-content: none
{acl}zone:
  - domain: {zone}
    file: "{zonefile}"
{zone_acl}""")
    return ["knotd", "-c", f"{d}/knot.conf"]


# Every IPv4 and IPv6 address but 127.0.0.0/8, as the netblocks of Unbound's
# `do-not-query-address`: a resolver under test never sends a query off this machine.
UNBOUND_FENCE = ("0.0.0.0/2", "64.0.0.0/3", "96.0.0.0/4", "112.0.0.0/5", "120.0.0.0/6",
                 "124.0.0.0/7", "126.0.0.0/8", "128.0.0.0/1", "::/0")


def unbound_fence():
    """The `do-not-query-address` lines of UNBOUND_FENCE, for a `server:` clause."""
    return "".join(f"    do-not-query-address: {b}\n" for b in UNBOUND_FENCE)


def unbound_server(directory, interface, port, threads=1, verbosity=0, pidfile="", extra=""):
    """The `server:` clause a lab Unbound starts with: in the foreground as this user, no
    chroot or syslog, answering and querying 127.0.0.0/8 only (UNBOUND_FENCE), IPv4, then
    the caller's `extra` lines (each indented by four spaces, ending in a newline)."""
    reuse = f"    so-reuseport: yes\n" if threads > 1 else ""
    return f"""server:
    interface: {interface}
    port: {port}
    num-threads: {threads}
{reuse}    do-daemonize: no
    username: ""
    chroot: ""
    directory: "{directory}"
    pidfile: "{pidfile}"
    use-syslog: no
    logfile: ""
    verbosity: {verbosity}
    access-control: 127.0.0.0/8 allow
    do-not-query-localhost: no
    do-ip6: no
{unbound_fence()}{extra}"""


def shardns_auth_conf(d, name, listen, port, zones):
    """d/NAME.toml for an authoritative shardns: one worker on each of `listen` at `port`,
    its control socket d/NAME.ctl, the zones (origin, file); returns its path."""
    p = os.path.join(d, f"{name}.toml")
    with open(p, "w") as f:
        f.write("[server]\nlisten = [%s]\nworkers = 1\ncontrol_socket = \"%s\"\n\n" % (
            ", ".join(f'"{ip}:{port}"' for ip in listen), os.path.join(d, f"{name}.ctl")))
        for origin, path in zones:
            f.write(f'[[zone]]\nname = "{origin}"\nfile = "{path}"\n\n')
    return p


def loopback_root_hints(path, addr, port):
    """Writes root hints naming one root server at addr@port (loopback), for a shardns
    resolver that should only use its forward zones: shardns has no `do-not-query-address`,
    so any question outside them goes to that address instead of the IANA root servers
    bundled in the binary. Returns path."""
    with open(path, "w") as f:
        f.write(f". 3600000 NS fence.invalid.\nfence.invalid. 3600000 A {addr}@{port}\n")
    return path


# ---- processes --------------------------------------------------------------------------

def children(pid):
    """pid and its descendants, from /proc."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def cpu_ticks(pids, kernel=True):
    """utime + stime of the processes (all their threads), in clock ticks; utime alone
    without `kernel`."""
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + (int(fields[12]) if kernel else 0)
        except (OSError, IndexError, ValueError):
            pass
    return total


def proc_kib(pids, file, key):
    """The `key:` figure (kB) of /proc/PID/FILE summed over the processes (e.g. "status",
    "VmRSS"; "smaps_rollup", "Pss"); a process that is gone counts 0."""
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/{file}") as f:
                for line in f:
                    if line.startswith(key + ":"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def rss_kib(pids):
    return proc_kib(pids, "status", "VmRSS")


def steal_idle():
    """Per-CPU (steal, idle, total) jiffies."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            if re.match(r"cpu\d", line):
                v = line.split()
                nums = list(map(int, v[1:]))
                out[v[0]] = (nums[7], nums[3] + nums[4], sum(nums))
    return out


def busy_pct(before, after, cpu):
    """Share of `cpu`'s time that was neither idle nor stolen between two steal_idle()."""
    b, a = before[cpu], after[cpu]
    total = max(1, a[2] - b[2])
    return 100.0 * (total - (a[1] - b[1]) - (a[0] - b[0])) / total


def steal_pct(before, after, cpu):
    b, a = before[cpu], after[cpu]
    return 100.0 * (a[0] - b[0]) / max(1, a[2] - b[2])


class Procs:
    """Processes we started, stopped by PID (SIGTERM, then SIGKILL after 10 s)."""

    def __init__(self, work):
        self.work, self.procs = work, []

    def start(self, name, cmd):
        log = open(os.path.join(self.work, f"{name}.log"), "ab")
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        self.procs.append((name, p, log))
        print(f"started {name} (pid {p.pid}): {' '.join(cmd)}", file=sys.stderr)
        return p

    def log(self, name):
        with open(os.path.join(self.work, f"{name}.log"), errors="replace") as f:
            return f.read()

    def wait_ready(self, name, p, check, timeout=30, every=0.05):
        """Calls check() every `every` seconds until it is true; raises if p exits first or
        after `timeout` seconds, with the end of its log."""
        end = time.time() + timeout
        while time.time() < end:
            if p.poll() is not None:
                raise RuntimeError(f"{name} exited ({p.returncode}):\n{self.log(name)[-2000:]}")
            if check():
                return
            time.sleep(every)
        raise RuntimeError(f"{name} not ready after {timeout} s:\n{self.log(name)[-2000:]}")

    def stop(self, p):
        for i, (name, q, log) in enumerate(self.procs):
            if q is p:
                terminate(q)
                log.close()
                del self.procs[i]
                return

    def stop_all(self):
        for name, p, log in reversed(self.procs):
            terminate(p)
            log.close()
        self.procs = []


def terminate(p):
    """Stops p (a Popen): SIGTERM, then SIGKILL if it is still running after 10 s."""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)


def build_shardns():
    """Builds the release binaries (never benchmark a debug build) and returns shardns's path.
    `shardns bench` runs the lab's own binary, shardns-bench, from beside it: both are built."""
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "shardns", "-p", "shardns-bench"],
                   cwd=ROOT, check=True, timeout=1800)
    return os.path.join(target, "release", "shardns")


def unbound_version():
    try:
        r = subprocess.run(["unbound", "-V"], capture_output=True, text=True, timeout=5)
        return r.stdout.split("\n", 1)[0].replace("Version ", "")
    except (OSError, subprocess.TimeoutExpired):
        return "?"


# ---- ports and statistics ---------------------------------------------------------------

def port_free(ip, port):
    """True if nothing holds ip:port for UDP or TCP. The probe binds without SO_REUSEPORT, so it
    also fails when another server bound the port with SO_REUSEPORT (which a second shardns
    would otherwise share silently, splitting the traffic)."""
    fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
    for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
        s = socket.socket(fam, kind)
        try:
            s.bind((ip, port))
        except OSError:
            return False
        finally:
            s.close()
    return True


def shardns_stats(bin_, control):
    """Every sample of `shardns stats` as {'family{labels}': value} (labels kept verbatim), or
    {} if the instance does not answer."""
    try:
        r = subprocess.run([bin_, "stats", "--control", control], capture_output=True, text=True,
                           timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    out = {}
    for line in r.stdout.splitlines():
        m = re.match(r"(shardns_\w+(?:\{[^}]*\})?)\s+([-\d.e+]+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def family_sum(stats, family):
    """Sum of every sample of one family (all label sets)."""
    return sum(v for k, v in stats.items() if k == family or k.startswith(family + "{"))


def by_label(stats, family, label):
    """{label value: sample} for one family."""
    out = {}
    for k, v in stats.items():
        m = re.match(re.escape(family) + r"\{.*?" + label + r'="([^"]*)"', k)
        if m:
            out[m.group(1)] = out.get(m.group(1), 0) + v
    return out


# ---- DNS messages -----------------------------------------------------------------------

T_A, T_NS, T_CNAME, T_SOA, T_AAAA = 1, 2, 5, 6, 28
RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}


def encode_name(name):
    out = bytearray()
    for label in name.rstrip(".").split("."):
        if label:
            b = label.encode("ascii")
            out.append(len(b))
            out += b
    out.append(0)
    return bytes(out)


def query(qid, name, qtype=T_A, rd=True, do=False):
    """A query message: header, one question (class IN); with `do`, an EDNS OPT record
    (1,232-octet payload) with the DO bit, as a validating stub asks."""
    flags = 0x0100 if rd else 0
    q = struct.pack("!HHHHHH", qid, flags, 1, 0, 0, 1 if do else 0) + encode_name(name) + struct.pack("!HH", qtype, 1)
    if do:
        q += b"\x00" + struct.pack("!HHIH", 41, 1232, 0x8000, 0)
    return q


def authentic_data(msg):
    """The AD bit of a response's header."""
    return len(msg) >= 4 and bool(msg[3] & 0x20)


def _read_name(msg, off):
    """(lower-case name with a final dot, offset after it in the record), following pointers."""
    labels, end, hops = [], None, 0
    while True:
        n = msg[off]
        if n & 0xC0 == 0xC0:
            if end is None:
                end = off + 2
            off = ((n & 0x3F) << 8) | msg[off + 1]
            hops += 1
            if hops > 64:
                raise ValueError("compression loop")
            continue
        off += 1
        if n == 0:
            break
        labels.append(msg[off:off + n].decode("ascii", "replace").lower())
        off += n
    return ".".join(labels) + ".", (end if end is not None else off)


def parse_response(msg):
    """(id, rcode, qname, answers) where answers is a list of (owner, type, value); value is the
    dotted address for A, the target for CNAME, else the raw rdata. Raises ValueError."""
    if len(msg) < 12:
        raise ValueError("short message")
    qid, flags, qd, an, _ns, _ar = struct.unpack("!HHHHHH", msg[:12])
    if not flags & 0x8000:
        raise ValueError("not a response")
    off, qname = 12, None
    try:
        for _ in range(qd):
            qname, off = _read_name(msg, off)
            off += 4
        answers = []
        for _ in range(an):
            owner, off = _read_name(msg, off)
            rtype, _cls, _ttl, rdlen = struct.unpack("!HHIH", msg[off:off + 10])
            off += 10
            rdata = msg[off:off + rdlen]
            if rtype == T_A and rdlen == 4:
                value = socket.inet_ntoa(rdata)
            elif rtype == T_CNAME:
                value = _read_name(msg, off)[0]
            else:
                value = bytes(rdata)
            answers.append((owner, rtype, value))
            off += rdlen
    except (IndexError, struct.error) as e:
        raise ValueError(f"truncated message: {e}") from e
    return qid, flags & 0xF, qname, answers


def probe(ip, port, name, rd=False, timeout=0.5):
    """Sends one query and returns its rcode name, or None without an answer in time."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.settimeout(timeout)
        s.connect((ip, port))
        s.send(query(0x5EED, name, T_A, rd))
        _qid, rcode, _q, _a = parse_response(s.recv(4096))
        return RCODES.get(rcode, str(rcode))
    except (OSError, ValueError):
        return None
    finally:
        s.close()
