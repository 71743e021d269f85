//! `update`: dynamic update (RFC 2136) from a hostile client. The input is an UPDATE
//! message read by `update::update` against a bundled zone (`diff.test.`, or `nsec.lab.`,
//! signed with NSEC, so the patch's denial index path runs); an accepted change is made
//! into a new version (`Change::apply`: the patch, or a full build) and checked against a
//! full build of its records.

use super::xfr_in::{answers_alike, base_zone, full_build};
use shardns_wire::{Name, Rcode};
use shardns_zone::update::{self, Outcome, SerialPolicy};
use shardns_zone::xfr::is_newer;

const NOW: u64 = 1_700_000_000;

/// What became of an `update` input (the replay test checks that the seeds reach each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateEnd {
    /// Refused with this rcode.
    Refused(Rcode),
    /// Accepted, nothing to change.
    Unchanged,
    /// Accepted, a new version made and compared with the full build.
    Changed,
}

/// Input: a selector byte (bit 0: zone `nsec.lab.`, else `diff.test.`; bits 1-2: the
/// serial policy), then the message (its opcode is set to UPDATE and QR cleared, so the
/// fuzzer need not find them).
///
/// Checks: no panic; the base does not change; an accepted change makes a zone (the
/// checks of a build pass), whose serial is the change's and newer than the base's, that
/// holds every record added and none deleted (unless added back), and that answers every
/// name (of it, of the base, their parents and a name below each; the first 600) for every
/// type in `QTYPES` exactly as a full build of its records does.
pub fn update(data: &[u8]) {
    let _ = update_run(data);
}

/// [`update`], saying how the input ended.
pub fn update_run(data: &[u8]) -> UpdateEnd {
    let Some((&sel, rest)) = data.split_first() else {
        return UpdateEnd::Refused(Rcode::FORMERR);
    };
    let base = base_zone(if sel & 1 == 0 {
        "diff.test."
    } else {
        "nsec.lab."
    });
    let policy = match (sel >> 1) & 3 {
        0 => SerialPolicy::Increment,
        1 => SerialPolicy::UnixTime,
        _ => SerialPolicy::DateSerial,
    };
    let mut msg = rest.to_vec();
    if let Some(b) = msg.get_mut(2) {
        *b = (*b & 0x07) | (5 << 3);
    }
    let before = super::zone_lines_of(&base);
    let outcome = update::update(&msg, &base, policy, NOW);
    assert_eq!(super::zone_lines_of(&base), before, "the base changed");
    let change = match outcome {
        Err(r) => return UpdateEnd::Refused(r.rcode),
        Ok(Outcome::Unchanged) => return UpdateEnd::Unchanged,
        Ok(Outcome::Change(c)) => c,
    };
    let (zone, _) = change
        .apply(&base)
        .unwrap_or_else(|e| panic!("an accepted update does not make a zone: {e}"));
    assert_eq!(zone.serial(), change.serial());
    assert!(
        is_newer(zone.serial(), base.serial()),
        "the serial did not move"
    );
    let holds = |o: &Name, t, d: &[u8]| {
        zone.find(o.as_ref()).is_some_and(|n| {
            n.rrsets()
                .filter(|s| s.rtype == t)
                .any(|s| s.rdatas().any(|r| r == d))
        })
    };
    for (o, t, _, d) in &change.added {
        assert!(holds(o, *t, d), "{o} {t}: an added record is missing");
    }
    for (o, t, _, d) in &change.deleted {
        let back = change
            .added
            .iter()
            .any(|(o2, t2, _, d2)| o2.as_ref().eq_ci(&o.as_ref()) && t2 == t && d2 == d);
        assert!(
            back || !holds(o, *t, d),
            "{o} {t}: a deleted record is there"
        );
    }
    let apex = base.apex().to_name();
    let full = full_build(&zone, &apex, "an updated zone");
    answers_alike(&base, zone, full, &apex, "the updated zone");
    UpdateEnd::Changed
}
