//! signing::updates -- what dynamic updates changed in a signed zone, kept unsigned, so
//! that every signing of the zone whole (a restart, a reload of its unchanged file, the
//! re-signing timer, a key event) signs the zone's records with the updates, not the zone
//! file alone.
//!
//! An update to a signed zone is signed on the main thread before it is answered
//! (`crate::update`: new RRSIGs, the chain patched), and its unsigned part (the records it
//! deleted and added, less the signer's own: RRSIG, NSEC, NSEC3, NSEC3PARAM; and the new
//! SOA) is appended here, in
//! `KEYDIR/state/<zone>.updates`, and synced, before the answer goes back. Whenever the
//! zone is read from its file and signed ([`super::sign_scanned_with`]), these changes are
//! applied to the records read, in order, before the signing: a restart serves the updated
//! records, signed whole (with the signatures of the unchanged RRsets kept from the last
//! signed version, as at any signing). The journal of signed versions (`crate::journal`)
//! is then not replayed: it only serves IXFR.
//!
//! Why not the `.signed` cache instead: it is the zone signed from its file, under a
//! fingerprint of the records read; a re-signing (timer, key event) signs the records read
//! again, which would drop the updates, and rewriting the whole signed zone at every update
//! costs what the zone weighs.
//!
//! At every signing that applied them, the changes are written anew as one (their net
//! effect: each record's last change), so the file follows the difference between the
//! zone file and the served records, not the number of updates.
//!
//! The file names the zone file's serial the changes apply over (written at every signing
//! from the file): the changes are applied when the zone is read first (start) or its file
//! is read again unchanged, and the file's serial is that one. A zone file that changed
//! wins, as with an unsigned zone (`crate::journal::replay`): the changes pending are moved
//! to `<zone>.updates.dropped` with a warning, and the file starts anew. A file edited while
//! the server runs whose serial is not above the served version's is refused (the served
//! version kept) while there are changes it would drop. The serial of the version signed
//! at load: the last update's serial is the last signed (the state file), so the zone is
//! signed with that plus one (or the file's, if greater).
//!
//! Format: `SHARDNSU` | version u32 (1) | the file serial u32, then one record per update:
//! `SUC1` | payload length u32 | payload: the old SOA and the new (TTL u32, length u16,
//! rdata), the counts of deleted and added records (u32 each), each record (owner length
//! u8, owner in wire form, type u16, TTL u32, length u16, rdata). A record cut short (a
//! crash during the append) ends the list.

use super::serial_gt;
use super::state::{state_path, write_atomic};
use shardns_dnssec::RecordList;
use shardns_wire::{Class, Name, NameRef, RType};
use shardns_zone::update::{Change, ChangeRecord};
use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::PathBuf;
use tracing::{info, warn};

const MAGIC: &[u8; 8] = b"SHARDNSU";
const RECORD: &[u8; 4] = b"SUC1";

/// The unsigned changes kept for a signed zone: `KEYDIR/state/<zone>.updates`.
pub struct Updates {
    path: PathBuf,
    apex: Name,
}

/// What [`Updates::replay`] leaves to do once the zone is signed.
pub struct Pending {
    /// Start the file anew over this zone file serial (the file won, or there was none).
    restart: Option<u32>,
    /// Write the file anew over this zone file serial with the changes applied made one
    /// (their net effect), so that it follows the difference from the file, not the
    /// number of updates.
    compact: Option<(u32, Change)>,
}

impl Updates {
    /// The updates kept for the zone at `apex` in `key_dir`.
    pub fn new(key_dir: &std::path::Path, apex: &Name) -> Self {
        Self {
            path: state_path(key_dir, apex, "updates"),
            apex: apex.clone(),
        }
    }

