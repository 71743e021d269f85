//! update::forward -- updates to a secondary zone passed on to its primary (RFC 2136 §6,
//! BIND's `allow-update-forwarding`): `[[zone]] update_forwarding` names the clients whose
//! updates go on (for the members of a consumed catalog, their `[[template]]`'s, which the
//! secondary inbox keeps beside each member); the others are REFUSED as before
//! ([`super::process`] asks [`target`] first, for each update that passed the rate limit).
//!
//! A forwarded update leaves the main thread at once: a thread of its own (at most
//! [`IN_FLIGHT`] at once; past it the update gets SERVFAIL at once) sends the client's
//! message unchanged to the zone's primaries in turn over TCP, or TLS with `primary_tls`
//! (`crate::secondary::client::exchange`), the next one only when the connection (or the
//! handshake) to the one before failed, never after the message may have reached it; the
//! answer read within [`WAIT`] in all goes back to the client unchanged through the job's
//! `reply`. The client's TSIG is thus checked by the primary, which must know the key, and
//! the answer is signed by the primary for the client: the secondary need not know the
//! key. When no primary answers, SERVFAIL, signed with the request's key if this server
//! knows it. The change reaches this secondary as any other: the primary's NOTIFY and IXFR.

use super::{Job, Tsig};
use crate::secondary::{client, Inbox};
use crate::stats::ForwardCounts as Counts;
use shardns_config::{Config, PrimaryTls};
use shardns_wire::{Name, Query, Rcode};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{info, warn};

/// The longest a forwarded update waits for the primary's answer, connecting included.
pub(super) const WAIT: Duration = Duration::from_secs(10);

/// Forwarded updates waiting for their primary at most; past it SERVFAIL at once.
pub(super) const IN_FLIGHT: usize = 32;

/// Where a forwarded update goes: the zone's primaries, in turn, and how.
pub(super) struct Target {
    apex: Name,
    primaries: Vec<SocketAddr>,
    tls: Option<PrimaryTls>,
}

/// Where `job` goes if it is to be forwarded: an update (not the operator's) to a secondary
/// zone of `config` whose `update_forwarding` holds the client's address, or to a member of
/// a consumed catalog (in `members`) whose template's does.
pub(super) fn target(config: &Config, members: Option<&Inbox>, job: &Job) -> Option<Target> {
    if job.operator {
        return None;
    }
    let query = Query::parse(&job.message).ok()?;
    let apex = query.qname().to_name();
    let Some(table) = config.zone_table(&apex) else {
        let member = members?.member_forward(apex.as_ref(), job.peer)?;
        return Some(Target {
            apex,
            primaries: member.primaries.clone(),
            tls: member.tls.clone(),
        });
    };
    if table.primary.is_empty() || !table.update_forwarding.iter().any(|p| p.contains(job.peer)) {
        return None;
    }
    Some(Target {
        apex,
        primaries: table.primary.clone(),
        tls: table.primary_tls.clone(),
    })
}

/// Forwards `job` to `to` on a thread of its own; its answer goes back through the job's
/// `reply` (a SERVFAIL signed if the job's TSIG verified here); `counts`: what became of it.
pub(super) fn start(job: Job, to: Target, counts: &Arc<Counts>) {
    if counts.in_flight.fetch_add(1, Relaxed) >= IN_FLIGHT {
        counts.in_flight.fetch_sub(1, Relaxed);
        counts.overflow.fetch_add(1, Relaxed);
        info!(
            "update of {} from {}: SERVFAIL: {IN_FLIGHT} forwarded updates already wait",
            to.apex, job.peer
        );
        if let Some(answer) = servfail(&job.message, &job.tsig) {
            (job.reply)(answer);
        }
        return;
    }
    let thread = Arc::clone(counts);
    let spawned = std::thread::Builder::new()
        .name("shardns-update-fwd".into())
        .spawn(move || {
            let answer = forward(&job.message, job.peer, &to, &job.tsig, &thread);
            thread.in_flight.fetch_sub(1, Relaxed);
            if let Some(answer) = answer {
                (job.reply)(answer);
            }
        });
    if let Err(e) = spawned {
        counts.in_flight.fetch_sub(1, Relaxed);
        counts.failed.fetch_add(1, Relaxed);
        warn!("update forwarding: no thread: {e}; the update is dropped");
    }
}

