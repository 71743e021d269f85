//! Incoming transfers read back from our own outgoing ones (AXFR, signed or not) and from
//! hand-made IXFR answers; every hostile answer is an error that names what is wrong.

use super::*;
use crate::scan::{scan_text, ScanOptions};
use crate::xfr::{self, Transfer};
use shardns_wire::tsig::{self, Key, Signer};
use shardns_wire::Query;
use shardns_wire::{Header, MessageWriter, Section};
use std::path::Path;

const APEX: &str = "example.test.";
const NOW: u64 = 1_700_000_000;

fn apex() -> Name {
    APEX.parse().unwrap()
}

fn key() -> Key {
    "hmac-sha256:xfr-key.:c2VjcmV0IHNlY3JldCBzZWNyZXQgc2VjcmV0IQ=="
        .parse()
        .unwrap()
}

fn zone_text(serial: u32, hosts: usize, extra: &str) -> String {
    let mut z = format!(
        "$TTL 300\n@ SOA ns hostmaster {serial} 7200 3600 1209600 60\n@ NS ns\n@ NS ns.other.test.\n\
         ns A 192.0.2.1\n@ MX 10 Mail\nMail A 192.0.2.2\nsub NS ns.sub\nns.sub A 192.0.2.53\n\
         *.wild TXT \"any\"\n{extra}"
    );
    for i in 0..hosts {
        z.push_str(&format!("h{i} A 10.0.{}.{}\n", i >> 8, i & 255));
    }
    z
}

fn zone(text: &str) -> Arc<Zone> {
    let opts = ScanOptions::new(apex());
    let (z, _) = crate::load_zone_text(text.as_bytes(), Path::new("test.zone"), &opts)
        .unwrap_or_else(|e| panic!("load: {e}"));
    Arc::new(z)
}

/// Every record of a zone as text, sorted (owner case folded).
fn lines(z: &Zone) -> Vec<String> {
    let mut v: Vec<String> = z.records().map(|r| r.to_string().to_lowercase()).collect();
    v.sort();
    v
}

/// Our own server's answer to `req`, in messages of at most `size` octets, signed if the
/// request was.
fn serve(z: &Arc<Zone>, req: &Request, size: usize) -> Vec<Vec<u8>> {
    let q = Query::parse(&req.bytes).expect("our request parses");
    let xfr::Read::Transfer(r) = xfr::request(&q) else {
        panic!("not a transfer request")
    };
    let mut t = Transfer::new(Arc::clone(z), r);
    if let Ok(Some(sig)) = tsig::read(&req.bytes) {
        let k = key();
        tsig::verify(&req.bytes, &sig, std::slice::from_ref(&k), NOW).expect("request verifies");
        t.sign_with(Signer::new(&k, &sig));
    }
    t.set_time(NOW);
    let mut out = Vec::new();
    let mut buf = vec![0u8; size];
    while let Some(n) = t.next_message(&mut buf) {
        out.push(buf[..n].to_vec());
    }
    out
}

/// Feeds `messages`; the progress after each, or the first error.
fn feed_all(inc: &mut Incoming, messages: &[Vec<u8>]) -> Result<Progress, Error> {
    let mut p = Progress::More;
    for m in messages {
        p = inc.feed(m, NOW)?;
    }
    Ok(p)
}

fn run(req: Request, base: Option<Arc<Zone>>, messages: &[Vec<u8>]) -> Result<Outcome, Error> {
    let mut inc = Incoming::new(req, base, Limits::default());
    assert_eq!(feed_all(&mut inc, messages)?, Progress::Done);
    inc.finish()
}

fn new_zone(outcome: Result<Outcome, Error>) -> (Zone, Form) {
    match outcome {
        Ok(Outcome::Zone { zone, form, .. }) => (zone, form),
        other => panic!("expected a zone, got {other:?}"),
    }
}

#[test]
fn an_axfr_in_many_messages_gives_the_same_zone() {
    let z = zone(&zone_text(7, 500, ""));
    for key in [None, Some(key())] {
        let req = request(&apex(), RType::AXFR, 42, None, key.as_ref(), NOW);
        let messages = serve(&z, &req, 1024);
        assert!(messages.len() > 5, "{} messages", messages.len());
        let (got, form) = new_zone(run(req, None, &messages));
        assert_eq!(form, Form::Whole);
        assert_eq!(got.serial(), 7);
        assert_eq!(lines(&got), lines(&z));
    }
}

#[test]
fn tsig_failures_and_unsigned_answers_are_errors() {
    let z = zone(&zone_text(7, 200, ""));
    // A signed transfer with one octet changed in its middle message.
    let req = request(&apex(), RType::AXFR, 1, None, Some(&key()), NOW);
    let mut messages = serve(&z, &req, 1024);
    let mid = messages.len() / 2;
    let at = messages[mid].len() / 2;
    messages[mid][at] ^= 1;
    let err = run(req, None, &messages).unwrap_err();
    assert!(matches!(err, Error::Wire(_) | Error::Malformed(_)), "{err}");
    // An unsigned answer to a signed request.
    let req = request(&apex(), RType::AXFR, 1, None, Some(&key()), NOW);
    let unsigned = serve(&z, &request(&apex(), RType::AXFR, 1, None, None, NOW), 1024);
    let err = run(req, None, &unsigned).unwrap_err();
    assert!(
        matches!(err, Error::Wire(shardns_wire::Error::Unsigned)),
        "{err}"
    );
    // Signed with another secret.
    let mut other = key();
    other.secret[0] ^= 1;
    let req = request(&apex(), RType::AXFR, 1, None, Some(&other), NOW);
    let signed = serve(
        &z,
        &request(&apex(), RType::AXFR, 1, None, Some(&key()), NOW),
        1024,
    );
    let err = run(req, None, &signed).unwrap_err();
    assert!(
        matches!(err, Error::Wire(shardns_wire::Error::BadSig)),
        "{err}"
    );
}

