#!/usr/bin/env python3
"""Writes the seed corpus in fuzz/corpus/<target>/ (see docs/FUZZING.md).

    python3 fuzz/make_corpus.py [--server 127.0.0.1:PORT] [--shardns target/debug/shardns]

Queries, names and zone snippets are built here, deterministically. With --server, the
responses of a server loaded with crates/shardns/tests/diff/*.zone (knotd or shardns, on
loopback) to the seed queries are saved as parse_message seeds too. With --shardns, real
offline-KSK documents (fuzz/make_corpus_offline.py) join the hand-made ksr/skr seeds. Existing files with the
same names are overwritten; files the fuzzer added are left alone.
"""
import argparse
import hashlib
import os
import socket
import struct

import make_corpus_offline

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
ZONES = os.path.join(HERE, "..", "crates", "shardns", "tests", "diff")


def name_wire(name):
    out = b""
    for label in name.rstrip(".").split("."):
        if label:
            out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def query(name, qtype, qid=0x1234, edns=None, flags=0x0000, qclass=1, qdcount=1):
    """A query; edns = (udp size, DO) or None."""
    m = struct.pack("!HHHHHH", qid, flags, qdcount, 0, 0, 1 if edns else 0)
    m += name_wire(name) + struct.pack("!HH", qtype, qclass)
    if edns:
        size, do = edns
        m += b"\0" + struct.pack("!HHIH", 41, size, 0x8000 if do else 0, 0)
    return m


QUERIES = {
    "a-www": query("www.diff.test.", 1),
    "aaaa-edns": query("www.diff.test.", 28, edns=(1232, False)),
    "mx-apex-do": query("diff.test.", 15, edns=(4096, True)),
    "any-udp": query("diff.test.", 255),
    "txt-big-noedns": query("big.diff.test.", 16),
    "txt-huge-edns512": query("huge.diff.test.", 16, edns=(512, False)),
    "wildcard": query("x.y.wild.diff.test.", 16),
    "wild-cname-loop": query("a.wloop.diff.test.", 1),
    "cname-chain": query("c1.diff.test.", 1, edns=(1232, True)),
    "cname-loop": query("loop1.diff.test.", 1),
    "referral": query("www.outdeleg.diff.test.", 1),
    "ds-at-cut": query("child.diff.test.", 43),
    "dname": query("www.dn.diff.test.", 1),
    "dname-yxdomain": query("x" * 63 + "." + "y" * 10 + ".dnlong.diff.test.", 1),
    "nxdomain": query("nothere.diff.test.", 1),
    "srv": query("_sip._udp.diff.test.", 33),
    "svcb": query("svc.diff.test.", 64),
    "generic": query("generic.diff.test.", 65280),
    "refused-zone": query("example.com.", 1),
    "class-ch": query("diff.test.", 16, qclass=3),
    "axfr": query("diff.test.", 252),
    "badvers": query("diff.test.", 6, edns=(1232, False)).replace(b"\x00\x29\x04\xd0\x00\x00", b"\x00\x29\x04\xd0\x00\x01", 1),
    "notify-opcode": query("diff.test.", 6, flags=0x2000),
    "qdcount0": struct.pack("!HHHHHH", 7, 0, 0, 0, 0, 0),
    "qdcount2": query("diff.test.", 6, qdcount=2) + name_wire("diff.test.") + struct.pack("!HH", 1, 1),
    "compressed-qname": struct.pack("!HHHHHH", 9, 0, 1, 0, 0, 0) + b"\xc0\x0c" + struct.pack("!HH", 1, 1),
    "short-header": b"\x12\x34\x00\x00\x00\x01",
    "mixed-case": query("WwW.DiFf.TeSt.", 1),
    # DNSSEC answers from the lab's signed zones (DO=1): signed data, NSEC and NSEC3 name
    # errors, a wildcard, an opt-out referral, DS, truncation at 512.
    "do-nsec-a": query("www.nsec.lab.", 1, edns=(1232, True)),
    "do-nsec-nx": query("nx.nsec.lab.", 1, edns=(1232, True)),
    "do-nsec3-nx": query("nx.nsec3.lab.", 1, edns=(1232, True)),
    "do-nsec3-wild": query("x.wild.nsec3.lab.", 16, edns=(1232, True)),
    "do-optout-ref": query("www.unsigned.optout.lab.", 1, edns=(1232, True)),
    "do-optout-ds": query("unsigned.optout.lab.", 43, edns=(1232, True)),
    "do-nsec3-tc": query("nx.nsec3.lab.", 1, edns=(512, True)),
}

