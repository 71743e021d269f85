//! config::control_socket -- where the control socket is when none is configured.
//!
//! The default is named after the first listen address and its port, so that servers on
//! different addresses with the same port (a root, an authoritative and a resolver on
//! 127.0.0.1:53, 127.0.0.2:53 and 127.0.0.3:53) each get their own, and `shardns reload`
//! and `shardns stats` find it again from the same `--listen` or config file. It lives in a
//! directory only the server's user can write, so that no other local user can bind the
//! path first and take the commands sent to it: `$XDG_RUNTIME_DIR` (when set to an
//! absolute path of a directory), else `/run/shardns` for root (when `/run` is root's),
//! else `/tmp/shardns-UID` (UID: the effective user ID). The server makes the last two
//! (mode 0700) and checks whichever it uses (`control::socket`).

use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Longest path a Unix socket address holds: `sun_path` is 108 bytes, with a final NUL.
pub(super) const SUN_PATH_MAX: usize = 107;

/// The directory of the default control socket for this process (see the module docs).
pub(super) fn default_dir() -> PathBuf {
    let xdg = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute() && d.is_dir());
    // Root's /run: a directory root owns and may write (a read-only mount shows when the
    // server makes /run/shardns, in its log).
    let run_is_roots = std::fs::metadata("/run")
        .is_ok_and(|m| m.is_dir() && m.uid() == 0 && m.mode() & 0o200 != 0);
    choose_dir(xdg, shardns_sys::effective_uid(), run_is_roots)
}

/// [`default_dir`] from what it looks at: `$XDG_RUNTIME_DIR` if usable, the effective user,
/// and whether `/run` is root's to write.
fn choose_dir(xdg: Option<PathBuf>, euid: u32, run_is_roots: bool) -> PathBuf {
    match xdg {
        Some(dir) => dir,
        None if euid == 0 && run_is_roots => PathBuf::from("/run/shardns"),
        None => tmp_dir(euid),
    }
}

/// The private directory in `/tmp` of the user `euid`: `/tmp/shardns-UID`.
pub(super) fn tmp_dir(euid: u32) -> PathBuf {
    PathBuf::from(format!("/tmp/shardns-{euid}"))
}

/// The default control socket in `dir` of a server whose first listen address is `listen`:
/// `shardns-ADDR-PORT.ctl` (`shardns-127.0.0.2-53.ctl`, `shardns-::1-5353.ctl`; an IPv6
/// scope as `%ID`). If that path is too long for a socket address, `shardns-HASH.ctl`, HASH
/// being 16 hex digits of a hash of `ADDR-PORT`; if even that is too long, the readable
/// name in `fallback` (the user's private directory in `/tmp`, short enough for any name).
pub(super) fn default_path(dir: &Path, fallback: &Path, listen: SocketAddr) -> PathBuf {
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
    fallback.join(readable)
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
        let tmp = tmp_dir(1000);
        let at = |a: &str| default_path(Path::new("/run/user/1000"), &tmp, a.parse().unwrap());
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
        let tmp = tmp_dir(4_294_967_294);
        let p = default_path(&dir, &tmp, listen);
        assert_eq!(p.parent(), Some(dir.as_path()));
        let name = p.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("shardns-") && name.len() == 8 + 16 + 4,
            "{name}"
        );
        assert!(p.as_os_str().len() <= SUN_PATH_MAX);
        // Stable: the same inputs, the same name; another port, another.
        assert_eq!(p, default_path(&dir, &tmp, listen));
        let other = SocketAddr::new(listen.ip(), 65534);
        assert_ne!(p, default_path(&dir, &tmp, other));
        // A directory too long for any name: the private directory in /tmp, readably.
        let dir = PathBuf::from(format!("/{}", "d".repeat(100)));
        let p = default_path(&dir, &tmp, "127.0.0.1:53".parse().unwrap());
        assert_eq!(
            p,
            PathBuf::from("/tmp/shardns-4294967294/shardns-127.0.0.1-53.ctl")
        );
        // Every name fits there, whatever the user ID.
        assert!(default_path(&tmp, &tmp, listen).as_os_str().len() <= SUN_PATH_MAX);
    }

    #[test]
    fn never_a_directory_other_users_share() {
        let xdg = PathBuf::from("/run/user/1000");
        assert_eq!(choose_dir(Some(xdg.clone()), 1000, true), xdg);
        // Without $XDG_RUNTIME_DIR (sudo, containers): root's /run, else a directory of
        // the user's own in /tmp, never /tmp itself.
        assert_eq!(choose_dir(None, 0, true), PathBuf::from("/run/shardns"));
        assert_eq!(choose_dir(None, 0, false), PathBuf::from("/tmp/shardns-0"));
        assert_eq!(
            choose_dir(None, 1000, true),
            PathBuf::from("/tmp/shardns-1000")
        );
    }

    #[test]
    fn fnv1a_is_the_published_function() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
