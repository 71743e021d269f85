//! Outside judges of a signed zone: the zone as `dig` transfers it, `ldns-verify-zone`
//! and `dnssec-verify` on it, and `delv` on its answers from its own keys (scripts/test.sh
//! installs them; a missing one fails the test); trust anchors from DS records for delv and
//! dnsviz, and dnsviz on a zone alone from them.

use super::{dig, find_dnsviz, find_program, DnsvizQueue};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A judge's program (`$LDNS_VERIFY_ZONE` style override, else on PATH); panics if missing.
pub fn judge(name: &str) -> PathBuf {
    find_program(name, &name.to_ascii_uppercase().replace('-', "_"))
        .unwrap_or_else(|| panic!("{name} is not installed (scripts/test.sh installs it)"))
}

/// Runs `cmd`: whether it succeeded, and its stdout and stderr.
pub fn run_judge(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    (
        out.status.success(),
        text + &String::from_utf8_lossy(&out.stderr),
    )
}

/// The zone as `dig` transfers it from `server`: one record a line, comments dropped, one
/// SOA; panics unless it has more than `min` records.
pub fn axfr_text(server: SocketAddr, zone: &str, min: usize) -> String {
    let out = dig(
        server,
        &[zone, "AXFR", "+onesoa", "+nocmd", "+nostats", "+nocomments"],
    );
    let lines: Vec<String> = out
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert!(lines.len() > min, "AXFR of {zone} failed:\n{out}");
    lines.join("\n") + "\n"
}

/// ldns-verify-zone and dnssec-verify (`-z`: CSKs alone are fine) on the zone file `file`
/// of `zone`: `Err` with the judge's name and output if either rejects it.
pub fn verify_zone_file(file: &Path, zone: &str) -> Result<(), String> {
    let (ok, out) = run_judge(Command::new(judge("ldns-verify-zone")).arg(file));
    if !ok {
        return Err(format!(
            "ldns-verify-zone rejects {}:\n{out}",
            file.display()
        ));
    }
    let (ok, out) = run_judge(
        Command::new(judge("dnssec-verify"))
            .args(["-z", "-o", zone])
            .arg(file),
    );
    if !ok {
        return Err(format!("dnssec-verify rejects {}:\n{out}", file.display()));
    }
    Ok(())
}

/// `delv` at `server` validates each of `questions` (name, type) from `dnskeys` (DNSKEY
/// rdata as `flags protocol algorithm key...`) as static trust anchors of `zone`, which is
/// its `+root`; panics with delv's output on the first not fully validated. The anchors
/// file is written in `dir`.
pub fn delv_from_keys(
    dir: &Path,
    server: SocketAddr,
    zone: &str,
    dnskeys: &[String],
    questions: &[(&str, &str)],
) {
    let apex = format!("{}.", zone.trim_end_matches('.'));
    let mut anchors = String::from("trust-anchors {\n");
    for k in dnskeys {
        let f: Vec<&str> = k.split_whitespace().collect();
        let key = f[3..].join("");
        anchors.push_str(&format!(
            "  {apex} static-key {} {} {} \"{key}\";\n",
            f[0], f[1], f[2]
        ));
    }
    anchors.push_str("};\n");
    let file = dir.join("anchors.conf");
    std::fs::write(&file, anchors).unwrap();
    let delv = judge("delv");
    for (name, qtype) in questions {
        let (_, text) = run_judge(
            Command::new(&delv)
                .arg(format!("@{}", server.ip()))
                .args(["-p", &server.port().to_string(), "-a"])
                .arg(&file)
                .arg(format!("+root={apex}"))
                .args([name, qtype]),
        );
        assert!(
            text.contains("fully validated"),
            "delv does not validate {name} {qtype}:\n{text}"
        );
    }
}

/// A delv trust anchor file, `anchors.conf` in `dir`, from DS records as `shardns key ds`
/// prints them (`NAME IN DS TAG ALG TYPE DIGEST`, comments skipped); beside it
/// `anchors.ds`, the same DS records in zone-file form, for dnsviz ([`dnsviz_from_ds`]).
pub fn ds_anchor_file(dir: &Path, ds: &str) -> PathBuf {
    let (mut anchors, mut records) = (String::from("trust-anchors {\n"), String::new());
    for line in ds.lines().filter(|l| !l.starts_with(';') && !l.is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f[2], "DS", "{line}");
        // The digest may come in pieces.
        let digest = f[6..].concat();
        anchors.push_str(&format!(
            "  {} static-ds {} {} {} \"{digest}\";\n",
            f[0], f[3], f[4], f[5]
        ));
        records.push_str(&format!(
            "{} 2 IN DS {} {} {} {digest}\n",
            f[0], f[3], f[4], f[5]
        ));
    }
    anchors.push_str("};\n");
    std::fs::write(dir.join("anchors.ds"), records).unwrap();
    let path = dir.join("anchors.conf");
    std::fs::write(&path, anchors).unwrap();
    path
}

/// Queues on `judges` dnsviz on `zone` as `server` serves it now, alone, from the DNSKEYs
/// the DS records of `anchors` (a file of [`ds_anchor_file`]) name, `names` below it asked
/// too ([`DnsvizQueue::zone_alone`]: on a snapshot, in a thread of its own): the queue
/// panics with `what` on an error. Without dnsviz it says it skipped (and fails under
/// CI=1).
pub fn dnsviz_from_ds(
    judges: &mut DnsvizQueue,
    server: SocketAddr,
    (zone, anchors): (&str, &Path),
    names: &[&str],
    what: &str,
) {
    if find_dnsviz().is_none() {
        assert!(std::env::var_os("CI").is_none(), "{what}: no dnsviz");
        println!("{what}: SKIPPED dnsviz: not installed (scripts/test.sh installs it)");
        return;
    }
    judges.poll();
    let ds = std::fs::read_to_string(anchors.parent().unwrap().join("anchors.ds")).unwrap();
    let axfr = axfr_text(server, zone, 3);
    judges.zone_alone(what, (zone, axfr), ds, names);
}

/// What changes from one phase of a roll to the next, one a line: a zone's DNSKEY, CDS and
/// CDNSKEY records, the keys its RRSIGs are made with (type covered, algorithm, key tag),
/// as `axfr` (an [`axfr_text`]) has them, and the parent's DS records `parent_ds`. The
/// tests run dnsviz once per state.
pub fn key_state(axfr: &str, parent_ds: &[String]) -> String {
    let mut state = std::collections::BTreeSet::new();
    for line in axfr.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.get(3).copied() {
            Some(t @ ("DNSKEY" | "CDS" | "CDNSKEY")) => {
                state.insert(format!("{t} {}", f[4..].join(" ")))
            }
            Some("RRSIG") if f.len() > 10 => {
                state.insert(format!("RRSIG {} {} {}", f[4], f[5], f[10]))
            }
            _ => false,
        };
    }
    state.extend(parent_ds.iter().map(|ds| format!("DS {ds}")));
    state.into_iter().collect::<Vec<_>>().join("\n")
}
