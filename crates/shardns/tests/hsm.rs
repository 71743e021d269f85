//! Keys in an HSM (issue 29 item 5), end to end with the real binary and SoftHSM2: a zone
//! with `dnssec = true` and a PKCS#11 `[[keystore]]` is signed with keys made on the
//! token; its transfer passes `ldns-verify-zone` and `dnssec-verify`, `delv` validates its
//! answers from its own DNSKEY (ECDSA P-256 and P-384, Ed25519, RSA/SHA-256 2048, a KSK and
//! a ZSK), the key directory holds no private key, the token reports each private key
//! sensitive and never extractable, a restart signs
//! with the same token keys; a wrong PIN or a key gone from the token keeps the version
//! served (the zone refused if it was never signed), and the server serves its other zones.
//!
//! SoftHSM2's tokens live in a directory of this test process (`SOFTHSM2_CONF`, which the
//! servers started here inherit); `scripts/test.sh` installs softhsm2. Without it the tests
//! skip, except under CI (`CI` set), where they fail.

mod common;

use common::*;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

const ZONE: &str = "\
$TTL 300
@       SOA ns.hsm.test. admin.hsm.test. 1 3600 600 86400 300
@       NS  ns
ns      A   127.0.0.1
www     A   192.0.2.2
        TXT \"on a token\"
*.wild  A   192.0.2.3
deep.a.b A  192.0.2.4
plain   NS  ns.plain
ns.plain A  192.0.2.5
";

const PLAIN: &str = "\
$TTL 300
@       SOA ns.plain.test. admin.plain.test. 1 3600 600 86400 300
@       NS  ns
ns      A   127.0.0.1
";

const QUESTIONS: &[(&str, &str)] = &[
    ("www.hsm.test", "A"),
    ("www.hsm.test", "TXT"),
    ("www.hsm.test", "AAAA"),
    ("nothere.hsm.test", "A"),
    ("x.wild.hsm.test", "A"),
    ("a.hsm.test", "A"),
    ("hsm.test", "DNSKEY"),
    ("plain.hsm.test", "DS"),
];

const MODULES: [&str; 2] = [
    "/usr/lib/softhsm/libsofthsm2.so",
    "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
];

/// SoftHSM2's module and the token directory of this process, `SOFTHSM2_CONF` set; `None`
/// (the test skips) if SoftHSM2 is not installed, a failure under CI.
fn softhsm() -> Option<&'static (PathBuf, PathBuf)> {
    static SETUP: OnceLock<Option<(PathBuf, PathBuf)>> = OnceLock::new();
    SETUP
        .get_or_init(|| {
            let module = MODULES.iter().map(PathBuf::from).find(|p| p.exists());
            let util = find_program("softhsm2-util", "SOFTHSM2_UTIL");
            let (Some(module), Some(_)) = (module, util) else {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "softhsm2 is not installed (scripts/test.sh installs it)"
                );
                println!("hsm: SKIPPED softhsm2 is not installed (apt-get install softhsm2)");
                return None;
            };
            // Kept for the whole process (the servers read it when they start); under the
            // system's temporary directory, named by pid, removed by the next run.
            let base = std::env::temp_dir();
            for e in std::fs::read_dir(&base).into_iter().flatten().flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(pid) = name.strip_prefix("shardns-e2e-softhsm-") {
                    if !Path::new("/proc").join(pid).exists() {
                        let _ = std::fs::remove_dir_all(e.path());
                    }
                }
            }
            let dir = base.join(format!("shardns-e2e-softhsm-{}", std::process::id()));
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
            // Every test's token made here, before any server starts: softhsm2-util runs
            // beside each other, or beside a server reading the directory, race.
            for label in LABELS {
                let out = Command::new("softhsm2-util")
                    .args(["--init-token", "--free", "--label", label])
                    .args(["--pin", "1234", "--so-pin", "5678"])
                    .output()
                    .unwrap();
                assert!(out.status.success(), "softhsm2-util: {out:?}");
            }
            Some((module, tokens))
        })
        .as_ref()
}

/// The tokens of the tests, one each (user PIN 1234).
const LABELS: [&str; 9] = [
    "p256", "p384", "ed25519", "rsa", "ksk-zsk", "faults", "offline", "update", "roll",
];

