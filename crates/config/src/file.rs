//! config::file -- reading the TOML file: parse errors that name file, line, column and key,
//! and file-relative paths made absolute.

use super::{validate, Config};
use std::fmt;
use std::path::{Path, PathBuf};

/// A config file that could not be read or parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line and column, when known.
    pub position: Option<(usize, usize)>,
    /// The key, as a dotted path (`server.workers`, `zone[1].name`), when known.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some((line, col)) = self.position {
            write!(f, ":{line}:{col}")?;
        }
        f.write_str(": ")?;
        if let Some(key) = &self.key {
            write!(f, "{key}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Reads and parses a config file.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            path: path.into(),
            position: None,
            key: None,
            message: format!("cannot read: {e}"),
        })?;
        Self::from_toml(&text, path)
    }

    /// Parses config text; `path` names it in errors and anchors relative zone paths.
    pub fn from_toml(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let de = toml::Deserializer::new(text);
        let mut config: Self = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = e.path().to_string();
            let inner = e.into_inner();
            // One line: toml's multi-line messages joined. toml gives no message for some
            // syntax errors (a control character in a comment): say what kind it is.
            let mut message = inner
                .message()
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join("; ");
            if message.is_empty() {
                message = "invalid TOML syntax".into();
            }
            ConfigError {
                path: path.into(),
                position: inner.span().map(|s| line_col(text, s.start)),
                key: (!key.is_empty() && key != ".").then_some(key),
                message,
            }
        })?;
        let base = path.parent().unwrap_or(Path::new(""));
        for z in &mut config.zones {
            // An absent file (a secondary zone kept in memory) stays absent.
            if z.file.is_relative() && !z.file.as_os_str().is_empty() {
                z.file = base.join(&z.file);
            }
        }
        let tls = config.zones.iter_mut().map(|z| &mut z.primary_tls);
        for t in tls
            .chain(config.templates.iter_mut().map(|t| &mut t.primary_tls))
            .flatten()
        {
            if let Some(f) = t.ca_file.as_mut().filter(|f| f.is_relative()) {
                *f = base.join(&*f);
            }
        }
        for t in &mut config.templates {
            if let Some(f) = t
                .file
                .as_mut()
                .filter(|f| Path::new(f.as_str()).is_relative())
            {
                *f = base.join(f.as_str()).to_string_lossy().into_owned();
            }
        }
        if let Some(l) = &mut config.server.zone_list {
            if l.is_relative() {
                *l = base.join(&*l);
            }
        }
        for p in [
            &mut config.server.key_directory,
            &mut config.server.tls_certificate,
            &mut config.server.tls_key,
            &mut config.dnstap.socket,
            &mut config.dnstap.file,
        ]
        .into_iter()
        .flatten()
        {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        }
        if let Some(h) = &mut config.resolver.root_hints {
            if h.is_relative() {
                *h = base.join(&*h);
            }
        }
        if let Some(t) = &mut config.resolver.trust_anchor {
            if t.is_relative() {
                *t = base.join(&*t);
            }
        }
        for f in config
            .resolver
            .rpz
            .iter_mut()
            .filter_map(|z| z.file.as_mut())
        {
            if f.is_relative() {
                *f = base.join(&*f);
            }
        }
        validate::transfer_keys_exist(&config, path)?;
        validate::secondary_zones(&config, path, text)?;
        validate::update_policies(&config, path, text)?;
        crate::keystore::check(&config, path)?;
        crate::local::check(&config, path)?;
        crate::parent::check(&config, path)?;
        Ok(config)
    }
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub(super) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, text[line_start..offset].chars().count() + 1)
}
