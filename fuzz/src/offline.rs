//! `ksr`, `skr` and `pregenerated`: the offline KSK's documents
//! (`shardns_control::signing::offline`): the key signing request the KSK's machine reads,
//! the signed key response the server reads, and the waits kept beside the pregenerated
//! ZSKs. Each input is the file's text (bytes that are not UTF-8 replaced, as a caller that
//! read the file lossily would see them).

use shardns_control::signing::offline::{parse_ksr, parse_skr, write_ksr, write_skr, Pregenerated};
use shardns_dnssec::offline::{check_response, sign_request, Request, RequestPeriod, SignKsr};
use shardns_dnssec::{
    key_tag, Algorithm, CdsParams, CdsPublish, KeyMeta, PrivateKey, Role, SigningKey, StoredKey,
};
use std::path::Path;

/// The KSK the `ksr` target signs with: an Ed25519 key (deterministic signatures), made
/// once with BIND's `dnssec-keygen -a ED25519 -f KSK`; its zone is the request's.
const KSK_SEED: [u8; 32] = [
    0xa6, 0x01, 0xdc, 0x4d, 0x85, 0xbc, 0xef, 0x59, 0x61, 0x8b, 0xa2, 0xc3, 0x1f, 0xbf, 0xca, 0x7b,
    0x8d, 0xca, 0x60, 0x3b, 0x09, 0x1b, 0xbb, 0xf2, 0x50, 0x19, 0xab, 0x13, 0x3b, 0xe7, 0xcf, 0xa0,
];
const KSK_PUBLIC: [u8; 32] = [
    0xbc, 0xd7, 0x1a, 0x57, 0x73, 0xba, 0x4b, 0x47, 0x80, 0x73, 0x4d, 0xac, 0x19, 0x33, 0x1a, 0xf7,
    0xbf, 0xc2, 0x6c, 0x6e, 0xe7, 0xfe, 0x21, 0x27, 0x7b, 0x39, 0x4e, 0xda, 0xaa, 0xc2, 0xe7, 0x15,
];

/// Requests with more periods are only parsed and written back, not signed (each period
/// costs a few signatures; the fuzzer's speed matters more than long requests).
const SIGN_PERIODS_MAX: usize = 16;

fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// A refusal is one message that names the file (and, from the directive reader, the line).
fn refused(e: &str, file: &str) {
    assert!(
        e.starts_with(file),
        "an error that does not name the file: {e:?}"
    );
}

/// `parse` on `text` (the file `file`): `None` if refused (with an error that names the
/// file); an accepted text has no line starting with `$INCLUDE`.
fn accepted<T: std::fmt::Debug>(
    text: &str,
    file: &str,
    parse: impl Fn(&str, &Path) -> Result<T, String>,
) -> Option<T> {
    match parse(text, Path::new(file)) {
        Ok(value) => {
            assert!(!includes(text), "{file}: $INCLUDE accepted: {value:?}");
            Some(value)
        }
        Err(e) => {
            refused(&e, file);
            None
        }
    }
}

/// What `write` makes of `value` reads back the same through `parse` and is written the
/// same again: that text.
fn round_trip<T: PartialEq + std::fmt::Debug>(
    value: &T,
    what: &str,
    write: impl Fn(&T) -> String,
    parse: impl Fn(&str, &Path) -> Result<T, String>,
) -> String {
    let written = write(value);
    let again = parse(&written, Path::new(what))
        .unwrap_or_else(|e| panic!("a written {what} does not read: {e}\n{written}"));
    assert_eq!(
        &again, value,
        "a written {what} reads back otherwise:\n{written}"
    );
    assert_eq!(write(&again), written);
    written
}

/// A line that starts with `$INCLUDE` (any case, after any white space) before the
/// `;; end` line: refused before the zone file reader could open a file. (Elsewhere on a
/// line it is a comment's text or a bad record's; after the end it is not read.)
fn includes(text: &str) -> bool {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .take_while(|w| w[..] != [";;", "end"])
        .any(|w| {
            w.first()
                .is_some_and(|w| w.to_ascii_lowercase().starts_with("$include"))
        })
}

/// `parse_ksr` on the text. Checks: no panic; an error names the file; a text with
/// a line starting with `$INCLUDE` is refused; an accepted request has sorted ZSKs in each period and reads
/// back the same from what `write_ksr` makes of it, which is then written the same. Then
/// the KSK's side: `sign_request` with a fixed KSK (active from 1970 on; CDS and CDNSKEY
/// none, always or delete by the TTL modulo 3) never panics, and a response it makes is
/// written and read back the same and passes the server's `check_response` against the
/// request's own periods (what the server would compute: the same ZSKs).
pub fn ksr(data: &[u8]) {
    ksr_run(data);
}

