#!/usr/bin/env bash
# Writes the DNSSEC lab zones of tests/dnssec (crates/shardns/tests/dnssec/main.rs): one
# unsigned zone, signed three ways with BIND's dnssec-keygen and dnssec-signzone (bind9-utils):
#
#   nsec.lab.     NSEC
#   nsec3.lab.    NSEC3, SHA-1, 0 iterations, no salt (RFC 9276)
#   optout.lab.   NSEC3 as above with Opt-Out (RFC 5155 section 6)
#
# Each parent holds every case the DNSSEC answer path has to get right: wildcards (a wildcard
# A/TXT, a wildcard CNAME, a name below a wildcard, a wildcard NODATA), empty non-terminals,
# a CNAME chain, CNAMEs to a wildcard, to a missing name and out of the zone, a DNAME, a
# signed delegation (DS) and unsigned ones (one below an empty non-terminal, one whose name
# server is out of the zone), glue, an SRV, and an RRset too big for 1232 octets.
# Its children, served by a separate knotd in the tests, are written too:
#
#   signed.<parent>     signed (NSEC), its DS in the parent
#   unsigned.<parent>   unsigned, no DS
#   d1.ent2.<parent>    unsigned, below the empty non-terminal ent2.<parent>
#
# Their name servers' glue is 127.0.0.71, the address the validation test serves them on.
#
# Signatures are valid from 2020-01-01 to 2038-01-01: long, and before 2038-01-19, as
# ldns-verify-zone reads RRSIG times as signed 32-bit numbers (an expiration in 2080 is
# "earlier than inception" to it, while RFC 4034 section 3.1.5's serial arithmetic allows it). Algorithm ECDSAP256SHA256 (13): KSK and ZSK
# per zone, the DNSKEY RRset signed by the KSK alone (-x).
#
# Outputs in OUT (default: crates/shardns/tests/data/dnssec/lab):
#   <zone>.zone      the signed zone, one record a line (dnssec-signzone -O full)
#   <zone>.ds        its DS record (SHA-256): the trust anchor of a validating resolver
#   <child>.zone     the children (the signed one signed, the others as written)
#
# ECDSA signatures and the keys are random, so two runs never give the same files: the
# tests use the committed output, and this script is what made it. Run it again only to
# change the zones (then commit all of OUT).
#
# Usage: bench/dnssec/make-zones.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-crates/shardns/tests/data/dnssec/lab}
for tool in dnssec-keygen dnssec-signzone dnssec-dsfromkey; do
  command -v "$tool" >/dev/null || { echo "make-zones.sh: $tool is missing (apt-get install bind9-utils)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
inception=20200101000000
expiration=20380101000000
child_ns=127.0.0.71

# The unsigned parent for apex $1 (relative names).
parent() {
  cat <<ZONE
\$ORIGIN $1
\$TTL 3600
@               SOA     ns1 hostmaster 2024010101 7200 3600 1209600 300
@               NS      ns1
@               NS      ns2
@               MX      10 mail
@               TXT     "apex of $1"
ns1             A       192.0.2.1
ns1             AAAA    2001:db8::1
ns2             A       192.0.2.2
www             A       192.0.2.10
www             AAAA    2001:db8::10
www             TXT     "www"
mail            A       192.0.2.25
_sip._tcp       SRV     0 0 5060 www
; wildcards: A and TXT (a query for another type is a wildcard NODATA), a name that
; exists beside them, and a wildcard CNAME
*.wild          A       192.0.2.20
*.wild          TXT     "wildcard"
exists.wild     A       192.0.2.21
*.wcn           CNAME   www
; ent and b.ent are empty non-terminals
a.b.ent         A       192.0.2.30
; CNAMEs: in the zone, a chain, to a wildcard, to a missing name, out of the zone
cname           CNAME   www
cname-chain     CNAME   cname
cname-wild      CNAME   host.wild
cname-nx        CNAME   nothere
cname-ext       CNAME   www.example.net.
; DNAME into the zone (tgt is an empty non-terminal above www.tgt)
dn              DNAME   tgt
www.tgt         A       192.0.2.40
; delegations: signed (DS added below), unsigned, unsigned below an empty non-terminal,
; and one whose name server is out of the zone (no glue)
signed          NS      ns.signed
ns.signed       A       $child_ns
unsigned        NS      ns.unsigned
ns.unsigned     A       $child_ns
d1.ent2         NS      ns.d1.ent2
ns.d1.ent2      A       $child_ns
ext             NS      ns.example.net.
; more than 1232 octets: truncated over UDP with or without DO
ZONE
  printf 'big             TXT     '
  for i in $(seq -w 1 24); do printf '"%s-0123456789abcdefghijklmnopqrstuvwxyz0123456789" ' "$i"; done
  printf '\n'
}

# A child zone for apex $1.
child() {
  cat <<ZONE
\$ORIGIN $1
\$TTL 3600
@               SOA     ns hostmaster 2024010101 7200 3600 1209600 300
@               NS      ns
ns              A       $child_ns
www             A       192.0.2.50
ZONE
}

# Signs $work/$1.unsigned into $out/$1.zone with fresh keys; extra dnssec-signzone flags after.
sign() {
  local apex=$1
  shift
  local ksk zsk
  ksk=$(dnssec-keygen -q -K "$work" -a ECDSAP256SHA256 -f KSK -n ZONE "$apex")
  zsk=$(dnssec-keygen -q -K "$work" -a ECDSAP256SHA256 -n ZONE "$apex")
  cat "$work/$ksk.key" "$work/$zsk.key" >> "$work/$apex.unsigned"
  dnssec-signzone -q -K "$work" -d "$work" -o "$apex" -x -s "$inception" -e "$expiration" \
    -O full -f "$work/$apex.signed" "$@" "$work/$apex.unsigned" "$ksk" "$zsk" >/dev/null
  {
    echo "; $apex signed by bench/dnssec/make-zones.sh: dnssec-signzone -x ${*:-(NSEC)}"
    sort_zone "$work/$apex.signed"
  } > "$out/${apex}zone"
  dnssec-dsfromkey -2 "$work/$ksk.key" > "$out/${apex}ds"
}

# Records in a stable order: the apex SOA first, then as dnssec-signzone wrote them.
sort_zone() {
  grep -v '^;' "$1" | sed 's/[[:space:]]\+/ /g'
}

for parent_apex in nsec.lab. nsec3.lab. optout.lab.; do
  signed=signed.$parent_apex
  child "$signed" > "$work/$signed.unsigned"
  sign "$signed"
  for unsigned in "unsigned.$parent_apex" "d1.ent2.$parent_apex"; do
    { echo "; $unsigned, unsigned, written by bench/dnssec/make-zones.sh"; child "$unsigned"; } > "$out/${unsigned}zone"
  done
  parent "$parent_apex" > "$work/$parent_apex.unsigned"
  # The child's DS, owner made relative to the parent's \$ORIGIN.
  awk '{ $1 = "signed"; print }' "$out/${signed}ds" >> "$work/$parent_apex.unsigned"
  case $parent_apex in
    nsec.lab.) sign "$parent_apex" ;;
    nsec3.lab.) sign "$parent_apex" -3 - -H 0 ;;
    optout.lab.) sign "$parent_apex" -3 - -H 0 -A ;;
  esac
done
echo "make-zones.sh: wrote $(ls "$out" | wc -l) files to $out"
