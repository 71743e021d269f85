//! signing::incremental -- a change to a signed zone signed by itself, not the zone whole:
//! the keys that sign the zone at `now`, read from the key directory as a full signing
//! reads them, sign what the change touched (`shardns_zone::update::sign_change`: new
//! RRSIGs, the NSEC or NSEC3 chain patched) and the new version is made from the signed
//! change. The one hand-off for both callers: dynamic updates (`crate::update::sign`) and
//! IXFR into a signed secondary zone (`crate::secondary::signer`).

use super::SignSpec;
use shardns_dnssec::keys::zone_keys;
use shardns_dnssec::{KeyStore, RecordList};
use shardns_wire::Name;
use shardns_zone::update::{sign_change, Change};
use shardns_zone::Zone;

/// What [`sign_incrementally`] gives when it does not fail.
pub enum Incremental {
    /// The new signed version, and the signed change it was made with (the records it
    /// deleted and added, RRSIGs and chain records among them).
    Signed(Zone, Change),
    /// The change cannot be signed by itself (a key that started or stopped signing since
    /// the zone was signed, a new SOA TTL or MINIMUM that moves the chain's TTL): why;
    /// the caller signs the new version whole.
    Whole(String),
}

/// `change`, read against `zone` (signed as `spec` says), signed and applied at `now`. The
/// state file is the caller's to write (the serial is the change's new SOA's).
pub fn sign_incrementally(
    zone: &Zone,
    change: &Change,
    spec: &SignSpec,
    now: u64,
) -> Result<Incremental, String> {
    if spec.offline_ksk {
        // The key RRsets come from the SKR's period: `signing::offline` signs whole.
        return Ok(Incremental::Whole(
            "an offline KSK's zone is signed whole".into(),
        ));
    }
    let apex = zone.apex().to_name();
    // Key files or a token's keys (`keystore`), as a full signing reads them.
    let keys = super::load_keys(&apex, spec)?;
    let zk = zone_keys(&keys, now);
    let mut params = spec.sign_params(now);
    super::policy::cds_at_ds_change(&mut params, &keys, now);
    params.threads = 1;
    // A multi-signer zone's foreign key records, as the version signed publishes them.
    params.foreign = super::multi::foreign_of(spec, zone, &keys);
    match sign_change(zone, change, &zk, &params) {
        Ok(signed) => {
            // Left split: a batch's next update patches it again (an update batch serves
            // it so; the secondary's signer packs it, `Zone::pack_small`).
            let (new, _) = signed
                .apply_split(zone)
                .map_err(|e| format!("the new signed version does not build: {e}"))?;
            Ok(Incremental::Signed(new, signed))
        }
        Err(e) if e.needs_full_signing() => Ok(Incremental::Whole(e.to_string())),
        Err(e) => Err(format!("cannot sign the change: {e}")),
    }
}

/// The fingerprint a full signing of `unsigned` (the zone at `apex`'s records, in
/// canonical order) would find with the keys in the key directory now: a version signed
/// incrementally is kept under it, so that a restart that reads the same records serves
/// that version as it is.
pub fn fingerprint_of(
    apex: &Name,
    unsigned: &RecordList,
    spec: &SignSpec,
) -> Result<String, String> {
    let store = KeyStore::open(&spec.key_dir).map_err(|e| super::store_error(&e))?;
    let keys = store.load(apex).map_err(|e| super::store_error(&e))?;
    Ok(super::fingerprint(unsigned, &keys, spec))
}
