#!/usr/bin/env bash
# Writes the two RSASHA1 zones of the resolver's signed test world (tests/sim/signed.rs),
# signed by BIND (bind9-utils): shardns does not sign with SHA-1 algorithms, but validates
# them (RFC 8624 §3.1), so the signatures must come from another signer.
#
#   rsasha1.test.       algorithm 5 (RSASHA1), NSEC
#   nsec3rsasha1.test.  algorithm 7 (RSASHA1-NSEC3-SHA1), NSEC3 (no salt, 0 iterations)
#
# One 1024-bit key each (KSK flag, signing everything), signatures valid 2020-01-01 to
# 2038-01-01. Keys are random, so each run gives new files; the tests use the committed
# ones (the DS in test. is computed from them at test time).
#
# Usage: crates/resolver/src/tests/data/make-rsasha1.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cd "$work" # dnssec-signzone writes its dsset- files here
trap 'rm -rf "$work"' EXIT
for spec in "rsasha1 RSASHA1" "nsec3rsasha1 NSEC3RSASHA1"; do
  set -- $spec
  apex="$1.test."
  cat > "$work/$1.zone" <<ZONE
$apex 3600 SOA ns.$apex host.$apex 1 7200 900 86400 300
$apex 3600 NS ns.$apex
ns.$apex 3600 A 10.0.3.1
www.$apex 300 A 192.0.2.1
*.wild.$apex 300 A 192.0.2.2
alias.$apex 300 CNAME www.$apex
ZONE
  key=$(dnssec-keygen -q -K "$work" -a "$2" -b 1024 -f KSK -n ZONE "$apex" 2>/dev/null)
  sed "s/^[^ ]*\.[ \t]*IN/$apex 3600 IN/" "$work/$key.key" | grep -v "^;" >> "$work/$1.zone"
  nsec3=()
  [ "$2" = NSEC3RSASHA1 ] && nsec3=(-3 - -H 0)
  dnssec-signzone -q -z -K "$work" -O full -o "$apex" -s 20200101000000 -e 20380101000000 \
    "${nsec3[@]}" -f "$here/$1.zone" "$work/$1.zone" "$work/$key" >/dev/null 2>&1
done