# Names for name_from_wire: a 2-byte offset (big-endian) then a message.
NAMES = {
    "plain": (0, name_wire("www.example.com.")),
    "root": (0, b"\0"),
    "pointer-back": (6, b"\x03com\x00\x00\x03www\xc0\x00"),
    "pointer-self": (0, b"\xc0\x00"),
    "pointer-forward": (0, b"\xc0\x02\x03com\x00"),
    "pointer-loop": (4, b"\x01a\xc0\x04\x01b\xc0\x00"),
    "label-64": (0, b"\x40" + b"a" * 64 + b"\0"),
    "long-name": (0, (b"\x3f" + b"x" * 63) * 4 + b"\0"),
    "label-type-01": (0, b"\x41abc\0"),
    "chain-of-pointers": (12, b"\x01a\x00" + b"\x01b\xc0\x00" + b"\x01c\xc0\x03" + b"\x01d\xc0\x07"),
}

SNIPPETS = {
    "minimal": "@ SOA ns hostmaster 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n",
    "ttl-origin": "$TTL 1h30m\n$ORIGIN sub.example.\nwww 60 IN A 192.0.2.1\n  IN 60 AAAA 2001:db8::1\n",
    "parens-comments": "@ IN SOA ns.example. hm.example. ( 1 ; serial\n 7200 3600\n 1209600 300 )\n",
    "quoted": 'txt TXT "a \\"quoted\\" string" unquoted "\\065\\066" ""\n',
    "escapes": "esc\\.dot A 192.0.2.9\n\\@sign TXT x\n\\032space A 192.0.2.10\n",
    "generic": "g TYPE65280 \\# 4 deadbeef\ng2 TYPE65534 \\# 0\na A \\# 4 c0000201\n",
    "wildcards": "*.wild A 192.0.2.100\nsub.*.wild TXT x\n*.cname CNAME www\n",
    "dname-cname": "dn DNAME target.example.\nc CNAME dn\n",
    "mx-srv-naptr": 'mx MX 10 mail\nsrv SRV 0 5 5060 sip\nnaptr NAPTR 100 10 "S" "SIP+D2U" "" _sip._udp\n',
    "svcb": 'svc SVCB 1 . alpn="h2,h3" port=443 ipv4hint=192.0.2.1,192.0.2.2 ech=AAAA mandatory=alpn key65333=ex\nh HTTPS 0 svc\n',
    "caa-sshfp-tlsa": 'caa CAA 0 issue "ca.example.net"\nsshfp SSHFP 1 1 0123456789abcdef0123456789abcdef01234567\n_443._tcp TLSA 3 1 1 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n',
    "dnssec": "@ DNSKEY 257 3 13 AAEC\n@ NSEC3PARAM 1 0 10 ABCD\nx RRSIG A 13 2 3600 20300101000000 20240101000000 1 example. AAEC\nx NSEC y.example. A RRSIG NSEC\n"
    "n61hbqjah2272tktfsts058p0vl7v7uo NSEC3 1 0 10 - 2rkehtketm513nkn7io0knakcakc9qqh A\nd DS 1 13 2 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n",
    "hinfo-ptr": 'h HINFO "PC" "Linux"\np PTR www.example.\n',
    "errors": "bad A 300.1.1.1\nbad2 IN CH A 1.2.3.4\n$TTL x\n(\n",
    "out-of-zone": "www.example.org. A 192.0.2.1\n",
    "blank-owner": "\n  A 192.0.2.1\n",
}


