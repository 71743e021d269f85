//! config::validate -- checks on the values of a config file: while it is parsed, each
//! checked key's deserializer (ranges, names, prefixes, log filters), so an error points at
//! the key's line; after, the references between tables (a transfer key names a `[[key]]`).

use super::{Config, ConfigError};
use serde::{Deserialize, Deserializer};
use shardns_wire::Name;
use std::path::Path;
use std::str::FromStr;

/// A transfer key must be one of the `[[key]]` tables.
pub(super) fn transfer_keys_exist(config: &Config, path: &Path) -> Result<(), ConfigError> {
    let server_key = (
        "server.transfer_key".to_string(),
        &config.server.transfer_key,
    );
    let zone_keys = config.zones.iter().enumerate();
    let primary_keys = config.zones.iter().enumerate();
    let parent_keys = config.zones.iter().enumerate().flat_map(|(i, z)| {
        [
            (format!("zone[{i}].parent_agents_key"), &z.parent_agents_key),
            (format!("zone[{i}].ds_push_key"), &z.ds_push_key),
        ]
    });
    let named = std::iter::once(server_key)
        .chain(zone_keys.map(|(i, z)| (format!("zone[{i}].transfer_key"), &z.transfer_key)))
        .chain(primary_keys.map(|(i, z)| (format!("zone[{i}].primary_key"), &z.primary_key)))
        .chain(parent_keys)
        .chain(
            config
                .resolver
                .rpz
                .iter()
                .enumerate()
                .map(|(i, z)| (format!("resolver.rpz[{i}].primary_key"), &z.primary_key)),
        )
        .chain(
            config
                .templates
                .iter()
                .enumerate()
                .map(|(i, t)| (format!("template[{i}].primary_key"), &t.primary_key)),
        );
    for (i, t) in config.templates.iter().enumerate() {
        if let Some(Err(e)) = t.primary_tls.as_ref().map(|t| t.check()) {
            return Err(ConfigError {
                path: path.into(),
                position: None,
                key: Some(format!("template[{i}].primary_tls")),
                message: e,
            });
        }
    }
    for (key, name) in named {
        if let Some(n) = name {
            if !config.keys.iter().any(|k| &k.0.name == n) {
                return Err(ConfigError {
                    path: path.into(),
                    position: None,
                    key: Some(key),
                    message: format!("no [[key]] named {n}"),
                });
            }
        }
    }
    Ok(())
}

/// A zone is a primary zone with a file, or a secondary zone with primaries (and maybe a
/// file for its copy); a `primary_key` needs primaries to be used with.
/// Errors point at the zone's `[[zone]]` line in `text`.
pub(super) fn secondary_zones(config: &Config, path: &Path, text: &str) -> Result<(), ConfigError> {
    for (i, z) in config.zones.iter().enumerate() {
        let error = |key: &str, message: &str| ConfigError {
            path: path.into(),
            position: text
                .lines()
                .enumerate()
                .filter(|(_, l)| l.trim_start().starts_with("[[zone]]"))
                .nth(i)
                .map(|(n, l)| (n + 1, l.len() - l.trim_start().len() + 1)),
            key: Some(format!("zone[{i}].{key}")),
            message: message.into(),
        };
        let produced = z.catalog == Some(super::CatalogRole::Produce);
        if produced && (z.is_secondary() || !z.file.as_os_str().is_empty()) {
            return Err(error(
                "catalog",
                "\"produce\": the catalog is generated; it takes no `file` and no `primary`",
            ));
        }
        if z.catalog == Some(super::CatalogRole::Consume) && !z.is_secondary() {
            return Err(error(
                "catalog",
                "\"consume\" needs `primary`: a consumed catalog is a secondary zone",
            ));
        }
        if !z.catalog_templates.is_empty() && z.catalog != Some(super::CatalogRole::Consume) {
            return Err(error(
                "catalog_templates",
                "set, but the zone is not consumed as a catalog",
            ));
        }
        for t in &z.catalog_templates {
            if !config.templates.iter().any(|c| &c.name == t) {
                return Err(error(
                    "catalog_templates",
                    &format!("no [[template]] named {t:?}"),
                ));
            }
        }
        if let Some(cat) = &z.catalog_member {
            let ok = config
                .zones
                .iter()
                .any(|c| &c.name == cat && c.catalog == Some(super::CatalogRole::Produce));
            if !ok {
                return Err(error(
                    "catalog_member",
                    &format!("no zone {cat} with catalog = \"produce\""),
                ));
            }
        }
        if z.catalog_group.as_ref().is_some_and(|g| g.len() > 255) {
            return Err(error(
                "catalog_group",
                "longer than 255 octets (one TXT string)",
            ));
        }
        if z.catalog_group.is_some() && z.catalog_member.is_none() {
            return Err(error(
                "catalog_group",
                "set, but the zone has no `catalog_member`",
            ));
        }
        if !produced && !z.is_secondary() && z.file.as_os_str().is_empty() {
            return Err(error(
                "file",
                "missing field `file` (only a secondary zone, one with `primary`, may go without)",
            ));
        }
        if !z.is_secondary() && z.primary_tls.is_some() {
            return Err(error("primary_tls", "set, but the zone has no `primary`"));
        }
        if let Some(t) = &z.primary_tls {
            if let Err(e) = t.check() {
                return Err(error("primary_tls", &e));
            }
        }
        if !z.is_secondary() && z.primary_key.is_some() {
            return Err(error("primary_key", "set, but the zone has no `primary`"));
        }
        if !z.is_secondary() && !z.update_forwarding.is_empty() {
            return Err(error(
                "update_forwarding",
                "set, but the zone has no `primary` to forward updates to",
            ));
        }
    }
    Ok(())
}