    /// The file serial and the changes, in order; `None` if there is no file.
    pub fn read(&self) -> Result<Option<(u32, Vec<Change>)>, String> {
        let bytes = match fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", self.path.display())),
        };
        let bad = || format!("{}: not a shardns updates file", self.path.display());
        if bytes.len() < 16 || &bytes[..8] != MAGIC || bytes[8..12] != 1u32.to_be_bytes() {
            return Err(bad());
        }
        let base = u32::from_be_bytes(bytes[12..16].try_into().unwrap());
        let mut changes = Vec::new();
        let mut at = 16;
        while at < bytes.len() {
            let Some(change) = record(&bytes[at..]) else {
                warn!(
                    "zone {}: {} is cut short at octet {at} (a crash during a write?): its {} whole changes are read",
                    self.apex,
                    self.path.display(),
                    changes.len()
                );
                break;
            };
            at += 8 + change.1;
            changes.push(change.0);
        }
        Ok(Some((base, changes)))
    }

    /// The serial of the last change kept; `None` if there is none (or no file).
    pub fn last_serial(&self) -> Result<Option<u32>, String> {
        Ok(self
            .read()?
            .and_then(|(_, changes)| changes.last().map(Change::serial)))
    }

    /// Appends `change` (its signer's records left out) and syncs it.
    pub fn append(&self, change: &Change) -> Result<(), String> {
        self.append_unsynced(change)?;
        self.sync()
    }

    /// Appends `change` (its signer's records left out), not yet synced: an update batch
    /// appends each of its changes so and syncs the file once ([`Updates::sync`]) before
    /// any of its answers goes out. A crash before the sync leaves at worst a record cut
    /// short, which ends the list when it is read.
    pub fn append_unsynced(&self, change: &Change) -> Result<(), String> {
        let err = |e: io::Error| format!("{}: {e}", self.path.display());
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(err)?;
        f.write_all(&frame(&self.apex, change)).map_err(err)
    }

    /// Syncs what was appended to the file (through any descriptor of it) to the disk.
    pub fn sync(&self) -> Result<(), String> {
        let err = |e: io::Error| format!("{}: {e}", self.path.display());
        fs::File::open(&self.path)
            .and_then(|f| f.sync_data())
            .map_err(err)
    }

    /// Starts the file anew (no changes) over the zone file serial `base`.
    fn restart(&self, base: u32) -> Result<(), String> {
        write_atomic(&self.path, |w| {
            w.write_all(MAGIC)?;
            w.write_all(&1u32.to_be_bytes())?;
            w.write_all(&base.to_be_bytes())
        })
    }

    /// The records read from the zone file (`records`) with the changes kept applied, when
    /// they apply to it; `changed`: the file changed since it was last read, and the
    /// serial served now. `Err`: a changed file that would drop the changes without moving
    /// the serial on.
    pub fn replay(
        &self,
        records: RecordList,
        changed: Option<u32>,
    ) -> Result<(RecordList, Pending), String> {
        let file_serial = list_serial(&records, &self.apex)
            .ok_or("the zone needs exactly one SOA record at its apex")?;
        let restart = Pending {
            restart: Some(file_serial),
            compact: None,
        };
        let (base, changes) = match self.read()? {
            None => return Ok((records, restart)),
            Some((base, changes)) if changes.is_empty() => {
                let pending = Pending {
                    restart: (base != file_serial).then_some(file_serial),
                    compact: None,
                };
                return Ok((records, pending));
            }
            Some(found) => found,
        };
        let last = changes.last().map_or(base, Change::serial);
        match changed {
            Some(served) if !serial_gt(file_serial, served) => Err(format!(
                "the zone file changed, but its serial {file_serial} is not above the served version's {served}, and {} holds {} changes made by dynamic update that reading it would drop; not loaded, serial {served} still served: give the file a serial above {served}",
                self.path.display(),
                changes.len()
            )),
            Some(_) => {
                self.set_aside(changes.len(), last, "the zone file changed");
                Ok((records, restart))
            }
            None if base != file_serial => {
                let why = format!(
                    "the zone file's serial is {file_serial}, not {base}, the one they apply over (the file was edited or replaced while the server was down?): the file wins"
                );
                self.set_aside(changes.len(), last, &why);
                Ok((records, restart))
            }
            None => {
                info!(
                    "zone {}: {} changes made by dynamic update ({}) applied over the zone file at serial {file_serial}, up to serial {last}",
                    self.apex,
                    changes.len(),
                    self.path.display()
                );
                let pending = Pending {
                    restart: None,
                    compact: (changes.len() > 1).then(|| (base, net(&changes))),
                };
                Ok((apply(records, &self.apex, &changes), pending))
            }
        }
    }

    /// The records read from the zone file with the changes kept applied, as
    /// [`Updates::replay`] applies them at a start, for a reader that does not own the
    /// file (`shardns sign`, beside a server that may be running): the file is only read,
    /// never rewritten nor set aside. The records come back unchanged unless [`Kept::Applied`].
    pub fn apply_read_only(&self, records: RecordList) -> Result<(RecordList, Kept), String> {
        let file_serial = list_serial(&records, &self.apex)
            .ok_or("the zone needs exactly one SOA record at its apex")?;
        let (base, changes) = match self.read()? {
            Some((base, changes)) if !changes.is_empty() => (base, changes),
            _ => return Ok((records, Kept::None)),
        };
        let (count, last) = (changes.len(), changes.last().map_or(base, Change::serial));
        if base != file_serial {
            return Ok((records, Kept::OtherFile { base, count, last }));
        }
        Ok((
            apply(records, &self.apex, &changes),
            Kept::Applied { count, last },
        ))
    }

    /// Where the changes are kept.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Does what `pending` says, once the zone is signed.
    pub fn finish(&self, pending: Pending) -> Result<(), String> {
        if let Some((base, change)) = pending.compact {
            let record = frame(&self.apex, &change);
            return write_atomic(&self.path, |w| {
                w.write_all(MAGIC)?;
                w.write_all(&1u32.to_be_bytes())?;
                w.write_all(&base.to_be_bytes())?;
                w.write_all(&record)
            });
        }
        match pending.restart {
            Some(base) => self.restart(base),
            None => Ok(()),
        }
    }

    /// Moves the changes aside, warning that they are not served.
    fn set_aside(&self, count: usize, last: u32, why: &str) {
        let mut aside = self.path.as_os_str().to_owned();
        aside.push(".dropped");
        let kept = match fs::rename(&self.path, &aside) {
            Ok(()) => format!("kept in {}", PathBuf::from(aside).display()),
            Err(e) => format!("not kept ({e})"),
        };
        warn!(
            "zone {}: {why}; the {count} changes made by dynamic update up to serial {last} are dropped ({kept})",
            self.apex
        );
    }
}