/// The primary's answer to `message`, or SERVFAIL when none came.
fn forward(
    message: &[u8],
    peer: IpAddr,
    to: &Target,
    tsig: &Tsig,
    counts: &Counts,
) -> Option<Vec<u8>> {
    let by = Instant::now() + WAIT;
    let mut why = String::from("no primary");
    for &primary in &to.primaries {
        match client::exchange(primary, to.tls.as_ref(), message, by) {
            // The answer to this message: its ID, QR set.
            Ok(answer) if answer.len() >= 12 && answer[..2] == message[..2] => {
                if answer[2] & 0x80 != 0 {
                    counts.answered.fetch_add(1, Relaxed);
                    info!(
                        "update of {} from {peer} forwarded to {primary}: {}",
                        to.apex,
                        Rcode(u16::from(answer[3] & 0x0f))
                    );
                    return Some(answer);
                }
                why = format!("{primary} sent a query back");
                break;
            }
            Ok(_) => {
                why = format!("{primary} answered another message");
                break;
            }
            Err((sent, e)) => {
                why = format!("{primary}: {e}");
                if sent {
                    // It may have the update: not sent again elsewhere.
                    break;
                }
            }
        }
    }
    counts.failed.fetch_add(1, Relaxed);
    warn!(
        "update of {} from {peer}: SERVFAIL: not forwarded: {why}",
        to.apex
    );
    servfail(message, tsig)
}

/// SERVFAIL for `message`, signed with its key if its TSIG verified here (else unsigned:
/// the signature was for the primary to check).
fn servfail(message: &[u8], tsig: &Tsig) -> Option<Vec<u8>> {
    super::answer_signed_if_known(message, tsig, Rcode::SERVFAIL, shardns_sys::unix_now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardns_config::ZoneConfig;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// An UPDATE of `d.test.` (zone section only), ID 0x1234.
    fn update() -> Vec<u8> {
        let mut m = vec![0x12, 0x34, 5 << 3, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(b"\x01d\x04test\x00\x00\x06\x00\x01");
        m
    }

    fn job(peer: &str, operator: bool) -> Job {
        Job {
            message: update(),
            peer: peer.parse().unwrap(),
            operator,
            tsig: Tsig::Unsigned,
            reply: Box::new(|_| {}),
        }
    }

    fn config(primary: Vec<SocketAddr>, forwarding: &[&str]) -> Config {
        let mut zone = ZoneConfig::new("d.test.".parse().unwrap(), "d.zone".into());
        zone.primary = primary;
        zone.update_forwarding = forwarding.iter().map(|p| p.parse().unwrap()).collect();
        let mut config = Config::default();
        config.zones.push(zone);
        config
    }

    /// A port nobody listens on (bound, then let go).
    fn closed() -> SocketAddr {
        TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
    }

    #[test]
    fn forwarded_only_for_a_secondary_zone_and_the_listed_clients() {
        let primary = vec!["192.0.2.1:53".parse().unwrap()];
        let c = config(primary.clone(), &["127.0.0.0/8"]);
        let to = target(&c, None, &job("127.0.0.9", false)).expect("forwarded");
        assert_eq!(to.primaries, primary);
        assert!(target(&c, None, &job("192.0.2.9", false)).is_none());
        assert!(
            target(&c, None, &job("127.0.0.9", true)).is_none(),
            "the operator's"
        );
        assert!(target(&config(primary, &[]), None, &job("127.0.0.9", false)).is_none());
        // A primary zone (validation refuses the pair; the check does not rely on it).
        assert!(target(
            &config(Vec::new(), &["0.0.0.0/0"]),
            None,
            &job("127.0.0.9", false)
        )
        .is_none());
    }

    #[test]
    fn the_answer_relayed_unchanged_from_the_first_primary_that_connects() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let up = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut len = [0u8; 2];
            s.read_exact(&mut len).unwrap();
            let mut msg = vec![0u8; usize::from(u16::from_be_bytes(len))];
            s.read_exact(&mut msg).unwrap();
            assert_eq!(msg, update(), "the message unchanged");
            // The answer: QR set, YXDOMAIN (6), and an octet only the primary would add.
            msg[2] |= 0x80;
            msg[3] = 6;
            msg.push(0xee);
            s.write_all(&(msg.len() as u16).to_be_bytes()).unwrap();
            s.write_all(&msg).unwrap();
            msg
        });
        let c = config(vec![closed(), up], &["127.0.0.0/8"]);
        let to = target(&c, None, &job("127.0.0.1", false)).unwrap();
        let counts = Counts::default();
        let answer = forward(
            &update(),
            "127.0.0.1".parse().unwrap(),
            &to,
            &Tsig::Unsigned,
            &counts,
        );
        assert_eq!(answer, Some(server.join().unwrap()));
        assert_eq!(counts.answered.load(Relaxed), 1);
        // Nobody there: SERVFAIL for the same message.
        let c = config(vec![closed()], &["127.0.0.0/8"]);
        let to = target(&c, None, &job("127.0.0.1", false)).unwrap();
        let answer = forward(
            &update(),
            "127.0.0.1".parse().unwrap(),
            &to,
            &Tsig::Unsigned,
            &counts,
        )
        .expect("an answer");
        assert_eq!(&answer[..2], &[0x12, 0x34]);
        assert_eq!(answer[3] & 0x0f, 2, "SERVFAIL");
        assert_eq!(counts.failed.load(Relaxed), 1);
    }
}
