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