/// A zone with `dnssec = true` needs a key directory, and signatures that are refreshed
/// before they expire. Checked after the command line is applied (`--key-dir` may supply
/// the directory a file's zone needs); `path` names the file, or the command line.
pub fn signing(config: &Config, path: &Path) -> Result<(), ConfigError> {
    for (i, z) in config.zones.iter().enumerate() {
        // Secondary zones too: they are signed as they arrive (bump in the wire).
        if !z.dnssec {
            continue;
        }
        let error = |key: &str, message: String| ConfigError {
            path: path.into(),
            position: None,
            key: Some(format!("zone[{i}].{key}")),
            message,
        };
        if config.server.key_directory.is_none() {
            return Err(error(
                "dnssec",
                format!(
                    "zone {} is to be signed but no key directory is set ([server] \
                     key_directory or --key-dir DIR)",
                    z.name
                ),
            ));
        }
        if z.signature_refresh >= z.signature_validity {
            return Err(error(
                "signature_refresh",
                format!(
                    "zone {}: signature_refresh ({} s) must be less than signature_validity \
                     ({} s)",
                    z.name, z.signature_refresh, z.signature_validity
                ),
            ));
        }
        crate::policy::check(z).map_err(|(key, message)| error(key, message))?;
    }
    Ok(())
}

/// A signing algorithm we can make keys of, by its mnemonic in any case.
pub(super) fn sign_algorithm<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<shardns_dnssec::Algorithm, D::Error> {
    let s = String::deserialize(d)?;
    shardns_dnssec::Algorithm::from_mnemonic(&s)
        .filter(|a| a.can_generate())
        .ok_or_else(|| {
            serde::de::Error::custom(format!(
                "{s:?} is not an algorithm keys are made with here (ecdsap256sha256, \
                 ecdsap384sha384, ed25519, rsasha256, rsasha512)"
            ))
        })
}

/// A `cds_cdnskey_publish` mode by its name (Knot's).
pub(super) fn cds_publish<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<shardns_dnssec::CdsPublish, D::Error> {
    let s = String::deserialize(d)?;
    shardns_dnssec::CdsPublish::from_name(&s).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "{s:?} is not a cds_cdnskey_publish mode (none, rollover, always, double-ds, \
             delete-dnssec)"
        ))
    })
}

/// A `dnskey_management` setting by its name (Knot's).
pub(super) fn dnskey_management<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<shardns_dnssec::DnskeyManagement, D::Error> {
    let s = String::deserialize(d)?;
    shardns_dnssec::DnskeyManagement::from_name(&s).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "{s:?} is not a dnskey_management setting (full, incremental)"
        ))
    })
}

/// A `cds_digest_type`: `sha256` or `sha384` (SHA-1 is not published, RFC 8624).
pub(super) fn cds_digest<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<shardns_dnssec::DigestType, D::Error> {
    let s = String::deserialize(d)?;
    match s.as_str() {
        "sha256" => Ok(shardns_dnssec::DigestType::Sha256),
        "sha384" => Ok(shardns_dnssec::DigestType::Sha384),
        _ => Err(serde::de::Error::custom(format!(
            "{s:?} is not a cds_digest_type (sha256, sha384)"
        ))),
    }
}

