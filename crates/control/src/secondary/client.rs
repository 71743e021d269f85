//! secondary::client -- the network side of a refresh: the SOA query (UDP, TCP when the
//! answer is truncated) and the transfer over TCP, one length-prefixed message read at a
//! time into a buffer of 64 KiB and handed to `shardns_zone::xfr::incoming`. With
//! `primary_tls`, both go over one TLS 1.3 connection each (XoT, RFC 9103: ALPN "dot", the
//! primary's certificate checked against the configured CA and name, or its key against
//! the SPKI pins; no fallback to clear text). Every wait is bounded: connecting, the TLS
//! handshake and each write by 10 s; each message read (all its octets) by
//! `limits.transfer_in_idle_ms`, so a primary that makes no progress ends the transfer; a
//! transfer also by its deadline. These run on the transfer threads, never on the
//! secondary thread.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme,
    StreamOwned,
};
use shardns_config::{PrimaryTls, TlsCheck};
use shardns_sys::unix_now;
use shardns_wire::tsig::Key;
use shardns_wire::{Name, RType};
use shardns_zone::xfr::incoming::{self, Incoming, Limits, Outcome, SoaAnswer};
use shardns_zone::Zone;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long one SOA query over UDP waits for its answer.
const UDP_WAIT: Duration = Duration::from_secs(2);
/// Tries of an SOA query over UDP before the primary counts as unreachable.
const UDP_TRIES: u32 = 2;
/// Longest wait to connect, for the TLS handshake and for a write.
const TCP_WAIT: Duration = Duration::from_secs(10);

/// Why a refresh from one primary failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Sockets: connect, send, receive, or a timeout.
    Io(io::Error),
    /// What the primary sent.
    Xfr(shardns_zone::Error),
    /// The transfer took longer than `limits.transfer_in_timeout_ms`.
    Deadline(Duration),
    /// No whole message within `limits.transfer_in_idle_ms`: no progress.
    Idle(Duration),
    /// TLS: the handshake failed or did not end in time, or the primary is not the one
    /// configured (certificate, ALPN).
    Tls(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) if e.kind() == io::ErrorKind::WouldBlock => {
                f.write_str("no answer in time")
            }
            Self::Io(e) => write!(f, "{e}"),
            Self::Xfr(e) => write!(f, "{e}"),
            Self::Deadline(d) => write!(f, "the transfer took longer than {d:?}"),
            Self::Idle(d) => write!(f, "no progress: no whole message within {d:?}"),
            Self::Tls(e) => write!(f, "TLS: {e}"),
        }
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

impl From<shardns_zone::Error> for Failure {
    fn from(e: shardns_zone::Error) -> Self {
        Self::Xfr(e)
    }
}

/// The primary's serial for `apex`: over UDP, again over TCP if the answer is truncated.
pub(super) fn soa_serial(
    primary: SocketAddr,
    tls: Option<&PrimaryTls>,
    apex: &Name,
    key: Option<&Key>,
    id: u16,
    idle: Duration,
) -> Result<u32, Failure> {
    if tls.is_some() {
        // XoT: the SOA query too goes over TLS (RFC 9103 §9.3.3), never in clear text.
        return soa_over_tcp(primary, tls, apex, key, id, idle);
    }
    let mut req = incoming::request(apex, RType::SOA, id, None, key, unix_now());
    let bind: SocketAddr = if primary.is_ipv4() {
        "0.0.0.0:0".parse().expect("an address")
    } else {
        "[::]:0".parse().expect("an address")
    };
    let sock = UdpSocket::bind(bind)?;
    sock.connect(primary)?;
    let mut buf = vec![0u8; 4096];
    let mut last = Failure::Io(io::ErrorKind::WouldBlock.into());
    for _ in 0..UDP_TRIES {
        sock.send(&req.bytes)?;
        let end = Instant::now() + UDP_WAIT;
        // Datagrams that are not the answer (another ID, garbage) are skipped until the
        // wait is over; at most one per receive call, so the loop is bounded by the time.
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            sock.set_read_timeout(Some(left))?;
            let n = match sock.recv(&mut buf) {
                Ok(n) => n,
                Err(e)
                    if e.kind() == io::ErrorKind::WouldBlock
                        || e.kind() == io::ErrorKind::TimedOut =>
                {
                    break;
                }
                // ICMP port unreachable: nobody there.
                Err(e) => return Err(e.into()),
            };
            match incoming::read_soa(&mut req, &buf[..n], unix_now()) {
                Ok(SoaAnswer::Serial(s)) => return Ok(s),
                Ok(SoaAnswer::Truncated) => {
                    return soa_over_tcp(primary, None, apex, key, id, idle)
                }
                Err(e @ shardns_zone::Error::Malformed(_)) => last = e.into(),
                Err(e) => return Err(e.into()),
            }
        }
    }
    Err(last)
}

