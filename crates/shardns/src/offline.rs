//! offline -- `shardns key pregenerate`, `ksr`, `sign-ksr` and `import-skr`: an offline
//! KSK (Knot's `keymgr` commands of the same names), the steps around
//! `shardns_control::signing::offline`. See docs/DNSSEC.md.

use shardns_control::signing::{offline, Keystore};
use shardns_dnssec::keys::parse_time;
use shardns_dnssec::offline::SignKsr;
use shardns_dnssec::roll::RollTimings;
use shardns_dnssec::{Algorithm, CdsParams, CdsPublish, DigestType};
use shardns_server::{parse_duration, Config, Name, ZoneConfig};
use shardns_sys::unix_now;
use std::path::PathBuf;

/// Where the server's side finds the zone: its key directory, and the config file whose
/// zone table gives the defaults of the timing flags.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ServerSide {
    /// The server's key directory (ZSKs only; default: the config's key_directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) key_dir: Option<PathBuf>,
    /// The server's config file: its key_directory, and the zone's zsk_lifetime,
    /// dnskey_ttl, propagation_delay and algorithm as the defaults of the flags.
    #[arg(short, long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
}

/// Flags of `key pregenerate`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct PregenerateArgs {
    /// The zone, e.g. example.com.
    #[arg(value_name = "ZONE")]
    pub(crate) zone: String,
    #[command(flatten)]
    pub(crate) server: ServerSide,
    /// Start: YYYYMMDDHHMMSS (UTC), seconds since 1970, `now` or `+DURATION`.
    #[arg(long, value_name = "TIME", default_value = "now")]
    pub(crate) from: String,
    /// End, as --from.
    #[arg(long, value_name = "TIME")]
    pub(crate) to: String,
    /// The ZSK lifetime (default: the zone's zsk_lifetime).
    #[arg(long, value_name = "DURATION")]
    pub(crate) zsk_lifetime: Option<String>,
    /// The DNSKEY TTL (default: the zone's dnskey_ttl, else 1h).
    #[arg(long, value_name = "DURATION")]
    pub(crate) dnskey_ttl: Option<String>,
    /// The largest TTL the zone will have (Knot's zone-max-ttl, required with an offline
    /// KSK): a retired ZSK stays published this long after its last signature.
    #[arg(long, value_name = "DURATION")]
    pub(crate) max_ttl: String,
    /// The propagation delay (default: the zone's propagation_delay, else 1h).
    #[arg(long, value_name = "DURATION")]
    pub(crate) propagation: Option<String>,
    /// The algorithm of a first ZSK (default: the zone's algorithm, else ecdsap256sha256).
    #[arg(long, value_name = "ALG")]
    pub(crate) algorithm: Option<String>,
}

/// Flags of `key ksr`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct KsrArgs {
    /// The zone, e.g. example.com.
    #[arg(value_name = "ZONE")]
    pub(crate) zone: String,
    #[command(flatten)]
    pub(crate) server: ServerSide,
    /// Start, as for pregenerate (default: the end of the SKR imported, or now).
    #[arg(long, value_name = "TIME")]
    pub(crate) from: Option<String>,
    /// End.
    #[arg(long, value_name = "TIME")]
    pub(crate) to: String,
    /// The TTL the zone serves its DNSKEY RRset with (default: the zone's dnskey_ttl, else
    /// 1h).
    #[arg(long, value_name = "DURATION")]
    pub(crate) ttl: Option<String>,
}

/// Flags of `key sign-ksr`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct SignKsrArgs {
    /// The KSR file.
    #[arg(value_name = "KSR")]
    pub(crate) ksr: PathBuf,
    /// The KSK's key directory (default: the key_directory of --config).
    #[arg(long, value_name = "DIR")]
    pub(crate) key_dir: Option<PathBuf>,
    /// A config file (the KSK machine's): its key_directory, and its `[[keystore]]` tables.
    #[arg(short, long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// The `[[keystore]]` of `--config` whose PKCS#11 token holds the KSK's private key (its
    /// `.pkcs11` file in the key directory).
    #[arg(long, value_name = "NAME", requires = "config")]
    pub(crate) keystore: Option<String>,
    /// Where to write the SKR (default: standard output).
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// How long each period's RRSIGs stay valid past its end (at least the DNSKEY TTL).
    #[arg(long, value_name = "DURATION", default_value = "1d")]
    pub(crate) overlap: String,
    /// How long before each period its RRSIGs' inception is.
    #[arg(long, value_name = "DURATION", default_value = "1h")]
    pub(crate) backdate: String,
    /// CDS/CDNSKEY: none, rollover, always (the default), double-ds, delete-dnssec.
    #[arg(long, value_name = "MODE", default_value = "always")]
    pub(crate) cds_cdnskey_publish: String,
    /// The CDS digest: sha256 (the default) or sha384.
    #[arg(long, value_name = "DIGEST", default_value = "sha256")]
    pub(crate) cds_digest_type: String,
}

