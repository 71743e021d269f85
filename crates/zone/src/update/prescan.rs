//! The update section's prescan (RFC 2136 §3.4.1): every record checked before any is
//! applied, so that a bad one changes nothing.

use super::{in_zone, refuse, Refusal, Rr};
use crate::db::Zone;
use shardns_wire::{rdata, Class, RType, Rcode};

/// The types an update may neither add nor delete: those a signer keeps (RRSIG, NSEC,
/// NSEC3). BIND refuses explicit RRSIG, NSEC and NSEC3 updates in a signed zone; Knot's
/// update code takes them (its signer then re-signs the zone). Until the server re-signs
/// after an update (the next step), Knot's way would leave a signed zone's chain and
/// signatures broken, and an unsigned zone half signed: so BIND's, in every zone, and
/// REFUSED as BIND answers (a policy, not a malformed message).
pub(super) fn dnssec_kept(rtype: RType) -> bool {
    matches!(rtype, RType::RRSIG | RType::NSEC | RType::NSEC3)
}

/// Checks every update record (§3.4.1.3, with OPT, TSIG, IXFR, TKEY and the other meta
/// types refused as ANY, AXFR, MAILA and MAILB are: none is zone data, RFC 6895 §3.1).
pub(super) fn check(zone: &Zone, updates: &[Rr]) -> Result<(), Refusal> {
    for rr in updates {
        let what = || format!("update {} {} {}", rr.owner, rr.class, rr.rtype);
        let formerr = |why: &str| Err(refuse(Rcode::FORMERR, format!("{}: {why}", what())));
        if !in_zone(zone, rr.owner.as_ref()) {
            return Err(refuse(
                Rcode::NOTZONE,
                format!("{}: outside the zone", what()),
            ));
        }
        match rr.class {
            // Add to an RRset.
            Class::IN => {
                if rr.rtype.is_meta() {
                    return formerr("not a type of zone data");
                }
                if let Err(e) = rdata::validate(rr.rtype, &rr.rdata) {
                    return formerr(&e.to_string());
                }
            }
            // Delete an RRset, or all RRsets of a name (type ANY). The TTL must be 0 as
            // §3.4.1.3 says (Knot does not check it here).
            Class::ANY => {
                if rr.ttl != 0 {
                    return formerr("TTL not 0");
                }
                if !rr.rdata.is_empty() {
                    return formerr("RDLENGTH not 0");
                }
                if rr.rtype.is_meta() && rr.rtype != RType::ANY {
                    return formerr("not a type of zone data");
                }
            }
            // Delete one record.
            Class::NONE => {
                if rr.ttl != 0 {
                    return formerr("TTL not 0");
                }
                if rr.rtype.is_meta() {
                    return formerr("not a type of zone data");
                }
                if let Err(e) = rdata::validate(rr.rtype, &rr.rdata) {
                    return formerr(&e.to_string());
                }
            }
            _ => return formerr("bad class"),
        }
        if dnssec_kept(rr.rtype) {
            return Err(refuse(
                Rcode::REFUSED,
                format!("{}: DNSSEC records are the signer's", what()),
            ));
        }
    }
    Ok(())
}
