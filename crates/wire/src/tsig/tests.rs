//! Requests signed and verified, tampering caught, responses chained.

use super::*;
use crate::message::Message;
use crate::types::Class;
use crate::writer::MessageWriter;

fn key(name: &str) -> Key {
    format!("hmac-sha256:{name}:c2VjcmV0IHNlY3JldCBzZWNyZXQgc2VjcmV0IQ==")
        .parse()
        .unwrap()
}

fn query(id: u16) -> (Vec<u8>, usize) {
    let mut buf = vec![0u8; 512];
    let mut w = MessageWriter::new(&mut buf, 512);
    w.put_question(
        "example.test.".parse::<Name>().unwrap().as_ref(),
        RType::AXFR,
        Class::IN,
    )
    .unwrap();
    let mut h = Header {
        id,
        ..Header::default()
    };
    h.set_rd(false);
    let len = w.finish(&h).len();
    (buf, len)
}

#[test]
fn a_signed_request_verifies_and_tampering_is_caught() {
    let k = key("xfr-key.");
    let (mut buf, len) = query(0x1234);
    let len = sign_request(&mut buf, len, &k, 1_700_000_000);
    let msg = &buf[..len];
    Message::parse(msg).expect("a signed request parses");
    let sig = read(msg).unwrap().expect("a TSIG");
    assert_eq!(sig.key.to_string(), "xfr-key.");
    assert_eq!(sig.algorithm, Some(Algorithm::HmacSha256));
    assert_eq!(
        (sig.time, sig.fudge, sig.original_id),
        (1_700_000_000, FUDGE, 0x1234)
    );
    let keys = [key("other."), k.clone()];
    assert_eq!(
        verify(msg, &sig, &keys, 1_700_000_100).unwrap().name,
        k.name
    );
    // The key name is matched without regard to case.
    let upper = [key("XFR-KEY.")];
    assert!(verify(msg, &sig, &upper, 1_700_000_000).is_ok());
    // Outside the fudge; unknown key; another secret; a flipped bit in the message.
    assert_eq!(
        verify(msg, &sig, &keys, 1_700_000_301),
        Err(Failure::Signed(&keys[1], BADTIME))
    );
    assert_eq!(
        verify(msg, &sig, &[key("nope.")], 1_700_000_000),
        Err(Failure::Unsigned(BADKEY))
    );
    let mut other = key("xfr-key.");
    other.secret[0] ^= 1;
    assert_eq!(
        verify(msg, &sig, &[other], 1_700_000_000),
        Err(Failure::Unsigned(BADSIG))
    );
    let mut bad = msg.to_vec();
    bad[14] ^= 0x20; // the question name's case: covered by the MAC
    let sig2 = read(&bad).unwrap().unwrap();
    assert_eq!(
        verify(&bad, &sig2, &keys, 1_700_000_000),
        Err(Failure::Unsigned(BADSIG))
    );
}

#[test]
fn tsig_must_be_the_last_record() {
    let k = key("k.");
    let (mut buf, len) = query(1);
    let len = sign_request(&mut buf, len, &k, 5);
    assert!(read(&buf[..len]).unwrap().is_some());
    // Another record after it.
    let mut m = buf[..len].to_vec();
    m.extend_from_slice(&[0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4, 1, 2, 3, 4]);
    m[11] += 1;
    assert!(read(&m).is_err());
    // No TSIG at all.
    let (buf, len) = query(2);
    assert_eq!(read(&buf[..len]).unwrap(), None);
}