# Config texts for the config target (docs/shardns.example.toml is added whole).
CONFIGS = {
    "empty": "",
    "server": '[server]\nlisten = ["127.0.0.1:5300", "[::1]:5300"]\nworkers = 2\ncontrol_socket = "/run/shardns.ctl"\n',
    "zones": '[[zone]]\nname = "example.com."\nfile = "example.com.zone"\n\n[[zone]]\nname = "example.net"\nfile = "/abs/example.net.zone"\n',
    "limits": "[limits]\ntcp_connections_per_worker = 10\ntcp_connections = 20\ntcp_idle_timeout_ms = 500\nudp_batch = 1024\nudp_receive_buffer = 0\n",
    "resolver": '[resolver]\nrecursion = true\nroot_hints = "hints"\nforward = ["corp.=10.0.0.1:53", "corp.=[::1]:5353"]\n'
    'allow = ["127.0.0.0/8", "::1", "10.0.0.0/8", "fe80::/10", "0.0.0.0/0"]\ncache_size = 1\nmin_ttl = 5\nmax_ttl = 1\nupstream_port = 0\n',
    "log-stats": '[log]\nlevel = "warn,shardns::query=info"\nqueries = true\n[stats]\nhttp = "127.0.0.1:9153"\n',
    "inline-tables": 'server = { workers = 3 }\nzone = [ { name = "a.", file = "a" }, { name = "b.", file = "b" } ]\n',
    "err-type": '[server]\nworkers = "two"\n',
    "err-unknown-key": "[server]\nwrokers = 2\n",
    "err-zero": "[server]\nworkers = 0\n[limits]\nudp_batch = 1025\n",
    "err-bad-name": '[[zone]]\nname = "a..b"\nfile = "x"\n',
    "err-bad-acl": '[resolver]\nallow = ["10.0.0.0/33", "::1/129", "nonsense"]\n',
    "err-bad-forward": '[resolver]\nforward = ["corp.", "=1.2.3.4:53", "x.=1.2.3.4"]\n',
    "err-bad-filter": '[log]\nlevel = "shardns=[{"\n',
    "err-syntax": "[server\nworkers = 2\n",
    "err-duplicate": "[server]\nworkers = 1\nworkers = 2\n",
    "err-unterminated": '[log]\nlevel = "info\n',
    "multiline-crlf": '[log]\r\nlevel = """\r\ninfo"""\r\n',
    "unicode": '[[zone]]\nname = "b\u00fccher.example."\nfile = "z\u00f6ne"\n# \u00e9\u00e8 comment\n',
    "datetime-float": "[server]\nworkers = 1979-05-27T07:32:00Z\n[limits]\ntcp_idle_timeout_ms = 1e3\n",
    "deep-array": "x = " + "[" * 200 + "]" * 200 + "\n",
    "huge-int": "[limits]\ntcp_connections = 99999999999999999999999\n",
}


def fuzz_query(name, qtype, qid, edns=None, flags=0x0100, qclass=1):
    return query(name, qtype, qid=qid, edns=edns, flags=flags, qclass=qclass)


# Queries for the resolver_cache target. The ID sets the clock (ID x 100 ms after the
# cache was filled): 0 fresh, 700 past the 60 s TTL, 6100 past the 600 s negative TTL,
# 36100 past everything.
CACHE_QUERIES = {}
for qname, qtype in [
    ("www.fuzz.test.", 1), ("www.fuzz.test.", 28), ("www.fuzz.test.", 15), ("alias.fuzz.test.", 1),
    ("c1.fuzz.test.", 1), ("c3.fuzz.test.", 16), ("loop1.fuzz.test.", 1), ("x.d.fuzz.test.", 1),
    ("big.fuzz.test.", 16), ("short.fuzz.test.", 1), ("mixed.fuzz.test.", 1), ("nx.fuzz.test.", 1),
    ("nx2.fuzz.test.", 28),
]:
    label = qname.split(".")[0] + "-" + str(qtype)
    CACHE_QUERIES[label] = fuzz_query(qname, qtype, 0)
    CACHE_QUERIES[label + "-edns-do"] = fuzz_query(qname, qtype, 300, edns=(1232, True))
    CACHE_QUERIES[label + "-late"] = fuzz_query(qname, qtype, 700)
for qid in (6100, 36100):
    CACHE_QUERIES["nx-1-at-%d" % qid] = fuzz_query("nx.fuzz.test.", 1, qid)