/// What [`Updates::apply_read_only`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// No change kept.
    None,
    /// `count` changes applied, up to serial `last`.
    Applied {
        /// Changes applied.
        count: usize,
        /// The last one's serial.
        last: u32,
    },
    /// `count` changes (up to serial `last`) kept over the zone file at serial `base`, not
    /// this file's: not applied (a server reading this file drops them).
    OtherFile {
        /// The zone file serial they apply over.
        base: u32,
        /// Changes kept.
        count: usize,
        /// The last one's serial.
        last: u32,
    },
}

/// The serial of the apex SOA in `records`.
fn list_serial(records: &RecordList, apex: &Name) -> Option<u32> {
    let soa = records
        .items
        .iter()
        .find(|r| r.rtype == RType::SOA && records.owner(r).eq_ci(&apex.as_ref()))?;
    super::soa_serial(records.rdata(soa))
}

/// A record the signer makes, which the kept changes leave out.
pub fn signer_owned(apex: &Name, owner: &Name, rtype: RType) -> bool {
    match rtype {
        RType::RRSIG | RType::NSEC | RType::NSEC3 | RType::NSEC3PARAM => true,
        RType::DNSKEY | RType::CDS | RType::CDNSKEY => owner.as_ref().eq_ci(&apex.as_ref()),
        _ => false,
    }
}

/// An apex key record type, which the signer makes but a multi-signer zone's data adds to.
fn is_key_record(rtype: RType) -> bool {
    matches!(rtype, RType::DNSKEY | RType::CDS | RType::CDNSKEY)
}

/// What identifies a record whatever its TTL: the owner in lowercase, type, rdata.
type Key = (Vec<u8>, u16, Vec<u8>);

fn key(owner: NameRef<'_>, rtype: RType, rdata: &[u8]) -> Key {
    let mut lower = [0u8; shardns_wire::name::MAX_NAME_LEN];
    let n = owner.lowercase_into(&mut lower);
    (lower[..n].to_vec(), rtype.0, rdata.to_vec())
}

/// `records` with `changes` made, in order: each record's last change decides (deleted,
/// or added with its TTL); the apex SOA is the last change's. The records added come
/// after the others, in a fixed order (the fingerprint of what is signed is the same for
/// the same file and changes).
pub fn apply(records: RecordList, apex: &Name, changes: &[Change]) -> RecordList {
    let last = last_changes(changes);
    let soa = changes.last().map(|c| c.soa.clone());
    let mut out = RecordList::with_capacity(records.items.len() + last.len(), 0);
    for r in &records.items {
        let owner = records.owner(r);
        let is_soa = r.rtype == RType::SOA && owner.eq_ci(&apex.as_ref());
        if (is_soa && soa.is_some()) || last.contains_key(&key(owner, r.rtype, records.rdata(r))) {
            continue;
        }
        let at = out.push_name(owner);
        out.push(at, r.rtype, r.class, r.ttl, records.rdata(r));
    }
    if let Some((ttl, rdata)) = soa {
        let at = out.push_name(apex.as_ref());
        out.push(at, RType::SOA, Class::IN, ttl, &rdata);
    }
    for ((_, t, d), (owner, added)) in &last {
        if let Some(ttl) = added {
            let at = out.push_name(owner.as_ref());
            out.push(at, RType(*t), Class::IN, *ttl, d);
        }
    }
    out
}

