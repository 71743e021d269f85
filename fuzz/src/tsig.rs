//! Fuzz target `tsig`: TSIG-signed requests of every kind (a query, AXFR, IXFR, NOTIFY),
//! validly signed, then changed by the fuzzer's bytes, through what a server does with them
//! (RFC 8945): `Query::parse`, `tsig::read`, `tsig::verify`, the answer written short of
//! the signature's room and signed, or the refusal with `tsig::append_failure`.
//!
//! Input: byte 0 picks the kind, EDNS and the transport; byte 1 the signing time (now, 1000 s
//! before, 1000 s after); byte 2 the MAC's length (full, 16, 8, 33) and the Other Data's
//! (0 or 6 octets); the rest are (offset, xor) pairs applied to the signed request.
//!
//! Checks: nothing panics; an unchanged, current, full-length request verifies; a response
//! is never longer than its size limit; a verified request's answer verifies with the
//! client's verifier (`ResponseVerifier`), and so does a signed refusal (BADTIME, BADTRUNC:
//! its error reported after the MAC checked; BADTIME's Other Data is the server's time); an
//! unsigned refusal (BADKEY, BADSIG, FORMERR) has no MAC.

use shardns_wire::tsig::{self, Failure, Key, ResponseVerifier, Signer};
use shardns_wire::{Query, Rcode, Transport};
use shardns_zone::answer::size_limit;
use shardns_zone::{notify_answer, respond, Reply};

/// The server's clock, fixed.
const NOW: u64 = 1_700_000_000;

fn key() -> Key {
    "hmac-sha256:fuzz.:c2VjcmV0".parse().expect("key")
}

/// A request of kind `kind` (0 query TXT, 1 query SOA, 2 AXFR, 3 IXFR, 4 NOTIFY) for
/// diff.test., with an OPT record (size 1232) if `edns`.
fn request(kind: u8, edns: bool) -> Vec<u8> {
    let (opcode, qtype): (u8, u16) = match kind % 5 {
        0 => (0, 16),
        1 => (0, 6),
        2 => (0, 252),
        3 => (0, 251),
        _ => (4, 6),
    };
    let ixfr = qtype == 251;
    let mut m = vec![0x7a, 0x11, opcode << 3, 0, 0, 1, 0, 0];
    m.extend_from_slice(&u16::from(ixfr).to_be_bytes());
    m.extend_from_slice(&u16::from(edns).to_be_bytes());
    let apex = b"\x04diff\x04test\x00";
    m.extend_from_slice(apex);
    m.extend_from_slice(&qtype.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    if ixfr {
        // The client's SOA in the authority section (compressed owner: the question).
        m.extend_from_slice(&[0xc0, 12, 0, 6, 0, 1, 0, 0, 0, 0, 0, 24]);
        m.extend_from_slice(&[0xc0, 12, 0xc0, 12]);
        m.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1]);
    }
    if edns {
        m.extend_from_slice(&[0, 0, 41, 4, 0xd0, 0, 0, 0, 0, 0, 0]);
    }
    m
}

/// `msg` (signed) with its MAC cut or zero-padded to `len` octets.
fn with_mac_len(msg: &[u8], len: usize) -> Vec<u8> {
    let Ok(Some(sig)) = tsig::read(msg) else {
        return msg.to_vec();
    };
    let mut mac = sig.mac.clone();
    mac.resize(len, 0);
    let mut rdata = b"\x0bhmac-sha256\x00".to_vec();
    rdata.extend_from_slice(&sig.time.to_be_bytes()[2..]);
    rdata.extend_from_slice(&sig.fudge.to_be_bytes());
    rdata.extend_from_slice(&(mac.len() as u16).to_be_bytes());
    rdata.extend_from_slice(&mac);
    rdata.extend_from_slice(&sig.original_id.to_be_bytes());
    rdata.extend_from_slice(&sig.error.to_be_bytes());
    rdata.extend_from_slice(&(sig.other.len() as u16).to_be_bytes());
    rdata.extend_from_slice(&sig.other);
    let mut m = msg[..sig.start].to_vec();
    m.extend_from_slice(sig.key.as_ref().as_wire());
    m.extend_from_slice(&[0, 250, 0, 255, 0, 0, 0, 0]);
    m.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
    m.extend_from_slice(&rdata);
    m
}

