//! Independent clients through the shardns resolver: BIND's `delv`, which validates for
//! itself from the same trust anchor (it asks with CD and checks every RRSIG, DS and
//! DNSKEY shardns hands it, so the DNSSEC records of its answers must be complete), and
//! Knot's `kdig +dnssec`, whose AD bit and records are read as they come.
//!
//! Each tool is skipped (and said so) when it is not installed. Every run has a timeout
//! (kdig's `+time`, `timeout 20` around delv); nothing is left running.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A tool on the PATH.
fn find(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(tool))
            .find(|p| p.is_file())
    })
}

/// The DS records of `ds_file` (zone-file lines) as a `trust-anchors` clause for delv.
fn delv_anchors(ds_file: &Path) -> String {
    let text = std::fs::read_to_string(ds_file).unwrap();
    let mut out = String::from("trust-anchors {\n");
    for line in text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with(';'))
    {
        let f: Vec<&str> = line.split_whitespace().collect();
        let at = f.iter().position(|w| *w == "DS").expect("a DS record");
        let (tag, alg, dt) = (f[at + 1], f[at + 2], f[at + 3]);
        let digest: String = f[at + 4..].concat();
        out.push_str(&format!(
            "  \"{}\" static-ds {tag} {alg} {dt} \"{digest}\";\n",
            f[0]
        ));
    }
    out.push_str("};\n");
    out
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("runs");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// What `delv` must say of a question: the words its verdict line holds, and a word of the
/// answer.
const DELV: &[(&str, &str, &str, &str)] = &[
    ("www.nsec.val.", "A", "; fully validated", "192.0.2.10"),
    (
        "www.nsec3.val.",
        "AAAA",
        "; fully validated",
        "2001:db8::10",
    ),
    (
        "host.wild.nsec.val.",
        "A",
        "; fully validated",
        "192.0.2.20",
    ),
    ("cname.nsec3.val.", "A", "; fully validated", "192.0.2.10"),
    (
        "nothere.nsec.val.",
        "A",
        "; negative response, fully validated",
        "NXDOMAIN",
    ),
    (
        "nothere3.nsec3.val.",
        "A",
        "; negative response, fully validated",
        "NXDOMAIN",
    ),
    (
        "www.nsec.val.",
        "MX",
        "; negative response, fully validated",
        "NXRRSET",
    ),
    ("www.unsigned.val.", "A", "; unsigned answer", "192.0.2.10"),
    (
        "www.insec.optout.val.",
        "A",
        "; unsigned answer",
        "192.0.2.10",
    ),
    // delv asks with CD: shardns hands it the forged record unchecked, and delv finds it
    // bogus on its own.
    ("www.forged.val.", "A", ";; resolution failed", "failure"),
];

/// What `kdig +dnssec` must see: (name, type, AD, an RRSIG in the answer, a record type
/// in the authority section, or "").
const KDIG: &[(&str, &str, bool, bool, &str)] = &[
    ("www.nsec.val.", "A", true, true, ""),
    ("nothere.nsec3.val.", "A", true, false, "NSEC3"),
    ("nothere5.nsec.val.", "TXT", true, false, "NSEC"),
    ("www.unsigned.val.", "A", false, false, ""),
    ("www.optout.val.", "A", true, true, ""),
];

/// Asks the resolver at `server` (port 53) with the independent clients; returns what
/// went wrong, and a line saying what ran.
pub(crate) fn check(server: &str, anchor: &Path, dir: &Path) -> (Vec<String>, String) {
    let mut bad = Vec::new();
    let mut ran = Vec::new();
    let verbose = std::env::var_os("VALIDATION_VERBOSE").is_some();
    if let Some(delv) = find("delv") {
        let anchors = dir.join("delv-anchors.conf");
        std::fs::write(&anchors, delv_anchors(anchor)).unwrap();
        for &(name, t, verdict, data) in DELV {
            // delv has no timeout option: coreutils' `timeout` bounds it.
            let out = run(Command::new("timeout")
                .arg("20")
                .arg(&delv)
                .arg(format!("@{server}"))
                .arg("-a")
                .arg(&anchors)
                .args([name, t]));
            if verbose {
                println!("delv {name} {t}:\n{out}");
            }
            if !out.contains(verdict) || !out.contains(data) {
                bad.push(format!(
                    "delv {name} {t}: expected {verdict:?} and {data:?}:\n{out}"
                ));
            }
        }
        ran.push(format!("delv {} questions", DELV.len()));
    } else {
        ran.push("delv SKIPPED (not installed)".into());
    }
    if let Some(kdig) = find("kdig") {
        for &(name, t, ad, sig, auth) in KDIG {
            let out = run(Command::new(&kdig)
                .arg(format!("@{server}"))
                .args(["+dnssec", "+time=3", "+retry=1", "+nocrypto"])
                .args([name, t]));
            if verbose {
                println!("kdig +dnssec {name} {t}:\n{out}");
            }
            let flags = out
                .lines()
                .find(|l| l.contains("Flags:"))
                .unwrap_or_default()
                .to_string();
            let section = |title: &str| -> Vec<String> {
                out.split(title)
                    .nth(1)
                    .map(|s| {
                        s.lines()
                            .skip(1)
                            .take_while(|l| !l.trim().is_empty())
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let answer = section(";; ANSWER SECTION:");
            let authority = section(";; AUTHORITY SECTION:");
            let has = |lines: &[String], t: &str| {
                lines.iter().any(|l| l.split_whitespace().nth(3) == Some(t))
            };
            let ok = flags.contains(" ad") == ad
                && has(&answer, "RRSIG") == sig
                && (auth.is_empty() || has(&authority, auth));
            if !ok {
                bad.push(format!(
                    "kdig +dnssec {name} {t}: expected AD {ad}, RRSIG in the answer {sig}, {auth:?} in the authority section:\n{out}"
                ));
            }
        }
        ran.push(format!("kdig +dnssec {} questions", KDIG.len()));
    } else {
        ran.push("kdig SKIPPED (not installed)".into());
    }
    (bad, ran.join(", "))
}