/// One test at a time: SoftHSM2 processes sharing a token directory may read another's
/// token while it is written (CKR_GENERAL_ERROR from C_GetTokenInfo).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The token `label` (one of [`LABELS`]): the module and the token directory.
fn init_token(label: &str) -> Option<(&'static Path, &'static Path)> {
    assert!(LABELS.contains(&label), "{label} is not made in softhsm()");
    let (module, tokens) = softhsm()?;
    Some((module.as_path(), tokens.as_path()))
}

/// A config with hsm.test signed on the token `label` (PIN `pin`) and plain.test unsigned.
fn config(data: &TempDir, module: &Path, label: &str, pin: &str, extra: &str) -> PathBuf {
    data.write("hsm.test.zone", ZONE);
    data.write("plain.test.zone", PLAIN);
    std::fs::create_dir_all(data.path().join("keys")).unwrap();
    data.write(
        "shardns.toml",
        &format!(
            "[server]\nkey_directory = \"keys\"\nallow_transfer = [\"127.0.0.1\"]\n\
             [[keystore]]\nname = \"hsm\"\npkcs11_uri = \"pkcs11:token={label};pin-value={pin}\"\n\
             module = \"{}\"\n\
             [[zone]]\nname = \"hsm.test\"\nfile = \"hsm.test.zone\"\ndnssec = true\n\
             keystore = \"hsm\"\n{extra}\
             [[zone]]\nname = \"plain.test\"\nfile = \"plain.test.zone\"\n",
            module.display()
        ),
    )
}

fn start(tag: &str, config: &Path) -> Server {
    Server::start(
        tag,
        &["--workers", "1", "--config", config.to_str().unwrap()],
    )
}

/// The files of the key directory, sorted.
fn key_files(data: &TempDir) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(data.path().join("keys"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| f.starts_with('K'))
        .collect();
    files.sort();
    files
}

/// The DNSKEY records of a transfer, as `flags protocol algorithm key`.
fn dnskeys(axfr: &str) -> Vec<String> {
    let mut keys: Vec<String> = axfr
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(3) == Some(&"DNSKEY")).then(|| f[4..].join(" "))
        })
        .collect();
    keys.sort();
    keys
}

/// delv validates every question with the zone's DNSKEY records as its trust anchors.
fn delv_from_dnskeys(dir: &Path, server: SocketAddr, keys: &[String]) {
    delv_questions(dir, server, keys, QUESTIONS);
}

/// delv validates each of `questions` with the zone's DNSKEY records as trust anchors.
fn delv_questions(dir: &Path, server: SocketAddr, keys: &[String], questions: &[(&str, &str)]) {
    delv_from_keys(dir, server, "hsm.test", keys, questions);
}

fn serial(server: SocketAddr, zone: &str) -> String {
    dig(server, &["+short", zone, "SOA"])
        .split_whitespace()
        .nth(2)
        .unwrap_or_default()
        .to_string()
}

