//! Our signed zones checked by verifiers we did not write (ldns-verify-zone, BIND's
//! dnssec-verify), and BIND's signatures checked by ours. A missing tool skips its part
//! with a message; CI installs them (scripts/test.sh).

mod common;

use common::{now, parse_zone, run, tool, zone_text, TempDir};
use shardns_dnssec::keys::zone_keys;
use shardns_dnssec::sign::RrsigFields;
use shardns_dnssec::{
    sign_zone, verify_rrsig, Algorithm, Denial, KeyStore, Nsec3Params, Policy, Role, SignParams,
    SigningKey, ZoneKey,
};
use shardns_wire::{Name, RType, Record};
use std::process::Command;

/// A small zone with what signing must get right: a wildcard, an empty non-terminal,
/// a signed and an unsigned delegation with glue, a CNAME, a DNAME with occluded data, and
/// an unsigned delegation below an empty non-terminal (opt-out leaves both out).
const ZONE: &str = "
@ 3600 IN SOA ns1.example.com. hostmaster.example.com. 2024010101 3600 900 604800 300
@ 3600 IN NS ns1.example.com.
@ 3600 IN NS ns2.example.com.
@ 3600 IN MX 10 mail.example.com.
@ 3600 IN A 192.0.2.1
ns1 3600 IN A 192.0.2.53
ns2 3600 IN AAAA 2001:db8::53
mail 3600 IN A 192.0.2.25
www 3600 IN CNAME @
*.wild 3600 IN A 192.0.2.80
*.wild 3600 IN TXT \"wildcard text\"
host.a.b.ent 3600 IN A 192.0.2.81
secure 3600 IN NS ns.secure.example.com.
secure 3600 IN DS 12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF
ns.secure 3600 IN A 192.0.2.82
insecure 3600 IN NS ns.insecure.example.com.
insecure 3600 IN NS ns.example.net.
ns.insecure 3600 IN A 192.0.2.83
ns.insecure 3600 IN AAAA 2001:db8::83
deep.x.optout 3600 IN NS ns.example.net.
dname 3600 IN DNAME example.net.
srv._tcp 3600 IN SRV 0 5 5060 Mail.Example.COM.
";

const APEX: &str = "example.com.";

