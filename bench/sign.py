#!/usr/bin/env python3
"""Signing the 1,276,513-record zone (issue 13): shardns against dnssec-signzone and knotd,
ECDSA P-256, one combined signing key each, NSEC, 14-day signatures, on the same two cores
(taskset -c 0,1), rounds interleaved (A B C D A B C D ...), medians.

  shardns sign      `shardns sign big.test FILE --key-dir K -o OUT`: read, sign, write text
  shardns serve     `shardns serve --zone big.test=FILE --sign --key-dir K`: process start
                    until the SOA is answered with its RRSIG (DO=1)
  dnssec-signzone   `dnssec-signzone -S -K KEYS -n 2 -z -e +1209600 -o big.test -f OUT FILE`:
                    read, sign, write text (the key made by `dnssec-keygen -a ECDSAP256SHA256
                    -f KSK`; -z: it signs everything, as a CSK)
  knotd             `dnssec-signing: on`, a policy with ECDSA P-256, single-type-signing,
                    signing-threads: 2, no journal: process start until the SOA is answered
                    with its RRSIG

Keys are made once, before the timed rounds (dnssec-keygen; an untimed first run of
shardns sign and of knotd), so no run counts key generation. Wall seconds, CPU seconds (user + system) and peak RSS per run.
shardns keeps its last signed version in KEYDIR/state/ and, given the same records and keys,
serves that instead of signing: the state is removed before each shardns run, so each signs
everything.

`--incremental`: the re-signing of the zone after one change, in each round: `shardns sign`
of the zone as it is (state removed first, untimed), then, timed, `shardns sign` of a copy in
which one A record has another address (the previous version's signatures of unchanged
RRsets are kept); its line of output (read, signed and written seconds) is printed.

`--base PATH`: a second shardns build (e.g. main's) run beside the first in the same rounds,
as "shardns sign (base)" and "shardns serve --sign (base)" (signers shardns-sign-base,
shardns-serve-base; added to the default set), and in `--incremental` rounds.

Usage: bench/sign.py [--rounds N] [--zone FILE] [--out DIR] [--signers A,B] [--incremental] [--bin PATH] [--base PATH]
  (builds shardns in release; needs dnssec-keygen, dnssec-signzone, knotd)
  --signers: a comma-separated subset of shardns-sign, shardns-serve, dnssec-signzone, knotd,
  shardns-sign-base, shardns-serve-base
Output: a markdown table on stdout; raw figures in OUT/raw.tsv.
"""
import argparse, os, signal, socket, statistics, struct, subprocess, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--zone", default="/tmp/shardns-bench-zones/big.test.zone")
ap.add_argument("--out", default="/tmp/shardns-sign-bench")
ap.add_argument("--signers", default="shardns-sign,shardns-serve,dnssec-signzone,knotd")
ap.add_argument("--incremental", action="store_true")
ap.add_argument("--bin", help="this shardns binary instead of building the worktree's")
ap.add_argument("--base", help="a second shardns binary, run beside the first")
a = ap.parse_args()
if a.base and "--signers" not in sys.argv:
    a.signers += ",shardns-sign-base,shardns-serve-base"
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.makedirs(a.out, exist_ok=True)
if not os.path.exists(a.zone):
    subprocess.run([sys.executable, os.path.join(root, "bench/gen_zones.py"),
                    os.path.dirname(a.zone), "big"], check=True)
if a.bin:
    BIN = os.path.abspath(a.bin)
else:
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "shardns"], cwd=root, check=True)
    BIN = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target")),
                       "release/shardns")
PIN = ["taskset", "-c", "0,1"]
PORT_S, PORT_K = 5551, 5552

# Keys: one P-256 CSK for each signer.
kd_s = os.path.join(a.out, "keys-shardns"); os.makedirs(kd_s, exist_ok=True)
kd_b = os.path.join(a.out, "keys-bind"); os.makedirs(kd_b, exist_ok=True)
if not any(f.endswith(".private") for f in os.listdir(kd_b)):
    subprocess.run(["dnssec-keygen", "-q", "-K", kd_b, "-a", "ECDSAP256SHA256", "-f", "KSK",
                    "big.test."], check=True, stdout=subprocess.DEVNULL)

