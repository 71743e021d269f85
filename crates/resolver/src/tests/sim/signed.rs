//! A signed test world, made at test time with `shardns_dnssec` (fresh ECDSA P-256 keys,
//! one CSK per zone) and answered by shardns's authoritative code (`shardns_zone::respond`),
//! which serves RRSIGs, DS at delegations and NSEC/NSEC3 proofs:
//!
//! | zone | server | what |
//! |---|---|---|
//! | `.` | 10.0.0.1 | NSEC, DS of `test.`; the trust anchor is its key as DS |
//! | `test.` | 10.0.1.1 | NSEC, the delegations below with their DS (or none) |
//! | `secure.test.` | 10.0.3.1 | NSEC: answers, a CNAME, a wildcard |
//! | `nsec3.test.` | 10.0.3.1 | NSEC3 (0 iterations, no salt): answers, a wildcard |
//! | `optout.test.` | 10.0.3.1 | NSEC3 Opt-Out, with the unsigned delegation `unsigned.optout.test.` (10.0.3.2) |
//! | `insecure.test.` | 10.0.3.1 | unsigned, no DS |
//! | `expired.test.` | 10.0.3.1 | signatures expired 10 days ago |
//! | `wrongds.test.` | 10.0.3.1 | the DS in `test.` is of another key |
//! | `nosig.test.` | 10.0.3.1 | signed, but `www` served without its RRSIGs |
//! | `forged.test.` | 10.0.3.1 | `www` A changed after signing (its RRSIG kept) |
//! | `badnsec3.test.` | 10.0.3.1 | NSEC3, the record covering `nothere` removed |
//! | `unknownalg.test.` | 10.0.3.1 | the DS names algorithm 16 only (unsupported: insecure) |
//! | `keytrap.test.` | 10.0.3.1 | 30 extra DNSKEYs with the CSK's tag; `www` A with 12 bad RRSIGs of that tag |
//! | `rsasha1.test.` | 10.0.3.1 | RSASHA1 (5), NSEC, signed by BIND (`tests/data`); the RRSIG of `alias` spoiled |
//! | `nsec3rsasha1.test.` | 10.0.3.1 | RSASHA1-NSEC3-SHA1 (7), NSEC3, signed by BIND; its DS is SHA-1 |
//! | `badsoa.test.` | 10.0.3.1 | NSEC; the SOA changed after signing (its RRSIG kept) |
//! | `badsoa3.test.` | 10.0.3.1 | NSEC3; the SOA changed after signing (its RRSIG kept) |
//! | `alg253.test.` | 10.0.3.1 | the DS names algorithm 253 (PRIVATEOID) only: insecure |
//! | `digest99.test.` | 10.0.3.1 | the DS has digest type 99 (unassigned) only: insecure |

use std::path::Path;

use shardns_dnssec::nsec3::HASH_LEN;
use shardns_dnssec::sign::{sign_rrset, RrsetToSign, Scratch};
use shardns_dnssec::{
    ds_rdata, key_tag, nsec3_hash, sign_zone, Algorithm, Denial, DigestType, Nsec3Params,
    SignParams, SigningKey, ZoneKey,
};
use shardns_wire::text::base32hex_decode;
use shardns_wire::{Class, Name, RType, Record};
use shardns_zone::{load_zone_text, ScanOptions, ZoneSet};

use super::n;
use super::net::{records, soa_line, Net};

/// When the world is signed (and the simulated wall clock): 2023-11-14.
pub(crate) const SIGNED_AT: u32 = 1_700_000_000;

const DAY: u32 = 86_400;

fn key() -> SigningKey {
    SigningKey::generate(Algorithm::EcdsaP256Sha256, 257).unwrap()
}

fn params(denial: Denial, inception: u32, expiration: u32) -> SignParams {
    SignParams {
        denial,
        inception,
        expiration,
        dnskey_ttl: None,
        serial: None,
        threads: 1,
        jitter: Default::default(),
        foreign: Default::default(),
        cds: shardns_dnssec::CdsParams::default(),
    }
}

