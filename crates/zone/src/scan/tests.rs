use super::*;
use std::sync::atomic::{AtomicU32, Ordering};

/// One record, flattened for comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rec {
    owner: String,
    ttl: u32,
    rtype: RType,
    rdata: Vec<u8>,
    line: u32,
    file: u16,
}

fn flat(s: &Scanned) -> Vec<Rec> {
    s.chunks
        .iter()
        .flat_map(|c| {
            c.items.iter().map(move |i| Rec {
                owner: c.owner(i).to_string(),
                ttl: i.ttl,
                rtype: i.rtype,
                rdata: c.rdata(i).to_vec(),
                line: i.line,
                file: i.file,
            })
        })
        .collect()
}

fn opts(origin: &str) -> ScanOptions {
    ScanOptions::new(origin.parse().unwrap())
}

fn scan(text: &str, origin: &str) -> Result<Scanned, Error> {
    scan_text(text.as_bytes(), Path::new("db.test"), &opts(origin))
}

fn ok(text: &str, origin: &str) -> Vec<Rec> {
    match scan(text, origin) {
        Ok(s) => flat(&s),
        Err(e) => panic!("unexpected errors:\n{e}"),
    }
}

fn errors(text: &str, origin: &str) -> Vec<(u32, String)> {
    match scan(text, origin) {
        Ok(s) => panic!("no error; records {:?}", flat(&s)),
        Err(e) => e
            .diagnostics()
            .iter()
            .map(|d| (d.line, d.message.clone()))
            .collect(),
    }
}

fn wire(name: &str) -> Vec<u8> {
    name.parse::<Name>().unwrap().as_wire().to_vec()
}

