#!/usr/bin/env python3
"""Cold-cache fill: how long a resolver with an empty cache takes to
resolve 10,000 distinct names spread over 1,000 zones, how many queries it sends upstream, the
CPU it spends, and its memory per cached record; shardns against Unbound, same topology.

Topology (loopback, every server on port 53, since Unbound sends to port 53 for every address
learned from a referral):
  127.0.0.70        shardns root: zone `.`, delegating tld0..tld9 to ns1/ns2.nic.tldK (glue)
  127.0.0.71, .72   shardns TLD server: zones tld0..tld9, each delegating 100 of the 1,000
                    second-level zones zoneNNNN.tldK to ns1/ns2.zoneNNNN.tldK (glue)
  127.0.0.73-.82    shardns SLD server: the 1,000 zones, 10 names n0..n9 each (A records;
                    n9 in every tenth zone is an in-zone CNAME to n0), each zone's two name
                    servers on two of these ten addresses
  127.0.0.90        the resolver under test, one worker/thread, pinned to core 0
  127.0.0.91        this script's client, pinned to core 1 (with the three authoritative
                    servers, one worker each)
The three authoritative levels are separate processes on purpose: one shardns process serving
`.`, `tld0.` and `zone0000.tld0.` answers every question from the deepest zone it holds, so a
resolver would get authoritative answers where the Internet gives it referrals.

Per run: start the resolver (shardns `serve --recursion --root-hints`, or Unbound 1.x with
num-threads 1, iterator only, no trust anchor, the same hints as `root-hints`), both with
QNAME minimisation on; wait until it answers a non-recursive probe (which sends nothing
upstream); read its RSS and CPU and the authoritative servers' query counters; send the
10,000 names exactly once, in a shuffled order, from CONCURRENCY closed-loop streams (each
stream sends its next name when its answer arrives); read everything again. Every answer is
checked: NOERROR with the expected address. Runs are interleaved A B A B (a fresh resolver
process each run); the table gives medians and the per-round ratios.

`--signed`: the same hierarchy signed before the run (`shardns sign`, one ECDSA P-256 key per
zone, NSEC: the 1,000 zones, then the TLDs with their DS records, then the root with the TLDs'),
both resolvers validating from the root's DS as trust anchor (shardns `--trust-anchor`, Unbound
`validator iterator`), every query with DO, and every answer must carry AD as well.
Unbound is fenced from every address but 127.0.0.0/8 (`do-not-query-address`).

Usage:
  bench/coldfill.py [--rounds 3] [--resolvers shardns,unbound] [--concurrency 100]
      [--signed] [--markdown FILE] [--json FILE] [--perf-dir DIR [--perf-args ARGS]] [--keep]
Needs: unbound (Debian package), a release build of shardns (built here), root (port 53);
perf for --perf-dir only.
"""

import argparse
import base64
import collections
import hashlib
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

ROOT_IP = "127.0.0.70"
TLD_IPS = ["127.0.0.71", "127.0.0.72"]
SLD_IPS = [f"127.0.0.{i}" for i in range(73, 83)]
RES_IP = "127.0.0.90"
CLIENT_IP = "127.0.0.91"
PORT = 53
TLDS = 10
ZONES = 1000
NAMES_PER_ZONE = 10
CORE_RESOLVER, CORE_LOAD = 0, 1


# ---- topology ---------------------------------------------------------------------------

def zone_name(i):
    return f"zone{i:04d}.tld{i % TLDS}."


def sld_servers(i):
    """The two addresses serving zone i."""
    k = i // TLDS
    return SLD_IPS[k % len(SLD_IPS)], SLD_IPS[(k + 1) % len(SLD_IPS)]


def address(i, j):
    return f"10.{i // 100}.{i % 100}.{j}"


def is_cname(i, j):
    return j == 9 and i % 10 == 5


def soa(origin, ns):
    mbox = "hostmaster." + ("" if origin == "." else origin)
    return f"@ 86400 IN SOA {ns} {mbox} 1 3600 600 86400 300\n"