fn unsigned(apex: &str, text: &str) -> Vec<Record> {
    records(&format!("{}\n{text}", soa_line(apex)))
}

fn sign(
    apex: &str,
    text: &str,
    key: &SigningKey,
    denial: Denial,
    window: (u32, u32),
) -> Vec<Record> {
    sign_zone(
        &n(apex),
        unsigned(apex, text),
        &[ZoneKey::csk(key)],
        &params(denial, window.0, window.1),
    )
    .unwrap()
    .records
}

fn ds_line(apex: &str, key: &SigningKey) -> String {
    let rd = ds_rdata(n(apex).as_ref(), key.dnskey_rdata(), DigestType::Sha256).unwrap();
    Record {
        owner: n(apex),
        rtype: RType::DS,
        class: Class::IN,
        ttl: 86_400,
        rdata: rd,
    }
    .to_string()
}

fn zone_set(zones: &[(&str, &[Record])]) -> ZoneSet {
    let built = zones
        .iter()
        .map(|(apex, recs)| {
            let text: String = recs.iter().map(|r| format!("{r}\n")).collect();
            load_zone_text(text.as_bytes(), Path::new(apex), &ScanOptions::new(n(apex)))
                .unwrap_or_else(|e| panic!("{apex}: {e}"))
                .0
        })
        .collect();
    ZoneSet::new(built)
}

fn nsec3_ok() -> Denial {
    Denial::Nsec3 {
        params: Nsec3Params::default(),
        opt_out: false,
    }
}

/// The records a DNSKEY with `tag` needs: flags 256, protocol 3, algorithm 13 and a 64-octet
/// "public key" that is no point of the curve, its last word chosen for the tag.
fn colliding_key(tag: u16, seed: u8) -> Vec<u8> {
    let mut rd = vec![1, 0, 3, 13];
    rd.extend((0..64u8).map(|i| i.wrapping_mul(31) ^ seed));
    for w in 0..=u16::MAX {
        rd[66..68].copy_from_slice(&w.to_be_bytes());
        if key_tag(&rd) == tag {
            return rd;
        }
    }
    unreachable!("some word gives every tag")
}

/// `keytrap.test.`: the DNSKEY RRset holds the CSK and 30 keys with its tag (re-signed by
/// the CSK, so the key set itself is valid), and `www` A carries 12 RRSIGs of that tag
/// that verify with none of them.
fn keytrap(apex: &str, key: &SigningKey, window: (u32, u32)) -> Vec<Record> {
    let text = format!(
        "{apex} 3600 NS ns.{apex}\nns.{apex} 3600 A 10.0.3.1\nwww.{apex} 300 A 192.0.2.66\n"
    );
    let mut recs = sign(apex, &text, key, Denial::Nsec, window);
    let tag = key.tag();
    let owner = n(apex);
    let mut scratch = Scratch::default();
    let mut dnskeys: Vec<Vec<u8>> = vec![key.dnskey_rdata().to_vec()];
    dnskeys.extend((0..30).map(|i| colliding_key(tag, i)));
    scratch.rrset.clear();
    for k in &dnskeys {
        scratch.rrset.push(RType::DNSKEY, k);
    }
    scratch.rrset.finish();
    let sig = sign_rrset(
        key,
        RrsetToSign {
            owner: owner.as_ref(),
            class: Class::IN,
            rtype: RType::DNSKEY,
            ttl: 3600,
        },
        owner.as_ref(),
        window.0,
        window.1,
        &mut scratch,
    )
    .unwrap();
    let www = n(&format!("www.{apex}"));
    recs.retain(|r| {
        !(r.rtype == RType::DNSKEY
            || (r.rtype == RType::RRSIG && r.rdata[..2] == RType::DNSKEY.0.to_be_bytes())
            || (r.rtype == RType::RRSIG && r.owner == www))
    });
    let rec = |owner: &Name, rtype, rdata| Record {
        owner: owner.clone(),
        rtype,
        class: Class::IN,
        ttl: 3600,
        rdata,
    };
    recs.extend(dnskeys.into_iter().map(|k| rec(&owner, RType::DNSKEY, k)));
    recs.push(rec(&owner, RType::RRSIG, sig));
    // The A RRset's RRSIGs: right fields, garbage signatures.
    let good = recs
        .iter()
        .find(|r| r.owner == www && r.rtype == RType::A)
        .unwrap();
    scratch.rrset.clear();
    scratch.rrset.push(RType::A, &good.rdata);
    scratch.rrset.finish();
    let real = sign_rrset(
        key,
        RrsetToSign {
            owner: www.as_ref(),
            class: Class::IN,
            rtype: RType::A,
            ttl: 300,
        },
        owner.as_ref(),
        window.0,
        window.1,
        &mut scratch,
    )
    .unwrap();
    for i in 0..12u8 {
        let mut bad = real.clone();
        let at = bad.len() - 1 - usize::from(i);
        bad[at] ^= 0x5a;
        recs.push(Record {
            ttl: 300,
            ..rec(&www, RType::RRSIG, bad)
        });
    }
    recs
}

