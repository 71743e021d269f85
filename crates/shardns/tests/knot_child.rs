//! Beside knotd as a child (issue 29): the same automated rollovers of `sign.test.`, once
//! signed by knotd and once by us, side by side in the rollover lab (`common::ParentLab`:
//! knotd as the signed parent `test.`, taking the DS by TSIG-signed update), with the same
//! policy, TTLs and timers: the CSK rolled by its lifetime, and the algorithm changed from
//! ECDSAP256SHA256 to ED25519; the DS pushed by the child and checked at the parent,
//! CDS/CDNSKEY in `double-ds` mode. Each child is sampled all along: what it publishes
//! (DNSKEY, CDS, CDNSKEY, the keys signing the DNSKEY RRset and the data), what the parent
//! holds (DS), each key named by its role (`old`, the key before the roll; `new`, the key
//! after), every sample judged (`ldns-verify-zone`, `dnssec-verify`, `delv` from the
//! parent's key). A test fails if a judge rejects either zone, or if the order of the
//! roll's events differs from knotd's other than where docs/DNSSEC.md ("Beside knotd as a
//! child") says we differ on purpose. Both timelines are printed (`-- --nocapture`);
//! missing tools skip the tests with a message (under `CI`, a failure).

mod common;

use common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Every TTL 2 s; with the propagation delays of 1 s each wait of the roll is 3 s.
const CHILD_TTL: u32 = 2;

const SECRET: &str = "a25vdC1jaGlsZC1yb2xsLWtleS1mb3ItdGhlLXRlc3Q=";

/// The CSK's lifetime in the lifetime roll, seconds: the roll starts this long after the
/// first key signs (long enough that knotd's next roll starts after its first is over).
const LIFETIME: u32 = 16;

/// The policy both children follow.
struct Policy {
    /// The algorithm, as both spell it.
    algorithm: &'static str,
    /// The CSK's lifetime, seconds (`None`: no automatic roll).
    lifetime: Option<u32>,
}

/// Our child's config: a CSK, `double-ds`, the DS checked and pushed each second.
fn ours(data: &TempDir, parent: SocketAddr, policy: &Policy) {
    let lifetime = policy
        .lifetime
        .map_or(String::new(), |l| format!("ksk_lifetime = \"{l}s\"\n"));
    data.write(
        "shardns.toml",
        &format!(
            "[server]\nkey_directory = \"keys\"\nallow_transfer = [\"127.0.0.0/8\"]\n\
             [[key]]\nname = \"ds-key\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{SECRET}\"\n\
             [[zone]]\nname = \"sign.test\"\nfile = \"sign.test.zone\"\ndnssec = true\n\
             algorithm = \"{alg}\"\nsingle_type_signing = true\n\
             cds_cdnskey_publish = \"double-ds\"\ndnskey_ttl = 2\n{lifetime}\
             propagation_delay = 1\nparent_ds_ttl = 2\nparent_propagation_delay = 1\n\
             notify = [\"{parent}\"]\nds_check_interval = 1\n\
             ds_push = \"{parent}\"\nds_push_key = \"ds-key\"\n",
            alg = policy.algorithm,
        ),
    );
}

