//! parent::query -- the network side of the DS check and push: one question to one server
//! of the parent (or, RD set, to a resolver that finds them) over UDP (again over TCP when the answer is truncated), TSIG-signed with
//! the zone's key if it has one, and a message sent over TCP (the push's UPDATE). Every
//! wait is bounded; these run on the checker's thread, never on the main thread.

use shardns_sys::unix_now;
use shardns_wire::tsig::{self, Key, ResponseVerifier};
use shardns_wire::{Class, Error, Header, Message, MessageWriter, Name, Opcode, RType, Rcode};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

/// How long one UDP query waits for its answer, and how many times it is sent.
const UDP_WAIT: Duration = Duration::from_secs(2);
const UDP_TRIES: u32 = 2;
/// The longest a TCP exchange takes, connecting included.
pub(super) const TCP_WAIT: Duration = Duration::from_secs(5);
/// The EDNS payload size we offer (a DS set fits; a larger one comes over TCP).
const EDNS_SIZE: u16 = 1232;

/// A query for `qname`/`qtype` with ID `id`, with EDNS, signed with `key` at `now` if
/// given; and what checks its answer. RD is set only for a resolver (`rd`): a server of
/// the parent is to answer from its own zones.
fn build(
    qname: &Name,
    qtype: RType,
    id: u16,
    key: Option<&Key>,
    now: u64,
    rd: bool,
) -> (Vec<u8>, Option<ResponseVerifier>) {
    let mut buf = vec![0u8; 1024];
    let mut w = MessageWriter::new(&mut buf, 512);
    // A name is at most 255 octets: the question and OPT fit in 512.
    let _ = w.put_question(qname.as_ref(), qtype, Class::IN);
    let _ = w.put_opt(EDNS_SIZE, 0, 0, false, &[]);
    let mut h = Header {
        id,
        ..Header::default()
    };
    h.set_rd(rd);
    let mut len = w.finish(&h).len();
    let mut verifier = None;
    if let Some(k) = key {
        len = tsig::sign_request(&mut buf, len, k, now);
        if let Ok(Some(sig)) = tsig::read(&buf[..len]) {
            verifier = Some(ResponseVerifier::new(k, &sig.mac));
        }
    }
    buf.truncate(len);
    (buf, verifier)
}

/// `msg` read as the answer to our query `id` for `qname`/`qtype`: `None` if it is not
/// (another ID, not a response, another question, unreadable): ignored, as a stray
/// datagram is.
fn answer_to(msg: &[u8], id: u16, qname: &Name, qtype: RType) -> Option<Message> {
    let m = Message::parse(msg).ok()?;
    let q = m.questions.first()?;
    let ours = m.header.id == id
        && m.header.qr()
        && m.header.opcode() == Opcode::QUERY
        && m.questions.len() == 1
        && q.qname.as_ref().eq_ci(&qname.as_ref())
        && q.qtype == qtype;
    ours.then_some(m)
}

/// Asks `server` for `qname`/`qtype`: the answer, its TSIG checked if `key` signed the
/// query. Errors say why in a few words (no answer in time, refused by the network, a
/// TSIG that does not verify).
pub(super) fn ask(
    server: SocketAddr,
    qname: &Name,
    qtype: RType,
    id: u16,
    key: Option<&Key>,
) -> Result<Message, String> {
    exchange(server, qname, qtype, id, key, false)
}

/// Asks the recursive resolver `resolver` for `qname`/`qtype` (RD set), as [`ask`] does.
pub(super) fn ask_resolver(
    resolver: SocketAddr,
    qname: &Name,
    qtype: RType,
    id: u16,
) -> Result<Message, String> {
    exchange(resolver, qname, qtype, id, None, true)
}

/// [`ask`], RD set if `rd`.
fn exchange(
    server: SocketAddr,
    qname: &Name,
    qtype: RType,
    id: u16,
    key: Option<&Key>,
    rd: bool,
) -> Result<Message, String> {
    let (query, mut verifier) = build(qname, qtype, id, key, unix_now(), rd);
    let any: SocketAddr = if server.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(any).map_err(|e| e.to_string())?;
    sock.connect(server).map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 65535];
    // A datagram whose TSIG fails may be forged: the real answer may still come.
    let mut failed = None;
    for _ in 0..UDP_TRIES {
        sock.send(&query).map_err(|e| e.to_string())?;
        let end = Instant::now() + UDP_WAIT;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            sock.set_read_timeout(Some(left))
                .map_err(|e| e.to_string())?;
            let n = match sock.recv(&mut buf) {
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    break
                }
                Err(e) => return Err(e.to_string()),
            };
            let Some(m) = answer_to(&buf[..n], id, qname, qtype) else {
                continue;
            };
            if m.header.tc() {
                return ask_tcp(server, qname, qtype, id, key, rd);
            }
            let checked = verifier.as_mut().map(|v| v.verify(&buf[..n], unix_now()));
            match checked {
                // The server's own TSIG error (BADKEY...): its answer.
                Some(Err(e @ (Error::ServerError(_) | Error::SignedError { .. }))) => {
                    return Err(e.to_string())
                }
                Some(Err(e)) => failed = Some(e.to_string()),
                Some(Ok(())) | None => return Ok(m),
            }
        }
    }
    Err(failed.unwrap_or_else(|| "no answer in time".into()))
}