/// Each record's last change in `changes`: its owner, and its TTL if it was added
/// (`None`: deleted).
fn last_changes(changes: &[Change]) -> BTreeMap<Key, (Name, Option<u32>)> {
    let mut last = BTreeMap::new();
    for c in changes {
        for (o, t, _, d) in &c.deleted {
            last.insert(key(o.as_ref(), *t, d), (o.clone(), None));
        }
        for (o, t, ttl, d) in &c.added {
            last.insert(key(o.as_ref(), *t, d), (o.clone(), Some(*ttl)));
        }
    }
    last
}

/// `changes` made one: what [`apply`] of it does is what [`apply`] of them does.
fn net(changes: &[Change]) -> Change {
    let (mut deleted, mut added) = (Vec::new(), Vec::new());
    for ((_, t, d), (owner, ttl)) in last_changes(changes) {
        match ttl {
            Some(ttl) => added.push((owner, RType(t), ttl, d)),
            None => deleted.push((owner, RType(t), 0, d)),
        }
    }
    let (first, last) = (&changes[0], &changes[changes.len() - 1]);
    Change {
        deleted,
        added,
        old_soa: first.old_soa.clone(),
        soa: last.soa.clone(),
    }
}

/// One change's record: the mark, the payload's length, the payload.
fn frame(apex: &Name, change: &Change) -> Vec<u8> {
    let payload = encode(apex, change);
    let mut out = Vec::with_capacity(payload.len() + 8);
    out.extend_from_slice(RECORD);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(&payload);
    out
}

/// The payload of one change's record.
fn encode(apex: &Name, c: &Change) -> Vec<u8> {
    let mut out = Vec::new();
    for (ttl, rdata) in [&c.old_soa, &c.soa] {
        out.extend_from_slice(&ttl.to_be_bytes());
        out.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        out.extend_from_slice(rdata);
    }
    // The apex's DNSKEY, CDS and CDNSKEY are kept: a multi-signer zone publishes those
    // updates add (`super::multi`); the full signer drops them from any other zone.
    let made = |r: &ChangeRecord| signer_owned(apex, &r.0, r.1) && !is_key_record(r.1);
    let keep = |list: &[ChangeRecord]| -> Vec<ChangeRecord> {
        list.iter().filter(|r| !made(r)).cloned().collect()
    };
    let (deleted, added) = (keep(&c.deleted), keep(&c.added));
    out.extend_from_slice(&(deleted.len() as u32).to_be_bytes());
    out.extend_from_slice(&(added.len() as u32).to_be_bytes());
    for (o, t, ttl, d) in deleted.iter().chain(&added) {
        let wire = o.as_ref().as_wire();
        out.push(wire.len() as u8);
        out.extend_from_slice(wire);
        out.extend_from_slice(&t.0.to_be_bytes());
        out.extend_from_slice(&ttl.to_be_bytes());
        out.extend_from_slice(&(d.len() as u16).to_be_bytes());
        out.extend_from_slice(d);
    }
    out
}

/// Reads one record at the start of `bytes`: the change and its payload's length.
fn record(bytes: &[u8]) -> Option<(Change, usize)> {
    if bytes.get(..4)? != RECORD {
        return None;
    }
    let len = u32::from_be_bytes(bytes.get(4..8)?.try_into().ok()?) as usize;
    let mut r = Reader(bytes.get(8..8 + len)?);
    let mut soa = || -> Option<(u32, Vec<u8>)> {
        let ttl = r.u32()?;
        let n = usize::from(r.u16()?);
        Some((ttl, r.take(n)?.to_vec()))
    };
    let (old_soa, soa) = (soa()?, soa()?);
    let (ndel, nadd) = (r.u32()? as usize, r.u32()? as usize);
    let mut records = Vec::with_capacity((ndel + nadd).min(1 << 16));
    for _ in 0..ndel + nadd {
        let n = usize::from(*r.take(1)?.first()?);
        let (owner, used) = NameRef::from_wire_prefix(r.take(n)?).ok()?;
        if used != n {
            return None;
        }
        let owner = owner.to_name();
        let (t, ttl) = (RType(r.u16()?), r.u32()?);
        let n = usize::from(r.u16()?);
        records.push((owner, t, ttl, r.take(n)?.to_vec()));
    }
    if !r.0.is_empty() {
        return None;
    }
    let added = records.split_off(ndel);
    let change = Change {
        deleted: records,
        added,
        old_soa,
        soa,
    };
    Some((change, len))
}

/// Reads the payload's fields in turn.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = rest;
        Some(head)
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }
}

#[cfg(test)]
#[path = "tests_updates.rs"]
mod tests;
