//! update::txn -- the operator's transactions on the control socket, as knotc's
//! `zone-begin`, `zone-set`, `zone-unset`, `zone-diff`, `zone-commit` and `zone-abort`:
//! `shardns zone begin ZONE`, `set ZONE OWNER [TTL] TYPE RDATA...`,
//! `unset ZONE OWNER [TYPE [RDATA...]]`, `diff ZONE`, `commit ZONE`, `abort ZONE`.
//!
//! A transaction is held here, in the control plane, one per zone at most: a second `begin`
//! of a zone with one open is refused (as Knot refuses it), whichever client asks; any
//! client may add to, show, commit or abort the open one (as with knotc). Records are read
//! by the zone-file scanner (one line `OWNER TTL IN TYPE RDATA`: relative names, `@`,
//! quoted strings, escapes, TTL units and RFC 3597's `\# LEN HEX` as in a zone file), so a
//! record that does not read is refused when it is set, not when the transaction commits.
//!
//! `commit` turns the transaction into one UPDATE message (the wire crate's [`Update`]:
//! the changes in the order given) and queues it for the main thread as an operator's
//! [`Job`] (no TSIG, no policy, no rate limit), then waits for its answer
//! ([`COMMIT_WAIT`] at most): the same path as an update from the network, with its checks,
//! journal, NOTIFY and signing. Before that the change is tried on the served version
//! (`shardns_zone::update::update`, nothing kept): a record the RFC's rules would silently
//! ignore (a CNAME beside other data, data beside a CNAME or below a DNAME, an SOA whose
//! serial is not higher) refuses the commit, since an operator expects what they set to be
//! there. A refused commit (that, or an rcode other than NOERROR) changes nothing and
//! leaves the transaction open, to be mended with `unset` or given up with `abort`; a commit
//! with no answer in time closes it (the change may still be applied: see `zone status`).

use super::{Inbox, Job};
use crate::Plane;
use shardns_wire::update::Update;
use shardns_wire::{rdata, Name, RType, Rcode};
use shardns_zone::scan::{scan_text, ScanOptions};
use shardns_zone::Zone;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv6Addr};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;
use tracing::info;

/// How long `commit` waits for the main thread's answer.
pub const COMMIT_WAIT: Duration = Duration::from_secs(30);

/// Changes one transaction may hold (one UPDATE message holds at most 65535 octets anyway).
const MAX_CHANGES: usize = 10_000;

/// The open transactions, by zone.
#[derive(Default)]
pub struct Transactions {
    open: Mutex<HashMap<Name, Vec<Op>>>,
}

/// One change of a transaction, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    /// `set`: add this record.
    Set(Rec),
    /// `unset OWNER`: every RRset of the name; `unset OWNER TYPE`: the RRset; with rdata:
    /// that record.
    Unset {
        owner: Name,
        rtype: Option<RType>,
        rdata: Option<Vec<u8>>,
    },
}

/// A record read from the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rec {
    owner: Name,
    rtype: RType,
    ttl: u32,
    rdata: Vec<u8>,
}

impl Plane {
    /// `zone begin|set|unset|diff|commit|abort ZONE ...` (`line`: the command line after
    /// `zone`): the reply (success, text), or `None` if `line` is not one of these. A
    /// record's text is taken as it came (blanks in quoted strings kept).
    pub fn zone_transaction(&self, line: &str) -> Option<(bool, String)> {
        let args: Vec<&str> = line.split_whitespace().collect();
        let (&action, rest) = args.split_first()?;
        if !matches!(
            action,
            "begin" | "set" | "unset" | "diff" | "commit" | "abort"
        ) {
            return None;
        }
        let usage = || {
            Some((
                false,
                format!(
                    "usage: zone begin|diff|commit|abort ZONE, zone set ZONE OWNER [TTL] TYPE \
                     RDATA..., zone unset ZONE OWNER [TYPE [RDATA...]] (got zone {action} {})\n",
                    rest.join(" ")
                ),
            ))
        };
        let Some((zone, rest)) = rest.split_first() else {
            return usage();
        };
        let zone = match zone.parse::<Name>() {
            Ok(z) => z,
            Err(e) => return Some((false, format!("zone {zone:?}: {e}\n"))),
        };
        let served = self.zones.load().get(zone.as_ref()).cloned();
        let txns = &self.updates.transactions;
        Some(match (action, rest) {
            ("begin", []) => self.begin(&zone, served.as_deref()),
            ("diff", []) => txns.diff(&zone, served.as_deref()),
            ("abort", []) => txns.abort(&zone),
            ("commit", []) => txns.commit(&self.updates, &zone, served.as_deref()),
            ("set", [owner, rdata @ ..]) if !rdata.is_empty() => {
                let text = after_words(line, 3);
                txns.change(&zone, || Ok(Op::Set(record(&zone, owner, text)?)))
            }
            ("unset", [owner, rest @ ..]) => {
                let text = after_words(line, 3);
                txns.change(&zone, || unset(&zone, owner, rest, text))
            }
            _ => return usage(),
        })
    }

