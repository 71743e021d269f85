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
    assert_eq!(verify(msg, &sig, &keys, 1_700_000_301), Err(BADTIME));
    assert_eq!(
        verify(msg, &sig, &[key("nope.")], 1_700_000_000),
        Err(BADKEY)
    );
    let mut other = key("xfr-key.");
    other.secret[0] ^= 1;
    assert_eq!(verify(msg, &sig, &[other], 1_700_000_000), Err(BADSIG));
    let mut bad = msg.to_vec();
    bad[14] ^= 0x20; // the question name's case: covered by the MAC
    let sig2 = read(&bad).unwrap().unwrap();
    assert_eq!(verify(&bad, &sig2, &keys, 1_700_000_000), Err(BADSIG));
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
