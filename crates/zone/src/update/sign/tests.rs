//! Tests: a signed change applied to the signed zone against the full signer's signing of
//! the new zone (every record but the RRSIGs equal, the RRSIGs the same per RRset by key
//! and type covered, every RRSIG verifying), on random updates of zones signed with NSEC,
//! NSEC3 (with and without salt and iterations) and NSEC3 opt-out; and the chain edits of
//! single updates, one by one.

use super::*;
use crate::update::tests::{add, del_rr, del_set, msg, name, zone_of, APEX, T, ZONE};
use crate::update::{update, Outcome, SerialPolicy};
use shardns_dnssec::{
    sign_list, verify_rrsig, Algorithm, Nsec3Params, Policy, RecordList, SigningKey,
};
use shardns_wire::{Name, NameRef, Record};
use std::collections::BTreeMap;

const NOW: u64 = 1_700_000_000;

/// A KSK and a ZSK (ECDSA P-256), or one Ed25519 key as a CSK.
struct Keys {
    ksk: SigningKey,
    zsk: Option<SigningKey>,
}

impl Keys {
    fn new() -> Self {
        Self {
            ksk: SigningKey::generate(Algorithm::EcdsaP256Sha256, 257).unwrap(),
            zsk: Some(SigningKey::generate(Algorithm::EcdsaP256Sha256, 256).unwrap()),
        }
    }
    fn csk() -> Self {
        Self {
            ksk: SigningKey::generate(Algorithm::Ed25519, 257).unwrap(),
            zsk: None,
        }
    }
    fn zone_keys(&self) -> Vec<ZoneKey<'_>> {
        match &self.zsk {
            Some(zsk) => vec![ZoneKey::ksk(&self.ksk), ZoneKey::zsk(zsk)],
            None => vec![ZoneKey::csk(&self.ksk)],
        }
    }
}

fn params(denial: &Denial, now: u64) -> SignParams {
    let mut p = SignParams::new(now, &Policy::default());
    p.denial = denial.clone();
    p.threads = 1;
    p
}

fn nsec3(iterations: u16, salt: &[u8], opt_out: bool) -> Denial {
    Denial::Nsec3 {
        params: Nsec3Params {
            iterations,
            salt: salt.to_vec(),
        },
        opt_out,
    }
}

/// The zone of `records` signed whole.
fn sign_whole(records: &[Record], keys: &Keys, p: &SignParams) -> Zone {
    let apex = name(APEX);
    let list = RecordList::from_records(records);
    let signed = sign_list(&apex, list, &keys.zone_keys(), p, None).expect("signs");
    Zone::build_sorted(apex, signed.list, vec!["signed".into()], Vec::new())
        .expect("builds")
        .0
}

/// The test zone signed whole.
fn signed_zone(keys: &Keys, denial: &Denial) -> Zone {
    let records: Vec<Record> = zone_of(ZONE).records().collect();
    sign_whole(&records, keys, &params(denial, NOW))
}

fn records_of(r: &crate::scan::Records) -> Vec<Record> {
    r.items
        .iter()
        .map(|i| Record {
            owner: r.owner(i).to_name(),
            rtype: i.rtype,
            class: i.class,
            ttl: i.ttl,
            rdata: r.rdata(i).to_vec(),
        })
        .collect()
}

type Data = Vec<(String, RType, u32, Vec<u8>)>;
/// (owner, type covered) -> (key tag, TTL, labels, original TTL) of each RRSIG.
type Sigs = BTreeMap<(String, RType), Vec<(u16, u32, u8, u32)>>;

/// A zone's records but the RRSIGs (owners lower-cased, rdata canonical), and its RRSIGs.
fn split(z: &Zone) -> (Data, Sigs) {
    let mut data = Vec::new();
    let mut sigs = Sigs::new();
    for r in z.records() {
        let owner = r.owner.to_string().to_ascii_lowercase();
        if r.rtype == RType::RRSIG {
            let (f, _) = RrsigFields::parse(&r.rdata).expect("an RRSIG parses");
            sigs.entry((owner, f.type_covered)).or_default().push((
                f.key_tag,
                r.ttl,
                f.labels,
                f.original_ttl,
            ));
        } else {
            data.push((
                owner,
                r.rtype,
                r.ttl,
                crate::update::canonical(r.rtype, &r.rdata),
            ));
        }
    }
    data.sort();
    sigs.values_mut().for_each(|v| v.sort());
    (data, sigs)
}

