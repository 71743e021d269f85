#!/usr/bin/env python3
"""Helpers of make-zones.sh (the validation test's zones).

collide KEYFILE N   prints N DNSKEY records with the key tag and algorithm of KEYFILE's key
                    (its public key with two octets of the same parity swapped: the tag is a
                    sum over even and odd octets, so it does not change)
edit WORK           makes the bogus zones of WORK/*.signed bogus (see make-zones.sh)
"""
import base64
import os
import sys


def key_tag(rdata: bytes) -> int:
    ac = 0
    for i, b in enumerate(rdata):
        ac += b if i & 1 else b << 8
    ac += (ac >> 16) & 0xFFFF
    return ac & 0xFFFF


def collide(keyfile: str, n: int) -> None:
    line = next(l for l in open(keyfile) if not l.startswith(";") and " DNSKEY " in l)
    f = line.split()
    i = f.index("DNSKEY")
    owner, flags, proto, alg = f[0], int(f[i + 1]), int(f[i + 2]), int(f[i + 3])
    key = base64.b64decode("".join(f[i + 4:]))
    head = bytes([flags >> 8, flags & 0xFF, proto, alg])
    tag = key_tag(head + key)
    seen = {key}
    out = []
    j = 0
    while len(out) < n:
        a, b = 2 * j % len(key), (2 * j + 2 * (1 + j // len(key))) % len(key)
        j += 1
        k = bytearray(key)
        k[a], k[b] = k[b], k[a]
        k = bytes(k)
        if k in seen:
            continue
        assert key_tag(head + k) == tag
        seen.add(k)
        out.append(f"{owner} 3600 IN DNSKEY {flags} {proto} {alg} {base64.b64encode(k).decode()}")
    print("\n".join(out))


def records(path):
    return [l.rstrip("\n") for l in open(path)]


def is_rr(line, owner, rtype, covered=None):
    f = line.split()
    if len(f) < 5 or f[0].lower() != owner or f[3] != rtype:
        return False
    return covered is None or f[4] == covered


def edit(work: str) -> None:
    def path(apex):
        return os.path.join(work, apex + ".signed")

    def rewrite(apex, fn):
        lines = fn(records(path(apex)))
        with open(path(apex), "w") as out:
            out.write("\n".join(lines) + "\n")

    # nosig: the RRSIG of www A removed.
    rewrite("nosig.val.", lambda ls: [l for l in ls if not is_rr(l, "www.nosig.val.", "RRSIG", "A")])

    # forged: the A record changed, its RRSIG kept.
    def forge(ls):
        out = []
        for l in ls:
            if is_rr(l, "www.forged.val.", "A"):
                l = l.replace("192.0.2.10", "192.0.2.66")
            out.append(l)
        return out

    rewrite("forged.val.", forge)

    # badnsec3: every NSEC3 (and its RRSIG) but the apex's removed.
    def break_chain(ls):
        apex_hash = None
        for l in ls:
            f = l.split()
            if len(f) > 4 and f[3] == "NSEC3" and "SOA" in f[9:]:
                apex_hash = f[0].lower()
        assert apex_hash
        keep = []
        for l in ls:
            f = l.split()
            if len(f) > 4 and f[0].lower() != apex_hash and (
                f[3] == "NSEC3" or (f[3] == "RRSIG" and f[4] == "NSEC3")
            ):
                continue
            keep.append(l)
        return keep

    rewrite("badnsec3.val.", break_chain)

    # keytrap: www A signed by 12 RRSIGs with the ZSK's tag, none valid.
    def trap(ls):
        out = []
        for l in ls:
            if is_rr(l, "www.keytrap.val.", "RRSIG", "A"):
                f = l.split()
                sig = bytearray(base64.b64decode("".join(f[12:])))
                for i in range(12):
                    bad = bytearray(sig)
                    bad[i] ^= 0x5A
                    bad[-1 - i] ^= 0xA5
                    out.append(" ".join(f[:12] + [base64.b64encode(bytes(bad)).decode()]))
                continue
            out.append(l)
        return out

    rewrite("keytrap.val.", trap)

    # badsoa: the SOA's serial changed, its RRSIG kept.
    def bad_soa(ls):
        return [
            l.replace(" 2026010101 ", " 2026010102 ") if is_rr(l, "badsoa.val.", "SOA") else l
            for l in ls
        ]

    rewrite("badsoa.val.", bad_soa)


if __name__ == "__main__":
    if sys.argv[1] == "collide":
        collide(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "edit":
        edit(sys.argv[2])
    else:
        sys.exit(__doc__)
