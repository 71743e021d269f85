//! One record of a transfer as it is read: the opening and closing SOA that tell the form
//! and the IXFR steps, a whole zone's records kept in compact form, an IXFR's deletions and
//! additions checked against our version and kept as the diff.

use super::{keep, serial_of, Incoming, Raw, RecordKey, State};
use crate::error::Error;
use shardns_wire::name::MAX_NAME_LEN;
use shardns_wire::{rdata, Class, NameRef, RType};

impl Incoming {
    /// One answer record.
    pub(super) fn record(
        &mut self,
        owner: NameRef<'_>,
        mut rec: Raw,
        msg: &[u8],
    ) -> Result<(), Error> {
        if rec.ttl > i32::MAX as u32 {
            // A TTL with the top bit set is read as 0 (RFC 2181 §8), as a zone file could
            // not hold it.
            rec.ttl = 0;
        }
        let apex = self.req.apex.as_ref();
        let in_zone = owner.ends_with(&apex);
        if rec.class != Class::IN {
            return Err(Error::Malformed(format!(
                "{owner} {} has class {}",
                rec.rtype, rec.class
            )));
        }
        if rec.rtype.is_meta() {
            // OPT, TSIG and the query types are never zone data (RFC 6895 §3.1).
            return Err(Error::Malformed(format!(
                "{owner} has type {}, which is not zone data",
                rec.rtype
            )));
        }
        self.scratch.clear();
        rdata::decompress(rec.rtype, msg, rec.rdata, rec.rdlen, &mut self.scratch)
            .map_err(|e| Error::Malformed(format!("{owner} {}: {e}", rec.rtype)))?;
        let apex_soa = rec.rtype == RType::SOA && owner.eq_ci(&apex);
        let serial = if apex_soa {
            Some(serial_of(&self.scratch).ok_or_else(|| Error::Malformed("a short SOA".into()))?)
        } else {
            None
        };
        match (self.state, serial) {
            (State::Start, Some(s)) => {
                self.soa = Some((s, rec.ttl, self.scratch.clone()));
                self.state = State::Opened;
                return Ok(());
            }
            (State::Start, None) => {
                return Err(Error::WrongZone(format!(
                    "the first record is {owner} {}, not the SOA of {}",
                    rec.rtype, self.req.apex
                )))
            }
            (State::Opened, Some(s)) if self.base.is_some() => {
                // The incremental form: the first step starts at our serial.
                let ours = self.base.as_ref().map_or(0, |z| z.serial());
                if s != ours {
                    return Err(Error::Inconsistent(format!(
                        "the first difference starts at serial {s}, ours is {ours}"
                    )));
                }
                self.state = State::Deleting { from: s };
                return Ok(());
            }
            (State::Opened, _) => {
                // The whole zone: the opening SOA is its first record.
                self.state = State::Whole;
                let (_, ttl, soa) = self.soa.as_ref().expect("opened with an SOA");
                keep(
                    &mut self.whole,
                    &mut self.last_owner,
                    self.req.apex.as_ref(),
                    RType::SOA,
                    *ttl,
                    soa,
                );
            }
            _ => {}
        }
        let first = self.soa.as_ref().map_or(0, |s| s.0);
        match (self.state, serial) {
            (State::Whole, Some(last)) => {
                if last != first {
                    return Err(Error::SerialMismatch { first, last });
                }
                self.state = State::Done;
            }
            (State::Whole, None) => {
                if in_zone {
                    keep(
                        &mut self.whole,
                        &mut self.last_owner,
                        owner,
                        rec.rtype,
                        rec.ttl,
                        &self.scratch,
                    );
                } else {
                    self.skipped += 1;
                }
            }
            (State::Deleting { .. }, Some(to)) => self.state = State::Adding { to },
            (State::Adding { to }, Some(s)) => {
                if s == first && to == first {
                    self.state = State::Done;
                } else if s == to {
                    self.state = State::Deleting { from: s };
                } else {
                    return Err(Error::Inconsistent(format!(
                        "a difference starts at serial {s}, the one before ended at {to}"
                    )));
                }
            }
            (State::Deleting { from }, None) => {
                self.diff_bytes += (owner.len() + self.scratch.len()) as u64;
                if in_zone {
                    self.delete(owner, rec.rtype, from)?;
                } else {
                    self.skipped += 1;
                }
            }
            (State::Adding { .. }, None) => {
                self.diff_bytes += (owner.len() + self.scratch.len()) as u64;
                if in_zone {
                    self.add(owner, rec.rtype, rec.ttl)?;
                } else {
                    self.skipped += 1;
                }
            }
            (State::Start | State::Opened | State::Done, _) => {
                unreachable!("handled above")
            }
        }
        Ok(())
    }

