#!/usr/bin/env python3
"""Issue #30's two resolver benchmarks, shardns against Unbound on a loopback hierarchy
where a third of the zones' servers answer QNAME-minimised queries badly.

Topology (127.0.30.0/24, every server on port 53, since Unbound sends to port 53 for every
address learned from a referral):
  127.0.30.1        shardns root: `.`, delegating tld0..tld9 (glue)
  127.0.30.2, .3    shardns TLD server: tld0..tld9, each delegating a tenth of the zones
  127.0.30.4-.9     shardns SLD server: the well-behaved zones (two of these six each)
  127.0.30.10, .11  this script's own authoritative server (`--auth-server`, Python): the
                    misbehaving third (zone i with i % 3 == 0), both addresses for each.
                    For an empty non-terminal (exactly what a minimised query asks) it
                    answers by the zone's mode, rotating over the zones: `noaa` (NOERROR,
                    AA clear, nothing in it), `refused` (REFUSED), `nxdomain` (NXDOMAIN,
                    AA, the SOA: "nothing below exists", for a name that does). Full
                    questions get correct, authoritative answers.
  127.0.30.20       the resolver under test, one worker/thread, pinned to core 0
  127.0.30.21       this script's client, pinned to core 1 (the servers float)
Each zone zoneNNNN.tldK holds n0..n{N-1} at depth two, `nJ.s{J%2}.zoneNNNN.tldK. A`, so
that every name has an empty non-terminal between its zone's apex and itself; the names
asked are all of those plus `nx.s0.zoneNNNN.tldK` (NXDOMAIN) per zone.

Both resolvers use QNAME minimisation relaxed (shardns's default, Unbound's
`qname-minimisation: yes`, `qname-minimisation-strict: no`), no validation, and are fenced to
loopback (shardns `--allow-loopback-upstreams`; Unbound `do-not-query-localhost: no` and
`do-not-query-address` for everything else). The lab is not under `test.`, so neither
resolver's default local zones get in the way.

`--mode fill` (issue #30, first point): per run a fresh resolver resolves every name once,
in a shuffled order, from CONCURRENCY closed-loop streams; every answer's rcode and answer
RRset are checked against the zone data and compared between the two resolvers. Reports
fill time, resolver CPU, upstream queries. Runs A B A B, medians of the rounds.

`--mode stale` (second point): per run, fresh authoritative servers and a fresh resolver
with serve-stale on (shardns `resolver.serve_stale`; Unbound `serve-expired: yes`,
`serve-expired-client-timeout: 1800` like shardns's default, `ede: yes`); the answers have a
TTL of `--ttl` s. Fill; measure cache hits (positive names, cycled for `--measure` s from
CONCURRENCY streams) as answers per resolver CPU-second; kill the authoritative servers
(SIGKILL, by PID); wait until every answer has expired; ask every name once (the first,
failing resolution of each name, which may wait for the client-response timer); then
measure again the same way: every answer must be the right address with EDE 3 (Stale
Answer). Reports both rates and their ratio, per resolver.

Usage:
  bench/coldfill_bad.py [--mode fill|stale] [--rounds 5] [--resolvers shardns,unbound]
      [--zones 300] [--names 10] [--concurrency 100] [--ttl 8] [--measure 3]
      [--markdown FILE] [--json FILE] [--keep]
Needs: root (port 53 on 127.0.30.x), unbound (Debian's package), a release build of shardns
(built here). Every load loop is bounded in queries and seconds.
"""

import argparse
import collections
import json
import os
import random
import select
import shlex
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
import lab  # noqa: E402

BASE = "127.0.30."
ROOT_IP = BASE + "1"
TLD_IPS = [BASE + "2", BASE + "3"]
SLD_IPS = [BASE + str(i) for i in range(4, 10)]
BAD_IPS = [BASE + "10", BASE + "11"]
RES_IP, CLIENT_IP = BASE + "20", BASE + "21"
PORT = 53
TLDS = 10
CORE_RESOLVER, CORE_LOAD = 0, 1
MODES = ("noaa", "refused", "nxdomain")
DELEG_TTL = 86400
EDE_STALE = 3


# ---- topology ---------------------------------------------------------------------------

def zone_name(i):
    return f"zone{i:04d}.tld{i % TLDS}."


