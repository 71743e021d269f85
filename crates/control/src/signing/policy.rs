//! signing::policy -- a zone's DNSSEC policy ([`SignSpec`], from its `[[zone]]` table: the
//! keys BIND's `dnssec-policy` and Knot's `policy` have), the keys it makes (the first ones,
//! one CSK or a KSK and a ZSK; a successor when a key's lifetime is up) and the rollovers it
//! moves on at every signing.

use super::store_error;
use shardns_dnssec::roll::{self, RollKind, RollTimings};
use shardns_dnssec::{
    Algorithm, CdsParams, Denial, KeyStore, Nsec3Params, Policy, Role, SignParams, StoredKey,
};
use shardns_wire::Name;
use std::path::{Path, PathBuf};
use tracing::{info, warn};

/// How one zone is signed: from its `[[zone]]` table and `server.key_directory`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignSpec {
    /// The key directory.
    pub key_dir: PathBuf,
    /// The algorithm of the keys made when the directory has none for the zone.
    pub algorithm: Algorithm,
    /// NSEC or NSEC3 (with its parameters).
    pub denial: Denial,
    /// Signature validity, refresh and jitter.
    pub policy: Policy,
    /// Key lifetimes and the waits of a rollover.
    pub roll: RollSpec,
    /// Which CDS and CDNSKEY records, and the CDS digest.
    pub cds: CdsParams,
    /// The shape and sizes of the keys made here.
    pub keys: KeyPolicy,
    /// The TTL of DNSKEY, CDS and CDNSKEY (absent: the SOA's).
    pub dnskey_ttl: Option<u32>,
    /// The PKCS#11 token the keys are made on and used from (absent: key files).
    pub keystore: Option<super::Keystore>,
    /// The KSK is offline: ZSKs only here, the key RRsets from the imported SKR
    /// (`super::offline`).
    pub offline_ksk: bool,
    /// Whether the zone's own DNSKEY, CDS and CDNSKEY records are kept (multi-signer).
    pub dnskey_management: shardns_dnssec::DnskeyManagement,
}

/// The keys made for a zone: their shape and, for RSA, their sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyPolicy {
    /// One CSK (`single_type_signing = true`, the default) or a KSK and a ZSK.
    pub single_type: bool,
    /// Bits of a KSK or CSK with an RSA algorithm (absent: 2048).
    pub ksk_bits: Option<u32>,
    /// Bits of a ZSK with an RSA algorithm (absent: 2048).
    pub zsk_bits: Option<u32>,
}

impl Default for KeyPolicy {
    fn default() -> Self {
        Self {
            single_type: true,
            ksk_bits: None,
            zsk_bits: None,
        }
    }
}

impl KeyPolicy {
    /// The roles of the first keys of a zone.
    fn first_roles(&self) -> &'static [Role] {
        if self.single_type {
            &[Role::Csk]
        } else {
            &[Role::Ksk, Role::Zsk]
        }
    }

    /// The RSA size of a key of `role`.
    fn bits(&self, role: Role) -> Option<u32> {
        match role {
            Role::Zsk => self.zsk_bits,
            Role::Ksk | Role::Csk => self.ksk_bits,
        }
    }
}

/// The rollover settings of a zone (`RollTimings` less the zone's own TTLs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RollSpec {
    /// A ZSK's lifetime (absent: rolled only by hand).
    pub zsk_lifetime: Option<u32>,
    /// A KSK's or CSK's lifetime (absent: rolled only by hand).
    pub ksk_lifetime: Option<u32>,
    /// How long a change takes to reach every secondary, in seconds.
    pub propagation: u32,
    /// The TTL of the DS records at the parent.
    pub parent_ds_ttl: u32,
    /// How long a change at the parent takes to reach its secondaries.
    pub parent_propagation: u32,
}

impl Default for RollSpec {
    fn default() -> Self {
        Self {
            zsk_lifetime: None,
            ksk_lifetime: None,
            propagation: 3600,
            parent_ds_ttl: 86_400,
            parent_propagation: 3600,
        }
    }
}

