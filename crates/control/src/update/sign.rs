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
use crate::signing::{self, sign_records, SignSpec, Updates};
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

/// A signed zone changed in a batch: its kept changes are synced at the batch's end
/// ([`finish_batch`]).
pub(super) struct Signed {
    key_dir: PathBuf,
}

/// Once per batch, beside the journal's write (on a thread of its own) and before any of
/// its answers goes out: each signed zone's kept changes (`state/<zone>.updates`, appended
/// unsynced by each update) synced. They also name the
/// serials signed, so the state file is not written per batch: every reader of the last
/// serial signed looks at both (`signing::last_signed`), and a restart signs above them.
/// A failure is logged, as the journal's is: the versions are served.
pub(super) fn finish_batch(signed: HashMap<Name, Signed>) {
    for (apex, s) in signed {
        if let Err(e) = Updates::new(&s.key_dir, &apex).sync() {
            error!("zone {apex}: cannot sync the changes kept for its signings: {e}");
        }
    }
}

/// `change`, read against `zone` (signed), made into the zone's new signed version; the
/// change kept for later signings (synced at the batch's end: `finish_batch`), its serial
/// the last signed. `Err`: why not (SERVFAIL; nothing changed but, at worst, the last
/// serial signed moved on).
pub(super) fn signed_version(
    config: &Config,
    table: &ZoneConfig,
    zone: &Zone,
    change: &Change,
    now: u64,
    changed: &RefCell<HashMap<Name, Signed>>,
) -> Result<(Zone, Option<Vec<Name>>), String> {
    let apex = zone.apex().to_name();
    let spec = SignSpec::of(
        table,
        config.server.key_directory.as_deref(),
        &config.keystores,
    )
    .ok_or("no key directory to sign with")?;
    // The signer's time, as at a load (`signing::clock`): not following a leap of the wall
    // clock, never before the last signing.
    let now = signing::signer_now(&apex, &spec, now);
    let kept = Updates::new(&spec.key_dir, &apex);
    // A multi-signer zone's key records changed: the full signer merges them with ours.
    let attempt = match signing::multi::needs_whole(&spec, &apex, change) {
        Some(why) => Incremental::Whole(why),
        None => sign_incrementally(zone, change, &spec, now)?,
    };
    let new = match attempt {
        Incremental::Signed(new, signed) => {
            // The signed change's owners (signatures and chain records among them): the
            // journal diffs the zone at those names alone.
            (new, Some(signed.owners().cloned().collect()))
        }
        Incremental::Whole(why) => {
            info!(
                "update of {apex}: cannot be signed incrementally ({why}): signing the new version whole"
            );
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
    // Synced with the batch's others at its end (`finish_batch`).
    kept.append_unsynced(change)
        .map_err(|e| format!("cannot keep the change: {e}"))?;
    let key_dir = spec.key_dir.clone();
    changed.borrow_mut().insert(apex, Signed { key_dir });
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
