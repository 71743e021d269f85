//! The RFC 7583 sampler: the zone as served, taken every few hundred milliseconds through
//! a rollover (restarts included), and the parent's DS set as the test changed it; then
//! every DS set, DNSKEY RRset and RRSIG a cache may hold together within their TTLs is
//! checked to validate, and every signature served to have been within its validity when
//! it was served.

use std::collections::{BTreeMap, BTreeSet};

/// What a cache may take from one version of the zone: the DNSKEY tags, the tags that sign
/// the DNSKEY RRset, those that sign each other RRset (`owner type`), the CDS tags.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct State {
    pub(crate) keys: BTreeSet<u16>,
    pub(crate) key_signers: BTreeSet<u16>,
    pub(crate) data: BTreeMap<String, BTreeSet<u16>>,
    pub(crate) cds: BTreeSet<u16>,
    /// The algorithms of the DNSKEYs and of the RRSIGs, for the messages.
    pub(crate) algorithms: (BTreeSet<u8>, BTreeSet<u8>),
}

/// One look at the zone: when it was asked and answered (seconds since the lab started),
/// and what it served (`None`: nothing, the server was down).
#[derive(Clone, Debug)]
pub(crate) struct Sample {
    pub(crate) start: f64,
    pub(crate) end: f64,
    pub(crate) state: Option<State>,
}

/// A change of the parent's DS set (tags), made between `start` and `end`.
#[derive(Clone, Debug)]
pub(crate) struct DsChange {
    pub(crate) start: f64,
    pub(crate) end: f64,
    pub(crate) tags: BTreeSet<u16>,
}

/// The key tag of DNSKEY rdata given as text (flags, protocol, algorithm, base64 key),
/// RFC 4034 appendix B.
pub(crate) fn key_tag(fields: &[&str]) -> u16 {
    let mut wire = Vec::new();
    wire.extend_from_slice(&fields[0].parse::<u16>().unwrap().to_be_bytes());
    wire.push(fields[1].parse().unwrap());
    wire.push(fields[2].parse().unwrap());
    wire.extend(base64(&fields[3..].concat()));
    let mut acc: u32 = 0;
    for (i, b) in wire.iter().enumerate() {
        acc += if i & 1 == 0 {
            u32::from(*b) << 8
        } else {
            u32::from(*b)
        };
    }
    acc += (acc >> 16) & 0xffff;
    (acc & 0xffff) as u16
}

fn base64(text: &str) -> Vec<u8> {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let (mut out, mut acc, mut bits) = (Vec::new(), 0u32, 0);
    for c in text.bytes().filter(|&c| c != b'=') {
        let v = A.iter().position(|&a| a == c).expect("base64") as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// The state of an AXFR as [`super::common::axfr_text`] gives it; the signatures outside
/// their validity at `now` (seconds since 1970) go to `bad`.
pub(crate) fn state_of(axfr: &str, now: u64, bad: &mut Vec<String>) -> State {
    let mut s = State::default();
    for line in axfr.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.get(3).copied() {
            Some("DNSKEY") => {
                s.keys.insert(key_tag(&f[4..]));
                s.algorithms.0.insert(f[6].parse().unwrap());
            }
            Some("CDS") => {
                s.cds.insert(f[4].parse().unwrap());
            }
            Some("RRSIG") => {
                let tag: u16 = f[10].parse().unwrap();
                s.algorithms.1.insert(f[5].parse().unwrap());
                let (exp, inc) = (time_secs(f[8]), time_secs(f[9]));
                if now < inc || now > exp {
                    bad.push(format!("served at {now} outside its validity: {line}"));
                }
                if f[4] == "DNSKEY" {
                    s.key_signers.insert(tag);
                } else {
                    let rrset = format!("{} {}", f[0], f[4]);
                    s.data.entry(rrset).or_default().insert(tag);
                }
            }
            _ => {}
        }
    }
    s
}

/// A `YYYYMMDDHHMMSS` time (UTC) as seconds since 1970.
pub(crate) fn time_secs(t: &str) -> u64 {
    let n = |r: std::ops::Range<usize>| t[r].parse::<i64>().unwrap();
    let (y, m, d) = (n(0..4), n(4..6), n(6..8));
    // Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    (days * 86_400 + n(8..10) * 3600 + n(10..12) * 60 + n(12..14)) as u64
}

/// A version of the zone as a cache may have got it: from the start of the last look
/// before it was first seen to the end of the first look after it was last seen.
#[derive(Debug)]
struct Epoch<'a> {
    from: f64,
    until: f64,
    state: &'a State,
}

