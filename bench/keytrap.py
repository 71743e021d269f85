#!/usr/bin/env python3
"""What a KeyTrap-style query costs a validating resolver (CVE-2023-50387): shardns against
Unbound, in server CPU per query read from /proc.

Two zones, signed with ECDSA P-256 or, with `--algorithm RSASHA256`, 2,048-bit RSA (dnssec-keygen,
a KSK and a ZSK each; ldns-signzone), served by one authoritative shardns on 127.0.0.1:UPSTREAM
(pinned to core 1):

  good.test.     NAMES names n0..nN-1, each an A record with its one valid RRSIG: the cost of
                 an ordinary validation, for reference
  keytrap.test.  the same names, and the DNSKEY set holds KEYS extra keys with the ZSK's key
                 tag and algorithm (the ZSK's public key with two octets of the same parity
                 swapped, as tests/validation's make-zones-edit.py makes them; the set itself
                 validly signed by the KSK); every A record carries SIGS RRSIGs of the ZSK's tag,
                 none valid (the real one with octets flipped). A validator with no limits tries
                 every key against every signature: (KEYS + 1) x SIGS checks per name.
                 The colliding ECDSA keys are no points of the curve, so a validator that checks
                 the key first rejects each cheaply; the colliding RSA keys are moduli of the
                 same length (first and last octets kept: odd), each check a full RSA
                 verification: `--algorithm RSASHA256` is the expensive trap.

Each resolver (one worker/thread, pinned to core 0) validates from both zones' KSKs as trust
anchors (DS records from dnssec-dsfromkey) and reaches the zones as Unbound's `stub-zone` /
shardns's `--forward`; Unbound is fenced from every address but 127.0.0.0/8 and shardns's root
hints name the authoritative server only. Per run: a fresh
resolver; one query for each zone's apex (so the DNSKEY sets are fetched and validated before
measuring); then the NAMES good names, then the NAMES keytrap names, each sent once with DO from
CONCURRENCY closed-loop streams (bench/coldfill.py's client), the resolver's CPU ticks read from
/proc before and after each set. Reported per set: server CPU µs per query, wall time, the
answers' rcodes and AD, the queries the authoritative server answered (its `shardns stats`). A good name must be NOERROR with AD and a keytrap name SERVFAIL, else
the script says so and exits 1. Runs are interleaved (shardns, Unbound, shardns, ...);
medians of ROUNDS.

Usage:
  bench/keytrap.py [--rounds 5] [--names 2000] [--keys 24] [--sigs 12] [--algorithm ALG] [--concurrency 10]
      [--resolvers shardns,unbound] [--markdown FILE] [--keep]
Needs: unbound, bind9-utils (dnssec-keygen, dnssec-dsfromkey), ldnsutils (ldns-signzone),
a release build of shardns (built here).
"""

import argparse
import base64
import importlib.util
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no bench/__pycache__ in the worktree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import coldfill  # noqa: E402
import lab  # noqa: E402

PORTS = {"shardns": 5661, "unbound": 5662}
UPSTREAM = 5660
ADDR = "127.0.0.1"
CORE_RESOLVER, CORE_LOAD = 0, 1
ZONES = ("good.test.", "keytrap.test.")


