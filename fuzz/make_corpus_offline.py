"""Seeds of the offline-KSK targets `ksr`, `skr` and `pregenerated` (see docs/FUZZING.md),
for fuzz/make_corpus.py.

Hand-made texts always (the format of docs/DNSSEC.md "Offline KSK (KSR and SKR)": good
ones, and each kind of damage the readers refuse); with `--shardns BIN`, also the real
documents of a run of the steps (`shardns key pregenerate`, `ksr`, `sign-ksr` with a KSK
from BIND's `dnssec-keygen`, for ECDSA and Ed25519 ZSKs, every CDS mode), whose
signatures verify. Those are made with fresh keys, so they differ at each run.
"""
import os
import shutil
import subprocess
import tempfile

# An ECDSA P-256 public key of the right size (any 64 octets pass the KSR's shape check).
P256 = "oJMRESz5E4gYzS/q6XDrvU1qMPYIjCWzJaOau8XNEZeqCYKD5ar0IRd8KqXXFJkqmVfRvMGPmM1x8fGAa2XhSA=="
P256B = "mdsw1wSmAKJhMs7ALW6ULNeMbfGSM6SVmvHg1ISYdMqtTSjxHn5X7sFdrObTp5MjRqTHwaz2h/v4oL7B0ClmfQ=="
ED = "vNcaV3O6S0eAc02sGTMa97/CbG7n/iEnezlO2qrC5xU="

KSR_HEAD = ";; shardns-ksr example.com.\n;; ttl 3600\n"
P1 = ";; period 20261201000000 20261231000000\n"
P2 = ";; period 20261231000000 20270103020000\n"
K1 = "example.com. 3600 IN DNSKEY 256 3 13 %s\n" % P256
K2 = "example.com. 3600 IN DNSKEY 256 3 13 %s\n" % P256B
END = ";; end\n"

KSRS = {
    # The example of docs/DNSSEC.md: a ZSK rollover's two periods.
    "doc-example": KSR_HEAD + P1 + K1 + P2 + K1 + K2 + END,
    "one-period": KSR_HEAD + P1 + K1 + END,
    # The target picks the CDS mode by the TTL modulo 3: none (above), always, delete.
    "ttl-cds-always": KSR_HEAD.replace("3600", "3601") + P1 + K1.replace("3600", "3601") + END,
    "ttl-cds-delete": KSR_HEAD.replace("3600", "3602") + P1 + K1.replace("3600", "3602") + END,
    "ed25519-relative-owner": KSR_HEAD + P1 + "@ 3600 IN DNSKEY 256 3 15 %s\n" % ED + END,
    "parentheses": KSR_HEAD + P1 + "example.com. 3600 IN DNSKEY 256 3 13 (\n %s\n %s )\n"
    % (P256[:44], P256[44:]) + END,
    "comments-crlf": (KSR_HEAD + ";; a comment\n" + P1 + K1 + "; another\n" + END).replace(
        "\n", "\r\n"
    ),
    "twice-same-key": KSR_HEAD + P1 + K1 + K1 + END,
    "generic-rdata": KSR_HEAD + P1 + "example.com. 3600 IN DNSKEY \\# 6 010003 0d 0102\n" + END,
    "empty-period": KSR_HEAD + P1 + P2 + K1 + END,
    "far-future": KSR_HEAD + ";; period 21050101000000 21070101000000\n" + K1 + END,
    "long-period": KSR_HEAD + ";; period 19700101000000 20991231235959\n" + K1 + END,
    # Refused: each says why.
    "no-end": KSR_HEAD + P1 + K1,
    "no-ttl": ";; shardns-ksr example.com.\n" + P1 + K1 + END,
    "bad-ttl": ";; shardns-ksr example.com.\n;; ttl 1h\n" + P1 + K1 + END,
    "record-first": KSR_HEAD + K1 + P1 + END,
    "other-ttl": KSR_HEAD + P1 + K1.replace("3600", "60") + END,
    "other-class": KSR_HEAD + P1 + K1.replace(" IN ", " CH ") + END,
    "other-type": KSR_HEAD + P1 + "example.com. 3600 IN TXT \"not a key\"\n" + END,
    "other-owner": KSR_HEAD + P1 + K1.replace("example.com.", "www.example.com.", 1) + END,
    "include": KSR_HEAD + P1 + "$INCLUDE /dev/null\n" + END,
    "origin": KSR_HEAD + P1 + "$ORIGIN example.com.\n@ 3600 IN DNSKEY 256 3 13 %s\n" % P256
    + END,
    "bad-time": KSR_HEAD + ";; period 20261301000000 20261231000000\n" + K1 + END,
    "gap": KSR_HEAD + P1 + K1 + ";; period 20270101000000 20270201000000\n" + K1 + END,
    "backwards": KSR_HEAD + P2 + K1 + P1 + K1 + END,
    "ksk-asked": KSR_HEAD + P1 + K1.replace(" 256 ", " 257 ") + END,
    "bad-base64": KSR_HEAD + P1 + "example.com. 3600 IN DNSKEY 256 3 13 !!!\n" + END,
    "skr-not-ksr": ";; shardns-skr example.com.\n" + P1 + K1 + END,
    "empty": "",
}