#[test]
fn keys_made_on_the_token_sign_and_survive_a_restart() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if find_dnsviz().is_none() {
        assert!(std::env::var_os("CI").is_none(), "hsm: no dnsviz");
        println!("hsm: SKIPPED: no dnsviz (scripts/test.sh installs it)");
        return;
    }
    // dnsviz's judgements (each key type's zone), on snapshots, in a thread of their own.
    let mut judges = DnsvizQueue::new();
    for (label, extra, alg) in [
        ("p256", "", " 13 "),
        ("p384", "algorithm = \"ecdsap384sha384\"\n", " 14 "),
        ("ed25519", "algorithm = \"ed25519\"\n", " 15 "),
        ("rsa", "algorithm = \"rsasha256\"\n", " 8 "),
        ("ksk-zsk", "single_type_signing = false\n", " 13 "),
    ] {
        let Some((module, _)) = init_token(label) else {
            return;
        };
        let data = TempDir::new(&format!("hsm-{label}"));
        let config = config(&data, module, label, "1234", extra);
        let server = start(&format!("hsm-{label}-srv"), &config);
        let text = axfr_text(server.addr4(), "hsm.test", 10);
        let signed = data.write("axfr.zone", &text);
        verify_zone_file(&signed, "hsm.test").unwrap_or_else(|e| panic!("{label}: {e}"));
        let keys = dnskeys(&text);
        let shape = if label == "ksk-zsk" { 2 } else { 1 };
        assert_eq!(keys.len(), shape, "{label}: {keys:?}");
        assert!(keys.iter().all(|k| k.contains(alg)), "{label}: {keys:?}");
        delv_from_dnskeys(data.path(), server.addr4(), &keys);
        // The key directory says where each key is; no private key is there.
        let files = key_files(&data);
        assert_eq!(files.len(), 2 * shape, "{label}: {files:?}");
        assert!(
            files
                .iter()
                .all(|f| f.ends_with(".key") || f.ends_with(".pkcs11")),
            "{label}: {files:?}"
        );
        for f in &files {
            let body = std::fs::read_to_string(data.path().join("keys").join(f)).unwrap();
            assert!(
                !body.contains("PrivateKey:") && !body.contains("PrivateExponent"),
                "{f}"
            );
        }
        // `shardns key ds` reads the keys without the token.
        let ds = Command::new(BIN)
            .args(["key", "ds", "hsm.test", "--key-dir"])
            .arg(data.path().join("keys"))
            .output()
            .unwrap();
        assert!(ds.status.success(), "{ds:?}");
        // dnsviz from that DS set, on a snapshot of the zone (its keys on the token are in
        // the DNSKEY RRset, the signatures made there).
        let ds = String::from_utf8_lossy(&ds.stdout);
        let anchors = ds_anchor_file(data.path(), &ds);
        let ds = std::fs::read_to_string(anchors.with_file_name("anchors.ds")).unwrap();
        let names = ["www.hsm.test", "x.wild.hsm.test"];
        judges.zone_alone(&format!("hsm {label}"), ("hsm.test", text), ds, &names);
        drop(server);

        // A restart signs with the same keys, found on the token again.
        std::fs::remove_dir_all(data.path().join("keys/state")).unwrap();
        let server = start(&format!("hsm-{label}-again"), &config);
        let again = axfr_text(server.addr4(), "hsm.test", 10);
        assert_eq!(dnskeys(&again), keys, "{label}: other keys after a restart");
        assert_eq!(key_files(&data), files, "{label}");
        let signed = data.write("axfr2.zone", &again);
        verify_zone_file(&signed, "hsm.test").unwrap_or_else(|e| panic!("{label}: {e}"));
        assert!(
            server.log().contains("signed with serial"),
            "{}",
            server.log()
        );
        drop(server);
        // Each private key, as the token itself reports it: sensitive, never extractable.
        let token = shardns_dnssec::pkcs11::Token::open(
            module,
            &format!("pkcs11:token={label};pin-value=1234"),
        )
        .unwrap();
        for id in token_ids(&data) {
            let p = token.protection(&id).unwrap();
            assert!(
                p.sensitive && !p.extractable && p.never_extractable,
                "{label}: {p:?}"
            );
        }
    }
}