/// Flags of `key import-skr`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ImportSkrArgs {
    /// The zone, e.g. example.com.
    #[arg(value_name = "ZONE")]
    pub(crate) zone: String,
    /// The SKR file.
    #[arg(value_name = "SKR")]
    pub(crate) skr: PathBuf,
    #[command(flatten)]
    pub(crate) server: ServerSide,
}

fn duration(flag: &str, s: &str) -> Result<u32, String> {
    parse_duration(s).map_err(|e| format!("--{flag}: {e}"))
}

/// A time flag: `now`, `+DURATION`, YYYYMMDDHHMMSS (UTC) or seconds since 1970.
fn time(flag: &str, s: &str, now: u64) -> Result<u64, String> {
    if s == "now" {
        return Ok(now);
    }
    if let Some(d) = s.strip_prefix('+') {
        return Ok(now + u64::from(duration(flag, d)?));
    }
    parse_time(s)
        .or_else(|| s.parse().ok().filter(|_| s.len() != 14))
        .ok_or_else(|| {
            format!("--{flag} {s:?}: expected now, +DURATION, YYYYMMDDHHMMSS or seconds")
        })
}

fn zone(s: &str) -> Result<Name, String> {
    s.parse().map_err(|e| format!("zone {s:?}: {e}"))
}

impl ServerSide {
    /// The key directory, and the zone's table if a config file was given.
    fn resolve(&self, zone: &Name) -> Result<(PathBuf, Option<ZoneConfig>), String> {
        let config = match &self.config {
            Some(path) => Some(Config::from_file(path).map_err(|e| e.to_string())?),
            None => None,
        };
        let table = match &config {
            Some(c) => Some(
                c.zones
                    .iter()
                    .find(|z| z.name == *zone)
                    .cloned()
                    .ok_or_else(|| format!("no [[zone]] {zone} in the config"))?,
            ),
            None => None,
        };
        let key_dir = self
            .key_dir
            .clone()
            .or_else(|| config.and_then(|c| c.server.key_directory))
            .ok_or("--key-dir, or --config with a key_directory, is needed")?;
        Ok((key_dir, table))
    }
}

/// A duration flag, else the config's value, else `default`.
fn setting(
    flag: &str,
    given: Option<&String>,
    config: Option<u32>,
    default: Option<u32>,
) -> Result<u32, String> {
    match given {
        Some(t) => duration(flag, t),
        None => config
            .or(default)
            .ok_or_else(|| format!("--{flag}, or the zone's setting in --config, is needed")),
    }
}

/// `shardns key pregenerate`.
pub(crate) fn pregenerate(a: &PregenerateArgs) -> Result<String, String> {
    let now = unix_now();
    let z = zone(&a.zone)?;
    let (key_dir, table) = a.server.resolve(&z)?;
    let t = table.as_ref();
    let algorithm = match &a.algorithm {
        Some(name) => Algorithm::from_mnemonic(name)
            .filter(|a| a.can_generate())
            .ok_or_else(|| format!("--algorithm {name:?}: not one we make keys of"))?,
        None => t.map_or(Algorithm::EcdsaP256Sha256, |t| t.algorithm),
    };
    let dnskey_ttl = setting(
        "dnskey-ttl",
        a.dnskey_ttl.as_ref(),
        t.and_then(|t| t.dnskey_ttl),
        Some(3600),
    )?;
    let max_ttl = duration("max-ttl", &a.max_ttl)?;
    let propagation = setting(
        "propagation",
        a.propagation.as_ref(),
        t.map(|t| t.propagation_delay),
        Some(3600),
    )?;
    let lifetime = setting(
        "zsk-lifetime",
        a.zsk_lifetime.as_ref(),
        t.and_then(|t| t.zsk_lifetime),
        None,
    )?;
    let timings = RollTimings {
        dnskey_ttl: u64::from(dnskey_ttl),
        max_ttl: u64::from(max_ttl.max(dnskey_ttl)),
        propagation: u64::from(propagation),
        // A KSK's waits: not used, the KSK is not here.
        parent_ds_ttl: 0,
        parent_propagation: 0,
        zsk_lifetime: Some(u64::from(lifetime)),
        ksk_lifetime: None,
    };
    let (from, to) = (time("from", &a.from, now)?, time("to", &a.to, now)?);
    if from >= to {
        return Err("--from must be before --to".into());
    }
    offline::pregenerate(&z, &key_dir, algorithm, &timings, from, to)
}