/// [`exchange`] over TCP.
fn ask_tcp(
    server: SocketAddr,
    qname: &Name,
    qtype: RType,
    id: u16,
    key: Option<&Key>,
    rd: bool,
) -> Result<Message, String> {
    let (query, verifier) = build(qname, qtype, id, key, unix_now(), rd);
    let answer = exchange_tcp(server, &query).map_err(|(_, e)| e)?;
    let m = answer_to(&answer, id, qname, qtype).ok_or("an answer to another query over TCP")?;
    if let Some(mut v) = verifier {
        v.verify(&answer, unix_now()).map_err(|e| e.to_string())?;
    }
    Ok(m)
}

/// The DS records (rdata) `server` serves for `apex`: empty when it has none (NODATA, or
/// NXDOMAIN: no delegation). Only an authoritative answer counts: an error otherwise, as
/// for REFUSED, SERVFAIL or no answer.
pub(super) fn ds_set(
    server: SocketAddr,
    apex: &Name,
    id: u16,
    key: Option<&Key>,
) -> Result<Vec<Vec<u8>>, String> {
    let m = ask(server, apex, RType::DS, id, key)?;
    let rcode = m.rcode();
    if rcode != Rcode::NOERROR && rcode != Rcode::NXDOMAIN {
        return Err(format!("answered {rcode}"));
    }
    if !m.header.aa() {
        return Err("not authoritative for the DS".into());
    }
    let mut set: Vec<Vec<u8>> = m
        .answers
        .into_iter()
        .filter(|r| r.rtype == RType::DS && r.owner.as_ref().eq_ci(&apex.as_ref()))
        .map(|r| r.rdata)
        .collect();
    set.sort();
    set.dedup();
    Ok(set)
}

/// The zone of `server` that holds `apex`'s DS: the owner of the SOA it answers for the
/// name above `apex` (in the answer, or in the authority section of a negative answer).
pub(super) fn parent_zone(
    server: SocketAddr,
    apex: &Name,
    id: u16,
    key: Option<&Key>,
) -> Result<Name, String> {
    let above = apex
        .as_ref()
        .parent()
        .ok_or("the root has no parent")?
        .to_name();
    let m = ask(server, &above, RType::SOA, id, key)?;
    if !m.header.aa() {
        return Err(format!(
            "not authoritative for {above} (answered {})",
            m.rcode()
        ));
    }
    m.answers
        .iter()
        .chain(&m.authority)
        .find(|r| r.rtype == RType::SOA && above.as_ref().ends_with(&r.owner.as_ref()))
        .map(|r| r.owner.clone())
        .ok_or_else(|| format!("no SOA for {above} (answered {})", m.rcode()))
}

/// `msg` sent to `server` over TCP and the one message that answers it, all within
/// [`TCP_WAIT`]. The error says whether `msg` may have reached the server (`true`: it was
/// written).
pub(super) fn exchange_tcp(server: SocketAddr, msg: &[u8]) -> Result<Vec<u8>, (bool, String)> {
    let by = Instant::now() + TCP_WAIT;
    let mut s =
        TcpStream::connect_timeout(&server, TCP_WAIT).map_err(|e| (false, e.to_string()))?;
    let sent = |e: io::Error| (true, e.to_string());
    s.set_write_timeout(Some(TCP_WAIT)).map_err(sent)?;
    let len = u16::try_from(msg.len()).map_err(|_| (false, "message too long".to_string()))?;
    let mut out = len.to_be_bytes().to_vec();
    out.extend_from_slice(msg);
    s.write_all(&out).map_err(sent)?;
    let mut read = |buf: &mut [u8]| -> io::Result<()> {
        let left = by.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        s.set_read_timeout(Some(left))?;
        s.read_exact(buf)
    };
    let mut len = [0u8; 2];
    read(&mut len).map_err(sent)?;
    let mut answer = vec![0u8; usize::from(u16::from_be_bytes(len))];
    read(&mut answer).map_err(sent)?;
    Ok(answer)
}