K = os.path.join(a.out, "knot"); os.makedirs(os.path.join(K, "db"), exist_ok=True)
zdir, zfile = os.path.split(os.path.abspath(a.zone))
open(os.path.join(K, "knot.conf"), "w").write(f"""server:
    rundir: "{K}"
    pidfile: "{K}/knot.pid"
    listen: 127.0.0.1@{PORT_K}
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
control:
    listen: "{K}/knot.sock"
log:
  - target: stderr
    any: warning
database:
    storage: "{K}/db"
    kasp-db: "{K}/kasp"
policy:
  - id: csk
    algorithm: ecdsap256sha256
    single-type-signing: on
    nsec3: off
    rrsig-lifetime: 14d
    rrsig-refresh: 7d
    signing-threads: 2
template:
  - id: default
    storage: "{zdir}"
    zonefile-sync: -1
    zonefile-load: whole
    journal-content: none
    semantic-checks: off
    dnssec-signing: on
    dnssec-policy: csk
zone:
  - domain: big.test
    file: {zfile}
""")

# The SOA query with DO=1: answered when the answer section has the SOA and its RRSIG.
Q = (struct.pack(">HHHHHH", 0x5a5a, 0, 1, 0, 0, 1) + b"\x03big\x04test\x00" +
     struct.pack(">HH", 6, 1) + b"\x00" + struct.pack(">HHIH", 41, 1232, 0x8000, 0))


def cpu_of(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def hwm_of(pid):
    return next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmHWM"))


def until_signed_answer(name, cmd, port, clean=None):
    """Start a server; seconds until a signed SOA answer, its CPU s and peak RSS KiB then."""
    if clean:
        clean()
    log = open(os.path.join(a.out, f"{name}.log"), "wb")
    t0 = time.monotonic()
    srv = subprocess.Popen(PIN + cmd, stdout=log, stderr=subprocess.STDOUT)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.005)
    out = None
    while time.monotonic() - t0 < 600 and srv.poll() is None:
        try:
            s.sendto(Q, ("127.0.0.1", port))
            r, _ = s.recvfrom(4096)
            if len(r) > 12 and r[:2] == Q[:2] and struct.unpack(">H", r[6:8])[0] >= 2:
                out = (time.monotonic() - t0, cpu_of(srv.pid), hwm_of(srv.pid))
                break
        except (socket.timeout, ConnectionRefusedError):
            time.sleep(0.005)
    srv.send_signal(signal.SIGTERM)
    try:
        srv.wait(20)
    except subprocess.TimeoutExpired:
        srv.kill(); srv.wait()
    if out is None:
        sys.exit(f"{name} gave no signed answer; see {log.name}")
    return out


def one_shot(name, cmd, log=None):
    """Run a command to its end under GNU time: wall s, CPU s, peak RSS KiB. Its standard
    error goes to `log` if given."""
    tf = os.path.join(a.out, "time.out")
    t0 = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-o", tf, "-f", "%U %S %M"] + PIN + cmd,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if log:
        open(log, "wb").write(p.stdout + p.stderr)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"{name} failed: {p.stderr.decode()[-500:]}")
    user, system, rss = open(tf).read().split()[-3:]
    return (wall, float(user) + float(system), int(rss))


def knot_clean():
    for f in os.listdir(os.path.join(K, "db")):
        p = os.path.join(K, "db", f)
        if os.path.isfile(p):
            os.remove(p)
        else:
            subprocess.run(["rm", "-rf", p])


def shardns_clean():
    """Forget the last signed version (and serial), keep the keys: the next run signs all."""
    subprocess.run(["rm", "-rf", os.path.join(kd_s, "state")], check=True)


def shardns_sign(zone, log=None, binary=None):
    return one_shot("shardns-sign", [
        binary or BIN, "sign", "big.test", zone, "--key-dir", kd_s,
        "-o", os.path.join(a.out, "shardns.signed")], log)


def shardns_serve(binary):
    return until_signed_answer("shardns-serve", [
        binary, "serve", "--listen", f"127.0.0.1:{PORT_S}", "--workers", "1",
        "--control", os.path.join(a.out, "ctl"),
        "--zone", f"big.test={a.zone}", "--sign", "--key-dir", kd_s], PORT_S, shardns_clean)


BASE = os.path.abspath(a.base) if a.base else None
RUNS = {
    "shardns sign": lambda: (shardns_clean(), shardns_sign(a.zone))[1],
    "shardns serve --sign": lambda: shardns_serve(BIN),
    "shardns sign (base)": lambda: (shardns_clean(), shardns_sign(a.zone, binary=BASE))[1],
    "shardns serve --sign (base)": lambda: shardns_serve(BASE),
    "dnssec-signzone -n 2": lambda: one_shot("dnssec-signzone", [
        "dnssec-signzone", "-q", "-S", "-K", kd_b, "-n", "2", "-z", "-e", "+1209600",
        "-o", "big.test", "-f", os.path.join(a.out, "bind.signed"), a.zone]),
    "knotd": lambda: until_signed_answer("knotd", ["knotd", "-c", os.path.join(K, "knot.conf")],
                                         PORT_K, knot_clean),
}

