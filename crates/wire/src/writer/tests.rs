use super::*;
use crate::message::Message;
use crate::Name;

fn n(s: &str) -> Name {
    s.parse().unwrap()
}

#[test]
fn owner_equal_to_the_question_is_a_pointer_to_it() {
    for (q, owner) in [("a.example.", "a.example."), ("a.example.", "A.EXAMPLE.")] {
        let mut buf = [0u8; 512];
        let mut w = MessageWriter::new(&mut buf, 512);
        w.put_question(n(q).as_ref(), RType::A, Class::IN).unwrap();
        let at = w.len();
        w.put_name(n(owner).as_ref(), true).unwrap();
        assert_eq!(&w.buf[at..w.len()], &[0xc0, 12], "{owner} after {q}");
    }
    // The root name is one octet: never replaced by a two-octet pointer.
    let mut buf = [0u8; 512];
    let mut w = MessageWriter::new(&mut buf, 512);
    w.put_question(n(".").as_ref(), RType::NS, Class::IN)
        .unwrap();
    let at = w.len();
    w.put_name(n(".").as_ref(), true).unwrap();
    assert_eq!(&w.buf[at..w.len()], &[0]);
    // A longer name that starts like the question is not mistaken for it.
    let mut buf = [0u8; 512];
    let mut w = MessageWriter::new(&mut buf, 512);
    w.put_question(n("a.example.").as_ref(), RType::A, Class::IN)
        .unwrap();
    let at = w.len();
    w.put_name(n("x.a.example.").as_ref(), true).unwrap();
    assert_eq!(&w.buf[at..w.len()], &[1, b'x', 0xc0, 12]);
}

#[test]
fn transfer_compression_keeps_each_names_case() {
    let mut buf = [0u8; 512];
    let mut w = MessageWriter::new(&mut buf, 512);
    w.set_transfer(true);
    w.put_question(n("A.Example.").as_ref(), RType::AXFR, Class::IN)
        .unwrap();
    let at = w.len();
    // Same letters, other case: written out (only the shared root is common).
    w.put_name(n("a.example.").as_ref(), true).unwrap();
    assert_eq!(&w.buf[at..w.len()], b"\x01a\x07example\x00");
    // Same case as the second: a pointer to it.
    let at2 = w.len();
    w.put_name(n("x.a.example.").as_ref(), true).unwrap();
    assert_eq!(&w.buf[at2..w.len()], &[1, b'x', 0xc0, at as u8]);
}