/// Removes the NSEC3 record whose span covers `name`'s hash.
fn break_nsec3_chain(recs: &mut Vec<Record>, name: &str) {
    let mut h = [0u8; HASH_LEN];
    nsec3_hash(n(name).as_ref(), &[], 0, &mut h);
    recs.retain(|r| {
        if r.rtype != RType::NSEC3 {
            return true;
        }
        let mut owner = Vec::new();
        base32hex_decode(r.owner.as_ref().first_label(), &mut owner).unwrap();
        // Algorithm, flags, iterations (2), salt length 0, hash length, next hash.
        let next = &r.rdata[6..6 + HASH_LEN];
        let covers = if owner.as_slice() < next {
            owner.as_slice() < &h[..] && &h[..] < next
        } else {
            &h[..] > owner.as_slice() || &h[..] < next
        };
        !covers
    });
}

/// A zone signed by another signer (`tests/data`, BIND's `-O full` output), as records.
fn fixture(text: &str) -> Vec<Record> {
    let lines: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with(';') && !l.trim().is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    records(&lines)
}

/// The DS (digest `dt`) of the zone key in `zone`'s records.
fn fixture_ds(apex: &str, zone: &[Record], dt: DigestType) -> String {
    let key = zone
        .iter()
        .find(|r| r.rtype == RType::DNSKEY)
        .expect("a DNSKEY");
    let rd = ds_rdata(n(apex).as_ref(), &key.rdata, dt).unwrap();
    Record {
        owner: n(apex),
        rtype: RType::DS,
        class: Class::IN,
        ttl: 86_400,
        rdata: rd,
    }
    .to_string()
}

/// Changes the SOA serial after signing: the SOA's RRSIG no longer verifies.
fn break_soa(recs: &mut [Record]) {
    for r in recs.iter_mut().filter(|r| r.rtype == RType::SOA) {
        let at = r.rdata.len() - 20;
        r.rdata[at + 3] ^= 0x40;
    }
}