fn soa_over_tcp(
    primary: SocketAddr,
    tls: Option<&PrimaryTls>,
    apex: &Name,
    key: Option<&Key>,
    id: u16,
    idle: Duration,
) -> Result<u32, Failure> {
    let mut req = incoming::request(apex, RType::SOA, id, None, key, unix_now());
    let mut stream = connect(primary, tls, Instant::now() + TCP_WAIT)?;
    send(&mut stream, &req.bytes)?;
    let mut buf = vec![0u8; 65535];
    let n = read_message(&mut stream, &mut buf, Instant::now() + idle)?
        .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
    match incoming::read_soa(&mut req, &buf[..n], unix_now())? {
        SoaAnswer::Serial(s) => Ok(s),
        SoaAnswer::Truncated => Err(shardns_zone::Error::Truncated.into()),
    }
}

/// `msg` sent to `primary` over TCP (TLS with `tls`) and the one message that answers it
/// read, all by `by`: an update forwarded (`crate::update::forward`). The error says
/// whether `msg` may have reached the primary (`true`: past the connection and handshake).
pub(crate) fn exchange(
    primary: SocketAddr,
    tls: Option<&PrimaryTls>,
    msg: &[u8],
    by: Instant,
) -> Result<Vec<u8>, (bool, Failure)> {
    let mut stream = connect(primary, tls, by).map_err(|e| (false, e))?;
    let sent = |e: io::Error| (true, Failure::Io(e));
    send(&mut stream, msg).map_err(sent)?;
    let mut buf = vec![0u8; 65535];
    let n = read_message(&mut stream, &mut buf, by)
        .map_err(sent)?
        .ok_or_else(|| sent(io::ErrorKind::UnexpectedEof.into()))?;
    buf.truncate(n);
    Ok(buf)
}

/// A transfer done: what it gave, and the octets it took.
pub(super) struct Transferred {
    pub outcome: Outcome,
    pub bytes: u64,
    pub messages: u32,
    pub records: u64,
    pub skipped: u64,
}

/// How long a transfer may take: all of it, and any one message.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bounds {
    pub deadline: Instant,
    pub idle: Duration,
}

/// Transfers `apex` from `primary` over TCP: IXFR from `base` if given, else AXFR; within
/// `limits` and `bounds`. The octets read count in `bytes` even when it fails.
#[allow(clippy::too_many_arguments)]
pub(super) fn transfer(
    primary: SocketAddr,
    tls: Option<&PrimaryTls>,
    apex: &Name,
    qtype: RType,
    base: Option<&Arc<Zone>>,
    key: Option<&Key>,
    id: u16,
    limits: Limits,
    bounds: Bounds,
    bytes: &mut u64,
) -> Result<Transferred, Failure> {
    let req = incoming::request(apex, qtype, id, base.map(|z| &**z), key, unix_now());
    let mut inc = Incoming::new(req, base.cloned(), limits);
    let result = run(primary, tls, &mut inc, bounds);
    *bytes += inc.bytes();
    result?;
    let (messages, records, skipped, read) =
        (inc.messages(), inc.records(), inc.skipped(), inc.bytes());
    Ok(Transferred {
        outcome: inc.finish()?,
        bytes: read,
        messages,
        records,
        skipped,
    })
}

/// The reader of a transfer's answer: the query it sends, and each message of the answer.
pub(super) trait Feed {
    fn query(&self) -> &[u8];
    fn feed(&mut self, msg: &[u8], now: u64) -> Result<incoming::Progress, Failure>;
}

impl Feed for Incoming {
    fn query(&self) -> &[u8] {
        Incoming::query(self)
    }

    fn feed(&mut self, msg: &[u8], now: u64) -> Result<incoming::Progress, Failure> {
        Ok(Incoming::feed(self, msg, now)?)
    }
}