#[test]
fn transfer_owners_compress_against_the_previous_owner_even_with_a_full_table() {
    let mut buf = [0u8; 16384];
    let mut w = MessageWriter::new(&mut buf, 16384);
    w.set_transfer(true);
    w.put_question(n("z.").as_ref(), RType::AXFR, Class::IN)
        .unwrap();
    // Fill the compression table with names that share nothing with what follows.
    for i in 0..MAX_COMP {
        let name = n(&format!("f{i}.filler{i}."));
        w.put_record(
            Section::Answer,
            name.as_ref(),
            RType::A,
            Class::IN,
            0,
            &[0; 4],
        )
        .unwrap();
    }
    assert_eq!(w.ncomp, MAX_COMP);
    let rec = |w: &mut MessageWriter<'_>, owner: &str| {
        let at = w.len();
        let owner = n(owner);
        w.put_record(
            Section::Answer,
            owner.as_ref(),
            RType::A,
            Class::IN,
            0,
            &[0; 4],
        )
        .unwrap();
        at
    };
    let first = rec(&mut w, "h1.zone.example.");
    // Same owner: a pointer to the previous one.
    let at = rec(&mut w, "h1.zone.example.");
    assert_eq!(&w.buf[at..at + 2], &(0xc000 | first as u16).to_be_bytes());
    // A sibling: its first label, then a pointer into the previous owner.
    let at = rec(&mut w, "h2.zone.example.");
    assert_eq!(
        &w.buf[at..at + 5],
        &[2, b'h', b'2', 0xc0 | (first >> 8) as u8, (first + 3) as u8]
    );
    // A sibling of that sibling: the pointer follows the chain to the same suffix.
    let at = rec(&mut w, "h3.zone.example.");
    assert_eq!(
        &w.buf[at + 3..at + 5],
        &(0xc000 | (first + 3) as u16).to_be_bytes()
    );
    // In a normal answer the table decides: a sibling whose whole name was written
    // before is a pointer to that.
    let mut buf2 = [0u8; 512];
    let mut w2 = MessageWriter::new(&mut buf2, 512);
    w2.put_question(n("z.").as_ref(), RType::NS, Class::IN)
        .unwrap();
    let ns2 = w2.len();
    w2.put_name(n("ns2.z.").as_ref(), true).unwrap();
    rec(&mut w2, "ns1.z.");
    let at = rec(&mut w2, "ns2.z.");
    assert_eq!(&w2.buf[at..at + 2], &(0xc000 | ns2 as u16).to_be_bytes());
    // Unrelated: written out (the table is full), then the next one points at it.
    let other = rec(&mut w, "a.other.");
    assert_eq!(w.buf[other], 1);
    let at = rec(&mut w, "a.other.");
    assert_eq!(&w.buf[at..at + 2], &(0xc000 | other as u16).to_be_bytes());
    // Another case is another name in a transfer: written out in its own case.
    let at = rec(&mut w, "A.OTHER.");
    assert_eq!(&w.buf[at..at + 3], &[1, b'A', 5]);
    // Everything reads back as written.
    let msg = w.finish(&Header::default()).to_vec();
    let m = Message::parse(&msg).unwrap();
    let owners: Vec<String> = m
        .answers
        .iter()
        .skip(MAX_COMP)
        .map(|r| r.owner.to_string())
        .collect();
    let want = ["h1.zone.example.", "h1.zone.example.", "h2.zone.example."];
    assert_eq!(owners[..3], want);
    assert_eq!(
        owners[3..],
        ["h3.zone.example.", "a.other.", "a.other.", "A.OTHER."]
    );
}

#[test]
fn no_pointer_past_fourteen_bits() {
    for pad in 0..16 {
        let mut buf = vec![0u8; 20000];
        let mut w = MessageWriter::new(&mut buf, 20000);
        w.set_transfer(true);
        w.put_question(n("q.").as_ref(), RType::AXFR, Class::IN)
            .unwrap();
        // Padding so that the next owner starts a few octets below 0x4000.
        let fill = 0x4000 - 8 - w.len() - pad - 2 - 10;
        w.put_record(
            Section::Answer,
            n("q.").as_ref(),
            RType::NULL,
            Class::IN,
            0,
            &vec![0; fill],
        )
        .unwrap();
        for owner in ["abcdefghij.zone.", "abcdefghik.zone.", "abcdefghik.zone."] {
            let o = n(owner);
            w.put_record(Section::Answer, o.as_ref(), RType::A, Class::IN, 0, &[0; 4])
                .unwrap();
        }
        let msg = w.finish(&Header::default()).to_vec();
        let m = Message::parse(&msg).unwrap_or_else(|e| panic!("pad {pad}: {e:?}"));
        let owners: Vec<String> = m.answers[1..].iter().map(|r| r.owner.to_string()).collect();
        assert_eq!(
            owners,
            ["abcdefghij.zone.", "abcdefghik.zone.", "abcdefghik.zone."],
            "pad {pad}"
        );
    }
}