/// One IXFR answer: `SOA(new)`, then per step `SOA(from)`, deletions, `SOA(to)`,
/// additions, and `SOA(new)`; records given as zone-file lines, `per` to a message.
fn ixfr_answer(id: u16, new: u32, steps: &[(u32, &str, u32, &str)], per: usize) -> Vec<Vec<u8>> {
    let soa = |serial: u32| format!("@ SOA ns hostmaster {serial} 7200 3600 1209600 60\n");
    let mut text = String::from("$TTL 300\n");
    text.push_str(&soa(new));
    for (from, dels, to, adds) in steps {
        text.push_str(&soa(*from));
        text.push_str(dels);
        text.push_str(&soa(*to));
        text.push_str(adds);
    }
    text.push_str(&soa(new));
    answer(id, RType::IXFR, &text, per)
}

/// Records (zone-file lines, origin example.test.) as answers, `per` to a message.
fn answer(id: u16, qtype: RType, text: &str, per: usize) -> Vec<Vec<u8>> {
    answer_in(APEX, id, qtype, text, per)
}

/// [`answer`], the lines read with another origin (records outside our zone).
fn answer_in(origin: &str, id: u16, qtype: RType, text: &str, per: usize) -> Vec<Vec<u8>> {
    let opts = ScanOptions::new(origin.parse().unwrap());
    let scanned = scan_text(text.as_bytes(), Path::new("t"), &opts).unwrap();
    let recs = &scanned.chunks[0];
    let mut out = Vec::new();
    for chunk in recs.items.chunks(per) {
        let mut buf = vec![0u8; 65535];
        let mut w = MessageWriter::new(&mut buf, 65535);
        if out.is_empty() {
            w.put_question(apex().as_ref(), qtype, Class::IN).unwrap();
        }
        for it in chunk {
            w.put_record(
                Section::Answer,
                recs.owner(it),
                it.rtype,
                Class::IN,
                it.ttl,
                recs.rdata(it),
            )
            .unwrap();
        }
        let mut h = Header {
            id,
            ..Header::default()
        };
        h.set_qr(true);
        h.set_aa(true);
        out.push(w.finish(&h).to_vec());
    }
    out
}

#[test]
fn an_incremental_ixfr_applies_every_step_to_our_version() {
    let base = zone(&zone_text(1, 20, "www A 192.0.2.80\n"));
    let want = zone(&zone_text(
        3,
        20,
        "www A 192.0.2.81\nnew TXT \"step two\"\nwww TXT \"web\"\n",
    ))
    .records()
    .filter(|r| !r.to_string().contains("h7."))
    .count();
    let steps = [
        // 1 -> 2: www moves, h7 goes, a TXT comes.
        (
            1,
            "www A 192.0.2.80\nh7 A 10.0.0.7\n",
            2,
            "www A 192.0.2.81\nnew TXT \"step one\"\n",
        ),
        // 2 -> 3: the TXT added in step one changes; www gets a TXT; MAIL in another case.
        (
            2,
            "new TXT \"step one\"\n",
            3,
            "new TXT \"step two\"\nWWW TXT \"web\"\n",
        ),
    ];
    for per in [1, 3, 100] {
        let req = request(&apex(), RType::IXFR, 9, Some(&base), None, NOW);
        let messages = ixfr_answer(9, 3, &steps, per);
        let (got, form) = new_zone(run(req, Some(Arc::clone(&base)), &messages));
        assert_eq!(form, Form::Incremental);
        assert_eq!(got.serial(), 3);
        let text = lines(&got).join("\n");
        assert_eq!(got.record_count(), want, "{text}");
        for present in [
            "www.example.test. 300 in a 192.0.2.81",
            "new.example.test. 300 in txt \"step two\"",
            "www.example.test. 300 in txt \"web\"",
            "h8.example.test. 300 in a 10.0.0.8",
        ] {
            assert!(text.contains(present), "{present} missing:\n{text}");
        }
        for gone in ["192.0.2.80", "step one", "h7."] {
            assert!(!text.contains(gone), "{gone} still there:\n{text}");
        }
    }
}