/// Sends the query and feeds the answer's messages until the closing SOA or the end of the
/// stream; the number of messages is bounded by the limits, the time by `bounds`: each
/// message must come whole within `bounds.idle`, all of them by `bounds.deadline`.
pub(super) fn run(
    primary: SocketAddr,
    tls: Option<&PrimaryTls>,
    inc: &mut impl Feed,
    bounds: Bounds,
) -> Result<(), Failure> {
    let started = Instant::now();
    let deadline = bounds.deadline;
    let mut stream = connect(primary, tls, deadline)?;
    send(&mut stream, inc.query())?;
    let mut buf = vec![0u8; 65535];
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err(Failure::Deadline(started.elapsed()));
        }
        let n = match read_message(&mut stream, &mut buf, deadline.min(now + bounds.idle)) {
            Ok(Some(n)) => n,
            // The primary closed the connection between messages: `finish` says whether
            // that was the end.
            Ok(None) => return Ok(()),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(if Instant::now() >= deadline {
                    Failure::Deadline(started.elapsed())
                } else {
                    Failure::Idle(bounds.idle)
                });
            }
            Err(e) => return Err(e.into()),
        };
        match Feed::feed(inc, &buf[..n], unix_now())? {
            incoming::Progress::Done => return Ok(()),
            incoming::Progress::More => {}
        }
    }
}

/// A connection to a primary: TCP, or TLS over it (XoT).
enum Stream {
    Tcp(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl Stream {
    fn sock(&self) -> &TcpStream {
        match self {
            Self::Tcp(s) => s,
            Self::Tls(s) => &s.sock,
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.read(buf),
            Self::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.write(buf),
            Self::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::Tcp(s) => s.flush(),
            Self::Tls(s) => s.flush(),
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // A TLS peer is told the connection ends on purpose (close_notify); best effort,
        // within the write timeout already set.
        if let Self::Tls(s) = self {
            s.conn.send_close_notify();
            let _ = s.conn.write_tls(&mut s.sock);
        }
    }
}

fn connect(
    primary: SocketAddr,
    tls: Option<&PrimaryTls>,
    deadline: Instant,
) -> Result<Stream, Failure> {
    let started = Instant::now();
    let wait = deadline.saturating_duration_since(started).min(TCP_WAIT);
    let stream = TcpStream::connect_timeout(&primary, wait.max(Duration::from_millis(1)))?;
    stream.set_nodelay(true)?;
    stream.set_write_timeout(Some(TCP_WAIT))?;
    stream.set_read_timeout(Some(TCP_WAIT))?;
    match tls {
        None => Ok(Stream::Tcp(stream)),
        Some(tls) => handshake(primary, tls, stream, (started + TCP_WAIT).min(deadline)),
    }
}

/// The TLS client setup for `tls` to `primary`: TLS 1.3 only, ALPN "dot", the certificate
/// checked against the CA and name, or against the SPKI pins.
fn client_config(
    primary: SocketAddr,
    tls: &PrimaryTls,
) -> Result<(Arc<ClientConfig>, ServerName<'static>), Failure> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| Failure::Tls(e.to_string()))?;
    let (mut config, name) = match tls.check_with().map_err(Failure::Tls)? {
        TlsCheck::Ca { roots, name } => (
            builder.with_root_certificates(roots).with_no_client_auth(),
            name,
        ),
        TlsCheck::Pins { pins, name } => (
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Pinned { pins, provider }))
                .with_no_client_auth(),
            // No name: the address, which rustls sends no SNI for.
            name.unwrap_or_else(|| ServerName::IpAddress(primary.ip().into())),
        ),
    };
    config.alpn_protocols = vec![b"dot".to_vec()];
    Ok((Arc::new(config), name))
}

/// Accepts a primary's certificate whose SubjectPublicKeyInfo has one of the SHA-256
/// digests `pins` (RFC 7858 §4.2), whatever signed it; the handshake's signature is still
/// checked against that key, so only the key's holder gets through.
#[derive(Debug)]
struct Pinned {
    pins: Vec<[u8; 32]>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let cert = webpki::EndEntityCert::try_from(end_entity)
            .map_err(|_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding))?;
        let spki = cert.subject_public_key_info();
        let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, spki.as_ref());
        if self.pins.iter().any(|p| p[..] == *digest.as_ref()) {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Runs the TLS handshake on `sock` by `by`: each read and write waits at most until then,
/// so a primary that accepts the connection but never answers cannot hold the thread.
fn handshake(
    primary: SocketAddr,
    tls: &PrimaryTls,
    mut sock: TcpStream,
    by: Instant,
) -> Result<Stream, Failure> {
    let (config, name) = client_config(primary, tls)?;
    let mut conn = ClientConnection::new(config, name).map_err(|e| Failure::Tls(e.to_string()))?;
    let checked = match &tls.ca_file {
        Some(ca) => format!(
            "checked against {:?} and {}",
            tls.name.as_deref().unwrap_or(""),
            ca.display()
        ),
        None => format!("checked against the SPKI pins {:?}", tls.spki_sha256),
    };
    let failed = |e: &dyn fmt::Display| {
        Failure::Tls(format!("handshake with {primary} ({checked}) failed: {e}"))
    };
    while conn.is_handshaking() {
        let left = by.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Failure::Tls(format!(
                "no TLS handshake with {primary} within {:?}",
                TCP_WAIT
            )));
        }
        let io = if conn.wants_write() {
            sock.set_write_timeout(Some(left))?;
            conn.write_tls(&mut sock)
        } else {
            sock.set_read_timeout(Some(left))?;
            match conn.read_tls(&mut sock) {
                Ok(0) => Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => match conn.process_new_packets() {
                    Ok(_) => Ok(n),
                    Err(e) => {
                        // The alert that says why (e.g. bad certificate) goes out first.
                        let _ = conn.write_tls(&mut sock);
                        return Err(failed(&e));
                    }
                },
                Err(e) => Err(e),
            }
        };
        match io {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(failed(&e)),
        }
    }
    // RFC 9103 §7.1: XoT is negotiated with ALPN "dot"; a primary that picks none is not
    // one that agreed to transfers over TLS.
    if conn.alpn_protocol() != Some(b"dot") {
        let _ = conn.write_tls(&mut sock);
        return Err(Failure::Tls(format!(
            "{primary} did not negotiate ALPN \"dot\" (RFC 9103 §7.1)"
        )));
    }
    sock.set_write_timeout(Some(TCP_WAIT))?;
    sock.set_read_timeout(Some(TCP_WAIT))?;
    Ok(Stream::Tls(Box::new(StreamOwned::new(conn, sock))))
}