#[test]
fn compression_points_at_question_and_suffixes() {
    let mut buf = [0u8; 512];
    let mut w = MessageWriter::new(&mut buf, 512);
    w.put_question(n("www.Example.com.").as_ref(), RType::A, Class::IN)
        .unwrap();
    let after_q = w.len();
    w.put_record(
        Section::Answer,
        n("www.example.COM.").as_ref(),
        RType::A,
        Class::IN,
        60,
        &[1, 2, 3, 4],
    )
    .unwrap();
    // Owner is a pointer to offset 12.
    assert_eq!(w.len() - after_q, 2 + 10 + 4);
    let before = w.len();
    w.put_record(
        Section::Authority,
        n("example.com.").as_ref(),
        RType::NS,
        Class::IN,
        60,
        n("ns1.example.com.").as_wire(),
    )
    .unwrap();
    // Owner: pointer (2); rdata: "ns1" label (4) + pointer (2).
    assert_eq!(w.len() - before, 2 + 10 + 6);
    let msg = w.finish(&Header::default()).to_vec();
    let m = Message::parse(&msg).unwrap();
    assert_eq!(m.answers[0].owner, n("www.example.com."));
    assert_eq!(
        Name::from_wire(&m.authority[0].rdata).unwrap(),
        n("ns1.example.com.")
    );
    // Question case is kept; answer owner reads back with the question's case.
    assert_eq!(m.questions[0].qname.to_string(), "www.Example.com.");
    assert_eq!(m.answers[0].owner.to_string(), "www.Example.com.");
}

#[test]
fn full_rolls_back_whole_record() {
    let mut buf = [0u8; 512];
    let mut w = MessageWriter::new(&mut buf, 40);
    w.put_question(n("a.example.").as_ref(), RType::TXT, Class::IN)
        .unwrap();
    let len = w.len();
    let big = [5u8; 30];
    assert_eq!(
        w.put_record(
            Section::Answer,
            n("a.example.").as_ref(),
            RType(65280),
            Class::IN,
            1,
            &big
        ),
        Err(Full)
    );
    assert_eq!(w.len(), len);
    assert_eq!(w.count(Section::Answer), 0);
    let msg = w.finish(&Header::default());
    assert_eq!(Message::parse(msg).unwrap().answers.len(), 0);
}

#[test]
fn opt_record() {
    let mut buf = [0u8; 512];
    let mut w = MessageWriter::new(&mut buf, 512);
    w.put_opt(1232, 1, 0, true, &[]).unwrap();
    let msg = w.finish(&Header::default()).to_vec();
    let m = Message::parse(&msg).unwrap();
    let opt = m.opt().unwrap();
    assert_eq!(opt.class.0, 1232);
    assert_eq!(opt.ttl, 0x0100_8000);
    assert_eq!(m.rcode().0, 16);
}

/// A record as `put_record` wrote it before owners were compared with the previous one:
/// the owner through the whole table walk.
fn put_record_by_walk(w: &mut MessageWriter<'_>, owner: &Name, rtype: RType, rdata: &[u8]) {
    w.put_name(owner.as_ref(), true).unwrap();
    w.put_u16(rtype.0).unwrap();
    w.put_u16(Class::IN.0).unwrap();
    w.put_u32(300).unwrap();
    let len_at = w.len;
    w.put_u16(0).unwrap();
    compose(rtype, rdata, w).unwrap();
    let rdlen = (w.len - len_at - 2) as u16;
    w.buf[len_at..len_at + 2].copy_from_slice(&rdlen.to_be_bytes());
    w.counts[1] += 1;
}