#[test]
fn an_ixfr_that_does_not_apply_says_fall_back_to_axfr() {
    let base = zone(&zone_text(1, 5, ""));
    let cases: [(&str, Vec<Vec<u8>>); 4] = [
        (
            "deletes a record that is not there",
            ixfr_answer(9, 2, &[(1, "nope A 192.0.2.1\n", 2, "")], 10),
        ),
        (
            "starts at another serial",
            ixfr_answer(9, 2, &[(5, "", 2, "")], 10),
        ),
        (
            "steps do not chain",
            ixfr_answer(9, 3, &[(1, "", 2, ""), (7, "", 3, "")], 10),
        ),
        (
            "deletes the same record twice",
            ixfr_answer(9, 2, &[(1, "h1 A 10.0.0.1\nh1 A 10.0.0.1\n", 2, "")], 10),
        ),
    ];
    for (what, messages) in cases {
        let req = request(&apex(), RType::IXFR, 9, Some(&base), None, NOW);
        let err = run(req, Some(Arc::clone(&base)), &messages).unwrap_err();
        assert!(
            matches!(err, Error::Inconsistent(_)) && err.retry_with_axfr(),
            "{what}: {err}"
        );
    }
    // A step that removes every NS leaves a zone that fails its checks: also AXFR.
    let req = request(&apex(), RType::IXFR, 9, Some(&base), None, NOW);
    let messages = ixfr_answer(9, 2, &[(1, "@ NS ns\n@ NS ns.other.test.\n", 2, "")], 10);
    let err = run(req, Some(Arc::clone(&base)), &messages).unwrap_err();
    assert!(
        matches!(err, Error::InvalidTransfer { .. }) && err.retry_with_axfr(),
        "{err}"
    );
}

#[test]
fn an_ixfr_answered_with_one_soa_or_the_whole_zone() {
    let base = zone(&zone_text(5, 3, ""));
    // Our SOA alone: up to date.
    let req = request(&apex(), RType::IXFR, 3, Some(&base), None, NOW);
    let soa = answer(
        3,
        RType::IXFR,
        "@ 300 SOA ns hostmaster 5 7200 3600 1209600 60\n",
        10,
    );
    assert!(matches!(
        run(req, Some(Arc::clone(&base)), &soa),
        Ok(Outcome::SoaOnly(5))
    ));
    // The whole zone (our server's answer: no journal, RFC 1995 §4).
    let newer = zone(&zone_text(6, 40, ""));
    let req = request(&apex(), RType::IXFR, 3, Some(&base), None, NOW);
    let messages = serve(&newer, &req, 512);
    let (got, form) = new_zone(run(req, Some(Arc::clone(&base)), &messages));
    assert_eq!(form, Form::Whole);
    assert_eq!(lines(&got), lines(&newer));
}

#[test]
fn hostile_answers_are_errors() {
    let z = zone(&zone_text(7, 50, ""));
    let axfr = || request(&apex(), RType::AXFR, 77, None, None, NOW);
    let good = serve(&z, &axfr(), 512);
    let feed = |messages: &[Vec<u8>]| -> Result<Outcome, Error> {
        let mut inc = Incoming::new(axfr(), None, Limits::default());
        feed_all(&mut inc, messages)?;
        inc.finish()
    };
    let check = |what: &str, r: Result<Outcome, Error>, ok: fn(&Error) -> bool| match r {
        Err(e) if ok(&e) => {}
        other => panic!("{what}: {other:?}"),
    };
    check("garbage", feed(&[b"\x01\x02garbage".to_vec()]), |e| {
        matches!(e, Error::Malformed(_))
    });
    let mut other_id = good.clone();
    other_id[0][1] ^= 1;
    check("another ID", feed(&other_id), |e| {
        matches!(e, Error::Malformed(_))
    });
    check("cut short", feed(&good[..good.len() - 1]), |e| {
        matches!(e, Error::Unfinished)
    });
    let mut extra = good.clone();
    extra.push(good[1].clone());
    check("more after the end", feed(&extra), |e| {
        matches!(e, Error::AfterEnd)
    });
    let mut truncated = good.clone();
    truncated[1][2] |= 2; // TC
    check("TC", feed(&truncated), |e| matches!(e, Error::Truncated));
    let mut refused = good.clone();
    refused[0][3] = (refused[0][3] & 0xf0) | 5;
    check("REFUSED", feed(&refused), |e| {
        matches!(e, Error::Rcode(Rcode::REFUSED))
    });
    // Another zone's transfer.
    let other = answer_in(
        "other.test.",
        77,
        RType::AXFR,
        "@ 300 SOA ns hostmaster 1 1 1 1 1\n@ 300 NS ns\n@ 300 SOA ns hostmaster 1 1 1 1 1\n",
        10,
    );
    check("another zone", feed(&other), |e| {
        matches!(e, Error::WrongZone(_) | Error::Malformed(_))
    });
    // The closing SOA of another serial.
    let mismatch = answer(
        77,
        RType::AXFR,
        "$TTL 300\n@ SOA ns hostmaster 7 1 1 1 1\n@ NS ns\nns A 192.0.2.1\n@ SOA ns hostmaster 8 1 1 1 1\n",
        10,
    );
    check("SOA mismatch", feed(&mismatch), |e| {
        matches!(e, Error::SerialMismatch { first: 7, last: 8 })
    });
    // A record of class CH.
    let mut chaos = answer(
        77,
        RType::AXFR,
        "$TTL 300\n@ SOA ns hostmaster 7 1 1 1 1\n@ NS ns\n",
        10,
    );
    let n = chaos[0].len();
    // The NS record is last: class, TTL, RDLENGTH 2 and a pointer (to the SOA's MNAME).
    assert_eq!(&chaos[0][n - 4..n - 2], &[0, 2]);
    chaos[0][n - 9] = 3;
    check("class CH", feed(&chaos), |e| {
        matches!(e, Error::Malformed(_))
    });
    // Meta and query types (OPT, TSIG, ANY) in the answer section are not zone data: the
    // fuzz target xfr_in found a TSIG kept as a record of the zone.
    let txt = answer(
        77,
        RType::AXFR,
        "$TTL 300\n@ SOA ns hostmaster 7 1 1 1 1\n@ NS ns\nx TXT \"a\"\n@ SOA ns hostmaster 7 1 1 1 1\n",
        10,
    );
    assert!(feed(&txt).is_ok());
    let at = txt[0]
        .windows(4)
        .position(|w| w == [0, 16, 0, 1])
        .expect("the TXT record");
    // A TTL with the top bit set is read as 0 (RFC 2181 §8): the fuzz target xfr_in found
    // one kept as it was, a TTL no zone file may hold.
    let mut big_ttl = txt.clone();
    big_ttl[0][at + 4..at + 8].copy_from_slice(&0xf9_00_00_2cu32.to_be_bytes());
    let Ok(Outcome::Zone { zone, .. }) = feed(&big_ttl) else {
        panic!("a TTL over 2^31 - 1 refused")
    };
    let x: Name = "x.example.test.".parse().unwrap();
    assert_eq!(
        zone.find(x.as_ref())
            .unwrap()
            .rrset(RType::TXT)
            .unwrap()
            .ttl,
        0
    );
    for meta in [41u16, 250, 255] {
        let mut m = txt.clone();
        m[0][at..at + 2].copy_from_slice(&meta.to_be_bytes());
        check("a meta type", feed(&m), |e| {
            matches!(e, Error::Malformed(_))
        });
    }
}

