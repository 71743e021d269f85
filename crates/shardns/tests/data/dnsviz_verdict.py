"""dnsviz's verdict on a probe (tests/common/dnsviz.rs), run by Debian's /usr/bin/python3.

    dnsviz_verdict.py PROBE_JSON ANCHOR_FILE GROK_JSON ANCESTOR NAME...

Runs `dnsviz grok` on PROBE_JSON with ANCHOR_FILE (DNSKEY records) as its only trust anchor
(grok takes DNSKEYs alone: when the file also has DS records, the anchor is the DNSKEYs of
the file that one of them names, and there must be one)
(`-P`: the lab's servers have private addresses; `-l info`: every status, not only the
errors and warnings), the output in GROK_JSON, then reads that JSON under each NAME (the
names above them, e.g. the lab's top zone, whose own delegation from a stand-in root is not
judged, are left out; so is the delegation of a NAME that is the ANCESTOR, the zone judged
alone, from its own keys): every error (an `errors` list anywhere), every status BOGUS or
INSECURE, a delegation not SECURE, or no SECURE status at all, fails it. Prints the
warnings, one a line, with where they are; exits 1 with the failures first.
"""

import json
import logging
import os
import sys
import types

# Warnings seen in the tests so far, and why: EXPIRATION_WITHIN_CLOCK_SKEW in
# tests/offline_ksk.rs, whose SKR's signatures expire seconds after they are served, by
# design. No other in the rolls (MISSING_SEP_FOR_ALG, once allowed in tests/roll_faults'
# algorithm rollover, is fixed: the old DNSKEY now waits for the old DS to go).

# Statuses that fail: a chain broken (BOGUS) or missing (INSECURE), from the anchor.
BAD = {"BOGUS", "INSECURE"}


def grok(argv):
    import pygraphviz

    try:
        from pygraphviz import release  # noqa: F401
    except ImportError:
        # dnsviz 0.9.4 (Debian 12) checks pygraphviz's version in pygraphviz.release,
        # which pygraphviz 1.7 dropped (dnsviz issue #98): grok then refuses trust anchors.
        # The JSON needs no graphviz; the version is given where the check looks.
        release = types.ModuleType("pygraphviz.release")
        release.version = pygraphviz.__version__
        sys.modules["pygraphviz.release"] = release
        pygraphviz.release = release
    from dnsviz.commands import grok as command

    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    command.main(argv)


def dnskeys_named_by_ds(text):
    """The anchor file's DNSKEY records, as zone-file text, those a DS names if it has DS."""
    import dns.dnssec
    import dns.message
    import dns.rdatatype

    # A blank line would end the section.
    lines = [line for line in text.splitlines() if line.strip()]
    records = dns.message.from_text(";ANSWER\n" + "\n".join(lines) + "\n").answer
    ds = [(r.name, d) for r in records if r.rdtype == dns.rdatatype.DS for d in r]
    keys = [(r.name, k) for r in records if r.rdtype == dns.rdatatype.DNSKEY for k in r]
    if ds:
        keys = [
            (name, k)
            for name, k in keys
            if any(
                dname == name and dns.dnssec.make_ds(name, k, d.digest_type) == d
                for dname, d in ds
            )
        ]
        if not keys:
            print("error: no DNSKEY of the anchor file matches its DS records:\n" + text)
            sys.exit(1)
    return "".join("%s 2 IN DNSKEY %s\n" % (name, k.to_text()) for name, k in keys)


# Error codes the test takes as warnings (DNSVIZ_ALLOWED, comma-separated): a known
# departure the test names and explains.
ALLOWED = {c for c in os.environ.get("DNSVIZ_ALLOWED", "").split(",") if c}


def walk(node, path, errors, warnings, secure):
    if isinstance(node, dict):
        for key, value in node.items():
            here = path + [key]
            if key in ("errors", "warnings") and isinstance(value, list):
                for item in value:
                    text = "%s: %s %s (servers %s)" % (
                        "/".join(path),
                        item.get("code", "?"),
                        item.get("description", item),
                        ", ".join(item.get("servers", [])),
                    )
                    if key == "errors" and item.get("code") in ALLOWED:
                        warnings.append("allowed error: " + text)
                    else:
                        (errors if key == "errors" else warnings).append(text)
            elif key == "status" and value in BAD:
                errors.append("%s: status %s" % ("/".join(path), value))
            elif key == "status" and value == "SECURE":
                secure.append(path)
            else:
                walk(value, here, errors, warnings, secure)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            walk(item, path + [str(i)], errors, warnings, secure)


def main():
    probe, anchor, out, ancestor = sys.argv[1:5]
    names = sys.argv[5:]
    ancestor = ancestor.rstrip(".") + "."
    with open(anchor, encoding="utf-8") as f:
        keys = dnskeys_named_by_ds(f.read())
    anchor = out + ".anchor"
    with open(anchor, "w", encoding="utf-8") as f:
        f.write(keys)
    grok(["grok", "-P", "-l", "info", "-r", probe, "-t", anchor, "-o", out] + names)
    with open(out, encoding="utf-8") as f:
        tree = json.load(f)
    errors, warnings = [], []
    for name in names:
        key = name.rstrip(".") + "."
        if key not in tree:
            errors.append("%s: not in grok's output" % key)
            continue
        secure = []
        node = dict(tree[key])
        if key == ancestor:
            # Its delegation and DS were asked of the stand-in root (its own servers when
            # the zone is judged alone): neither is the zone's.
            node.pop("delegation", None)
            queries = dict(node.get("queries", {}))
            queries.pop("%s/IN/DS" % key, None)
            node["queries"] = queries
        walk(node, [key], errors, warnings, secure)
        # The name's own answers, from the anchor: at least one RRset SECURE (a zone's
        # delegation too), or the chain was never followed.
        if not secure:
            errors.append("%s: nothing SECURE" % key)
        delegation = node.get("delegation")
        if delegation is not None and delegation.get("status") != "SECURE":
            errors.append("%s: delegation %s" % (key, delegation.get("status")))
    for e in errors:
        print("error: " + e)
    for w in warnings:
        print("warning: " + w)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