/// knotd's child config, the same policy: `ksk-submission` asking the parent each second,
/// `parent-delay` our `parent_propagation_delay`, `ds-push` with the same key (Knot's DS
/// TTL is the DNSKEY TTL, 2 s, our `parent_ds_ttl`).
fn knots(data: &TempDir, parent: SocketAddr, policy: &Policy) -> String {
    let at = parent.to_string().replace(':', "@");
    format!(
        "key:\n  - id: ds-key\n    algorithm: hmac-sha256\n    secret: {SECRET}\n\
         remote:\n  - id: parent\n    address: {at}\n\
         \x20 - id: parent-push\n    address: {at}\n    key: ds-key\n\
         acl:\n  - id: xfr\n    address: 127.0.0.0/8\n    action: transfer\n\
         submission:\n  - id: sub\n    parent: parent\n    check-interval: 1s\n\
         \x20   parent-delay: 1s\n\
         policy:\n  - id: roll\n    algorithm: {alg}\n    single-type-signing: on\n\
         \x20   dnskey-ttl: 2\n    zone-max-ttl: 2\n    propagation-delay: 1\n\
         \x20   ksk-lifetime: {lifetime}s\n    ksk-submission: sub\n    ds-push: parent-push\n\
         \x20   cds-cdnskey-publish: double-ds\n\
         zone:\n  - domain: sign.test.\n    file: \"{file}\"\n    storage: \"{w}\"\n\
         \x20   zonefile-sync: -1\n    zonefile-load: whole\n    dnssec-signing: on\n\
         \x20   dnssec-policy: roll\n    notify: parent\n    acl: xfr\n",
        alg = policy.algorithm,
        lifetime = policy.lifetime.unwrap_or(0),
        file = data.path().join("sign.test.zone").display(),
        w = data.path().join("knot").display(),
    )
}

/// What the child publishes and the parent holds at one moment, each key named by its
/// role and its algorithm (`old/13`; DNSKEY with its flags, `old:257/13`; CDS and DS with
/// the digest type, `old/13/2`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct State {
    dnskey: BTreeSet<String>,
    keysig: BTreeSet<String>,
    datasig: BTreeSet<String>,
    cds: BTreeSet<String>,
    cdnskey: BTreeSet<String>,
    ds: BTreeSet<String>,
}

impl State {
    /// The record kinds, by name, in the order a timeline prints them.
    fn kinds(&self) -> [(&'static str, &BTreeSet<String>); 6] {
        [
            ("DNSKEY", &self.dnskey),
            ("CDS", &self.cds),
            ("CDNSKEY", &self.cdnskey),
            ("DS", &self.ds),
            ("signs DNSKEY", &self.keysig),
            ("signs data", &self.datasig),
        ]
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (name, set)) in self.kinds().into_iter().enumerate() {
            let items: Vec<&str> = set.iter().map(String::as_str).collect();
            let sep = if i == 0 { "" } else { " | " };
            write!(f, "{sep}{name} {}", items.join(","))?;
        }
        Ok(())
    }
}

/// The keys' roles: `old` the tags signing before the roll, `new` the first other tag
/// seen; `None` for a third (the next roll began: the sampling stops).
struct Roles {
    old: BTreeSet<u16>,
    new: Option<u16>,
}

impl Roles {
    fn name(&mut self, tag: u16) -> Option<&'static str> {
        if self.old.contains(&tag) {
            return Some("old");
        }
        match self.new {
            None => {
                self.new = Some(tag);
                Some("new")
            }
            Some(n) if n == tag => Some("new"),
            Some(_) => None,
        }
    }
}

/// The tags and labels of the child's AXFR and the parent's DS, before roles.
#[derive(Default)]
struct Raw {
    dnskey: BTreeMap<u16, String>,
    keysig: BTreeMap<u16, String>,
    datasig: BTreeMap<u16, String>,
    cds: BTreeMap<u16, String>,
    cdnskey: BTreeMap<u16, String>,
    ds: BTreeMap<u16, String>,
}

fn raw(axfr: &str, ds: &[String]) -> Raw {
    let mut r = Raw::default();
    let key = |f: &[&str]| key_tag_of(&format!("{} {} {} {}", f[4], f[5], f[6], f[7..].concat()));
    for line in axfr.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match (f.get(3).copied(), f.get(4).copied()) {
            (Some("DNSKEY"), _) => _ = r.dnskey.insert(key(&f), format!(":{}/{}", f[4], f[6])),
            (Some("CDNSKEY"), _) if f[4] != "0" => {
                _ = r.cdnskey.insert(key(&f), format!("/{}", f[6]))
            }
            (Some("CDS"), _) if f[4] != "0" => {
                _ = r
                    .cds
                    .insert(f[4].parse().unwrap(), format!("/{}/{}", f[5], f[6]))
            }
            (Some("RRSIG"), Some("DNSKEY")) => {
                _ = r
                    .keysig
                    .insert(f[10].parse().unwrap(), format!("/{}", f[5]))
            }
            (Some("RRSIG"), Some("A")) if f[0] == "www.sign.test." => {
                _ = r
                    .datasig
                    .insert(f[10].parse().unwrap(), format!("/{}", f[5]))
            }
            _ => {}
        }
    }
    for l in ds {
        let f: Vec<&str> = l.split_whitespace().collect();
        r.ds.insert(f[0].parse().unwrap(), format!("/{}/{}", f[1], f[2]));
    }
    r
}