#[test]
fn an_endless_transfer_stops_at_its_limits() {
    let z = zone(&zone_text(7, 50, ""));
    let req = request(&apex(), RType::AXFR, 5, None, None, NOW);
    let messages = serve(&z, &req, 512);
    // Messages that never close: the body again and again.
    let body = &messages[1];
    for (limits, what) in [
        (
            Limits {
                messages: 100,
                ..Limits::default()
            },
            "messages",
        ),
        (
            Limits {
                records: 500,
                ..Limits::default()
            },
            "records",
        ),
        (
            Limits {
                bytes: 20_000,
                ..Limits::default()
            },
            "octets",
        ),
    ] {
        let req = request(&apex(), RType::AXFR, 5, None, None, NOW);
        let mut inc = Incoming::new(req, None, limits);
        inc.feed(&messages[0], NOW).unwrap();
        let mut err = None;
        for _ in 0..10_000 {
            if let Err(e) = inc.feed(body, NOW) {
                err = Some(e);
                break;
            }
        }
        match err {
            Some(Error::Limit(w, _)) => assert_eq!(w, what),
            other => panic!("{what}: {other:?}"),
        }
    }
}

#[test]
fn records_outside_the_zone_are_skipped() {
    let text = "$TTL 300\n$ORIGIN example.test.\n@ SOA ns hostmaster 7 1 1 1 1\n@ NS ns\n\
                ns A 192.0.2.1\nwww.elsewhere. A 192.0.2.9\n@ SOA ns hostmaster 7 1 1 1 1\n";
    let messages = answer_in(".", 5, RType::AXFR, text, 10);
    let req = request(&apex(), RType::AXFR, 5, None, None, NOW);
    let mut inc = Incoming::new(req, None, Limits::default());
    assert_eq!(feed_all(&mut inc, &messages).unwrap(), Progress::Done);
    assert_eq!(inc.skipped(), 1);
    let (z, _) = new_zone(inc.finish());
    assert_eq!(z.record_count(), 3);
}

#[test]
fn soa_answers() {
    let z = zone(&zone_text(2024, 1, ""));
    let mut out = vec![0u8; 4096];
    for key in [None, Some(key())] {
        let mut req = request(&apex(), RType::SOA, 11, None, key.as_ref(), NOW);
        let q = Query::parse(&req.bytes).unwrap();
        let w = crate::respond(
            &crate::ZoneSet::from_shared(vec![Arc::clone(&z)]),
            &q,
            shardns_wire::Transport::Udp,
            &mut out,
        );
        let crate::Reply::Answer(w) = w else {
            panic!("{w:?}")
        };
        let mut len = w.len;
        if let Some(k) = &key {
            let sig = tsig::read(&req.bytes).unwrap().unwrap();
            len = Signer::new(k, &sig).sign(&mut out, len, NOW);
        }
        assert_eq!(
            read_soa(&mut req, &out[..len], NOW).unwrap(),
            SoaAnswer::Serial(2024)
        );
        // Unsigned when it must be signed; another ID.
        if key.is_some() {
            let mut req = request(&apex(), RType::SOA, 11, None, key.as_ref(), NOW);
            assert!(matches!(
                read_soa(&mut req, &out[..w.len], NOW),
                Err(Error::Wire(_))
            ));
        }
        let mut req = request(&apex(), RType::SOA, 12, None, None, NOW);
        assert!(matches!(
            read_soa(&mut req, &out[..w.len], NOW),
            Err(Error::Malformed(_))
        ));
    }
    // TC, and an answer that is not authoritative.
    let mut req = request(&apex(), RType::SOA, 11, None, None, NOW);
    let mut msg = answer(11, RType::SOA, "@ 300 SOA ns hostmaster 1 1 1 1 1\n", 10).remove(0);
    msg[2] |= 2;
    assert_eq!(read_soa(&mut req, &msg, NOW).unwrap(), SoaAnswer::Truncated);
    msg[2] &= !(2 | 4);
    assert!(matches!(
        read_soa(&mut req, &msg, NOW),
        Err(Error::WrongZone(_))
    ));
}

