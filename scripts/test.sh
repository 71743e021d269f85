#!/usr/bin/env bash
# Runs every test of the workspace. The integration tests query the real binary with dig and
# kdig and compare it with knotd and unbound, and check signed zones with ldns-verify-zone
# (tests/dnssec, crates/dnssec) and BIND's dnssec-verify/dnssec-signzone (crates/dnssec), so
# this installs those from Debian's packages when missing (and SoftHSM2, the PKCS#11 token the
# HSM tests keep keys on).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v dig >/dev/null 2>&1 || need+=(bind9-dnsutils)
command -v kdig >/dev/null 2>&1 || need+=(knot-dnsutils)
command -v knotd >/dev/null 2>&1 || need+=(knot)
command -v unbound >/dev/null 2>&1 || [ -x /usr/sbin/unbound ] || need+=(unbound)
# tests/dnssec and crates/dnssec check signed zones with ldns-verify-zone; crates/dnssec also
# with BIND's dnssec-verify, and makes keys and signatures with dnssec-keygen/-signzone.
command -v ldns-verify-zone >/dev/null 2>&1 || need+=(ldnsutils)
command -v dnssec-verify >/dev/null 2>&1 || need+=(bind9-utils)
# tests/secondary runs shardns as a secondary of knotd, NSD and named.
[ -x /usr/sbin/nsd ] || command -v nsd >/dev/null 2>&1 || need+=(nsd)
[ -x /usr/sbin/named ] || command -v named >/dev/null 2>&1 || need+=(bind9)
# tests/signing validates the answers of zones we sign with delv.
command -v delv >/dev/null 2>&1 || need+=(bind9-dnsutils)
# The rollover tests judge each phase of a roll with dnsviz (probe, then grok from the
# parent's key).
command -v dnsviz >/dev/null 2>&1 || need+=(dnsviz)
# tests/dnstap reads the log with dnstap-read (bind9-dnsutils) and listens on its socket with
# fstrm_capture.
command -v dnstap-read >/dev/null 2>&1 || need+=(bind9-dnsutils)
command -v fstrm_capture >/dev/null 2>&1 || need+=(fstrm-bin)
# ... and decodes a policy hit's fields (dnstap's Message.policy, which dnstap-read does not
# show) with protoc --decode_raw.
command -v protoc >/dev/null 2>&1 || need+=(protobuf-compiler)
# tests/doh checks the HTTP errors with curl (HTTP/2) and writes raw HTTP/2 frames through
# openssl s_client (openssl also makes the TLS tests' certificates).
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
# tests/update sends dynamic updates with nsupdate (bind9-dnsutils), knsupdate
# (knot-dnsutils) and dnspython, run by Debian's /usr/bin/python3.
command -v nsupdate >/dev/null 2>&1 || need+=(bind9-dnsutils)
command -v knsupdate >/dev/null 2>&1 || need+=(knot-dnsutils)
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import dns.update, dns.tsigkeyring' 2>/dev/null \
  || need+=(python3-dnspython)
# tests/acme gets a certificate from pebble (the ACME test server, asking shardns for the
# DNS-01 challenges) with lego's and certbot's rfc2136 DNS plugins.
command -v pebble >/dev/null 2>&1 || need+=(pebble)
command -v lego >/dev/null 2>&1 || need+=(lego)
command -v certbot >/dev/null 2>&1 || need+=(certbot)
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import certbot_dns_rfc2136' 2>/dev/null \
  || need+=(python3-certbot-dns-rfc2136)
# crates/dnssec and tests/hsm make, keep and use keys on a SoftHSM2 token (PKCS#11).
command -v softhsm2-util >/dev/null 2>&1 || need+=(softhsm2)
# tests/doh loads DoH with dnsperf (many streams in flight on reused connections).
command -v dnsperf >/dev/null 2>&1 || need+=(dnsperf)
# tests/proxy puts dnsdist (UDP, TCP) and HAProxy (DoT, DoH) in front of shardns with the
# PROXY protocol v2.
command -v dnsdist >/dev/null 2>&1 || need+=(dnsdist)
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || need+=(haproxy)
if ((${#need[@]})); then
  if [ "$(id -u)" = 0 ]; then
    # Keep the packages' init scripts from starting daemons on port 53.
    [ -x /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  else
    echo "test.sh: missing ${need[*]}: install them (apt-get install ${need[*]}) or run as root" >&2
    exit 1
  fi
fi
exec cargo test --workspace "$@"