#[test]
fn answer_owners_are_the_octets_of_the_table_walk() {
    // Repeated owners in every shape an answer has: the question's name again (other case
    // too), an RRset of several records and its signatures, an NSEC3-like owner, a name
    // written before but not just before, a name an NS rdata put in the table, the root,
    // then enough names to fill the table and pass the pointers' 14 bits.
    let ns = |s: &str| n(s).as_wire().to_vec();
    let mut seq: Vec<(Name, RType, Vec<u8>)> = vec![
        (n("a.example."), RType::A, vec![192, 0, 2, 1]),
        (n("A.EXAMPLE."), RType::A, vec![192, 0, 2, 2]),
        (n("example."), RType::NS, ns("ns.example.")),
        (n("example."), RType::NS, ns("NS2.example.")),
        (n("ns.example."), RType::A, vec![192, 0, 2, 3]),
        (n("ns2.example."), RType::A, vec![192, 0, 2, 4]),
        (n("ns2.example."), RType::A, vec![192, 0, 2, 5]),
        (
            n("0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.example."),
            RType::TXT,
            vec![1, b'x'],
        ),
        (
            n("0P9MHAVEQVM6T7VBL5LOP2U3T2RP3TOM.example."),
            RType::TXT,
            vec![1, b'y'],
        ),
        (n("a.example."), RType::TXT, vec![1, b'z']),
        (n("."), RType::TXT, vec![0]),
        (n("."), RType::TXT, vec![0]),
        (n("example."), RType::TXT, vec![0]),
    ];
    for i in 0..300 {
        let owner = n(&format!("host{i}.sub{}.example.", i % 7));
        let big = vec![0u8; 120];
        seq.push((owner.clone(), RType::TXT, big.clone()));
        if i % 3 == 0 {
            seq.push((owner, RType::TXT, vec![0]));
        }
    }
    seq.push((n("a.example."), RType::A, vec![192, 0, 2, 1]));
    seq.push((n("a.example."), RType::A, vec![192, 0, 2, 1]));
    let mut ours = vec![0u8; 65535];
    let mut walk = vec![0u8; 65535];
    let mut again = vec![0u8; 65535];
    let mut w1 = MessageWriter::new(&mut ours, 65535);
    let mut w2 = MessageWriter::new(&mut walk, 65535);
    // w3 writes a record whose owner is the previous one's with `put_record_same_owner`.
    let mut w3 = MessageWriter::new(&mut again, 65535);
    for w in [&mut w1, &mut w2, &mut w3] {
        w.put_question(n("a.example.").as_ref(), RType::A, Class::IN)
            .unwrap();
    }
    let (mut pointers, mut same) = (0, 0);
    let mut prev: Option<&Name> = None;
    for (owner, rtype, rdata) in &seq {
        let at = w1.len();
        w1.put_record(
            Section::Answer,
            owner.as_ref(),
            *rtype,
            Class::IN,
            300,
            rdata,
        )
        .unwrap();
        put_record_by_walk(&mut w2, owner, *rtype, rdata);
        if prev.is_some_and(|p| p.as_ref().eq_ci(&owner.as_ref())) {
            same += 1;
            w3.put_record_same_owner(
                Section::Answer,
                owner.as_ref(),
                *rtype,
                Class::IN,
                300,
                rdata,
            )
        } else {
            w3.put_record(
                Section::Answer,
                owner.as_ref(),
                *rtype,
                Class::IN,
                300,
                rdata,
            )
        }
        .unwrap();
        prev = Some(owner);
        assert_eq!(w1.len(), w2.len(), "{owner} at {at}");
        assert_eq!(w3.len(), w2.len(), "{owner} at {at}, same owner");
        pointers += usize::from(w1.buf[at] & 0xc0 == 0xc0);
    }
    assert!(w1.len() > 0x4000);
    assert!(pointers > 30, "{pointers} owners written as one pointer");
    assert!(same > 100, "{same} records after one of the same owner");
    assert_eq!(&w1.buf[..w1.len()], &w2.buf[..w2.len()]);
    assert_eq!(w3.counts, w2.counts);
    assert_eq!(&w3.buf[..w3.len()], &w2.buf[..w2.len()]);
}

#[test]
fn a_same_owner_record_that_does_not_fit_is_rolled_back_whole() {
    let mut buf = [0u8; 512];
    let mut w = MessageWriter::new(&mut buf, 100);
    w.put_question(n("a.example.").as_ref(), RType::A, Class::IN)
        .unwrap();
    let owner = n("0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.example.");
    w.put_record(
        Section::Authority,
        owner.as_ref(),
        RType::TXT,
        Class::IN,
        1,
        &[1, b'x'],
    )
    .unwrap();
    let before = (w.len(), w.counts);
    // The pointer fits, the rdata does not.
    let big = [0u8; 40];
    assert_eq!(
        w.put_record_same_owner(
            Section::Authority,
            owner.as_ref(),
            RType::TXT,
            Class::IN,
            1,
            &big
        ),
        Err(Full)
    );
    assert_eq!((w.len(), w.counts), before);
    // What fits after it is written as put_record writes it.
    w.put_record_same_owner(
        Section::Authority,
        owner.as_ref(),
        RType::TXT,
        Class::IN,
        1,
        &[0],
    )
    .unwrap();
    assert_eq!(w.count(Section::Authority), 2);
    assert_eq!(&w.buf[before.0..before.0 + 2], &[0xc0, 12 + 15]);
}