#[test]
fn serial_arithmetic_rfc1982() {
    use crate::xfr::is_newer;
    assert!(is_newer(2, 1));
    assert!(!is_newer(1, 1));
    assert!(!is_newer(1, 2));
    // Wrapping: 0 follows 2^32 - 1; 2^31 - 1 ahead is newer, 2^31 ahead is undefined (no).
    assert!(is_newer(0, u32::MAX));
    assert!(is_newer(5, u32::MAX - 5));
    assert!(is_newer(0x7fff_ffff, 0));
    assert!(!is_newer(0x8000_0000, 0));
    assert!(!is_newer(0, 0x8000_0000));
    assert!(!is_newer(u32::MAX, 0));
}

/// Our own outgoing IXFR in incremental form (a diff, condensed over several versions),
/// read back by our own reader against the client's version: the same zone as the
/// primary's, in messages of every size, signed and not.
#[test]
fn our_incremental_ixfr_is_read_back_as_the_primarys_version() {
    use crate::xfr::diff::{Diff, History};
    let v1 = zone(&zone_text(1, 300, ""));
    let v2 = zone(
        &zone_text(2, 290, "new A 192.0.2.77\n").replace("Mail A 192.0.2.2", "Mail A 192.0.2.3"),
    );
    let v3 = zone(&zone_text(3, 310, "new 60 A 192.0.2.77\n"));
    let mut h = History::new();
    h.push(Arc::new(Diff::compute(&v1, &v2)), 10, 1 << 20);
    h.push(Arc::new(Diff::compute(&v2, &v3)), 10, 1 << 20);
    for (base, size, key) in [
        (&v1, 512, None),
        (&v2, 1024, Some(key())),
        (&v1, 16384, Some(key())),
    ] {
        let diff = h
            .since(base.serial(), v3.serial())
            .expect("the history reaches back");
        let req = request(&apex(), RType::IXFR, 77, Some(base), key.as_ref(), NOW);
        let q = Query::parse(&req.bytes).unwrap();
        let xfr::Read::Transfer(r) = xfr::request(&q) else {
            panic!("not a transfer request")
        };
        let mut t = Transfer::incremental(Arc::clone(&v3), r, diff);
        if let Ok(Some(sig)) = tsig::read(&req.bytes) {
            t.sign_with(Signer::new(&key.clone().unwrap(), &sig));
        }
        t.set_time(NOW);
        let mut messages = Vec::new();
        let mut buf = vec![0u8; size];
        while let Some(n) = t.next_message(&mut buf) {
            messages.push(buf[..n].to_vec());
        }
        assert!(!t.failed());
        let (got, form) = new_zone(run(req, Some(Arc::clone(base)), &messages));
        assert_eq!(form, Form::Incremental);
        assert_eq!(got.serial(), 3);
        assert_eq!(lines(&got), lines(&v3));
    }
}

/// The IXFR read back from our own outgoing one (the diff between `old` and `new`), against
/// `old`: the outcome.
fn ixfr_between(old: &Arc<Zone>, new: &Arc<Zone>) -> Outcome {
    use crate::xfr::diff::Diff;
    let diff = Arc::new(Diff::compute(old, new));
    let req = request(&old.apex().to_name(), RType::IXFR, 78, Some(old), None, NOW);
    let q = Query::parse(&req.bytes).unwrap();
    let xfr::Read::Transfer(r) = xfr::request(&q) else {
        panic!("not a transfer request")
    };
    let mut t = Transfer::incremental(Arc::clone(new), r, diff);
    t.set_time(NOW);
    let mut messages = Vec::new();
    let mut buf = vec![0u8; 16384];
    while let Some(n) = t.next_message(&mut buf) {
        messages.push(buf[..n].to_vec());
    }
    run(req, Some(Arc::clone(old)), &messages).expect("the IXFR applies")
}

/// Each query's answer from both zones: the same RCODE, flags and records.
fn same_answers(a: &Arc<Zone>, b: &Arc<Zone>, queries: &[(&str, RType)]) {
    same_answers_do(a, b, queries, false)
}

/// [`same_answers`], the queries with DO set (RFC 3225) if `dnssec_ok`.
fn same_answers_do(a: &Arc<Zone>, b: &Arc<Zone>, queries: &[(&str, RType)], dnssec_ok: bool) {
    use shardns_wire::Message;
    let sets = [
        crate::ZoneSet::from_shared(vec![Arc::clone(a)]),
        crate::ZoneSet::from_shared(vec![Arc::clone(b)]),
    ];
    for &(qname, qtype) in queries {
        let edns = dnssec_ok.then_some(shardns_testkit::Edns {
            udp_size: 4096,
            version: 0,
            dnssec_ok: true,
        });
        let q = shardns_testkit::query(0x4242, qname, qtype, edns);
        let answers: Vec<(u16, Vec<String>)> = sets
            .iter()
            .map(|set| {
                let mut out = vec![0u8; 65535];
                let o = crate::respond_to_message(set, &q, shardns_wire::Transport::Tcp, &mut out)
                    .expect("a response");
                let m = Message::parse(&out[..o.len]).expect("our response parses");
                let mut v: Vec<String> = [&m.answers, &m.authority, &m.additional]
                    .iter()
                    .enumerate()
                    .flat_map(|(i, s)| s.iter().map(move |r| format!("{i} {r}").to_lowercase()))
                    .collect();
                v.sort();
                (m.header.flags, v)
            })
            .collect();
        assert_eq!(answers[0], answers[1], "{qname} {qtype}");
    }
}

