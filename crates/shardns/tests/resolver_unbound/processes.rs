//! Running the resolvers and authoritative servers: shardns and Unbound (with its
//! configuration) as child processes on one address each, ready when their log says so,
//! killed by PID on drop.

use crate::common::{self, capture_stderr, BIN};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A child process (shardns or unbound) on one address; killed by PID on drop.
pub(crate) struct Proc {
    pub(crate) name: String,
    pub(crate) child: Child,
    log: Arc<Mutex<String>>,
    control: Option<PathBuf>,
}

impl Proc {
    pub(crate) fn shardns(dir: &Path, ip: &str, args: &[String]) -> Self {
        let control = dir.join(format!("{ip}.ctl"));
        let mut cmd = Command::new(BIN);
        cmd.arg("serve")
            .arg("--listen")
            .arg(format!("{ip}:53"))
            .arg("--control")
            .arg(&control)
            .args(args);
        Self::spawn(format!("shardns@{ip}"), cmd, Some(control), "shardns ready")
    }

    pub(crate) fn unbound(bin: &Path, dir: &Path, ip: &str, hints: &str) -> Self {
        let conf = dir.join("unbound.conf");
        std::fs::write(
            &conf,
            format!(
                "server:
  interface: {ip}
  port: 53
  interface-automatic: no
  do-daemonize: no
  use-syslog: no
  logfile: \"\"
  username: \"\"
  chroot: \"\"
  directory: \"{dir}\"
  pidfile: \"\"
  num-threads: 1
  verbosity: 1
  access-control: 127.0.0.0/8 allow
  do-not-query-localhost: no
  do-ip6: no
  root-hints: \"{hints}\"
  qname-minimisation: yes
  # No trust anchor and no validator: DNSSEC off.
  module-config: \"iterator\"
  # Unbound answers test. itself (RFC 6761 local zone) unless told not to.
  local-zone: \"test.\" nodefault
remote-control:
  control-enable: no
",
                dir = dir.display()
            ),
        )
        .unwrap();
        let mut cmd = Command::new(bin);
        cmd.arg("-d").arg("-c").arg(&conf);
        Self::spawn(format!("unbound@{ip}"), cmd, None, "start of service")
    }

    pub(crate) fn spawn(
        name: String,
        mut cmd: Command,
        control: Option<PathBuf>,
        ready: &str,
    ) -> Self {
        let mut child = cmd
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {name}: {e}"));
        let log = capture_stderr(&mut child);
        let mut me = Self {
            name,
            child,
            log,
            control,
        };
        let end = Instant::now() + Duration::from_secs(20);
        while !me.log().contains(ready) {
            if let Ok(Some(status)) = me.child.try_wait() {
                std::thread::sleep(Duration::from_millis(100));
                panic!("{} exited ({status}):\n{}", me.name, me.log());
            }
            assert!(Instant::now() < end, "{} not ready:\n{}", me.name, me.log());
            std::thread::sleep(Duration::from_millis(20));
        }
        me
    }

    pub(crate) fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    pub(crate) fn stat(&self, name: &str) -> f64 {
        let control = self.control.as_ref().expect("a shardns instance");
        common::read_stat(control, name)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // Child::kill sends SIGKILL to this child's PID only.
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- log of {} ---\n{}", self.name, self.log());
        }
    }
}

pub(crate) fn find_unbound() -> Option<PathBuf> {
    common::find_program("unbound", "UNBOUND")
}
