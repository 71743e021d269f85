//! Outside judges of a signed zone: the zone as `dig` transfers it, `ldns-verify-zone`
//! and `dnssec-verify` on it, and `delv` on its answers from its own keys (scripts/test.sh
//! installs them; a missing one fails the test).

use super::{dig, find_program};
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
