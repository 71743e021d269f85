//! The hostile inputs: bit flips and truncations of a few valid seed queries, then hand-made
//! families (compression pointers, counts, label and name lengths, EDNS, responses sent to
//! the server, other opcodes, large datagrams and random garbage), each with its kind and a
//! description for the report.

use crate::common::*;
use crate::messages::*;
use crate::APEX;

/// The valid queries the bit flips and truncations start from.
pub(crate) fn seeds() -> Vec<Vec<u8>> {
    vec![
        query(0x1001, "www.hostile.test", 1, None),
        edns_query(
            0x1002,
            "mail.hostile.test",
            15,
            &opt(1232, 0, 0, 0x8000, &[]),
        ),
        edns_query(
            0x1003,
            "hostile.test",
            6,
            &opt(4096, 0, 0, 0, &[(3, &[]), (10, &[1, 2, 3, 4, 5, 6, 7, 8])]),
        ),
    ]
}

/// Every hostile datagram, as (kind, description, bytes).
pub(crate) fn hostile_inputs() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut v: Vec<(&'static str, String, Vec<u8>)> = Vec::new();
    let seeds = seeds();
    let www = wire_name("www.hostile.test");

    for (s, q) in seeds.iter().enumerate() {
        for bit in 0..q.len() * 8 {
            let mut m = q.clone();
            m[bit / 8] ^= 0x80 >> (bit % 8);
            v.push(("bit flip", format!("seed {s} bit {bit}"), m));
        }
        for cut in 0..q.len() {
            v.push((
                "truncation",
                format!("seed {s} cut at {cut}"),
                q[..cut].to_vec(),
            ));
        }
    }

    // Compression pointers.
    let ptr = |at: usize| vec![0xc0 | (at >> 8) as u8, at as u8];
    for target in 0..=12 {
        v.push((
            "pointer",
            format!("question name points to offset {target}"),
            raw_query(0x2000, [1, 0, 0, 0], &ptr(target), 1, &[]),
        ));
    }
    for (what, at) in [("past the end", 0xff), ("far past the end", 0x3fff)] {
        v.push((
            "pointer",
            format!("question pointer {what}"),
            raw_query(0x2001, [1, 0, 0, 0], &ptr(at), 1, &[]),
        ));
    }
    v.push((
        "pointer",
        "question ends in half a pointer".into(),
        header(0x2002, 0, [1, 0, 0, 0])
            .into_iter()
            .chain([3, b'w', b'w', b'w', 0xc0])
            .collect(),
    ));
    // Loops of k labels, each pointing to the next, the last to the first.
    for k in 1..=8usize {
        let mut name = Vec::new();
        for i in 0..k {
            let next = 12 + 4 * ((i + 1) % k);
            name.extend_from_slice(&[1, b'a' + i as u8]);
            name.extend_from_slice(&ptr(next));
        }
        v.push((
            "pointer",
            format!("{k}-step pointer loop"),
            raw_query(0x2003, [1, 0, 0, 0], &name, 1, &[]),
        ));
    }
    // A forward pointer to a real name after the question (in an additional record's owner).
    {
        let q_len = 12 + 2 + 4;
        let mut m = raw_query(0x2004, [1, 0, 0, 1], &ptr(q_len), 1, &[]);
        m.extend_from_slice(&record(&www, 1, &[192, 0, 2, 1]));
        v.push(("pointer", "forward pointer in the question".into(), m));
    }
    // A pointer chain: pointers to pointers, ending at the question name.
    for hops in [2usize, 16, 100, 200] {
        let mut m = raw_query(0x2005, [1, 0, 0, 1], &www, 1, &[]);
        let first = m.len();
        // The chain lives in the rdata of a TXT record whose owner is the chain's end.
        let chain_at = first + www.len() + 10;
        let chain: Vec<u8> = (0..hops)
            .flat_map(|i| ptr(if i == 0 { 12 } else { chain_at + 2 * (i - 1) }))
            .collect();
        let mut rr = www.clone();
        rr.extend_from_slice(&[0, 16, 0, 1, 0, 0, 1, 44]);
        rr.extend_from_slice(&(chain.len() as u16).to_be_bytes());
        rr.extend_from_slice(&chain);
        m.extend_from_slice(&rr);
        set_count(&mut m, 3, 2);
        m.extend_from_slice(&record(&ptr(chain_at + 2 * (hops - 1)), 1, &[192, 0, 2, 2]));
        v.push(("pointer", format!("chain of {hops} pointers"), m));
    }
    // The OPT owner: a pointer to the root (lenient), to the question (not the root).
    {
        let mut m = query(0x2006, "www.hostile.test", 1, None);
        set_count(&mut m, 3, 1);
        let root_at = 12 + www.len() - 1;
        m.extend_from_slice(&ptr(root_at));
        m.extend_from_slice(&opt(1232, 0, 0, 0, &[])[1..]);
        v.push(("pointer", "OPT owner points to the root label".into(), m));
        let mut m = query(0x2007, "www.hostile.test", 1, None);
        set_count(&mut m, 3, 1);
        m.extend_from_slice(&ptr(12));
        m.extend_from_slice(&opt(1232, 0, 0, 0, &[])[1..]);
        v.push(("pointer", "OPT owner points to the question".into(), m));
        let mut m = query(0x2008, "www.hostile.test", 1, None);
        set_count(&mut m, 3, 1);
        let at = m.len();
        m.extend_from_slice(&record(&ptr(at), 1, &[1, 2, 3, 4]));
        v.push(("pointer", "additional owner points to itself".into(), m));
    }

    // Counts.
    let q = query(0x3000, "www.hostile.test", 1, None);
    for qd in [
        0u16, 2, 3, 4, 5, 8, 16, 100, 255, 256, 1000, 4096, 32767, 32768, 65534, 65535,
    ] {
        let mut m = q.clone();
        set_count(&mut m, 0, qd);
        v.push(("counts", format!("QDCOUNT {qd}, one question"), m));
    }
    for copies in 2..=5u16 {
        let mut m = header(0x3001, 0, [copies, 0, 0, 0]);
        for _ in 0..copies {
            m.extend_from_slice(&q[12..]);
        }
        v.push(("counts", format!("{copies} questions"), m));
    }
    v.push((
        "counts",
        "header only, QDCOUNT 0".into(),
        header(0x3002, 0, [0; 4]),
    ));
    for section in 1..=3 {
        for n in [1u16, 2, 255, 4096, 65535] {
            let mut m = q.clone();
            set_count(&mut m, section, n);
            v.push((
                "counts",
                format!("section {section} count {n}, no records"),
                m,
            ));
        }
    }
    let mut m = q.clone();
    for s in 0..4 {
        set_count(&mut m, s, 65535);
    }
    v.push(("counts", "every count 65535".into(), m));
    let mut m = edns_query(0x3003, "www.hostile.test", 1, &opt(1232, 0, 0, 0, &[]));
    set_count(&mut m, 3, 65535);
    v.push(("counts", "ARCOUNT 65535, one OPT".into(), m));

    // Label lengths.
    for b in 64..=255u8 {
        let mut name = wire_name("www.hostile.test");
        name[0] = b;
        v.push((
            "label length",
            format!("first label length {b:#04x}"),
            raw_query(0x4000, [1, 0, 0, 0], &name, 1, &[]),
        ));
    }
    for b in [64u8, 0x41, 0x80, 0xbf] {
        let mut name = wire_name("www.hostile.test");
        name[4] = b;
        v.push((
            "label length",
            format!("second label length {b:#04x}"),
            raw_query(0x4001, [1, 0, 0, 0], &name, 1, &[]),
        ));
    }
    for (what, name) in [
        ("label longer than the message", vec![63, b'a', b'b', 0]),
        (
            "empty label inside the name",
            vec![3, b'w', b'w', b'w', 0, 7, b'h', 0],
        ),
        ("no root label", vec![3, b'w', b'w', b'w']),
    ] {
        v.push((
            "label length",
            what.into(),
            header(0x4002, 0, [1, 0, 0, 0])
                .into_iter()
                .chain(name)
                .collect(),
        ));
    }

    // Name lengths at and over 255 octets.
    let under_zone = |total: usize| {
        // Labels of 63 and a last one so the wire name (with hostile.test.) is `total` octets.
        let tail = wire_name(APEX);
        let mut body = total - tail.len();
        let mut n = Vec::new();
        while body > 0 {
            let l = (body - 1).min(63);
            assert!(l > 0, "cannot make a name of {total} octets");
            n.push(l as u8);
            n.extend(std::iter::repeat_n(b'x', l));
            body -= l + 1;
        }
        n.extend_from_slice(&tail);
        n
    };
    for total in [253usize, 254, 255, 256, 257, 300] {
        v.push((
            "long name",
            format!("{total}-octet name under the zone"),
            raw_query(0x5000, [1, 0, 0, 0], &under_zone(total), 1, &[]),
        ));
    }
    for labels in [127usize, 128, 200] {
        let mut n: Vec<u8> = (0..labels).flat_map(|_| [1, b'a']).collect();
        n.push(0);
        v.push((
            "long name",
            format!("{labels} one-octet labels"),
            raw_query(0x5001, [1, 0, 0, 0], &n, 1, &[]),
        ));
    }
    // Over 255 only through a pointer: 4 x 63 octets, then a pointer to the question.
    {
        let mut m = raw_query(0x5002, [1, 0, 0, 1], &www, 1, &[]);
        let mut owner = Vec::new();
        for _ in 0..4 {
            owner.push(63);
            owner.extend(std::iter::repeat_n(b'y', 63));
        }
        owner.extend_from_slice(&ptr(12));
        m.extend_from_slice(&record(&owner, 1, &[1, 2, 3, 4]));
        v.push((
            "long name",
            "record owner over 255 through a pointer".into(),
            m,
        ));
    }

    // EDNS.
    let eq = |id: u16, o: Vec<u8>| edns_query(id, "www.hostile.test", 1, &o);
    for version in [1u8, 2, 3, 7, 15, 16, 64, 127, 128, 200, 254, 255] {
        v.push((
            "edns",
            format!("version {version}"),
            eq(0x6000, opt(1232, 0, version, 0, &[])),
        ));
    }
    for size in [0u16, 1, 511, 512, 513, 1232, 4096, 65535] {
        v.push((
            "edns",
            format!("UDP size {size}"),
            eq(0x6001, opt(size, 0, 0, 0, &[])),
        ));
    }
    v.push((
        "edns",
        "every flag set".into(),
        eq(0x6002, opt(1232, 0, 0, 0xffff, &[])),
    ));
    for ext in [1u8, 15, 255] {
        v.push((
            "edns",
            format!("extended RCODE {ext} in a query"),
            eq(0x6003, opt(1232, ext, 0, 0, &[])),
        ));
    }
    let big = vec![0u8; 1100];
    let huge = vec![0u8; 3900];
    let options: [(&str, &[EdnsOption<'_>]); 17] = [
        ("unknown option", &[(65001, &[1, 2, 3, 4])]),
        ("NSID", &[(3, &[])]),
        ("NSID with data", &[(3, &[1, 2, 3])]),
        ("client cookie", &[(10, &[1; 8])]),
        ("full cookie", &[(10, &[1; 24])]),
        ("cookie of 1", &[(10, &[1])]),
        ("cookie of 7", &[(10, &[1; 7])]),
        ("cookie of 9", &[(10, &[1; 9])]),
        ("cookie of 41", &[(10, &[1; 41])]),
        ("two cookies", &[(10, &[1; 8]), (10, &[2; 8])]),
        ("client subnet, empty", &[(8, &[])]),
        ("client subnet, bad family", &[(8, &[0, 9, 24, 0, 1, 2, 3])]),
        ("padding 0", &[(12, &[])]),
        ("padding 1100", &[(12, &big)]),
        ("padding 3900", &[(12, &huge)]),
        ("option code 0", &[(0, &[])]),
        ("option code 65535", &[(65535, &[9; 3])]),
    ];
    for (what, o) in options {
        v.push(("edns", what.into(), eq(0x6004, opt(1232, 0, 0, 0, o))));
    }
    let many: Vec<(u16, &[u8])> = (0..200).map(|i| (65001 + i, &[][..])).collect();
    v.push((
        "edns",
        "200 options".into(),
        eq(0x6005, opt(1232, 0, 0, 0, &many)),
    ));
    let lists: [&[u8]; 6] = [
        &[0],
        &[0, 3],
        &[0, 3, 0],
        &[0, 3, 0, 5],
        &[0, 3, 255, 255],
        &[0, 3, 0, 1, 9, 0],
    ];
    for rdata in lists {
        v.push((
            "edns",
            format!("option list {rdata:?}"),
            eq(0x6006, opt_raw(1232, 0, 0, 0, rdata)),
        ));
    }
    {
        let mut o = opt(1232, 0, 0, 0, &[]);
        let n = o.len();
        o[n - 2..].copy_from_slice(&100u16.to_be_bytes());
        v.push(("edns", "OPT rdata past the end".into(), eq(0x6007, o)));
    }
    for copies in [2u16, 3, 10] {
        let mut m = query(0x6008, "www.hostile.test", 1, None);
        set_count(&mut m, 3, copies);
        for _ in 0..copies {
            m.extend_from_slice(&opt(1232, 0, 0, 0, &[]));
        }
        v.push(("edns", format!("{copies} OPT records"), m));
    }
    {
        let mut m = query(0x6009, "www.hostile.test", 1, None);
        set_count(&mut m, 3, 2);
        m.extend_from_slice(&opt(1232, 0, 0, 0, &[]));
        m.extend_from_slice(&opt(1232, 0, 1, 0, &[]));
        v.push(("edns", "two OPTs, versions 0 and 1".into(), m));
        for section in [1usize, 2] {
            let mut m = query(0x600a, "www.hostile.test", 1, None);
            set_count(&mut m, section, 1);
            m.extend_from_slice(&opt(1232, 0, 0, 0, &[]));
            v.push(("edns", format!("OPT in section {section}"), m));
        }
        let mut m = query(0x600b, "www.hostile.test", 1, None);
        set_count(&mut m, 3, 1);
        m.extend_from_slice(&[1, b'x']);
        m.extend_from_slice(&opt(1232, 0, 0, 0, &[]));
        v.push(("edns", "OPT owned by x.".into(), m));
        let mut m = query(0x600c, "www.hostile.test", 1, None);
        set_count(&mut m, 3, 2);
        m.extend_from_slice(&record(&www, 1, &[192, 0, 2, 9]));
        m.extend_from_slice(&opt(1232, 0, 0, 0, &[]));
        v.push(("edns", "an A record next to the OPT".into(), m));
    }

    // Responses sent to the server.
    for (s, q) in seeds.iter().enumerate() {
        for rcode in 0..16u8 {
            let mut m = q.clone();
            m[2] |= 0x80;
            m[3] = (m[3] & 0xf0) | rcode;
            v.push((
                "response",
                format!("seed {s} as a response, RCODE {rcode}"),
                m,
            ));
        }
        let mut m = q.clone();
        m[2] |= 0x80 | 0x04 | 0x02; // QR, AA, TC
        v.push((
            "response",
            format!("seed {s} as a response with AA and TC"),
            m,
        ));
        let mut m = q.clone();
        m[2] |= 0x80 | (4 << 3);
        v.push(("response", format!("seed {s} as a NOTIFY response"), m));
    }

    // Opcodes other than QUERY.
    for (s, q) in seeds.iter().enumerate().take(2) {
        for op in 1..16u8 {
            let mut m = q.clone();
            m[2] = (m[2] & 0x87) | (op << 3);
            v.push(("opcode", format!("seed {s} opcode {op}"), m));
        }
    }
    let mut m = header(0x7000, 5 << 11, [1, 1, 1, 1]);
    m.extend_from_slice(&[0xde, 0xad]);
    v.push(("opcode", "UPDATE with a garbage body".into(), m));

    // Large datagrams and random garbage.
    for len in [600usize, 4096, 65000] {
        let mut m = query(0x7100, "www.hostile.test", 1, None);
        m.resize(len, 0);
        v.push(("large", format!("query padded with zeros to {len}"), m));
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut m = rng.bytes(65507);
    m[2] &= 0x7f;
    v.push(("large", "65,507 random octets".into(), m));
    v.push(("large", "empty datagram".into(), Vec::new()));
    for i in 0..100 {
        let len = 12 + (rng.next() % 500) as usize;
        let mut m = rng.bytes(len);
        m[2] &= 0x7f; // a query: responses are covered above
        if i % 2 == 0 {
            // Half with plausible counts, so parsing goes further.
            m[4..12].copy_from_slice(&[0, 1, 0, 0, 0, 0, 0, (i % 3) as u8]);
        }
        v.push(("random", format!("random datagram {i} ({len} octets)"), m));
    }
    v
}