/// The state of `raw` by role; `None` once a key of the next roll shows.
fn state(raw: &Raw, roles: &mut Roles) -> Option<State> {
    let mut named = |m: &BTreeMap<u16, String>| -> Option<BTreeSet<String>> {
        m.iter()
            .map(|(t, l)| Some(format!("{}{l}", roles.name(*t)?)))
            .collect()
    };
    Some(State {
        dnskey: named(&raw.dnskey)?,
        keysig: named(&raw.keysig)?,
        datasig: named(&raw.datasig)?,
        cds: named(&raw.cds)?,
        cdnskey: named(&raw.cdnskey)?,
        ds: named(&raw.ds)?,
    })
}

/// A child's roll: the distinct states in order, each with the seconds since the first
/// sample showing the new key; the keys' tags by role; the number of samples judged.
struct Timeline {
    who: &'static str,
    states: Vec<(f64, State)>,
    roles: String,
    judged: usize,
}

impl Timeline {
    fn print(&self) -> String {
        let mut out = format!(
            "{} ({}; {} samples judged):\n",
            self.who, self.roles, self.judged
        );
        for (t, s) in &self.states {
            let _ = writeln!(out, "  {t:+6.1} s  {s}");
        }
        out
    }
}

/// The child's zone and the parent's DS at one moment: the DS asked before and after the
/// transfer, again (a few times at most) until both answers agree, since our push and our
/// signing may come milliseconds apart, less than a `dig` takes.
fn snapshot(lab: &ParentLab) -> (String, Vec<String>) {
    let mut ds = lab.parent_ds();
    for _ in 0..5 {
        let axfr = axfr_text(lab.listen, "sign.test", 5);
        let after = lab.parent_ds();
        if after == ds {
            return (axfr, ds);
        }
        ds = after;
    }
    panic!("the parent's DS changing all the time: {ds:?}");
}