CACHE_QUERIES.update({
    "big-txt-edns512": fuzz_query("big.fuzz.test.", 16, 1, edns=(512, False)),
    "mixed-case": fuzz_query("WwW.FuZZ.tEsT.", 1, 2),
    "alias-cname": fuzz_query("alias.fuzz.test.", 5, 3),
    "dname-type": fuzz_query("d.fuzz.test.", 39, 4),
    "cname-type-at-dname-synthesis": fuzz_query("x.d.fuzz.test.", 5, 9),
    "any": fuzz_query("www.fuzz.test.", 255, 5),
    "class-ch": fuzz_query("www.fuzz.test.", 1, 6, qclass=3),
    "other-name": fuzz_query("nothere.example.", 1, 7),
    "compressed-qname": struct.pack("!HHHHHH", 8, 0x0100, 1, 0, 0, 0) + b"\xc0\x0c" + struct.pack("!HH", 1, 1),
})


def ixfr(name, serial, compressed=False, qid=0x1995, edns=None):
    """An IXFR query with the client's SOA in the authority section (RFC 1995 §3)."""
    m = struct.pack("!HHHHHH", qid, 0, 1, 0, 1, 1 if edns else 0)
    m += name_wire(name) + struct.pack("!HH", 251, 1)
    owner = b"\xc0\x0c" if compressed else name_wire(name)
    names = b"\xc0\x0c\xc0\x0c" if compressed else b"\0\0"
    rdata = names + struct.pack("!IIIII", serial, 7200, 3600, 1209600, 60)
    m += owner + struct.pack("!HHIH", 6, 1, 0, len(rdata)) + rdata
    if edns:
        m += b"\0" + struct.pack("!HHIH", 41, edns, 0, 0)
    return m


def tsig_signed(msg, key=b"fuzz.", secret=b"secret", now=1_700_000_000):
    """`msg` signed with HMAC-SHA256 as RFC 8945 §4.3.3 says (a client's request)."""
    import hmac, hashlib
    kname, alg = name_wire(key.decode()), name_wire("hmac-sha256.")
    time48 = struct.pack("!Q", now)[2:]
    variables = kname + struct.pack("!HI", 255, 0) + alg + time48 + struct.pack("!HHH", 300, 0, 0)
    mac = hmac.new(secret, msg + variables, hashlib.sha256).digest()
    qid = msg[:2]
    rdata = alg + time48 + struct.pack("!HH", 300, len(mac)) + mac + qid + struct.pack("!HH", 0, 0)
    rr = kname + struct.pack("!HHIH", 250, 255, 0, len(rdata)) + rdata
    arcount = struct.unpack("!H", msg[10:12])[0] + 1
    return msg[:10] + struct.pack("!H", arcount) + msg[12:] + rr


XFR_QUERIES = {
    "axfr": query("diff.test.", 252),
    "axfr-edns": query("diff.test.", 252, edns=(1232, False)),
    "axfr-case": query("DiFF.TesT.", 252, qid=0xBEEF),
    "axfr-ch": query("diff.test.", 252, qclass=3),
    "axfr-other-zone": query("other.test.", 252),
    "ixfr": ixfr("diff.test.", 1),
    "ixfr-compressed": ixfr("diff.test.", 4000000000, compressed=True),
    "ixfr-edns": ixfr("diff.test.", 2024010101, edns=4096),
    "ixfr-no-soa": query("diff.test.", 251),
    "ixfr-short": ixfr("diff.test.", 1)[:-7],
    "axfr-tsig": tsig_signed(query("diff.test.", 252)),
    "ixfr-tsig-edns": tsig_signed(ixfr("diff.test.", 1, edns=1232)),
}


# tsig: byte 0 the kind (0 TXT, 1 SOA, 2 AXFR, 3 IXFR, 4 NOTIFY; +8 EDNS, +16 TCP), byte 1
# the signing time (0 now, 1 1000 s before, 2 1000 s after), byte 2 the MAC's length (0 full,
# 1 16 octets, 2 8, 3 33; +16 six octets of Other Data), then (offset, xor) pairs
# (fuzz/src/tsig.rs).
TSIG_SEEDS = {
    "query-txt": bytes([0, 0, 0]),
    "query-soa-edns-tcp": bytes([1 + 8 + 16, 0, 0]),
    "axfr-tcp": bytes([2 + 16, 0, 0]),
    "ixfr-edns": bytes([3 + 8, 0, 0]),
    "notify": bytes([4, 0, 0]),
    "badtime-past": bytes([0, 1, 0]),
    "badtime-future-axfr": bytes([2 + 16, 2, 0]),
    "mac-16": bytes([0, 0, 1]),
    "mac-8-notify": bytes([4, 0, 2]),
    "mac-33": bytes([1, 0, 3]),
    "other-data": bytes([0 + 8, 0, 16]),
    "flipped-question": bytes([0, 0, 0, 14, 0x20]),
    "flipped-arcount": bytes([0, 0, 0, 11, 0x01]),
}