impl RollSpec {
    pub(super) fn timings(&self, dnskey_ttl: u32, max_ttl: u32) -> RollTimings {
        RollTimings {
            dnskey_ttl: u64::from(dnskey_ttl),
            max_ttl: u64::from(max_ttl),
            propagation: u64::from(self.propagation),
            parent_ds_ttl: u64::from(self.parent_ds_ttl),
            parent_propagation: u64::from(self.parent_propagation),
            zsk_lifetime: self.zsk_lifetime.map(u64::from),
            ksk_lifetime: self.ksk_lifetime.map(u64::from),
        }
    }
}

impl SignSpec {
    /// The signing of `zone`, if it has `dnssec = true` (the config's check made sure a
    /// key directory is set then), its `keystore` one of `keystores`.
    pub fn of(
        zone: &shardns_config::ZoneConfig,
        key_dir: Option<&Path>,
        keystores: &[shardns_config::keystore::KeystoreConfig],
    ) -> Option<Self> {
        if !zone.dnssec {
            return None;
        }
        let key_dir = key_dir?.to_path_buf();
        let denial = if zone.nsec3 || zone.nsec3_opt_out {
            Denial::Nsec3 {
                params: Nsec3Params::default(),
                opt_out: zone.nsec3_opt_out,
            }
        } else {
            Denial::Nsec
        };
        Some(Self {
            key_dir,
            algorithm: zone.algorithm,
            denial,
            policy: Policy {
                validity: zone.signature_validity,
                refresh: zone.signature_refresh,
                jitter: zone.signature_jitter,
                ..Policy::default()
            },
            roll: RollSpec {
                zsk_lifetime: zone.zsk_lifetime,
                ksk_lifetime: zone.ksk_lifetime,
                propagation: zone.propagation_delay,
                parent_ds_ttl: zone.parent_ds_ttl,
                parent_propagation: zone.parent_propagation_delay,
            },
            cds: CdsParams {
                publish: zone.cds_cdnskey_publish,
                digest: zone.cds_digest_type,
            },
            keys: KeyPolicy {
                single_type: zone.single_type_signing,
                ksk_bits: zone.ksk_size,
                zsk_bits: zone.zsk_size,
            },
            dnskey_ttl: zone.dnskey_ttl,
            keystore: zone
                .keystore
                .as_deref()
                .map(|k| super::Keystore::of(k, keystores)),
            offline_ksk: zone.offline_ksk,
            dnskey_management: zone.dnskey_management,
        })
    }

    /// The signer's parameters at `now`: the policy's window and jitter (a random seed),
    /// the denial, the DNSKEY TTL, the CDS; the SOA's serial, every core.
    pub fn sign_params(&self, now: u64) -> SignParams {
        let mut params = SignParams::new(now, &self.policy);
        params.denial = self.denial.clone();
        params.cds = self.cds;
        params.dnskey_ttl = self.dnskey_ttl;
        params
    }
}

/// The CDS at an algorithm rollover's DS change: `rollover` shows CDS only while two keys
/// qualify, and once the old key's CDS is gone ([`roll::algorithm::waits_for_old_ds`]) the
/// new key's alone is shown too (as Knot's modes show the ready key alone), so that a
/// parent following CDS replaces the DS set, which the old DNSKEYs wait for.
pub(super) fn cds_at_ds_change(params: &mut SignParams, keys: &[StoredKey], now: u64) {
    let changing = keys
        .iter()
        .any(|k| roll::algorithm::waits_for_old_ds(&k.meta, now));
    if changing && params.cds.publish == shardns_dnssec::CdsPublish::Rollover {
        params.cds.publish = shardns_dnssec::CdsPublish::Always;
    }
}