/// The `Pkcs11Id:` (CKA_ID) of each `.pkcs11` file of the key directory.
fn token_ids(data: &TempDir) -> Vec<Vec<u8>> {
    let ids: Vec<Vec<u8>> = key_files(data)
        .iter()
        .filter(|f| f.ends_with(".pkcs11"))
        .map(|f| {
            let body = std::fs::read_to_string(data.path().join("keys").join(f)).unwrap();
            let hex = body
                .lines()
                .find_map(|l| l.strip_prefix("Pkcs11Id:"))
                .unwrap_or_else(|| panic!("{f}: no Pkcs11Id:\n{body}"))
                .trim();
            (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect()
        })
        .collect();
    assert!(!ids.is_empty(), "no .pkcs11 file");
    ids
}

#[test]
fn a_token_that_fails_keeps_what_is_served() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((module, tokens)) = init_token("faults") else {
        return;
    };
    // A wrong PIN at the first start: the zone is refused (never signed), said in the log;
    // the other zone is served.
    let data = TempDir::new("hsm-faults");
    let bad = config(&data, module, "faults", "0000", "");
    let server = start("hsm-faults-badpin", &bad);
    assert_eq!(serial(server.addr4(), "plain.test"), "1");
    let soa = dig(server.addr4(), &["hsm.test", "SOA"]);
    assert!(soa.contains("REFUSED"), "{soa}");
    assert!(server.log().contains("wrong PIN"), "{}", server.log());
    assert!(key_files(&data).is_empty());
    drop(server);

    // With the right PIN it is signed; then a restart with a wrong PIN serves the signed
    // zone kept, as it was.
    let good = config(&data, module, "faults", "1234", "");
    let server = start("hsm-faults-good", &good);
    let first = axfr_text(server.addr4(), "hsm.test", 10);
    drop(server);
    let bad = config(&data, module, "faults", "0000", "");
    let mut server = start("hsm-faults-kept", &bad);
    server.wait_for_log("until the token answers", Duration::from_secs(5));
    assert_eq!(axfr_text(server.addr4(), "hsm.test", 10), first);
    drop(server);

    // A key that disappears from the token while the zone is served: the new version
    // cannot be signed, the log says so, and the signed version served stays.
    let good = config(&data, module, "faults", "1234", "");
    let mut server = start("hsm-faults-gone", &good);
    let before = axfr_text(server.addr4(), "hsm.test", 10);
    let mut removed = 0;
    for dir in std::fs::read_dir(tokens).unwrap().flatten() {
        // Only this test's token (its label is in its token.object).
        let token = std::fs::read(dir.path().join("token.object")).unwrap_or_default();
        if !contains(&token, b"faults") {
            continue;
        }
        for f in std::fs::read_dir(dir.path()).unwrap().flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            let ours = std::fs::read(f.path()).unwrap_or_default();
            // This token's key objects (SoftHSM2 keeps one file per object).
            if name.ends_with(".object") && contains(&ours, b"hsm.test.") {
                std::fs::remove_file(f.path()).unwrap();
                removed += 1;
            }
        }
    }
    assert!(
        removed >= 1,
        "no key object of the token found in {}",
        tokens.display()
    );
    data.write("hsm.test.zone", &ZONE.replace(" 1 3600 ", " 2 3600 "));
    let out = Command::new(BIN)
        .args(["reload", "hsm.test", "--control"])
        .arg(&server.control)
        .output()
        .unwrap();
    assert!(
        !out.status.success() || server.log().contains("cannot sign"),
        "{out:?}"
    );
    server.wait_for_log("cannot sign the zone", Duration::from_secs(10));
    assert_eq!(axfr_text(server.addr4(), "hsm.test", 10), before);
    assert_eq!(serial(server.addr4(), "plain.test"), "1");
}

/// `shardns ARGS`: whether it exited 0, and both streams.
fn shardns(args: &[&str]) -> (bool, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    (
        out.status.success(),
        text + &String::from_utf8_lossy(&out.stderr),
    )
}