    /// `begin`: a new transaction, if the zone is a primary zone served here and has none.
    fn begin(&self, zone: &Name, served: Option<&Zone>) -> (bool, String) {
        if served.is_none_or(Zone::is_unavailable) {
            return (false, format!("zone {zone} is not served here\n"));
        }
        let secondary = self
            .secondary
            .as_ref()
            .is_some_and(|s| s.status(zone.as_ref()).is_some());
        if secondary {
            return (
                false,
                format!("zone {zone} is a secondary zone: its primary's versions replace it\n"),
            );
        }
        let mut open = self.updates.transactions.lock();
        if open.contains_key(zone) {
            return (
                false,
                format!(
                    "zone {zone} already has an open transaction (one per zone): commit or abort \
                     it first (zone diff {zone} shows it)\n"
                ),
            );
        }
        open.insert(zone.clone(), Vec::new());
        info!("zone {zone}: transaction opened on the control socket");
        (true, format!("zone {zone}: transaction opened\n"))
    }
}

impl Transactions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Name, Vec<Op>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `zone` has an open transaction.
    pub fn is_open(&self, zone: &Name) -> bool {
        self.lock().contains_key(zone)
    }

    /// The changes of `zone`'s open transaction, if it has one (for `zone status`).
    pub fn pending(&self, zone: &Name) -> Option<usize> {
        self.lock().get(zone).map(Vec::len)
    }

    /// `set` or `unset`: the change `read` gives, added to the zone's open transaction.
    fn change(&self, zone: &Name, read: impl FnOnce() -> Result<Op, String>) -> (bool, String) {
        let mut open = self.lock();
        let Some(ops) = open.get_mut(zone) else {
            return (false, no_transaction(zone));
        };
        if ops.len() >= MAX_CHANGES {
            return (
                false,
                format!(
                    "zone {zone}: the transaction holds {MAX_CHANGES} changes, the most it may\n"
                ),
            );
        }
        match read() {
            Ok(op) => {
                let text = format!("zone {zone}: {}\n", show(&op));
                ops.push(op);
                (true, text)
            }
            Err(e) => (false, format!("zone {zone}: {e}\n")),
        }
    }

    /// `diff`: the transaction's changes, `+` a record added, `-` one deleted (a deleted
    /// RRset or name as the served version holds it now).
    fn diff(&self, zone: &Name, served: Option<&Zone>) -> (bool, String) {
        let open = self.lock();
        let Some(ops) = open.get(zone) else {
            return (false, no_transaction(zone));
        };
        let mut text = String::new();
        for op in ops {
            match op {
                Op::Set(r) => {
                    let _ = writeln!(text, "+{}", show_record(r));
                }
                Op::Unset {
                    owner,
                    rtype,
                    rdata,
                } => {
                    let there = served
                        .map(|z| present(z, owner, *rtype))
                        .unwrap_or_default();
                    let matching: Vec<&Rec> = there
                        .iter()
                        .filter(|r| rdata.as_ref().is_none_or(|d| same_rdata(d, &r.rdata)))
                        .collect();
                    if matching.is_empty() {
                        let _ = writeln!(text, "-{} (not in the zone now)", show(op));
                    }
                    for r in matching {
                        let _ = writeln!(text, "-{}", show_record(r));
                    }
                }
            }
        }
        if ops.is_empty() {
            text.push_str("(no changes)\n");
        }
        (true, text)
    }

    /// `abort`: the transaction given up.
    fn abort(&self, zone: &Name) -> (bool, String) {
        match self.lock().remove(zone) {
            Some(ops) => {
                info!("zone {zone}: transaction aborted on the control socket");
                (
                    true,
                    format!(
                        "zone {zone}: transaction aborted, {} changes discarded\n",
                        ops.len()
                    ),
                )
            }
            None => (false, no_transaction(zone)),
        }
    }

    /// `commit`: the transaction tried, then sent to the main thread as one UPDATE, and its
    /// answer awaited.
    fn commit(&self, inbox: &Inbox, zone: &Name, served: Option<&Zone>) -> (bool, String) {
        let Some(ops) = self.lock().get(zone).cloned() else {
            return (false, no_transaction(zone));
        };
        let now = shardns_sys::unix_now();
        let id = (now as u16) ^ (std::process::id() as u16);
        let request = match message(zone, &ops, id, now) {
            Ok(r) => r,
            Err(e) => {
                return (
                    false,
                    format!("zone {zone}: {e}; the transaction stays open\n"),
                )
            }
        };
        if let Some(zone_now) = served {
            if let Err(e) = check::dry_run(zone_now, &ops, request.message(), now) {
                return (
                    false,
                    format!(
                        "zone {zone}: commit refused, nothing changed: {e}; the transaction stays \
                         open (zone unset or zone abort)\n"
                    ),
                );
            }
        }
        let (rcode, waited) = match send(inbox, request, now) {
            Ok(r) => r,
            Err(Sent::QueueFull) => {
                return (
                    false,
                    format!("zone {zone}: the update queue is full, nothing sent; try again\n"),
                )
            }
            Err(Sent::NoAnswer(why)) => {
                self.lock().remove(zone);
                return (
                    false,
                    format!(
                        "zone {zone}: {why}; the change may still be applied (zone status \
                         {zone} shows the serial); the transaction is closed\n"
                    ),
                );
            }
        };
        if rcode != Rcode::NOERROR {
            return (
                false,
                format!(
                    "zone {zone}: commit refused: {rcode} (the server's log says why), nothing \
                     changed; the transaction stays open (zone unset or zone abort)\n"
                ),
            );
        }
        self.lock().remove(zone);
        info!(
            "zone {zone}: transaction of {} changes committed on the control socket",
            ops.len()
        );
        (
            true,
            format!(
                "zone {zone}: committed {} changes ({:.3} s)\n",
                ops.len(),
                waited.as_secs_f64()
            ),
        )
    }
}

