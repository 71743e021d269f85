//! Test certificates, made with `openssl req` at test time.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A self-signed P-256 certificate for `name` (and 127.0.0.1) in `dir`: (cert, key). The
/// certificate is its own CA for the clients.
pub fn make_cert(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let cert = dir.join(format!("{name}.crt"));
    let key = dir.join(format!("{name}.key"));
    let out = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .arg("ec_paramgen_curve:P-256")
        .args(["-nodes", "-days", "2", "-subj"])
        .arg(format!("/CN={name}"))
        .arg("-addext")
        .arg(format!("subjectAltName=DNS:{name},IP:127.0.0.1"))
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl req: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (cert, key)
}

/// The subject of the certificate a TLS listener at `addr` presents now (asking for `alpn`,
/// e.g. "h2" for DoH), as `openssl x509 -subject` prints it.
pub fn presented_subject(addr: SocketAddr, alpn: Option<&str>) -> String {
    let mut s_client = Command::new("openssl");
    s_client.arg("s_client");
    if let Some(alpn) = alpn {
        s_client.args(["-alpn", alpn]);
    }
    let s_client = s_client
        .arg("-connect")
        .arg(addr.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .output()
        .expect("run openssl s_client");
    let mut x509 = Command::new("openssl")
        .args(["x509", "-noout", "-subject"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run openssl x509");
    x509.stdin
        .take()
        .unwrap()
        .write_all(&s_client.stdout)
        .unwrap();
    let out = x509.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A shardns with one encrypted listener (`listen_flag`: `--tls-listen`, `--https-listen`,
/// `--quic-listen`) on a free port of 127.0.0.1, a certificate for `dns.test` made in its own
/// directory, `config` and `extra` flags: the server, that listener's address, and the
/// certificates' directory (`dns.test.crt` is the CA for the clients).
pub fn start_encrypted(
    tag: &str,
    listen_flag: &str,
    config: Option<&str>,
    extra: &[&str],
) -> (super::Server, SocketAddr, super::TempDir) {
    let certs = super::TempDir::new(&format!("{tag}-certs"));
    let (cert, key) = make_cert(certs.path(), "dns.test");
    let addr = SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, super::free_port()));
    let addr_arg = addr.to_string();
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let mut args = vec![
        listen_flag,
        &addr_arg,
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
    ];
    args.extend_from_slice(extra);
    let server = super::Server::start_on(tag, std::net::Ipv4Addr::LOCALHOST, config, &args);
    (server, addr, certs)
}

/// The base64 SHA-256 of the SubjectPublicKeyInfo of the certificate `cert` (by openssl):
/// its pin, as a `primary_tls` pin takes it.
pub fn spki_pin(cert: &Path) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "openssl x509 -in '{}' -pubkey -noout | openssl pkey -pubin -outform der \
             | openssl dgst -sha256 -binary | base64",
            cert.display()
        ))
        .output()
        .expect("openssl");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}