SKR_HEAD = ";; shardns-skr example.com.\n"
SIG = (
    "example.com. 3600 IN RRSIG DNSKEY 13 2 3600 20270101000000 20261130230000 12345 "
    "example.com. %s\n" % (P256)
)

SKRS = {
    # The shape of a response; the signature does not verify (hand-made).
    "shape": SKR_HEAD + P1 + K1 + K1.replace(" 256 ", " 257 ").replace(P256, P256B) + SIG + END,
    "cds-cdnskey": SKR_HEAD + P1 + K1 + "example.com. 3600 IN CDNSKEY 257 3 13 %s\n" % P256B
    + "example.com. 3600 IN CDS 12345 13 2 " + "ab" * 32 + "\n" + SIG + END,
    "cds-delete": SKR_HEAD + P1 + K1 + "example.com. 3600 IN CDNSKEY 0 3 0 AA==\n"
    + "example.com. 3600 IN CDS 0 0 0 00\n" + SIG + END,
    "empty-period": SKR_HEAD + P1 + END,
    "two-periods": SKR_HEAD + P1 + K1 + SIG + P2 + K2 + SIG + END,
    "no-end": SKR_HEAD + P1 + K1,
    "include": SKR_HEAD + P1 + "$include /dev/null\n" + END,
    "ttl-directive": SKR_HEAD + ";; ttl 5\n" + P1 + K1 + END,
    "ksr-not-skr": KSR_HEAD + P1 + K1 + END,
    "class-ch": SKR_HEAD + P1 + K1.replace(" IN ", " CH ") + END,
    "bad-time": SKR_HEAD + ";; period 2026120100000 20261231000000\n" + K1 + END,
}

PREGENERATED = {
    "written": "dnskey_ttl 3600\nmax_ttl 86400\npropagation 3600\n",
    "partial": "max_ttl 300\n",
    "crlf-spaces": "dnskey_ttl   60\r\nmax_ttl\t300\r\npropagation +7\r\n",
    "twice": "max_ttl 5\nmax_ttl 7\nmax_ttlx 9\n",
    "bad": "dnskey_ttl -1\nmax_ttl 18446744073709551616\npropagation one\n",
    "empty": "",
}


def run(args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout


def real_documents(shardns, write):
    """The documents of a real run of the offline-KSK steps, in a scratch directory."""
    keygen = shutil.which("dnssec-keygen")
    if not keygen:
        print("dnssec-keygen not found: no real KSR/SKR seeds")
        return
    tmp = tempfile.mkdtemp(prefix="shardns-corpus-")
    try:
        for alg, bind_alg in (("ecdsap256sha256", "ECDSAP256SHA256"), ("ed25519", "ED25519")):
            zsk, ksk = os.path.join(tmp, alg, "zsk"), os.path.join(tmp, alg, "ksk")
            os.makedirs(zsk)
            os.makedirs(ksk)
            run([keygen, "-q", "-a", bind_alg, "-f", "KSK", "-K", ksk, "z.test."])
            base = ["--key-dir", zsk]
            run([shardns, "key", "pregenerate", "z.test.", *base, "--from", "20261201000000",
                 "--to", "20261203000000", "--zsk-lifetime", "1d", "--dnskey-ttl", "1h",
                 "--max-ttl", "1h", "--propagation", "1h", "--algorithm", alg])
            state = os.path.join(zsk, "state")
            kept = [f for f in os.listdir(state) if f.endswith(".pregenerated")]
            write("pregenerated", "real-" + alg, open(os.path.join(state, kept[0]), "rb").read())
            ksr = run([shardns, "key", "ksr", "z.test.", *base, "--from", "20261201000000",
                       "--to", "20261203000000", "--ttl", "1h"])
            write("ksr", "real-" + alg, ksr.encode())
            path = os.path.join(tmp, alg, "z.ksr")
            open(path, "w").write(ksr)
            for mode in ("always", "none", "delete-dnssec"):
                skr = run([shardns, "key", "sign-ksr", path, "--key-dir", ksk,
                           "--cds-cdnskey-publish", mode, "--backdate", "1h"])
                write("skr", "real-%s-%s" % (alg, mode), skr.encode())
    finally:
        shutil.rmtree(tmp)


def seeds(write, shardns=None):
    for name, text in KSRS.items():
        write("ksr", name, text.encode())
    for name, text in SKRS.items():
        write("skr", name, text.encode())
    for name, text in PREGENERATED.items():
        write("pregenerated", name, text.encode())
    if shardns:
        real_documents(shardns, write)