#[test]
fn responses_chain_their_macs() {
    let k = key("k.");
    let (mut buf, len) = query(7);
    let len = sign_request(&mut buf, len, &k, 100);
    let sig = read(&buf[..len]).unwrap().unwrap();
    let mut signer = Signer::new(&k, &sig);
    let mut macs: Vec<Vec<u8>> = Vec::new();
    for i in 0..3u8 {
        let (mut r, rlen) = query(7);
        r[2] |= 0x84; // QR, AA
        r[rlen - 1] = i; // differ a little
        let before = signer.room();
        let n = signer.sign(&mut r, rlen, 100 + u64::from(i));
        assert_eq!(n - rlen, before, "room() is exact");
        let m = Message::parse(&r[..n]).expect("a signed response parses");
        assert_eq!(m.additional.last().unwrap().rtype, RType::TSIG);
        let s = read(&r[..n]).unwrap().unwrap();
        assert_eq!(s.mac.len(), 32);
        // Recompute: the first over the request MAC + message + variables, the rest over
        // the prior MAC + message + timers.
        let prior = if i == 0 {
            sig.mac.clone()
        } else {
            macs[i as usize - 1].clone()
        };
        // The message as signed: before the TSIG was counted in ARCOUNT.
        let mut unsigned = r[..rlen].to_vec();
        unsigned[11] -= 1;
        let plen = (prior.len() as u16).to_be_bytes();
        let want = if i == 0 {
            let vars = variables(&k, s.time, FUDGE, 0, &[]);
            k.algorithm
                .mac(&k.secret, &[&plen, &prior, &unsigned, &vars])
        } else {
            let timers = [&s.time.to_be_bytes()[2..], &FUDGE.to_be_bytes()[..]].concat();
            k.algorithm
                .mac(&k.secret, &[&plen, &prior, &unsigned, &timers])
        };
        assert_eq!(s.mac, want, "message {i}");
        macs.push(s.mac);
    }
}

#[test]
fn keys_parse_from_text_and_never_print_their_secret() {
    let k: Key = "hmac-sha512:Transfer.Key:c2VjcmV0".parse().unwrap();
    assert_eq!(k.algorithm, Algorithm::HmacSha512);
    assert_eq!(k.secret, b"secret");
    assert!(!format!("{k:?}").contains("c2VjcmV0"));
    for bad in [
        "hmac-md5:k:c2VjcmV0",
        "hmac-sha256:k",
        "hmac-sha256:k:***",
        "hmac-sha256:k:",
    ] {
        let e = bad.parse::<Key>().unwrap_err();
        assert!(!e.contains("c2VjcmV0"), "{e}");
    }
}

/// A request signed with `key` at `time` as a client with other habits signs it: the MAC
/// truncated to `mac_len` octets (or padded with zeros past the hash), `other` as Other
/// Data (covered by the MAC).
fn signed_with(k: &Key, time: u64, mac_len: usize, other: &[u8]) -> Vec<u8> {
    let (mut buf, len) = query(0x4242);
    let vars = variables(k, time, FUDGE, 0, other);
    let mut mac = k.algorithm.mac(&k.secret, &[&buf[..len], &vars]);
    mac.resize(mac_len, 0);
    buf.resize(len + 512, 0);
    let end = append(
        &mut buf,
        len,
        &k.name,
        k.algorithm,
        time,
        &mac,
        0x4242,
        0,
        other,
    );
    buf.truncate(end);
    buf
}

#[test]
fn mac_sizes_follow_rfc_8945_5_2_2_1() {
    let k = key("k.");
    let keys = [k.clone()];
    let check = |mac_len: usize| {
        let m = signed_with(&k, 100, mac_len, &[]);
        let sig = read(&m).unwrap().unwrap();
        assert_eq!(sig.mac.len(), mac_len);
        verify(&m, &sig, &keys, 100)
    };
    assert_eq!(check(32), Ok(&keys[0]));
    // A prefix of at least half the hash (and 10 octets) that verifies: BADTRUNC, signed
    // (our policy takes only the full length, as BIND's default).
    assert_eq!(check(16), Err(Failure::Signed(&keys[0], BADTRUNC)));
    assert_eq!(check(31), Err(Failure::Signed(&keys[0], BADTRUNC)));
    // Shorter than half the hash, or longer than it: FORMERR.
    assert_eq!(check(15), Err(Failure::Malformed));
    assert_eq!(check(8), Err(Failure::Malformed));
    assert_eq!(check(33), Err(Failure::Malformed));
    // A wrong truncated MAC is BADSIG, no MAC at all too.
    let mut m = signed_with(&k, 100, 16, &[]);
    let sig = read(&m).unwrap().unwrap();
    let mac_at = sig.start + k.name.as_ref().len() + 10 + 13 + 10;
    m[mac_at] ^= 1; // the MAC one bit off
    let bad = read(&m).unwrap().unwrap();
    assert_ne!(bad.mac, sig.mac);
    assert_eq!(verify(&m, &bad, &keys, 100), Err(Failure::Unsigned(BADSIG)));
    assert_eq!(check(0), Err(Failure::Unsigned(BADSIG)));
    // An unknown key comes first, whatever the MAC's size.
    let m = signed_with(&k, 100, 8, &[]);
    let sig = read(&m).unwrap().unwrap();
    assert_eq!(
        verify(&m, &sig, &[key("other.")], 100),
        Err(Failure::Unsigned(BADKEY))
    );
    // HMAC-SHA512: half is 32 octets.
    let k512: Key = "hmac-sha512:k.:c2VjcmV0".parse().unwrap();
    let keys512 = [k512.clone()];
    for (len, want) in [
        (64, Ok(&keys512[0])),
        (32, Err(Failure::Signed(&keys512[0], BADTRUNC))),
        (31, Err(Failure::Malformed)),
    ] {
        let m = signed_with(&k512, 100, len, &[]);
        let sig = read(&m).unwrap().unwrap();
        assert_eq!(verify(&m, &sig, &keys512, 100), want, "{len}");
    }
}