/// Why a commit got no rcode.
enum Sent {
    QueueFull,
    NoAnswer(String),
}

/// Queues the operator's UPDATE and waits for its rcode.
fn send(
    inbox: &Inbox,
    mut request: shardns_wire::update::Request,
    now: u64,
) -> Result<(Rcode, Duration), Sent> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let job = Job {
        message: request.message().to_vec(),
        peer: IpAddr::V6(Ipv6Addr::LOCALHOST),
        operator: true,
        tsig: super::Tsig::Unsigned,
        reply: Box::new(move |answer| {
            let _ = tx.send(answer);
        }),
    };
    let started = std::time::Instant::now();
    inbox.submit(job).map_err(|_| Sent::QueueFull)?;
    let answer = match rx.recv_timeout(COMMIT_WAIT) {
        Ok(a) => a,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            return Err(Sent::NoAnswer(format!(
                "no answer from the main thread in {} s",
                COMMIT_WAIT.as_secs()
            )))
        }
        Err(_) => return Err(Sent::NoAnswer("the update was not answered".into())),
    };
    match request.response(&answer, now) {
        Ok(Some(rcode)) => Ok((rcode, started.elapsed())),
        _ => Err(Sent::NoAnswer("the answer does not read".into())),
    }
}

/// The transaction as one UPDATE message.
fn message(
    zone: &Name,
    ops: &[Op],
    id: u16,
    now: u64,
) -> Result<shardns_wire::update::Request, String> {
    let mut u = Update::new(zone.as_ref(), id);
    for op in ops {
        match op {
            Op::Set(r) => u.add(r.owner.as_ref(), r.rtype, r.ttl, &r.rdata),
            Op::Unset {
                owner, rtype: None, ..
            } => u.delete_name(owner.as_ref()),
            Op::Unset {
                owner,
                rtype: Some(t),
                rdata: None,
            } => u.delete_rrset(owner.as_ref(), *t),
            Op::Unset {
                owner,
                rtype: Some(t),
                rdata: Some(d),
            } => u.delete_record(owner.as_ref(), *t, d),
        };
    }
    u.finish(None, now)
        .map_err(|_| "the transaction does not fit one UPDATE message (65535 octets)".into())
}

/// The records of `owner` (of `rtype`, or all) in `zone` now.
fn present(zone: &Zone, owner: &Name, rtype: Option<RType>) -> Vec<Rec> {
    let Some(node) = zone.find(owner.as_ref()) else {
        return Vec::new();
    };
    node.rrsets()
        .filter(|s| rtype.is_none_or(|t| t == s.rtype))
        .filter(|s| rtype.is_some() || s.rtype != RType::RRSIG)
        .flat_map(|s| {
            s.rdatas().map(move |d| Rec {
                owner: owner.clone(),
                rtype: s.rtype,
                ttl: s.ttl,
                rdata: d.to_vec(),
            })
        })
        .collect()
}

