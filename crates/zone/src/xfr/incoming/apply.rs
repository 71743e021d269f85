//! The end of a transfer: the zone built in full from an AXFR (or an IXFR in AXFR form),
//! or our version patched with an IXFR's diff ([`crate::Zone::patch`]), rebuilt in full
//! when it cannot be patched.

use super::{keep, Form, Incoming, Outcome, State};
use crate::db::{PatchWork, Zone};
use crate::error::Error;
use crate::scan::{Diag, Records, Scanned};
use shardns_wire::{Name, NameRef, RType};
use std::path::PathBuf;

impl Incoming {
    /// Ends the transfer: builds and checks the new version (an error if the closing SOA
    /// has not come, or if TSIG requires a signed last message and it was not).
    pub fn finish(self) -> Result<Outcome, Error> {
        if let (State::Opened, Some(_), Some((serial, _, _))) = (self.state, &self.base, &self.soa)
        {
            // The answer to an IXFR ended after its opening SOA: the primary has nothing
            // to add, or cannot send differences (ask AXFR if its serial is newer).
            return Ok(Outcome::SoaOnly(*serial));
        }
        if self.state != State::Done {
            return Err(Error::Unfinished);
        }
        if let Some(v) = &self.req.verifier {
            if !v.last_was_signed() {
                return Err(Error::Wire(shardns_wire::Error::Unsigned));
            }
        }
        let (serial, soa_ttl, soa) = self.soa.clone().expect("done after an SOA");
        let label = PathBuf::from(format!("<{} of {}>", self.req.qtype, self.req.apex));
        if self.records == 1 {
            return Ok(Outcome::SoaOnly(serial));
        }
        if let (Some(base), true) = (&self.base, self.whole.items.is_empty()) {
            if let Some((zone, warnings, work)) = self.patch(base, soa_ttl, &soa)? {
                return Ok(Outcome::Zone {
                    zone,
                    warnings,
                    form: Form::Incremental,
                    patched: Some(Box::new(work)),
                    changed: Some(self.changed()),
                });
            }
        }
        let changed = (self.base.is_some() && self.whole.items.is_empty()).then(|| self.changed());
        let (records, form) = match (&self.base, self.whole.items.is_empty()) {
            (Some(base), true) => (self.rebuild(base, soa_ttl, &soa), Form::Incremental),
            _ => (self.whole, Form::Whole),
        };
        let scanned = Scanned {
            chunks: vec![records],
            files: vec![label],
            warnings: Vec::new(),
            text: Vec::new(),
        };
        let (zone, warnings) =
            Zone::build(self.req.apex.clone(), scanned).map_err(Error::transferred)?;
        Ok(Outcome::Zone {
            zone,
            warnings,
            form,
            patched: None,
            changed,
        })
    }

    /// IXFR: the owners of the records deleted and added.
    fn changed(&self) -> Vec<Name> {
        let deleted = self.diff.deleted.iter().map(|(owner, _, _)| {
            NameRef::from_wire_prefix(owner)
                .expect("diff keys hold valid names")
                .0
                .to_name()
        });
        let added = self.diff.added.values().map(|(owner, _)| owner.clone());
        deleted.chain(added).collect()
    }

    /// IXFR: our version patched with the differences ([`Zone::patch`]), or `None` when
    /// the patch cannot be done and the zone must be built in full.
    #[allow(clippy::type_complexity)]
    fn patch(
        &self,
        base: &Zone,
        soa_ttl: u32,
        soa: &[u8],
    ) -> Result<Option<(Zone, Vec<Diag>, PatchWork)>, Error> {
        fn name(wire: &[u8]) -> NameRef<'_> {
            NameRef::from_wire_prefix(wire)
                .expect("diff keys hold valid names")
                .0
        }
        let deleted = self
            .diff
            .deleted
            .iter()
            .map(|(owner, rtype, data)| (name(owner), *rtype, data.as_slice()));
        let added = self
            .diff
            .added
            .iter()
            .map(|((_, rtype, data), (owner, ttl))| {
                (owner.as_ref(), *rtype, *ttl, data.as_slice())
            });
        base.patch(deleted, added, (soa_ttl, soa))
            .map_err(Error::transferred)
    }

    /// IXFR: the records of `base` without those deleted, with those added, and the new
    /// SOA.
    fn rebuild(&self, base: &Zone, soa_ttl: u32, soa: &[u8]) -> Records {
        let mut out = Records::default();
        let mut last = None;
        keep(&mut out, &mut last, base.apex(), RType::SOA, soa_ttl, soa);
        for id in 0..base.node_count() as u32 {
            let node = base.node(id);
            let owner = node.name();
            let check = self.diff.deleted_owners.contains(&owner.hash_ci());
            for set in node.rrsets() {
                if id == 0 && set.rtype == RType::SOA {
                    continue;
                }
                for data in set.rdatas() {
                    if check
                        && self
                            .diff
                            .deleted
                            .contains(&Self::key(owner, set.rtype, data.to_vec()))
                    {
                        continue;
                    }
                    keep(&mut out, &mut last, owner, set.rtype, set.ttl, data);
                }
            }
        }
        for ((_, rtype, data), (owner, ttl)) in &self.diff.added {
            keep(&mut out, &mut last, owner.as_ref(), *rtype, *ttl, data);
        }
        out
    }
}
