#!/usr/bin/env python3
"""Signatures per second with an ECDSA P-256 key on a SoftHSM2 token (PKCS#11), shardns
against knotd, the same SoftHSM2 module, a token each, on the same cores (issue 29).

A zone of N A records (default 10,000; NSEC, one CSK) is signed whole, in rounds:

  shardns   `shardns serve` with `[[keystore]]` (pkcs11_uri, module) and `keystore = "hsm"`:
            its signed-zone state removed before each round, so each round signs everything
            with the key already on the token; time and signatures from its log line
            ("signed with serial ... in X s (R s reading ..., W s keeping this one): ... N new
            signatures"), the seconds less R and W (the signed zone written to the key
            directory, which knotd, with no zone file sync and no journal, does not do)
  knotd     `keystore: backend: pkcs11` and a policy with it (signing-threads: 2): each round
            `knotc -b zone-sign` (every signature made anew, blocking), timed; signatures
            counted in its AXFR (every RRSIG of the zone)

Keys are made on the tokens before the timed rounds (first start of each server). Both
servers run while the other signs (2 cores shared: the rounds alternate).

Usage: bench/hsm_sign.py [--records N] [--rounds R] [--bin PATH] [--out DIR]
Needs softhsm2 (softhsm2-util), knotd and knotc, dig. Output: a markdown table on stdout.
"""
import argparse, os, re, shutil, socket, statistics, subprocess, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--records", type=int, default=10000)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--bin", help="the shardns binary (default: target/release/shardns, built)")
ap.add_argument("--out", default="/tmp/shardns-hsm-bench")
ap.add_argument("--module", default="/usr/lib/softhsm/libsofthsm2.so")
a = ap.parse_args()
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if a.bin:
    BIN = os.path.abspath(a.bin)
else:
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "shardns"], cwd=root, check=True)
    BIN = os.path.join(root, "target/release/shardns")

shutil.rmtree(a.out, ignore_errors=True)
os.makedirs(a.out)
O = a.out


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


# SoftHSM2: one token directory, a token for each server.
tokens = os.path.join(O, "tokens")
os.makedirs(tokens)
conf = os.path.join(O, "softhsm2.conf")
open(conf, "w").write(f"directories.tokendir = {tokens}\nobjectstore.backend = file\n"
                      "log.level = ERROR\n")
os.environ["SOFTHSM2_CONF"] = conf
for label in ["shardns", "knot"]:
    subprocess.run(["softhsm2-util", "--init-token", "--free", "--label", label, "--pin", "1234",
                    "--so-pin", "5678"], check=True, stdout=subprocess.DEVNULL)

zone = os.path.join(O, "hsm.test.zone")
with open(zone, "w") as f:
    f.write("$TTL 300\n@ SOA ns.hsm.test. admin.hsm.test. 1 3600 600 86400 300\n@ NS ns\n"
            "ns A 127.0.0.1\n")
    for i in range(a.records):
        f.write(f"h{i} A 192.0.{(i >> 8) & 255}.{i & 255}\n")

PORT_S, PORT_K = free_port(), free_port()
S = os.path.join(O, "shardns")
os.makedirs(os.path.join(S, "keys"))
open(os.path.join(S, "shardns.toml"), "w").write(f"""[server]
listen = ["127.0.0.1:{PORT_S}"]
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
""")

K = os.path.join(O, "knot")
os.makedirs(os.path.join(K, "db"))
open(os.path.join(K, "knot.conf"), "w").write(f"""server:
    rundir: "{K}"
    listen: 127.0.0.1@{PORT_K}
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
    algorithm: ecdsap256sha256
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


def rrsigs(port):
    out = subprocess.run(["dig", "@127.0.0.1", "-p", str(port), "hsm.test", "AXFR", "+onesoa"],
                         capture_output=True, text=True).stdout
    return sum(1 for l in out.splitlines() if "\tRRSIG\t" in l)


def wait_signed(port, proc, limit=600):
    end = time.time() + limit
    while time.time() < end:
        if proc.poll() is not None:
            sys.exit(f"the server on port {port} exited ({proc.returncode}); see {O}")
        out = subprocess.run(["dig", "@127.0.0.1", "-p", str(port), "+dnssec", "+short",
                              "hsm.test", "SOA"], capture_output=True, text=True).stdout
        if "RRSIG" in out or "SOA 13" in out:
            return
        time.sleep(0.05)
    sys.exit(f"not signed on port {port} within {limit} s")


def shardns_round():
    """Start shardns (state removed: it signs everything), read its log line, stop it."""
    shutil.rmtree(os.path.join(S, "keys/state"), ignore_errors=True)
    log = open(os.path.join(S, "log"), "w")
    p = subprocess.Popen([BIN, "serve", "--workers", "1", "--config",
                          os.path.join(S, "shardns.toml")], cwd=S, stderr=log,
                         stdout=subprocess.DEVNULL)
    try:
        wait_signed(PORT_S, p)
        text = open(os.path.join(S, "log")).read()
        m = re.search(r"signed with serial \d+ in ([0-9.]+) s \(([0-9.]+) s reading the last "
                      r"signed version, ([0-9.]+) s keeping this one\).*? (\d+) new signatures",
                      text)
        if not m:
            sys.exit("shardns: no signing line in its log:\n" + text)
        # Keeping the signed zone (a file written and synced) is not signing: knotd, with
        # no zone file sync and no journal, writes nothing either.
        total, read, keep = (float(m.group(i)) for i in (1, 2, 3))
        return total - read - keep, int(m.group(4))
    finally:
        p.terminate()
        p.wait()


knot = subprocess.Popen(["knotd", "-c", os.path.join(K, "knot.conf")],
                        stderr=open(os.path.join(K, "log"), "w"), stdout=subprocess.DEVNULL)


def knot_round():
    t0 = time.perf_counter()
    r = subprocess.run(["knotc", "-s", os.path.join(K, "knot.sock"), "-b", "zone-sign",
                        "hsm.test"], capture_output=True, text=True)
    took = time.perf_counter() - t0
    if r.returncode != 0 or "OK" not in r.stdout:
        sys.exit(f"knotc zone-sign: {r.stdout}{r.stderr}\n" + open(os.path.join(K, "log")).read())
    return took, rrsigs(PORT_K)


try:
    wait_signed(PORT_K, knot)  # its key made on the token, the zone signed once
    shardns_round()      # ours made on the token, the zone signed once
    rows = {"shardns": [], "knotd": []}
    for _ in range(a.rounds):
        rows["shardns"].append(shardns_round())
        rows["knotd"].append(knot_round())
finally:
    knot.terminate()
    knot.wait()

print(f"| signer ({a.records} A records, NSEC, ECDSA P-256 on SoftHSM2) | signatures | "
      "seconds (median) | signatures/s |")
print("|---|---|---|---|")
for name, runs in rows.items():
    secs = statistics.median(t for t, _ in runs)
    sigs = runs[0][1]
    print(f"| {name} | {sigs} | {secs:.3f} | {sigs / secs:,.0f} |")
print("runs:", {k: [(round(t, 3), n) for t, n in v] for k, v in rows.items()}, file=sys.stderr)
