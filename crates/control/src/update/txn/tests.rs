use super::*;
use crate::update::Inbox;
use shardns_config::Config;
use shardns_wire::Query;
use shardns_zone::update::{update, Outcome, SerialPolicy};
use shardns_zone::{load_zone_text, notify_answer, ZoneChange, ZoneSet};
use std::sync::mpsc::Receiver;
use std::sync::Arc;

const TEXT: &str = "$ORIGIN t.\n$TTL 300\n@ SOA ns host 1 3600 600 86400 300\n@ NS ns\n\
                    ns A 192.0.2.53\nwww A 192.0.2.1\nwww TXT \"hello\"\nalias CNAME www\n";

fn apex() -> Name {
    "t.".parse().unwrap()
}

fn zone() -> Zone {
    load_zone_text(TEXT.as_bytes(), Path::new("t"), &ScanOptions::new(apex()))
        .unwrap()
        .0
}

fn name(s: &str) -> Name {
    s.parse().unwrap()
}

/// A plane serving the zone, and the queue the main thread would drain.
fn plane() -> (Arc<Plane>, Receiver<Job>) {
    let (inbox, rx) = Inbox::new();
    let set = ZoneSet::new(vec![zone()]);
    (
        Arc::new(Plane::new(&Config::default(), set, None, inbox)),
        rx,
    )
}

/// A stand-in for the main thread: each queued job applied (no policy, as the operator's
/// path) and answered; `forced` answers with that rcode instead.
fn main_thread(plane: Arc<Plane>, rx: Receiver<Job>, forced: Option<Rcode>) {
    // `submit` wakes the main thread with SIGUSR1: caught here, not fatal.
    let _ = signal_hook::flag::register(
        signal_hook::consts::SIGUSR1,
        Arc::new(std::sync::atomic::AtomicBool::new(false)),
    );
    std::thread::spawn(move || {
        for job in rx {
            assert!(job.operator);
            let query = Query::parse(&job.message).unwrap();
            let set = plane.zones.load_full();
            let z = set.get(apex().as_ref()).unwrap();
            let rcode = match forced {
                Some(r) => r,
                None => match update(&job.message, z, SerialPolicy::Increment, 1) {
                    Err(r) => r.rcode,
                    Ok(Outcome::Unchanged) => Rcode::NOERROR,
                    Ok(Outcome::Change(c)) => {
                        let (new, _) = c.apply(z).unwrap();
                        plane
                            .zones
                            .store(Arc::new(set.update([ZoneChange::Put(Arc::new(new))])));
                        Rcode::NOERROR
                    }
                },
            };
            let mut out = vec![0u8; 512];
            let w = notify_answer(&query, rcode, &mut out);
            out.truncate(w.len);
            (job.reply)(out);
        }
    });
}

fn run(plane: &Plane, line: &str) -> (bool, String) {
    plane.zone_transaction(line).expect("a transaction command")
}

fn records(plane: &Plane, owner: &str, rtype: RType) -> Vec<String> {
    let set = plane.zones.load();
    let mut v: Vec<String> = present(set.get(apex().as_ref()).unwrap(), &name(owner), Some(rtype))
        .iter()
        .map(show_record)
        .collect();
    v.sort();
    v
}

#[test]
fn records_are_read_as_a_zone_file_reads_them() {
    let z = apex();
    let r = record(&z, "www", "300 A 192.0.2.7").unwrap();
    assert_eq!(
        (r.owner, r.rtype, r.ttl, r.rdata),
        (name("www.t."), RType::A, 300, vec![192, 0, 2, 7])
    );
    // TTL and class optional, `@`, relative names in rdata, quoted strings.
    let r = record(&z, "@", "IN MX 10 mail").unwrap();
    assert_eq!(show_record(&r), "t. 3600 IN MX 10 mail.t.");
    let r = record(&z, "txt.t.", "60 TXT \"hello world\" two").unwrap();
    assert_eq!(show_record(&r), "txt.t. 60 IN TXT \"hello world\" \"two\"");
    let r = record(&z, "x", "1h TYPE65400 \\# 2 abcd").unwrap();
    assert_eq!((r.ttl, r.rdata), (3600, vec![0xab, 0xcd]));
    // Blanks inside a quoted string are kept.
    let r = record(&z, "t", "TXT \"a  b\"\t\"c\"").unwrap();
    assert_eq!(show_record(&r), "t.t. 3600 IN TXT \"a  b\" \"c\"");
    assert_eq!(
        after_words("  set t.  www   300 TXT \"a  b\" \n", 3),
        "300 TXT \"a  b\""
    );
    assert_eq!(after_words("unset t. www", 3), "");
    // Refused: outside the zone, bad rdata, a meta type, no type.
    let e = record(&z, "www.other.", "A 192.0.2.1").unwrap_err();
    assert!(e.contains("outside the zone"), "{e}");
    let e = record(&z, "www", "A 192.0.2.300").unwrap_err();
    assert!(e.contains('A'), "{e}");
    assert!(record(&z, "www", "ANY \\# 0").is_err());
    assert!(record(&z, "www", "300").is_err());
}