/// The signed world (see the module documentation) and its trust anchor (the root's DS).
pub(crate) fn signed_world() -> (Net, String) {
    let now = SIGNED_AT;
    let valid = (now - DAY, now + 30 * DAY);
    let [root_k, test_k, secure_k, nsec3_k, optout_k, expired_k, wrongds_k, other_k, nosig_k, forged_k, badnsec3_k, alg_k, keytrap_k, badsoa_k, badsoa3_k, alg253_k, digest_k] =
        core::array::from_fn(|_| key());
    let mut rsasha1 = fixture(include_str!("../data/rsasha1.zone"));
    // One signature spoiled: RSASHA1 signatures are checked, not taken on trust.
    for r in &mut rsasha1 {
        if r.rtype == RType::RRSIG
            && r.owner == n("alias.rsasha1.test.")
            && r.rdata[..2] == RType::CNAME.0.to_be_bytes()
        {
            let last = r.rdata.len() - 1;
            r.rdata[last] ^= 0x01;
        }
    }
    let nsec3rsasha1 = fixture(include_str!("../data/nsec3rsasha1.zone"));

    let children = [
        "secure",
        "nsec3",
        "optout",
        "insecure",
        "expired",
        "wrongds",
        "nosig",
        "forged",
        "badnsec3",
        "unknownalg",
        "keytrap",
        "rsasha1",
        "nsec3rsasha1",
        "badsoa",
        "badsoa3",
        "alg253",
        "digest99",
    ];
    let mut test_text = String::from(
        "test. 86400 NS ns1.nic.test.\nns1.nic.test. 86400 A 10.0.1.1\na.root.test. 86400 A 10.0.0.1\n",
    );
    for c in children {
        test_text.push_str(&format!(
            "{c}.test. 86400 NS ns.{c}.test.\nns.{c}.test. 86400 A 10.0.3.1\n"
        ));
    }
    for (c, k) in [
        ("secure", &secure_k),
        ("nsec3", &nsec3_k),
        ("optout", &optout_k),
        ("expired", &expired_k),
        ("wrongds", &other_k),
        ("nosig", &nosig_k),
        ("forged", &forged_k),
        ("badnsec3", &badnsec3_k),
        ("keytrap", &keytrap_k),
        ("badsoa", &badsoa_k),
        ("badsoa3", &badsoa3_k),
    ] {
        test_text.push_str(&ds_line(&format!("{c}.test."), k));
        test_text.push('\n');
    }
    test_text.push_str(&fixture_ds("rsasha1.test.", &rsasha1, DigestType::Sha256));
    test_text.push('\n');
    test_text.push_str(&fixture_ds(
        "nsec3rsasha1.test.",
        &nsec3rsasha1,
        DigestType::Sha1,
    ));
    test_text.push('\n');
    // Algorithm 253 (PRIVATEOID) and digest type 99 (unassigned): nothing to validate with.
    test_text.push_str(&format!(
        "alg253.test. 86400 DS {} 253 2 {}\n",
        alg253_k.tag(),
        "CD".repeat(32)
    ));
    let digest99 = ds_line("digest99.test.", &digest_k);
    let mut f: Vec<&str> = digest99.split_whitespace().collect();
    let at = f.iter().position(|t| *t == "DS").unwrap() + 3;
    f[at] = "99";
    test_text.push_str(&format!("{}\n", f.join(" ")));
    // Algorithm 16 (Ed448), which aws-lc-rs has not: the zone counts as unsigned.
    test_text.push_str(&format!(
        "unknownalg.test. 86400 DS {} 16 2 {}\n",
        alg_k.tag(),
        "AB".repeat(32)
    ));
    let root_text = format!(
        ". 86400 NS a.root.test.\ntest. 172800 NS ns1.nic.test.\nns1.nic.test. 172800 A 10.0.1.1\n{}\n",
        ds_line("test.", &test_k)
    );
    let root = sign(".", &root_text, &root_k, Denial::Nsec, valid);
    let test = sign("test.", &test_text, &test_k, Denial::Nsec, valid);

    let leaf = |c: &str| {
        format!(
            "{c}.test. 3600 NS ns.{c}.test.\nns.{c}.test. 3600 A 10.0.3.1\nwww.{c}.test. 300 A 192.0.2.1\n\
             *.wild.{c}.test. 300 A 192.0.2.2\nalias.{c}.test. 300 CNAME www.{c}.test.\n"
        )
    };
    let z = |c: &str| format!("{c}.test.");
    let secure = sign(
        &z("secure"),
        &leaf("secure"),
        &secure_k,
        Denial::Nsec,
        valid,
    );
    let nsec3 = sign(&z("nsec3"), &leaf("nsec3"), &nsec3_k, nsec3_ok(), valid);
    let optout_text = format!(
        "{}unsigned.optout.test. 3600 NS ns.unsigned.optout.test.\nns.unsigned.optout.test. 3600 A 10.0.3.2\n",
        leaf("optout")
    );
    let optout = sign(
        &z("optout"),
        &optout_text,
        &optout_k,
        Denial::Nsec3 {
            params: Nsec3Params::default(),
            opt_out: true,
        },
        valid,
    );
    let insecure = unsigned(&z("insecure"), &leaf("insecure"));
    let expired = sign(
        &z("expired"),
        &leaf("expired"),
        &expired_k,
        Denial::Nsec,
        (now - 30 * DAY, now - 10 * DAY),
    );
    let wrongds = sign(
        &z("wrongds"),
        &leaf("wrongds"),
        &wrongds_k,
        Denial::Nsec,
        valid,
    );
    let mut nosig = sign(&z("nosig"), &leaf("nosig"), &nosig_k, Denial::Nsec, valid);
    nosig.retain(|r| !(r.rtype == RType::RRSIG && r.owner == n("www.nosig.test.")));
    let mut forged = sign(
        &z("forged"),
        &leaf("forged"),
        &forged_k,
        Denial::Nsec,
        valid,
    );
    for r in &mut forged {
        if r.rtype == RType::A && r.owner == n("www.forged.test.") {
            r.rdata = vec![6, 6, 6, 6];
        }
    }
    let mut badnsec3 = sign(
        &z("badnsec3"),
        &leaf("badnsec3"),
        &badnsec3_k,
        nsec3_ok(),
        valid,
    );
    break_nsec3_chain(&mut badnsec3, "nothere.badnsec3.test.");
    let unknownalg = sign(
        &z("unknownalg"),
        &leaf("unknownalg"),
        &alg_k,
        Denial::Nsec,
        valid,
    );
    let keytrap = keytrap(&z("keytrap"), &keytrap_k, valid);
    let mut badsoa = sign(
        &z("badsoa"),
        &leaf("badsoa"),
        &badsoa_k,
        Denial::Nsec,
        valid,
    );
    break_soa(&mut badsoa);
    let mut badsoa3 = sign(
        &z("badsoa3"),
        &leaf("badsoa3"),
        &badsoa3_k,
        nsec3_ok(),
        valid,
    );
    break_soa(&mut badsoa3);
    let alg253 = sign(
        &z("alg253"),
        &leaf("alg253"),
        &alg253_k,
        Denial::Nsec,
        valid,
    );
    let digest99 = sign(
        &z("digest99"),
        &leaf("digest99"),
        &digest_k,
        Denial::Nsec,
        valid,
    );
    let unsigned_child = unsigned(
        "unsigned.optout.test.",
        "unsigned.optout.test. 3600 NS ns.unsigned.optout.test.\nns.unsigned.optout.test. 3600 A 10.0.3.2\n\
         www.unsigned.optout.test. 300 A 192.0.2.3\n",
    );

    let mut net = Net::default();
    net.add("10.0.0.1", vec![]).auth = Some(zone_set(&[(".", &root)]));
    net.add("10.0.1.1", vec![]).auth = Some(zone_set(&[("test.", &test)]));
    net.add("10.0.3.1", vec![]).auth = Some(zone_set(&[
        ("secure.test.", &secure),
        ("nsec3.test.", &nsec3),
        ("optout.test.", &optout),
        ("insecure.test.", &insecure),
        ("expired.test.", &expired),
        ("wrongds.test.", &wrongds),
        ("nosig.test.", &nosig),
        ("forged.test.", &forged),
        ("badnsec3.test.", &badnsec3),
        ("unknownalg.test.", &unknownalg),
        ("keytrap.test.", &keytrap),
        ("rsasha1.test.", &rsasha1),
        ("nsec3rsasha1.test.", &nsec3rsasha1),
        ("badsoa.test.", &badsoa),
        ("badsoa3.test.", &badsoa3),
        ("alg253.test.", &alg253),
        ("digest99.test.", &digest99),
    ]));
    net.add("10.0.3.2", vec![]).auth =
        Some(zone_set(&[("unsigned.optout.test.", &unsigned_child)]));
    (net, ds_line(".", &root_k))
}
