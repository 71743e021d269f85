//! worker::quic::config -- the server's QUIC setup shared by every worker: the certificate
//! (ALPN "doq"), the transport limits, the endpoint settings; read at start and at a reload.

use super::{MAX_STREAMS, STREAM_MAX, WINDOW};
use arc_swap::ArcSwap;
use quinn_proto::crypto::rustls::QuicServerConfig;
use quinn_proto::{EndpointConfig, IdleTimeout, ServerConfig, TransportConfig, VarInt};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The server's QUIC setup: the certificate (as for DoT, with ALPN "doq") and the endpoint
/// settings every worker shares.
pub(crate) struct QuicConfig {
    pub(super) current: ArcSwap<ServerConfig>,
    pub(super) endpoint: Arc<EndpointConfig>,
    files: (PathBuf, PathBuf),
    idle: Duration,
}

impl QuicConfig {
    /// Reads the certificate chain and key (PEM); `idle` closes quiet connections.
    pub(crate) fn load(cert: &Path, key: &Path, idle: Duration) -> Result<Self, String> {
        Ok(Self {
            current: ArcSwap::from(server_config(cert, key, idle)?),
            endpoint: Arc::new(EndpointConfig::default()),
            files: (cert.to_path_buf(), key.to_path_buf()),
            idle,
        })
    }

    /// Reads the files again (as `TlsConfig::reload`): new connections get the new one.
    pub(crate) fn reload(&self, files: Option<(&Path, &Path)>) -> Result<(), String> {
        let (cert, key) = files.unwrap_or((&self.files.0, &self.files.1));
        self.current.store(server_config(cert, key, self.idle)?);
        Ok(())
    }
}

/// A QUIC server config: TLS 1.3 only (QUIC has no other), rustls with aws-lc-rs, ALPN "doq"
/// (RFC 9250 §4.1.1), no 0-RTT (replayable queries are not worth it), no migration.
fn server_config(cert: &Path, key: &Path, idle: Duration) -> Result<Arc<ServerConfig>, String> {
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate in it", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    tls.alpn_protocols = vec![b"doq".to_vec()];
    tls.max_early_data_size = 0;
    let crypto = QuicServerConfig::try_from(tls).map_err(|e| e.to_string())?;
    let mut transport = TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(VarInt::from_u32(MAX_STREAMS))
        .max_concurrent_uni_streams(VarInt::from_u32(0))
        .max_idle_timeout(IdleTimeout::try_from(idle).ok())
        .stream_receive_window(VarInt::from_u32(STREAM_MAX as u32 + 1))
        .receive_window(VarInt::from_u32(WINDOW))
        .send_window(WINDOW.into());
    let mut config = ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(Arc::new(transport));
    config.migration(false);
    Ok(Arc::new(config))
}