/// Rdata compared as a server compares it, names in any case (close enough for the
/// checks here).
fn same_rdata(a: &[u8], b: &[u8]) -> bool {
    a.eq_ignore_ascii_case(b)
}

fn no_transaction(zone: &Name) -> String {
    format!("zone {zone} has no open transaction (zone begin {zone} opens one)\n")
}

/// The owner as given on the command line: `@` the apex, a relative name under it, an
/// absolute one that must be in the zone.
fn owner_name(zone: &Name, text: &str) -> Result<Name, String> {
    let owner = if text == "@" {
        zone.clone()
    } else {
        Name::from_text(text, Some(zone.as_ref())).map_err(|e| format!("owner {text:?}: {e}"))?
    };
    if !owner.as_ref().ends_with(&zone.as_ref()) {
        return Err(format!("{owner} is outside the zone"));
    }
    Ok(owner)
}

/// A record `OWNER [TTL] [IN] TYPE RDATA...`, read by the zone-file scanner.
fn record(zone: &Name, owner: &str, rest: &str) -> Result<Rec, String> {
    let owner = owner_name(zone, owner)?;
    let line = format!("{owner} {rest}\n");
    let scanned = scan_text(
        line.as_bytes(),
        Path::new("command line"),
        &ScanOptions::new(zone.clone()),
    )
    .map_err(|e| {
        let why: Vec<&str> = e.diagnostics().iter().map(|d| d.message.as_str()).collect();
        if why.is_empty() {
            e.to_string()
        } else {
            why.join("; ")
        }
    })?;
    if let Some(w) = scanned.warnings.first() {
        return Err(w.message.clone());
    }
    let mut found = scanned
        .chunks
        .iter()
        .flat_map(|c| c.items.iter().map(move |i| (c, i)));
    let (records, item) = found.next().ok_or("no record")?;
    if found.next().is_some() {
        return Err("one record at a time".into());
    }
    if item.rtype.is_meta() || item.rtype == RType::OPT {
        return Err(format!("{} is not a data type", item.rtype));
    }
    Ok(Rec {
        owner,
        rtype: item.rtype,
        ttl: item.ttl,
        rdata: records.rdata(item).to_vec(),
    })
}

/// `unset OWNER [TYPE [RDATA...]]`.
/// `rest`: the words after the owner, `text` the same as it came.
fn unset(zone: &Name, owner: &str, rest: &[&str], text: &str) -> Result<Op, String> {
    match rest {
        [] => Ok(Op::Unset {
            owner: owner_name(zone, owner)?,
            rtype: None,
            rdata: None,
        }),
        [t] => {
            let rtype = RType::from_text(t).ok_or_else(|| format!("type {t:?}: unknown"))?;
            if rtype.is_meta() {
                return Err(format!("{rtype} is not a data type"));
            }
            Ok(Op::Unset {
                owner: owner_name(zone, owner)?,
                rtype: Some(rtype),
                rdata: None,
            })
        }
        _ => {
            // TTL 0: a TTL the scanner reads, never used.
            let r = record(zone, owner, &format!("0 {text}"))?;
            Ok(Op::Unset {
                owner: r.owner,
                rtype: Some(r.rtype),
                rdata: Some(r.rdata),
            })
        }
    }
}

/// `line` after its first `n` words and the blanks that follow them.
fn after_words(line: &str, n: usize) -> &str {
    let mut rest = line.trim_start();
    for _ in 0..n {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        rest = rest[end..].trim_start();
    }
    rest.trim_end()
}

/// A record in presentation format: `OWNER TTL IN TYPE RDATA`.
fn show_record(r: &Rec) -> String {
    let mut s = format!("{} {} IN {} ", r.owner, r.ttl, r.rtype);
    let _ = rdata::fmt_text(r.rtype, &r.rdata, &mut s);
    s
}

/// A change as the command line would give it.
fn show(op: &Op) -> String {
    match op {
        Op::Set(r) => format!("set {}", show_record(r)),
        Op::Unset {
            owner, rtype: None, ..
        } => format!("unset {owner} (every RRset)"),
        Op::Unset {
            owner,
            rtype: Some(t),
            rdata: None,
        } => format!("unset {owner} {t} (the RRset)"),
        Op::Unset {
            owner,
            rtype: Some(t),
            rdata: Some(d),
        } => {
            let mut s = format!("unset {owner} IN {t} ");
            let _ = rdata::fmt_text(*t, d, &mut s);
            s
        }
    }
}

mod check;

#[cfg(test)]
mod tests;