/// Every RRSIG of `z` verifies over its RRset with the apex DNSKEY of its key tag.
fn verify_all(z: &Zone) -> usize {
    let apex = z.apex_node();
    let dnskeys: Vec<Vec<u8>> = apex
        .rrset(RType::DNSKEY)
        .map(|s| s.rdatas().map(<[u8]>::to_vec).collect())
        .unwrap_or_default();
    let mut checked = 0;
    for id in 0..z.node_count() as u32 {
        let node = z.node(id);
        for set in node.rrsets().filter(|s| s.rtype != RType::RRSIG) {
            let Some(sigs) = node.signatures(&set) else {
                continue;
            };
            for sig in sigs.rdatas() {
                let (f, _) = RrsigFields::parse(sig).unwrap();
                let key = dnskeys
                    .iter()
                    .find(|k| shardns_dnssec::key_tag(k) == f.key_tag)
                    .expect("a DNSKEY of the RRSIG's tag");
                verify_rrsig(sig, node.name(), Class::IN, set.rtype, set.rdatas(), key)
                    .unwrap_or_else(|e| panic!("{} {}: {e}", node.name(), set.rtype));
                checked += 1;
            }
        }
    }
    checked
}

/// `inc` (the signed change applied) holds what `full` (the new zone signed whole) holds.
fn same_signed(inc: &Zone, full: &Zone) -> usize {
    let (data_inc, sigs_inc) = split(inc);
    let (data_full, sigs_full) = split(full);
    if data_inc != data_full {
        let only = |a: &Data, b: &Data| -> Vec<String> {
            a.iter()
                .filter(|r| !b.contains(r))
                .map(|r| format!("{} {} {} {:02x?}", r.0, r.1, r.2, r.3))
                .collect()
        };
        panic!(
            "records differ:\nonly incremental: {:#?}\nonly full: {:#?}",
            only(&data_inc, &data_full),
            only(&data_full, &data_inc)
        );
    }
    assert_eq!(sigs_inc, sigs_full, "RRSIGs differ");
    verify_all(inc)
}

/// One update of a signed zone: its change signed incrementally. `None` when the update is
/// refused or changes nothing; else the signed change, or why it could not be made.
fn signed(
    z: &Zone,
    m: &[u8],
    keys: &Keys,
    denial: &Denial,
    now: u64,
) -> Option<(Change, Result<Change, Error>)> {
    let Outcome::Change(c) = update(m, z, SerialPolicy::Increment, now).ok()? else {
        return None;
    };
    let s = sign_change(z, &c, &keys.zone_keys(), &params(denial, now));
    Some((c, s))
}

/// Runs an update, applies its signed change and checks it against the full signing of the
/// new zone; returns the new version (the full signing's when the change is refused, with
/// the refusal), and the signed change.
fn step(
    z: &Zone,
    m: &[u8],
    keys: &Keys,
    denial: &Denial,
    now: u64,
) -> Option<(Zone, Result<Change, Error>)> {
    let (c, s) = signed(z, m, keys, denial, now)?;
    let full = sign_whole(&records_of(&c.records(z)), keys, &params(denial, now));
    match &s {
        Ok(sc) => {
            let (inc, _) = sc.apply(z).expect("the signed change applies");
            same_signed(&inc, &full);
            // The journal diffs a signed update at the signed change's owners alone: that
            // must be the whole difference.
            let names = sc.owners().map(Name::as_ref);
            let at = crate::xfr::diff::Diff::compute_at(z, &inc, names);
            let whole = crate::xfr::diff::Diff::compute(z, &inc);
            // The same records (in the names' order, not the zone's).
            assert_eq!(
                (at.deleted(), at.added(), at.len()),
                (whole.deleted(), whole.added(), whole.len()),
                "the signed change's names miss a difference"
            );
            Some((inc, s))
        }
        Err(_) => Some((full, s)),
    }
}