    /// The base version's copy of a record (its rdata as stored; names in rdata compared
    /// without regard to case), and its RRset's TTL.
    fn in_base(&self, owner: NameRef<'_>, rtype: RType, data: &[u8]) -> Option<(Vec<u8>, u32)> {
        let zone = self.base.as_deref()?;
        let node = zone.find(owner)?;
        // Every set of the type: the RRSIGs of each covered type are a set of their own.
        let sets = || node.rrsets().filter(|s| s.rtype == rtype);
        sets()
            .find_map(|set| set.rdatas().find(|r| *r == data).map(|r| (r, set.ttl)))
            .or_else(|| {
                sets().find_map(|set| {
                    set.rdatas()
                        .find(|r| r.eq_ignore_ascii_case(data))
                        .map(|r| (r, set.ttl))
                })
            })
            .map(|(r, ttl)| (r.to_vec(), ttl))
    }

    pub(super) fn key(owner: NameRef<'_>, rtype: RType, data: Vec<u8>) -> RecordKey {
        let mut lower = [0u8; MAX_NAME_LEN];
        let n = owner.lowercase_into(&mut lower);
        (lower[..n].to_vec(), rtype, data)
    }

    /// IXFR: deletes a record (one added by an earlier step, else one of the base's).
    fn delete(&mut self, owner: NameRef<'_>, rtype: RType, from: u32) -> Result<(), Error> {
        let key = Self::key(owner, rtype, self.scratch.clone());
        if self.diff.added.remove(&key).is_some() {
            return Ok(());
        }
        let missing = || {
            let mut text = String::new();
            let _ = rdata::fmt_text(rtype, &key.2, &mut text);
            Error::Inconsistent(format!(
                "the step from serial {from} deletes {owner} {rtype} {text}, which is not in the zone"
            ))
        };
        let Some((stored, _)) = self.in_base(owner, rtype, &self.scratch) else {
            return Err(missing());
        };
        let key = Self::key(owner, rtype, stored);
        if !self.diff.deleted.insert(key) {
            return Err(missing());
        }
        self.diff.deleted_owners.insert(owner.hash_ci());
        Ok(())
    }

    /// IXFR: adds a record (a base record deleted before comes back; one the base has is
    /// kept once, with the new TTL).
    fn add(&mut self, owner: NameRef<'_>, rtype: RType, ttl: u32) -> Result<(), Error> {
        if let Some((stored, base_ttl)) = self.in_base(owner, rtype, &self.scratch) {
            let key = Self::key(owner, rtype, stored);
            let deleted = self.diff.deleted.contains(&key);
            if deleted && base_ttl == ttl {
                // Deleted by an earlier step, back as it was.
                self.diff.deleted.remove(&key);
                return Ok(());
            }
            if !deleted && base_ttl == ttl {
                // Already there: nothing changes.
                return Ok(());
            }
            // Another TTL: the base copy goes, the new one comes.
            self.diff.deleted.insert(key);
            self.diff.deleted_owners.insert(owner.hash_ci());
        }
        let key = Self::key(owner, rtype, self.scratch.clone());
        self.diff.added.insert(key, (owner.to_name(), ttl));
        Ok(())
    }
}
