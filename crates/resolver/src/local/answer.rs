//! Answering from a local zone: Unbound's order (local data first unless the type ignores
//! it, then the zone type's answer for everything else).

use shardns_wire::{Class, MessageWriter, NameRef, RType, Rcode, Section};

use super::zones::{LocalZones, Set, Zone};
use super::{Verdict, ZoneKind};

impl LocalZones {
    /// The answer `zone` (the closest zone of `qname`) gives; written into `w` when it is
    /// [`Verdict::Answered`].
    pub(crate) fn answer(
        &self,
        zone: &Zone,
        qname: NameRef<'_>,
        qtype: RType,
        w: &mut MessageWriter<'_>,
    ) -> Verdict {
        let kind = zone.kind;
        let node = if kind.ignores_data() {
            None
        } else if kind.redirects() {
            self.sets(zone.apex.as_ref())
        } else {
            self.sets(qname)
        };
        if let Some(set) = node.and_then(|sets| find(sets, qtype)) {
            return write_set(w, qname, set);
        }
        match kind {
            ZoneKind::Deny | ZoneKind::InformDeny | ZoneKind::AlwaysDeny => Verdict::Drop,
            ZoneKind::Refuse | ZoneKind::AlwaysRefuse => Verdict::Refuse,
            ZoneKind::Static
            | ZoneKind::Redirect
            | ZoneKind::InformRedirect
            | ZoneKind::AlwaysNxdomain
            | ZoneKind::AlwaysNodata => {
                let exists = node.is_some()
                    || matches!(
                        kind,
                        ZoneKind::Redirect | ZoneKind::InformRedirect | ZoneKind::AlwaysNodata
                    );
                let rcode = if exists {
                    Rcode::NOERROR
                } else {
                    Rcode::NXDOMAIN
                };
                write_negative(w, zone, rcode)
            }
            ZoneKind::AlwaysNull => write_null(w, zone, qname, qtype),
            ZoneKind::TypeTransparent | ZoneKind::AlwaysTransparent => Verdict::Resolve,
            // transparent, inform: a local name without the type is NODATA.
            _ if node.is_some_and(|s| !s.is_empty()) => write_negative(w, zone, Rcode::NOERROR),
            _ => Verdict::Resolve,
        }
    }
}

/// The set of `qtype` at a node, else its CNAME (answered as is: the target is not
/// followed).
fn find(sets: &[Set], qtype: RType) -> Option<&Set> {
    sets.iter()
        .find(|s| s.rtype == qtype)
        .or_else(|| sets.iter().find(|s| s.rtype == RType::CNAME))
}

fn write_set(w: &mut MessageWriter<'_>, qname: NameRef<'_>, set: &Set) -> Verdict {
    let cp = w.checkpoint();
    for rdata in &set.rdatas {
        if w.put_record(Section::Answer, qname, set.rtype, Class::IN, set.ttl, rdata)
            .is_err()
        {
            w.rollback(cp);
            return Verdict::Answered {
                rcode: Rcode::NOERROR,
                truncated: true,
            };
        }
    }
    Verdict::Answered {
        rcode: Rcode::NOERROR,
        truncated: false,
    }
}

/// `always_null`: the unspecified address for A and AAAA (TTL 3600, as Unbound), NODATA
/// for other types.
fn write_null(w: &mut MessageWriter<'_>, zone: &Zone, qname: NameRef<'_>, qtype: RType) -> Verdict {
    let rdata: &[u8] = match qtype {
        RType::A => &[0; 4],
        RType::AAAA => &[0; 16],
        _ => return write_negative(w, zone, Rcode::NOERROR),
    };
    let truncated = w
        .put_record(Section::Answer, qname, qtype, Class::IN, 3600, rdata)
        .is_err();
    Verdict::Answered {
        rcode: Rcode::NOERROR,
        truncated,
    }
}

/// NXDOMAIN or NODATA, with the zone's SOA in the authority section if it has one.
fn write_negative(w: &mut MessageWriter<'_>, zone: &Zone, rcode: Rcode) -> Verdict {
    let mut truncated = false;
    if let Some((ttl, rdata)) = &zone.soa {
        let apex = zone.apex.as_ref();
        truncated = w
            .put_record(Section::Authority, apex, RType::SOA, Class::IN, *ttl, rdata)
            .is_err();
    }
    Verdict::Answered { rcode, truncated }
}