/// The one change an accepted update signs, with its check against the full signer.
fn one(z: &Zone, upd: &[T], keys: &Keys, denial: &Denial) -> (Zone, Change) {
    let (n, s) = step(z, &msg(&[], upd), keys, denial, NOW + 60).expect("a change");
    (n, s.expect("signed incrementally"))
}

fn owners(list: &[ChangeRecord], rtype: RType) -> Vec<String> {
    let mut v: Vec<String> = list
        .iter()
        .filter(|r| r.1 == rtype)
        .map(|r| r.0.to_string().to_ascii_lowercase())
        .collect();
    v.sort();
    v
}

/// The RRSIGs of a list: (owner, type covered), sorted.
fn covered(list: &[ChangeRecord]) -> Vec<(String, RType)> {
    let mut v: Vec<(String, RType)> = list
        .iter()
        .filter(|r| r.1 == RType::RRSIG)
        .map(|r| {
            let (f, _) = RrsigFields::parse(&r.3).unwrap();
            (r.0.to_string().to_ascii_lowercase(), f.type_covered)
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

fn next_of(z: &Zone, owner: &str) -> String {
    let node = z.find(name(owner).as_ref()).expect("the name");
    let set = node.rrset(RType::NSEC).expect("an NSEC");
    let rdata = set.rdatas().next().unwrap();
    let (next, _) = NameRef::from_wire_prefix(rdata).unwrap();
    next.to_string()
}

/// The NSEC3 owner of `owner`.
fn hashed(owner: &str, denial: &Denial) -> String {
    let Denial::Nsec3 { params, .. } = denial else {
        panic!("NSEC3")
    };
    let mut h = [0u8; shardns_dnssec::nsec3::HASH_LEN];
    params.hash(name(owner).as_ref(), &mut h);
    let mut l = [0u8; shardns_dnssec::nsec3::LABEL_LEN];
    shardns_dnssec::nsec3::hash_label(&h, &mut l);
    format!("{}.{}", String::from_utf8(l.to_vec()).unwrap(), APEX)
}

#[test]
fn a_name_between_two_others_moves_one_next_pointer() {
    let keys = Keys::new();
    let z = signed_zone(&keys, &Denial::Nsec);
    // mx < my < ns in canonical order.
    assert_eq!(next_of(&z, "mx"), "ns.example.test.");
    let (n, c) = one(
        &z,
        &[add("my", RType::A, 60, "192.0.2.9")],
        &keys,
        &Denial::Nsec,
    );
    assert_eq!(next_of(&n, "mx"), "my.example.test.");
    assert_eq!(next_of(&n, "my"), "ns.example.test.");
    assert_eq!(owners(&c.deleted, RType::NSEC), ["mx.example.test."]);
    assert_eq!(
        owners(&c.added, RType::NSEC),
        ["mx.example.test.", "my.example.test."]
    );
    let name = |s: &str| s.to_string();
    assert_eq!(
        covered(&c.added),
        [
            (name("example.test."), RType::SOA),
            (name("mx.example.test."), RType::NSEC),
            (name("my.example.test."), RType::A),
            (name("my.example.test."), RType::NSEC),
        ]
    );
}

#[test]
fn the_last_record_of_a_name_takes_its_nsec_with_it() {
    let keys = Keys::new();
    for denial in [Denial::Nsec, nsec3(0, &[], false)] {
        let z = signed_zone(&keys, &denial);
        let (n, c) = one(&z, &[del_set("mx", RType::ANY)], &keys, &denial);
        assert!(n.find(name("mx").as_ref()).is_none());
        if denial == Denial::Nsec {
            // a.b.c < mx < ns: a.b.c now points past mx.
            assert_eq!(next_of(&z, "a.b.c"), "mx.example.test.");
            assert_eq!(next_of(&n, "a.b.c"), "ns.example.test.");
            assert_eq!(
                owners(&c.deleted, RType::NSEC),
                ["a.b.c.example.test.", "mx.example.test."]
            );
            assert_eq!(owners(&c.added, RType::NSEC), ["a.b.c.example.test."]);
        } else {
            let gone = hashed("mx", &denial);
            assert!(owners(&c.deleted, RType::NSEC3).contains(&gone));
            assert_eq!(owners(&c.deleted, RType::NSEC3).len(), 2);
            assert_eq!(owners(&c.added, RType::NSEC3).len(), 1);
            assert!(!owners(&c.added, RType::NSEC3).contains(&gone));
        }
        // The MX RRset's signatures go, none come.
        assert!(covered(&c.deleted).contains(&("mx.example.test.".into(), RType::MX)));
        assert!(!covered(&c.added).iter().any(|c| c.1 == RType::MX));
    }
}

#[test]
fn a_type_added_at_a_name_rewrites_its_bitmap_only() {
    let keys = Keys::new();
    for denial in [
        Denial::Nsec,
        nsec3(0, &[], false),
        nsec3(5, &[0xab, 0xcd], false),
    ] {
        let z = signed_zone(&keys, &denial);
        let (_, c) = one(&z, &[add("mx", RType::TXT, 60, "t")], &keys, &denial);
        let (rtype, owner) = match denial {
            Denial::Nsec => (RType::NSEC, "mx.example.test.".to_string()),
            _ => (RType::NSEC3, hashed("mx", &denial)),
        };
        assert_eq!(owners(&c.deleted, rtype), std::slice::from_ref(&owner));
        assert_eq!(owners(&c.added, rtype), std::slice::from_ref(&owner));
        let old = c.deleted.iter().find(|r| r.1 == rtype).unwrap();
        let new = c.added.iter().find(|r| r.1 == rtype).unwrap();
        // The same next pointer, another bitmap.
        assert_ne!(old.3, new.3);
        assert!(new.3.len() > old.3.len() - 1);
    }
}

#[test]
fn names_below_a_delegation_change_no_chain() {
    let keys = Keys::new();
    for denial in [Denial::Nsec, nsec3(0, &[], false), nsec3(0, &[], true)] {
        let z = signed_zone(&keys, &denial);
        let (_, c) = one(
            &z,
            &[
                add("ns2.sub", RType::A, 60, "192.0.2.44"),
                add("deep.ns.sub", RType::TXT, 60, "glue-ish"),
            ],
            &keys,
            &denial,
        );
        assert!(c
            .added
            .iter()
            .all(|r| !matches!(r.1, RType::NSEC | RType::NSEC3)));
        assert!(c
            .deleted
            .iter()
            .all(|r| !matches!(r.1, RType::NSEC | RType::NSEC3)));
        // Only the SOA is signed again.
        assert_eq!(covered(&c.added), [("example.test.".into(), RType::SOA)]);
    }
}

#[test]
fn a_ds_at_a_delegation_is_signed_and_its_ns_is_not() {
    let keys = Keys::new();
    let ds = format!("1000 13 2 {}", "ab".repeat(32));
    for denial in [Denial::Nsec, nsec3(0, &[], false), nsec3(0, &[], true)] {
        let z = signed_zone(&keys, &denial);
        let (n, c) = one(&z, &[add("sub", RType::DS, 60, &ds)], &keys, &denial);
        let sigs = covered(&c.added);
        assert!(sigs.contains(&("sub.example.test.".into(), RType::DS)));
        assert!(!sigs.iter().any(|s| s.1 == RType::NS));
        if denial == nsec3(0, &[], true) {
            // Opt-out: the delegation joins the chain once it is signed, and leaves it.
            let owner = hashed("sub", &denial);
            assert!(owners(&c.added, RType::NSEC3).contains(&owner));
            let (_, c) = one(&n, &[del_set("sub", RType::DS)], &keys, &denial);
            assert!(owners(&c.deleted, RType::NSEC3).contains(&owner));
            assert!(!owners(&c.added, RType::NSEC3).contains(&owner));
        }
    }
}

#[test]
fn nsec3_empty_non_terminals_come_and_go() {
    let keys = Keys::new();
    for denial in [nsec3(0, &[], false), nsec3(2, &[7], true)] {
        let z = signed_zone(&keys, &denial);
        // A name two levels below a new name: two empty non-terminals with it.
        let (n, c) = one(
            &z,
            &[add("x.q.r", RType::A, 60, "192.0.2.5")],
            &keys,
            &denial,
        );
        let new: Vec<String> = ["x.q.r", "q.r", "r"]
            .iter()
            .map(|o| hashed(o, &denial))
            .collect();
        let added = owners(&c.added, RType::NSEC3);
        assert!(new.iter().all(|o| added.contains(o)), "{added:?}");
        // And gone with it.
        let (n, c) = one(&n, &[del_set("x.q.r", RType::ANY)], &keys, &denial);
        let deleted = owners(&c.deleted, RType::NSEC3);
        assert!(new.iter().all(|o| deleted.contains(o)), "{deleted:?}");
        assert!(owners(&c.added, RType::NSEC3)
            .iter()
            .all(|o| !new.contains(o)));
        // a.b.c is the only name below b.c and c: deleting it takes both.
        let old: Vec<String> = ["a.b.c", "b.c", "c"]
            .iter()
            .map(|o| hashed(o, &denial))
            .collect();
        let (_, c) = one(&n, &[del_set("a.b.c", RType::ANY)], &keys, &denial);
        let deleted = owners(&c.deleted, RType::NSEC3);
        assert!(old.iter().all(|o| deleted.contains(o)), "{deleted:?}");
        // With a sibling below c, c stays.
        let (n, _) = one(&n, &[add("z.c", RType::A, 60, "192.0.2.6")], &keys, &denial);
        let (_, c) = one(&n, &[del_set("a.b.c", RType::ANY)], &keys, &denial);
        let deleted = owners(&c.deleted, RType::NSEC3);
        assert!(deleted.contains(&old[0]) && deleted.contains(&old[1]));
        assert!(!deleted.contains(&old[2]), "c still has z.c below it");
    }
}

#[test]
fn a_cut_made_or_unmade_above_names_changes_them_all() {
    let keys = Keys::new();
    for denial in [Denial::Nsec, nsec3(0, &[], false), nsec3(0, &[], true)] {
        let z = signed_zone(&keys, &denial);
        // c becomes a cut: a.b.c below it becomes glue (no RRSIG, no NSEC).
        let (n, c) = one(&z, &[add("c", RType::NS, 60, "ns")], &keys, &denial);
        assert!(covered(&c.deleted).contains(&("a.b.c.example.test.".into(), RType::A)));
        assert!(!covered(&c.added)
            .iter()
            .any(|s| s.0 == "a.b.c.example.test."));
        // c's own NS is not signed (its NSEC, under NSEC, is).
        assert!(!covered(&c.added).iter().any(|s| s.1 == RType::NS));
        if denial == Denial::Nsec {
            assert!(owners(&c.deleted, RType::NSEC).contains(&"a.b.c.example.test.".into()));
        }
        // And back: a.b.c is signed again.
        let (_, c) = one(&n, &[del_set("c", RType::NS)], &keys, &denial);
        assert!(covered(&c.added).contains(&("a.b.c.example.test.".into(), RType::A)));
        // The delegation sub goes, its glue stays and becomes data of the zone.
        let (_, c) = one(&z, &[del_set("sub", RType::NS)], &keys, &denial);
        assert!(covered(&c.added).contains(&("ns.sub.example.test.".into(), RType::A)));
    }
}

#[test]
fn refusals() {
    let keys = Keys::new();
    let z = signed_zone(&keys, &Denial::Nsec);
    let m = msg(&[], &[add("new", RType::A, 60, "192.0.2.1")]);
    // Another denial than the zone's, other keys.
    let (_, s) = signed(&z, &m, &keys, &nsec3(0, &[], false), NOW).unwrap();
    assert_eq!(s, Err(Error::Resign(ResignKind::NotSigned)));
    let other = Keys::new();
    let (_, s) = signed(&z, &m, &other, &Denial::Nsec, NOW).unwrap();
    assert_eq!(s, Err(Error::Resign(ResignKind::Keys)));
    // An SOA MINIMUM that moves every NSEC's TTL.
    let soa = msg(
        &[],
        &[add(
            APEX,
            RType::SOA,
            300,
            "ns hostmaster 20 3600 600 86400 30",
        )],
    );
    let (_, s) = step(&z, &soa, &keys, &Denial::Nsec, NOW).unwrap();
    assert_eq!(s, Err(Error::Resign(ResignKind::DenialTtl)));
    // A change read against another version.
    let (c, _) = signed(&z, &m, &keys, &Denial::Nsec, NOW).unwrap();
    let (n, _) = one(
        &z,
        &[add("x", RType::A, 60, "192.0.2.1")],
        &keys,
        &Denial::Nsec,
    );
    let p = params(&Denial::Nsec, NOW);
    assert_eq!(
        sign_change(&n, &c, &keys.zone_keys(), &p),
        Err(Error::Resign(ResignKind::Stale))
    );
}

/// A fixed xorshift sequence.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A random update of a few records (only additions if `adds`) drawn from a small set of
/// names (the apex, data, empty non-terminals, a delegation and its glue, names to come,
/// a wildcard), types (DS for signed delegations) and forms.
fn random_update(rng: &mut Rng, records: u64, adds: bool) -> Vec<T> {
    const NAMES: [&str; 17] = [
        APEX, "www", "alias", "mx", "a.b.c", "b.c", "c", "z.b.c", "sub", "ns.sub", "x.sub", "new",
        "x.new", "y.x.new", "*.w", "w", "q.r.s",
    ];
    const TYPES: [RType; 8] = [
        RType::A,
        RType::NS,
        RType::CNAME,
        RType::MX,
        RType::TXT,
        RType::DNAME,
        RType::DS,
        RType::AAAA,
    ];
    let text = |t: RType, i: u64| match t {
        RType::A => format!("192.0.2.{}", i % 4),
        RType::AAAA => format!("2001:db8::{}", i % 3),
        RType::NS | RType::CNAME => ["ns", "www", "ns.sub", "new"][i as usize % 4].to_string(),
        RType::MX => format!("{} mx", i % 3),
        RType::TXT => format!("t{}", i % 3),
        RType::DS => format!("{} 13 2 {}", 1000 + i % 2, "ab".repeat(32)),
        _ => ["one.test.", "two.test."][i as usize % 2].to_string(),
    };
    let mut upd = Vec::new();
    for _ in 0..records {
        let owner = NAMES[rng.next() as usize % NAMES.len()];
        let t = TYPES[rng.next() as usize % TYPES.len()];
        let form = if adds { 5 } else { rng.next() % 6 };
        upd.push(match form {
            0 => del_set(owner, t),
            1 => del_set(owner, RType::ANY),
            2 => del_rr(owner, t, &text(t, rng.next())),
            _ => add(owner, t, 60 + (rng.next() % 3) as u32, &text(t, rng.next())),
        });
    }
    upd
}

/// A random zone: the test zone with a random update of a dozen additions, signed whole.
fn random_zone(rng: &mut Rng, keys: &Keys, denial: &Denial) -> Zone {
    let mut z = zone_of(ZONE);
    for _ in 0..3 {
        let m = msg(&[], &random_update(rng, 6, true));
        if let Ok(Outcome::Change(c)) = update(&m, &z, SerialPolicy::Increment, NOW) {
            z = c.apply(&z).expect("applies").0;
        }
    }
    let records: Vec<Record> = z.records().collect();
    sign_whole(&records, keys, &params(denial, NOW))
}

/// Random zones and random updates (a fixed xorshift seed), signed with NSEC, NSEC3
/// without and with salt and iterations, and NSEC3 opt-out, by a KSK and a ZSK or by one
/// CSK: each accepted update's change
/// signed incrementally and applied to the version before, against the full signing of
/// the new zone (`step`); the next update reads the version so made.
#[test]
fn random_updates_sign_as_the_full_signer() {
    let mut rng = Rng(0x2136_4034_u64);
    let (split, csk) = (Keys::new(), Keys::csk());
    let (mut signed_inc, mut rounds) = (0, 0);
    let mut refused: BTreeMap<String, usize> = BTreeMap::new();
    for denial in [
        Denial::Nsec,
        nsec3(0, &[], false),
        nsec3(10, &[0xde, 0xad, 0xbe, 0xef], false),
        nsec3(0, &[], true),
    ] {
        for start in 0..3 {
            let keys = if start == 2 { &csk } else { &split };
            let mut z = match start {
                0 => signed_zone(keys, &denial),
                _ => random_zone(&mut rng, keys, &denial),
            };
            for round in 0..60u64 {
                let records = 1 + rng.next() % 4;
                let m = msg(&[], &random_update(&mut rng, records, false));
                rounds += 1;
                let now = NOW + 60 * round;
                let Some((n, s)) = step(&z, &m, keys, &denial, now) else {
                    continue;
                };
                match s {
                    Ok(_) => signed_inc += 1,
                    Err(e) => {
                        assert!(e.needs_full_signing(), "{e}");
                        let what = format!("{e:?}");
                        let what = what.split('(').next().unwrap_or_default().to_string();
                        *refused.entry(what).or_default() += 1;
                    }
                }
                z = n;
            }
        }
    }
    eprintln!("{rounds} updates: {signed_inc} signed incrementally, signed whole: {refused:?}");
    assert!(signed_inc > 400, "{signed_inc} signed incrementally");
}

/// Not a test: the cost of signing one small update of a 10,000-name zone against signing
/// that zone whole, printed. Run in release mode:
/// `cargo test --release -p shardns-zone --lib cost_of_one_update -- --ignored --nocapture`.
#[test]
#[ignore]
fn cost_of_one_update_on_a_big_zone() {
    use std::time::Instant;
    let keys = Keys::new();
    let mut text = String::from("$TTL 300\n@ SOA ns hostmaster 10 3600 600 86400 60\n@ NS ns\n");
    text.push_str("ns A 192.0.2.1\n");
    for i in 0..10_000 {
        text.push_str(&format!("h{i} A 192.0.2.{}\n", i % 250));
        if i % 10 == 0 {
            text.push_str(&format!("x.d{i} TXT \"below an empty non-terminal\"\n"));
        }
    }
    let records: Vec<Record> = zone_of(&text).records().collect();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    for denial in [Denial::Nsec, nsec3(0, &[], false)] {
        let p = params(&denial, NOW);
        let t = Instant::now();
        let z = sign_whole(&records, &keys, &p);
        let whole_and_build = t.elapsed().as_secs_f64();
        let mut whole = Vec::new();
        for _ in 0..3 {
            let list = RecordList::from_records(&records);
            let apex = name(APEX);
            let t = Instant::now();
            sign_list(&apex, list, &keys.zone_keys(), &p, None).unwrap();
            whole.push(t.elapsed().as_secs_f64());
        }
        for (what, upd) in [
            ("add a name", vec![add("new", RType::A, 60, "192.0.2.7")]),
            ("add a type", vec![add("h77", RType::TXT, 60, "t")]),
            ("delete a name", vec![del_set("h77", RType::ANY)]),
            ("delete below an ENT", vec![del_set("x.d70", RType::ANY)]),
            (
                "make a cut above a name",
                vec![add("d70", RType::NS, 60, "ns")],
            ),
        ] {
            let m = msg(&[], &upd);
            let Outcome::Change(c) = update(&m, &z, SerialPolicy::Increment, NOW).unwrap() else {
                panic!("a change")
            };
            let mut inc = Vec::new();
            let mut out = None;
            for _ in 0..20 {
                let t = Instant::now();
                out = Some(sign_change(&z, &c, &keys.zone_keys(), &p).unwrap());
                inc.push(t.elapsed().as_secs_f64());
            }
            let s = out.unwrap();
            let t = Instant::now();
            s.apply(&z).unwrap();
            let apply = t.elapsed().as_secs_f64();
            eprintln!(
                "{denial:?} {what}: sign_change {:.3} ms ({} RRSIGs made), \
                 sign_list of the zone {:.1} ms (1 thread; {:.1} ms with the zone build), \
                 Change::apply {:.1} ms",
                median(inc) * 1e3,
                s.added.iter().filter(|r| r.1 == RType::RRSIG).count(),
                median(whole.clone()) * 1e3,
                whole_and_build * 1e3,
                apply * 1e3,
            );
        }
    }
}