/// Makes and writes the first keys of a zone whose key directory has none: one CSK, or a
/// KSK and a ZSK, of the zone's algorithm (and size), published and active from `now`.
pub(super) fn first_keys(
    apex: &Name,
    store: &KeyStore,
    spec: &SignSpec,
    now: u64,
) -> Result<Vec<StoredKey>, String> {
    let mut keys = Vec::new();
    for &role in spec.keys.first_roles() {
        let key = store
            .make_sized(apex, spec.algorithm, role, spec.keys.bits(role), now)
            .map_err(|e| store_error(&e))?;
        store.save_new(&key).map_err(|e| store_error(&e))?;
        info!(
            "zone {apex}: no key in {}, made {} ({} {}, tag {})",
            spec.key_dir.display(),
            key.stem,
            key.meta.role,
            key.meta.algorithm,
            key.meta.tag
        );
        keys.push(key);
    }
    Ok(keys)
}

/// Moves the rollovers under way on at `now` ([`roll::tick`]): the old key's end set from
/// its successor's start, a new key made when the lifetime of the active one is up (a ZSK
/// published at once; a KSK or CSK waiting for its DS, which the operator confirms).
/// Steps that come due together after a pause since the last signing at `served`
/// (the server down, a signing failing) are held apart by [`roll::hold`] first.
/// Changed keys are written (a new key first).
pub(super) fn step_rollovers(
    apex: &Name,
    store: &KeyStore,
    keys: &mut Vec<StoredKey>,
    spec: &SignSpec,
    timings: &RollTimings,
    (served, now): (Option<u64>, u64),
) -> Result<(), String> {
    let mut metas: Vec<_> = keys.iter().map(|k| k.meta.clone()).collect();
    if let Some(served) = served {
        hold_unserved(apex, store, keys, &mut metas, timings, (served, now))?;
    }
    start_algorithm_rollover(apex, store, keys, &mut metas, spec, timings, now)?;
    start_shape_rollover(apex, store, keys, &mut metas, spec, timings, now)?;
    let mut tick = roll::tick(&mut metas, timings, now);
    // At most one new key of each kind: a kind with a rollover under way makes none.
    while let Some(new) = tick.new_key.take() {
        let bits = spec.keys.bits(new.role);
        let mut key = store
            .make_sized(apex, new.algorithm, new.role, bits, now)
            .map_err(|e| store_error(&e))?;
        roll::schedule_new(&mut key.meta, new.kind, timings, now);
        store.save_new(&key).map_err(|e| store_error(&e))?;
        let (old, tag) = (&metas[new.old], key.meta.tag);
        match new.kind {
            RollKind::Zsk => info!(
                "zone {apex}: the lifetime of ZSK {} is up: made ZSK {tag} ({}), published now, signing from {}",
                old.tag,
                key.stem,
                shardns_dnssec::keys::format_time(key.meta.activate.unwrap_or(now))
            ),
            // The parent's part is the operator's: said loudly, as it waits for them.
            RollKind::Ksk => warn!(
                "zone {apex}: the lifetime of {} {} is up: made {} {tag} ({}), waiting for its DS at the parent: \
                 give the parent the DS that `shardns key ds {apex}` prints, then run `shardns key submitted {apex} {tag}` \
                 and reload the zone (with parent_agents or ds_push, the server does it once the parent serves it)",
                old.role,
                old.tag,
                key.meta.role,
                key.stem
            ),
        }
        metas.push(key.meta.clone());
        keys.push(key);
        tick = roll::tick(&mut metas, timings, now);
    }
    for i in tick.changed {
        keys[i].meta = metas[i].clone();
        store.save(&keys[i]).map_err(|e| store_error(&e))?;
        let m = &keys[i].meta;
        let time = |t: Option<u64>| t.map_or("-".into(), shardns_dnssec::keys::format_time);
        info!(
            "zone {apex}: {} {} rolled over: signs until {}, withdrawn at {}",
            m.role,
            m.tag,
            time(m.inactive),
            time(m.delete)
        );
    }
    Ok(())
}

