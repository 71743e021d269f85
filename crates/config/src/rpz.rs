//! config::rpz -- the `[[resolver.rpz]]` tables: response policy zones (RPZ) for the
//! resolver, in the order they are checked, and their `policy` override.

use super::validate::positive_u32;
use serde::Deserialize;
use shardns_wire::Name;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;

/// `[[resolver.rpz]]`: one response policy zone (BIND's `response-policy { zone ... }`,
/// Unbound's `rpz:` clause). Zones are checked in the order they are listed; the first
/// that matches decides.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RpzConfig {
    /// The policy zone's name (its origin: triggers are names below it).
    #[serde(deserialize_with = "name")]
    pub name: Name,
    /// The zone file (relative to the config file's directory); or `primaries`.
    #[serde(default)]
    pub file: Option<PathBuf>,
    /// Primaries to transfer the zone from by IXFR or AXFR (`"ADDR:PORT"`, tried in
    /// order), instead of a file (BIND's `primaries`, Unbound's `primary:`).
    #[serde(default)]
    pub primaries: Vec<SocketAddr>,
    /// The `[[key]]` that signs the SOA queries and transfers to the primaries (TSIG; BIND's
    /// `primaries { ADDR key NAME; }`, Unbound has none for `rpz:`): their answers must be
    /// signed with it.
    #[serde(default, deserialize_with = "super::validate::name_opt")]
    pub primary_key: Option<Name>,
    /// Transfer from the primaries over TLS (XoT, RFC 9103), their certificate checked so
    /// (as a secondary zone's `primary_tls`; BIND's `primaries { ADDR tls NAME; }`).
    #[serde(default)]
    pub primary_tls: Option<crate::PrimaryTls>,
    /// Seconds between two SOA queries to the primaries of a transferred zone (the zone
    /// is transferred again when their serial is newer); absent: the SOA's REFRESH, as
    /// BIND and Unbound. RETRY and EXPIRE are always the SOA's.
    #[serde(default, deserialize_with = "positive_u32_opt")]
    pub refresh: Option<u32>,
    /// Overrides the zone's actions (BIND's `policy`): `given` (the default), `disabled`
    /// (hits counted and logged, not applied), `passthru`, `nxdomain`, `nodata`, `drop`,
    /// `tcp-only`, or `cname NAME`.
    #[serde(default, deserialize_with = "override_")]
    pub policy: PolicyOverride,
    /// Log each hit (rate-limited; BIND logs hits by default, Unbound's `rpz-log`).
    #[serde(default = "yes")]
    pub log: bool,
}

fn yes() -> bool {
    true
}

fn positive_u32_opt<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    positive_u32(d).map(Some)
}

/// BIND's per-zone `policy` override.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PolicyOverride {
    /// The actions written in the zone.
    #[default]
    Given,
    /// Hits are counted and logged but not applied: the next zones are checked.
    Disabled,
    /// Every hit answers normally (and stops the search).
    Passthru,
    /// Every hit answers NXDOMAIN.
    Nxdomain,
    /// Every hit answers NOERROR with no records.
    Nodata,
    /// Every hit is dropped, no answer.
    Drop,
    /// Every hit over UDP gets an empty truncated answer (TC), so the client retries over
    /// TCP, where it is answered normally.
    TcpOnly,
    /// Every hit answers a CNAME to this name (which is then resolved).
    Cname(Name),
}

impl FromStr for PolicyOverride {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        Ok(match s.to_ascii_lowercase().as_str() {
            "given" => Self::Given,
            "disabled" => Self::Disabled,
            "passthru" => Self::Passthru,
            "nxdomain" => Self::Nxdomain,
            "nodata" => Self::Nodata,
            "drop" => Self::Drop,
            "tcp-only" => Self::TcpOnly,
            _ => match s.split_once(char::is_whitespace) {
                Some((kw, target)) if kw.eq_ignore_ascii_case("cname") => Self::Cname(
                    target
                        .trim()
                        .parse()
                        .map_err(|e| format!("bad CNAME target {target:?}: {e}"))?,
                ),
                _ => {
                    return Err(format!(
                        "unknown policy {s:?}: expected given, disabled, passthru, nxdomain, \
                         nodata, drop, tcp-only or \"cname NAME\""
                    ))
                }
            },
        })
    }
}

fn name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Name, D::Error> {
    let s = String::deserialize(d)?;
    s.parse()
        .map_err(|e| serde::de::Error::custom(format!("bad name {s:?}: {e}")))
}

fn override_<'de, D: serde::Deserializer<'de>>(d: D) -> Result<PolicyOverride, D::Error> {
    String::deserialize(d)?
        .parse()
        .map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_overrides_parse() {
        assert_eq!("given".parse(), Ok(PolicyOverride::Given));
        assert_eq!("TCP-only".parse(), Ok(PolicyOverride::TcpOnly));
        assert_eq!(
            "cname garden.example.".parse(),
            Ok(PolicyOverride::Cname("garden.example.".parse().unwrap()))
        );
        assert!("cname".parse::<PolicyOverride>().is_err());
        assert!("block".parse::<PolicyOverride>().is_err());
    }

    #[test]
    fn table_reads_with_defaults() {
        #[derive(Deserialize)]
        struct T {
            rpz: Vec<RpzConfig>,
        }
        let t: T = toml::from_str(
            "[[rpz]]\nname = \"rpz.test\"\nfile = \"a.rpz\"\n\
             [[rpz]]\nname = \"b.test\"\nfile = \"b.rpz\"\npolicy = \"nodata\"\nlog = false\n",
        )
        .unwrap();
        assert_eq!(t.rpz.len(), 2);
        assert_eq!(t.rpz[0].policy, PolicyOverride::Given);
        assert!(t.rpz[0].log);
        assert_eq!(t.rpz[1].policy, PolicyOverride::Nodata);
        assert_eq!(t.rpz[0].refresh, None);
        assert!(!t.rpz[1].log);
        let bad = toml::from_str::<T>("[[rpz]]\nname = \"x\"\nfile = \"a\"\npolicy = \"no\"\n");
        assert!(bad.is_err());
        let t: T = toml::from_str(
            "[[rpz]]\nname = \"x\"\nprimaries = [\"127.0.0.1:5300\"]\nrefresh = 5\n",
        )
        .unwrap();
        assert_eq!(t.rpz[0].primaries, ["127.0.0.1:5300".parse().unwrap()]);
        assert_eq!((t.rpz[0].file.as_ref(), t.rpz[0].refresh), (None, Some(5)));
        assert_eq!(t.rpz[0].primary_key, None);
        let t: T = toml::from_str(
            "[[rpz]]\nname = \"x\"\nprimaries = [\"127.0.0.1:5300\"]\nprimary_key = \"k.\"\n",
        )
        .unwrap();
        assert_eq!(t.rpz[0].primary_key, Some("k.".parse().unwrap()));
        assert_eq!(t.rpz[0].primary_tls, None);
        let t: T = toml::from_str(
            "[[rpz]]\nname = \"x\"\nprimaries = [\"127.0.0.1:853\"]\n\
             primary_tls = { spki_sha256 = [\"AAAA\"] }\n",
        )
        .unwrap();
        let tls = t.rpz[0].primary_tls.as_ref().unwrap();
        assert_eq!(tls.spki_sha256, ["AAAA"]);
        assert!(
            toml::from_str::<T>("[[rpz]]\nname = \"x\"\nprimary_tls = { nope = 1 }\n").is_err()
        );
    }
}