/// An offline KSK on a token: `shardns key sign-ksr --keystore NAME --config FILE` signs
/// a KSR with a KSK whose private half is on the token (its key directory holds its
/// `.pkcs11` file only), and the server's `import-skr` verifies and takes the response.
/// Without the keystore the same key directory is refused with a message that says why;
/// a keystore the config does not have, likewise.
#[test]
fn an_offline_ksk_on_a_token_signs_a_ksr() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((module, _)) = init_token("offline") else {
        return;
    };
    let data = TempDir::new("hsm-offline");
    let (zsks, ksks) = (data.path().join("zsk"), data.path().join("ksk"));
    std::fs::create_dir_all(&ksks).unwrap();
    std::fs::create_dir_all(&zsks).unwrap();
    let zsk_dir = zsks.to_str().unwrap();
    let base = ["--key-dir", zsk_dir];
    let run = |args: &[&str]| {
        let (ok, out) = shardns(args);
        assert!(ok, "shardns {args:?}:\n{out}");
        out
    };
    run(&[
        &["key", "pregenerate", "hsm.test", "--to", "+3h"][..],
        &base,
        &[
            "--zsk-lifetime",
            "1h",
            "--max-ttl",
            "5m",
            "--dnskey-ttl",
            "5m",
        ],
    ]
    .concat());
    let ksr = run(&[
        &["key", "ksr", "hsm.test", "--to", "+3h", "--ttl", "5m"][..],
        &base,
    ]
    .concat());
    let ksr_file = data.write("hsm.test.ksr", &ksr);
    // The KSK made on the token, as a server with this keystore makes its keys.
    let uri = "pkcs11:token=offline;pin-value=1234";
    let token = shardns_dnssec::pkcs11::Token::open(module, uri).unwrap();
    let store = shardns_dnssec::KeyStore::open(&ksks)
        .unwrap()
        .with_token(Some(token));
    let apex: shardns_wire::Name = "hsm.test.".parse().unwrap();
    let ksk = store
        .make(
            &apex,
            shardns_dnssec::Algorithm::EcdsaP256Sha256,
            shardns_dnssec::Role::Ksk,
            0,
        )
        .unwrap();
    store.save_new(&ksk).unwrap();
    let files: Vec<String> = std::fs::read_dir(&ksks)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(files.iter().any(|f| f.ends_with(".pkcs11")), "{files:?}");
    assert!(!files.iter().any(|f| f.ends_with(".private")), "{files:?}");
    let config = data.write(
        "ksk.toml",
        &format!(
            "[server]\nkey_directory = \"ksk\"\n[[keystore]]\nname = \"hsm\"\n\
             pkcs11_uri = \"{uri}\"\nmodule = \"{}\"\n",
            module.display()
        ),
    );
    let (ksr_path, conf) = (ksr_file.to_str().unwrap(), config.to_str().unwrap());
    let skr = run(&[
        "key",
        "sign-ksr",
        ksr_path,
        "--keystore",
        "hsm",
        "--config",
        conf,
    ]);
    assert_eq!(
        skr.matches(";; period ").count(),
        ksr.matches(";; period ").count(),
        "{skr}"
    );
    assert!(skr.contains(" RRSIG DNSKEY 13 2 300 "), "{skr}");
    let skr_file = data.write("hsm.test.skr", &skr);
    let said = run(&[
        &["key", "import-skr", "hsm.test", skr_file.to_str().unwrap()][..],
        &base,
    ]
    .concat());
    assert!(said.contains("SKR imported"), "{said}");

    let (signed, said) = shardns(&["key", "sign-ksr", ksr_path, "--config", conf]);
    assert!(!signed && said.contains("is on a PKCS#11 token"), "{said}");
    let (signed, said) = shardns(&[
        "key",
        "sign-ksr",
        ksr_path,
        "--keystore",
        "nope",
        "--config",
        conf,
    ]);
    assert!(
        !signed && said.contains("no [[keystore]] of that name"),
        "{said}"
    );
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The update key (hmac-sha256) of `signed_updates_are_signed_on_the_token`.
const UPDATE_KEY: &str = "hmac-sha256:upd.:dXBkYXRlLWtleS1mb3ItdGhlLWUyZS10ZXN0cy0wMDE=";