fn zone_at(apex: &str, text: &str) -> Zone {
    let opts = ScanOptions::new(apex.parse().unwrap());
    crate::load_zone_text(text.as_bytes(), Path::new("test.zone"), &opts)
        .unwrap_or_else(|e| panic!("load: {e}"))
        .0
}

/// An IXFR that changes records, TTLs, adds names (with new empty non-terminals, a
/// wildcard, a delegation with its glue) is applied as a patch of our version, not a
/// rebuild: the names it merges again follow the changes (a rebuild would merge all
/// 20,000), and the result has the records and answers of the version built in full.
#[test]
fn an_ixfr_is_applied_as_a_patch_whose_work_follows_the_changes() {
    let old = zone(&zone_text(1, 20_000, "www A 192.0.2.80\n"));
    let mut text = zone_text(
        2,
        20_000,
        "www 600 A 192.0.2.80\nwww A 192.0.2.81\nnew TXT \"new\"\na.b.c.deep AAAA 2001:db8::1\n\
         *.fresh MX 10 Mail\nfresh TXT \"fresh\"\ndeleg NS ns.deleg\nns.deleg A 192.0.2.99\n",
    );
    for i in (0..20_000).step_by(200) {
        let old = format!("h{i} A 10.0.{}.{}\n", i >> 8, i & 255);
        let new = format!("h{i} A 10.1.{}.{}\n", i >> 8, i & 255);
        text = text.replace(&old, &new);
    }
    let text = text.replace("Mail A 192.0.2.2", "Mail A 192.0.2.3\nMail A 192.0.2.4");
    let new = zone(&text);
    let Outcome::Zone {
        zone: got,
        form,
        patched,
        ..
    } = ixfr_between(&old, &new)
    else {
        panic!("no zone")
    };
    assert_eq!(form, Form::Incremental);
    let work = patched.expect("applied as a patch");
    // Changed: the apex (SOA), www, Mail, 100 hosts. Added: new, a.b.c.deep and its three
    // empty ancestors, *.fresh, fresh, deleg, ns.deleg.
    assert_eq!(work.nodes_changed, 103, "{work:?}");
    assert_eq!(work.nodes_added, 9, "{work:?}");
    assert!(work.rrsets_written < 120, "{work:?}");
    assert!(!work.table_grown);
    assert_eq!(got.serial(), 2);
    assert_eq!(lines(&got), lines(&new));
    assert_eq!(got.record_count(), new.record_count());
    assert_eq!(got.node_count(), new.node_count());
    assert_eq!(got.negative_ttl(), new.negative_ttl());
    let got = Arc::new(got);
    same_answers(
        &got,
        &new,
        &[
            ("example.test.", RType::SOA),
            ("www.example.test.", RType::A),
            ("www.example.test.", RType::TXT),
            ("mail.example.test.", RType::A),
            ("h200.example.test.", RType::A),
            ("h201.example.test.", RType::A),
            ("h19999.example.test.", RType::A),
            ("nothere.example.test.", RType::A),
            ("c.deep.example.test.", RType::A),
            ("b.c.deep.example.test.", RType::AAAA),
            ("a.b.c.deep.example.test.", RType::AAAA),
            ("x.fresh.example.test.", RType::MX),
            ("fresh.example.test.", RType::MX),
            ("deleg.example.test.", RType::A),
            ("www.deleg.example.test.", RType::A),
            ("ns.deleg.example.test.", RType::A),
            ("x.wild.example.test.", RType::TXT),
            ("example.test.", RType::MX),
        ],
    );
    // The patched version patched again: still the work of the changes alone.
    let third = zone(
        &text
            .replace(" 2 7200 ", " 3 7200 ")
            .replace("10.1.0.200", "10.2.0.200"),
    );
    let Outcome::Zone {
        zone: again,
        patched,
        ..
    } = ixfr_between(&got, &third)
    else {
        panic!("no zone")
    };
    let work = patched.expect("applied as a patch");
    assert_eq!((work.nodes_changed, work.nodes_added), (2, 0), "{work:?}");
    assert_eq!(lines(&again), lines(&third));
    assert_eq!(again.record_count(), third.record_count());
}

