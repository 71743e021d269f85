//! update::tally -- what a batch of updates came to, by answer, added to the control
//! plane's counters ([`ControlStats`]) once per batch: accepted (NOERROR), refused by who
//! asked (REFUSED, NOTAUTH: no grant, no or a bad TSIG, not a primary zone of ours),
//! refused by a prerequisite (YXDOMAIN, YXRRSET, NXDOMAIN, NXRRSET), rate-limited, and
//! the rest (FORMERR, NOTZONE, SERVFAIL); and the updates the full queue turned away.

use crate::ControlStats;
use shardns_wire::Rcode;
use std::sync::atomic::Ordering::Relaxed;

/// One batch's counts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Tally {
    pub(super) accepted: u64,
    pub(super) refused: u64,
    pub(super) prerequisite: u64,
    pub(super) rate_limited: u64,
    pub(super) other: u64,
}

impl Tally {
    /// Counts one answer by its rcode (the header's four bits: UPDATE answers carry no
    /// extended rcode but TSIG's, which comes with NOTAUTH).
    pub(super) fn count(&mut self, answer: Option<&[u8]>) {
        let Some(rcode) = answer
            .and_then(|a| a.get(3))
            .map(|b| Rcode(u16::from(b & 0x0f)))
        else {
            return;
        };
        let slot = match rcode {
            Rcode::NOERROR => &mut self.accepted,
            Rcode::REFUSED | Rcode::NOTAUTH => &mut self.refused,
            Rcode::YXDOMAIN | Rcode::YXRRSET | Rcode::NXDOMAIN | Rcode::NXRRSET => {
                &mut self.prerequisite
            }
            _ => &mut self.other,
        };
        *slot += 1;
    }

    /// Adds the batch to `stats`, with the queue's drops so far (`dropped`).
    pub(super) fn add_to(&self, stats: &ControlStats, dropped: u64) {
        stats.updates_accepted.fetch_add(self.accepted, Relaxed);
        stats.updates_refused.fetch_add(self.refused, Relaxed);
        stats
            .updates_prerequisite
            .fetch_add(self.prerequisite, Relaxed);
        stats
            .updates_rate_limited
            .fetch_add(self.rate_limited, Relaxed);
        stats.updates_other.fetch_add(self.other, Relaxed);
        stats.updates_queue_full.store(dropped, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(rcode: u8) -> Vec<u8> {
        let mut h = vec![0u8; 12];
        h[2] = 0xa8; // QR, opcode UPDATE
        h[3] = rcode;
        h
    }

    #[test]
    fn answers_are_counted_by_class() {
        let mut t = Tally::default();
        for rcode in [0, 0, 5, 9, 6, 7, 3, 8, 1, 2, 10] {
            t.count(Some(&answer(rcode)));
        }
        t.count(None);
        t.rate_limited += 2;
        assert_eq!(
            t,
            Tally {
                accepted: 2,
                refused: 2,
                prerequisite: 4,
                rate_limited: 2,
                other: 3
            }
        );
        let stats = ControlStats::default();
        t.add_to(&stats, 7);
        t.add_to(&stats, 9);
        assert_eq!(stats.updates_accepted.load(Relaxed), 4);
        assert_eq!(stats.updates_rate_limited.load(Relaxed), 4);
        assert_eq!(stats.updates_queue_full.load(Relaxed), 9);
    }
}
