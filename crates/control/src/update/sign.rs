//! update::sign -- an update to a signed zone (`dnssec = true`), signed before it is
//! answered: the keys that sign the zone now, from the key directory as the signing at load
//! reads them (`crate::signing`), sign what the change touched (new RRSIGs, the NSEC or
//! NSEC3 chain patched: `shardns_zone::update::sign_change`); the last serial signed (the
//! state file) moves to the update's, and the change's unsigned part is kept
//! (`crate::signing::updates`) so that every later signing of the zone whole has it.
//!
//! When the change cannot be signed incrementally but the zone signed whole would do (a
//! key that started or stopped signing since the zone was signed, a new SOA TTL or
//! MINIMUM that moves the chain's TTL), the new version's unsigned records are signed
//! whole, here on the main thread, with the full signer (`signing::sign_records`, which
//! keeps the signatures of the unchanged RRsets from the last signed version): slower, but
//! the update is answered signed all the same.

use crate::signing::incremental::{sign_incrementally, Incremental};
use crate::signing::{self, sign_records, SignSpec, StateFile, Updates};
use shardns_config::{Config, ZoneConfig};
use shardns_dnssec::RecordList;
use shardns_wire::Name;
use shardns_wire::{Class, RType};
use shardns_zone::update::Change;
use shardns_zone::Zone;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use tracing::{error, info};

/// A signed zone's last serial signed in a batch: its state file's, written at the batch's
/// end ([`write_serials`]).
pub(super) struct Signed {
    key_dir: PathBuf,
    serial: u32,
}

/// Writes each signed zone's last serial signed to its state file, once per batch and
/// before any of its answers goes out (a restart then signs above it). A failure is logged:
/// the updates are kept (`state/<zone>.updates`) and the next signing moves the serial on.
pub(super) fn write_serials(serials: HashMap<Name, Signed>) {
    for (apex, s) in serials {
        if let Err(e) = StateFile::new(&s.key_dir, &apex).set_serial(s.serial) {
            error!(
                "zone {apex}: cannot write the serial signed ({}): {e}",
                s.serial
            );
        }
    }
}

/// `change`, read against `zone` (signed), made into the zone's new signed version; the
/// kept updates written first (the serial signed at the batch's end, `write_serials`). `Err`: why not (SERVFAIL; nothing
/// changed but, at worst, the last serial signed moved on).
pub(super) fn signed_version(
    config: &Config,
    table: &ZoneConfig,
    zone: &Zone,
    change: &Change,
    now: u64,
    serials: &RefCell<HashMap<Name, Signed>>,
) -> Result<(Zone, Option<Vec<Name>>), String> {
    let apex = zone.apex().to_name();
    let spec = SignSpec::of(
        table,
        config.server.key_directory.as_deref(),
        &config.keystores,
    )
    .ok_or("no key directory to sign with")?;
    let kept = Updates::new(&spec.key_dir, &apex);
    // A multi-signer zone's key records changed: the full signer merges them with ours.
    let attempt = match signing::multi::needs_whole(&spec, &apex, change) {
        Some(why) => Incremental::Whole(why),
        None => sign_incrementally(zone, change, &spec, now)?,
    };
    let new = match attempt {
        Incremental::Signed(new, signed) => {
            // The state file's serial once per batch, before the answers (`write_serials`).
            let key_dir = spec.key_dir.clone();
            let serial = change.serial();
            serials
                .borrow_mut()
                .insert(apex.clone(), Signed { key_dir, serial });
            // The signed change's owners (signatures and chain records among them): the
            // journal diffs the zone at those names alone.
            (new, Some(signed.owners().cloned().collect()))
        }
        Incremental::Whole(why) => {
            info!(
                "update of {apex}: cannot be signed incrementally ({why}): signing the new version whole"
            );
            // The signer writes the state file's serial: none pending of this batch's may
            // come after it.
            serials.borrow_mut().remove(&apex);
            let records = unsigned_records(zone, change, &spec);
            // Serial: the change's, above the last signed (the state file's); the state
            // file written by the signer.
            let (list, serial, _) = sign_records(&apex, records, &spec, now, 1)?;
            if serial != change.serial() {
                return Err(format!(
                    "signed whole with serial {serial}, not the update's {}",
                    change.serial()
                ));
            }
            let files = vec![PathBuf::from(format!("<UPDATE of {apex}>"))];
            let zone = Zone::build_sorted(apex.clone(), list, files, Vec::new())
                .map(|(zone, _)| zone)
                .map_err(|e| format!("the new signed version does not build: {e}"))?;
            // Signed whole: the journal compares the zone whole.
            (zone, None)
        }
    };
    kept.append(change)
        .map_err(|e| format!("cannot keep the change: {e}"))?;
    Ok(new)
}

/// The unsigned records of the version `change` makes of `zone`: the zone's, less the
/// signer's own, with the change made.
fn unsigned_records(zone: &Zone, change: &Change, spec: &SignSpec) -> RecordList {
    let apex = zone.apex().to_name();
    let mut list = RecordList::default();
    for id in 0..zone.node_count() as u32 {
        let node = zone.node(id);
        let owner = node.name().to_name();
        for set in node.rrsets() {
            if signing::multi::signer_owned(spec, &apex, &owner, set.rtype) {
                continue;
            }
            let at = list.push_name(node.name());
            for data in set.rdatas() {
                list.push(at, set.rtype, Class::IN, set.ttl, data);
            }
        }
    }
    debug_assert!(list.items.iter().any(|r| r.rtype == RType::SOA));
    signing::updates::apply(list, &apex, std::slice::from_ref(change))
}
