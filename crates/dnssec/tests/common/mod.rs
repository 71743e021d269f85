//! Helpers of the integration tests: zone text in, records out; scratch directories; the
//! external verifiers, found or skipped.
#![allow(dead_code)]

use shardns_wire::text::Token;
use shardns_wire::{rdata, Class, Name, RType, Record};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// Splits rdata text into tokens: whitespace-separated, `"..."` quoted strings kept whole,
/// parentheses dropped (no escapes inside quotes are needed by our tests).
fn tokens(text: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        if let Some(q) = rest.strip_prefix('"') {
            let end = q.find('"').expect("closing quote");
            out.push(Token::quoted(&q.as_bytes()[..end]));
            rest = q[end + 1..].trim_start();
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let t = &rest[..end];
            if t != "(" && t != ")" {
                out.push(Token::plain(t.as_bytes()));
            }
            rest = rest[end..].trim_start();
        }
    }
    out
}

/// Parses one-record-per-line zone text: `owner [ttl] [class] type rdata`, `;` comments,
/// `@` and relative owners against `origin`, TTL 3600 when missing. Enough for our test
/// zones and for `dnssec-signzone -O full` output.
pub(crate) fn parse_zone(text: &str, origin: &str) -> Vec<Record> {
    let origin: Name = origin.parse().unwrap();
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split(';').next().unwrap().trim();
        if line.is_empty() || line.starts_with('$') {
            continue;
        }
        let mut parts = line.splitn(2, char::is_whitespace);
        let owner = parts.next().unwrap();
        let mut rest = parts.next().unwrap_or("").trim_start();
        let owner = if owner == "@" {
            origin.clone()
        } else {
            Name::from_text(owner, Some(origin.as_ref())).unwrap()
        };
        let mut ttl = 3600;
        let rtype = loop {
            let (word, after) = rest.split_at(rest.find(char::is_whitespace).unwrap_or(rest.len()));
            rest = after.trim_start();
            if let Ok(t) = word.parse::<u32>() {
                ttl = t;
            } else if word.eq_ignore_ascii_case("IN") {
            } else {
                break RType::from_text(word).unwrap_or_else(|| panic!("type in {line}"));
            }
        };
        let mut data = Vec::new();
        rdata::from_text(rtype, &tokens(rest), origin.as_ref(), &mut data)
            .unwrap_or_else(|e| panic!("{line}: {e}"));
        out.push(Record {
            owner,
            rtype,
            class: Class::IN,
            ttl,
            rdata: data,
        });
    }
    out
}

/// Writes records one per line in presentation format.
pub(crate) fn zone_text(records: &[Record]) -> String {
    let mut s = String::new();
    for r in records {
        s.push_str(&r.to_string());
        s.push('\n');
    }
    s
}

/// A fresh directory under the system's temporary directory, removed on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new(what: &str) -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let dir = std::env::temp_dir().join(format!(
            "shardns-dnssec-{what}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Seconds since 1970.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The path of an installed program, if it is installed.
pub(crate) fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/bin".into(), "/sbin".into()])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Runs a program; returns whether it exited 0 and what it printed (both streams).
pub(crate) fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}