/// The filter on the compression table (a bit per first label's length and first octet)
/// finds what the walk of every entry finds: names and suffixes in both cases, hash-like
/// labels sharing a length, labels sharing a first octet, in answers and in transfers
/// (exact case), with the table filled past its size and through a rollback.
#[test]
fn table_filter_finds_what_the_walk_finds() {
    let mut names: Vec<Name> = Vec::new();
    for i in 0..160u32 {
        let hash: String = (0..32)
            .map(|k| b"0123456789abcdefghijklmnopqrstuv"[((i * 7 + k * 13) % 32) as usize] as char)
            .collect();
        names.push(n(&format!("{hash}.example.")));
        names.push(n(&format!("x{}.Sub{}.example.", i % 9, i % 4)));
        names.push(n(&format!(
            "{}.EXAMPLE.",
            "y".repeat(1 + (i % 63) as usize)
        )));
        names.push(n(&format!("host{i}.example.")));
    }
    let mut checked = (0, 0);
    for transfer in [false, true] {
        let mut buf = vec![0u8; 65535];
        let mut w = MessageWriter::new(&mut buf, 65535);
        w.set_transfer(transfer);
        w.put_question(n("a.example.").as_ref(), RType::A, Class::IN)
            .unwrap();
        for (i, name) in names.iter().enumerate() {
            // Probe every suffix of the next names (in both cases) before writing this one.
            for probe in names.iter().skip(i).take(8) {
                let upper = n(&probe.to_string().to_uppercase());
                for wire in [probe.as_wire(), upper.as_wire()] {
                    let mut start = 0;
                    while wire[start] != 0 {
                        let found = w.find_by_walk(&wire[start..]);
                        assert_eq!(
                            w.find_filtered(&wire[start..]),
                            found,
                            "{probe} transfer {transfer}"
                        );
                        checked.0 += 1;
                        checked.1 += usize::from(found.is_some());
                        start += 1 + wire[start] as usize;
                    }
                }
            }
            let cp = w.checkpoint();
            w.put_name(name.as_ref(), true).unwrap();
            if i % 5 == 0 {
                w.rollback(cp);
            }
        }
    }
    assert!(checked.0 > 10_000, "{checked:?}");
    assert!(checked.1 > 2_000, "{checked:?} found");
}