/// Parses a duration: seconds as an integer, or a number with a unit (`s`, `m`, `h`, `d`,
/// `w`), as Knot writes them (`14d`).
pub fn parse_duration(s: &str) -> Result<u32, String> {
    let s = s.trim();
    let (digits, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let scale: u64 = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(format!("bad duration {s:?} (a number and s, m, h, d or w)")),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("bad duration {s:?} (a number and s, m, h, d or w)"))?;
    match n.checked_mul(scale) {
        Some(0) => Err("must be at least 1 second".into()),
        Some(v) if v <= u64::from(u32::MAX / 2) => Ok(v as u32),
        _ => Err(format!("duration {s:?} is too long")),
    }
}

pub(super) fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Seconds(u64),
        Text(String),
    }
    match Raw::deserialize(d)? {
        Raw::Seconds(n) => parse_duration(&n.to_string()),
        Raw::Text(s) => parse_duration(&s),
    }
    .map_err(serde::de::Error::custom)
}

/// `zonefile_sync`: `"never"` (`None`), `0`, or a duration.
pub(super) fn zonefile_sync<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Seconds(u64),
        Text(String),
    }
    match Raw::deserialize(d)? {
        Raw::Seconds(0) => Ok(Some(0)),
        Raw::Text(s) if s == "never" => Ok(None),
        Raw::Text(s) if s == "0" => Ok(Some(0)),
        Raw::Seconds(n) => parse_duration(&n.to_string()).map(Some),
        Raw::Text(s) => parse_duration(&s).map(Some),
    }
    .map_err(|e| serde::de::Error::custom(format!("{e} (or \"never\")")))
}

/// A server of the parent: `"ADDR:PORT"`, or `"ADDR"` for port 53.
pub(super) fn parse_agent(s: &str) -> Result<std::net::SocketAddr, String> {
    s.parse()
        .or_else(|_| s.parse::<std::net::IpAddr>().map(|ip| (ip, 53).into()))
        .map_err(|_| format!("{s:?} is not ADDR:PORT or ADDR"))
}

/// `parent_resolvers`: servers, each `"ADDR:PORT"` or `"ADDR"` (port 53).
pub(super) fn agents<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Vec<std::net::SocketAddr>, D::Error> {
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|s| parse_agent(s))
        .collect::<Result<_, _>>()
        .map_err(serde::de::Error::custom)
}

/// `ds_push`: one server of the parent, as in `parent_agents`.
pub(super) fn agent_opt<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<std::net::SocketAddr>, D::Error> {
    parse_agent(&String::deserialize(d)?)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

pub(super) fn duration_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    duration(d).map(Some)
}

pub(super) fn name<'de, D: Deserializer<'de>>(d: D) -> Result<Name, D::Error> {
    let s = String::deserialize(d)?;
    s.parse::<Name>()
        .map_err(|e| serde::de::Error::custom(format!("bad domain name {s:?}: {e}")))
}

pub(super) fn name_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Name>, D::Error> {
    name(d).map(Some)
}

pub(super) fn positive<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    match usize::deserialize(d)? {
        0 => Err(serde::de::Error::custom("must be at least 1")),
        n => Ok(n),
    }
}

pub(super) fn from_strs<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr<Err = String>,
{
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|s| s.parse::<T>().map_err(serde::de::Error::custom))
        .collect()
}

pub(super) fn from_strs_opt<'de, D, T>(d: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr<Err = String>,
{
    from_strs(d).map(Some)
}

pub(super) fn positive_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    positive(d).map(Some)
}

pub(super) fn positive_u32<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    match u32::deserialize(d)? {
        0 => Err(serde::de::Error::custom("must be at least 1")),
        n => Ok(n),
    }
}

pub(super) fn positive_u64<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    match u64::deserialize(d)? {
        0 => Err(serde::de::Error::custom("must be at least 1")),
        n => Ok(n),
    }
}

/// Deserializers that accept an integer in `lo..=hi` and name the range otherwise.
macro_rules! ranged {
    ($($f:ident: $t:ty = $lo:literal ..= $hi:literal;)*) => {$(
        pub(super) fn $f<'de, D: Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
            match <$t>::deserialize(d)? {
                n @ $lo..=$hi => Ok(n),
                n => Err(serde::de::Error::custom(format!(
                    "{n} is not between {} and {}", $lo, $hi
                ))),
            }
        }
    )*};
}

