//! The DNSSEC part of an authoritative answer from a signed zone, when the query set DO:
//! the DS of a signed delegation, and the NSEC or NSEC3 records (with their signatures) that
//! prove a name error, a missing type, a wildcard expansion or an unsigned delegation (RFC
//! 4035 §3.1.3-3.1.4, RFC 5155 §7.2). Which records prove what is decided from the zone's
//! precomputed denial index (`db::denial`); the only hashing here is of names that do not
//! exist (a next closer name, a wildcard), on the stack.

use super::{Answerer, Proof};
use crate::db::{NodeId, NodeRef};
use shardns_wire::writer::Full;
use shardns_wire::{NameBuf, NameRef, RType, Section};

impl<'z> Answerer<'z, '_, '_> {
    /// Writes what proves the outcome of the answer's last step, for `name` (that step's name).
    pub(super) fn put_proof(&mut self, name: NameRef<'_>, proof: Proof<'z>) -> Result<(), Full> {
        let Some(denial) = self.zone.denial.as_deref() else {
            return Ok(());
        };
        let nsec3 = denial.nsec3.as_ref();
        match proof {
            Proof::None => {}
            Proof::Referral(cut) => {
                if let Some(ds) = cut.rrset(RType::DS) {
                    return self.put_signed(Section::Authority, cut.name(), cut, ds);
                }
                // RFC 4035 §3.1.4.1, RFC 5155 §7.2.7: the delegation has no DS.
                self.put_nodata_proof(cut.name(), cut)?;
            }
            Proof::NoData(node) => self.put_nodata_proof(name, node)?,
            Proof::NxDomain(encloser) => {
                let mut star = NameBuf::new();
                let star = star
                    .set_concat(&[1, b'*'], encloser.name())
                    .ok()
                    .map(|()| star.as_ref());
                if let Some(chain) = nsec3 {
                    // RFC 5155 §7.2.2: the closest encloser proof, and the wildcard's cover
                    // (found when the zone was built: the encloser exists).
                    self.put_closest_encloser_proof(name, encloser)?;
                    let cover = chain.wildcard_covering(encloser.id());
                    match (cover, star) {
                        (Some(c), _) => self.put_nsec3(Some(c))?,
                        (None, Some(star)) => self.put_nsec3(chain.covering(star))?,
                        (None, None) => {}
                    }
                } else {
                    // RFC 4035 §3.1.3.2: the name's cover, and the wildcard's.
                    self.put_nsec(denial.nsec_covering(self.zone, name))?;
                    if let Some(star) = star {
                        self.put_nsec(denial.nsec_covering(self.zone, star))?;
                    }
                }
            }
            Proof::WildcardNoData(star) => {
                // RFC 4035 §3.1.3.4, RFC 5155 §7.2.5: no exact match, and the wildcard
                // lacks the type.
                if nsec3.is_some() {
                    if let Some(encloser) = star.parent() {
                        self.put_closest_encloser_proof(name, encloser)?;
                    }
                    self.put_nsec3(nsec3.and_then(|c| c.matching(star.id())))?;
                } else {
                    self.put_nsec(denial.nsec_covering(self.zone, name))?;
                    self.put_nsec(Some(star.id()))?;
                }
            }
        }
        Ok(())
    }

    /// Proves that the wildcard `star` answered `name` because `name` does not exist
    /// (RFC 4035 §3.1.3.3, RFC 5155 §7.2.6).
    pub(super) fn put_wildcard_proof(
        &mut self,
        name: NameRef<'_>,
        star: NodeRef<'z>,
    ) -> Result<(), Full> {
        let Some(denial) = self.zone.denial.as_deref() else {
            return Ok(());
        };
        match (&denial.nsec3, star.parent()) {
            (Some(chain), Some(encloser)) => {
                let next = next_closer(name, encloser.name());
                self.put_nsec3(chain.covering(next))
            }
            _ => {
                let cover = denial.nsec_covering(self.zone, name);
                // QTYPE NSEC answered from the wildcard's own NSEC: that record, already in
                // the answer, is the proof (Knot does not repeat it either).
                if self.qtype == RType::NSEC && cover == Some(star.id()) {
                    return Ok(());
                }
                self.put_nsec(cover)
            }
        }
    }

    /// `name` (this node) exists without the type asked for (RFC 4035 §3.1.3.1, RFC 5155
    /// §7.2.3-7.2.4).
    fn put_nodata_proof(&mut self, name: NameRef<'_>, node: NodeRef<'z>) -> Result<(), Full> {
        let Some(denial) = self.zone.denial.as_deref() else {
            return Ok(());
        };
        if let Some(chain) = &denial.nsec3 {
            if let Some(m) = chain.matching(node.id()) {
                return self.put_nsec3(Some(m));
            }
            // No NSEC3 for this name: an insecure delegation under opt-out (or an empty
            // non-terminal above only such delegations): the closest provable encloser.
            let mut up = node.parent();
            while let Some(p) = up {
                if chain.matching(p.id()).is_some() {
                    return self.put_closest_encloser_proof(name, p);
                }
                up = p.parent();
            }
            return Ok(());
        }
        if node.rrset(RType::NSEC).is_some() {
            self.put_nsec(Some(node.id()))
        } else {
            // An empty non-terminal has no NSEC: the one that covers it says it holds nothing.
            self.put_nsec(denial.nsec_covering(self.zone, name))
        }
    }

    /// RFC 5155 §7.2.1: the NSEC3 matching the closest (provable) encloser and the one
    /// covering the next closer name.
    fn put_closest_encloser_proof(
        &mut self,
        name: NameRef<'_>,
        encloser: NodeRef<'z>,
    ) -> Result<(), Full> {
        let Some(chain) = self.zone.denial.as_deref().and_then(|d| d.nsec3.as_ref()) else {
            return Ok(());
        };
        self.put_nsec3(chain.matching(encloser.id()))?;
        let next = next_closer(name, encloser.name());
        self.put_nsec3(chain.covering(next))
    }

    fn put_nsec(&mut self, node: Option<NodeId>) -> Result<(), Full> {
        self.put_denial_record(node, RType::NSEC)
    }

    fn put_nsec3(&mut self, node: Option<NodeId>) -> Result<(), Full> {
        self.put_denial_record(node, RType::NSEC3)
    }

    /// Writes the NSEC or NSEC3 of `node` with its signatures, once per answer.
    fn put_denial_record(&mut self, node: Option<NodeId>, rtype: RType) -> Result<(), Full> {
        let Some(id) = node else {
            return Ok(());
        };
        if self.proved[..self.nproved].contains(&id) || self.nproved == self.proved.len() {
            return Ok(());
        }
        let node = self.zone.node(id);
        let Some(set) = node.rrset(rtype) else {
            return Ok(());
        };
        self.proved[self.nproved] = id;
        self.nproved += 1;
        self.put_signed(Section::Authority, node.name(), node, set)
    }
}

/// The next closer name (RFC 5155 §1.3): `name` cut to one label more than `encloser`.
fn next_closer<'n>(name: NameRef<'n>, encloser: NameRef<'_>) -> NameRef<'n> {
    name.suffix((encloser.label_count() + 1).min(name.label_count()))
}