/// A directory of its own under the system temp dir.
fn temp_dir(tag: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("shardns-scan-{}-{tag}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// RFC 1034 §6.1: the root zone example, as text.
const RFC1034: &str = "\
@   IN  SOA     SRI-NIC.ARPA. HOSTMASTER.SRI-NIC.ARPA. (
                870611          ;serial
                1800            ;refresh every 30 min
                300             ;retry every 5 min
                604800          ;expire after a week
                86400)          ;minimum of a day
        NS      A.ISI.EDU.
        NS      C.ISI.EDU.
        NS      SRI-NIC.ARPA.

MIL     86400   NS      SRI-NIC.ARPA.
        86400   NS      A.ISI.EDU.

EDU     86400   NS      SRI-NIC.ARPA.
        86400   NS      C.ISI.EDU.

SRI-NIC.ARPA.   A       26.0.0.73
        A       10.0.0.51
        MX      0 SRI-NIC.ARPA.
        HINFO   DEC-2060 TOPS20

ACC.ARPA.       A       26.6.0.65
        HINFO   PDP-11/70 UNIX
        MX      10 ACC.ARPA.

USC-ISIC.ARPA.  CNAME   C.ISI.EDU.

73.0.0.26.IN-ADDR.ARPA.  PTR    SRI-NIC.ARPA.
65.0.6.26.IN-ADDR.ARPA.  PTR    ACC.ARPA.
51.0.0.10.IN-ADDR.ARPA.  PTR    SRI-NIC.ARPA.
52.0.0.10.IN-ADDR.ARPA.  PTR    C.ISI.EDU.

103.0.3.26.IN-ADDR.ARPA. PTR    A.ISI.EDU.

A.ISI.EDU. 86400 A      26.3.0.103
C.ISI.EDU. 86400 A      10.0.0.52
";

#[test]
fn rfc1034_example_zone() {
    let r = ok(RFC1034, ".");
    assert_eq!(r.len(), 23);
    let soa = &r[0];
    assert_eq!(
        (soa.owner.as_str(), soa.rtype, soa.line, soa.ttl),
        (".", RType::SOA, 1, 3600)
    );
    let mut want = wire("SRI-NIC.ARPA.");
    want.extend(wire("HOSTMASTER.SRI-NIC.ARPA."));
    for v in [870611u32, 1800, 300, 604800, 86400] {
        want.extend(v.to_be_bytes());
    }
    assert_eq!(soa.rdata, want);
    // Owner inherited across the parentheses; TTL from the default until one is given.
    assert_eq!(
        (r[1].owner.as_str(), r[1].rtype, r[1].line, r[1].ttl),
        (".", RType::NS, 7, 3600)
    );
    assert_eq!(r[3].rdata, wire("SRI-NIC.ARPA."));
    assert_eq!(
        (r[4].owner.as_str(), r[4].ttl, r[5].owner.as_str()),
        ("MIL.", 86400, "MIL.")
    );
    // Then the last explicit TTL.
    let sri = &r[8];
    assert_eq!(
        (sri.owner.as_str(), sri.rtype, sri.ttl, sri.line),
        ("SRI-NIC.ARPA.", RType::A, 86400, 17)
    );
    assert_eq!(sri.rdata, [26, 0, 0, 73]);
    assert_eq!(r[10].rtype, RType::MX);
    assert_eq!(
        r[10].rdata,
        [&[0u8, 0][..], &wire("SRI-NIC.ARPA.")].concat()
    );
    assert_eq!(r[11].rdata, b"\x08DEC-2060\x06TOPS20");
    assert_eq!(
        (r[15].owner.as_str(), r[15].rtype),
        ("USC-ISIC.ARPA.", RType::CNAME)
    );
    assert_eq!(r[16].rtype, RType::PTR);
    assert_eq!(
        (r[22].owner.as_str(), r[22].line, &r[22].rdata[..]),
        ("C.ISI.EDU.", 36, &[10u8, 0, 0, 52][..])
    );
}

#[test]
fn origin_at_relative_and_escaped_names() {
    let r = ok(
        "$ORIGIN example.\n\
             @ 60 TYPE65280 \\# 0\n\
             www A \\# 4 01020304\n\
             a\\.b A \\# 4 01020304\n\
             \\065x.sub A \\# 4 01020304\n\
             $ORIGIN sub\n\
             c A \\# 4 01020304\n\
             @ A \\# 4 01020304\n\
             d.example. A \\# 4 01020304\n",
        "example.",
    );
    let owners: Vec<_> = r.iter().map(|r| r.owner.as_str()).collect();
    assert_eq!(
        owners,
        [
            "example.",
            "www.example.",
            "a\\.b.example.",
            "Ax.sub.example.",
            "c.sub.example.",
            "sub.example.",
            "d.example."
        ]
    );
    assert_eq!(r[0].rtype, RType(65280));
    assert_eq!(r[1].rdata, [1, 2, 3, 4]);
}

#[test]
fn ttl_units_defaults_and_class_order() {
    let r = ok(
        "a TYPE65280 \\# 0\n\
             b 1h30m IN TYPE65280 \\# 0\n\
             c IN 2W TYPE65280 \\# 0\n\
             d TYPE65280 \\# 0\n\
             $TTL 1d\n\
             e CLASS1 TYPE65280 \\# 0\n\
             f 5 TYPE65280 \\# 0\n\
             g TYPE65280 \\# 0\n",
        "example.",
    );
    let ttls: Vec<_> = r.iter().map(|r| r.ttl).collect();
    assert_eq!(ttls, [3600, 5400, 1_209_600, 1_209_600, 86400, 5, 86400]);

    // No default, no $TTL, no earlier TTL.
    let mut o = opts("example.");
    o.default_ttl = None;
    let e = scan_text(
        b"a TYPE65280 \\# 0\nb 7 TYPE65280 \\# 0\nc TYPE65280 \\# 0\n",
        Path::new("db.test"),
        &o,
    )
    .unwrap_err();
    assert_eq!(e.diagnostics().len(), 1);
    assert_eq!(e.diagnostics()[0].line, 1);
    assert!(
        e.diagnostics()[0].message.contains("no TTL"),
        "{}",
        e.diagnostics()[0]
    );

    let e = errors(
        "a 2147483648 TYPE65280 \\# 0\nb 2147483647 TYPE65280 \\# 0\nc 9x TYPE65280 \\# 0\n",
        "example.",
    );
    assert_eq!(e.len(), 2);
    assert!(e[0].1.contains("2147483648") && e[0].1.contains("out of range"));
    assert_eq!(e[1], (3, "bad TTL \"9x\"".to_string()));
}

#[test]
fn owner_inheritance_parentheses_and_quotes() {
    let r = ok(
        "a ( TYPE65280\n\
             \\# 2 ; comment ( inside\n\
             0102 )\n\
             \tTYPE65281 \\# 1 ff\n\
             \n\
             ; a comment line\n\
             \x20 ( TYPE65282\n\
             \\# 0 )\n\
             b TYPE65283 ( \\# 1 \"aa\" )\n",
        "example.",
    );
    let got: Vec<_> = r
        .iter()
        .map(|r| (r.owner.as_str(), r.rtype.0, r.line))
        .collect();
    assert_eq!(
        got,
        [
            ("a.example.", 65280, 1),
            ("a.example.", 65281, 4),
            ("a.example.", 65282, 7),
            ("b.example.", 65283, 9)
        ]
    );
    assert_eq!(r[0].rdata, [1, 2]);
    // Owner bytes are shared when the owner repeats.
    let s = scan(
        "x TYPE65280 \\# 0\nx TYPE65280 \\# 0\n  TYPE65280 \\# 0\nX TYPE65280 \\# 0\n",
        "example.",
    )
    .unwrap();
    let c = &s.chunks[0];
    assert_eq!(c.items[0].owner, c.items[1].owner);
    assert_eq!(c.items[0].owner, c.items[2].owner);
    assert_ne!(c.items[0].owner, c.items[3].owner);
    assert_eq!(c.owner(&c.items[3]).to_string(), "X.example.");
}

#[test]
fn quoted_data_and_real_types() {
    // `;` and `(` inside quotes are data.
    let r = ok("t TXT \"a;b(c\" \"x y\"\n", "example.");
    assert_eq!(r[0].rdata, b"\x05a;b(c\x03x y");
    let r = ok("@ IN 300 AAAA ::1\nwww 60 IN A 192.0.2.1\n", "example.");
    assert_eq!(r[0].rdata.len(), 16);
    assert_eq!((r[1].ttl, &r[1].rdata[..]), (60, &[192u8, 0, 2, 1][..]));
}

#[test]
fn generic_type_and_data() {
    let r = ok(
        "x TYPE65280 \\# 4 0A000001\ny CLASS1 TYPE1 \\# 4 0a 00 00 01\n",
        "example.",
    );
    assert_eq!(
        (r[0].rtype, &r[0].rdata[..]),
        (RType(65280), &[10u8, 0, 0, 1][..])
    );
    assert_eq!(
        (r[1].rtype, &r[1].rdata[..]),
        (RType::A, &[10u8, 0, 0, 1][..])
    );
    // Too long rdata: 257 strings of 255 octets.
    let long = format!("\"{}\" ", "x".repeat(255)).repeat(257);
    let e = errors(&format!("x TXT {long}\n"), "example.");
    assert_eq!(e.len(), 1);
    assert!(
        e[0].1.starts_with("TXT: ") && e[0].1.contains("65535"),
        "{}",
        e[0].1
    );
    let r = ok(
        &format!("x TYPE65280 \\# 65535 {}\n", "00".repeat(65535)),
        "example.",
    );
    assert_eq!(r[0].rdata.len(), 65535);
}

#[test]
fn many_errors_at_once_with_lines() {
    let text = "\
$TTL 9x
a A \\# 4 01020304
b AAAAA ::1
c CH A \\# 4 01020304
d A 1.2.3
e TYPE65280 \\# 4 0A000001
f OPT \\# 0
g ) TYPE65280 \\# 0
  TYPE65280 \\# 0
h.example. A \\# 4 01020304 \"
$FOO bar
i ANY \\# 0
bad..name TYPE65280 \\# 0
  TYPE65280 \\# 0
j (
  TYPE65280 \\# 0
";
    let e = errors(text, "example.");
    let lines: Vec<u32> = e.iter().map(|e| e.0).collect();
    assert_eq!(lines, [1, 3, 4, 5, 7, 8, 10, 11, 12, 13, 15], "{e:#?}");
    assert_eq!(e[0].1, "$TTL: bad TTL \"9x\"");
    assert_eq!(e[1].1, "unknown type \"AAAAA\"");
    assert!(e[2].1.contains("CH"));
    assert!(
        e[3].1.starts_with("A: ") && e[3].1.contains("1.2.3"),
        "{}",
        e[3].1
    );
    assert!(e[4].1.contains("OPT"));
    assert!(e[5].1.contains("unbalanced parenthesis"));
    assert!(e[6].1.contains("unterminated"));
    assert!(e[7].1.contains("$FOO"));
    assert!(e[8].1.contains("ANY"));
    assert!(e[9].1.contains("bad..name"), "{}", e[9].1);
    assert!(e[10].1.contains("unbalanced parenthesis"));
    // Display: file:line: message.
    let err = scan(text, "example.").unwrap_err();
    assert!(err
        .to_string()
        .starts_with("db.test:1: $TTL: bad TTL \"9x\"\ndb.test:3: unknown type \"AAAAA\"\n"));
}

#[test]
fn out_of_zone_records_warned_and_skipped() {
    let s = scan(
            "www TYPE65280 \\# 0\nwww.other. TYPE65280 \\# 0\n  TYPE65280 \\# 0\nexample. TYPE65280 \\# 0\nEXAMPLE. TYPE65280 \\# 0\n",
            "example.",
        )
        .unwrap();
    let r = flat(&s);
    assert_eq!(r.iter().map(|r| r.line).collect::<Vec<_>>(), [1, 4, 5]);
    assert_eq!(s.warnings.len(), 2);
    assert_eq!(s.warnings[0].line, 2);
    assert_eq!(s.warnings[1].line, 3);
    assert!(s.warnings[0]
        .to_string()
        .starts_with("db.test:2: www.other. is outside the zone example."));
}

#[test]
fn crlf_and_no_trailing_newline() {
    let r = ok(
            "$TTL 60\r\na TYPE65280 \\# 1 01\r\n\r\n  ( TYPE65280\r\n \\# 0 ) ; c\r\nb TYPE65280 \\# 1 02",
            "example.",
        );
    let got: Vec<_> = r
        .iter()
        .map(|r| (r.owner.as_str(), r.ttl, r.line, r.rdata.clone()))
        .collect();
    assert_eq!(
        got,
        [
            ("a.example.", 60, 2, vec![1]),
            ("a.example.", 60, 4, vec![]),
            ("b.example.", 60, 6, vec![2])
        ]
    );
    assert!(ok("", "example.").is_empty());
    assert!(ok("; nothing\n\n", "example.").is_empty());
    assert_eq!(ok("\u{feff}a TYPE65280 \\# 0", "example.").len(), 1);
}

#[test]
fn include_with_origin() {
    let dir = temp_dir("inc");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(
        dir.join("sub/hosts.inc"),
        "$TTL 5\nh1 TYPE65280 \\# 1 01\n  TYPE65280 \\# 1 02\n@ TYPE65280 \\# 1 03\n",
    )
    .unwrap();
    let main = dir.join("db.example");
    std::fs::write(
            &main,
            "$TTL 60\na TYPE65280 \\# 1 aa\n$INCLUDE sub/hosts.inc hosts\n  TYPE65280 \\# 1 bb\nb TYPE65280 \\# 1 cc\n$INCLUDE \"sub/hosts.inc\"\n",
        )
        .unwrap();
    let s = scan_file(&main, &opts("example.")).unwrap();
    let r = flat(&s);
    let got: Vec<_> = r
        .iter()
        .map(|r| (r.owner.as_str(), r.ttl, r.line, r.file))
        .collect();
    assert_eq!(
        got,
        [
            ("a.example.", 60, 2, 0),
            ("h1.hosts.example.", 5, 2, 1),
            ("h1.hosts.example.", 5, 3, 1),
            ("hosts.example.", 5, 4, 1),
            // The owner, origin and $TTL of the including file are back after it.
            ("a.example.", 60, 4, 0),
            ("b.example.", 60, 5, 0),
            ("h1.example.", 5, 2, 2),
            ("h1.example.", 5, 3, 2),
            ("example.", 5, 4, 2),
        ]
    );
    assert_eq!(s.files.len(), 3);
    assert_eq!(s.files[1], dir.join("sub/hosts.inc"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn include_errors_loop_depth_missing() {
    let dir = temp_dir("loop");
    std::fs::write(dir.join("a"), "a TYPE65280 \\# 0\n$INCLUDE b\n").unwrap();
    std::fs::write(dir.join("b"), "b TYPE65280 \\# 0\n$INCLUDE a\nb2 BAD\n").unwrap();
    let e = scan_file(&dir.join("a"), &opts("example.")).unwrap_err();
    assert_eq!(e.diagnostics().len(), 2, "{e}");
    assert!(e.diagnostics()[0].file.ends_with("b") && e.diagnostics()[0].line == 2);
    assert!(e.diagnostics()[0].message.contains("include loop"), "{e}");
    assert!(e.diagnostics()[1].message.contains("\"BAD\""), "{e}");
    // A chain of 10 files: the 9th include is too deep.
    for i in 0..10 {
        std::fs::write(
            dir.join(format!("n{i}")),
            format!("x{i} TYPE65280 \\# 0\n$INCLUDE n{}\n", i + 1),
        )
        .unwrap();
    }
    std::fs::write(dir.join("n10"), "").unwrap();
    let e = scan_file(&dir.join("n0"), &opts("example.")).unwrap_err();
    assert_eq!(e.diagnostics().len(), 1, "{e}");
    assert!(
        e.diagnostics()[0].file.ends_with("n8") && e.diagnostics()[0].message.contains("nested"),
        "{e}"
    );
    let e = scan_file(&dir.join("none"), &opts("example.")).unwrap_err();
    assert_eq!(e.diagnostics()[0].line, 0);
    std::fs::write(dir.join("c"), "$INCLUDE missing.inc\n").unwrap();
    let e = scan_file(&dir.join("c"), &opts("example.")).unwrap_err();
    assert!(
        e.diagnostics()[0].message.contains("missing.inc") && e.diagnostics()[0].line == 1,
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A zone of `n` names with multi-line records, comments, omitted owners, explicit and
/// omitted TTLs, and `$TTL`/`$ORIGIN` changes.
fn generated_zone(n: usize, multiline: bool) -> String {
    use std::fmt::Write;
    let mut z = String::from("; generated\n$ORIGIN example.\n@ TYPE65280 \\# 0\n");
    for i in 0..n {
        match i % 500 {
            0 => writeln!(z, "$TTL {}", 100 + i).unwrap(),
            250 => writeln!(z, "$ORIGIN o{i}.example.").unwrap(),
            499 => z.push_str("$ORIGIN example.\n"),
            _ => {}
        }
        let ttl = if i % 7 == 0 {
            format!(" {}", i % 1000)
        } else {
            String::new()
        };
        writeln!(z, "h{i}{ttl} IN TYPE65280 \\# 4 {i:08x}").unwrap();
        if i % 3 == 0 && multiline {
            writeln!(z, "  TYPE65281 ( \\# 2 ; two octets\n{:04x} )", i % 65536).unwrap();
        }
        if i % 11 == 0 && multiline {
            // Continuation lines that look like owners to the pre-pass.
            writeln!(z, "m{i} TYPE65282 (\n\\# 1\nff )").unwrap();
        }
    }
    z
}

#[test]
fn parallel_matches_sequential() {
    for (n, before_ttl) in [(3000, false), (3000, true)] {
        let mut text = generated_zone(n, true);
        if before_ttl {
            // Records before any $TTL fall back to the last explicit TTL, across regions.
            text = text.replacen("$TTL 100\n", "", 1);
        }
        let path = Path::new("db.gen");
        let mut o = opts("example.");
        let seq = flat(&scan_text(text.as_bytes(), path, &o).unwrap());
        assert!(seq.len() > n);
        for threads in [2, 3, 4] {
            o.threads = threads;
            for region in [1000, 4096, 20000] {
                let par = scan_text_split(text.as_bytes(), path, &o, region).unwrap();
                assert_eq!(flat(&par), seq, "threads {threads} region {region}");
            }
        }
        // Splitting really happened on a plain zone.
        o.threads = 2;
        let plain = generated_zone(n, false);
        let par = scan_text_split(plain.as_bytes(), path, &o, 1000).unwrap();
        assert_eq!(par.chunks.len(), 2);
        o.threads = 1;
        assert_eq!(
            flat(&par),
            flat(&scan_text(plain.as_bytes(), path, &o).unwrap())
        );
    }
}

#[test]
fn parallel_errors_match_sequential() {
    let mut text = generated_zone(2000, true);
    text = text.replacen("$TTL 100\n", "", 1);
    text.push_str("bad AAAAA x\n");
    text = text.replacen("h1500 IN", "h1500 9x IN", 1);
    let mut o = opts("example.");
    o.default_ttl = None;
    let seq = scan_text(text.as_bytes(), Path::new("db.gen"), &o).unwrap_err();
    o.threads = 2;
    let par = scan_text_split(text.as_bytes(), Path::new("db.gen"), &o, 1000).unwrap_err();
    assert_eq!(par, seq);
    // The records before the first explicit TTL, and the two errors.
    assert!(seq.diagnostics().len() >= 3, "{seq}");
}

#[test]
fn parallel_falls_back_on_include() {
    let dir = temp_dir("parinc");
    std::fs::write(dir.join("inc"), "i TYPE65280 \\# 0\n").unwrap();
    // At the end (in the last region: its scan refuses it) and near the start (before the
    // last split point: the pre-pass finds it).
    for front in [false, true] {
        let mut text = generated_zone(1000, true);
        if front {
            text = text.replacen("h1 IN", "$INCLUDE inc\nh1 IN", 1);
        } else {
            text.push_str("$INCLUDE inc\n");
        }
        let main = dir.join("db");
        std::fs::write(&main, &text).unwrap();
        let mut o = opts("example.");
        o.threads = 2;
        let par = scan_text_split(text.as_bytes(), &main, &o, 1000).unwrap();
        assert_eq!(par.chunks.len(), 1, "front {front}");
        assert_eq!(par.files.len(), 2, "front {front}");
        assert!(
            flat(&par).iter().any(|r| r.owner.starts_with("i.")),
            "front {front}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
