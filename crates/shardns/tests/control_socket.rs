//! End-to-end: the control socket. Servers on different addresses with the same port each
//! get their own default socket (named after the first listen address), and `shardns stats`
//! and `shardns reload` reach the one asked for; a control socket that cannot be made (a
//! missing directory, another server answering on it) leaves the server serving, with a
//! warning in its log, and a server never removes a socket it did not make, nor any file
//! that is not a stale socket. Nobody else's socket is trusted: the server refuses a
//! default directory of another user, the client a socket file or a listener of another
//! user (these run a listener as `nobody` with `setpriv`: root only, skipped otherwise).
//!
//! Loopback only (127.0.0.1, 127.0.0.2); every server is killed when its test ends.

mod common;

use common::*;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const SECOND: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

/// A port free for UDP and TCP on both 127.0.0.1 and 127.0.0.2.
fn port_free_on_both() -> u16 {
    for _ in 0..100 {
        let port = free_port_on(Ipv4Addr::LOCALHOST);
        if UdpSocket::bind((SECOND, port)).is_ok() && TcpListener::bind((SECOND, port)).is_ok() {
            return port;
        }
    }
    panic!("no port free on both 127.0.0.1 and 127.0.0.2");
}

/// `shardns serve` on `listen` with one worker and `args`, its log in `logs`, and
/// `$XDG_RUNTIME_DIR` set to `xdg`; waits until it is ready.
fn serve(name: &str, listen: SocketAddr, xdg: &Path, logs: &Path, args: &[&str]) -> Daemon {
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--workers", "1", "--listen"])
        .arg(listen.to_string())
        .args(args)
        .env("XDG_RUNTIME_DIR", xdg)
        .env_remove("RUST_LOG");
    let mut d = Daemon::spawn(name, cmd, logs.join(format!("{name}.log")));
    let end = Instant::now() + Duration::from_secs(20);
    while !d.log().contains("shardns ready") {
        d.check_alive();
        assert!(Instant::now() < end, "{name} not ready:\n{}", d.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    d
}

/// `shardns COMMAND ARGS` with `$XDG_RUNTIME_DIR` set to `xdg`.
fn control(command: &str, args: &[&str], xdg: &Path) -> Output {
    Command::new(BIN)
        .arg(command)
        .args(args)
        .env("XDG_RUNTIME_DIR", xdg)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

/// Asks `server` for www.example.test A `n` times; every answer must be NOERROR with data.
fn ask(server: SocketAddr, n: u16) {
    let sock = udp_client(server);
    for id in 0..n {
        let q = query(0x4000 + id, "www.example.test", 1, None);
        let r = udp_exchange(&sock, &q).unwrap_or_else(|| panic!("{server} did not answer"));
        let m = parse(&r);
        assert_eq!(
            m.metadata.response_code,
            hickory_proto::op::ResponseCode::NoError
        );
        assert!(!answers(&m).is_empty(), "{server}: no answer");
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn same_port_on_two_addresses_each_has_its_own_control_socket() {
    let xdg = TempDir::new("ctl-xdg");
    let logs = TempDir::new("ctl-logs");
    let port = port_free_on_both();
    let a = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let b = SocketAddr::from((SECOND, port));
    let mut first = serve("first", a, xdg.path(), logs.path(), &[]);
    let mut second = serve("second", b, xdg.path(), logs.path(), &[]);
    first.check_alive();
    second.check_alive();
    let socket_a = xdg.path().join(format!("shardns-127.0.0.1-{port}.ctl"));
    let socket_b = xdg.path().join(format!("shardns-127.0.0.2-{port}.ctl"));
    for (d, socket) in [(&first, &socket_a), (&second, &socket_b)] {
        assert!(
            socket.exists(),
            "{} missing:\n{}",
            socket.display(),
            d.log()
        );
        assert!(
            d.log()
                .contains(&format!("control socket {}", socket.display())),
            "{}",
            d.log()
        );
        assert!(!d.log().contains("no control socket"), "{}", d.log());
    }

    // Both answer; each one's stats and reload reach that one, found from --listen.
    ask(a, 3);
    ask(b, 1);
    let (la, lb) = (a.to_string(), b.to_string());
    let stats = |listen: &str| {
        let out = control("stats", &["--listen", listen], xdg.path());
        assert!(out.status.success(), "stats --listen {listen}: {out:?}");
        stdout(&out)
    };
    assert_eq!(stat_value(&stats(&la), "shardns_queries_total"), 3.0);
    assert_eq!(stat_value(&stats(&lb), "shardns_queries_total"), 1.0);
    let out = control("reload", &["--listen", &lb], xdg.path());
    assert!(out.status.success(), "reload --listen {lb}: {out:?}");
    assert!(stdout(&out).contains("reloaded 0 of 1 zones"), "{out:?}"); // embedded: unchanged
    let ok = "shardns_reloads_total{result=\"ok\"}";
    assert_eq!(stat_value(&stats(&lb), ok), 1.0);
    assert_eq!(stat_value(&stats(&la), ok), 0.0);
    // A config file naming the address finds the same socket.
    let config = xdg.write("first.toml", &format!("[server]\nlisten = [\"{la}\"]\n"));
    let out = control("stats", &["-c", config.to_str().unwrap()], xdg.path());
    assert!(out.status.success(), "stats -c: {out:?}");
    assert_eq!(stat_value(&stdout(&out), "shardns_queries_total"), 3.0);

    // Stopping one removes its own socket only.
    Command::new("kill")
        .args(["-TERM", &second.pid().to_string()])
        .status()
        .unwrap();
    assert!(second.wait_exit(Duration::from_secs(10)).is_some());
    assert!(!socket_b.exists());
    assert!(socket_a.exists());
    assert!(control("stats", &["--listen", &la], xdg.path())
        .status
        .success());
    first.check_alive();
}

#[test]
fn a_control_socket_that_cannot_be_made_leaves_the_server_serving() {
    let xdg = TempDir::new("ctl-missing");
    let port = free_port_on(Ipv4Addr::LOCALHOST);
    let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let path = xdg.path().join("no-such-dir").join("shardns.ctl");
    let path_s = path.to_str().unwrap();
    let mut d = serve(
        "missing",
        listen,
        xdg.path(),
        xdg.path(),
        &["--control", path_s],
    );
    let log = d.log();
    assert!(
        log.contains(&format!("no control socket: {path_s}: ")),
        "{log}"
    );
    assert!(log.contains("zones, no control socket"), "{log}");
    ask(listen, 2);

    // The client says clearly that it cannot reach the server.
    let out = control("stats", &["--control", path_s], xdg.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        err.contains(&format!("cannot connect to the control socket {path_s}")),
        "{err}"
    );
    assert!(err.contains("SIGHUP"), "{err}");

    // SIGHUP still reloads.
    Command::new("kill")
        .args(["-HUP", &d.pid().to_string()])
        .status()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    while !d.log().contains("reloaded 0 of 1 zones") {
        d.check_alive();
        assert!(Instant::now() < end, "no reload after SIGHUP:\n{}", d.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    ask(listen, 1);
}

#[test]
fn a_second_server_on_a_taken_control_socket_serves_and_leaves_it_alone() {
    let owner = Server::start_on("ctl-owner", Ipv4Addr::LOCALHOST, None, &[]);
    let xdg = TempDir::new("ctl-taken");
    let port = free_port_on(SECOND);
    let listen = SocketAddr::from((SECOND, port));
    let taken = owner.control.to_str().unwrap();
    let mut second = serve(
        "second",
        listen,
        xdg.path(),
        xdg.path(),
        &["--control", taken],
    );
    let log = second.log();
    assert!(log.contains("no control socket"), "{log}");
    assert!(log.contains("another shardns answers"), "{log}");
    ask(listen, 1);
    ask(owner.addr, 2);
    // The socket still reaches its owner, also after the second server stops.
    assert_eq!(owner.stat("shardns_queries_total"), 2.0);
    Command::new("kill")
        .args(["-TERM", &second.pid().to_string()])
        .status()
        .unwrap();
    assert!(second.wait_exit(Duration::from_secs(10)).is_some());
    assert!(owner.control.exists());
    assert_eq!(owner.stat("shardns_queries_total"), 2.0);
}

#[test]
fn a_file_at_the_control_path_survives_and_a_stale_socket_is_replaced() {
    let dir = TempDir::new("ctl-file");
    let port = free_port_on(Ipv4Addr::LOCALHOST);
    let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    // `--control` naming a file by mistake: the file stays, the server serves without.
    let file = dir.write("important.txt", "do not delete\n");
    let file_s = file.to_str().unwrap();
    let mut d = serve(
        "file",
        listen,
        dir.path(),
        dir.path(),
        &["--control", file_s],
    );
    let log = d.log();
    assert!(
        log.contains(&format!(
            "no control socket: {file_s}: a regular file is there and is not a socket"
        )),
        "{log}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "do not delete\n");
    ask(listen, 1);
    d.check_alive();
    drop(d);

    // A socket nobody accepts on (a server killed without cleaning up) is replaced.
    let stale = dir.path().join("stale.ctl");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    let stale_s = stale.to_str().unwrap();
    let d = serve(
        "stale",
        listen,
        dir.path(),
        dir.path(),
        &["--control", stale_s],
    );
    let log = d.log();
    assert!(log.contains(&format!("control socket {stale_s}")), "{log}");
    assert!(!log.contains("no control socket"), "{log}");
    ask(listen, 2);
    let out = control("stats", &["--control", stale_s], dir.path());
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stat_value(&stdout(&out), "shardns_queries_total"), 2.0);
}

fn is_root() -> bool {
    let uid = Command::new("id").arg("-u").output().expect("run id");
    String::from_utf8_lossy(&uid.stdout).trim() == "0"
}

/// `shardns serve` as `nobody` (setpriv) on `listen`, its control socket at `control`.
fn serve_as_nobody(listen: SocketAddr, control: &Path, logs: &Path) -> Daemon {
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
        .args(["serve", "--workers", "1", "--listen"])
        .arg(listen.to_string())
        .arg("--control")
        .arg(control)
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("RUST_LOG");
    let mut d = Daemon::spawn("impostor", cmd, logs.join("impostor.log"));
    let end = Instant::now() + Duration::from_secs(20);
    while !d.log().contains("shardns ready") {
        d.check_alive();
        assert!(Instant::now() < end, "impostor not ready:\n{}", d.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    d
}

#[test]
fn the_client_sends_nothing_to_a_socket_another_user_took() {
    if !is_root() {
        println!("control_socket: SKIPPED the impostor test: needs root (setpriv, chown)");
        return;
    }
    // A directory every user may write, as /tmp is: another user binds our path first.
    let dir = TempDir::new("ctl-impostor");
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let path = shared.join("shardns.ctl");
    let path_s = path.to_str().unwrap();
    let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port_on(Ipv4Addr::LOCALHOST)));
    let mut impostor = serve_as_nobody(listen, &path, dir.path());

    // Its socket file is nobody's: refused before connecting.
    let out = control("reload", &["--control", path_s], dir.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        err.contains(&format!("refusing the control socket {path_s}"))
            && err.contains("belongs to uid 65534"),
        "{err}"
    );
    // The file root's own, the listener still nobody's: refused by its credentials.
    std::os::unix::fs::chown(&path, Some(0), Some(0)).unwrap();
    let out = control("reload", &["--control", path_s], dir.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(err.contains("the server on it runs as uid 65534"), "{err}");
    let out = control("stats", &["--control", path_s], dir.path());
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    // The impostor got no command: it logs each reload asked for, and counts queries only.
    impostor.check_alive();
    let log = impostor.log();
    assert!(!log.contains("reload requested"), "{log}");
}

#[test]
fn the_server_refuses_a_default_directory_another_user_owns() {
    if !is_root() {
        println!("control_socket: SKIPPED the directory test: needs root (chown)");
        return;
    }
    // $XDG_RUNTIME_DIR (the default socket's directory) made by another user.
    let dir = TempDir::new("ctl-theirs");
    let theirs = dir.path().join("run");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port_on(Ipv4Addr::LOCALHOST)));
    let d = serve("theirs", listen, &theirs, dir.path(), &[]);
    let log = d.log();
    let socket = theirs.join(format!("shardns-127.0.0.1-{}.ctl", listen.port()));
    assert!(
        log.contains(&format!("no control socket: {}: refusing the directory {}: it belongs to uid 65534, not to us (uid 0)", socket.display(), theirs.display())),
        "{log}"
    );
    assert!(!socket.exists());
    ask(listen, 1);
    // One that group or others may write is refused too; one of ours, private, is used.
    std::os::unix::fs::chown(&theirs, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o777)).unwrap();
    drop(d);
    let d = serve("open", listen, &theirs, dir.path(), &[]);
    assert!(
        d.log().contains("group or others may write it (mode 0777)"),
        "{}",
        d.log()
    );
    drop(d);
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o700)).unwrap();
    let d = serve("ours", listen, &theirs, dir.path(), &[]);
    assert!(
        d.log()
            .contains(&format!("control socket {}", socket.display())),
        "{}",
        d.log()
    );
    let out = control("stats", &["--listen", &listen.to_string()], &theirs);
    assert!(out.status.success(), "{out:?}");
}
