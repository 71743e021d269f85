#!/usr/bin/env bash
# Writes the signed loopback hierarchy of tests/validation (crates/shardns/tests/validation/
# main.rs) with BIND's dnssec-keygen, dnssec-signzone and dnssec-dsfromkey (bind9-utils)
# (ldns-signzone, ldnsutils, for the two zones whose signatures are not valid now),
# then edits some signed zones to make them bogus:
#
#   .                 root, RSASHA256, NSEC; its KSK's DS is the trust anchor (root.ds)
#   val.              the TLD, NSEC3 (0 iterations, no salt); delegates to every zone below
#   nsec.val.         secure, NSEC
#   nsec3.val.        secure, NSEC3
#   optout.val.       secure, NSEC3 Opt-Out; insec.optout.val. is an unsigned child, no DS
#   insec.optout.val. unsigned (served, no DS: covered by the Opt-Out span)
#   unsigned.val.     unsigned, no DS in val. (proven by val.'s NSEC3)
#   iter.val.         NSEC3 with 150 iterations (at Unbound 1.17's limit for these keys)
#   expired.val.      every RRSIG expired in 2021 (far beyond any clock skew allowance)
#   future.val.       every RRSIG valid from 2037 only
#   badds.val.        the DS in val. matches none of its keys (digest altered)
#   nosig.val.        the RRSIG of www.nosig.val. A removed
#   forged.val.       www.forged.val. A changed after signing (its RRSIG kept)
#   badnsec3.val.     NSEC3 chain broken: every NSEC3 but the apex's removed
#   alg253.val.       DS in val. of algorithm 253 (PRIVATEOID): unsupported, so insecure
#   keytrap.val.      KeyTrap-style: 24 DNSKEYs with the ZSK's key tag and algorithm (the
#                     ZSK's public key with octets swapped), and www.keytrap.val. A carries
#                     12 RRSIGs of that tag, none valid
#   rsasha1.val.      secure, RSASHA1 (algorithm 5), NSEC
#   nsec3rsasha1.val. secure, RSASHA1-NSEC3-SHA1 (algorithm 7), NSEC3
#   badsoa.val.       NSEC; the SOA's serial changed after signing (its RRSIG kept), so
#                     every denial in the zone rests on a bogus SOA
#
# Every zone's name server is on 127.0.0.x port 53 (glue): the root on .80, val. on .81,
# the others on .82 (see main.rs).
#
# Signatures are valid from 2020-01-01 to 2038-01-01 (before 2038-01-19: tools reading RRSIG
# times as signed 32-bit numbers). Keys and ECDSA signatures are random, so each run gives
# new files: the test uses the committed output, and this script is what made it.
#
# Usage: crates/shardns/tests/validation/make-zones.sh [OUT]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../data/validation}
for tool in dnssec-keygen dnssec-signzone dnssec-dsfromkey ldns-signzone python3; do
  command -v "$tool" >/dev/null || { echo "make-zones.sh: $tool is missing" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
rm -f "$out"/*.zone "$out"/*.ds
root_ip=127.0.0.80
tld_ip=127.0.0.81
leaf_ip=127.0.0.82
signed_zones="nsec nsec3 optout iter expired future badds nosig forged badnsec3 alg253 keytrap rsasha1 nsec3rsasha1 badsoa"

# A leaf zone for apex $1 (the same records in every one).
leaf() {
  cat <<ZONE
\$ORIGIN $1
\$TTL 3600
@               SOA     ns hostmaster 2026010101 7200 3600 1209600 300
@               NS      ns
@               MX      10 mail
@               TXT     "apex of $1"
ns              A       $leaf_ip
www             A       192.0.2.10
www             AAAA    2001:db8::10
www             TXT     "www"
mail            A       192.0.2.25
*.wild          A       192.0.2.20
*.wild          TXT     "wildcard"
a.b.ent         A       192.0.2.30
cname           CNAME   www
cname-nx        CNAME   nothere
ZONE
}

# Makes a KSK and a ZSK of algorithm $2 for apex $1 (once); their names in $work/$1.keys.
keys() {
  local apex=$1 alg=$2
  [ -f "$work/$apex.keys" ] && return
  {
    dnssec-keygen -q -K "$work" -a "$alg" -f KSK -n ZONE -P 20190101000000 -A 20190101000000 "$apex"
    dnssec-keygen -q -K "$work" -a "$alg" -n ZONE -P 20190101000000 -A 20190101000000 "$apex"
  } > "$work/$apex.keys"
}

# Signs $work/$1.unsigned (plus $work/$1.extra, if any) into $work/$1.signed: $2 the
# algorithm, then dnssec-signzone flags. Writes $work/$1.ds (SHA-256).
sign() {
  local apex=$1 alg=$2
  shift 2
  keys "$apex" "$alg"
  local ksk zsk
  { read -r ksk; read -r zsk; } < "$work/$apex.keys"
  cat "$work/$ksk.key" "$work/$zsk.key" >> "$work/$apex.unsigned"
  if [ -f "$work/$apex.extra" ]; then
    cat "$work/$apex.extra" >> "$work/$apex.unsigned"
  fi
  dnssec-signzone -q -K "$work" -d "$work" -o "$apex" -x -O full \
    -f "$work/$apex.signed" "$@" "$work/$apex.unsigned" "$ksk" "$zsk" >/dev/null
  dnssec-dsfromkey -2 "$work/$ksk.key" > "$work/$apex.ds"
}

# Like sign, with ldns-signzone (ldnsutils) and its flags, algorithm ECDSAP256SHA256.
ldns_sign() {
  local apex=$1
  shift
  keys "$apex" ECDSAP256SHA256
  local ksk zsk
  { read -r ksk; read -r zsk; } < "$work/$apex.keys"
  if [ -f "$work/$apex.extra" ]; then
    cat "$work/$apex.extra" >> "$work/$apex.unsigned"
  fi
  (cd "$work" && ldns-signzone -o "$apex" -f "$work/$apex.signed" "$@" "$work/$apex.unsigned" "$ksk" "$zsk")
  dnssec-dsfromkey -2 "$work/$ksk.key" > "$work/$apex.ds"
}

valid=(-s 20200101000000 -e 20380101000000)
# Leaves first: their DS records go into val.
for z in $signed_zones; do
  apex=$z.val.
  leaf "$apex" > "$work/$apex.unsigned"
  case $z in
    optout) printf 'insec NS ns.insec\nns.insec A %s\n' "$leaf_ip" >> "$work/$apex.unsigned" ;;
    keytrap)
      # DNSKEYs colliding with the ZSK's tag, signed into the DNSKEY RRset by the KSK.
      keys "$apex" ECDSAP256SHA256
      python3 "$here/make-zones-edit.py" collide "$work/$(sed -n 2p "$work/$apex.keys").key" 24 \
        > "$work/$apex.extra"
      ;;
  esac
  case $z in
    nsec3|badnsec3) sign "$apex" ECDSAP256SHA256 "${valid[@]}" -3 - -H 0 ;;
    rsasha1) sign "$apex" RSASHA1 "${valid[@]}" ;;
    nsec3rsasha1) sign "$apex" NSEC3RSASHA1 "${valid[@]}" -3 - -H 0 ;;
    optout) sign "$apex" ECDSAP256SHA256 "${valid[@]}" -3 - -H 0 -A ;;
    iter) sign "$apex" ECDSAP256SHA256 "${valid[@]}" -3 - -H 150 ;;
    # dnssec-signzone checks its own signatures against the clock: ldns-signzone does not.
    expired) ldns_sign "$apex" -i 20200101000000 -e 20210101000000 ;;
    future) ldns_sign "$apex" -i 20370101000000 -e 20380101000000 ;;
    # dnssec-signzone loads every DNSKEY of the zone, and the colliding ones are no points
    # of the curve: ldns-signzone only signs.
    keytrap) ldns_sign "$apex" -i 20200101000000 -e 20380101000000 ;;
    *) sign "$apex" ECDSAP256SHA256 "${valid[@]}" ;;
  esac
done
leaf unsigned.val. > "$work/unsigned.val..signed"
leaf insec.optout.val. > "$work/insec.optout.val..signed"

# The TLD: a delegation with glue to every leaf, and the DS of the signed ones.
{
  cat <<ZONE
\$ORIGIN val.
\$TTL 3600
@               SOA     ns hostmaster 2026010101 7200 3600 1209600 300
@               NS      ns
ns              A       $tld_ip
www             A       192.0.2.1
ZONE
  for z in $signed_zones unsigned; do
    printf '%s NS ns.%s\nns.%s A %s\n' "$z" "$z" "$z" "$leaf_ip"
  done
  for z in $signed_zones; do
    case $z in
      badds) awk '{ $1 = "badds"; $NF = "00" substr($NF, 3); print }' "$work/$z.val..ds" ;;
      alg253) awk '{ $1 = "alg253"; $(NF-2) = 253; print }' "$work/$z.val..ds" ;;
      *) awk -v z="$z" '{ $1 = z; print }' "$work/$z.val..ds" ;;
    esac
  done
} > "$work/val..unsigned"
sign val. ECDSAP256SHA256 "${valid[@]}" -3 - -H 0

# The root: the TLD's delegation and DS, and the root server's own address.
{
  cat <<ZONE
\$ORIGIN .
\$TTL 86400
.               SOA     a.root-servers.net. hostmaster.root-servers.net. 2026010101 1800 900 604800 86400
.               NS      a.root-servers.net.
a.root-servers.net. A   $root_ip
val.            NS      ns.val.
ns.val.         A       $tld_ip
ZONE
  awk '{ $1 = "val."; print }' "$work/val..ds"
} > "$work/..unsigned"
sign . RSASHA256 "${valid[@]}"

# The bogus edits, then every zone in a stable one-record-a-line form.
python3 "$here/make-zones-edit.py" edit "$work"
for f in "$work"/*.signed "$work/..signed"; do
  apex=$(basename "$f" .signed)
  name=${apex%.}
  [ -z "$name" ] && name=root
  { echo "; $apex written by crates/shardns/tests/validation/make-zones.sh"; grep -v '^;' "$f" | sed 's/[[:space:]]\+/ /g'; } > "$out/$name.zone"
done
cp "$work/..ds" "$out/root.ds"
echo "make-zones.sh: wrote $(ls "$out" | wc -l) files to $out"