#[test]
fn other_data_of_a_request_is_covered_by_its_mac() {
    let k = key("k.");
    let keys = [k.clone()];
    let m = signed_with(&k, 100, 32, &[0, 0, 0, 0, 0, 7]);
    let sig = read(&m).unwrap().unwrap();
    assert_eq!(sig.other, [0, 0, 0, 0, 0, 7]);
    assert_eq!(verify(&m, &sig, &keys, 100), Ok(&keys[0]));
    let mut forged = m.clone();
    *forged.last_mut().unwrap() ^= 1;
    let sig = read(&forged).unwrap().unwrap();
    assert_eq!(
        verify(&forged, &sig, &keys, 100),
        Err(Failure::Unsigned(BADSIG))
    );
}

#[test]
fn badtime_and_badtrunc_answers_are_signed_and_badtime_carries_our_time() {
    let k = key("k.");
    let keys = [k.clone()];
    let now = 1_700_001_000;
    for (time, mac_len, error) in [(now - 1000, 32, BADTIME), (now, 16, BADTRUNC)] {
        let m = signed_with(&k, time, mac_len, &[]);
        let sig = read(&m).unwrap().unwrap();
        let failure = verify(&m, &sig, &keys, now).unwrap_err();
        assert_eq!(failure, Failure::Signed(&keys[0], error));
        let (mut r, rlen) = query(0x4242);
        r[2] |= 0x80;
        r.resize(1024, 0);
        let n = append_failure(&mut r, rlen, &sig, &failure, now);
        let a = read(&r[..n]).unwrap().unwrap();
        assert_eq!((a.error, a.time, a.mac.len()), (error, now, 32));
        if error == BADTIME {
            assert_eq!(a.other, now.to_be_bytes()[2..]);
        } else {
            assert!(a.other.is_empty());
        }
        // The client's verifier checks the MAC (over the request's MAC, truncated or not,
        // RFC 8945 §5.2.2.1) before it reports the error.
        let mut v = ResponseVerifier::new(&k, &sig.mac);
        assert_eq!(
            v.verify(&r[..n], now),
            Err(Error::SignedError {
                error,
                other: a.other.as_slice().into()
            })
        );
        let mut forged = r[..n].to_vec();
        forged[13] ^= 0x20;
        let mut v = ResponseVerifier::new(&k, &sig.mac);
        assert_eq!(v.verify(&forged, now), Err(Error::BadSig));
    }
    // BADSIG and BADKEY answers stay unsigned (RFC 8945 §5.3.2).
    let m = signed_with(&k, now, 32, &[]);
    let sig = read(&m).unwrap().unwrap();
    let nope = [key("nope.")];
    let failure = verify(&m, &sig, &nope, now).unwrap_err();
    let (mut r, rlen) = query(0x4242);
    r.resize(1024, 0);
    let n = append_failure(&mut r, rlen, &sig, &failure, now);
    let a = read(&r[..n]).unwrap().unwrap();
    assert_eq!((a.error, a.mac.len(), a.other.len()), (BADKEY, 0, 0));
    // FORMERR for a MAC of a bad size: an unsigned BADSIG, as BIND answers.
    let (mut r, rlen) = query(0x4242);
    r.resize(1024, 0);
    let n = append_failure(&mut r, rlen, &sig, &Failure::Malformed, now);
    let a = read(&r[..n]).unwrap().unwrap();
    assert_eq!((a.error, a.mac.len()), (BADSIG, 0));
}
