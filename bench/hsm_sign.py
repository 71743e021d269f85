#!/usr/bin/env python3
"""Signatures per second with a key on a SoftHSM2 token (PKCS#11), shardns against knotd, the
same SoftHSM2 module, a token each, on the same cores (issue 29): ECDSA P-256 and RSA/SHA-256
2048 (`--algorithms`).

A zone of N names with an A record each (default 25,000: with their NSEC, 50,006 RRsets
as the signer counts them, one CSK) is signed whole, in rounds:

  shardns   `shardns serve` with `[[keystore]]` (pkcs11_uri, module) and `keystore = "hsm"`:
            its signed-zone state removed before each round, so each round signs everything
            with the key already on the token, as a normal signing does, the signed zone kept
            (KEYDIR/state/ZONE.signed, written and synced) included; time and signatures
            from its log line ("signed with serial ... in X s (R s reading ..., W s keeping
            this one): ... N new signatures"): X - R (nothing to read: the state is gone),
            W reported beside it; CPU: the process's utime + stime from /proc/PID/stat once
            signed (zone file load included, about 0.1 s)
  knotd     `keystore: backend: pkcs11` and a policy with it (signing-threads: 2): each round
            `knotc -b zone-sign` (every signature made anew, blocking), timed; CPU: knotd's
            /proc/PID/stat before and after; signatures counted in its AXFR (every RRSIG).
            knotd, with no zone file sync and no journal, writes no signed zone

Keys are made on the tokens before the timed rounds (first start of each server). Both
servers run while the other signs (2 cores shared: the rounds alternate). Bounded: every
wait has a limit, and the whole run stops at --limit seconds (default 900).

Usage: bench/hsm_sign.py [--records N] [--rounds R] [--algorithms A,B] [--bin PATH] [--out DIR]
Needs softhsm2 (softhsm2-util), knotd and knotc, dig. Output: a markdown table on stdout.
"""
import argparse, os, re, shutil, socket, statistics, subprocess, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--records", type=int, default=25000)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--bin", help="the shardns binary (default: target/release/shardns, built)")
ap.add_argument("--out", default="/tmp/shardns-hsm-bench")
ap.add_argument("--module", default="/usr/lib/softhsm/libsofthsm2.so")
ap.add_argument("--algorithms", default="ecdsap256sha256,rsasha256")
ap.add_argument("--limit", type=float, default=900, help="seconds for the whole run")
a = ap.parse_args()
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if a.bin:
    BIN = os.path.abspath(a.bin)
else:
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "shardns"], cwd=root, check=True)
    BIN = os.path.join(root, "target/release/shardns")

DEADLINE = time.time() + a.limit
TICKS = os.sysconf("SC_CLK_TCK")


def left(what):
    """Seconds left of the run's limit; exits when none."""
    t = DEADLINE - time.time()
    if t <= 0:
        sys.exit(f"the run's limit ({a.limit} s) passed: {what}")
    return t


def cpu(pid):
    """utime + stime of process `pid`, seconds (all its threads)."""
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TICKS


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def rrsigs(port):
    out = subprocess.run(["dig", "@127.0.0.1", "-p", str(port), "hsm.test", "AXFR", "+onesoa"],
                         capture_output=True, text=True, timeout=60).stdout
    return sum(1 for l in out.splitlines() if "\tRRSIG\t" in l)


def wait_signed(port, proc, what):
    while left(what) > 0:
        if proc.poll() is not None:
            sys.exit(f"the server on port {port} exited ({proc.returncode}); see {a.out}")
        out = subprocess.run(["dig", "@127.0.0.1", "-p", str(port), "+dnssec", "+short",
                              "+time=1", "+tries=1", "hsm.test", "SOA"],
                             capture_output=True, text=True).stdout
        if "RRSIG" in out or re.search(r"SOA (8|13) ", out):
            return
        time.sleep(0.05)


