//! Helpers for the unit tests: rdata and records from presentation format.

use shardns_wire::text::Token;
use shardns_wire::{rdata, Class, Name, NameRef, RType, Record};

/// Rdata of `rtype` from its presentation form (no quoted strings), absolute names.
pub(crate) fn rd(rtype: RType, text: &str) -> Vec<u8> {
    let tokens: Vec<Token<'_>> = text
        .split_ascii_whitespace()
        .map(|t| Token::plain(t.as_bytes()))
        .collect();
    let mut out = Vec::new();
    rdata::from_text(rtype, &tokens, NameRef::ROOT, &mut out)
        .unwrap_or_else(|e| panic!("{rtype} {text}: {e}"));
    out
}

/// A name from text.
pub(crate) fn name(s: &str) -> Name {
    s.parse().unwrap()
}

/// One record from `owner ttl TYPE rdata` (class IN), names relative to `origin`.
pub(crate) fn rec(line: &str, origin: &str) -> Record {
    let mut parts = line.split_ascii_whitespace();
    let owner = parts.next().unwrap();
    let origin = name(origin);
    let owner = if owner == "@" {
        origin.clone()
    } else {
        Name::from_text(owner, Some(origin.as_ref())).unwrap()
    };
    let ttl: u32 = parts.next().unwrap().parse().unwrap();
    let rtype = RType::from_text(parts.next().unwrap()).unwrap();
    let rest: Vec<&str> = parts.collect();
    let tokens: Vec<Token<'_>> = rest.iter().map(|t| Token::plain(t.as_bytes())).collect();
    let mut rdata = Vec::new();
    rdata::from_text(rtype, &tokens, origin.as_ref(), &mut rdata)
        .unwrap_or_else(|e| panic!("{line}: {e}"));
    Record {
        owner,
        rtype,
        class: Class::IN,
        ttl,
        rdata,
    }
}

/// The SoftHSM2 token of this test process: `(module, URI)`, one token initialised (PIN
/// 1234) in a temporary directory on first use, `SOFTHSM2_CONF` pointing at it (SoftHSM2
/// reads its tokens when the module is initialised, once per process, so every test of the
/// process shares the token). `None` if SoftHSM2 is not installed: the test skips, except
/// under CI (`CI` set), where the test script installs it and a skip would hide a failure.
pub(crate) fn softhsm() -> Option<(std::path::PathBuf, String)> {
    use std::sync::OnceLock;
    static TOKEN: OnceLock<Option<(std::path::PathBuf, String)>> = OnceLock::new();
    TOKEN
        .get_or_init(|| {
            let module = [
                "/usr/lib/softhsm/libsofthsm2.so",
                "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
            ]
            .map(std::path::PathBuf::from)
            .into_iter()
            .find(|p| p.exists());
            let util = std::process::Command::new("softhsm2-util")
                .arg("--version")
                .output();
            let (Some(module), Ok(_)) = (module, util) else {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "SoftHSM2 is not installed (scripts/test.sh installs softhsm2)"
                );
                eprintln!("SoftHSM2 not installed: skipping the PKCS#11 tests");
                return None;
            };
            // A static outlives the tests: the directories of finished runs go here.
            for e in std::fs::read_dir(std::env::temp_dir())
                .into_iter()
                .flatten()
                .flatten()
            {
                let f = e.file_name().to_string_lossy().into_owned();
                let pid = f.strip_prefix("shardns-softhsm-");
                if pid.is_some_and(|p| !std::path::Path::new("/proc").join(p).exists()) {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
            let dir = std::env::temp_dir().join(format!("shardns-softhsm-{}", std::process::id()));
            let tokens = dir.join("tokens");
            std::fs::create_dir_all(&tokens).unwrap();
            let conf = dir.join("softhsm2.conf");
            std::fs::write(
                &conf,
                format!(
                    "directories.tokendir = {}\nobjectstore.backend = file\nlog.level = ERROR\n",
                    tokens.display()
                ),
            )
            .unwrap();
            std::env::set_var("SOFTHSM2_CONF", &conf);
            // "pin" is for the wrong-PIN test: a token nobody logs in to (once logged in,
            // SoftHSM2 answers any login of the process "already logged in").
            for label in ["unit", "pin"] {
                let out = std::process::Command::new("softhsm2-util")
                    .args(["--init-token", "--free", "--label", label])
                    .args(["--pin", "1234", "--so-pin", "5678"])
                    .output()
                    .unwrap();
                assert!(out.status.success(), "softhsm2-util: {out:?}");
            }
            Some((module, "pkcs11:token=unit;pin-value=1234".to_string()))
        })
        .clone()
}