fn epochs(samples: &[Sample]) -> Vec<Epoch<'_>> {
    let mut out: Vec<Epoch<'_>> = Vec::new();
    let mut i = 0;
    while i < samples.len() {
        let Some(state) = &samples[i].state else {
            i += 1;
            continue;
        };
        let mut j = i;
        while samples.get(j + 1).and_then(|s| s.state.as_ref()) == Some(state) {
            j += 1;
        }
        out.push(Epoch {
            from: if i == 0 {
                f64::NEG_INFINITY
            } else {
                samples[i - 1].start
            },
            until: samples.get(j + 1).map_or(f64::INFINITY, |s| s.end),
            state,
        });
        i = j + 1;
    }
    out
}

/// Whether a cache may hold something of `a` (kept `ttl_a` seconds) and of `b` at once.
fn together(a: (f64, f64), ttl_a: f64, b: (f64, f64), ttl_b: f64) -> bool {
    a.0 < b.1 + ttl_b && b.0 < a.1 + ttl_a
}

/// Every combination a cache may hold within the TTLs (`ttl`: the zone's, `ds_ttl`: the
/// parent's DS) that would not validate: a DS set with no key of it in a DNSKEY RRset
/// that key signs, or an RRset none of whose signatures' keys is in a DNSKEY RRset.
pub(crate) fn failures(samples: &[Sample], ds: &[DsChange], ttl: f64, ds_ttl: f64) -> Vec<String> {
    let zone = epochs(samples);
    let mut bad = Vec::new();
    for (i, d) in ds.iter().enumerate() {
        let span = (d.start, ds.get(i + 1).map_or(f64::INFINITY, |n| n.end));
        for k in &zone {
            if !together(span, ds_ttl, (k.from, k.until), ttl) {
                continue;
            }
            let chain = d
                .tags
                .iter()
                .any(|t| k.state.keys.contains(t) && k.state.key_signers.contains(t));
            if !chain {
                bad.push(format!(
                    "DS {:?} (parent from {:.1} s) with the DNSKEY RRset of {:.1}..{:.1} s \
                     ({:?}, signed by {:?}): no secure entry point",
                    d.tags, d.start, k.from, k.until, k.state.keys, k.state.key_signers
                ));
            }
        }
    }
    for k in &zone {
        for r in &zone {
            if !together((k.from, k.until), ttl, (r.from, r.until), ttl) {
                continue;
            }
            for (rrset, signers) in &r.state.data {
                if signers.is_disjoint(&k.state.keys) {
                    bad.push(format!(
                        "{rrset} of {:.1}..{:.1} s signed by {signers:?}, DNSKEY RRset of \
                         {:.1}..{:.1} s holds {:?}",
                        r.from, r.until, k.from, k.until, k.state.keys
                    ));
                }
            }
        }
    }
    bad.dedup();
    bad
}

#[test]
fn the_sampler_finds_a_signature_of_a_key_no_cache_has() {
    // Its own check: a ZSK that signs before its DNSKEY could reach the caches fails.
    let state = |keys: &[u16], zsk: u16| State {
        keys: keys.iter().copied().collect(),
        key_signers: [1].into(),
        data: [("www.x. A".to_string(), [zsk].into())].into(),
        ..State::default()
    };
    let at = |t: f64, s: State| Sample {
        start: t,
        end: t + 0.05,
        state: Some(s),
    };
    let ds = [DsChange {
        start: f64::NEG_INFINITY,
        end: f64::NEG_INFINITY,
        tags: [1].into(),
    }];
    // Published at 1, signing at 5 (TTL 2), seen all along: fine.
    let slow = [
        at(0.0, state(&[1, 2], 2)),
        at(1.0, state(&[1, 2, 3], 2)),
        at(2.0, state(&[1, 2, 3], 2)),
        at(3.0, state(&[1, 2, 3], 2)),
        at(4.0, state(&[1, 2, 3], 2)),
        at(5.0, state(&[1, 2, 3], 3)),
    ];
    assert!(failures(&slow, &ds, 2.0, 2.0).is_empty());
    // Signing one second after it is published: a cache holds the old DNSKEY RRset.
    let fast = [
        at(0.0, state(&[1, 2], 2)),
        at(1.0, state(&[1, 2, 3], 2)),
        at(2.0, state(&[1, 2, 3], 3)),
    ];
    assert!(!failures(&fast, &ds, 2.0, 2.0).is_empty());
    // A DS set without a key of the DNSKEY RRset.
    let other = [DsChange {
        start: f64::NEG_INFINITY,
        end: f64::NEG_INFINITY,
        tags: [9].into(),
    }];
    assert!(!failures(&slow, &other, 2.0, 2.0).is_empty());
    assert_eq!(key_tag(&["256", "3", "13", "AAAA"]), 256 + 3 * 256 + 13);
}