/// [`roll::hold`], the keys it moves written and logged: a step due while its preceding
/// one was never served (signed last at `served`) waits its time from `now`.
fn hold_unserved(
    apex: &Name,
    store: &KeyStore,
    keys: &mut [StoredKey],
    metas: &mut [shardns_dnssec::KeyMeta],
    timings: &RollTimings,
    (served, now): (u64, u64),
) -> Result<(), String> {
    for i in roll::hold(metas, timings, served, now) {
        let late = now.saturating_sub(served);
        let before = keys[i].meta.clone();
        keys[i].meta = metas[i].clone();
        store.save(&keys[i]).map_err(|e| store_error(&e))?;
        let time = |t: Option<u64>| t.map_or("-".into(), shardns_dnssec::keys::format_time);
        let m = &keys[i].meta;
        // How far its times moved: a second or two when the timer woke a moment after a
        // key event (info), a wait's worth when a pause skipped one (a warning).
        let moved = m
            .times()
            .iter()
            .zip(before.times())
            .filter_map(|((_, a), (_, b))| Some(a.as_ref()?.saturating_sub(b?)))
            .max()
            .unwrap_or(0);
        let say = if moved > 2 { warn_line } else { info_line };
        say(format!(
            "zone {apex}: last signed {late} s ago, so the rollover's next step waits its \
             time from now (RFC 7583), {moved} s later: {} {} publishes {}, signs {} to {}, \
             withdrawn at {} (was {} / {} / {} / {})",
            m.role,
            m.tag,
            time(m.publish),
            time(m.activate),
            time(m.inactive),
            time(m.delete),
            time(before.publish),
            time(before.activate),
            time(before.inactive),
            time(before.delete),
        ));
    }
    Ok(())
}

fn warn_line(line: String) {
    warn!("{line}");
}

fn info_line(line: String) {
    info!("{line}");
}

/// Starts an algorithm rollover when the zone's `algorithm` is not its signing keys'
/// ([`roll::algorithm`], as Knot does): new keys of the policy's shape and the new algorithm,
/// signing now and published later; the KSK or CSK written first, so that a crash between
/// the files leaves a key that signs the whole zone by itself.
fn start_algorithm_rollover(
    apex: &Name,
    store: &KeyStore,
    keys: &mut Vec<StoredKey>,
    metas: &mut Vec<shardns_dnssec::KeyMeta>,
    spec: &SignSpec,
    timings: &RollTimings,
    now: u64,
) -> Result<(), String> {
    if !roll::algorithm::due(metas, spec.algorithm, now) {
        if roll::algorithm::wanted(metas, spec.algorithm, now) {
            info!(
                "zone {apex}: algorithm {} configured, the keys sign with another: the \
                 algorithm rollover starts once the rollover under way ends",
                spec.algorithm
            );
        }
        return Ok(());
    }
    let old: Vec<String> = metas
        .iter()
        .filter(|m| m.signs(now) && m.algorithm != spec.algorithm)
        .map(|m| format!("{} {} ({})", m.role, m.tag, m.algorithm))
        .collect();
    let (mut made, mut sep) = (Vec::new(), 0);
    for &role in spec.keys.first_roles() {
        let mut key = store
            .make_sized(apex, spec.algorithm, role, spec.keys.bits(role), now)
            .map_err(|e| store_error(&e))?;
        roll::algorithm::schedule_new(&mut key.meta, timings, now);
        store.save_new(&key).map_err(|e| store_error(&e))?;
        made.push(format!("{} {}", key.meta.role, key.meta.tag));
        if role != Role::Zsk {
            sep = key.meta.tag;
        }
        metas.push(key.meta.clone());
        keys.push(key);
    }
    let time = shardns_dnssec::keys::format_time;
    let published = now + timings.retire_wait(Role::Zsk).max(1);
    info!(
        "zone {apex}: algorithm {} configured, the keys sign with another: algorithm rollover \
         started (RFC 6781 §4.1.4): made {} signing now, their DNSKEYs published at {}, \
         their DS wanted at the parent from {} (then `shardns key ds {apex}` prints it; \
         confirm it with `shardns key submitted {apex} {sep}`, or let parent_agents or \
         ds_push do it); then {} go",
        spec.algorithm,
        made.join(", "),
        time(published),
        time(published + timings.publish_wait()),
        old.join(", ")
    );
    Ok(())
}

