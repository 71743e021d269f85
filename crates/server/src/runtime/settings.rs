//! runtime::settings -- what the configuration gives the workers beside zones: the TLS
//! and QUIC certificates and the EDNS policy (NSID, cookie secrets), at start and at a reload.

use crate::cookie::CookieSecrets;
use crate::extras::EdnsPolicy;
use crate::worker::{QuicConfig, TlsConfig};
use crate::{urandom, Error, Shared};
use shardns_config::Config;
use shardns_config::NSID_MAX;
use shardns_sys::seed;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tracing::{error, info};

/// DNS over QUIC (`server.quic_listen`): the certificate and key read now; both are needed.
pub(super) fn quic_config(config: &Config) -> Result<Option<QuicConfig>, Error> {
    let s = &config.server;
    if s.quic_listen.is_empty() {
        return Ok(None);
    }
    let (Some(cert), Some(key)) = (&s.tls_certificate, &s.tls_key) else {
        return Err(Error::Io {
            what: "server.quic_listen".into(),
            source: io::Error::new(
                io::ErrorKind::InvalidInput,
                "needs server.tls_certificate and server.tls_key (--tls-cert, --tls-key)",
            ),
        });
    };
    let idle = Duration::from_millis(config.limits.tcp_idle_timeout_ms);
    QuicConfig::load(cert, key, idle)
        .map(Some)
        .map_err(|e| Error::Io {
            what: "loading the QUIC certificate".into(),
            source: io::Error::new(io::ErrorKind::InvalidData, e),
        })
}

/// DNS over TLS and over HTTPS (`server.tls_listen`, `server.https_listen`): the
/// certificate and key read now; both are needed.
pub(super) fn tls_config(config: &Config) -> Result<Option<TlsConfig>, Error> {
    let s = &config.server;
    if s.tls_listen.is_empty() && s.https_listen.is_empty() {
        return Ok(None);
    }
    let (Some(cert), Some(key)) = (&s.tls_certificate, &s.tls_key) else {
        let what = if s.tls_listen.is_empty() {
            "server.https_listen"
        } else {
            "server.tls_listen"
        };
        return Err(Error::Io {
            what: what.into(),
            source: io::Error::new(
                io::ErrorKind::InvalidInput,
                "needs server.tls_certificate and server.tls_key (--tls-cert, --tls-key)",
            ),
        });
    };
    TlsConfig::load(cert, key).map(Some).map_err(|e| Error::Io {
        what: "loading the TLS certificate".into(),
        source: io::Error::new(io::ErrorKind::InvalidData, e),
    })
}

/// NSID and cookie secrets from `[server]`; without configured secrets, `previous`'s (a
/// reload keeps the random secret made at start), else a new random one.
pub(super) fn edns_policy(
    config: &Config,
    previous: Option<&EdnsPolicy>,
) -> Result<EdnsPolicy, Error> {
    let s = &config.server;
    if let Some(n) = s
        .nsid
        .as_ref()
        .filter(|n| n.is_empty() || n.len() > NSID_MAX)
    {
        return Err(Error::Io {
            what: "server.nsid (--nsid)".into(),
            source: io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("an NSID is 1 to {NSID_MAX} octets, got {}", n.len()),
            ),
        });
    }
    let nsid = s.nsid.as_ref().map(|n| n.as_bytes().into());
    let cookies = if s.cookies == Some(false) {
        None
    } else if s.cookie_secrets.is_empty() {
        match previous.and_then(|p| p.cookies.clone()) {
            Some(c) => Some(c),
            None => {
                let random = urandom(seed::random())?;
                let secret: [u8; 16] = random[..16].try_into().expect("sixteen bytes");
                CookieSecrets::new(vec![secret])
            }
        }
    } else {
        // Checked when the config was read.
        let secrets = s
            .cookie_secrets
            .iter()
            .filter_map(|h| shardns_config::parse_cookie_secret(h).ok())
            .collect();
        CookieSecrets::new(secrets)
    };
    Ok(EdnsPolicy { nsid, cookies })
}

/// At a reload: the TLS certificate and key read again (new connections use them), the
/// response policy zones whose files or tables changed, the NSID and cookie secrets from
/// the config as it now is.
pub(super) fn reload_extras(config: &Config, shared: &Shared) {
    if let Some(tls) = &shared.tls {
        let files = config
            .server
            .tls_certificate
            .as_deref()
            .zip(config.server.tls_key.as_deref());
        match tls.reload(files) {
            Ok(()) => info!("TLS certificate reloaded"),
            Err(e) => error!("TLS certificate not reloaded, the previous one stays: {e}"),
        }
    }
    if let Some(quic) = &shared.quic {
        let files = config
            .server
            .tls_certificate
            .as_deref()
            .zip(config.server.tls_key.as_deref());
        if let Err(e) = quic.reload(files) {
            error!("QUIC certificate not reloaded, the previous one stays: {e}");
        }
    }
    crate::recursion::rpz::reload(&config.resolver.rpz, shared);
    let previous = shared.edns.load();
    match edns_policy(config, Some(&previous)) {
        Ok(p) => shared.edns.store(Arc::new(p)),
        Err(e) => error!("NSID and cookie settings not reloaded: {e}"),
    }
}