/// A dynamic update signed with TSIG (BIND's `nsupdate -y`) to a zone whose key is on the
/// token: the new RRsets are signed there by the zone's key (the RRSIG's key tag), the
/// deleted one is gone with a signed denial, the transfer passes ldns-verify-zone and
/// dnssec-verify, delv validates the new data; an update with the wrong secret changes
/// nothing; the key directory still holds no private key.
#[test]
fn signed_updates_are_signed_on_the_token() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((module, _)) = init_token("update") else {
        return;
    };
    let Some(nsupdate) = find_program("nsupdate", "NSUPDATE") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "nsupdate is not installed"
        );
        println!("hsm: SKIPPED nsupdate: not installed (bind9-dnsutils)");
        return;
    };
    let data = TempDir::new("hsm-update");
    let (_, name, secret) = {
        let f: Vec<&str> = UPDATE_KEY.split(':').collect();
        (f[0], f[1], f[2])
    };
    let extra = format!(
        "update_policy = [\"grant {name} zonesub ANY\"]\n\
         [[key]]\nname = \"{name}\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{secret}\"\n"
    );
    let config = config(&data, module, "update", "1234", &extra);
    let server = start("hsm-update-srv", &config);
    let keys = dnskeys(&axfr_text(server.addr4(), "hsm.test", 10));
    assert_eq!(keys.len(), 1, "{keys:?}");
    let files = key_files(&data);
    let tag = files[0]
        .rsplit('+')
        .next()
        .and_then(|t| t.split('.').next())
        .unwrap()
        .trim_start_matches('0')
        .to_string();

    let send = |file: &str, key: &str, body: &str| {
        let script = format!(
            "server {} {}\nzone hsm.test.\n{body}send\n",
            server.addr4().ip(),
            server.addr4().port()
        );
        let script = data.write(file, &script);
        run_judge(
            Command::new(&nsupdate)
                .args(["-t", "5", "-u", "2", "-r", "0", "-y", key])
                .arg(script),
        )
    };
    let wrong = UPDATE_KEY.replace(secret, "d3Jvbmctc2VjcmV0LWZvci10aGUtZTJlLXRlc3RzLTE=");
    let (ok, out) = send(
        "bad.upd",
        &wrong,
        "update add bad.hsm.test. 300 A 192.0.2.66\n",
    );
    assert!(!ok, "an update with the wrong secret was taken: {out}");
    assert_eq!(serial(server.addr4(), "hsm.test"), "1");

    let (ok, out) = send(
        "good.upd",
        UPDATE_KEY,
        "update add new.hsm.test. 300 A 192.0.2.9\n\
         update add new.hsm.test. 300 TXT \"signed on the token\"\n\
         update delete www.hsm.test. TXT\n",
    );
    assert!(ok, "nsupdate: {out}\n--- shardns:\n{}", server.log());
    assert_eq!(serial(server.addr4(), "hsm.test"), "2");
    let text = axfr_text(server.addr4(), "hsm.test", 10);
    assert!(!text.contains("bad.hsm.test."), "{text}");
    let signed = data.write("axfr-updated.zone", &text);
    verify_zone_file(&signed, "hsm.test").unwrap_or_else(|e| panic!("after the update: {e}"));
    // The new RRsets' signatures are the token key's.
    for qtype in ["A", "TXT"] {
        let answer = dig(
            server.addr4(),
            &["+dnssec", "+short", "new.hsm.test", qtype],
        );
        let sig = answer
            .lines()
            .find(|l| l.starts_with(qtype) && l.split_whitespace().count() > 8)
            .unwrap_or_else(|| panic!("no RRSIG for new.hsm.test {qtype}:\n{answer}"));
        assert_eq!(
            sig.split_whitespace().nth(6),
            Some(tag.as_str()),
            "{qtype}: {sig}"
        );
    }
    assert!(dig(server.addr4(), &["+short", "www.hsm.test", "TXT"]).is_empty());
    delv_questions(
        data.path(),
        server.addr4(),
        &keys,
        &[
            ("new.hsm.test", "A"),
            ("new.hsm.test", "TXT"),
            ("www.hsm.test", "TXT"),
            ("www.hsm.test", "A"),
        ],
    );
    assert_eq!(key_files(&data), files, "the update made or lost keys");
    assert!(files.iter().all(|f| !f.ends_with(".private")), "{files:?}");
}

/// hsm.test with every TTL 2 s: with `propagation_delay = 2` a rollover step waits 4 s.
const ROLL_ZONE: &str = "\
$TTL 2
@       SOA ns.hsm.test. admin.hsm.test. 1 3600 600 86400 2
@       NS  ns
ns      A   127.0.0.1
www     A   192.0.2.2
";

/// The key tags of the DNSKEYs of a transfer, and of the keys signing `www.hsm.test. A`.
fn roll_state(axfr: &str) -> (Vec<u16>, Vec<u16>) {
    let mut keys = Vec::new();
    let mut signers = Vec::new();
    for l in axfr.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.get(3) == Some(&"DNSKEY") {
            let rdata = f[4..].join(" ");
            keys.push(shardns_dnssec_tag(&rdata));
        } else if f.first() == Some(&"www.hsm.test.") && f.get(3) == Some(&"RRSIG") && f[4] == "A" {
            signers.push(f[10].parse().unwrap());
        }
    }
    keys.sort_unstable();
    signers.sort_unstable();
    (keys, signers)
}

/// The key tag (RFC 4034 appendix B) of a DNSKEY's presentation rdata
/// (`flags protocol algorithm base64...`).
fn shardns_dnssec_tag(rdata: &str) -> u16 {
    let f: Vec<&str> = rdata.split_whitespace().collect();
    let flags: u16 = f[0].parse().unwrap();
    let mut wire = flags.to_be_bytes().to_vec();
    wire.push(f[1].parse().unwrap());
    wire.push(f[2].parse().unwrap());
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let (mut acc, mut bits) = (0u32, 0);
    for c in f[3..].concat().bytes().filter(|&c| c != b'=') {
        let v = B64.iter().position(|&b| b == c).expect("base64") as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            wire.push((acc >> bits) as u8);
        }
    }
    shardns_dnssec::key_tag(&wire)
}