/// Names that lose their last record: a leaf goes, a wildcard goes with its empty parent,
/// a chain of empty ancestors goes with the name below them, a name with names below it
/// stays as an empty non-terminal. Patched (not built), with the records, names and answers
/// of the version built in full.
#[test]
fn an_ixfr_that_removes_names_is_patched() {
    let extra = "mid A 192.0.2.5\nx.mid A 192.0.2.6\na.b.c.deep AAAA 2001:db8::1\n";
    let old = zone(&zone_text(1, 300, extra));
    let text = zone_text(2, 299, "x.mid A 192.0.2.6\n").replace("*.wild TXT \"any\"\n", "");
    let new = zone(&text);
    let Outcome::Zone {
        zone: got, patched, ..
    } = ixfr_between(&old, &new)
    else {
        panic!("no zone")
    };
    let work = patched.expect("applied as a patch");
    // h299, *.wild and wild, a.b.c.deep and its three empty ancestors; mid stays.
    assert_eq!(work.nodes_removed, 7, "{work:?}");
    assert!(work.parents_scanned);
    assert_eq!(lines(&got), lines(&new));
    assert_eq!(got.node_count(), new.node_count());
    let got = Arc::new(got);
    same_answers(
        &got,
        &new,
        &[
            ("h299.example.test.", RType::A),
            ("h298.example.test.", RType::A),
            ("x.wild.example.test.", RType::TXT),
            ("wild.example.test.", RType::TXT),
            ("mid.example.test.", RType::A),
            ("x.mid.example.test.", RType::A),
            ("deep.example.test.", RType::A),
            ("b.c.deep.example.test.", RType::A),
            ("a.b.c.deep.example.test.", RType::AAAA),
        ],
    );
    for id in 0..got.node_count() as u32 {
        let node = got.node(id);
        assert_eq!(got.find(node.name()).map(|n| n.id()), Some(id));
        if let Some(p) = node.parent() {
            assert!(p.id() < id, "{} before its parent", node.name());
        }
    }
}

/// Forty IXFRs in a row, each adding, changing and removing names at random (deep names,
/// wildcards, names with names below them), each patched onto the version the one before
/// patched: every version has the records, names and answers of the same version built
/// in full, and every name is found where its node is. Every other version is patched from
/// its five arrays (as a big zone is kept), the others from one allocation (as a small zone
/// is); each comes out packed, as the full build of so small a zone does.
#[test]
fn forty_patches_in_a_row_match_full_builds() {
    use std::collections::BTreeSet;
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let labels = ["a", "b", "c", "*", "www", "x"];
    let mut owners: Vec<String> = Vec::new();
    for a in labels {
        owners.push(a.to_string());
        for b in ["p", "q", "r"] {
            owners.push(format!("{a}.{b}"));
            owners.push(format!("{a}.x.{b}.deep"));
        }
    }
    let mut recs: BTreeSet<String> = BTreeSet::new();
    for o in owners.iter().step_by(2) {
        recs.insert(format!("{o} TXT \"0\""));
    }
    let text = |serial: u32, recs: &BTreeSet<String>| {
        let mut t = zone_text(serial, 30, "");
        for r in recs {
            t.push_str(r);
            t.push('\n');
        }
        t
    };
    let mut current = zone(&text(1, &recs));
    let mut patched_count = 0;
    for serial in 2..42u32 {
        if serial % 2 == 0 {
            let mut split = Arc::try_unwrap(current).expect("the only reference");
            split.unpack();
            assert!(!split.is_packed());
            current = Arc::new(split);
        } else {
            assert!(current.is_packed());
        }
        for _ in 0..1 + next(6) {
            let o = &owners[next(owners.len() as u64) as usize];
            let r = format!("{o} TXT \"{}\"", next(3));
            if !recs.remove(&r) {
                recs.insert(r);
            }
        }
        let want = zone(&text(serial, &recs));
        let Outcome::Zone {
            zone: got,
            patched,
            changed,
            ..
        } = ixfr_between(&current, &want)
        else {
            panic!("no zone")
        };
        patched_count += usize::from(patched.is_some());
        // The names it says changed are where the versions differ: the difference made at
        // them alone holds the records of the whole difference (in another order).
        let changed = changed.expect("an IXFR names what it changed");
        let records = |d: xfr::diff::Diff| {
            let mut v: Vec<String> = d.records().map(|r| format!("{r:?}")).collect();
            v.sort();
            v
        };
        assert_eq!(
            records(xfr::diff::Diff::compute_at(
                &current,
                &got,
                changed.iter().map(|n| n.as_ref())
            )),
            records(xfr::diff::Diff::compute(&current, &got)),
            "serial {serial}"
        );
        assert!(got.is_packed(), "serial {serial}");
        assert_eq!(lines(&got), lines(&want), "serial {serial}");
        assert_eq!(got.node_count(), want.node_count(), "serial {serial}");
        for id in 0..got.node_count() as u32 {
            let node = got.node(id);
            assert_eq!(got.find(node.name()).map(|n| n.id()), Some(id));
        }
        let mut queries: Vec<String> = owners
            .iter()
            .map(|o| format!("{o}.example.test."))
            .collect();
        queries.extend(
            [
                "q.example.test.",
                "x.q.deep.example.test.",
                "zz.c.example.test.",
            ]
            .map(String::from),
        );
        let queries: Vec<(&str, RType)> =
            queries.iter().map(|q| (q.as_str(), RType::TXT)).collect();
        let got = Arc::new(got);
        same_answers(&got, &want, &queries);
        current = got;
    }
    assert!(patched_count >= 35, "{patched_count} of 40 patched");
}