def make_edit_module():
    """tests/validation's make-zones-edit.py (its `collide`), loaded from its path."""
    path = os.path.join(lab.ROOT, "crates", "shardns", "tests", "validation", "make-zones-edit.py")
    spec = importlib.util.spec_from_file_location("make_zones_edit", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def write_zones(d, names, keys, sigs, algorithm="ECDSAP256SHA256"):
    """Signs both zones into d; returns ({apex: signed file}, trust anchor file)."""
    edit = make_edit_module()
    files, anchors = {}, []
    for apex in ZONES:
        kd = os.path.join(d, "keys-" + apex.rstrip("."))
        os.makedirs(kd, exist_ok=True)
        gen = ["dnssec-keygen", "-q", "-K", kd, "-a", algorithm, "-n", "ZONE"]
        if algorithm.startswith("RSA"):
            gen += ["-b", "2048"]
        ksk = subprocess.run(gen + ["-f", "KSK", apex], capture_output=True, text=True, check=True).stdout.strip()
        zsk = subprocess.run(gen + [apex], capture_output=True, text=True, check=True).stdout.strip()
        lines = [f"$ORIGIN {apex}\n$TTL 3600\n", "@ SOA ns hostmaster 1 7200 3600 1209600 300\n",
                 "@ NS ns\n", f"ns A {ADDR}\n"]
        lines += [f"n{i} A 192.0.2.{i % 250 + 1}\n" for i in range(names)]
        for k in (ksk, zsk):
            with open(os.path.join(kd, k + ".key")) as f:
                lines += [l for l in f if not l.startswith(";")]
        if apex == "keytrap.test." and keys and algorithm.startswith("RSA"):
            lines += collide_rsa(edit, os.path.join(kd, zsk + ".key"), keys)
        elif apex == "keytrap.test." and keys:
            # Printed by collide(): redirect its stdout into the zone.
            r = subprocess.run([sys.executable, edit.__file__, "collide", os.path.join(kd, zsk + ".key"),
                                str(keys)], capture_output=True, text=True, check=True)
            lines.append(r.stdout)
        unsigned = os.path.join(d, apex + "zone")
        with open(unsigned, "w") as f:
            f.writelines(lines)
        signed = unsigned + ".signed"
        # ldns-signzone only signs: dnssec-signzone would refuse the colliding keys (no points
        # of the curve). Valid 2020-2038, like the validation test's zones.
        subprocess.run(["ldns-signzone", "-o", apex, "-f", signed, "-i", "20200101000000", "-e",
                        "20380101000000", unsigned, ksk, zsk], cwd=kd, check=True, capture_output=True)
        if apex == "keytrap.test.":
            # RSA: the signature's first two octets kept, so it stays below the modulus and
            # every check is a full verification.
            trap(signed, apex, sigs, skip=2 if algorithm.startswith("RSA") else 0)
        files[apex] = signed
        anchors.append(subprocess.run(["dnssec-dsfromkey", "-2", os.path.join(kd, ksk + ".key")],
                                      capture_output=True, text=True, check=True).stdout)
    anchor = os.path.join(d, "anchors.ds")
    with open(anchor, "w") as f:
        f.writelines(anchors)
    return files, anchor


def collide_rsa(edit, keyfile, n):
    """n DNSKEY records with the key tag of keyfile's RSA key: two octets of its modulus, of the
    same parity, swapped (the tag is a sum over even and odd octets), the modulus's first two
    and last octets kept (its length in bits and its oddness: a well-formed public key)."""
    line = next(l for l in open(keyfile) if not l.startswith(";") and " DNSKEY " in l)
    f = line.split()
    i = f.index("DNSKEY")
    flags, proto, alg = int(f[i + 1]), int(f[i + 2]), int(f[i + 3])
    key = base64.b64decode("".join(f[i + 4:]))
    start = 3 + (key[1] << 8 | key[2]) if key[0] == 0 else 1 + key[0]  # RFC 3110 §2
    head = bytes([flags >> 8, flags & 0xFF, proto, alg])
    tag = edit.key_tag(head + key)
    out, seen = [], {key}
    for a in range(start + 2, len(key) - 3):
        if len(out) == n:
            break
        if key[a] == key[a + 2]:
            continue
        k = bytearray(key)
        k[a], k[a + 2] = k[a + 2], k[a]
        k = bytes(k)
        assert edit.key_tag(head + k) == tag and k not in seen
        seen.add(k)
        out.append(f"{f[0]} 3600 IN DNSKEY {flags} {proto} {alg} {base64.b64encode(k).decode()}\n")
    return out


def trap(path, apex, sigs, skip=0):
    """Replaces the RRSIG of every nN A record by `sigs` copies with octets flipped from the
    `skip`th on (none valid)."""
    out = []
    for line in open(path):
        f = line.split()
        if (len(f) > 12 and f[3] == "RRSIG" and f[4] == "A" and f[0].lower().startswith("n")
                and f[0].lower().endswith("." + apex) and not f[0].lower().startswith("ns.")):
            sig = base64.b64decode("".join(f[12:]))
            for i in range(sigs):
                bad = bytearray(sig)
                bad[skip + i] ^= 0x5A
                bad[-1 - i] ^= 0xA5
                out.append(" ".join(f[:12] + [base64.b64encode(bytes(bad)).decode()]) + "\n")
            continue
        out.append(line)
    with open(path, "w") as f:
        f.writelines(out)


def resolver_cmd(kind, bin_, d, anchor):
    port = PORTS[kind]
    if kind == "shardns":
        # Anything outside the forward zones would go to the authoritative server (which
        # refuses it and counts it), never off this machine.
        hints = lab.loopback_root_hints(os.path.join(d, "root.hints"), ADDR, UPSTREAM)
        cmd = [bin_, "serve", "--listen", f"{ADDR}:{port}", "--recursion", "--local-zone", "test. nodefault", "--allow-loopback-upstreams", "--trust-anchor", anchor,
               "--root-hints", hints, "--workers", "1", "--log-level", "warn"]
        for z in ZONES:
            cmd += ["--forward", f"{z.rstrip('.')}={ADDR}:{UPSTREAM}"]
    else:
        ud = os.path.join(d, "unbound")
        os.makedirs(ud, exist_ok=True)
        conf = os.path.join(ud, "unbound.conf")
        stubs = "".join(f'stub-zone:\n    name: "{z}"\n    stub-addr: {ADDR}@{UPSTREAM}\n' for z in ZONES)
        with open(conf, "w") as f:
            f.write(lab.unbound_server(ud, ADDR, port, extra=f"""\
    module-config: "validator iterator"
    trust-anchor-file: "{anchor}"
    val-permissive-mode: no
    local-zone: "test." nodefault
""") + f"""remote-control:
    control-enable: no
{stubs}""")
        cmd = ["unbound", "-d", "-c", conf]
    return ["taskset", "-c", str(CORE_RESOLVER)] + cmd


def upstream_queries(bin_, d):
    """Queries the authoritative server has answered so far (its `shardns stats`)."""
    return lab.family_sum(lab.shardns_stats(bin_, os.path.join(d, "auth.ctl")), "shardns_queries_total")


def run_one(kind, bin_, d, anchor, procs, args, round_no):
    port = PORTS[kind]
    if not lab.port_free(ADDR, port):
        raise RuntimeError(f"{ADDR}:{port} is in use")
    name = f"{kind}-r{round_no}"
    p = procs.start(name, resolver_cmd(kind, bin_, d, anchor))
    try:
        # Each zone's apex, recursively: the DNSKEY sets are fetched and validated here.
        for z in ZONES:
            procs.wait_ready(name, p, lambda z=z: lab.probe(ADDR, port, z, rd=True, timeout=2) is not None)
        pids = lab.children(p.pid)
        out = {"resolver": kind, "round": round_no, "loadavg": os.getloadavg()[0]}
        for z in ZONES:
            names = [f"n{i}.{z}" for i in range(args.names)]
            up0 = upstream_queries(bin_, d)
            c0, t0 = lab.cpu_ticks(pids), time.monotonic()
            t = coldfill.fill(names, None, args.concurrency, timeout=5.0, limit=args.limit, dnssec=True,
                              server=(ADDR, port), client=ADDR)
            c1, t1 = lab.cpu_ticks(pids), time.monotonic()
            if p.poll() is not None:
                raise RuntimeError(f"{name} exited during the run:\n{procs.log(name)[-2000:]}")
            cpu = (c1 - c0) / lab.CLK_TCK
            up = upstream_queries(bin_, d) - up0
            out[z] = {"cpu_s": cpu, "us_per_q": 1e6 * cpu / len(names), "wall_s": t1 - t0, "upstream": up,
                      "rcodes": t["rcodes"], "ad": t["ad"], "answered": t["answered"], "resent": t["resent"]}
        out["rss_kib"] = lab.rss_kib(pids)
        return out
    finally:
        procs.stop(p)


def verdict_ok(x, names):
    """A good name NOERROR with AD, a keytrap name SERVFAIL: every one."""
    g, k = x["good.test."], x["keytrap.test."]
    return (g["rcodes"].get("NOERROR", 0) == names and g["ad"] == names
            and k["rcodes"].get("SERVFAIL", 0) == names)


def report(results, kinds, args, cmdline):
    med = lambda k, f: statistics.median(f(x) for x in results[k])
    runs = lambda k, f, fmt: "(" + " ".join(fmt.format(f(x)) for x in results[k]) + ")"
    lines = [f"{args.algorithm}; {args.names:,} names per zone, each sent once with DO from {args.concurrency} closed-loop "
             f"streams; keytrap.test.: {args.keys} extra DNSKEYs with the ZSK's key tag, {args.sigs} invalid "
             f"RRSIGs of that tag on every A record; {args.rounds} interleaved rounds, a fresh resolver each "
             f"run, medians (each run in brackets).", "", f"Command: `{cmdline}`", "",
             "| resolver | zone | server CPU µs per query | wall s | answers (rcode: count) | with AD | re-sent "
             "| upstream queries per name | RSS after MiB |", "|---|---|---|---|---|---|---|---|---|"]
    for k in kinds:
        for z in ZONES:
            rc = results[k][len(results[k]) // 2][z]["rcodes"]
            lines.append(
                f"| {k} | {z} | {med(k, lambda x: x[z]['us_per_q']):.0f} {runs(k, lambda x: x[z]['us_per_q'], '{:.0f}')} | "
                f"{med(k, lambda x: x[z]['wall_s']):.2f} | {', '.join(f'{c}: {n:,}' for c, n in sorted(rc.items()))} | "
                f"{med(k, lambda x: x[z]['ad']):,.0f} | {med(k, lambda x: x[z]['resent']):.0f} | "
                f"{med(k, lambda x: x[z]['upstream'] / args.names):.2f} | "
                f"{med(k, lambda x: x['rss_kib']) / 1024:.1f} |")
    if len(kinds) == 2:
        a, b = kinds
        n = min(len(results[a]), len(results[b]))
        for z in ZONES:
            r = statistics.median(results[a][i][z]["us_per_q"] / results[b][i][z]["us_per_q"]
                                  for i in range(n) if results[b][i][z]["us_per_q"] > 0)
            lines.append(f"\n{a} / {b}, {z}: {r:.2f}x the CPU per query (median of the rounds' ratios).")
        lines.append("\nLoad average at each run: " + ", ".join(
            f"{x['resolver']} {x['loadavg']:.1f}" for i in range(n) for x in (results[a][i], results[b][i])) + ".")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--names", type=int, default=2000, help="names queried in each zone")
    ap.add_argument("--keys", type=int, default=24, help="extra DNSKEYs colliding with the ZSK's key tag")
    ap.add_argument("--sigs", type=int, default=12, help="invalid RRSIGs on every keytrap A record")
    ap.add_argument("--algorithm", choices=["ECDSAP256SHA256", "RSASHA256"], default="ECDSAP256SHA256",
                    help="the zones' keys (RSASHA256: 2,048 bits)")
    ap.add_argument("--concurrency", type=int, default=10, help="closed-loop client streams")
    ap.add_argument("--limit", type=float, default=300.0, help="most seconds one set of queries may take")
    ap.add_argument("--resolvers", default="shardns,unbound")
    ap.add_argument("--markdown", help="also write the table to this file")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    kinds = [k for k in args.resolvers.split(",") if k]
    for k in kinds:
        if k not in PORTS:
            ap.error(f"unknown resolver {k!r}")
    if not (1 <= args.names <= 60000 and 0 <= args.keys <= 200 and 1 <= args.sigs <= 32):
        ap.error("--names 1..60000, --keys 0..200, --sigs 1..32")
    for tool in ("dnssec-keygen", "dnssec-dsfromkey", "ldns-signzone") + (("unbound",) if "unbound" in kinds else ()):
        if not shutil.which(tool):
            sys.exit(f"{tool} is not installed")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    bin_ = lab.build_shardns()
    if not lab.port_free(ADDR, UPSTREAM):
        sys.exit(f"port {UPSTREAM} (upstream) is in use")
    os.sched_setaffinity(0, {CORE_LOAD})  # the client; the authoritative server inherits core 1

    work = tempfile.mkdtemp(prefix="shardns-keytrap-")
    files, anchor = write_zones(work, args.names, args.keys, args.sigs, args.algorithm)
    procs = lab.Procs(work)
    results = {k: [] for k in kinds}
    failed = False
    try:
        auth = procs.start("auth", [bin_, "serve", "--listen", f"{ADDR}:{UPSTREAM}", "--workers", "1",
                                    "--control", os.path.join(work, "auth.ctl"), "--log-level", "warn"] + [a for z, f in files.items()
                                                              for a in ("--zone", f"{z.rstrip('.')}={f}")])
        procs.wait_ready("auth", auth, lambda: lab.probe(ADDR, UPSTREAM, "n0.keytrap.test.") == "NOERROR")
        for r in range(args.rounds):
            for k in kinds:
                x = run_one(k, bin_, work, anchor, procs, args, r + 1)
                results[k].append(x)
                print(f"round {r + 1} {k}: " + "; ".join(
                    f"{z} {x[z]['us_per_q']:.0f} µs/q, {x[z]['wall_s']:.2f} s, {x[z]['rcodes']}, AD {x[z]['ad']}, "
                    f"upstream {x[z]['upstream']:.0f}, "
                    f"re-sent {x[z]['resent']}" for z in ZONES) + f"; load average {x['loadavg']:.1f}", file=sys.stderr)
    except Exception as e:
        failed = True
        print(f"keytrap: {e}\n(work directory kept: {work})", file=sys.stderr)
    finally:
        procs.stop_all()
        if not failed and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if not all(results[k] for k in kinds):
        sys.exit(1)
    text = report(results, kinds, args, shlex.join(["bench/keytrap.py"] + sys.argv[1:]))
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    off = [f"{x['resolver']} round {x['round']}" for k in kinds for x in results[k] if not verdict_ok(x, args.names)]
    if off:
        print("keytrap: not every good name was secure and every keytrap name SERVFAIL in: " + ", ".join(off),
              file=sys.stderr)
    if failed or off:
        sys.exit(1)


if __name__ == "__main__":
    main()
