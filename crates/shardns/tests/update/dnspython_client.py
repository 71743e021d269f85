"""Dynamic updates from dnspython (dns.update, dns.tsigkeyring, dns.query), for
tests/update/dnspython.rs: one line per step, "STEP RESULT...", which the test compares
with what it expects.

Arguments: IP PORT TLS_PORT CA_FILE SECRET WRONG_SECRET
"""

import socket
import ssl
import sys

import dns.message
import dns.query
import dns.rcode
import dns.tsig
import dns.tsigkeyring
import dns.update

ip, port, tls_port, ca, secret, wrong = sys.argv[1:7]
port, tls_port = int(port), int(tls_port)
ZONE = "upd.test."
ring = dns.tsigkeyring.from_text({"upd.": ("hmac-sha256", secret)})
bad_ring = dns.tsigkeyring.from_text({"upd.": ("hmac-sha256", wrong)})
other_ring = dns.tsigkeyring.from_text({"other-key.": ("hmac-sha256", secret)})
ctx = ssl.create_default_context(cafile=ca)


def update(keyring=ring, keyname="upd."):
    if keyring is None:
        return dns.update.UpdateMessage(ZONE)
    return dns.update.UpdateMessage(
        ZONE, keyring=keyring, keyname=keyname, keyalgorithm="hmac-sha256"
    )


def send(step, msg, how="udp"):
    """Sends msg; prints the rcode and whether the answer was signed (verified by
    dnspython, which raises if a signed request's answer does not verify)."""
    try:
        if how == "udp":
            r = dns.query.udp(msg, ip, port=port, timeout=5)
        elif how == "tcp":
            r = dns.query.tcp(msg, ip, port=port, timeout=5)
        else:
            r = dns.query.tls(
                msg, ip, port=tls_port, timeout=5, ssl_context=ctx, server_hostname="dns.test"
            )
        print(step, dns.rcode.to_text(r.rcode()), "signed" if r.had_tsig else "unsigned")
    except Exception as e:  # the test expects some: print what it was
        print(step, "raised", type(e).__name__)


def raw_rcode(step, msg):
    """Sends msg over UDP without dnspython's TSIG check; prints the header's rcode."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    s.sendto(msg.to_wire(), (ip, port))
    wire = s.recv(65535)
    print(step, "rcode", dns.rcode.to_text(wire[3] & 15))


def look(step, name, rdtype):
    q = dns.message.make_query(name, rdtype)
    r = dns.query.udp(q, ip, port=port, timeout=5)
    data = sorted(rd.to_text() for rrset in r.answer for rd in rrset)
    print(step, dns.rcode.to_text(r.rcode()), " ".join(data) or "-")


u = update()
u.add("py", 300, "A", "192.0.2.40")
u.add("py", 300, "TXT", "from dnspython")
send("add-udp", u)
look("after-add", "py.upd.test.", "A")

u = update()
u.replace("py", 300, "A", "192.0.2.41")
send("replace-tcp", u, "tcp")
look("after-replace", "py.upd.test.", "A")

u = update()
u.present("py", "A", "192.0.2.99")
u.delete("py")
send("present-value-false", u)
u = update()
u.absent("py")
u.add("py", 300, "AAAA", "2001:db8::40")
send("absent-false", u, "tcp")
u = update()
u.present("nothere")
send("present-name-false", u)
u = update()
u.absent("py", "AAAA")
u.present("py", "TXT")
u.add("py", 300, "AAAA", "2001:db8::41")
send("rrset-prereqs-true-tls", u, "tls")
look("after-tls", "py.upd.test.", "AAAA")

u = update()
u.present("py")
u.delete("py", "A", "192.0.2.41")
u.delete("py", "TXT")
send("delete-tls", u, "tls")
look("after-delete", "py.upd.test.", "A")

u = update()
u.delete("py")
send("delete-name-udp", u)
look("after-delete-name", "py.upd.test.", "AAAA")

u = update(None)
u.add("unsigned", 300, "A", "192.0.2.42")
send("unsigned", u)

u = update(bad_ring)
u.add("badsig", 300, "A", "192.0.2.43")
send("wrong-secret", u)
u = update(bad_ring)
u.add("badsig", 300, "A", "192.0.2.43")
raw_rcode("wrong-secret", u)
u = update(other_ring, "other-key.")
u.add("badkey", 300, "A", "192.0.2.44")
send("unknown-key", u, "tcp")

u = dns.update.UpdateMessage("not-served.test.", keyring=ring, keyname="upd.")
u.add("x", 300, "A", "192.0.2.45")
send("not-served", u)
u = update()
u.add("x.elsewhere.test.", 300, "A", "192.0.2.45")
send("notzone", u)
look("serial", ZONE, "SOA")