def bad_mode(i):
    """How zone i's server answers a minimised query: None (correctly) or one of MODES."""
    return MODES[(i // 3) % len(MODES)] if i % 3 == 0 else None


def servers(i):
    if bad_mode(i):
        return BAD_IPS
    k = i // TLDS
    return [SLD_IPS[k % len(SLD_IPS)], SLD_IPS[(k + 1) % len(SLD_IPS)]]


def address(i, j):
    return f"10.{i // 100}.{i % 100}.{j}"


def soa_line(origin, ttl):
    mbox = "hostmaster." + ("" if origin == "." else origin)
    return f"@ {DELEG_TTL} IN SOA ns1.{origin if origin != '.' else 'root.'} {mbox} 1 3600 600 86400 {ttl}\n"


def write_topology(d, zones, per_zone, ttl):
    """Zone files, configs, the bad server's data and the hints; returns (names, expected
    {name: (rcode, frozenset of (owner, type, value))}, configs)."""
    zd = os.path.join(d, "zones")
    os.makedirs(zd, exist_ok=True)

    def w(name, text):
        p = os.path.join(zd, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    root = ["$ORIGIN .\n", soa_line(".", 300), f"@ {DELEG_TTL} IN NS a.root-servers.net.\n",
            f"a.root-servers.net. {DELEG_TTL} IN A {ROOT_IP}\n"]
    for t in range(TLDS):
        for n, ip in zip(("ns1", "ns2"), TLD_IPS):
            root.append(f"tld{t}. {DELEG_TTL} IN NS {n}.nic.tld{t}.\n{n}.nic.tld{t}. {DELEG_TTL} IN A {ip}\n")
    root_file = w("root.zone", "".join(root))
    tld_files, sld_files, bad, names, expect = [], [], {}, [], {}
    for t in range(TLDS):
        origin = f"tld{t}."
        z = [f"$ORIGIN {origin}\n$TTL {DELEG_TTL}\n", soa_line(origin, 300)]
        for n, ip in zip(("ns1", "ns2"), TLD_IPS):
            z.append(f"@ IN NS {n}.nic\n{n}.nic IN A {ip}\n")
        for i in range(t, zones, TLDS):
            label = zone_name(i).split(".")[0]
            for n, ip in zip(("ns1", "ns2"), servers(i)):
                z.append(f"{label} IN NS {n}.{label}\n{n}.{label} IN A {ip}\n")
        tld_files.append((origin, w(f"tld{t}.zone", "".join(z))))
    for i in range(zones):
        origin = zone_name(i)
        ns = list(zip(("ns1", "ns2"), servers(i)))
        a = {}
        for j in range(per_zone):
            name = f"n{j}.s{j % 2}.{origin}"
            a[name] = address(i, j)
            names.append(name)
            expect[name] = (0, frozenset({(name, lab.T_A, address(i, j))}))
        nx = f"nx.s0.{origin}"
        names.append(nx)
        expect[nx] = (3, frozenset())
        if bad_mode(i):
            bad[origin] = {"mode": bad_mode(i), "ttl": ttl,
                           "ns": [[f"{n}.{origin}", ip] for n, ip in ns], "a": a}
            continue
        z = [f"$ORIGIN {origin}\n$TTL {DELEG_TTL}\n", soa_line(origin, ttl)]
        for n, ip in ns:
            z.append(f"@ IN NS {n}\n{n} IN A {ip}\n")
        z += [f"{name} {ttl} IN A {addr}\n" for name, addr in a.items()]
        sld_files.append((origin, w(f"{origin}zone", "".join(z))))

    def conf(name, listen, zones):
        return lab.shardns_auth_conf(d, name, listen, PORT, zones)

    confs = {"root": conf("root", [ROOT_IP], [(".", root_file)]),
             "tld": conf("tld", TLD_IPS, tld_files),
             "sld": conf("sld", SLD_IPS, sld_files)}
    confs["bad"] = os.path.join(d, "bad.json")
    with open(confs["bad"], "w") as f:
        json.dump(bad, f)
    with open(os.path.join(d, "root.hints"), "w") as f:
        f.write(f". 3600000 NS a.root-servers.net.\na.root-servers.net. 3600000 A {ROOT_IP}\n")
    with open(os.path.join(d, "resolver.toml"), "w") as f:
        f.write("[resolver]\nserve_stale = true\n")
    random.Random(30).shuffle(names)
    return names, expect, confs


# ---- the misbehaving authoritative server -------------------------------------------------

def _rr(owner, qname, rtype, ttl, rdata):
    # The owner as a pointer to the question's name when it is that name.
    own = b"\xc0\x0c" if owner == qname else lab.encode_name(owner)
    return own + struct.pack("!HHIH", rtype, 1, ttl, len(rdata)) + rdata


def load_bad_zones(conf_path):
    """{origin: (mode, {owner: [(type, ttl, rdata)]}, empty non-terminals, SOA rdata, negative
    TTL)} from the JSON write_topology wrote."""
    zones = {}
    for origin, z in json.load(open(conf_path)).items():
        recs = collections.defaultdict(list)
        for owner, ip in z["ns"]:
            recs[origin].append((lab.T_NS, DELEG_TTL, lab.encode_name(owner)))
            recs[owner].append((lab.T_A, DELEG_TTL, socket.inet_aton(ip)))
        for owner, ip in z["a"].items():
            recs[owner].append((lab.T_A, z["ttl"], socket.inet_aton(ip)))
        soa = (lab.encode_name(z["ns"][0][0]) + lab.encode_name("hostmaster." + origin)
               + struct.pack("!IIIII", 1, 3600, 600, 86400, z["ttl"]))
        recs[origin].append((lab.T_SOA, DELEG_TTL, soa))
        ents = set()
        for owner in list(recs):
            labels = owner.split(".")
            for k in range(1, len(labels)):
                parent = ".".join(labels[k:])
                if len(parent) <= len(origin):
                    break
                if parent not in recs:
                    ents.add(parent)
        zones[origin] = (z["mode"], dict(recs), ents, soa, z["ttl"])
    return zones


def auth_server(conf_path):
    """Serves the zones of conf_path (UDP, BAD_IPS port 53) until killed."""
    zones = load_bad_zones(conf_path)
    counts = collections.Counter()

    def dump(*_):
        with open(conf_path + ".counts", "w") as f:
            json.dump(counts, f)
    signal.signal(signal.SIGUSR1, dump)
    socks = []
    for ip in BAD_IPS:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((ip, PORT))
        socks.append(s)
    while True:
        for s in select.select(socks, [], [])[0]:
            msg, peer = s.recvfrom(4096)
            try:
                out = bad_answer(zones, msg, counts)
            except (ValueError, IndexError, struct.error):
                continue
            if out:
                s.sendto(out, peer)


def bad_answer(zones, msg, counts=None):
    """The answer to msg (None: no answer); counts, if given, tallies the questions: `ent`
    (minimised, answered badly) and `full`."""
    qid, flags, qd, _an, _ns, ar = struct.unpack("!HHHHHH", msg[:12])
    if flags & 0x8000 or qd != 1:
        return None
    qname, off = lab._read_name(msg, 12)
    qtype = struct.unpack("!H", msg[off:off + 2])[0]
    question = msg[12:off + 4]
    zone = next((z for z in (qname.split(".", k)[-1] for k in range(qname.count(".") + 1))
                 if z in zones), None)
    aa, rcode, answer, authority = True, 0, [], []
    if zone is None:
        aa, rcode = False, 5
    else:
        mode, recs, ents, soa, neg_ttl = zones[zone]
        soa_rr = _rr(zone, qname, lab.T_SOA, neg_ttl, soa)
        if counts is not None:
            counts["ent" if qname in ents else "full"] += 1
            counts["ent_" + mode] += qname in ents
        if qname in ents:  # what a minimised query asks: the misbehaviour
            if mode == "noaa":
                aa = False
            elif mode == "refused":
                aa, rcode = False, 5
            else:
                rcode, authority = 3, [soa_rr]
        elif qname in recs:
            answer = [_rr(qname, qname, t, ttl, rd) for t, ttl, rd in recs[qname] if t == qtype]
            if not answer:
                authority = [soa_rr]
        else:
            rcode, authority = 3, [soa_rr]
    opt = b"\x00" + struct.pack("!HHIH", 41, 1232, 0, 0) if ar else b""
    out_flags = 0x8000 | (flags & 0x0100) | (0x0400 if aa else 0) | rcode
    return (struct.pack("!HHHHHH", qid, out_flags, 1, len(answer), len(authority), 1 if opt else 0)
            + question + b"".join(answer) + b"".join(authority) + opt)


# ---- resolvers --------------------------------------------------------------------------

def shardns_cmd(bin_, d):
    return ["taskset", "-c", str(CORE_RESOLVER), bin_, "serve", "-c", os.path.join(d, "resolver.toml"),
            "--listen", f"{RES_IP}:{PORT}", "--recursion", "--allow-loopback-upstreams",
            "--no-validation", "--root-hints", os.path.join(d, "root.hints"), "--workers", "1",
            "--control", os.path.join(d, "resolver.ctl"), "--log-level", "warn"]


def unbound_cmd(d, client_timeout):
    ud = os.path.join(d, "unbound")
    os.makedirs(ud, exist_ok=True)
    conf = os.path.join(ud, "unbound.conf")
    with open(conf, "w") as f:
        f.write(lab.unbound_server(ud, RES_IP, PORT, pidfile=f"{ud}/unbound.pid", extra=f"""    root-hints: "{d}/root.hints"
    module-config: "iterator"
    qname-minimisation: yes
    qname-minimisation-strict: no
    serve-expired: yes
    serve-expired-ttl: 86400
    serve-expired-reply-ttl: 30
    serve-expired-client-timeout: {client_timeout}
    ede: yes
    ede-serve-expired: yes
    rrset-cache-size: 32m
    msg-cache-size: 32m
"""))
    return ["taskset", "-c", str(CORE_RESOLVER), "unbound", "-d", "-c", conf]


# ---- the client -------------------------------------------------------------------------

def _skip_rr(msg, off):
    off = lab._read_name(msg, off)[1]
    return off + 10 + struct.unpack("!H", msg[off + 8:off + 10])[0]


def parse(msg):
    """(id, rcode, qname, frozenset of (owner, type, value) in the answer, EDE info codes)."""
    qid, rcode, qname, ans = lab.parse_response(msg)
    _q, _f, qd, an, ns, ar = struct.unpack("!HHHHHH", msg[:12])
    off = 12
    for _ in range(qd):
        off = lab._read_name(msg, off)[1] + 4
    for _ in range(an + ns):
        off = _skip_rr(msg, off)
    ede = []
    for _ in range(ar):
        start = lab._read_name(msg, off)[1]
        rtype, _c, _t, rdlen = struct.unpack("!HHIH", msg[start:start + 10])
        if rtype == 41:
            o, end = start + 10, start + 10 + rdlen
            while o + 4 <= end:
                code, olen = struct.unpack("!HH", msg[o:o + 4])
                if code == 15 and olen >= 2:
                    ede.append(struct.unpack("!H", msg[o + 4:o + 6])[0])
                o += 4 + olen
        off = start + 10 + rdlen
    return qid, rcode, qname, frozenset(ans), ede


def ask(names, concurrency, timeout=3.0, limit=60.0, rounds=1, max_s=None, expect=None, ede=None):
    """Sends names[i % len] for i < rounds*len(names) (stopping after max_s s if given) from
    `concurrency` closed-loop streams over one UDP socket, without re-sending (an answer
    missing after `timeout` s is counted lost). With `expect`, every answer is checked
    against it (rcode and answer RRset, and with `ede` that EDE code). Returns ({index of
    name: (rcode, answer set, EDE codes)} of the last answer per name, answered count, lost
    count, seconds, count of answers that failed the check)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind((CLIENT_IP, 0))
    s.connect((RES_IP, PORT))
    s.setblocking(False)
    # EDNS (no DO) so that an EDE option has somewhere to go.
    wires = [lab.query(0, n) for n in names]
    wires = [w[:11] + b"\x01" + w[12:] + b"\x00" + struct.pack("!HHIH", 41, 1232, 0, 0)
                 for w in wires]
    total = rounds * len(names)
    inflight = {}  # qid -> (index, deadline)
    fifo = collections.deque()
    results, answered, lost, nxt, failed = {}, 0, 0, 0, 0
    t0 = time.monotonic()
    end = t0 + (max_s if max_s is not None else limit)
    free = collections.deque(range(min(concurrency, 65535)))

    def send(i, qid):
        inflight[qid] = (i % len(names), time.monotonic() + timeout)
        fifo.append(qid)
        try:
            s.send(struct.pack("!H", qid) + wires[i % len(names)][2:])
        except BlockingIOError:
            pass

    ep = select.epoll()
    ep.register(s.fileno(), select.EPOLLIN)
    last = t0
    while time.monotonic() < end:
        while free and nxt < total:
            send(nxt, free.popleft())
            nxt += 1
        if not inflight:
            break
        if ep.poll(0.05):
            while True:
                try:
                    msg = s.recv(4096)
                except BlockingIOError:
                    break
                try:
                    qid, rcode, qname, ans, codes = parse(msg)
                except ValueError:
                    continue
                slot = inflight.pop(qid, None)
                if slot is None or names[slot[0]] != qname:
                    continue
                results[slot[0]] = (rcode, ans, codes)
                answered += 1
                if expect is not None and ((rcode, ans) != expect[qname]
                                           or (ede is not None and ede not in codes)):
                    failed += 1
                last = time.monotonic()
                if nxt < total and last < end:
                    send(nxt, qid)
                    nxt += 1
                else:
                    free.append(qid)
        now = time.monotonic()
        while fifo and (fifo[0] not in inflight or inflight[fifo[0]][1] <= now):
            qid = fifo.popleft()
            if qid in inflight and inflight[qid][1] <= now:
                del inflight[qid]
                lost += 1
                free.append(qid)
    lost += len(inflight)
    ep.close()
    s.close()
    return results, answered, lost, max(last - t0, 1e-6), failed


def check(names, expect, results, ede=None):
    """Names whose answer is missing or differs from the zone data (rcode, answer RRset; with
    `ede`, that EDE code too): [(name, got)]."""
    bad = []
    for i, n in enumerate(names):
        got = results.get(i)
        if got is None or (got[0], got[1]) != expect[n] or (ede is not None and ede not in got[2]):
            bad.append((n, got))
    return bad


# ---- runs -------------------------------------------------------------------------------

class Lab:
    """The authoritative servers of one topology, started and killed by PID."""

    def __init__(self, bin_, work, confs, procs):
        self.bin, self.work, self.confs, self.procs, self.p = bin_, work, confs, procs, {}

    def start(self, names):
        for n in ("root", "tld", "sld"):
            self.p[n] = self.procs.start(n, [self.bin, "serve", "-c", self.confs[n], "--log-level", "warn"])
        self.p["bad"] = self.procs.start("bad", [sys.executable, os.path.abspath(__file__),
                                                 "--auth-server", self.confs["bad"]])
        good = next(n for n in names if not n.startswith("nx.") and bad_mode(int(n.split(".")[2][4:])) is None)
        bad = next(n for n in names if not n.startswith("nx.") and bad_mode(int(n.split(".")[2][4:])))
        probes = {"root": (ROOT_IP, "tld0."), "tld": (TLD_IPS[0], zone_name(0)),
                  "sld": (SLD_IPS[0], good), "bad": (BAD_IPS[0], bad)}
        for n, (ip, q) in probes.items():
            self.procs.wait_ready(n, self.p[n], lambda: lab.probe(ip, PORT, q) in ("NOERROR", "NXDOMAIN"),
                                  timeout=60)

    def kill(self):
        """SIGKILL, by PID: the servers vanish as a crash would leave them."""
        for n, p in self.p.items():
            p.kill()
            p.wait(timeout=10)
            self.procs.stop(p)
        self.p = {}

    def bad_queries(self):
        """{'ent': minimised questions answered badly, 'full': the others} so far, from the
        Python server (SIGUSR1 makes it write them)."""
        path = self.confs["bad"] + ".counts"
        if os.path.exists(path):
            os.unlink(path)
        self.p["bad"].send_signal(signal.SIGUSR1)
        for _ in range(100):
            time.sleep(0.02)
            try:
                with open(path) as f:
                    return json.load(f)
            except (OSError, ValueError):
                continue
        return {}

    def queries(self):
        """Queries the shardns authoritative servers counted so far (the Python one aside)."""
        return sum(lab.family_sum(lab.shardns_stats(self.bin, os.path.join(self.work, f"{n}.ctl")),
                                  "shardns_queries_total") for n in ("root", "tld", "sld"))


def cpu_s(pids):
    """CPU seconds of pids' threads so far, in nanoseconds from /proc/PID/task/*/schedstat
    (/proc/PID/stat's ticks are 10 ms: too coarse for a pass of a few seconds)."""
    total = 0
    for pid in pids:
        try:
            for t in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                    total += int(f.read().split()[0])
        except (OSError, ValueError):
            continue
    return total / 1e9


def start_resolver(kind, bin_, work, procs, name, client_timeout=0):
    if not lab.port_free(RES_IP, PORT):
        raise RuntimeError(f"{RES_IP}:{PORT} is in use (a leftover resolver?)")
    cmd = shardns_cmd(bin_, work) if kind == "shardns" else unbound_cmd(work, client_timeout)
    p = procs.start(name, cmd)
    procs.wait_ready(name, p, lambda: lab.probe(RES_IP, PORT, "probe.invalid.") is not None)
    time.sleep(0.3)
    return p, lab.children(p.pid)


def run_fill(kind, bin_, work, procs, auth, names, expect, args, rnd):
    name = f"{kind}-r{rnd}"
    p, pids = start_resolver(kind, bin_, work, procs, name)
    try:
        q0, b0, cpu0 = auth.queries(), auth.bad_queries(), cpu_s(pids)
        res, answered, lost, wall, _f = ask(names, args.concurrency, limit=120.0)
        cpu = cpu_s(pids) - cpu0
        up, b1 = auth.queries() - q0, auth.bad_queries()
        if p.poll() is not None:
            raise RuntimeError(f"{name} exited during the run:\n{procs.log(name)[-2000:]}")
        wrong = check(names, expect, res)
        rcodes = collections.Counter(lab.RCODES.get(r[0], str(r[0])) for r in res.values())
        return {"resolver": kind, "round": rnd, "wall_s": wall, "cpu_s": cpu, "answered": answered,
                "lost": lost, "wrong": len(wrong), "wrong_sample": [(n, repr(g)) for n, g in wrong[:5]],
                "rcodes": dict(rcodes), "upstream_shardns_auth": int(up),
                "bad_ent": b1.get("ent", 0) - b0.get("ent", 0), "bad_full": b1.get("full", 0) - b0.get("full", 0),
                "bad_ent_by_mode": {m: b1.get("ent_" + m, 0) - b0.get("ent_" + m, 0) for m in MODES},
                "answers": {names[i]: [r[0], sorted(map(list, r[1]))] for i, r in res.items()}}
    finally:
        procs.stop(p)


def rate(kind, pids, names, expect, args, ede, perf_name):
    """Answers per resolver CPU-second over `--measure` s of cycling through names; with
    --perf-dir, the pass recorded by perf into perf_name.data there."""
    perf = None
    if args.perf_dir:
        os.makedirs(args.perf_dir, exist_ok=True)
        perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-g", "-p", str(pids[0]), "-o",
                                 os.path.join(args.perf_dir, perf_name + ".data")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)
    cpu0 = cpu_s(pids)
    res, answered, lost, wall, failed = ask(names, args.concurrency, timeout=2.0, rounds=1000,
                                            max_s=args.measure, expect=expect, ede=ede)
    cpu = cpu_s(pids) - cpu0
    if perf:
        perf.send_signal(signal.SIGINT)
        perf.wait(timeout=60)
    wrong = check(names, expect, res, ede)
    return {"answers": answered, "lost": lost, "cpu_s": cpu, "wall_s": wall,
            "per_cpu_s": answered / cpu if cpu else float("nan"), "qps": answered / wall,
            "failed": failed, "wrong_sample": [(n, repr(g)) for n, g in wrong[:3]]}


def run_stale(kind, bin_, work, procs, auth, names, expect, args, rnd):
    name = f"{kind}-stale-r{rnd}"
    auth.start(names)
    p, pids = start_resolver(kind, bin_, work, procs, name, args.unbound_client_timeout)
    try:
        t0 = time.monotonic()
        res, answered, lost, wall, _f = ask(names, args.concurrency, limit=60.0)
        filled = time.monotonic()
        fill_wrong = check(names, expect, res)
        positive = [n for n in names if expect[n][0] == 0]
        if filled - t0 + args.measure + 1 > args.ttl:
            raise RuntimeError(f"fill took {filled - t0:.1f} s: raise --ttl above fill + --measure + 1 s")
        hit = rate(kind, pids, positive, expect, args, None, f"{name}-hit")
        if time.monotonic() > t0 + args.ttl:
            raise RuntimeError("the cache-hit pass ran past the TTL")
        auth.kill()
        time.sleep(max(0.0, filled + args.ttl + 1.0 - time.monotonic()))
        # The first question for each expired name starts a resolution that fails (or
        # meets the client-response timer): many streams, so the waits overlap.
        first, f_answered, f_lost, f_wall, _f = ask(positive, 1000, timeout=5.0, limit=60.0)
        first_ede = sum(1 for r in first.values() if EDE_STALE in r[2])
        stale = rate(kind, pids, positive, expect, args, EDE_STALE, f"{name}-stale")
        if p.poll() is not None:
            raise RuntimeError(f"{name} exited during the run:\n{procs.log(name)[-2000:]}")
        out = {"resolver": kind, "round": rnd, "fill_s": wall, "fill_wrong": len(fill_wrong),
               "hit": hit, "first_pass": {"answered": f_answered, "lost": f_lost, "wall_s": f_wall,
                                          "with_ede3": first_ede},
               "stale": stale, "ratio": stale["per_cpu_s"] / hit["per_cpu_s"]}
        if kind == "shardns":
            st = lab.shardns_stats(bin_, os.path.join(work, "resolver.ctl"))
            out["cache_hits"] = int(lab.family_sum(st, "shardns_resolver_cache_hits_total"))
            out["cache_misses"] = int(lab.family_sum(st, "shardns_resolver_cache_misses_total"))
        return out
    finally:
        procs.stop(p)
        if auth.p:
            auth.kill()


# ---- report -----------------------------------------------------------------------------

def med(xs):
    return statistics.median(xs) if xs else float("nan")


def runs(xs, fmt):
    return "(" + " ".join(fmt.format(x) for x in xs) + ")"


def report_fill(results, kinds, names, args, cmdline):
    bad_zones = sum(1 for i in range(args.zones) if bad_mode(i))
    lines = [
        f"{args.zones} zones under {TLDS} TLDs, {bad_zones} of them ({', '.join(MODES)} in turn) on a "
        f"server that answers minimised queries (empty non-terminals) badly; {len(names):,} names "
        f"({args.zones} of them NXDOMAIN), sent once each from {args.concurrency} closed-loop streams; "
        f"{args.rounds} interleaved rounds ({' '.join(kinds)}), a fresh resolver each run, medians "
        "(each run in brackets). Checked: every answer's rcode and answer RRset against the zone data.",
        "", f"Command: `{cmdline}`", "",
        "| resolver | fill wall s | resolver CPU s | CPU µs per name | answers right | lost | "
        "queries to the well-behaved servers | to the bad one: minimised (answered badly) + full |",
        "|---|---|---|---|---|---|---|---|"]
    for k in kinds:
        rs = results[k]
        if not rs:
            continue
        lines.append(
            f"| {k} | {med([x['wall_s'] for x in rs]):.2f} {runs([x['wall_s'] for x in rs], '{:.2f}')} | "
            f"{med([x['cpu_s'] for x in rs]):.2f} {runs([x['cpu_s'] for x in rs], '{:.2f}')} | "
            f"{med([1e6 * x['cpu_s'] / len(names) for x in rs]):.0f} | "
            f"{med([len(names) - x['wrong'] for x in rs]):,.0f} / {len(names):,} | {med([x['lost'] for x in rs]):.0f} | "
            f"{med([x['upstream_shardns_auth'] for x in rs]):,.0f} | "
            f"{med([x['bad_ent'] for x in rs]):,.0f} + {med([x['bad_full'] for x in rs]):,.0f} |")
    if len(kinds) == 2 and all(results[k] for k in kinds):
        a, b = kinds
        n = min(len(results[a]), len(results[b]))
        r = lambda f: med([f(results[a][i]) / f(results[b][i]) for i in range(n)])
        lines += ["", f"Median of the per-round ratios {a} / {b}: wall time "
                  f"{r(lambda x: x['wall_s']):.2f}, resolver CPU {r(lambda x: x['cpu_s']):.2f}."]
    return "\n".join(lines)


def report_stale(results, kinds, positive, args, cmdline):
    lines = [
        f"{positive:,} cached names (A, TTL {args.ttl} s), the same topology; per run: fill, cache hits "
        f"for {args.measure} s, authoritative servers killed (SIGKILL), wait past the TTL, each name "
        f"once, then stale answers for {args.measure} s; {args.concurrency} closed-loop streams; "
        f"{args.rounds} interleaved rounds ({' '.join(kinds)}), medians (each run in brackets). Rates are "
        "answers per resolver CPU-second; every stale answer is checked for the right address and EDE 3.",
        "", f"Command: `{cmdline}`", "",
        "| resolver | cache hits / CPU s | stale answers / CPU s | stale / hit | stale answers without "
        "EDE 3 or wrong | first pass after the kill: answered, with EDE 3, s | q/s hit → stale (client-bound) |",
        "|---|---|---|---|---|---|---|"]
    for k in kinds:
        rs = results[k]
        if not rs:
            continue
        hit = [x["hit"]["per_cpu_s"] for x in rs]
        st = [x["stale"]["per_cpu_s"] for x in rs]
        lines.append(
            f"| {k} | {med(hit):,.0f} {runs(hit, '{:,.0f}')} | {med(st):,.0f} {runs(st, '{:,.0f}')} | "
            f"{med([x['ratio'] for x in rs]):.2f} {runs([x['ratio'] for x in rs], '{:.2f}')} | "
            f"{med([x['stale']['failed'] for x in rs]):,.0f} of {med([x['stale']['answers'] for x in rs]):,.0f} | "
            f"{med([x['first_pass']['answered'] for x in rs]):,.0f}, "
            f"{med([x['first_pass']['with_ede3'] for x in rs]):,.0f}, "
            f"{med([x['first_pass']['wall_s'] for x in rs]):.2f} | "
            f"{med([x['hit']['qps'] for x in rs]):,.0f} → {med([x['stale']['qps'] for x in rs]):,.0f} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--auth-server", help=argparse.SUPPRESS)
    ap.add_argument("--mode", choices=("fill", "stale"), default="fill")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--resolvers", default="shardns,unbound")
    ap.add_argument("--zones", type=int, default=300)
    ap.add_argument("--names", type=int, default=10, help="names per zone")
    ap.add_argument("--concurrency", type=int, default=100, help="closed-loop client streams")
    ap.add_argument("--ttl", type=int, default=3600, help="TTL of the answers (stale mode: default 8)")
    ap.add_argument("--measure", type=float, default=3.0, help="seconds of each rate measurement (stale)")
    ap.add_argument("--unbound-client-timeout", type=int, default=0,
                    help="Unbound's serve-expired-client-timeout in ms (stale mode; 0, its default: "
                    "expired data at once; shardns's serve_stale_client_timeout_ms is 1800)")
    ap.add_argument("--markdown", help="also write the summary to this file")
    ap.add_argument("--json", help="write every run's figures to this file")
    ap.add_argument("--perf-dir", help="stale mode: record each rate pass with perf (cpu-clock, call "
                    "graphs) into this directory; perturbs the figures, for profiles only")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    if args.auth_server:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        auth_server(args.auth_server)
        return
    if args.mode == "stale" and "--ttl" not in sys.argv:
        args.ttl = 8
    kinds = [k for k in args.resolvers.split(",") if k]
    if any(k not in ("shardns", "unbound") for k in kinds):
        ap.error("--resolvers: shardns and/or unbound")
    if "unbound" in kinds and not shutil.which("unbound"):
        sys.exit("unbound is not installed")
    if not (1 <= args.zones <= 3000 and 1 <= args.names <= 100 and 1 <= args.concurrency <= 5000
            and 1 <= args.rounds <= 20 and 0.5 <= args.measure <= 30 and 2 <= args.ttl):
        ap.error("out of range: --zones 1..3000, --names 1..100, --concurrency 1..5000, --rounds 1..20, "
                 "--measure 0.5..30, --ttl >= 2")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    bin_ = lab.build_shardns()
    busy = [ip for ip in [ROOT_IP, RES_IP, CLIENT_IP] + TLD_IPS + SLD_IPS + BAD_IPS if not lab.port_free(ip, PORT)]
    if busy:
        sys.exit(f"port {PORT} is already in use on {', '.join(busy)}")
    os.sched_setaffinity(0, {CORE_LOAD})
    work = tempfile.mkdtemp(prefix="shardns-coldfill-bad-")
    names, expect, confs = write_topology(work, args.zones, args.names, args.ttl)
    procs = lab.Procs(work)
    auth = Lab(bin_, work, confs, procs)
    results = {k: [] for k in kinds}
    failed = False
    try:
        if args.mode == "fill":
            auth.start(names)
        for r in range(args.rounds):
            for k in kinds:
                if args.mode == "fill":
                    x = run_fill(k, bin_, work, procs, auth, names, expect, args, r + 1)
                    print(f"round {r + 1} {k}: {x['answered']:,}/{len(names):,} answered, {x['wrong']} wrong "
                          f"{x['wrong_sample'][:2]}, {x['lost']} lost, {x['wall_s']:.2f} s, CPU {x['cpu_s']:.2f} s, "
                          f"rcodes {x['rcodes']}, shardns authoritative queries {x['upstream_shardns_auth']:,}, bad server "
                          f"{x['bad_ent']:,} minimised {x['bad_ent_by_mode']} + {x['bad_full']:,} full",
                          file=sys.stderr)
                else:
                    x = run_stale(k, bin_, work, procs, auth, names, expect, args, r + 1)
                    print(f"round {r + 1} {k}: fill {x['fill_s']:.2f} s ({x['fill_wrong']} wrong); hits "
                          f"{x['hit']['per_cpu_s']:,.0f}/CPU s ({x['hit']['answers']:,} in {x['hit']['cpu_s']:.2f} CPU s, "
                          f"{x['hit']['failed']} failed); first pass {x['first_pass']}; stale "
                          f"{x['stale']['per_cpu_s']:,.0f}/CPU s ({x['stale']['answers']:,} in {x['stale']['cpu_s']:.2f} "
                          f"CPU s, {x['stale']['failed']} without EDE 3 or wrong {x['stale']['wrong_sample'][:1]}); "
                          f"ratio {x['ratio']:.2f}", file=sys.stderr)
                results[k].append(x)
    except Exception as e:
        failed = True
        print(f"coldfill_bad: {e}\n(work directory kept: {work})", file=sys.stderr)
    finally:
        procs.stop_all()
        if not failed and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.mode == "fill" and len(kinds) == 2 and all(results[k] for k in kinds):
        # Both resolvers against each other, name by name (the last round of each).
        a, b = (results[k][-1]["answers"] for k in kinds)
        differ = [n for n in names if a.get(n) != b.get(n)]
        print(f"{kinds[0]} and {kinds[1]} differ on {len(differ)} names {differ[:5]}", file=sys.stderr)
        failed |= bool(differ)
    if not all(results[k] for k in kinds):
        sys.exit(1)
    cmdline = shlex.join(["bench/coldfill_bad.py"] + sys.argv[1:])
    if args.mode == "fill":
        text = report_fill(results, kinds, names, args, cmdline)
        short = [f"{k} round {x['round']}" for k in kinds for x in results[k] if x["wrong"]]
    else:
        positive = sum(1 for n in names if expect[n][0] == 0)
        text = report_stale(results, kinds, positive, args, cmdline)
        short = [f"{k} round {x['round']}" for k in kinds for x in results[k]
                 if x["fill_wrong"] or x["stale"]["failed"] or x["hit"]["failed"]]
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    if short:
        print(f"coldfill_bad: wrong or missing answers in: {', '.join(short)}", file=sys.stderr)
    if failed or short:
        sys.exit(1)


if __name__ == "__main__":
    main()