def ds_records(signed_file, apex):
    """DS records (SHA-256) of the SEP keys (flags 257) in a signed zone file written by
    `shardns sign` (one record a line, absolute owners): RFC 4034 §5.1.4, key tag §B."""
    out = []
    for line in open(signed_file):
        f = line.split()
        if len(f) < 8 or f[3] != "DNSKEY" or f[0].lower() != apex or f[4] != "257":
            continue
        flags, proto, alg = int(f[4]), int(f[5]), int(f[6])
        rdata = struct.pack("!HBB", flags, proto, alg) + base64.b64decode("".join(f[7:]))
        tag = 0
        for i, b in enumerate(rdata):
            tag += b if i & 1 else b << 8
        tag = (tag + ((tag >> 16) & 0xFFFF)) & 0xFFFF
        digest = hashlib.sha256(lab.encode_name(apex) + rdata).hexdigest().upper()
        out.append(f"{apex} 86400 IN DS {tag} {alg} 2 {digest}\n")
    if not out:
        raise RuntimeError(f"{signed_file}: no DNSKEY with flags 257 at {apex}")
    return out


def sign_hierarchy(bin_, d, root_file, tld_files, sld_files):
    """Signs the 1,000 zones, then the TLDs with their children's DS added, then the root
    with the TLDs' DS, each with `shardns sign` (one ECDSA P-256 CSK per zone, NSEC, two
    signing processes at a time); writes the root's DS to d/root.ds, the trust anchor.
    Returns the signed files: (root, [(origin, path)] of the TLDs, of the SLDs)."""
    def sign_all(zones):
        out, running = [], []
        for origin, path in zones:
            signed = path + ".signed"
            keys = os.path.join(d, "keys", origin.rstrip(".") or "root")
            os.makedirs(keys, mode=0o700, exist_ok=True)
            running.append(subprocess.Popen(
                [bin_, "sign", "--key-dir", keys,
                 "--output", signed, "--threads", "1", "--signature-validity", "30d", origin, path],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
            out.append((origin, signed))
            if len(running) >= 2:
                wait(running.pop(0))
        for p in running:
            wait(p)
        return out

    def wait(p):
        _, err = p.communicate(timeout=600)
        if p.returncode:
            raise RuntimeError(f"shardns sign: {err.decode(errors='replace')}")

    t0 = time.monotonic()
    slds = sign_all(sld_files)
    by_tld = collections.defaultdict(list)
    for origin, signed in slds:
        by_tld[origin.split(".", 1)[1]] += ds_records(signed, origin)
    for origin, path in tld_files:
        with open(path, "a") as f:
            f.writelines(by_tld[origin])
    tlds = sign_all(tld_files)
    with open(root_file, "a") as f:
        for origin, signed in tlds:
            f.writelines(ds_records(signed, origin))
    [(_, root)] = sign_all([(".", root_file)])
    with open(os.path.join(d, "root.ds"), "w") as f:
        f.writelines(ds_records(root, "."))
    print(f"signed {len(slds) + len(tlds) + 1} zones in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    return root, tlds, slds


def write_topology(d, signed=False, bin_=None):
    """Zone files, the authoritative servers' configs, root hints and the query list; returns
    (names, expected address per name, counts of what a resolver caches). `signed`: every zone
    signed (sign_hierarchy), the trust anchor in d/root.ds."""
    zd = os.path.join(d, "zones")
    os.makedirs(zd, exist_ok=True)

    def w(name, text):
        with open(os.path.join(zd, name), "w") as f:
            f.write(text)
        return os.path.join(zd, name)

    root = ["$ORIGIN .\n$TTL 86400\n", soa(".", "a.root-servers.net."),
            "@ IN NS a.root-servers.net.\n", f"a.root-servers.net. IN A {ROOT_IP}\n"]
    for t in range(TLDS):
        for n, ip in zip(("ns1", "ns2"), TLD_IPS):
            root.append(f"tld{t}. IN NS {n}.nic.tld{t}.\n{n}.nic.tld{t}. IN A {ip}\n")
    root_file = w("root.zone", "".join(root))

    tld_files = []
    for t in range(TLDS):
        origin = f"tld{t}."
        z = [f"$ORIGIN {origin}\n$TTL 86400\n", soa(origin, f"ns1.nic.{origin}")]
        for n, ip in zip(("ns1", "ns2"), TLD_IPS):
            z.append(f"@ IN NS {n}.nic\n{n}.nic IN A {ip}\n")
        for i in range(t, ZONES, TLDS):
            label = zone_name(i).split(".")[0]
            for n, ip in zip(("ns1", "ns2"), sld_servers(i)):
                z.append(f"{label} IN NS {n}.{label}\n{n}.{label} IN A {ip}\n")
        tld_files.append((origin, w(f"tld{t}.zone", "".join(z))))

    sld_files, names, expect = [], [], {}
    for i in range(ZONES):
        origin = zone_name(i)
        z = [f"$ORIGIN {origin}\n$TTL 86400\n", soa(origin, f"ns1.{origin}")]
        for n, ip in zip(("ns1", "ns2"), sld_servers(i)):
            z.append(f"@ IN NS {n}\n{n} IN A {ip}\n")
        for j in range(NAMES_PER_ZONE):
            if is_cname(i, j):
                z.append(f"n{j} 3600 IN CNAME n0\n")
                expect[f"n{j}.{origin}"] = address(i, 0)
            else:
                z.append(f"n{j} 3600 IN A {address(i, j)}\n")
                expect[f"n{j}.{origin}"] = address(i, j)
            names.append(f"n{j}.{origin}")
        sld_files.append((origin, w(f"{origin}zone", "".join(z))))
    if signed:
        root_file, tld_files, sld_files = sign_hierarchy(bin_, d, root_file, tld_files, sld_files)

    def conf(name, listen, zones):
        return lab.shardns_auth_conf(d, name, listen, PORT, zones)

    confs = {"root": conf("root", [ROOT_IP], [(".", root_file)]),
             "tld": conf("tld", TLD_IPS, tld_files),
             "sld": conf("sld", SLD_IPS, sld_files)}
    with open(os.path.join(d, "root.hints"), "w") as f:
        f.write(f". 3600000 NS a.root-servers.net.\na.root-servers.net. 3600000 A {ROOT_IP}\n")
    random.Random(20240501).shuffle(names)
    cnames = sum(1 for i in range(ZONES) for j in range(NAMES_PER_ZONE) if is_cname(i, j))
    # What a resolver must hold afterwards, counted as RRsets (one owner, one type): every
    # answer (CNAME names add the CNAME; their target's A is itself one of the names), and
    # every delegation on the way: NS + two glue A per SLD and per TLD, the root's NS + A.
    counts = {"answer_rrsets": len(names), "delegation_rrsets": ZONES * 3 + TLDS * 3 + 2,
              "cnames": cnames}
    if signed:
        # And a DS and a DNSKEY set for each zone and TLD, the root's DNSKEY set (every set's
        # RRSIGs are held with it).
        counts["delegation_rrsets"] += 2 * (ZONES + TLDS) + 1
    counts["rrsets"] = counts["answer_rrsets"] + counts["delegation_rrsets"]
    return names, expect, confs, counts


# ---- resolvers --------------------------------------------------------------------------

def shardns_resolver_cmd(bin_, d, signed=False):
    # Signed: validating from the root's DS, as Unbound does.
    validation = ["--trust-anchor", os.path.join(d, "root.ds")] if signed else ["--no-validation"]
    return ["taskset", "-c", str(CORE_RESOLVER), bin_, "serve", "--listen", f"{RES_IP}:{PORT}",
            "--recursion", "--local-zone", "test. nodefault", "--allow-loopback-upstreams"] + validation + ["--root-hints", os.path.join(d, "root.hints"), "--workers", "1",
            "--control", os.path.join(d, "resolver.ctl"), "--log-level", "warn"]


def unbound_resolver_cmd(d, signed=False):
    ud = os.path.join(d, "unbound")
    os.makedirs(ud, exist_ok=True)
    conf = os.path.join(ud, "unbound.conf")
    with open(conf, "w") as f:
        validation = f'    trust-anchor-file: "{d}/root.ds"\n    val-permissive-mode: no\n' if signed else ""
        f.write(lab.unbound_server(ud, RES_IP, PORT, pidfile=f"{ud}/unbound.pid", extra=f"""    root-hints: "{d}/root.hints"
    module-config: "{'validator iterator' if signed else 'iterator'}"
{validation}    qname-minimisation: yes
""") + f"""    # 64 MiB in all, like shardns' default cache_size, so nothing is evicted.
    rrset-cache-size: 32m
    msg-cache-size: 32m
remote-control:
    control-enable: yes
    control-interface: "{ud}/control.sock"
    control-use-cert: no
""")
    return ["taskset", "-c", str(CORE_RESOLVER), "unbound", "-d", "-c", conf], conf


def unbound_cache_counts(conf):
    """(rrsets, messages) in Unbound's cache, from `unbound-control dump_cache`."""
    try:
        r = subprocess.run(["unbound-control", "-c", conf, "dump_cache"], capture_output=True,
                           text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None, None
    rrsets = sum(1 for l in r.stdout.splitlines() if l.startswith(";rrset"))
    msgs = sum(1 for l in r.stdout.splitlines() if l.startswith("msg "))
    return rrsets, msgs


# ---- the client -------------------------------------------------------------------------

def fill(names, expect, concurrency, timeout=3.0, tries=2, limit=120.0, dnssec=False,
         server=(RES_IP, PORT), client=CLIENT_IP):
    """Sends every name once (re-sent once after `timeout` s without an answer) from
    `concurrency` closed-loop streams over one UDP socket; the ID is the name's index.
    `expect` maps each name to the address its answer must hold (None: any answer counts,
    its rcode tallied). With `dnssec`, every query sets DO and the answers with AD are
    counted (`ad`). Returns the tally."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind((client, 0))
    s.connect(server)
    s.setblocking(False)
    ep = select.epoll()
    ep.register(s.fileno(), select.EPOLLIN)
    wires = [lab.query(i, n, do=dnssec) for i, n in enumerate(names)]
    ad = 0
    sent_at = [0.0] * len(names)
    attempts = [0] * len(names)
    done = [False] * len(names)
    fifo = collections.deque()  # (deadline, index, attempt), in send order
    lat, rcodes, wrong, resent, dups, bad = [], collections.Counter(), [], 0, 0, 0
    next_i, outstanding, answered = 0, 0, 0

    def send(i):
        now = time.monotonic()
        if attempts[i] == 0:
            sent_at[i] = now
        attempts[i] += 1
        fifo.append((now + timeout, i, attempts[i]))
        try:
            s.send(wires[i])
        except BlockingIOError:
            pass  # counted as lost; the timeout re-sends it

    t0 = time.monotonic()
    end = t0 + limit
    last = t0
    while (next_i < len(names) or outstanding) and time.monotonic() < end:
        while outstanding < concurrency and next_i < len(names):
            send(next_i)
            next_i += 1
            outstanding += 1
        now = time.monotonic()
        wait = max(0.0, min(fifo[0][0] - now, end - now)) if fifo else 0.1
        if ep.poll(wait):
            while True:
                try:
                    msg = s.recv(4096)
                except BlockingIOError:
                    break
                now = time.monotonic()
                try:
                    qid, rcode, qname, ans = lab.parse_response(msg)
                except ValueError:
                    bad += 1
                    continue
                if qid >= len(names) or qname != names[qid]:
                    bad += 1
                    continue
                if done[qid]:
                    dups += 1
                    continue
                done[qid] = True
                outstanding -= 1
                answered += 1
                last = now
                lat.append(now - sent_at[qid])
                rcodes[lab.RCODES.get(rcode, str(rcode))] += 1
                ad += lab.authentic_data(msg)
                addrs = [v for (_o, t, v) in ans if t == lab.T_A]
                if expect is not None and (rcode != 0 or expect[names[qid]] not in addrs):
                    wrong.append((names[qid], lab.RCODES.get(rcode, str(rcode)), addrs))
                # The stream's next name goes out in the same turn.
                if next_i < len(names):
                    send(next_i)
                    next_i += 1
                    outstanding += 1
        now = time.monotonic()
        while fifo and fifo[0][0] <= now:
            _d, i, att = fifo.popleft()
            if done[i] or att != attempts[i]:
                continue
            if att < tries:
                resent += 1
                send(i)
            else:
                done[i] = True  # lost for good; a late answer counts as a duplicate
                outstanding -= 1
                rcodes["timeout"] += 1
    ep.close()
    s.close()
    lat.sort()
    pct = lambda p: 1000 * lat[min(len(lat) - 1, int(p * len(lat)))] if lat else None
    return {"names": len(names), "answered": answered, "wall_s": max(last - t0, 1e-6),
            "rcodes": dict(rcodes), "wrong": len(wrong), "wrong_sample": wrong[:5],
            "resent": resent, "duplicates": dups, "bad": bad, "ad": ad,
            "p50_ms": pct(0.5), "p90_ms": pct(0.9), "p99_ms": pct(0.99),
            "max_ms": 1000 * lat[-1] if lat else None}


def dig_check(names, expect, seed, n=5):
    """A second opinion from dig (an independent parser) on a few names, now cached:
    the number whose last `+short` line is the expected address."""
    ok = 0
    for name in random.Random(seed).sample(names, n):
        try:
            r = subprocess.run(["dig", f"@{RES_IP}", "-p", str(PORT), name, "A", "+short", "+time=2",
                                "+tries=1"], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            continue
        lines = r.stdout.split()
        ok += bool(lines) and lines[-1] == expect[name]
    return f"{ok}/{n}"


# ---- one run ----------------------------------------------------------------------------

def auth_counters(bin_, d):
    """{server: stats} of the three authoritative instances."""
    return {n: lab.shardns_stats(bin_, os.path.join(d, f"{n}.ctl")) for n in ("root", "tld", "sld")}


def run_one(kind, bin_, d, procs, auth_procs, names, expect, args, round_no):
    if not lab.port_free(RES_IP, PORT):
        raise RuntimeError(f"{RES_IP}:{PORT} is in use (a leftover resolver?)")
    conf = None
    if kind == "shardns":
        cmd = shardns_resolver_cmd(bin_, d, args.signed)
    else:
        cmd, conf = unbound_resolver_cmd(d, args.signed)
    name = f"{kind}-r{round_no}"
    p = procs.start(name, cmd)
    perf = None
    try:
        # A non-recursive probe: shardns answers REFUSED, Unbound from its (empty) cache;
        # neither sends anything upstream.
        procs.wait_ready(name, p, lambda: lab.probe(RES_IP, PORT, "probe.invalid.") is not None)
        time.sleep(0.3)
        pids = lab.children(p.pid)
        before = auth_counters(bin_, d)
        auth_pids = [q.pid for q in auth_procs]
        rss0, cpu0, sys0 = lab.rss_kib(pids), lab.cpu_ticks(pids), lab.steal_idle()
        auth0, me0 = lab.cpu_ticks(auth_pids), os.times()
        if args.perf_dir:
            os.makedirs(args.perf_dir, exist_ok=True)
            out = os.path.join(args.perf_dir, f"perf-{name}.data")
            perf = subprocess.Popen(["perf", "record"] + shlex.split(args.perf_args) + ["-p", str(p.pid), "-o", out], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        t = fill(names, expect, args.concurrency, dnssec=args.signed)
        cpu1, sys1, rss1 = lab.cpu_ticks(pids), lab.steal_idle(), lab.rss_kib(pids)
        auth1, me1 = lab.cpu_ticks(auth_pids), os.times()
        after = auth_counters(bin_, d)
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait(timeout=60)
            perf = None
        t["dig_check"] = dig_check(names, expect, round_no)
        if p.poll() is not None:
            raise RuntimeError(f"{name} exited during the run:\n{procs.log(name)[-2000:]}")
        up = {n: lab.family_sum(after[n], "shardns_queries_total")
              - lab.family_sum(before[n], "shardns_queries_total") for n in after}
        types = collections.Counter()
        for n in after:
            a = lab.by_label(after[n], "shardns_queries_by_type_total", "type")
            b = lab.by_label(before[n], "shardns_queries_by_type_total", "type")
            for k in a:
                if a[k] - b.get(k, 0):
                    types[k] += int(a[k] - b.get(k, 0))
        t.update({
            "resolver": kind, "round": round_no,
            "upstream": int(sum(up.values())), "upstream_by_server": {k: int(v) for k, v in up.items()},
            "upstream_by_type": dict(types),
            "cpu_s": (cpu1 - cpu0) / lab.CLK_TCK,
            "client_cpu_s": (me1.user - me0.user) + (me1.system - me0.system),
            "auth_cpu_s": (auth1 - auth0) / lab.CLK_TCK,
            "loadavg": os.getloadavg()[0],
            "rss_before_kib": rss0, "rss_after_kib": rss1,
            "cpu0_busy_pct": lab.busy_pct(sys0, sys1, "cpu0"),
            "cpu1_busy_pct": lab.busy_pct(sys0, sys1, "cpu1"),
            "steal_pct": (lab.steal_pct(sys0, sys1, "cpu0") + lab.steal_pct(sys0, sys1, "cpu1")) / 2,
        })
        if kind == "shardns":
            st = lab.shardns_stats(bin_, os.path.join(d, "resolver.ctl"))
            t["self_upstream"] = int(lab.family_sum(st, "shardns_resolver_upstream_queries_total"))
            t["servfails"] = int(lab.family_sum(st, "shardns_resolver_servfails_total"))
        else:
            t["cache_rrsets"], t["cache_msgs"] = unbound_cache_counts(conf)
        return t
    finally:
        if perf and perf.poll() is None:
            perf.send_signal(signal.SIGINT)
            perf.wait(timeout=60)
        procs.stop(p)


# ---- report -----------------------------------------------------------------------------

def report(results, kinds, counts, args, cmdline):
    med = lambda k, f: statistics.median(f(x) for x in results[k]) if results[k] else float("nan")
    per_rec = lambda x: 1024 * (x["rss_after_kib"] - x["rss_before_kib"]) / counts["rrsets"]
    per_name = lambda x: 1024 * (x["rss_after_kib"] - x["rss_before_kib"]) / x["names"]
    if args.signed:
        desc = {"shardns": "shardns `serve --recursion --root-hints --trust-anchor`, 1 worker",
                "unbound": f"Unbound {lab.unbound_version()}, num-threads 1, validator iterator"}
    else:
        desc = {"shardns": "shardns `serve --recursion --root-hints`, 1 worker",
                "unbound": f"Unbound {lab.unbound_version()}, num-threads 1, iterator only"}
    lines = [
        ("Signed hierarchy (ECDSA P-256, NSEC), both resolvers validating from the root's DS, every "
         "query with DO. " if args.signed else "") +
        f"{ZONES:,} zones under {TLDS} TLDs, {counts['answer_rrsets']:,} "
        f"names ({counts['cnames']} of them in-zone CNAMEs), sent once each from {args.concurrency} "
        f"closed-loop streams; {args.rounds} interleaved rounds ({' '.join(kinds)} per round), a fresh "
        f"resolver each run, medians (each run in brackets).",
        "",
        f"Command: `{cmdline}`",
        "",
        "| resolver | wall s | names/s | upstream queries | per name | root / TLD / SLD | resolver CPU s "
        "| CPU µs per name | RSS before → after MiB | bytes per cached RRset | bytes per name | answers OK | "
        "with AD | re-sent | p50 / p99 ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for k in kinds:
        rs = results[k]
        if not rs:
            continue
        runs = lambda f, fmt: "(" + " ".join(fmt.format(f(x)) for x in rs) + ")"
        wall = med(k, lambda x: x["wall_s"])
        lines.append(
            f"| {desc[k]} | {wall:.2f} {runs(lambda x: x['wall_s'], '{:.2f}')} | "
            f"{med(k, lambda x: x['answered'] / x['wall_s']):,.0f} | "
            f"{med(k, lambda x: x['upstream']):,.0f} {runs(lambda x: x['upstream'], '{:,}')} | "
            f"{med(k, lambda x: x['upstream'] / x['names']):.2f} | "
            f"{med(k, lambda x: x['upstream_by_server']['root']):,.0f} / "
            f"{med(k, lambda x: x['upstream_by_server']['tld']):,.0f} / "
            f"{med(k, lambda x: x['upstream_by_server']['sld']):,.0f} | "
            f"{med(k, lambda x: x['cpu_s']):.2f} {runs(lambda x: x['cpu_s'], '{:.2f}')} | "
            f"{med(k, lambda x: 1e6 * x['cpu_s'] / x['names']):.0f} | "
            f"{med(k, lambda x: x['rss_before_kib']) / 1024:.1f} → {med(k, lambda x: x['rss_after_kib']) / 1024:.1f} | "
            f"{med(k, per_rec):.0f} | {med(k, per_name):.0f} | "
            f"{med(k, lambda x: x['answered'] - x['wrong']):,.0f} | {med(k, lambda x: x['ad']):,.0f} | "
            f"{med(k, lambda x: x['resent']):.0f} | "
            f"{med(k, lambda x: x['p50_ms']):.1f} / {med(k, lambda x: x['p99_ms']):.1f} |")
    if len(kinds) == 2 and all(results[k] for k in kinds):
        a, b = kinds
        n = min(len(results[a]), len(results[b]))
        lines += ["", f"Ratios {a} / {b} within each round (below 1: {a} is faster, sends fewer, uses less):", "",
                  "| round | wall time | upstream queries | resolver CPU | bytes per cached RRset "
                  "| CPU0 / CPU1 busy % (both runs) | client + authoritative CPU s (both runs) | load average (both runs) |",
                  "|---|---|---|---|---|---|---|---|"]
        for i in range(n):
            x, y = results[a][i], results[b][i]
            lines.append(
                f"| {i + 1} | {x['wall_s'] / y['wall_s']:.2f} | {x['upstream'] / y['upstream']:.2f} | "
                f"{x['cpu_s'] / y['cpu_s']:.2f} | {per_rec(x) / per_rec(y):.2f} | "
                f"{x['cpu0_busy_pct']:.0f}/{x['cpu1_busy_pct']:.0f}, {y['cpu0_busy_pct']:.0f}/{y['cpu1_busy_pct']:.0f} | "
                f"{x['client_cpu_s']:.2f} + {x['auth_cpu_s']:.2f}, {y['client_cpu_s']:.2f} + {y['auth_cpu_s']:.2f} | "
                f"{x['loadavg']:.1f}, {y['loadavg']:.1f} |")
        mr = lambda f: statistics.median(f(results[a][i]) / f(results[b][i]) for i in range(n))
        lines.append(f"| median | {mr(lambda x: x['wall_s']):.2f} | {mr(lambda x: x['upstream']):.2f} | "
                     f"{mr(lambda x: x['cpu_s']):.2f} | {mr(per_rec):.2f} | | | |")
    types = []
    for k in kinds:
        if results[k]:
            x = results[k][0]
            types.append(f"{k} (round 1): " + ", ".join(f"{t} {v:,}" for t, v in sorted(x["upstream_by_type"].items())))
    lines += ["", "Upstream queries by type, as received by the authoritative servers: " + "; ".join(types) + "."]
    extra = []
    if results.get("shardns"):
        extra.append("shardns counted " + "/".join(f"{x.get('self_upstream', 0):,}" for x in results["shardns"])
                     + " upstream queries itself")
    if results.get("unbound"):
        extra.append("Unbound's `dump_cache` held " + "/".join(f"{x.get('cache_rrsets')} RRsets + {x.get('cache_msgs')} messages"
                                                               for x in results["unbound"]))
    if extra:
        lines += ["", "; ".join(extra) + "."]
    lines += ["", f"Memory per cached RRset = (RSS after − RSS before) / {counts['rrsets']:,}: the RRsets "
              f"any resolver must hold after this workload ({counts['answer_rrsets']:,} answers, one per name, "
              f"plus {counts['delegation_rrsets']:,} for the delegations: NS and two glue A for each zone and "
              f"TLD, the root's NS and A" + ("; and a DS and a DNSKEY set for each zone and TLD, the root's DNSKEY "
                                            "set, the RRSIGs held with their sets" if args.signed else "")
              + "). RSS before is read after the readiness probe, RSS after right after "
              f"the last answer."]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--resolvers", default="shardns,unbound")
    ap.add_argument("--concurrency", type=int, default=100, help="closed-loop client streams")
    ap.add_argument("--markdown", help="also write the summary to this file")
    ap.add_argument("--json", help="write every run's figures to this file")
    ap.add_argument("--perf-dir", help="record each run with perf record -e cpu-clock -g into this directory "
                    "(perturbs the timings: use for profiles, not figures)")
    ap.add_argument("--perf-args", default="-e cpu-clock -g",
                    help="perf record options for --perf-dir (e.g. '-e cpu-clock --call-graph dwarf')")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (zones, configs, logs)")
    ap.add_argument("--signed", action="store_true",
                    help="the same hierarchy signed (root, TLDs, the 1,000 zones; `shardns sign`, ECDSA "
                    "P-256, NSEC), both resolvers validating from the root's DS, every query with DO and "
                    "every answer required to carry AD")
    args = ap.parse_args()
    kinds = [k for k in args.resolvers.split(",") if k]
    for k in kinds:
        if k not in ("shardns", "unbound"):
            ap.error(f"unknown resolver {k!r}")
    if "unbound" in kinds and not shutil.which("unbound"):
        sys.exit("unbound is not installed")
    if not 1 <= args.concurrency <= 10000:
        ap.error("--concurrency must be 1..10000")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    bin_ = lab.build_shardns()
    busy = [ip for ip in [ROOT_IP, RES_IP, CLIENT_IP] + TLD_IPS + SLD_IPS if not lab.port_free(ip, PORT)]
    if busy:
        sys.exit(f"port {PORT} is already in use on {', '.join(busy)}")
    # This process is the load generator: pin it (the authoritative servers inherit core 1).
    os.sched_setaffinity(0, {CORE_LOAD})

    work = tempfile.mkdtemp(prefix="shardns-coldfill-")
    names, expect, confs, counts = write_topology(work, args.signed, bin_)
    procs = lab.Procs(work)
    results = {k: [] for k in kinds}
    failed = False
    try:
        auth = {}
        for n in ("root", "tld", "sld"):
            auth[n] = procs.start(n, [bin_, "serve", "-c", confs[n], "--log-level", "warn"])
        probes = {"root": (ROOT_IP, "tld0."), "tld": (TLD_IPS[0], zone_name(0)), "sld": (SLD_IPS[-1], names[0])}
        for n, (ip, q) in probes.items():
            procs.wait_ready(n, auth[n], lambda: lab.probe(ip, PORT, q) == "NOERROR", timeout=120)
        for r in range(args.rounds):
            for k in kinds:
                res = run_one(k, bin_, work, procs, list(auth.values()), names, expect, args, r + 1)
                results[k].append(res)
                print(f"round {r + 1} {k}: {res['answered']:,}/{res['names']:,} answered ({res['ad']:,} with AD) in "
                      f"{res['wall_s']:.2f} s, {res['wrong']} wrong (dig agrees on {res['dig_check']}), re-sent {res['resent']}, upstream "
                      f"{res['upstream']:,} {res['upstream_by_server']}, CPU {res['cpu_s']:.2f} s, RSS "
                      f"{res['rss_before_kib'] / 1024:.1f} -> {res['rss_after_kib'] / 1024:.1f} MiB, "
                      f"p50/p99 {res['p50_ms']:.1f}/{res['p99_ms']:.1f} ms, busy cpu0/cpu1 "
                      f"{res['cpu0_busy_pct']:.0f}/{res['cpu1_busy_pct']:.0f}%, client CPU {res['client_cpu_s']:.2f} s, "
                      f"authoritative CPU {res['auth_cpu_s']:.2f} s, load average {res['loadavg']:.1f}", file=sys.stderr)
                if res["wrong"]:
                    print(f"  wrong answers, e.g. {res['wrong_sample']}", file=sys.stderr)
    except Exception as e:
        failed = True
        print(f"coldfill: {e}\n(work directory kept: {work})", file=sys.stderr)
    finally:
        procs.stop_all()
        if not failed and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"counts": counts, "results": results}, f, indent=1)
    if not all(results[k] for k in kinds):
        sys.exit(1)
    text = report(results, kinds, counts, args, shlex.join(["bench/coldfill.py"] + sys.argv[1:]))
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    short = [f"{k} round {x['round']}" for k in kinds for x in results[k]
             if x["answered"] - x["wrong"] < x["names"] or (args.signed and x["ad"] < x["names"])]
    if short:
        print(f"coldfill: not every name was answered correctly in: {', '.join(short)}", file=sys.stderr)
    if failed or short:
        sys.exit(1)


if __name__ == "__main__":
    main()