/// Changes the patch leaves to a full build: a zone cut or a DNAME made at a name that has
/// names below it. The result is the same either way.
#[test]
fn an_ixfr_the_patch_cannot_do_is_built_in_full() {
    let old = zone(&zone_text(1, 50, "a.cut A 192.0.2.7\n"));
    for text in [
        zone_text(2, 50, "a.cut A 192.0.2.7\ncut NS ns.sub\n"),
        zone_text(2, 50, "a.cut A 192.0.2.7\ncut DNAME other.test.\n"),
    ] {
        let new = zone(&text);
        let Outcome::Zone {
            zone: got,
            form,
            patched,
            ..
        } = ixfr_between(&old, &new)
        else {
            panic!("no zone")
        };
        assert_eq!(form, Form::Incremental);
        assert_eq!(patched, None, "{text}");
        assert_eq!(lines(&got), lines(&new));
    }
}

/// An IXFR whose records break the zone's rules is refused by the patch as a build would
/// refuse it.
#[test]
fn a_patch_that_breaks_the_zone_is_an_error() {
    let old = zone(&zone_text(1, 50, "www A 192.0.2.80\n"));
    let req = request(&apex(), RType::IXFR, 9, Some(&old), None, NOW);
    let messages = ixfr_answer(9, 2, &[(1, "", 2, "www CNAME Mail\n")], 100);
    match run(req, Some(Arc::clone(&old)), &messages) {
        Err(e @ Error::InvalidTransfer { .. }) => {
            assert!(e.to_string().contains("CNAME and other data"), "{e}")
        }
        other => panic!("expected a build error, got {other:?}"),
    }
}

/// A zone signed with NSEC, patched: a name goes with its NSEC, a name comes with its NSEC
/// and signature, a signature changes. The denial index is patched (not built) and every
/// answer with DO set, denials included, is the one of the version built in full.
#[test]
fn a_signed_nsec_zone_is_patched_with_its_denial_index() {
    let v1 = zone_at(
        "example.",
        include_str!("../../../tests/data/signed-nsec.zone"),
    );
    assert!(v1.is_signed());
    let sig_a = v1
        .records()
        .find(|r| r.rtype == RType::RRSIG && r.owner.to_string() == "mail.example.")
        .map(|r| r.to_string())
        .unwrap();
    let mut text: String = v1
        .records()
        .filter(|r| r.owner.to_string() != "www.example.")
        .map(|r| {
            let line = r.to_string();
            if r.rtype == RType::SOA {
                line.replacen(" 1 7200 ", " 2 7200 ", 1)
            } else {
                line
            }
        })
        .map(|l| l + "\n")
        .collect();
    assert!(text.contains(" 2 7200 "));
    text.push_str("new.example. 300 IN A 192.0.2.200\n");
    text.push_str("new.example. 300 IN NSEC ns1.example. A RRSIG NSEC\n");
    text.push_str(&sig_a.replacen("mail.example.", "new.example.", 1));
    text.push('\n');
    let v2 = Arc::new(zone_at("example.", &text));
    assert!(v2.is_signed());
    let v1 = Arc::new(v1);
    let Outcome::Zone {
        zone: got, patched, ..
    } = ixfr_between(&v1, &v2)
    else {
        panic!("no zone")
    };
    let work = patched.expect("applied as a patch");
    assert_eq!((work.nodes_added, work.nodes_removed), (1, 1), "{work:?}");
    assert!(got.is_signed());
    assert_eq!(lines(&got), lines(&v2));
    let got = Arc::new(got);
    let mut queries = vec![
        ("www.example.", RType::A),
        ("new.example.", RType::A),
        ("new.example.", RType::TXT),
        ("nothere.example.", RType::A),
        ("o.example.", RType::A),
        ("x.y.example.", RType::A),
        ("zzz.example.", RType::A),
        ("example.", RType::NSEC),
        ("example.", RType::TXT),
    ];
    let names: Vec<String> = v2.records().map(|r| r.owner.to_string()).collect();
    for n in &names {
        queries.push((n.as_str(), RType::A));
        queries.push((n.as_str(), RType::MX));
    }
    same_answers_do(&got, &v2, &queries, true);
}

/// The RRsets patches replace stay in the arrays, unread, until they are a sixteenth of the
/// zone; the patch that goes past it copies them out (none left), and the ones after pile up
/// again. Every version answers as the zone it stands for.
#[test]
fn replaced_rrsets_are_compacted_by_a_patch() {
    let text = |serial: u32, shift: u32| {
        let mut t = zone_text(serial, 0, "");
        for i in 0..400u32 {
            let last = if i < 10 { shift } else { 0 };
            t.push_str(&format!("h{i} A 10.0.{}.{last}\n", i % 250));
        }
        t
    };
    let mut current = zone(&text(1, 0));
    let mut compacted = Vec::new();
    for serial in 2..22u32 {
        let want = zone(&text(serial, serial));
        let Outcome::Zone {
            zone: got, patched, ..
        } = ixfr_between(&current, &want)
        else {
            panic!("no zone")
        };
        assert_eq!(lines(&got), lines(&want));
        let work = patched.expect("patched, never built in full");
        let (unused, size) = got.unused_octets();
        assert!(
            unused <= size / 16,
            "serial {serial}: {unused} of {size} unused"
        );
        if work.compacted {
            assert_eq!(unused, 0, "serial {serial}");
        } else {
            assert!(unused > 0, "serial {serial}");
        }
        compacted.push(work.compacted);
        current = Arc::new(got);
    }
    // About 12 RRsets of ~400 replaced per patch: a sixteenth is reached every few patches.
    let n = compacted.iter().filter(|&&c| c).count();
    assert!((2..10).contains(&n), "{compacted:?}");
}