def bench(alg):
    """The rounds of one algorithm: {server: [(seconds, CPU-s, signatures, keep-s)]}."""
    O = os.path.join(a.out, alg)
    os.makedirs(O)
    # SoftHSM2: one token directory, a token for each server.
    tokens = os.path.join(O, "tokens")
    os.makedirs(tokens)
    conf = os.path.join(O, "softhsm2.conf")
    open(conf, "w").write(f"directories.tokendir = {tokens}\nobjectstore.backend = file\n"
                          "log.level = ERROR\n")
    os.environ["SOFTHSM2_CONF"] = conf
    for label in ["shardns", "knot"]:
        subprocess.run(["softhsm2-util", "--init-token", "--free", "--label", label, "--pin",
                        "1234", "--so-pin", "5678"], check=True, stdout=subprocess.DEVNULL)
    zone = os.path.join(O, "hsm.test.zone")
    with open(zone, "w") as f:
        f.write("$TTL 300\n@ SOA ns.hsm.test. admin.hsm.test. 1 3600 600 86400 300\n@ NS ns\n"
                "ns A 127.0.0.1\n")
        for i in range(a.records):
            f.write(f"h{i} A 192.0.{(i >> 8) & 255}.{i & 255}\n")

    port_s, port_k = free_port(), free_port()
    S = os.path.join(O, "shardns")
    os.makedirs(os.path.join(S, "keys"))
    open(os.path.join(S, "shardns.toml"), "w").write(f"""[server]
listen = ["127.0.0.1:{port_s}"]
control_socket = "{S}/ctl"
key_directory = "keys"
allow_transfer = ["127.0.0.1"]
[[keystore]]
name = "hsm"
pkcs11_uri = "pkcs11:token=shardns;pin-value=1234"
module = "{a.module}"
[[zone]]
name = "hsm.test"
file = "{zone}"
dnssec = true
keystore = "hsm"
algorithm = "{alg}"
""")
    K = os.path.join(O, "knot")
    rsa_size = "\n    ksk-size: 2048" if alg.startswith("rsa") else ""
    os.makedirs(os.path.join(K, "db"))
    open(os.path.join(K, "knot.conf"), "w").write(f"""server:
    rundir: "{K}"
    listen: 127.0.0.1@{port_k}
    background-workers: 2
control:
    listen: "{K}/knot.sock"
log:
  - target: stderr
    any: info
database:
    storage: "{K}/db"
    kasp-db: "{K}/kasp"
keystore:
  - id: hsm
    backend: pkcs11
    config: "pkcs11:token=knot;pin-value=1234 {a.module}"
policy:
  - id: hsm
    keystore: hsm
    algorithm: {alg}{rsa_size}
    single-type-signing: on
    nsec3: off
    rrsig-lifetime: 14d
    rrsig-refresh: 7d
    signing-threads: 2
acl:
  - id: xfr
    address: 127.0.0.1
    action: transfer
zone:
  - domain: hsm.test
    file: "{zone}"
    storage: "{K}"
    zonefile-sync: -1
    zonefile-load: whole
    journal-content: none
    dnssec-signing: on
    dnssec-policy: hsm
    acl: xfr
""")

    def shardns_round():
        """Start shardns (state removed: it signs everything), read its log line, stop it."""
        shutil.rmtree(os.path.join(S, "keys/state"), ignore_errors=True)
        log = open(os.path.join(S, "log"), "w")
        p = subprocess.Popen([BIN, "serve", "--workers", "1", "--config",
                              os.path.join(S, "shardns.toml")], cwd=S, stderr=log,
                             stdout=subprocess.DEVNULL)
        try:
            pattern = (r"signed with serial \d+ in ([0-9.]+) s \(([0-9.]+) s reading the last "
                       r"signed version, ([0-9.]+) s keeping this one\).*? (\d+) new signatures")
            m = None
            while m is None and left("shardns signing") > 0:
                if p.poll() is not None:
                    sys.exit("shardns exited:\n" + open(os.path.join(S, "log")).read())
                m = re.search(pattern, open(os.path.join(S, "log")).read())
                time.sleep(0.02)
            used = cpu(p.pid)
            total, read, keep = (float(m.group(i)) for i in (1, 2, 3))
            return total - read, used, int(m.group(4)), keep
        finally:
            p.terminate()
            p.wait(timeout=30)

    knot = subprocess.Popen(["knotd", "-c", os.path.join(K, "knot.conf")],
                            stderr=open(os.path.join(K, "log"), "w"), stdout=subprocess.DEVNULL)

    def knot_round():
        c0, t0 = cpu(knot.pid), time.perf_counter()
        r = subprocess.run(["knotc", "-s", os.path.join(K, "knot.sock"), "-b", "-t",
                            str(int(left("knotd signing"))), "zone-sign", "hsm.test"],
                           capture_output=True, text=True)
        took, used = time.perf_counter() - t0, cpu(knot.pid) - c0
        if r.returncode != 0 or "OK" not in r.stdout:
            sys.exit(f"knotc zone-sign: {r.stdout}{r.stderr}\n" +
                     open(os.path.join(K, "log")).read())
        return took, used, rrsigs(port_k), 0.0

    try:
        wait_signed(port_k, knot, "knotd's first signing")  # its key made on the token
        shardns_round()      # ours made on the token, the zone signed once
        rows = {"shardns": [], "knotd": []}
        for _ in range(a.rounds):
            rows["shardns"].append(shardns_round())
            rows["knotd"].append(knot_round())
    finally:
        knot.terminate()
        knot.wait(timeout=30)
    return rows


shutil.rmtree(a.out, ignore_errors=True)
os.makedirs(a.out)
results = {alg: bench(alg) for alg in a.algorithms.split(",")}
print(f"| algorithm ({a.records} names, NSEC, SoftHSM2) | signer | signatures | seconds (median) "
      "| of it keeping the signed zone | CPU-s (median) | signatures/s | signatures per CPU-s |")
print("|---|---|---|---|---|---|---|---|")
for alg, rows in results.items():
    for name, runs in rows.items():
        secs = statistics.median(r[0] for r in runs)
        used = statistics.median(r[1] for r in runs)
        keep = statistics.median(r[3] for r in runs)
        sigs = runs[0][2]
        print(f"| {alg} | {name} | {sigs} | {secs:.3f} | {keep:.3f} | {used:.2f} | "
              f"{sigs / secs:,.0f} | {sigs / used:,.0f} |")
    print("runs:", alg, {k: [tuple(round(x, 3) for x in r) for r in v] for k, v in rows.items()},
          file=sys.stderr)
