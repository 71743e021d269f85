//! notify -- tells secondaries that a zone has a new version (RFC 1996 NOTIFY), from a
//! thread of its own on the control plane, never a worker.
//!
//! After startup every zone with `notify` targets is announced, and after a reload every
//! zone whose serial changed. Each target gets the NOTIFY over UDP from an ephemeral port
//! until it answers (any RCODE: it heard us) or five tries have gone unanswered, 1, 2, 4, 8
//! and 16 s apart (RFC 1996 §3.6 asks for retries with a growing interval). A newer version
//! of the same zone replaces a pending announcement to the same target. Results are logged
//! and counted (`shardns_notify_total{result}`).

use crate::Host;
use shardns_zone::xfr::{notify, notify_response};
use shardns_zone::Zone;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{info, warn};

/// Tries per target before giving up.
const TRIES: u32 = 5;
/// How often the thread looks for answers while announcements are pending.
const POLL: Duration = Duration::from_millis(20);

/// One zone version to announce to `targets`.
pub struct Job {
    /// The version to announce.
    pub zone: Arc<Zone>,
    /// The secondaries to tell.
    pub targets: Vec<SocketAddr>,
}

/// The handle the control plane sends announcements through; the thread ends when it is
/// dropped.
pub struct Notifier {
    jobs: Sender<Job>,
}

impl Notifier {
    /// Starts the thread; `seed` makes the message IDs unpredictable.
    pub fn start(shared: Arc<dyn Host>, seed: u64) -> io::Result<Self> {
        let (jobs, rx) = mpsc::channel();
        let v4 = UdpSocket::bind("0.0.0.0:0")?;
        v4.set_nonblocking(true)?;
        // A host without IPv6 can still notify over IPv4.
        let v6 = UdpSocket::bind("[::]:0")
            .and_then(|s| s.set_nonblocking(true).map(|()| s))
            .ok();
        std::thread::Builder::new()
            .name("shardns-notify".into())
            .spawn(move || run(rx, &v4, v6.as_ref(), &*shared, seed))?;
        Ok(Self { jobs })
    }

    /// Queues an announcement (a no-op for a zone without targets).
    pub fn announce(&self, job: Job) {
        if !job.targets.is_empty() {
            let _ = self.jobs.send(job);
        }
    }
}

/// One announcement in flight.
struct Pending {
    zone: Arc<Zone>,
    target: SocketAddr,
    id: u16,
    message: Vec<u8>,
    tries: u32,
    next: Instant,
}

fn run(jobs: Receiver<Job>, v4: &UdpSocket, v6: Option<&UdpSocket>, shared: &dyn Host, seed: u64) {
    let mut pending: Vec<Pending> = Vec::new();
    let mut counter = 0u64;
    let mut buf = vec![0u8; 512];
    loop {
        let wait = if pending.is_empty() {
            Duration::from_secs(3600)
        } else {
            POLL
        };
        match jobs.recv_timeout(wait) {
            Ok(job) => {
                for target in job.targets {
                    pending
                        .retain(|p| !(p.target == target && p.zone.apex().eq_ci(&job.zone.apex())));
                    counter += 1;
                    let id = shardns_sys::seed::keyed_hash(seed, &[counter]) as u16;
                    let mut message = vec![0u8; 1024];
                    let mut len = notify(&job.zone, id, &mut message);
                    // Signed with the zone's transfer key, if it has one: a secondary that
                    // transfers with that key may require it on NOTIFY too (shardns does).
                    if let Some(key) = shared.plane().transfer_acl.load().key_for(job.zone.apex()) {
                        len = shardns_wire::tsig::sign_request(
                            &mut message,
                            len,
                            key,
                            shardns_sys::unix_now(),
                        );
                    }
                    message.truncate(len);
                    pending.push(Pending {
                        zone: Arc::clone(&job.zone),
                        target,
                        id,
                        message,
                        tries: 0,
                        next: Instant::now(),
                    });
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        // Answers.
        for sock in std::iter::once(v4).chain(v6) {
            while let Ok((n, from)) = sock.recv_from(&mut buf) {
                let answer = pending.iter().enumerate().find_map(|(i, p)| {
                    let rcode = (p.target == from).then(|| notify_response(&buf[..n], p.id));
                    rcode.flatten().map(|r| (i, r))
                });
                let Some((i, rcode)) = answer else {
                    continue; // not ours, or a late copy
                };
                let p = pending.swap_remove(i);
                shared.plane().stats.notify_acked.fetch_add(1, Relaxed);
                info!(
                    "notify of {} (serial {}) to {}: answered {rcode}",
                    p.zone.apex(),
                    p.zone.serial(),
                    p.target
                );
            }
        }
        // Sends and retries that are due.
        let now = Instant::now();
        pending.retain_mut(|p| {
            if p.next > now {
                return true;
            }
            if p.tries == TRIES {
                shared.plane().stats.notify_failed.fetch_add(1, Relaxed);
                warn!(
                    "notify of {} (serial {}) to {}: no answer after {TRIES} tries",
                    p.zone.apex(),
                    p.zone.serial(),
                    p.target
                );
                return false;
            }
            let sock = if p.target.is_ipv4() { Some(v4) } else { v6 };
            match sock.map(|s| s.send_to(&p.message, p.target)) {
                Some(Ok(_)) => {
                    shared.plane().stats.notify_sent.fetch_add(1, Relaxed);
                }
                Some(Err(e)) => warn!("notify of {} to {}: {e}", p.zone.apex(), p.target),
                None => warn!(
                    "notify of {} to {}: no IPv6 socket",
                    p.zone.apex(),
                    p.target
                ),
            }
            p.next = now + Duration::from_secs(1 << p.tries);
            p.tries += 1;
            true
        });
    }
}
