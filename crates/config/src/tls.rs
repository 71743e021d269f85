//! tls -- how a secondary checks its primary's certificate for XFR over TLS (a zone's
//! `primary_tls`).

use serde::Deserialize;
use std::path::PathBuf;

/// `primary_tls`: XoT to a zone's primaries (RFC 9103), strict (RFC 8310 §6.2): no transfer
/// unless the primary's certificate chains to `ca_file` and is valid for `name`, or its
/// public key (SPKI) has one of the `spki_sha256` digests (RFC 7858 §4.2); TLS 1.3 and ALPN
/// "dot" (RFC 9103 §7.1).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PrimaryTls {
    /// PEM file of the certificate authorities the primary's certificate must chain to.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// The name (or IP address) the primary's certificate must be valid for; with pins
    /// only, the name sent (SNI), else the primary's address.
    #[serde(default)]
    pub name: Option<String>,
    /// Base64 SHA-256 digests of the SubjectPublicKeyInfo one of which the primary's
    /// certificate must carry (its validity and name then are not checked).
    #[serde(default)]
    pub spki_sha256: Vec<String>,
}

/// How a primary's certificate is checked, from a [`PrimaryTls`].
#[derive(Debug)]
pub enum TlsCheck {
    /// It chains to one of `roots` and is valid for `name`.
    Ca {
        /// The certificates of `ca_file`.
        roots: rustls::RootCertStore,
        /// The name (or address) to check.
        name: rustls::pki_types::ServerName<'static>,
    },
    /// Its SPKI's SHA-256 is one of `pins`; `name` is sent as the SNI.
    Pins {
        /// The digests of `spki_sha256`.
        pins: Vec<[u8; 32]>,
        /// `name`, if given.
        name: Option<rustls::pki_types::ServerName<'static>>,
    },
}

impl PrimaryTls {
    /// How to check the primary's certificate, or why this setting is unusable (reads
    /// `ca_file`).
    pub fn check_with(&self) -> Result<TlsCheck, String> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, ServerName};
        let name = match &self.name {
            Some(n) => Some(
                ServerName::try_from(n.trim_end_matches('.').to_string())
                    .map_err(|e| format!("name {n:?}: {e}"))?,
            ),
            None => None,
        };
        if !self.spki_sha256.is_empty() {
            if self.ca_file.is_some() {
                return Err("either ca_file (with name) or spki_sha256, not both".into());
            }
            let mut pins = Vec::new();
            for p in &self.spki_sha256 {
                let mut out = Vec::new();
                shardns_wire::text::base64_decode([p.as_bytes()], &mut out)
                    .map_err(|e| format!("spki_sha256 {p:?}: {e}"))?;
                let pin: [u8; 32] = out.try_into().map_err(|_| {
                    format!("spki_sha256 {p:?}: not a SHA-256 digest (32 octets in base64)")
                })?;
                pins.push(pin);
            }
            return Ok(TlsCheck::Pins { pins, name });
        }
        let (Some(ca_file), Some(name)) = (&self.ca_file, name) else {
            return Err("needs ca_file and name (or spki_sha256)".into());
        };
        let file = ca_file.display();
        let mut roots = rustls::RootCertStore::empty();
        for cert in
            CertificateDer::pem_file_iter(ca_file).map_err(|e| format!("ca_file {file}: {e}"))?
        {
            let cert = cert.map_err(|e| format!("ca_file {file}: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("ca_file {file}: {e}"))?;
        }
        if roots.is_empty() {
            return Err(format!("ca_file {file}: no certificate in it"));
        }
        Ok(TlsCheck::Ca { roots, name })
    }

    /// Whether the setting is usable (at load, so a typo fails the config).
    pub fn check(&self) -> Result<(), String> {
        self.check_with().map(|_| ())
    }
}
