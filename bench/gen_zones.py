#!/usr/bin/env python3
"""Benchmark zones: the shapes the peer servers (knotd, nsd, unbound) are measured on.

bench.test.: SOA, 2 NS, MX, glue, 1,000 hosts host0000..host0999 (A), 10 AAAA, a CNAME;
             queries-A.txt cycles over the 1,000 names.
bench.test.signed.zone / bench.test.nsec3.zone (`signed`): bench.test. signed by BIND's
             dnssec-signzone (ECDSA P-256 KSK + ZSK, one year of validity) with NSEC, and with
             NSEC3 (0 extra iterations, no salt, RFC 9276); queries-nx.txt asks for 1,000 names
             that do not exist (each an NSEC3 name error: two hashes per query).
big.test.:   1,276,513 records (the 1998 paper's figure): SOA, 2 NS, 2 MX, 2 A and
             425,502 names with A, AAAA and TXT; queries-big-A.txt holds 1,000 names
             spread evenly over it.
Usage: gen_zones.py OUTDIR [small|big|signed|all]  (signed needs dnssec-keygen/-signzone)"""
import os
import sys

out = sys.argv[1]
which = sys.argv[2] if len(sys.argv) > 2 else "all"
os.makedirs(out, exist_ok=True)

if which in ("small", "all"):
    with open(os.path.join(out, "bench.test.zone"), "w") as f:
        f.write("$ORIGIN bench.test.\n$TTL 86400\n")
        f.write("@ IN SOA ns1.bench.test. hostmaster.bench.test. 2024010101 3600 900 604800 86400\n")
        f.write("@ IN NS ns1.bench.test.\n@ IN NS ns2.bench.test.\n@ IN MX 10 mail.bench.test.\n")
        f.write("ns1 IN A 127.0.0.1\nns2 IN A 127.0.0.2\nmail IN A 127.0.0.3\nmail IN AAAA ::3\n")
        f.write("www IN CNAME host0001.bench.test.\n")
        for i in range(1000):
            f.write("host%04d IN A 10.%d.%d.1\n" % (i, i // 256, i % 256))
        for i in range(10):
            f.write("host%04d IN AAAA 2001:db8::%d\n" % (i, i + 1))
    with open(os.path.join(out, "queries-A.txt"), "w") as f:
        for i in range(1000):
            f.write("host%04d.bench.test A\n" % i)

if which == "signed":
    import glob
    import subprocess
    keys = os.path.join(out, "keys")
    os.makedirs(keys, exist_ok=True)
    for k in glob.glob(os.path.join(keys, "K*")):
        os.remove(k)
    if not os.path.exists(os.path.join(out, "bench.test.zone")):
        sys.exit("generate the small zone first: gen_zones.py OUTDIR small")
    for extra in (["-f", "KSK"], []):
        subprocess.run(["dnssec-keygen", "-q", "-K", keys, "-a", "ECDSAP256SHA256"] + extra + ["bench.test."],
                       check=True, stdout=subprocess.DEVNULL)
    for name, nsec3 in (("bench.test.signed.zone", []), ("bench.test.nsec3.zone", ["-3", "-", "-H", "0"])):
        subprocess.run(["dnssec-signzone", "-q", "-S", "-K", keys, "-o", "bench.test.", "-e", "+31536000",
                        "-d", keys, "-f", os.path.join(out, name)] + nsec3 + [os.path.join(out, "bench.test.zone")],
                       check=True, cwd=out)
    with open(os.path.join(out, "queries-nx.txt"), "w") as f:
        for i in range(1000):
            f.write("nx%04d.bench.test A\n" % i)

if which in ("big", "all"):
    n = 425502
    with open(os.path.join(out, "big.test.zone"), "w") as f:
        w = f.write
        w("$ORIGIN big.test.\n$TTL 86400\n")
        w("@ IN SOA ns1.big.test. hostmaster.big.test. 2024010101 3600 900 604800 86400\n")
        w("@ IN NS ns1.big.test.\n@ IN NS ns2.big.test.\n")
        w("@ IN MX 10 h000000.big.test.\n@ IN MX 20 h000001.big.test.\n")
        w("ns1 IN A 127.0.0.1\nns2 IN A 127.0.0.2\n")
        for i in range(n):
            h = "h%06d" % i
            w("%s IN A 10.%d.%d.%d\n" % (h, (i >> 16) & 255, (i >> 8) & 255, i & 255))
            w("%s IN AAAA 2001:db8::%x:%x\n" % (h, i >> 16, i & 0xFFFF))
            w('%s IN TXT "record %d of the big zone"\n' % (h, i))
    with open(os.path.join(out, "queries-big-A.txt"), "w") as f:
        step = n // 1000
        for k in range(1000):
            f.write("h%06d.big.test A\n" % (k * step))