/// `shardns key ksr`: the KSR text.
pub(crate) fn ksr(a: &KsrArgs) -> Result<String, String> {
    let now = unix_now();
    let z = zone(&a.zone)?;
    let (key_dir, table) = a.server.resolve(&z)?;
    let ttl = setting(
        "ttl",
        a.ttl.as_ref(),
        table.and_then(|t| t.dnskey_ttl),
        Some(3600),
    )?;
    let from = match &a.from {
        Some(t) => time("from", t, now)?,
        None => offline::next_ksr_start(&z, &key_dir, now),
    };
    let to = time("to", &a.to, now)?;
    offline::make_ksr(&z, &key_dir, from, to, ttl)
}

/// `shardns key sign-ksr`: the SKR, to the output file or as the text returned.
pub(crate) fn sign_ksr(a: &SignKsrArgs) -> Result<String, String> {
    let text = std::fs::read_to_string(&a.ksr).map_err(|e| format!("{}: {e}", a.ksr.display()))?;
    let how = SignKsr {
        cds: CdsParams {
            publish: CdsPublish::from_name(&a.cds_cdnskey_publish).ok_or_else(|| {
                format!(
                    "--cds-cdnskey-publish {:?}: unknown mode",
                    a.cds_cdnskey_publish
                )
            })?,
            digest: match a.cds_digest_type.as_str() {
                "sha256" => DigestType::Sha256,
                "sha384" => DigestType::Sha384,
                d => return Err(format!("--cds-digest-type {d:?}: sha256 or sha384")),
            },
        },
        backdate: duration("backdate", &a.backdate)?,
        overlap: duration("overlap", &a.overlap)?,
    };
    let config = match &a.config {
        Some(path) => Some(Config::from_file(path).map_err(|e| e.to_string())?),
        None => None,
    };
    let key_dir = a
        .key_dir
        .clone()
        .or_else(|| config.as_ref().and_then(|c| c.server.key_directory.clone()))
        .ok_or("--key-dir, or --config with a key_directory, is needed")?;
    let keystore = match (&a.keystore, &config) {
        (Some(name), Some(c)) => {
            if c.keystores.iter().all(|k| k.name != *name) {
                return Err(format!(
                    "--keystore {name:?}: no [[keystore]] of that name in --config"
                ));
            }
            Some(Keystore::of(name, &c.keystores))
        }
        _ => None,
    };
    let skr = offline::sign_ksr(&text, &a.ksr, &key_dir, keystore.as_ref(), &how)?;
    match &a.output {
        None => Ok(skr),
        Some(out) => {
            std::fs::write(out, &skr).map_err(|e| format!("{}: {e}", out.display()))?;
            Ok(format!(
                "SKR written to {} ({} periods)\n",
                out.display(),
                skr.matches(";; period ").count()
            ))
        }
    }
}

/// `shardns key import-skr`.
pub(crate) fn import_skr(a: &ImportSkrArgs) -> Result<String, String> {
    let text = std::fs::read_to_string(&a.skr).map_err(|e| format!("{}: {e}", a.skr.display()))?;
    let now = unix_now();
    let z = zone(&a.zone)?;
    let (key_dir, _) = a.server.resolve(&z)?;
    offline::import_skr(&z, &key_dir, &text, &a.skr, now)
}