# Catalog zone bodies (after an SOA and NS at cat.example.) for the catalog target.
CATALOGS = {
    "members": 'version TXT "2"\na.zones PTR one.test.\ngroup.a.zones TXT "blue"\n'
    'b.zones PTR two.test.\ncoo.b.zones PTR new-cat.example.\next.b.zones TXT "x"\n',
    "no-version": "a.zones PTR one.test.\n",
    "version-1": 'version TXT "1"\na.zones PTR one.test.\n',
    "two-versions": 'version TXT "2"\nversion TXT "3"\n',
    "duplicate": 'version TXT "2"\na.zones PTR one.test.\nb.zones PTR ONE.test.\n',
    "bad-members": 'version TXT "2"\nt.zones PTR x.test.\nt.zones PTR y.test.\n'
    "r.zones PTR .\ni.zones PTR in.cat.example.\n"
    'group.ok.zones TXT "a"\ngroup.ok.zones TXT "b"\nok.zones PTR ok.test.\n',
}

# doh_request: lines of method, :path, content type, content length (fuzz/src/doh.rs).
RFC8484_GET = "AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB"  # RFC 8484 §4.1.1's example
DOH_REQUESTS = {
    "get-rfc8484": f"GET\n/dns-query?dns={RFC8484_GET}",
    "get-padded-other-params": f"GET\n/dns-query?ct=x&dns={RFC8484_GET}=&z=1",
    "get-bad-base64": "GET\n/dns-query?dns=AAA+",
    "get-short": "GET\n/dns-query?dns=AAAA",
    "get-wrong-path": f"GET\n/other?dns={RFC8484_GET}",
    "post": "POST\n/dns-query\napplication/dns-message\n33",
    "post-params": "POST\n/dns-query\nApplication/DNS-Message; charset=x\n",
    "post-wrong-type": "POST\n/dns-query\ntext/plain\n33",
    "post-too-large": "POST\n/dns-query\napplication/dns-message\n65536",
    "post-huge-length": "POST\n/dns-query\napplication/dns-message\n99999999999999999999",
    "put": "PUT\n/dns-query",
    "base64-only": RFC8484_GET,
}


# Incoming transfers (xfr_in): a selector byte (bit 0 IXFR, bit 1 zone nsec.lab.), then
# messages, each a 2-octet length and the message (its ID is replaced by the query's).
def rr(owner, rtype, rdata, ttl=3600):
    return name_wire(owner) + struct.pack("!HHIH", rtype, 1, ttl, len(rdata)) + rdata


def soa(apex, serial):
    return rr(apex, 6, name_wire("ns1." + apex) + name_wire("hostmaster." + apex)
              + struct.pack("!IIIII", serial, 7200, 3600, 1209600, 300))


def a(owner, addr, ttl=3600):
    return rr(owner, 1, bytes(int(x) for x in addr.split(".")), ttl)


