"""Validates a multi-signer zone across providers with dnspython (tests/multi_signer.rs).

    multi_signer_mix.py ANCHOR_KEY PARENT ZONE NAME KEYS_FROM ANSWER_FROM

ANCHOR_KEY is the parent's DNSKEY (presentation rdata), PARENT the parent's apex, ZONE the
child's; PARENT, KEYS_FROM and ANSWER_FROM servers are ADDR@PORT. The chain: the parent's
DNSKEY RRset (from KEYS_FROM, which serves the parent too) signed by the anchor key; the
child's DS RRset signed by it; the child's DNSKEY RRset from KEYS_FROM signed by a key of
that set whose DS is in the DS RRset; NAME's A RRset from ANSWER_FROM signed by a key of
KEYS_FROM's DNSKEY RRset. Prints what it checked; exits 1 with the reason on a failure.
"""

import sys
import time

import dns.dnssec
import dns.message
import dns.name
import dns.query
import dns.rdataclass
import dns.rdatatype
import dns.rrset


def ask(server, qname, qtype):
    addr, port = server.split("@")
    q = dns.message.make_query(qname, qtype, want_dnssec=True)
    r = dns.query.tcp(q, addr, port=int(port), timeout=5)
    rtype = dns.rdatatype.from_text(qtype)
    rrset = r.find_rrset(r.answer, dns.name.from_text(qname), dns.rdataclass.IN, rtype)
    sigs = r.find_rrset(
        r.answer, dns.name.from_text(qname), dns.rdataclass.IN, dns.rdatatype.RRSIG, rtype
    )
    return rrset, sigs


def main():
    anchor, parent, zone, name, keys_from, answer_from = sys.argv[1:7]
    now = time.time()
    pname, zname = dns.name.from_text(parent), dns.name.from_text(zone)
    anchor_set = dns.rrset.from_text(pname, 60, "IN", "DNSKEY", anchor)
    pkeys, psigs = ask(keys_from, parent, "DNSKEY")
    dns.dnssec.validate(pkeys, psigs, {pname: anchor_set}, now=now)
    ds, ds_sigs = ask(keys_from, zone, "DS")
    dns.dnssec.validate(ds, ds_sigs, {pname: pkeys}, now=now)
    keys, key_sigs = ask(keys_from, zone, "DNSKEY")
    # A key of the set whose DS the parent holds signs the set.
    secure = [
        k
        for k in keys
        for d in ds
        if dns.dnssec.make_ds(zname, k, d.digest_type) == d
    ]
    if not secure:
        sys.exit("no DNSKEY of %s matches a DS of the parent" % keys_from)
    entry = dns.rrset.from_rdata_list(zname, keys.ttl, secure)
    dns.dnssec.validate(keys, key_sigs, {zname: entry}, now=now)
    answer, sigs = ask(answer_from, name, "A")
    dns.dnssec.validate(answer, sigs, {zname: keys}, now=now)
    tags = sorted(s.key_tag for s in sigs)
    print(
        "validated: %s A from %s (RRSIG tags %s) with the DNSKEY RRset of %s (tags %s)"
        % (name, answer_from, tags, keys_from, sorted(dns.dnssec.key_id(k) for k in keys))
    )


if __name__ == "__main__":
    try:
        main()
    except dns.dnssec.ValidationFailure as e:
        sys.exit("validation failure: %s" % e)