pub fn tsig(data: &[u8]) {
    let [sel, when, mac_sel, rest @ ..] = data else {
        return;
    };
    let edns = sel & 0x08 != 0;
    let tcp = sel & 0x10 != 0;
    let k = key();
    let unsigned = request(*sel, edns);
    let at = match when % 3 {
        0 => NOW,
        1 => NOW - 1000,
        _ => NOW + 1000,
    };
    let other: &[u8] = if mac_sel & 0x10 != 0 {
        &[0, 0, 0, 0, 0, 9]
    } else {
        &[]
    };
    let mut msg = unsigned.clone();
    msg.resize(unsigned.len() + 128, 0);
    let n = tsig::sign_request_with(&mut msg, unsigned.len(), &k, at, other);
    msg.truncate(n);
    let mac_len = match mac_sel % 4 {
        0 => 32,
        1 => 16,
        2 => 8,
        _ => 33,
    };
    if mac_len != 32 {
        msg = with_mac_len(&msg, mac_len);
    }
    let mut changed = false;
    for pair in rest.chunks_exact(2) {
        let at = usize::from(pair[0]) % msg.len();
        msg[at] ^= pair[1];
        changed |= pair[1] != 0;
    }
    let pristine = !changed && at == NOW && mac_len == 32;

    let Ok(query) = Query::parse(&msg) else {
        assert!(!pristine, "a validly signed request does not parse");
        return;
    };
    let sig = match tsig::read(&msg) {
        Ok(Some(sig)) => sig,
        _ => {
            assert!(!pristine, "a validly signed request's TSIG does not read");
            return;
        }
    };
    assert!(query.has_tsig());
    let keys = [k.clone()];
    let transport = if tcp { Transport::Tcp } else { Transport::Udp };
    let mut out = vec![0u8; 65535];
    let limit = size_limit(&query, transport);
    match tsig::verify(&msg, &sig, &keys, NOW) {
        Ok(key) => {
            let mut signer = Signer::new(key, &sig);
            let cut = signer.limit(limit);
            let w = match respond(super::zone_set(), &query, transport, &mut out[..cut]) {
                Reply::Answer(w) | Reply::Error(w) => w,
                // Transfers and NOTIFY: a one-message answer, signed the same way.
                _ => notify_answer(&query, Rcode::NOERROR, &mut out[..cut]),
            };
            let len = signer.sign(&mut out, w.len, NOW);
            assert!(len <= limit, "{len} octets past the limit {limit}");
            let mut v = ResponseVerifier::new(key, &sig.mac);
            v.verify(&out[..len], NOW)
                .expect("a verified request's answer verifies");
        }
        Err(failure) => {
            assert!(!pristine, "a validly signed request fails: {failure:?}");
            let rcode = match failure {
                Failure::Malformed => Rcode::FORMERR,
                _ => Rcode::NOTAUTH,
            };
            let w = notify_answer(&query, rcode, &mut out[..limit]);
            let len = tsig::append_failure(&mut out[..limit], w.len, &sig, &failure, NOW);
            let answer = tsig::read(&out[..len])
                .expect("a refusal's TSIG reads")
                .expect("a refusal has a TSIG");
            assert_eq!(answer.error, failure.error());
            match failure {
                Failure::Signed(key, error) => {
                    let mut v = ResponseVerifier::new(key, &sig.mac);
                    match v.verify(&out[..len], NOW) {
                        Err(shardns_wire::Error::SignedError { error: e, other }) => {
                            assert_eq!(e, error);
                            let time = if error == tsig::BADTIME {
                                NOW.to_be_bytes()[2..].to_vec()
                            } else {
                                Vec::new()
                            };
                            assert_eq!(*other, *time);
                        }
                        r => panic!("a signed refusal verifies as {r:?}"),
                    }
                }
                Failure::Unsigned(_) | Failure::Malformed => assert!(answer.mac.is_empty()),
            }
        }
    }
}
