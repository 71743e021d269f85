//! The topology: which loopback address plays which part (every instance on port 53 of its
//! own address), which zones each authoritative shardns serves, and the check that all those
//! addresses are free.

use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener, UdpSocket};

pub(crate) const ROOT: &str = "127.0.0.40";
pub(crate) const SILENT: &str = "127.0.0.46";
pub(crate) const TC_FRONT: &str = "127.0.0.47";
pub(crate) const TC_BACKEND: &str = "127.0.0.48";
pub(crate) const MANGLER: &str = "127.0.0.49";
pub(crate) const MANGLED_BACKEND: &str = "127.0.0.52";
pub(crate) const SHARDNS: &str = "127.0.0.50";
pub(crate) const UNBOUND: &str = "127.0.0.51";

/// The authoritative shardns instances: address and (apex, file under `tests/interop/`).
pub(crate) const AUTHS: &[(&str, &[(&str, &str)])] = &[
    (ROOT, &[(".", "root.zone")]),
    (
        "127.0.0.41",
        &[("test.", "test.zone"), ("example.", "example.zone")],
    ),
    (
        "127.0.0.42",
        &[("test.", "test.zone"), ("other.", "other.zone")],
    ),
    (
        "127.0.0.43",
        &[
            ("alpha.test.", "alpha.test.zone"),
            ("beta.other.", "beta.other.zone"),
            ("halflame.test.", "halflame.test.zone"),
            ("halfdead.test.", "halfdead.test.zone"),
        ],
    ),
    (
        "127.0.0.44",
        &[
            ("sub.alpha.test.", "sub.alpha.test.zone"),
            ("gamma.example.", "gamma.example.zone"),
            ("split.test.", "split.test.zone"),
        ],
    ),
    ("127.0.0.45", &[("unrelated.", "unrelated.zone")]),
    (TC_BACKEND, &[("tcp.test.", "tcp.test.zone")]),
    (
        MANGLED_BACKEND,
        &[
            ("noaa.test.", "noaa.test.zone"),
            ("servfail.test.", "servfail.test.zone"),
            ("refused.test.", "refused.test.zone"),
            ("upref.test.", "upref.test.zone"),
        ],
    ),
];

/// Every address this test binds must have port 53 free (UDP and TCP). Not being allowed to
/// bind it (not root) skips the test; a port in use fails it.
pub(crate) fn addresses_free() -> Result<(), String> {
    let mut ips: Vec<&str> = AUTHS.iter().map(|(ip, _)| *ip).collect();
    ips.extend([SILENT, TC_FRONT, MANGLER, SHARDNS, UNBOUND]);
    for ip in ips {
        let addr: SocketAddr = format!("{ip}:53").parse().unwrap();
        let probe = UdpSocket::bind(addr)
            .err()
            .or_else(|| TcpListener::bind(addr).err());
        if let Some(e) = probe {
            if e.kind() == ErrorKind::PermissionDenied {
                return Err(format!("cannot bind {addr} ({e}): run as root"));
            }
            panic!("{addr} is in use ({e}): see `ss -lunpt`");
        }
    }
    Ok(())
}