#[test]
fn unset_takes_a_name_an_rrset_or_a_record() {
    let z = apex();
    assert_eq!(
        unset(&z, "www", &[], "").unwrap(),
        Op::Unset {
            owner: name("www.t."),
            rtype: None,
            rdata: None
        }
    );
    assert_eq!(
        unset(&z, "www", &["a"], "a").unwrap(),
        Op::Unset {
            owner: name("www.t."),
            rtype: Some(RType::A),
            rdata: None
        }
    );
    let op = unset(&z, "www", &["TXT", "\"hello\""], "TXT \"hello\"").unwrap();
    assert_eq!(show(&op), "unset www.t. IN TXT \"hello\"");
    assert!(unset(&z, "www", &["BOGUS"], "BOGUS").is_err());
    assert!(unset(&z, "www", &["ANY"], "ANY").is_err());
    assert!(unset(&z, "www.example.", &[], "").is_err());
}

#[test]
fn begin_set_unset_diff_abort() {
    let (plane, _rx) = plane();
    assert!(plane.zone_transaction("status t.").is_none());
    let (ok, text) = run(&plane, "set t. www A 192.0.2.9");
    assert!(!ok && text.contains("no open transaction"), "{text}");
    assert!(!run(&plane, "begin nope.").0);
    assert!(run(&plane, "begin t.").0);
    let (ok, text) = run(&plane, "begin t.");
    assert!(
        !ok && text.contains("already has an open transaction"),
        "{text}"
    );
    assert!(run(&plane, "set t. www 300 A 192.0.2.9").0);
    assert!(run(&plane, "set t. new 60 TXT \"a  b\"").0);
    assert!(run(&plane, "unset t. www TXT").0);
    assert!(run(&plane, "unset t. gone").0);
    let (ok, text) = run(&plane, "set t. www 300 A not-an-address");
    assert!(!ok, "{text}");
    let (ok, diff) = run(&plane, "diff t.");
    assert!(ok);
    assert_eq!(
        diff,
        "+www.t. 300 IN A 192.0.2.9\n+new.t. 60 IN TXT \"a  b\"\n\
         -www.t. 300 IN TXT \"hello\"\n-unset gone.t. (every RRset) (not in the zone now)\n"
    );
    let (ok, text) = run(&plane, "abort t.");
    assert!(ok && text.contains("4 changes discarded"), "{text}");
    assert!(!plane.updates.transactions.is_open(&apex()));
    assert!(!run(&plane, "diff t.").0);
    assert!(!run(&plane, "commit t.").0);
    let (ok, text) = run(&plane, "set t.");
    assert!(!ok && text.starts_with("usage"), "{text}");
}

#[test]
fn commit_applies_one_update_and_closes_the_transaction() {
    let (plane, rx) = plane();
    main_thread(Arc::clone(&plane), rx, None);
    assert!(run(&plane, "begin t.").0);
    assert!(run(&plane, "set t. www 300 A 192.0.2.9").0);
    assert!(run(&plane, "set t. new 300 AAAA 2001:db8::1").0);
    assert!(run(&plane, "unset t. www A 192.0.2.1").0);
    let (ok, text) = run(&plane, "commit t.");
    assert!(ok, "{text}");
    assert!(text.contains("committed 3 changes"), "{text}");
    assert_eq!(
        records(&plane, "www.t.", RType::A),
        ["www.t. 300 IN A 192.0.2.9"]
    );
    assert_eq!(
        records(&plane, "new.t.", RType::AAAA),
        ["new.t. 300 IN AAAA 2001:db8::1"]
    );
    assert_eq!(plane.zones.load().get(apex().as_ref()).unwrap().serial(), 2);
    assert!(!plane.updates.transactions.is_open(&apex()));
    // A record set and unset again in the same transaction is no reason to refuse.
    assert!(run(&plane, "begin t.").0);
    assert!(run(&plane, "set t. alias 300 A 192.0.2.5").0);
    assert!(run(&plane, "unset t. alias A").0);
    assert!(run(&plane, "commit t.").0);
}