fn denials() -> [(&'static str, Denial); 3] {
    [
        ("nsec", Denial::Nsec),
        (
            "nsec3",
            Denial::Nsec3 {
                params: Nsec3Params::default(),
                opt_out: false,
            },
        ),
        (
            "nsec3-optout",
            Denial::Nsec3 {
                params: Nsec3Params::default(),
                opt_out: true,
            },
        ),
    ]
}

fn sign(records: Vec<Record>, keys: &[ZoneKey<'_>], denial: Denial) -> Vec<Record> {
    let mut params = SignParams::new(now(), &Policy::default());
    params.denial = denial;
    sign_zone(&APEX.parse().unwrap(), records, keys, &params)
        .unwrap()
        .records
}

/// Runs ldns-verify-zone and dnssec-verify on a zone file; panics with their output if
/// either rejects it. Returns the tools' output. dnssec-verify counts only keys without the
/// SEP flag as ZSKs, so a zone signed by one CSK is checked with its `-z` ("all records
/// signed with KSKs"), as BIND's own `dnssec-signzone -z` zones are.
fn external_verify(dir: &TempDir, what: &str, records: &[Record]) -> String {
    let file = dir.path().join(format!("{what}.zone"));
    std::fs::write(&file, zone_text(records)).unwrap();
    let mut said = String::new();
    if let Some(ldns) = tool("ldns-verify-zone") {
        let (ok, out) = run(Command::new(ldns).arg(&file));
        assert!(ok, "ldns-verify-zone rejects {what}:\n{out}");
        said.push_str(&format!("ldns-verify-zone {what}: {}\n", out.trim()));
    } else {
        println!("SKIPPED ldns-verify-zone: not installed (Debian package ldnsutils)");
    }
    if let Some(bind) = tool("dnssec-verify") {
        let csk_only = records
            .iter()
            .filter(|r| r.rtype == RType::DNSKEY)
            .all(|r| r.rdata[1] & 1 == 1);
        let mut cmd = Command::new(bind);
        cmd.args(["-o", APEX]);
        if csk_only {
            cmd.arg("-z");
        }
        let (ok, out) = run(cmd.arg(&file));
        assert!(ok, "dnssec-verify rejects {what}:\n{out}");
        said.push_str(&format!("dnssec-verify {what}: {}\n", out.trim()));
    } else {
        println!("SKIPPED dnssec-verify: not installed (Debian package bind9-utils)");
    }
    said
}

#[test]
fn our_signed_zones_pass_ldns_and_bind() {
    let dir = TempDir::new("ours");
    for alg in [Algorithm::EcdsaP256Sha256, Algorithm::Ed25519] {
        let csk = SigningKey::generate(alg, 257).unwrap();
        for (what, denial) in denials() {
            let zone = sign(parse_zone(ZONE, APEX), &[ZoneKey::csk(&csk)], denial);
            let said = external_verify(&dir, &format!("{alg}-{what}"), &zone);
            print!("{said}");
        }
    }
    // KSK + ZSK, and a published key that does not sign yet.
    let ksk = SigningKey::generate(Algorithm::EcdsaP256Sha256, 257).unwrap();
    let zsk = SigningKey::generate(Algorithm::EcdsaP256Sha256, 256).unwrap();
    let next = SigningKey::generate(Algorithm::EcdsaP256Sha256, 256).unwrap();
    let keys = [
        ZoneKey::ksk(&ksk),
        ZoneKey::zsk(&zsk),
        ZoneKey::published(&next),
    ];
    let zone = sign(parse_zone(ZONE, APEX), &keys, denials()[1].1.clone());
    print!("{}", external_verify(&dir, "ksk-zsk-nsec3", &zone));
}

#[test]
fn a_broken_signature_is_caught_by_ldns() {
    // The external check can fail: a zone with one signature changed is rejected.
    let Some(ldns) = tool("ldns-verify-zone") else {
        println!("SKIPPED: ldns-verify-zone not installed (Debian package ldnsutils)");
        return;
    };
    let dir = TempDir::new("broken");
    let key = SigningKey::generate(Algorithm::EcdsaP256Sha256, 257).unwrap();
    let mut zone = sign(parse_zone(ZONE, APEX), &[ZoneKey::csk(&key)], Denial::Nsec);
    let mail: Name = "mail.example.com.".parse().unwrap();
    let sig = zone
        .iter_mut()
        .find(|r| r.rtype == RType::RRSIG && r.owner == mail)
        .unwrap();
    *sig.rdata.last_mut().unwrap() ^= 0x55;
    let file = dir.path().join("broken.zone");
    std::fs::write(&file, zone_text(&zone)).unwrap();
    let (ok, out) = run(Command::new(ldns).arg(&file));
    assert!(!ok, "ldns-verify-zone accepted a bad signature:\n{out}");
}

/// Checks every RRSIG of a zone with our verifier against the zone's DNSKEYs; returns how
/// many there were, or the first that does not verify.
fn verify_with_ours(zone: &[Record]) -> Result<usize, String> {
    let keys: Vec<&Record> = zone.iter().filter(|r| r.rtype == RType::DNSKEY).collect();
    let mut n = 0;
    for sig in zone.iter().filter(|r| r.rtype == RType::RRSIG) {
        let (f, _) = RrsigFields::parse(&sig.rdata).unwrap();
        let rrset = zone
            .iter()
            .filter(|r| r.rtype == f.type_covered && r.owner == sig.owner)
            .map(|r| &r.rdata[..]);
        let ok = keys.iter().any(|k| {
            verify_rrsig(
                &sig.rdata,
                sig.owner.as_ref(),
                sig.class,
                f.type_covered,
                rrset.clone(),
                &k.rdata,
            )
            .is_ok()
        });
        if !ok {
            return Err(format!("our verifier rejects {sig}"));
        }
        assert!(f.valid_at(now() as u32), "{sig}");
        n += 1;
    }
    Ok(n)
}

#[test]
fn bind_signatures_pass_our_verifier() {
    let (Some(keygen), Some(signzone)) = (tool("dnssec-keygen"), tool("dnssec-signzone")) else {
        println!("SKIPPED: dnssec-keygen/dnssec-signzone not installed (bind9-utils)");
        return;
    };
    for (alg, extra) in [
        ("ECDSAP256SHA256", &[][..]),
        ("ED25519", &[][..]),
        ("RSASHA256", &["-b", "2048"][..]),
        ("ECDSAP384SHA384", &[][..]),
    ] {
        let dir = TempDir::new(&format!("bind-{alg}"));
        let (ok, out) = run(Command::new(&keygen)
            .current_dir(dir.path())
            .args(["-q", "-a", alg, "-f", "KSK"])
            .args(extra)
            .arg(APEX));
        assert!(ok, "dnssec-keygen: {out}");
        let zone_file = dir.path().join("example.com.zone");
        std::fs::write(&zone_file, ZONE).unwrap();
        let signed_file = dir.path().join("signed.zone");
        let (ok, out) = run(Command::new(&signzone)
            .current_dir(dir.path())
            .args(["-S", "-K", ".", "-z", "-O", "full", "-o", APEX, "-f"])
            .arg(&signed_file)
            .arg(&zone_file));
        assert!(ok, "dnssec-signzone: {out}");
        let text = std::fs::read_to_string(&signed_file).unwrap();
        let mut zone = parse_zone(&text, APEX);
        let n = verify_with_ours(&zone).unwrap_or_else(|e| panic!("{alg}: {e}"));
        assert!(n > 20, "{alg}: only {n} RRSIGs in\n{text}");
        // And a changed record fails: BIND's signature over mail's A no longer matches.
        let mail: Name = "mail.example.com.".parse().unwrap();
        let a = zone
            .iter_mut()
            .find(|r| r.rtype == RType::A && r.owner == mail)
            .unwrap();
        a.rdata[3] ^= 1;
        let err = verify_with_ours(&zone).expect_err("a changed A record still verified");
        assert!(
            err.contains("mail.example.com. 3600 IN RRSIG A "),
            "{alg}: {err}"
        );
        println!("{alg}: our verifier accepts all {n} RRSIGs of dnssec-signzone");
    }
}

/// Keys made by dnssec-keygen (an RSA KSK and ZSK; an Ed25519 KSK alone) load from
/// the key directory and sign zones that both verifiers accept.
#[test]
fn bind_key_files_load_and_sign() {
    let Some(keygen) = tool("dnssec-keygen") else {
        println!("SKIPPED: dnssec-keygen not installed (Debian package bind9-utils)");
        return;
    };
    let apex: Name = APEX.parse().unwrap();
    for (what, specs) in [
        (
            "rsa-ksk-zsk",
            &[
                &["-a", "RSASHA256", "-b", "2048"][..],
                &["-a", "RSASHA256", "-b", "2048", "-f", "KSK"][..],
            ][..],
        ),
        (
            "ed25519-ksk-only",
            &[&["-a", "ED25519", "-f", "KSK"][..]][..],
        ),
    ] {
        let dir = TempDir::new(&format!("bindkeys-{what}"));
        for args in specs {
            let (ok, out) = run(Command::new(&keygen)
                .current_dir(dir.path())
                .arg("-q")
                .args(*args)
                .arg(APEX));
            assert!(ok, "dnssec-keygen: {out}");
        }
        let store = KeyStore::open(dir.path()).unwrap();
        let keys = store.load(&apex).unwrap();
        assert_eq!(keys.len(), specs.len(), "{what}");
        let signers = zone_keys(&keys, now());
        assert!(signers.iter().all(|k| k.signs_keys || k.signs_zone));
        let zone = sign(parse_zone(ZONE, APEX), &signers, denials()[0].1.clone());
        print!("{}", external_verify(&dir, what, &zone));
        // The RSA ZSK signs the data, the KSK the keys.
        if what.starts_with("rsa") {
            let algs: Vec<u8> = zone
                .iter()
                .filter(|r| r.rtype == RType::RRSIG)
                .map(|r| r.rdata[2])
                .collect();
            assert!(algs.iter().all(|&a| a == 8), "{algs:?}");
        }
    }
}

/// Key files we write are BIND's format: dnssec-signzone signs with them, and
/// dnssec-verify accepts the result.
#[test]
fn our_key_files_work_with_bind() {
    let (Some(signzone), Some(verify)) = (tool("dnssec-signzone"), tool("dnssec-verify")) else {
        println!("SKIPPED: dnssec-signzone/dnssec-verify not installed (bind9-utils)");
        return;
    };
    let dir = TempDir::new("ourkeys");
    let store = KeyStore::open(dir.path()).unwrap();
    let apex: Name = APEX.parse().unwrap();
    let t = now() - 10;
    store
        .generate(&apex, Algorithm::EcdsaP256Sha256, Role::Ksk, t)
        .unwrap();
    // Same algorithm: every RRset needs a signature of each algorithm at the apex (RFC 4035
    // §2.2), which dnssec-verify checks.
    store
        .generate(&apex, Algorithm::EcdsaP256Sha256, Role::Zsk, t)
        .unwrap();
    let zone_file = dir.path().join("example.com.zone");
    std::fs::write(&zone_file, ZONE).unwrap();
    let signed_file = dir.path().join("signed.zone");
    let (ok, out) = run(Command::new(&signzone)
        .current_dir(dir.path())
        .args(["-S", "-K", ".", "-O", "full", "-o", APEX, "-f"])
        .arg(&signed_file)
        .arg(&zone_file));
    assert!(ok, "dnssec-signzone with our keys: {out}");
    let (ok, out) = run(Command::new(&verify).args(["-o", APEX]).arg(&signed_file));
    assert!(ok, "dnssec-verify: {out}");
    let text = std::fs::read_to_string(&signed_file).unwrap();
    let zone = parse_zone(&text, APEX);
    assert!(verify_with_ours(&zone).unwrap() > 20);
    println!(
        "dnssec-signzone signed with our key files; dnssec-verify: {}",
        out.trim()
    );
}