fn send(stream: &mut Stream, msg: &[u8]) -> io::Result<()> {
    let mut framed = Vec::with_capacity(msg.len() + 2);
    framed.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    framed.extend_from_slice(msg);
    stream.write_all(&framed)?;
    stream.flush()
}

/// Reads one length-prefixed message into `buf`, whole by `by`; `None` if the stream ended
/// before it. Every read waits only until `by`, so a primary that trickles a message an
/// octet at a time is cut off there too (a timeout per read alone would not).
fn read_message(stream: &mut Stream, buf: &mut [u8], by: Instant) -> io::Result<Option<usize>> {
    let mut len = [0u8; 2];
    if !read_full(stream, &mut len, by, true)? {
        return Ok(None);
    }
    let n = u16::from_be_bytes(len) as usize;
    read_full(stream, &mut buf[..n], by, false)?;
    Ok(Some(n))
}

/// Fills `buf` by `by` (else a `TimedOut` error). `Ok(false)`: the stream ended before the
/// first octet and `between` (between messages: whether that was the end is for `finish`,
/// the closing SOA, to say).
fn read_full(stream: &mut Stream, buf: &mut [u8], by: Instant, between: bool) -> io::Result<bool> {
    let mut got = 0;
    // A signal may interrupt a read (the main thread's are handled elsewhere, but the
    // kernel can still say so); a few retries, then the error.
    let mut interrupted = 0;
    while got < buf.len() {
        let left = by.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        stream.sock().set_read_timeout(Some(left))?;
        match stream.read(&mut buf[got..]) {
            Ok(0) if got == 0 && between => return Ok(false),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted && interrupted < 8 => interrupted += 1,
            // A TLS primary that closes without close_notify between messages.
            Err(e)
                if e.kind() == io::ErrorKind::UnexpectedEof
                    && got == 0
                    && between
                    && matches!(stream, Stream::Tls(_)) =>
            {
                return Ok(false)
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}
