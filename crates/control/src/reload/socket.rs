//! control::socket -- the control socket's file: made at start, removed at shutdown, and
//! the client's end ([`request`]).
//!
//! Nobody else's socket is trusted, at either end. The server makes the default socket's
//! directory (mode 0700) if missing and uses it only if it is a real directory of its own
//! that no group or other user can write ([`private_dir`]), so no other local user can bind
//! the path first. It replaces only a stale socket at its path (a socket nobody accepts on):
//! a live one or any other file is left alone, and the server serves without a control
//! socket. The client sends its command only to a socket file owned by its own user or root
//! whose listener (SO_PEERCRED) runs as its own user or root.

use super::commands::serve;
use super::ReloadRequest;
use crate::Host;
use shardns_sys::{effective_uid, peer_uid};
use std::fmt;
use std::fs::{self, DirBuilder};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use tracing::{info, warn};

/// The control socket as the server opened it at start: the listener (until the control
/// thread takes it), or none if it could not be made.
pub struct ControlSocket {
    path: PathBuf,
    listener: Option<UnixListener>,
    /// We made the socket file, so it is ours to remove at shutdown (a failed bind must
    /// not remove another server's socket).
    bound: bool,
}

impl ControlSocket {
    /// Binds the control socket at `path`; `default` says it is the default one, whose
    /// directory must be private (made so if missing). If that fails, the server goes on
    /// without one: a warning says why, and that `shardns reload` and `stats` cannot reach it.
    pub fn open(path: PathBuf, default: bool) -> Self {
        let made = match path.parent() {
            Some(dir) if default => private_dir(dir).and_then(|()| bind(&path)),
            _ => bind(&path),
        };
        match made {
            Ok(listener) => Self {
                path,
                listener: Some(listener),
                bound: true,
            },
            Err(e) => {
                warn!(
                    "no control socket: {}: {e}; serving without it (shardns reload and shardns stats cannot reach this server; SIGHUP still reloads)",
                    path.display()
                );
                Self {
                    path,
                    listener: None,
                    bound: false,
                }
            }
        }
    }

    /// Starts the control thread on the socket (none without a socket).
    pub fn start(
        &mut self,
        shared: Arc<dyn Host>,
        reloads: Sender<ReloadRequest>,
    ) -> io::Result<()> {
        let Some(listener) = self.listener.take() else {
            return Ok(());
        };
        std::thread::Builder::new()
            .name("shardns-control".into())
            .spawn(move || serve(listener, shared, reloads))?;
        Ok(())
    }

    /// At shutdown: unblocks the control thread's accept so it sees the shutdown flag, then
    /// removes the socket file, if it is ours.
    pub fn close(&self) {
        if self.bound {
            let _ = UnixStream::connect(&self.path);
            let _ = fs::remove_file(&self.path);
        }
    }
}

impl fmt::Display for ControlSocket {
    /// For the ready line: `control socket PATH`, or `no control socket`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.bound {
            write!(f, "control socket {}", self.path.display())
        } else {
            f.write_str("no control socket")
        }
    }
}

/// Makes `dir` (mode 0700) if it is missing, then checks that only we can put a file in
/// it: a directory, not a symbolic link, owned by our user, not writable by group or
/// others. Another user who made it first (it is in /tmp) could otherwise bind our path.
pub(super) fn private_dir(dir: &Path) -> io::Result<()> {
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => info!("made {} (mode 0700) for the control socket", dir.display()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(with_path(e, "making the directory", dir)),
    }
    let meta = fs::symlink_metadata(dir).map_err(|e| with_path(e, "reading", dir))?;
    let me = effective_uid();
    let refuse = |why: String| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "refusing the directory {}: {why}; another user could put a socket there \
                 (remove it, or set server.control_socket or --control)",
                dir.display()
            ),
        ))
    };
    if meta.file_type().is_symlink() {
        return refuse("it is a symbolic link".into());
    }
    if !meta.is_dir() {
        return refuse("it is not a directory".into());
    }
    if meta.uid() != me {
        return refuse(format!(
            "it belongs to uid {}, not to us (uid {me})",
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return refuse(format!(
            "group or others may write it (mode {:04o})",
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

fn with_path(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// Binds the control socket (mode 0600). Only a stale socket file (nobody accepts on it) is
/// replaced: one that a running server answers on, or anything that is not a socket, is
/// an error and stays as it is.
fn bind(path: &Path) -> io::Result<UnixListener> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
        Ok(meta) if !meta.file_type().is_socket() => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} is there and is not a socket; left as it is (remove it, or set \
                     server.control_socket or --control to another path)",
                    kind(&meta)
                ),
            ));
        }
        Ok(_) => match UnixStream::connect(path) {
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    "another shardns answers on this control socket (set server.control_socket or --control)",
                ))
            }
            // Nobody listens: a socket left by a server that did not stop cleanly.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                fs::remove_file(path)?;
                info!("replaced a stale control socket at {}", path.display());
            }
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("a socket is there and connecting to it failed ({e}); left as it is"),
                ))
            }
        },
    }
    let listener = UnixListener::bind(path)?;
    if let Err(e) = fs::set_permissions(path, fs::Permissions::from_mode(0o600)) {
        let _ = fs::remove_file(path);
        return Err(e);
    }
    Ok(listener)
}

/// What a file that is not a socket is, for messages.
fn kind(meta: &fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    }
}

/// Whether a socket of user `owner` may be sent commands by user `me`: ours, or root's.
fn trusted(owner: u32, me: u32) -> bool {
    owner == me || owner == 0
}