NAMES = {"shardns-sign": "shardns sign", "shardns-serve": "shardns serve --sign",
         "dnssec-signzone": "dnssec-signzone -n 2", "knotd": "knotd",
         "shardns-sign-base": "shardns sign (base)",
         "shardns-serve-base": "shardns serve --sign (base)"}
RUNS = {NAMES[k]: RUNS[NAMES[k]] for k in a.signers.split(",")}
if a.incremental:
    # The zone with one A record changed: the first "IN A 192.0.2." or "A 10." line found
    # gets its last octet moved.
    changed = os.path.join(a.out, "big.test.changed.zone")
    src = open(a.zone).read().split("\n")
    for i, line in enumerate(src):
        f = line.split()
        if len(f) >= 3 and f[-2] == "A" and f[0] not in ("@", "$TTL") and i > 10:
            octets = f[-1].split(".")
            octets[-1] = str((int(octets[-1]) + 1) % 256)
            src[i] = line[:line.rindex(f[-1])] + ".".join(octets)
            print(f"changed line {i + 1}: {line!r} -> {src[i]!r}", file=sys.stderr)
            break
    open(changed, "w").write("\n".join(src))
    shardns_sign(a.zone)  # keys, if none yet
    bins = {"shardns sign": BIN}
    if BASE:
        bins["shardns sign (base)"] = BASE
    res = {n: [] for n in bins}
    for r in range(a.rounds):
        for name, binary in bins.items():
            shardns_clean()
            shardns_sign(a.zone, binary=binary)
            open(changed, "rb").read()
            log = os.path.join(a.out, "incremental.log")
            v = shardns_sign(changed, log, binary=binary)
            # `shardns sign` prints "signed ZONE: N records, serial S, written to F (read R s,
            # signed S s, written W s)".
            line = next((l for l in open(log, errors="replace") if l.startswith("signed ")), "?")
            res[name].append(v)
            print(f"round {r + 1}: incremental {name}: {v[0]:.2f} s, CPU {v[1]:.2f} s, "
                  f"peak RSS {v[2] / 1024:.0f} MiB\n  {line.strip()}", file=sys.stderr)
    print("| re-signing after one change (2 cores) | median wall s | runs s | median CPU s | peak RSS MiB | runs MiB |")
    print("|---|---|---|---|---|---|")
    for name, v in res.items():
        print("| %s | %.2f | %s | %.2f | %.0f | %s |" % (
            name, statistics.median(x[0] for x in v), "/".join("%.2f" % x[0] for x in v),
            statistics.median(x[1] for x in v), statistics.median(x[2] for x in v) / 1024,
            "/".join("%.0f" % (x[2] / 1024) for x in v)))
    sys.exit(0)

# Untimed first runs of the two that make their own keys.
for name in [n for n in ("shardns sign", "knotd") if n in RUNS]:
    run = RUNS[name]
    print(f"warm-up: {name} {run()[0]:.2f} s", file=sys.stderr)
raw = open(os.path.join(a.out, "raw.tsv"), "w")
res = {n: [] for n in RUNS}
for r in range(a.rounds):
    for name, run in RUNS.items():
        open(a.zone, "rb").read()  # the same warm page cache for all
        v = run()
        res[name].append(v)
        raw.write(f"{name}\t{v[0]:.3f}\t{v[1]:.3f}\t{v[2]}\n"); raw.flush()
        print(f"round {r + 1}: {name}: {v[0]:.2f} s, CPU {v[1]:.2f} s, peak RSS {v[2] / 1024:.0f} MiB",
              file=sys.stderr)

print("| signer (2 cores) | median wall s | runs s | median CPU s | peak RSS MiB | runs MiB |")
print("|---|---|---|---|---|---|")
med = {}
for name, v in res.items():
    med[name] = statistics.median(x[0] for x in v)
    print("| %s | %.2f | %s | %.2f | %.0f | %s |" % (
        name, med[name], "/".join("%.2f" % x[0] for x in v),
        statistics.median(x[1] for x in v), statistics.median(x[2] for x in v) / 1024,
        "/".join("%.0f" % (x[2] / 1024) for x in v)))
print()
for peer in [p for p in ("dnssec-signzone -n 2", "knotd") if p in med and "shardns sign" in med
             and "shardns serve --sign" in med]:
    print("%s / shardns sign: %.1fx; / shardns serve --sign: %.1fx" % (
        peer, med[peer] / med["shardns sign"], med[peer] / med["shardns serve --sign"]))
