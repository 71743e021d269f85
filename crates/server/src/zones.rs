//! zones -- loading the configured zones into a `ZoneSet`, and reloading them.
//!
//! Runs on the control plane only (startup, the signal thread, the control socket), never
//! on a worker. A reload builds a complete new `ZoneSet`; a zone whose new version fails to
//! load keeps its previous version, which is shared (`Arc<Zone>`), never copied.

use crate::config::Config;
use shardns_wire::Name;
use shardns_zone::scan::{scan_file, scan_text, Diag};
use shardns_zone::{LoadError, ScanOptions, Zone, ZoneSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tracing::debug;

/// Threads one zone file is scanned with.
const SCAN_THREADS: usize = 2;

/// Zone text compiled into the binary, served when no zone is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbeddedZone {
    /// The apex, e.g. `example.test.`.
    pub name: &'static str,
    /// What diagnostics call the text, e.g. `<embedded>/example.test.zone`.
    pub label: &'static str,
    /// The zone file text.
    pub text: &'static str,
}

/// Where a zone's text comes from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ZoneSource {
    File(PathBuf),
    Embedded(EmbeddedZone),
}

/// One zone to load.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ZoneSpec {
    pub(crate) name: Name,
    pub(crate) source: ZoneSource,
}

/// The zones `config` asks for; the embedded zone if it asks for none.
pub(crate) fn specs(
    config: &Config,
    fallback: Option<EmbeddedZone>,
) -> Result<Vec<ZoneSpec>, String> {
    if config.zones.is_empty() {
        if config.resolver.recursion {
            // A resolver need not serve any zone; the example zone would only shadow names.
            return Ok(Vec::new());
        }
        let e = fallback.ok_or("no zones configured (add a [[zone]] table or --zone NAME=FILE)")?;
        let name = e
            .name
            .parse::<Name>()
            .map_err(|err| format!("embedded zone name {:?}: {err}", e.name))?;
        return Ok(vec![ZoneSpec {
            name,
            source: ZoneSource::Embedded(e),
        }]);
    }
    Ok(config
        .zones
        .iter()
        .map(|z| ZoneSpec {
            name: z.name.clone(),
            source: ZoneSource::File(z.file.clone()),
        })
        .collect())
}

/// A zone that failed to load.
#[derive(Debug, Clone)]
pub(crate) struct ZoneFailure {
    pub(crate) name: Name,
    pub(crate) error: LoadError,
    /// The previous version is still served.
    pub(crate) kept_previous: bool,
}

/// What a load or reload did.
#[derive(Debug)]
pub(crate) struct LoadReport {
    pub(crate) set: ZoneSet,
    pub(crate) loaded: usize,
    pub(crate) failures: Vec<ZoneFailure>,
    pub(crate) warnings: Vec<Diag>,
}

/// The zones being served, kept so a zone that fails to reload keeps its previous version.
#[derive(Default)]
pub(crate) struct ZoneLibrary {
    kept: Vec<Arc<Zone>>,
}

impl ZoneLibrary {
    /// Loads every zone in `specs`; zones that fail keep their previous version if there
    /// is one, and are left out otherwise.
    pub(crate) fn load(&mut self, specs: &[ZoneSpec]) -> LoadReport {
        let mut kept = Vec::with_capacity(specs.len());
        let mut failures = Vec::new();
        let mut warnings = Vec::new();
        let mut loaded = 0;
        for spec in specs {
            match load_one(spec) {
                Ok((zone, w)) => {
                    let huge = zone
                        .arrays()
                        .iter()
                        .filter(|&&(addr, len)| crate::sys::back_with_huge_pages(addr, len))
                        .count();
                    if huge > 0 {
                        debug!("zone {}: {huge} arrays on huge pages", spec.name);
                    }
                    kept.push(Arc::new(zone));
                    warnings.extend(w);
                    loaded += 1;
                }
                Err(error) => {
                    let previous = self
                        .kept
                        .iter()
                        .find(|z| z.apex().eq_ci(&spec.name.as_ref()));
                    if let Some(z) = previous {
                        kept.push(Arc::clone(z));
                    }
                    failures.push(ZoneFailure {
                        name: spec.name.clone(),
                        error,
                        kept_previous: previous.is_some(),
                    });
                }
            }
        }
        self.kept = kept;
        LoadReport {
            set: ZoneSet::from_shared(self.kept.clone()),
            loaded,
            failures,
            warnings,
        }
    }

    /// Zones held (loaded now or kept from before).
    pub(crate) fn len(&self) -> usize {
        self.kept.len()
    }
}

/// Scans and builds one zone; returns the zone and the warnings.
fn load_one(spec: &ZoneSpec) -> Result<(Zone, Vec<Diag>), LoadError> {
    let opts = ScanOptions {
        threads: SCAN_THREADS,
        ..ScanOptions::new(spec.name.clone())
    };
    let scanned = match &spec.source {
        ZoneSource::File(path) => {
            regular_file(path)?;
            scan_file(path, &opts)?
        }
        ZoneSource::Embedded(e) => scan_text(e.text.as_bytes(), Path::new(e.label), &opts)?,
    };
    Zone::build(spec.name.clone(), scanned)
}

/// Only a regular file (a symlink to one is fine) is read as a zone: a FIFO would block the
/// reload in open() until some writer appears, and a device such as /dev/zero would be read
/// until memory runs out.
fn regular_file(path: &Path) -> Result<(), LoadError> {
    let problem = match std::fs::metadata(path) {
        Ok(m) if m.is_file() => return Ok(()),
        Ok(m) if m.is_dir() => "cannot read: a directory, not a zone file".to_string(),
        Ok(_) => "cannot read: not a regular file (a FIFO, socket or device)".to_string(),
        Err(e) => format!("cannot read: {e}"),
    };
    Err(LoadError {
        errors: vec![Diag {
            file: path.into(),
            line: 0,
            message: problem,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(path: &Path) -> ZoneSpec {
        ZoneSpec {
            name: "z.test.".parse().unwrap(),
            source: ZoneSource::File(path.into()),
        }
    }

    #[test]
    fn only_regular_files_are_read() {
        let dir = std::env::temp_dir().join(format!("shardns-zones-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let zone = dir.join("z.zone");
        std::fs::write(
            &zone,
            "$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n",
        )
        .unwrap();
        let mut lib = ZoneLibrary::default();
        let report = lib.load(&[spec(&zone)]);
        assert_eq!((report.loaded, report.failures.len()), (1, 0));

        // /dev/zero would never end; a directory and a missing file are errors too. The
        // zone loaded before is kept each time.
        for (bad, says) in [
            (Path::new("/dev/zero"), "not a regular file"),
            (dir.as_path(), "a directory"),
            (&dir.join("missing"), "cannot read"),
        ] {
            let report = lib.load(&[spec(bad)]);
            assert_eq!(report.loaded, 0);
            let f = &report.failures[0];
            assert!(f.kept_previous);
            assert!(f.error.to_string().contains(says), "{}", f.error);
            assert_eq!(lib.len(), 1);
        }
        let link = dir.join("link.zone");
        std::os::unix::fs::symlink(&zone, &link).unwrap();
        assert_eq!(lib.load(&[spec(&link)]).loaded, 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