#[test]
fn a_commit_the_rules_would_ignore_or_refuse_changes_nothing_and_stays_open() {
    let (plane, rx) = plane();
    main_thread(Arc::clone(&plane), rx, None);
    assert!(run(&plane, "begin t.").0);
    assert!(run(&plane, "set t. other 300 A 192.0.2.8").0);
    // A CNAME beside www's A and TXT: the RFC ignores it; the operator is told.
    assert!(run(&plane, "set t. www 300 CNAME other").0);
    let (ok, text) = run(&plane, "commit t.");
    assert!(!ok, "{text}");
    assert!(
        text.contains("www.t. 300 IN CNAME other.t. would be ignored"),
        "{text}"
    );
    assert!(text.contains("CNAME beside other data"), "{text}");
    assert!(text.contains("stays open"), "{text}");
    assert!(records(&plane, "other.t.", RType::A).is_empty());
    assert_eq!(plane.zones.load().get(apex().as_ref()).unwrap().serial(), 1);
    // Data beside alias's CNAME, likewise.
    assert!(run(&plane, "unset t. www CNAME").0);
    assert!(run(&plane, "set t. alias 300 TXT \"x\"").0);
    let (ok, text) = run(&plane, "commit t.");
    assert!(!ok && text.contains("other data beside a CNAME"), "{text}");
    // The apex NS and SOA are never deleted: said so.
    assert!(run(&plane, "unset t. alias TXT").0);
    assert!(run(&plane, "unset t. @ NS").0);
    let (ok, text) = run(&plane, "commit t.");
    assert!(
        !ok && text.contains("the apex NS RRset is never emptied"),
        "{text}"
    );
    assert!(run(&plane, "set t. @ NS ns2").0);
    let (ok, text) = run(&plane, "commit t.");
    assert!(
        !ok && text.contains("the apex NS RRset is never emptied"),
        "{text}"
    );
    assert!(run(&plane, "abort t.").0);
    // Replacing the apex NS is fine, when the new one comes first.
    assert!(run(&plane, "begin t.").0);
    assert!(run(&plane, "set t. @ NS ns2").0);
    assert!(run(&plane, "unset t. @ NS ns").0);
    assert!(run(&plane, "unset t. @ SOA").0);
    let (ok, text) = run(&plane, "commit t.");
    assert!(
        !ok && text.contains("the apex SOA is never deleted"),
        "{text}"
    );
    assert!(run(&plane, "abort t.").0);
    assert!(run(&plane, "begin t.").0);
    assert!(run(&plane, "set t. other 300 A 192.0.2.8").0);
    // Not there: no error.
    assert!(run(&plane, "unset t. nothing A").0);
    // Mended, it goes through.
    let (ok, text) = run(&plane, "commit t.");
    assert!(ok, "{text}");
    assert_eq!(
        records(&plane, "other.t.", RType::A),
        ["other.t. 300 IN A 192.0.2.8"]
    );
}

#[test]
fn the_main_threads_rcode_is_reported() {
    let (plane, rx) = plane();
    main_thread(Arc::clone(&plane), rx, Some(Rcode::REFUSED));
    assert!(run(&plane, "begin t.").0);
    assert!(run(&plane, "set t. www 300 A 192.0.2.9").0);
    let (ok, text) = run(&plane, "commit t.");
    assert!(!ok, "{text}");
    assert!(text.contains("commit refused: REFUSED"), "{text}");
    assert!(plane.updates.transactions.is_open(&apex()));
    assert!(run(&plane, "abort t.").0);
}

#[test]
fn the_update_message_holds_the_changes_in_order() {
    let z = apex();
    let ops = vec![
        Op::Set(record(&z, "a", "300 A 192.0.2.1").unwrap()),
        unset(&z, "b", &[], "").unwrap(),
        unset(&z, "c", &["MX"], "MX").unwrap(),
        unset(&z, "d", &["A", "192.0.2.4"], "A 192.0.2.4").unwrap(),
    ];
    let req = message(&z, &ops, 7, 0).unwrap();
    let m = req.message();
    // ZOCOUNT 1, PRCOUNT 0, UPCOUNT 4, ADCOUNT 0.
    assert_eq!(&m[4..12], &[0, 1, 0, 0, 0, 4, 0, 0]);
    assert_eq!(m[2] >> 3 & 0x0f, 5, "opcode UPDATE");
    // Too many changes for one message.
    let big: Vec<Op> = (0..3000)
        .map(|i| Op::Set(record(&z, &format!("n{i}"), "TXT \"0123456789012345678901\"").unwrap()))
        .collect();
    assert!(message(&z, &big, 1, 0).unwrap_err().contains("65535"));
}
