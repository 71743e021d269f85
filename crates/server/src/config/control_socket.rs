//! config::control_socket -- where the control socket is when none is configured.
//!
//! The default is named after the first listen address and its port, so that servers on
//! different addresses with the same port (a root, an authoritative and a resolver on
//! 127.0.0.1:53, 127.0.0.2:53 and 127.0.0.3:53) each get their own, and `shardns reload`
//! and `shardns stats` find it again from the same `--listen` or config file. It lives in
//! `$XDG_RUNTIME_DIR` (when set to an absolute path of a directory), else in `/tmp`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Longest path a Unix socket address holds: `sun_path` is 108 bytes, with a final NUL.
pub(super) const SUN_PATH_MAX: usize = 107;

/// The directory of the default control socket: `$XDG_RUNTIME_DIR`, else `/tmp`.
pub(super) fn default_dir() -> PathBuf {
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute() && d.is_dir())
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

/// The default control socket in `dir` of a server whose first listen address is `listen`:
/// `shardns-ADDR-PORT.ctl` (`shardns-127.0.0.2-53.ctl`, `shardns-::1-5353.ctl`; an IPv6
/// scope as `%ID`). If that path is too long for a socket address, `shardns-HASH.ctl`, HASH
/// being 16 hex digits of a hash of `ADDR-PORT`; if even that is too long, the readable
/// name in `/tmp`.
pub(super) fn default_path(dir: &Path, listen: SocketAddr) -> PathBuf {
    let ip = match listen {
        SocketAddr::V6(a) if a.scope_id() != 0 => format!("{}%{}", a.ip(), a.scope_id()),
        a => a.ip().to_string(),
    };
    let id = format!("{ip}-{}", listen.port());
    let readable = format!("shardns-{id}.ctl");
    let fits = |p: &Path| p.as_os_str().len() <= SUN_PATH_MAX;
    let path = dir.join(&readable);
    if fits(&path) {
        return path;
    }
    let path = dir.join(format!("shardns-{:016x}.ctl", fnv1a(id.as_bytes())));
    if fits(&path) {
        return path;
    }
    Path::new("/tmp").join(readable)
}

/// 64-bit FNV-1a: a hash that is the same in every process and every build, so that the
/// server and `shardns reload` agree on a hashed name.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_after_the_first_listen_address_and_port() {
        let at = |a: &str| default_path(Path::new("/run/user/1000"), a.parse().unwrap());
        assert_eq!(
            at("127.0.0.2:53"),
            PathBuf::from("/run/user/1000/shardns-127.0.0.2-53.ctl")
        );
        assert_ne!(at("127.0.0.1:53"), at("127.0.0.2:53"));
        assert_ne!(at("127.0.0.1:53"), at("127.0.0.1:54"));
        assert_eq!(
            at("[::1]:5353"),
            PathBuf::from("/run/user/1000/shardns-::1-5353.ctl")
        );
        assert_eq!(
            at("[fe80::1%2]:53"),
            PathBuf::from("/run/user/1000/shardns-fe80::1%2-53.ctl")
        );
    }

    #[test]
    fn too_long_a_path_is_hashed_then_moved_to_tmp() {
        let long = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        let listen: SocketAddr = format!("[{long}%4294967295]:65535").parse().unwrap();
        // 60 bytes of directory: the readable name (67 bytes) does not fit, a hash does.
        let dir = PathBuf::from(format!("/{}", "d".repeat(59)));
        let p = default_path(&dir, listen);
        assert_eq!(p.parent(), Some(dir.as_path()));
        let name = p.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("shardns-") && name.len() == 8 + 16 + 4,
            "{name}"
        );
        assert!(p.as_os_str().len() <= SUN_PATH_MAX);
        // Stable: the same inputs, the same name; another port, another.
        assert_eq!(p, default_path(&dir, listen));
        let other = SocketAddr::new(listen.ip(), 65534);
        assert_ne!(p, default_path(&dir, other));
        // A directory too long for any name: /tmp, readably.
        let dir = PathBuf::from(format!("/{}", "d".repeat(100)));
        let p = default_path(&dir, "127.0.0.1:53".parse().unwrap());
        assert_eq!(p, PathBuf::from("/tmp/shardns-127.0.0.1-53.ctl"));
        // Every name fits in /tmp.
        assert!(default_path(Path::new("/tmp"), listen).as_os_str().len() <= SUN_PATH_MAX);
    }

    #[test]
    fn fnv1a_is_the_published_function() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