ranged! {
    batch: usize = 1..=1024;
    udp_max_response: usize = 512..=1232;
    per_client: usize = 0..=65_535;
    depth: u8 = 1..=32;
    chain: u8 = 1..=64;
    rrl_rate: u32 = 1..=1_000_000;
    rrl_slip: u32 = 0..=10;
    rrl_window: u32 = 1..=60;
    ipv4_prefix: u8 = 0..=32;
    ipv6_prefix: u8 = 0..=128;
    rrl_table_size: usize = 4..=16_777_216;
    hold_after: u8 = 1..=100;
}

/// `serial_policy`: `"increment"`, `"unixtime"` or `"dateserial"` (Knot's names).
pub(super) fn serial_policy<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<shardns_zone::update::SerialPolicy, D::Error> {
    use shardns_zone::update::SerialPolicy;
    match String::deserialize(d)?.as_str() {
        "increment" => Ok(SerialPolicy::Increment),
        "unixtime" => Ok(SerialPolicy::UnixTime),
        "dateserial" => Ok(SerialPolicy::DateSerial),
        other => Err(serde::de::Error::custom(format!(
            "{other:?}: expected \"increment\", \"unixtime\" or \"dateserial\""
        ))),
    }
}

/// Each zone's `update_policy` lines read as the policy they make, so a bad line is an
/// error of the config file at that line (the first line of `text` after the zone's
/// `[[zone]]` header that holds the bad entry's text; the header's line if none does).
pub(super) fn update_policies(config: &Config, path: &Path, text: &str) -> Result<(), ConfigError> {
    let headers: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("[[zone]]"))
        .map(|(n, _)| n)
        .collect();
    for (i, z) in config.zones.iter().enumerate() {
        let depth = z.journal_max_depth.or(config.server.journal_max_depth);
        if z.updatable() && depth == Some(0) {
            return Err(ConfigError {
                path: path.into(),
                position: headers.get(i).map(|&h| (h + 1, 1)),
                key: Some(format!("zone[{i}].journal_max_depth")),
                message: "0 (no journal), but the zone has an `update_policy`: the journal \
                          holds its changes that are not in its zone file"
                    .into(),
            });
        }
        for (k, line) in z.update_policy.iter().enumerate() {
            let Err(e) = shardns_zone::update::Policy::parse(line, z.name.as_ref()) else {
                continue;
            };
            let e = e.strip_prefix("line 1: ").unwrap_or(&e);
            let header = headers.get(i).copied();
            let wanted = line.trim();
            let at = header.and_then(|h| {
                text.lines()
                    .enumerate()
                    .skip(h + 1)
                    .take_while(|(_, l)| !l.trim_start().starts_with('['))
                    .find(|(_, l)| !wanted.is_empty() && l.contains(wanted))
                    .map(|(n, l)| (n + 1, l.find(wanted).map_or(1, |c| c + 1)))
                    .or(Some((h + 1, 1)))
            });
            return Err(ConfigError {
                path: path.into(),
                position: at,
                key: Some(format!("zone[{i}].update_policy[{k}]")),
                message: format!("{wanted:?}: {e}"),
            });
        }
    }
    Ok(())
}

pub(super) fn nsid<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = String::deserialize(d)?;
    if s.is_empty() || s.len() > crate::NSID_MAX {
        return Err(serde::de::Error::custom(format!(
            "an NSID is 1 to {} octets, got {}",
            crate::NSID_MAX,
            s.len()
        )));
    }
    Ok(Some(s))
}

pub(super) fn cookie_secrets<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    for s in &v {
        parse_cookie_secret(s).map_err(serde::de::Error::custom)?;
    }
    Ok(v)
}

pub(super) fn log_filter<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = String::deserialize(d)?;
    crate::log_filter::check_filter(&s).map_err(serde::de::Error::custom)?;
    Ok(Some(s))
}

/// Parses a cookie secret written as 32 hexadecimal digits (`[server] cookie_secret`).
pub fn parse_cookie_secret(hex: &str) -> Result<[u8; 16], String> {
    let hex = hex.trim();
    if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "a cookie secret is 32 hexadecimal digits (16 octets), got {} characters",
            hex.len()
        ));
    }
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
    }
    Ok(out)
}