/// Names that end in the question's suffix the caller named (a zone's apex, in the zone's
/// case) are written in the octets the table walk gives: NSEC3-like owners, names with
/// several labels before the apex, the apex itself, other cases of it, names where a longer
/// suffix is already in the table, SOA rdata, names outside it; through a rollback to the
/// question, and a rollback past it (the hint then goes). The hint is refused where the
/// question does not end in it.
#[test]
fn question_suffix_gives_the_octets_of_the_walk() {
    let ns = |s: &str| n(s).as_wire().to_vec();
    let seq: Vec<(Name, RType, Vec<u8>)> = vec![
        (n("example.test."), RType::SOA, {
            let mut d = ns("ns1.example.test.");
            d.extend(ns("hostmaster.Example.Test."));
            d.extend([0; 20]);
            d
        }),
        (
            n("0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.example.test."),
            RType::NSEC3,
            vec![1, 0, 0, 0, 0],
        ),
        (
            n("0P9MHAVEQVM6T7VBL5LOP2U3T2RP3TOM.example.test."),
            RType::NSEC3,
            vec![1],
        ),
        (
            n("k8udemvp1j2f7eg6jebps17vp3n8i58h.EXAMPLE.test."),
            RType::NSEC3,
            vec![2],
        ),
        (n("a.b.example.test."), RType::A, vec![192, 0, 2, 1]),
        (n("c.b.example.test."), RType::A, vec![192, 0, 2, 2]),
        (n("nx0001.example.test."), RType::A, vec![192, 0, 2, 3]),
        (n("Nx0001.example.test."), RType::A, vec![192, 0, 2, 4]),
        (n("example.test."), RType::NS, ns("ns.other.")),
        (n("ns.other."), RType::A, vec![192, 0, 2, 5]),
        (n("test."), RType::A, vec![192, 0, 2, 6]),
        (n("."), RType::A, vec![192, 0, 2, 7]),
        (n("example.test."), RType::CNAME, ns("x.y.example.test.")),
    ];
    let questions = [
        "nx0001.example.test.",
        "NX0001.EXAMPLE.TEST.",
        "example.test.",
        "a.b.example.test.",
    ];
    let mut hinted = 0;
    for question in questions {
        for rollback in [None, Some(false), Some(true)] {
            let mut with = vec![0u8; 4096];
            let mut without = vec![0u8; 4096];
            let mut w1 = MessageWriter::new(&mut with, 4096);
            let mut w2 = MessageWriter::new(&mut without, 4096);
            let (start, start2) = (w1.checkpoint(), w2.checkpoint());
            for w in [&mut w1, &mut w2] {
                w.put_question(n(question).as_ref(), RType::A, Class::IN)
                    .unwrap();
            }
            let apex = n("example.test.");
            w1.set_question_suffix(apex.as_ref());
            let (after_question, after_question2) = (w1.checkpoint(), w2.checkpoint());
            for (i, (owner, rtype, rdata)) in seq.iter().enumerate() {
                if i == 6 {
                    if let Some(past) = rollback {
                        // Back to the question (or before it), then the same records again.
                        w1.rollback(if past { start } else { after_question });
                        w2.rollback(if past { start2 } else { after_question2 });
                        if past {
                            for w in [&mut w1, &mut w2] {
                                w.put_question(n(question).as_ref(), RType::A, Class::IN)
                                    .unwrap();
                            }
                            assert!(w1.suffix.is_empty());
                        }
                        for (owner, rtype, rdata) in &seq[..i] {
                            w1.put_record(
                                Section::Answer,
                                owner.as_ref(),
                                *rtype,
                                Class::IN,
                                300,
                                rdata,
                            )
                            .unwrap();
                            w2.put_record(
                                Section::Answer,
                                owner.as_ref(),
                                *rtype,
                                Class::IN,
                                300,
                                rdata,
                            )
                            .unwrap();
                        }
                    }
                }
                let at = w1.len();
                if i == 1 {
                    // Checked by the first name that is not the question's (the SOA's rdata).
                    hinted += usize::from(w1.suffix.len() > 1 && w1.suffix_at != 0);
                }
                w1.put_record(
                    Section::Answer,
                    owner.as_ref(),
                    *rtype,
                    Class::IN,
                    300,
                    rdata,
                )
                .unwrap();
                w2.put_record(
                    Section::Answer,
                    owner.as_ref(),
                    *rtype,
                    Class::IN,
                    300,
                    rdata,
                )
                .unwrap();
                assert_eq!(
                    &w1.buf[at..w1.len()],
                    &w2.buf[at..w2.len()],
                    "{owner} after question {question}, rollback {rollback:?}"
                );
            }
            assert_eq!(&w1.buf[..w1.len()], &w2.buf[..w2.len()]);
        }
    }
    // Set for every question (each ends in the apex), kept or set again after a rollback.
    assert_eq!(hinted, 12);
    // Refused: a question outside the suffix, a transfer.
    let mut buf = vec![0u8; 512];
    let mut w = MessageWriter::new(&mut buf, 512);
    w.put_question(n("www.other.").as_ref(), RType::A, Class::IN)
        .unwrap();
    let apex = n("example.test.");
    w.set_question_suffix(apex.as_ref());
    w.put_name(n("a.example.test.").as_ref(), true).unwrap();
    assert!(w.suffix.is_empty());
    let mut buf = vec![0u8; 512];
    let mut w = MessageWriter::new(&mut buf, 512);
    w.set_transfer(true);
    w.put_question(n("example.test.").as_ref(), RType::AXFR, Class::IN)
        .unwrap();
    w.set_question_suffix(apex.as_ref());
    w.put_name(n("a.example.test.").as_ref(), true).unwrap();
    assert!(w.suffix.is_empty());
}