/// Sends `command` to the server on `path`; returns whether it succeeded, and its text.
/// Refuses (without sending anything) a socket file or a listener that belongs to another
/// user than ours or root: that user may have taken the path to read our commands and
/// answer them.
pub fn request(path: &Path, command: &str) -> io::Result<(bool, String)> {
    let cannot_connect = |e: io::Error| {
        io::Error::new(
            e.kind(),
            format!(
                "cannot connect to the control socket {}: {e} (is a shardns running with the \
                 same --listen, --config or --control? A server that could not make its control \
                 socket says so in its log, and still reloads on SIGHUP)",
                path.display()
            ),
        )
    };
    let me = effective_uid();
    let refuse = |what: &str, uid: u32| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "refusing the control socket {}: {what} uid {uid}, not to us (uid {me}) or \
                 root, so another user may have taken its path; nothing was sent (a server \
                 run as another user: run this command as that user)",
                path.display()
            ),
        )
    };
    let meta = fs::symlink_metadata(path).map_err(cannot_connect)?;
    if !meta.file_type().is_socket() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a socket but {}; nothing was sent",
                path.display(),
                kind(&meta)
            ),
        ));
    }
    if !trusted(meta.uid(), me) {
        return Err(refuse("its file belongs to", meta.uid()));
    }
    let mut stream = UnixStream::connect(path).map_err(cannot_connect)?;
    // The file's owner is not the listener's: check the process we reached too.
    let peer = peer_uid(&stream)?;
    if !trusted(peer, me) {
        return Err(refuse("the server on it runs as", peer));
    }
    stream.write_all(command.as_bytes())?;
    stream.write_all(b"\n")?;
    stream.shutdown(std::net::Shutdown::Write)?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply)?;
    let (status, body) = reply.split_once('\n').unwrap_or((reply.as_str(), ""));
    match status {
        "ok" => Ok((true, body.to_string())),
        "error" => Ok((false, body.to_string())),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unexpected reply {reply:?}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A scratch directory of this test, removed on drop.
    struct Scratch(PathBuf);
    impl Scratch {
        fn new(tag: &str) -> Self {
            let p = std::env::temp_dir().join(format!("shardns-ctl-{}-{tag}", std::process::id()));
            let _ = fs::remove_dir_all(&p);
            fs::create_dir_all(&p).unwrap();
            fs::set_permissions(&p, fs::Permissions::from_mode(0o700)).unwrap();
            Self(p)
        }
    }
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn is_root() -> bool {
        effective_uid() == 0
    }

    #[test]
    fn private_dir_is_made_0700_and_anything_others_could_write_is_refused() {
        let s = Scratch::new("dir");
        let dir = s.0.join("mine");
        private_dir(&dir).unwrap();
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o7777, 0o700);
        private_dir(&dir).unwrap(); // again: it is ours
        let open = s.0.join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o1777)).unwrap();
        let e = private_dir(&open).unwrap_err().to_string();
        assert!(
            e.contains("group or others may write it (mode 1777)"),
            "{e}"
        );
        let link = s.0.join("link");
        symlink(&dir, &link).unwrap();
        let e = private_dir(&link).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        let file = s.0.join("file");
        fs::write(&file, "x").unwrap();
        assert!(private_dir(&file)
            .unwrap_err()
            .to_string()
            .contains("not a directory"));
        if !is_root() {
            println!("SKIPPED the other user's directory: needs root (chown)");
            return;
        }
        let theirs = s.0.join("theirs");
        fs::create_dir(&theirs).unwrap();
        fs::set_permissions(&theirs, fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        let e = private_dir(&theirs).unwrap_err().to_string();
        assert!(e.contains("belongs to uid 65534, not to us (uid 0)"), "{e}");
    }

    #[test]
    fn bind_replaces_only_a_stale_socket() {
        let s = Scratch::new("bind");
        // A regular file is neither removed nor replaced.
        let file = s.0.join("important.txt");
        fs::write(&file, "keep me").unwrap();
        let e = bind(&file).unwrap_err().to_string();
        assert!(
            e.contains("a regular file is there and is not a socket"),
            "{e}"
        );
        assert_eq!(fs::read_to_string(&file).unwrap(), "keep me");
        // A symbolic link is not followed or removed.
        let link = s.0.join("link");
        symlink(&file, &link).unwrap();
        assert!(bind(&link)
            .unwrap_err()
            .to_string()
            .contains("symbolic link"));
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        // A stale socket is.
        let stale = s.0.join("stale.ctl");
        drop(UnixListener::bind(&stale).unwrap());
        let listener = bind(&stale).unwrap();
        assert_eq!(fs::metadata(&stale).unwrap().mode() & 0o777, 0o600);
        // A live one is not taken: its listener still gets the connections.
        let e = bind(&stale).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
        listener.set_nonblocking(true).unwrap();
        let _c = UnixStream::connect(&stale).unwrap();
        assert!(listener.accept().is_ok());
    }

    #[test]
    fn the_client_sends_nothing_to_a_socket_of_another_user() {
        assert!(trusted(1000, 1000) && trusted(0, 1000) && trusted(0, 0));
        assert!(!trusted(1000, 0) && !trusted(1001, 1000));
        if !is_root() {
            println!("SKIPPED: needs root (chown)");
            return;
        }
        let s = Scratch::new("client");
        let path = s.0.join("impostor.ctl");
        let listener = UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        let e = request(&path, "reload").unwrap_err().to_string();
        assert!(
            e.contains("its file belongs to uid 65534, not to us (uid 0)"),
            "{e}"
        );
        assert!(e.contains("nothing was sent"), "{e}");
        // Not even connected to.
        assert_eq!(
            listener.accept().unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        // Not a socket at all.
        let file = s.0.join("file");
        fs::write(&file, "").unwrap();
        let e = request(&file, "stats").unwrap_err().to_string();
        assert!(e.contains("is not a socket but a regular file"), "{e}");
    }
}