/// The zone's transfer judged: ldns-verify-zone, dnssec-verify, and delv from the KSK.
fn judge_roll(data: &TempDir, server: SocketAddr, ksk: &[String], step: &str) -> String {
    let text = axfr_text(server, "hsm.test", 5);
    let file = data.write(&format!("axfr-{}.zone", step.replace(' ', "-")), &text);
    verify_zone_file(&file, "hsm.test").unwrap_or_else(|e| panic!("{step}: {e}"));
    delv_questions(
        data.path(),
        server,
        ksk,
        &[("www.hsm.test", "A"), ("nothere.hsm.test", "A")],
    );
    text
}

/// The token goes away in the middle of a ZSK rollover (its SoftHSM2 directory moved out
/// of the token directory): the signing fails and the log says so, the zone stays served
/// as it was (the new ZSK published, the old one signing), valid, past the new key's
/// Activate; the token back, the signer's retry (a refresh/8 after the failure) finds it
/// and the roll goes on by itself (the new ZSK signs, the old one withdrawn), judged at
/// each step.
#[test]
fn a_token_gone_mid_roll_keeps_the_zone_and_the_roll_resumes() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((module, tokens)) = init_token("roll") else {
        return;
    };
    let data = TempDir::new("hsm-roll");
    // A zone whose signing failed is tried again after a refresh/8: 2 s here.
    let extra = "single_type_signing = false\npropagation_delay = 2\n\
                 signature_validity = \"1h\"\nsignature_refresh = \"16s\"\n";
    let config = config(&data, module, "roll", "1234", extra);
    data.write("hsm.test.zone", ROLL_ZONE);
    let mut server = start("hsm-roll-srv", &config);
    let at = server.addr4();
    let first = axfr_text(at, "hsm.test", 5);
    let ksk: Vec<String> = dnskeys(&first)
        .into_iter()
        .filter(|k| k.starts_with("257 "))
        .collect();
    assert_eq!(ksk.len(), 1, "{first}");
    let (keys, signers) = roll_state(&judge_roll(&data, at, &ksk, "signed"));
    assert_eq!((keys.len(), signers.len()), (2, 1), "{first}");
    let old = signers[0];

    let (ok, out) = shardns(&[
        "key",
        "rollover",
        "hsm.test",
        "--zsk",
        "--key-dir",
        data.path().join("keys").to_str().unwrap(),
    ]);
    assert!(ok && out.contains("ZSK rollover started"), "{out}");
    assert!(reload_zone(&server).status.success());
    let published = judge_roll(&data, at, &ksk, "published");
    let (keys, signers) = roll_state(&published);
    assert_eq!((keys.len(), &signers[..]), (3, &[old][..]), "{published}");

    // The token's directory goes away.
    let dir = std::fs::read_dir(tokens)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|d| {
            contains(
                &std::fs::read(d.join("token.object")).unwrap_or_default(),
                b"roll",
            )
        })
        .expect("the token's directory");
    let away = data.path().join("token-away");
    std::fs::rename(&dir, &away).unwrap();
    // The new key's Activate (a key event) or a retry finds the token gone.
    server.wait_for_log("cannot sign the zone", Duration::from_secs(8));
    // Past the new key's Activate (4 s after its publication), with the signer's own
    // retries: what is served stays as it was.
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while std::time::Instant::now() < until {
        assert_eq!(
            axfr_text(at, "hsm.test", 5),
            published,
            "moved on without the token"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(!reload_zone(&server).status.success());
    judge_roll(&data, at, &ksk, "token gone");

    // The token back: the roll goes on to its end.
    std::fs::rename(&away, &dir).unwrap();
    // No reload: the signer's own retry finds it.
    let new = *keys
        .iter()
        .find(|&&k| !signers.contains(&k) && k != tag_of(&ksk[0]))
        .unwrap();
    let mut seen_signing = false;
    let until = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let text = judge_roll(&data, at, &ksk, "resumed");
        let (keys, signers) = roll_state(&text);
        seen_signing |= signers == [new];
        if seen_signing && keys.len() == 2 && !keys.contains(&old) {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "the roll did not finish: {keys:?} {signers:?}\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(700));
    }
}

fn tag_of(dnskey: &str) -> u16 {
    shardns_dnssec_tag(dnskey)
}

/// `shardns reload hsm.test`: the zone read and signed again even if its file is unchanged.
fn reload_zone(server: &Server) -> std::process::Output {
    Command::new(BIN)
        .args(["reload", "hsm.test", "--control"])
        .arg(&server.control)
        .output()
        .unwrap()
}