/// Starts a key shape rollover when the zone's keys are not of the shape
/// `single_type_signing` asks ([`roll::shape`], as Knot does on a change of its
/// `single-type-signing`): the keys of the new shape the zone lacks, a ZSK published now
/// (written first: a crash before the KSK's file leaves the zone valid, the KSK made at the
/// next signing), a KSK or CSK waiting for its DS as in a KSK rollover. Only on a change
/// of the setting: keys of the other shape put in by hand are left alone.
fn start_shape_rollover(
    apex: &Name,
    store: &KeyStore,
    keys: &mut Vec<StoredKey>,
    metas: &mut Vec<shardns_dnssec::KeyMeta>,
    spec: &SignSpec,
    timings: &RollTimings,
    now: u64,
) -> Result<(), String> {
    let single = spec.keys.single_type;
    let shape = if single { "one CSK" } else { "a KSK and a ZSK" };
    let wanted = roll::shape::wanted(metas, single, spec.algorithm);
    // What the zone's keys are of, or roll to: `state/<zone>.shape`. Keys of the other
    // shape with none recorded were put in by hand (or by a version that did not record
    // it), and are left as they are: only a change of the setting rolls.
    let file = super::state::state_path(&spec.key_dir, apex, "shape");
    let adopted = match std::fs::read_to_string(&file) {
        Ok(text) => text.trim().parse::<bool>().ok(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", file.display())),
    };
    if adopted.is_none() && !wanted.is_empty() {
        info!(
            "zone {apex}: single_type_signing = {single} ({shape}), the keys in the key \
             directory are of the other shape: kept as they are (a change of \
             single_type_signing rolls the shape)"
        );
        return Ok(());
    }
    if adopted != Some(single) {
        super::state::write_atomic(&file, |w| {
            use std::io::Write;
            writeln!(w, "{single}")
        })?;
    }
    if !roll::shape::due(metas, single, spec.algorithm, now) {
        if !wanted.is_empty() {
            info!(
                "zone {apex}: single_type_signing = {single} ({shape}), the keys are of the \
                 other shape: the shape rollover starts once the rollover under way ends"
            );
        }
        return Ok(());
    }
    let old: Vec<String> = metas
        .iter()
        .filter(|m| m.algorithm == spec.algorithm && m.inactive.is_none() && m.delete.is_none())
        .map(|m| format!("{} {}", m.role, m.tag))
        .collect();
    let (mut made, mut sep) = (Vec::new(), 0);
    for role in wanted {
        let mut key = store
            .make_sized(apex, spec.algorithm, role, spec.keys.bits(role), now)
            .map_err(|e| store_error(&e))?;
        roll::shape::schedule_new(&mut key.meta, timings, now);
        store.save_new(&key).map_err(|e| store_error(&e))?;
        made.push(format!("{} {} ({})", key.meta.role, key.meta.tag, key.stem));
        if role != Role::Zsk {
            sep = key.meta.tag;
        }
        metas.push(key.meta.clone());
        keys.push(key);
    }
    // The parent's part waits for the operator (or parent_agents, ds_push): said loudly.
    warn!(
        "zone {apex}: single_type_signing = {single} ({shape}), the keys are {}: key shape \
         rollover started: made {}; give the parent the DS that `shardns key ds {apex}` \
         prints, then run `shardns key submitted {apex} {sep}` and reload the zone (with \
         parent_agents or ds_push, the server does it once the parent serves it); the old \
         keys go once the new one signs",
        old.join(", "),
        made.join(", ")
    );
    Ok(())
}

#[cfg(test)]
mod tests;