/// [`ksr`], saying how far the input went: `None` if refused, else the number of periods
/// the KSK side signed (0: not signed).
pub fn ksr_run(data: &[u8]) -> Option<usize> {
    let request = accepted(&text(data), "fuzz.ksr", parse_ksr)?;
    for p in &request.periods {
        assert!(p.zsks.is_sorted(), "ZSKs not sorted: {p:?}");
    }
    round_trip(&request, "KSR", write_ksr, parse_ksr);
    if request.periods.len() > SIGN_PERIODS_MAX {
        return Some(0);
    }
    Some(sign_and_check(&request))
}

fn sign_and_check(request: &Request) -> usize {
    let key = SigningKey::from_private(
        Algorithm::Ed25519,
        257,
        PrivateKey::Ed25519(KSK_SEED),
        &KSK_PUBLIC,
    )
    .expect("the fixed KSK");
    let meta = KeyMeta {
        zone: request.zone.clone(),
        role: Role::Ksk,
        algorithm: Algorithm::Ed25519,
        tag: key_tag(key.dnskey_rdata()),
        created: 0,
        publish: Some(0),
        activate: Some(0),
        inactive: None,
        delete: None,
        sync_publish: None,
        sync_delete: None,
        ds_publish: None,
    };
    let ksk = StoredKey {
        meta,
        key,
        stem: "Kfuzz".into(),
    };
    let publish = match request.ttl % 3 {
        0 => CdsPublish::None,
        1 => CdsPublish::Always,
        _ => CdsPublish::DeleteDnssec,
    };
    let how = SignKsr {
        cds: CdsParams {
            publish,
            ..CdsParams::default()
        },
        backdate: 3600,
        overlap: 86_400,
    };
    let Ok(response) = sign_request(request, &[ksk], &how) else {
        return 0;
    };
    let written = round_trip(&response, "SKR", write_skr, parse_skr);
    if let Err(e) = check_response(&response, &request.periods) {
        panic!("the server refuses what the KSK side signed: {e}\n{written}");
    }
    response.periods.len()
}

/// `parse_skr` on the text. Checks: no panic; an error names the file; a text with
/// a line starting with `$INCLUDE` is refused; an accepted response reads back the same from what `write_skr`
/// makes of it, which is then written the same; `check_response` against the response's
/// own ZSKs (the best timeline it could match) never panics, and when it takes the
/// response, `period_at` finds each period at its start and just before its end.
pub fn skr(data: &[u8]) {
    skr_run(data);
}

/// [`skr`], saying how far the input went: `None` if refused, else whether
/// `check_response` took it.
pub fn skr_run(data: &[u8]) -> Option<bool> {
    let response = accepted(&text(data), "fuzz.skr", parse_skr)?;
    round_trip(&response, "SKR", write_skr, parse_skr);
    let timeline: Vec<RequestPeriod> = response
        .periods
        .iter()
        .map(|p| RequestPeriod {
            from: p.from,
            to: p.to,
            zsks: p.zsks(),
        })
        .collect();
    let taken = check_response(&response, &timeline).is_ok();
    if taken {
        for p in &response.periods {
            assert_eq!(response.period_at(p.from), Some(p));
            assert_eq!(response.period_at(p.to - 1), Some(p));
        }
        assert_eq!(response.period_at(response.end()), None);
    }
    Some(taken)
}

/// `Pregenerated::parse` on the text. Checks: no panic; what `write` makes of it reads
/// back the same; the first line that gives a value wins (the text's values stand before
/// those of another file's text appended, which fill only the ones it lacks).
pub fn pregenerated(data: &[u8]) {
    let text = text(data);
    let p = Pregenerated::parse(&text);
    let written = p.write();
    assert_eq!(Pregenerated::parse(&written), p, "{written:?}");
    let other = Pregenerated {
        dnskey_ttl: Some(1),
        max_ttl: Some(2),
        propagation: Some(3),
    };
    let both = Pregenerated::parse(&format!("{text}\n{}", other.write()));
    assert_eq!(both.dnskey_ttl, p.dnskey_ttl.or(Some(1)));
    assert_eq!(both.max_ttl, p.max_ttl.or(Some(2)));
    assert_eq!(both.propagation, p.propagation.or(Some(3)));
}