/// Samples the lab's child from when it has one key and the parent its DS (pushed by the
/// child), the first state; calls `start` (which may start the roll), then samples until
/// the roll is over (the old key gone from the zone and its DS from the parent, or 3 s
/// after the zone is done with it, or a key of the next roll shows), judging every sample.
fn observe(lab: &mut ParentLab, who: &'static str, start: impl FnOnce(&mut ParentLab)) -> Timeline {
    let end = Instant::now() + Duration::from_secs(45);
    let (mut states, mut judged, mut first, mut done_at) = (Vec::new(), 0, None, None);
    let (old, settled) = loop {
        let now = Instant::now();
        let (axfr, ds) = snapshot(lab);
        let r = raw(&axfr, &ds);
        let tags: BTreeSet<u16> = r.dnskey.keys().copied().collect();
        if tags.len() == 1 && r.ds.keys().copied().collect::<BTreeSet<_>>() == tags {
            lab.judge(judged, &axfr);
            break (tags, (now, r));
        }
        assert!(
            Instant::now() < end,
            "{who}: the first DS never at the parent"
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    let mut roles = Roles { old, new: None };
    states.push((settled.0, state(&settled.1, &mut roles).unwrap()));
    start(lab);
    loop {
        let now = Instant::now();
        let (axfr, ds) = snapshot(lab);
        judged += 1;
        lab.judge(judged, &axfr);
        let Some(s) = state(&raw(&axfr, &ds), &mut roles) else {
            break;
        };
        if roles.new.is_some() && first.is_none() {
            first = Some(now);
        }
        let kinds = s.kinds();
        let zone_done = roles.new.is_some()
            && !kinds[..3]
                .iter()
                .chain(&kinds[4..])
                .any(|(_, set)| set.iter().any(|l| l.starts_with("old")));
        if zone_done && done_at.is_none() {
            done_at = Some(now);
        }
        if states.last().map(|(_, l)| l) != Some(&s) {
            states.push((now, s.clone()));
        }
        let ds_done = s.ds.iter().all(|l| l.starts_with("new"));
        if done_at.is_some_and(|d| ds_done || now.duration_since(d).as_secs() >= 3) {
            break;
        }
        assert!(
            now < end,
            "{who}: the roll not over after 45 s:\n{}",
            states
                .iter()
                .map(|(_, s)| format!("{s}\n"))
                .collect::<String>()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let first = first.unwrap_or_else(|| panic!("{who}: no roll seen"));
    let secs = |t: Instant| match t.checked_duration_since(first) {
        Some(d) => d.as_secs_f64(),
        None => -first.duration_since(t).as_secs_f64(),
    };
    Timeline {
        who,
        judged,
        roles: format!("old {:?}, new {:?}", roles.old, roles.new),
        states: states.into_iter().map(|(t, s)| (secs(t), s)).collect(),
    }
}

/// The roll's events, each the index of the first state where it holds: for each record
/// kind, the new key in it, and (if the old key was in it at first) the old key out of it.
fn events(t: &Timeline) -> BTreeMap<String, usize> {
    let mut ev = BTreeMap::new();
    let first = &t.states[0].1;
    for (i, (_, s)) in t.states.iter().enumerate() {
        for ((name, set), (_, at_first)) in s.kinds().into_iter().zip(first.kinds()) {
            if set.iter().any(|l| l.starts_with("new")) {
                ev.entry(format!("new in {name}")).or_insert(i);
            }
            let had_old = at_first.iter().any(|l| l.starts_with("old"));
            if had_old && !set.iter().any(|l| l.starts_with("old")) {
                ev.entry(format!("old out of {name}")).or_insert(i);
            }
        }
    }
    ev
}

/// Where ours and knotd's orders differ: each event only one of them has, and each pair
/// of events one child has strictly before the other and the other strictly after (ties
/// are the sampling's), an event a child never shows counting as after all it shows (so
/// that, say, our old DS gone before the new one is there differs from a knotd that never
/// removes it).
fn differences(ours: &BTreeMap<String, usize>, knot: &BTreeMap<String, usize>) -> Vec<String> {
    let mut out = Vec::new();
    for e in knot.keys().filter(|e| !ours.contains_key(*e)) {
        out.push(format!("only knotd: {e}"));
    }
    for e in ours.keys().filter(|e| !knot.contains_key(*e)) {
        out.push(format!("only ours: {e}"));
    }
    let all: BTreeSet<&String> = ours.keys().chain(knot.keys()).collect();
    let at = |m: &BTreeMap<String, usize>, e: &String| m.get(e).copied().unwrap_or(usize::MAX);
    for a in &all {
        for b in &all {
            if at(ours, a) < at(ours, b) && at(knot, a) > at(knot, b) {
                out.push(format!("ours: {a} before {b}; knotd: after"));
            }
        }
    }
    out
}

/// The differences docs/DNSSEC.md ("Beside knotd as a child") gives as deliberate in the
/// CSK roll: our double-DS roll (the DS first; the new key published, then signing alone)
/// against Knot's (the new key published and signing the DNSKEY RRset first, its DS pushed
/// once it is ready); our push of the set without the old key once it is withdrawn (Knot
/// pushes only when a CDS is added; our push and our signing withdrawing the old key act
/// at the same second, either first). Each may also be a tie, the sampling's: only the
/// first, seconds apart in both, must show.
const CSK_DELIBERATE: &[&str] = &[
    "ours: new in DS before new in DNSKEY; knotd: after",
    "ours: new in DS before new in CDS; knotd: after",
    "ours: new in DS before new in CDNSKEY; knotd: after",
    "ours: new in DS before new in signs DNSKEY; knotd: after",
    "ours: old out of signs DNSKEY before old out of CDS; knotd: after",
    "ours: old out of signs DNSKEY before old out of CDNSKEY; knotd: after",
    "only ours: old out of DS",
    "ours: old out of DS before old out of DNSKEY; knotd: after",
    "ours: old out of DS before old out of CDS; knotd: after",
    "ours: old out of DS before old out of CDNSKEY; knotd: after",
];

/// Runs the roll in both labs at once (ours, then knotd's, each told to start it by its
/// `start`), prints both timelines and the order of their events, and fails if a judge
/// rejected a sample, or if the orders differ other than in `deliberate`, or if `must`
/// (one of them) does not show.
fn side_by_side(
    tag: &str,
    policy: &Policy,
    ours_start: impl FnOnce(&mut ParentLab) + Send,
    knot_start: impl FnOnce(&mut ParentLab) + Send,
    deliberate: &[&str],
    must: Option<&str>,
) {
    let began = Instant::now();
    let Some(mut ours_lab) = ParentLab::start(
        "knot_child",
        &format!("{tag}-ours"),
        SECRET,
        &child_zone(CHILD_TTL),
        |d, p| {
            ours(d, p, policy);
        },
    ) else {
        return;
    };
    let Some(mut knot_lab) = ParentLab::start_knot(
        "knot_child",
        &format!("{tag}-knot"),
        SECRET,
        &child_zone(CHILD_TTL),
        |d, p| knots(d, p, policy),
    ) else {
        return;
    };
    let (o, k) = std::thread::scope(|s| {
        let o = s.spawn(|| observe(&mut ours_lab, "shardns", ours_start));
        let k = s.spawn(|| observe(&mut knot_lab, "knotd", knot_start));
        (o.join(), k.join())
    });
    let (o, k) = match (o, k) {
        (Ok(o), Ok(k)) => (o, k),
        (o, k) => std::panic::resume_unwind(o.err().or(k.err()).unwrap()),
    };
    println!("{}\n{}", o.print(), k.print());
    let (eo, ek) = (events(&o), events(&k));
    println!("events (state index, ours / knotd):");
    for e in eo.keys().chain(ek.keys()).collect::<BTreeSet<_>>() {
        println!("  {e}: {:?} / {:?}", eo.get(e), ek.get(e));
    }
    let diff = differences(&eo, &ek);
    println!("differences: {diff:#?}");
    println!("{tag}: wall time {:.1} s", began.elapsed().as_secs_f64());
    let unexpected: Vec<&String> = diff
        .iter()
        .filter(|d| !deliberate.contains(&d.as_str()))
        .collect();
    assert!(
        unexpected.is_empty(),
        "order differs from knotd's: {unexpected:#?}\n{}\n{}",
        o.print(),
        k.print()
    );
    if let Some(must) = must {
        assert!(
            diff.iter().any(|d| d == must),
            "{must} not seen (docs/DNSSEC.md says it): {diff:#?}"
        );
    }
}

/// The CSK's lifetime starts the roll in both.
#[test]
fn csk_roll_with_ds_push_beside_knotd() {
    let policy = Policy {
        algorithm: "ecdsap256sha256",
        lifetime: Some(LIFETIME),
    };
    let must = Some(CSK_DELIBERATE[0]);
    side_by_side("kc-csk", &policy, |_| {}, |_| {}, CSK_DELIBERATE, must);
}

/// The differences docs/DNSSEC.md gives as deliberate in the algorithm roll: Knot's CDS
/// (and then DS) of the new key alone once it is ready; ours of both keys until the new DS
/// is confirmed and the parent's DS wait passed (the DS change; the old DNSKEY then waits
/// for the old DS to go, as Knot's follows its push). knotd's two steps are up to a second
/// apart, so a tie is possible (the usual case since our DS change): none must show.
const ALGORITHM_DELIBERATE: &[&str] = &[
    "ours: new in DS before old out of CDS; knotd: after",
    "ours: new in DS before old out of CDNSKEY; knotd: after",
];

/// The algorithm changed in the policy (our config reloaded; knotd's rewritten and
/// `knotc reload`) rolls the CSK from ECDSAP256SHA256 to ED25519 in both.
#[test]
fn algorithm_roll_with_ds_push_beside_knotd() {
    let policy = Policy {
        algorithm: "ecdsap256sha256",
        lifetime: None,
    };
    let to = Policy {
        algorithm: "ed25519",
        lifetime: None,
    };
    let ours_start = |lab: &mut ParentLab| {
        ours(&lab.data, lab.parent, &to);
        let out = lab.child().control("reload");
        assert!(out.status.success(), "{out:?}");
    };
    let knot_start = |lab: &mut ParentLab| {
        let conf = lab.data.path().join("knot").join("knot.conf");
        let text = std::fs::read_to_string(&conf).unwrap();
        let from = format!("algorithm: {}\n", policy.algorithm);
        assert!(text.contains(&from), "{text}");
        let text = text.replace(&from, &format!("algorithm: {}\n", to.algorithm));
        std::fs::write(&conf, text).unwrap();
        lab.knotc(&["reload"]);
    };
    side_by_side(
        "kc-alg",
        &policy,
        ours_start,
        knot_start,
        ALGORITHM_DELIBERATE,
        None,
    );
}

/// The comparison itself, without servers: a child of ours that published the new key's
/// CDS before its DNSKEY, or removed the old DS before the new one was there, differs from
/// knotd in a way no list allows.
#[test]
fn a_wrong_order_is_not_allowed() {
    let set = |items: &[&str]| items.iter().map(|s| (*s).to_string()).collect();
    let state = |dnskey: &[&str], cds: &[&str], ds: &[&str]| State {
        dnskey: set(dnskey),
        cds: set(cds),
        ds: set(ds),
        ..State::default()
    };
    let timeline = |states: Vec<State>| Timeline {
        who: "t",
        states: states.into_iter().map(|s| (0.0, s)).collect(),
        roles: String::new(),
        judged: 0,
    };
    let knot = events(&timeline(vec![
        state(&["old"], &["old"], &["old"]),
        state(&["new", "old"], &["old"], &["old"]),
        state(&["new", "old"], &["new", "old"], &["old"]),
        state(&["new", "old"], &["new", "old"], &["new", "old"]),
        state(&["new"], &["new"], &["new", "old"]),
    ]));
    let cds_first = events(&timeline(vec![
        state(&["old"], &["old"], &["old"]),
        state(&["old"], &["new", "old"], &["new", "old"]),
        state(&["new", "old"], &["new", "old"], &["new", "old"]),
        state(&["new"], &["new"], &["new"]),
    ]));
    let ds_gone_first = events(&timeline(vec![
        state(&["old"], &["old"], &["old"]),
        state(&["old"], &["old"], &[]),
        state(&["old"], &["old"], &["new"]),
        state(&["new", "old"], &["new", "old"], &["new"]),
        state(&["new"], &["new"], &["new"]),
    ]));
    for (ours, wrong) in [
        (
            cds_first,
            "ours: new in CDS before new in DNSKEY; knotd: after",
        ),
        (
            ds_gone_first,
            "ours: old out of DS before new in DS; knotd: after",
        ),
    ] {
        let diff = differences(&ours, &knot);
        assert!(diff.iter().any(|d| d == wrong), "{diff:#?}");
        for allowed in [CSK_DELIBERATE, ALGORITHM_DELIBERATE] {
            assert!(!allowed.contains(&wrong));
        }
    }
}
