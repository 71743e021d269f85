//! update::txn::check -- a transaction tried on the served version before it is sent: the
//! records the RFC's rules would silently ignore (RFC 2136 §3.4.2) refuse the commit, since
//! the operator expects what they set, and unset, to be done.

use super::{present, same_rdata, show, show_record, Op, Rec};
use shardns_wire::{Name, RType};
use shardns_zone::update::{update, Change, Outcome, SerialPolicy};
use shardns_zone::Zone;

/// The change tried on the served version: an error names a record set and not undone
/// by a later `unset` that the RFC's rules would ignore, or the refusal's rcode.
pub(super) fn dry_run(zone: &Zone, ops: &[Op], msg: &[u8], now: u64) -> Result<(), String> {
    let change = match update(msg, zone, SerialPolicy::Increment, now) {
        Err(refusal) => return Err(refusal.to_string()),
        Ok(Outcome::Unchanged) => None,
        Ok(Outcome::Change(c)) => Some(c),
    };
    for (i, op) in ops.iter().enumerate() {
        let Op::Set(r) = op else {
            unset_done(zone, ops, i, change.as_ref())?;
            continue;
        };
        if ops[i + 1..].iter().any(|later| undoes(later, r)) {
            continue;
        }
        let same = |(o, t, _, d): &(Name, RType, u32, Vec<u8>)| {
            *t == r.rtype && o.as_ref().eq_ci(&r.owner.as_ref()) && same_rdata(d, &r.rdata)
        };
        let added = change.as_ref().is_some_and(|c| c.added.iter().any(same));
        let deleted = change.as_ref().is_some_and(|c| c.deleted.iter().any(same));
        let kept = present(zone, &r.owner, Some(r.rtype))
            .iter()
            .any(|p| same_rdata(&p.rdata, &r.rdata));
        let soa = r.rtype == RType::SOA && change.as_ref().is_some_and(|c| c.soa.1 == r.rdata);
        if !(added || soa || (kept && !deleted)) {
            return Err(format!(
                "{} would be ignored: {}",
                show_record(r),
                why_ignored(zone, ops, r)
            ));
        }
    }
    Ok(())
}

/// An `unset` of a type (ops[i]) whose records in the zone now are not all deleted by
/// `change` (the apex SOA, the apex NS RRset) is an error, unless a later `set` puts it
/// back. An `unset` of a whole name is what the RFC makes it (at the apex: all but the SOA
/// and NS RRsets), and one of something not there is no error.
fn unset_done(zone: &Zone, ops: &[Op], i: usize, change: Option<&Change>) -> Result<(), String> {
    let Op::Unset {
        owner,
        rtype: Some(rtype),
        rdata,
    } = &ops[i]
    else {
        return Ok(());
    };
    for p in present(zone, owner, Some(*rtype)) {
        if rdata.as_ref().is_some_and(|d| !same_rdata(d, &p.rdata)) {
            continue;
        }
        let put_back = ops[i + 1..].iter().any(|later| {
            matches!(later, Op::Set(r) if r.rtype == p.rtype
                && r.owner.as_ref().eq_ci(&p.owner.as_ref())
                && same_rdata(&r.rdata, &p.rdata))
        });
        let is_p = |(o, t, _, d): &(Name, RType, u32, Vec<u8>)| {
            *t == p.rtype && o.as_ref().eq_ci(&p.owner.as_ref()) && same_rdata(d, &p.rdata)
        };
        // A changed RRset may be listed whole, deleted and added again.
        let gone = change.is_some_and(|c| c.deleted.iter().any(is_p) && !c.added.iter().any(is_p));
        if !gone && !put_back {
            let why = match p.rtype {
                RType::SOA => "the apex SOA is never deleted (RFC 2136 §3.4.2.3)",
                RType::NS if p.owner.as_ref().eq_ci(&zone.apex()) => {
                    "the apex NS RRset is never emptied (RFC 2136 §3.4.2.4)"
                }
                _ => "one of RFC 2136 §3.4.2's rules",
            };
            return Err(format!("{} would be ignored: {why}", show(&ops[i])));
        }
    }
    Ok(())
}

/// Whether `later` deletes the record `r`.
fn undoes(later: &Op, r: &Rec) -> bool {
    match later {
        Op::Set(_) => false,
        Op::Unset {
            owner,
            rtype,
            rdata,
        } => {
            owner.as_ref().eq_ci(&r.owner.as_ref())
                && rtype.is_none_or(|t| t == r.rtype)
                && rdata.as_ref().is_none_or(|d| same_rdata(d, &r.rdata))
        }
    }
}

/// The likely RFC 2136 §3.4.2 rule that ignores adding `r`.
fn why_ignored(zone: &Zone, ops: &[Op], r: &Rec) -> &'static str {
    let types_at = |t: RType| {
        !present(zone, &r.owner, Some(t)).is_empty()
            || ops.iter().any(|op| {
                matches!(op, Op::Set(o) if o.rtype == t && o.owner.as_ref().eq_ci(&r.owner.as_ref()))
            })
    };
    if r.rtype == RType::SOA {
        "an SOA is replaced only at the apex and by a higher serial"
    } else if r.rtype == RType::CNAME {
        "a CNAME beside other data at the name (RFC 1034 §3.6.2, RFC 2181 §10.1)"
    } else if types_at(RType::CNAME) {
        "other data beside a CNAME (RFC 1034 §3.6.2, RFC 2181 §10.1)"
    } else {
        "data below a DNAME, or another of RFC 2136 §3.4.2's rules"
    }
}