def nsec(owner, nxt, types):
    bitmap = bytearray(32)
    for t in types:
        bitmap[t // 8] |= 0x80 >> (t % 8)
    n = max(i for i, b in enumerate(bitmap) if b) + 1
    return rr(owner, 47, name_wire(nxt) + bytes([0, n]) + bytes(bitmap[:n]), 300)


def answer(apex, qtype, records):
    m = struct.pack("!HHHHHH", 0, 0x8400, 1, len(records), 0, 0)
    m += name_wire(apex) + struct.pack("!HH", qtype, 1)
    return m + b"".join(records)


def xfr_input(sel, apex, qtype, messages):
    out = bytes([sel])
    for recs in messages:
        m = answer(apex, qtype, recs)
        out += struct.pack("!H", len(m)) + m
    return out


D, N, OLD, NEW = "diff.test.", "nsec.lab.", 2024010101, 2024010102
XFR_IN = {
    "axfr-diff": xfr_input(0, D, 252, [[soa(D, NEW), rr(D, 2, name_wire("ns1." + D)),
                                        a("ns1." + D, "192.0.2.53"), soa(D, NEW)]]),
    "axfr-diff-two-messages": xfr_input(0, D, 252, [
        [soa(D, NEW), rr(D, 2, name_wire("ns1." + D))],
        [a("ns1." + D, "192.0.2.53"), a("www." + D, "192.0.2.80"), soa(D, NEW)]]),
    "axfr-serial-mismatch": xfr_input(0, D, 252, [[soa(D, NEW), rr(D, 2, name_wire("ns1." + D)),
                                                   soa(D, NEW + 1)]]),
    "ixfr-up-to-date": xfr_input(1, D, 251, [[soa(D, OLD)]]),
    "ixfr-diff": xfr_input(1, D, 251, [[
        soa(D, NEW), soa(D, OLD), a("www." + D, "192.0.2.80"),
        soa(D, NEW), a("www." + D, "192.0.2.81"), a("new." + D, "192.0.2.99"),
        a("a.b.ent." + D, "192.0.2.98", 60), soa(D, NEW)]]),
    "ixfr-diff-delete-name": xfr_input(1, D, 251, [
        [soa(D, NEW + 1), soa(D, OLD), a("mail." + D, "192.0.2.25"),
         rr("mail." + D, 28, bytes.fromhex("20010db8000000000000000000000025"))],
        [soa(D, NEW), soa(D, NEW), soa(D, NEW + 1), a("mail2." + D, "192.0.2.26")],
        [soa(D, NEW + 1)]]),
    "ixfr-diff-axfr-form": xfr_input(1, D, 251, [[soa(D, NEW), rr(D, 2, name_wire("ns1." + D)),
                                                  a("ns1." + D, "192.0.2.53"), soa(D, NEW)]]),
    "ixfr-diff-wrong-start": xfr_input(1, D, 251, [[soa(D, NEW), soa(D, OLD - 1), soa(D, NEW),
                                                    soa(D, NEW)]]),
    "ixfr-diff-delete-missing": xfr_input(1, D, 251, [[soa(D, NEW), soa(D, OLD),
                                                       a("nothere." + D, "192.0.2.1"),
                                                       soa(D, NEW), soa(D, NEW)]]),
    # nsec.lab.: a name added into the NSEC chain (big < bz < cname), the apex TXT gone.
    "ixfr-nsec-add-name": xfr_input(3, N, 251, [[
        soa(N, NEW), soa(N, OLD),
        nsec("big." + N, "cname." + N, [16, 46, 47]),
        rr(N, 16, b"\x11apex of nsec.lab."),
        soa(N, NEW),
        nsec("big." + N, "bz." + N, [16, 46, 47]),
        a("bz." + N, "192.0.2.9"),
        nsec("bz." + N, "cname." + N, [1, 46, 47]),
        soa(N, NEW)]]),
    "axfr-nsec": xfr_input(2, N, 252, [[soa(N, NEW), rr(N, 2, name_wire("ns1." + N)),
                                        nsec(N, N, [2, 6, 46, 47]), soa(N, NEW)]]),
}


# Dynamic updates (update): a selector byte (bit 0 zone nsec.lab., bits 1-2 the serial
# policy), then the UPDATE message (the target sets its opcode).
def urr(owner, rtype, rdata=b"", cls=1, ttl=3600):
    return name_wire(owner) + struct.pack("!HHIH", rtype, cls, ttl, len(rdata)) + rdata


def update_input(sel, apex, pre, upd, extra=()):
    m = struct.pack("!HHHHHH", 0x2136, 5 << 11, 1, len(pre), len(upd), len(extra))
    m += name_wire(apex) + struct.pack("!HH", 6, 1)
    return bytes([sel]) + m + b"".join(pre) + b"".join(upd) + b"".join(extra)


ANY, NONE = 255, 254
UPDATES = {
    "add-a": update_input(0, D, [], [a("new." + D, "192.0.2.99", 60)]),
    "add-dateserial": update_input(4, D, [], [a("new." + D, "192.0.2.99", 60)]),
    "prereq-then-replace": update_input(2, D, [urr("www." + D, 1, cls=ANY, ttl=0)], [
        urr("www." + D, 1, cls=ANY, ttl=0), a("www." + D, "192.0.2.81", 300)]),
    "prereq-nxdomain": update_input(0, D, [urr("nothere." + D, ANY, cls=ANY, ttl=0)],
                                    [a("new." + D, "192.0.2.99")]),
    "delete-name": update_input(0, D, [], [urr("mail." + D, ANY, cls=ANY, ttl=0)]),
    "delete-rr": update_input(0, D, [], [urr("www." + D, 1, bytes([192, 0, 2, 80]), NONE, 0)]),
    "apex-ns-and-soa": update_input(0, D, [], [
        urr(D, 2, name_wire("ns1." + D), NONE, 0), urr(D, 6, cls=ANY, ttl=0),
        soa(D, NEW + 5)]),
    "cname-conflict": update_input(0, D, [], [
        rr("www." + D, 5, name_wire("ns1." + D)), a("cname-new." + D, "192.0.2.7")]),
    "new-cut": update_input(0, D, [], [rr("deleg2." + D, 2, name_wire("ns1." + D))]),
    "notzone": update_input(0, D, [], [a("www.outside.example.", "192.0.2.1")]),
    "formerr-meta": update_input(0, D, [], [urr("www." + D, 252)]),
    "nsec-add-name": update_input(1, N, [], [a("bz." + N, "192.0.2.9")]),
    "nsec-refused": update_input(1, N, [], [urr("big." + N, 47, cls=ANY, ttl=0)]),
}


# Journals (journal): a selector byte (odd: then 2 octets of offset and a kind of damage
# to apply after writing the journal anew), then a journal file of diff.test.
def no_class(record):
    """A record as a diff keeps it: owner, type, TTL, rdata length, rdata (no class)."""
    n = 0
    while record[n]:
        n += 1 + record[n]
    return record[:n + 3] + record[n + 5:]


def diff_bytes(frm, to, deleted, added):
    recs = [soa(D, frm)] + deleted + [soa(D, to)] + added
    return (struct.pack("!IIII", frm, to, len(deleted), len(added))
            + b"".join(no_class(r) for r in recs))


def journal_file(diffs, cut=None):
    import zlib
    out = b"SHARDNSJ" + struct.pack("!IH", 1, len(name_wire(D))) + name_wire(D)
    for d in diffs:
        length = struct.pack("!I", len(d))
        out += b"SJR1" + length + struct.pack("!I", zlib.crc32(length + d)) + d
    return out if cut is None else out[:cut]


J1 = diff_bytes(OLD, NEW, [a("www." + D, "192.0.2.80")], [a("www." + D, "192.0.2.81")])
J2 = diff_bytes(NEW, NEW + 1, [], [a("new." + D, "192.0.2.99")])
J3 = diff_bytes(NEW + 1, NEW + 2, [a("new." + D, "192.0.2.99")], [])
JOURNALS = {
    "empty": b"\0" + journal_file([]),
    "three": b"\0" + journal_file([J1, J2, J3]),
    "three-cut": b"\0" + journal_file([J1, J2, J3])[:-5],
    "three-bad-crc": b"\0" + journal_file([J1, J2, J3]).replace(J2[-4:], b"\0\0\0\0"),
    "not-following": b"\0" + journal_file([J1, J3]),
    "wrong-zone": b"\0" + journal_file([J1]).replace(b"diff", b"dirt"),
    "three-damage-cut": b"\x01\x00\x80\x00" + journal_file([J1, J2, J3]),
    "three-damage-flip": b"\x01\x00\x90\x41" + journal_file([J1, J2, J3]),
    "garbage-tail": b"\x01\x01\x00\x01" + journal_file([J1]) + b"SJR1\xff\xff\xff\xff",
}


# proxy_header: a mode byte (bit 0: stream; bit 1: the signature is prepended), then a PROXY
# protocol v2 header laid out as the spec says, and the message after it (fuzz/src/proxy.rs).
def _proxy(cmd, fam, body, mode=0):
    sig = b"\r\n\r\n\x00\r\nQUIT\n"
    return bytes([mode]) + sig + bytes([0x20 | cmd, fam]) + struct.pack("!H", len(body)) + body


_V4 = bytes([192, 0, 2, 7, 198, 51, 100, 1]) + struct.pack("!HH", 5300, 53)
_V6 = bytes(range(16)) + bytes(range(16, 32)) + struct.pack("!HH", 50000, 53)
PROXY_SEEDS = {
    "v4-dgram": _proxy(1, 0x12, _V4) + b"\x12\x34\x01\x00\x00\x01",
    "v4-stream": _proxy(1, 0x11, _V4, mode=1),
    "v6-tlvs": _proxy(1, 0x21, _V6 + b"\x01\x00\x03dot\x04\x00\x00", mode=1),
    "local": _proxy(0, 0x00, b""),
    "unspec-tlv": _proxy(1, 0x00, b"\x04\x00\x01\x09"),
    "unix": _proxy(1, 0x31, bytes(216), mode=1),
    "tlv-overflow": _proxy(1, 0x12, _V4 + b"\x04\x00\x09\x01"),
    "short-length": _proxy(1, 0x22, _V4),
    "no-signature": b"\x02" + bytes([0x21, 0x12, 0, 12]) + _V4,
}


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def exchange(server, msg):
    host, port = server.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1.0)
    try:
        s.sendto(msg, (host, int(port)))
        return s.recv(65535)
    except OSError:
        return None
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", help="HOST:PORT of a server loaded with tests/diff zones")
    ap.add_argument("--shardns", help="the shardns binary: real KSR/SKR seeds (offline KSK)")
    args = ap.parse_args()
    make_corpus_offline.seeds(write, args.shardns)
    for name, q in QUERIES.items():
        write("respond", name, q)
        write("parse_message", "q-" + name, q)
        if args.server and len(q) >= 12:
            r = exchange(args.server, q)
            if r:
                write("parse_message", "r-" + name, r)
                # The question name of a response starts at offset 12.
                write("name_from_wire", "r-" + name, struct.pack("!H", 12) + r)
    for name, text in DOH_REQUESTS.items():
        write("doh_request", name, text.encode())
    for name, data in PROXY_SEEDS.items():
        write("proxy_header", name, data)
    for name, text in CONFIGS.items():
        write("config", name, text.encode())
    example = os.path.join(HERE, "..", "docs", "shardns.example.toml")
    write("config", "shardns.example.toml", open(example, "rb").read())
    for name, q in XFR_QUERIES.items():
        write("xfr", name, q)
        if "tsig" in name:
            write("parse_message", "q-" + name, q)
    for name, data in TSIG_SEEDS.items():
        write("tsig", name, data)
    for name, data in XFR_IN.items():
        write("xfr_in", name, data)
    for name, data in UPDATES.items():
        write("update", name, data)
    for name, data in JOURNALS.items():
        write("journal", name, data)
    for name, q in CACHE_QUERIES.items():
        write("resolver_cache", name, q)
    for name, (off, msg) in NAMES.items():
        write("name_from_wire", name, struct.pack("!H", off) + msg)
    for name, text in SNIPPETS.items():
        write("scan_zone", name, text.encode())
    # Whole zones (records outside "example.": skipped with warnings), and the main zone moved
    # to "example." and cut into pieces of about 1 KiB at line ends.
    for z in sorted(os.listdir(ZONES)):
        text = open(os.path.join(ZONES, z), "rb").read()
        write("scan_zone", "zone-" + z, text)
        if z == "diff.test.zone":
            # In zone "example." (the target's origin) so the records are kept.
            text = text.replace(b"diff.test.", b"example.")
            lines, piece, n = text.split(b"\n"), b"", 0
            for line in lines:
                piece += line + b"\n"
                if len(piece) > 1024:
                    write("scan_zone", "diff-piece-%02d" % n, piece)
                    piece, n = b"", n + 1
            if piece:
                write("scan_zone", "diff-piece-%02d" % n, piece)
    # Catalog zones (RFC 9432) under "cat.example.": good ones and each kind of bad one.
    head = "$TTL 0\n@ SOA invalid. invalid. 1 3600 600 2147483646 0\n@ NS invalid.\n"
    for name, body in CATALOGS.items():
        write("catalog", name, (head + body).encode())
    digest = hashlib.sha256()
    for root, _, files in sorted(os.walk(CORPUS)):
        for f in sorted(files):
            digest.update(open(os.path.join(root, f), "rb").read())
    print("corpus written to", CORPUS, "sha256", digest.hexdigest()[:16])


if __name__ == "__main__":
    main()
