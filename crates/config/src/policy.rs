//! policy -- the DNSSEC key and signature policy of a `[[zone]]` (the keys BIND's
//! `dnssec-policy` and Knot's `policy` have): its defaults, the checks of combinations that
//! cannot work (errors) and of settings that do nothing as configured (warnings).

use crate::{Config, ZoneConfig};

pub(crate) fn yes() -> bool {
    true
}

pub(crate) fn default_cds_digest() -> shardns_dnssec::DigestType {
    shardns_dnssec::DigestType::Sha256
}

pub(crate) fn default_algorithm() -> shardns_dnssec::Algorithm {
    shardns_dnssec::Algorithm::EcdsaP256Sha256
}

pub(crate) fn default_validity() -> u32 {
    shardns_dnssec::Policy::default().validity
}

pub(crate) fn default_refresh() -> u32 {
    shardns_dnssec::Policy::default().refresh
}

/// The policy of a zone to be signed, whose `signature_refresh` is already known to be
/// less than its `signature_validity`: `Err((key, message))` for the first setting that
/// cannot work with the others.
pub(crate) fn check(z: &ZoneConfig) -> Result<(), (&'static str, String)> {
    let window = z.signature_validity - z.signature_refresh;
    if z.signature_jitter > 0 && z.signature_jitter >= window {
        // The earliest signature would be due as soon as it is made.
        return Err((
            "signature_jitter",
            format!(
                "zone {}: signature_jitter ({} s) must be less than signature_validity less \
                 signature_refresh ({} s)",
                z.name, z.signature_jitter, window
            ),
        ));
    }
    for (key, size) in [("ksk_size", z.ksk_size), ("zsk_size", z.zsk_size)] {
        let Some(bits) = size else { continue };
        if !z.algorithm.is_rsa() {
            return Err((
                key,
                format!(
                    "zone {}: {key} applies to RSA keys only, and algorithm is {} (its keys \
                     have one size)",
                    z.name,
                    z.algorithm.mnemonic().to_ascii_lowercase()
                ),
            ));
        }
        if !shardns_dnssec::key::RSA_BITS.contains(&bits) {
            return Err((
                key,
                format!(
                    "zone {}: {key} = {bits}: RSA keys are made with 2048, 3072 or 4096 bits",
                    z.name
                ),
            ));
        }
    }
    Ok(())
}

/// What the zones' policies ask that does not apply: ZSK settings for zones whose keys
/// are made as one CSK (they still apply to a ZSK put in the key directory by hand).
pub(crate) fn warnings(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    for z in config
        .zones
        .iter()
        .filter(|z| z.dnssec && z.single_type_signing && !z.offline_ksk)
    {
        let set = [
            ("zsk_lifetime", z.zsk_lifetime.is_some()),
            ("zsk_size", z.zsk_size.is_some()),
        ];
        for (key, _) in set.into_iter().filter(|(_, on)| *on) {
            out.push(format!(
                "zone {}: {key} is ignored for the keys made here, a CSK \
                 (single_type_signing = true): it applies only to a ZSK put in the key \
                 directory by hand; the CSK's lifetime is ksk_lifetime",
                z.name
            ));
        }
    }
    out.extend(config.zones.iter().flat_map(offline_ksk));
    // The parent is asked about the DS of keys this server makes: nothing to ask without.
    for z in config
        .zones
        .iter()
        .filter(|z| !z.dnssec || z.is_secondary())
    {
        if !z.parent_agents.is_empty() || z.ds_push.is_some() {
            out.push(format!(
                "zone {}: parent_agents and ds_push are ignored: the zone is not signed here",
                z.name
            ));
        }
    }
    out
}

/// What an offline KSK's zone sets that the server does not do: it makes and rolls no key
/// (`shardns key pregenerate` makes the ZSKs, with the zone's `zsk_lifetime`; the KSK and
/// its DS are the other machine's).
fn offline_ksk(z: &ZoneConfig) -> Vec<String> {
    if !z.offline_ksk {
        return Vec::new();
    }
    if !z.dnssec {
        return vec![format!(
            "zone {}: offline_ksk is ignored: the zone is not signed here (dnssec = false)",
            z.name
        )];
    }
    // zsk_lifetime is `shardns key pregenerate --config`'s, not ignored.
    let set = [
        ("ksk_lifetime", z.ksk_lifetime.is_some()),
        ("parent_agents", !z.parent_agents.is_empty()),
        ("ds_push", z.ds_push.is_some()),
    ];
    set.into_iter()
        .filter(|(_, on)| *on)
        .map(|(key, _)| {
            format!(
                "zone {}: {key} is ignored with offline_ksk: the KSK and its DS are the KSK \
                 side's",
                z.name
            )
        })
        .collect()
}

/// A duration that may be 0 (`signature_jitter`: none).
pub(crate) fn duration_or_zero<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Seconds(u64),
        Text(String),
    }
    match serde::Deserialize::deserialize(d)? {
        Raw::Seconds(0) => Ok(0),
        Raw::Text(s) if s.trim() == "0" => Ok(0),
        Raw::Seconds(n) => crate::parse_duration(&n.to_string()),
        Raw::Text(s) => crate::parse_duration(&s),
    }
    .map_err(serde::de::Error::custom)
}

/// A zone's `zonefile_sync` when not given: 60 s.
pub(crate) fn default_sync() -> Option<u32> {
    Some(60)
}

/// One hour: the default propagation delays and DS check interval.
pub(crate) fn default_hour() -> u32 {
    3600
}

/// One day: the parent's DS TTL assumed when not given.
pub(crate) fn default_day() -> u32 {
    86_400
}
