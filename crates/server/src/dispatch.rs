//! dispatch -- the one way a query goes through a worker, whatever carried it.
//!
//! ```text
//! transport (an Origin) ─ bytes ─▶ Query::parse ─▶ zone::respond ─┬─ Answer / Error ───┐
//!                                     │ not a query: drop         ├─ Transfer ─▶ policy ┤─▶ Exit::send ─▶ bytes
//!                                     └ malformed: reject         ├─ NotOurs ─▶ resolver┘   (or Pending / Stream)
//!                                                                 └─ Notify ─▶ secondary inbox (NOTIFY in)
//! resolver, later (the same Origin) ──────────────────────────────────────────▶ Exit::send ─▶ bytes
//! ```
//!
//! A query is parsed once ([`Query`]) and classified once ([`shardns_zone::respond`] says
//! whether our zones answer it, whether it is an error, a zone transfer or not ours); this
//! module then hands it to the one role that takes it and writes the response into the
//! caller's buffer. The transports (`worker::udp`, `worker::xdp_port`, `worker::stream`,
//! `worker::quic`, `worker::https`) only move bytes: each calls [`Dispatcher::handle`] and
//! sends what it returns. Every response, this module's now or the resolver's later, leaves
//! through [`Exit::send`]: RRL (UDP), statistics, the query log, dnstap.
//!
//! Never: allocation (but for the rare transfer start and signed query), locks, clock
//! system calls (but for signed queries), or a second parse of the query.

use crate::dnstap::{PolicyHit, Tap};
use crate::extras::{self, EdnsPolicy, Extras, Verdict as OptionsVerdict};
use crate::origin::Origin;
use crate::querylog::log_query;
pub(crate) use crate::querylog::{OrDash, QName};
use crate::recursion::{Handling, Recursion};
use crate::rrl::{Rrl, Verdict};
use crate::stats::{ControlStats, WorkerStats, XFR_REFUSED, XFR_STARTED};
use crate::transfers::{self, TransferAnswer};
use crate::Shared;
use arc_swap::ArcSwap;
use shardns_control::journal::Journals;
use shardns_control::secondary::Inbox;
use shardns_control::signed::tsig_refusal;
use shardns_control::update;
use shardns_control::TransferAcl;
use shardns_sys::unix_now;
use shardns_wire::tsig::{self, Signer};
use shardns_wire::{Query, Rcode, Transport};
use shardns_zone::answer::size_limit;
use shardns_zone::xfr::Transfer;
use shardns_zone::{refuse, reject, respond, OptAt, Reply, Written, ZoneSet};
use std::sync::Arc;
use std::time::Instant;
use tracing::info;

/// What a transport does with a query once it has been dispatched.
pub(crate) enum Action {
    /// Send the response now: `Written::len` octets at the start of the output buffer.
    Send(Written),
    /// Send nothing (not a query, or dropped by rate limiting; counted).
    Drop,
    /// The resolver answers later, through the worker's delivery path.
    Pending,
    /// Stream this zone transfer on the connection (TCP only).
    Stream(Box<Transfer>),
}

/// One worker's roles for one turn of its loop.
pub(crate) struct Dispatcher<'w> {
    pub(crate) zones: &'w ZoneSet,
    pub(crate) transfer_acl: &'w ArcSwap<TransferAcl>,
    /// The zones' histories, for IXFR in incremental form.
    pub(crate) journals: &'w Journals,
    /// The secondary zones, which take NOTIFY (`None`: NOTIMP, as before there were any).
    pub(crate) secondary: Option<&'w Inbox>,
    /// The control plane's counters (NOTIFY taken and refused).
    pub(crate) control: &'w ControlStats,
    pub(crate) recursion: Option<&'w mut Recursion>,
    /// NSID and cookie secrets, read only for queries with EDNS options.
    pub(crate) edns: &'w ArcSwap<EdnsPolicy>,
    /// Cookie timestamps from `now`.
    pub(crate) unix: extras::UnixClock,
    /// The way out of every response: RRL, statistics, query log, dnstap.
    pub(crate) exit: Exit<'w>,
    /// Set when the resolver role took the last query (dnstap logs it as a client query).
    pub(crate) recursive: bool,
    /// Dynamic updates go to the control plane, and their answers come back to this worker
    /// (`Shared::deliver_late`).
    pub(crate) back: Back<'w>,
}

/// What a query answered off the worker needs: the shared state and the worker's number.
#[derive(Clone, Copy)]
pub(crate) struct Back<'w> {
    pub(crate) shared: &'w Arc<Shared>,
    pub(crate) worker: usize,
}

impl Dispatcher<'_> {
    /// Answers `bytes` from `origin` into `out` (the transport's limit for one response).
    #[inline]
    pub(crate) fn handle(&mut self, bytes: &[u8], origin: Origin, out: &mut [u8]) -> Action {
        // dnstap off costs this one branch: the code below is compiled without its steps.
        if self.exit.tap.is_some() {
            return self.handle_tapped(bytes, origin, out);
        }
        self.handle_query::<false>(bytes, origin, out)
    }

    /// [`Self::handle`] with dnstap on: a response is logged with its query on the way out
    /// ([`Exit::send`]); a query that gets none (dropped, answered later, a transfer) here.
    #[inline(never)]
    fn handle_tapped(&mut self, bytes: &[u8], origin: Origin, out: &mut [u8]) -> Action {
        self.recursive = false;
        let action = self.handle_query::<true>(bytes, origin, out);
        if !matches!(action, Action::Send(_)) {
            let e = &mut self.exit;
            if let Some(tap) = e.tap.as_deref_mut() {
                tap.query(bytes, origin, e.now, e.stats, self.recursive);
            }
        }
        action
    }

    /// A query, with the dnstap steps on the way out if `TAP`.
    #[inline]
    fn handle_query<const TAP: bool>(
        &mut self,
        bytes: &[u8],
        origin: Origin,
        out: &mut [u8],
    ) -> Action {
        // Borrowed, not moved out of the `Result`: the query (with its name) is not copied.
        let parsed = Query::parse(bytes);
        let query = match &parsed {
            Ok(q) => q,
            Err(e) => {
                return match reject(e, out) {
                    Some(w) => self.send::<TAP>(w, None, bytes, origin, out),
                    None => {
                        self.exit.stats.dropped.add(1);
                        Action::Drop
                    }
                }
            }
        };
        // EDNS options (NSID, cookies, padding) cost this one comparison when absent.
        if query.edns().is_some_and(|e| e.options.0 < e.options.1) {
            return self.handle_options::<TAP>(query, origin, out);
        }
        match self.answer(query, origin, out, Extras::default()) {
            Ok(written) => self.send::<TAP>(written, Some(query), bytes, origin, out),
            Err(action) => action,
        }
    }

    /// The response to a parsed query, from the role that takes it (`extras` go with a
    /// resolution that answers later).
    fn answer(
        &mut self,
        query: &Query<'_>,
        origin: Origin,
        out: &mut [u8],
        extras: Extras,
    ) -> Result<Written, Action> {
        // Signed queries cost this one branch when absent.
        if query.has_tsig() {
            return self.answer_signed(query, origin, out, extras);
        }
        let transport = origin.transport();
        match respond(self.zones, query, transport, out) {
            Reply::Answer(w) | Reply::Error(w) => Ok(w),
            other => self.other_role(other, query, origin, out, extras),
        }
    }

    /// The roles other than our zones' answers: transfers, resolution, NOTIFY.
    fn other_role(
        &mut self,
        reply: Reply,
        query: &Query<'_>,
        origin: Origin,
        out: &mut [u8],
        extras: Extras,
    ) -> Result<Written, Action> {
        Ok(match reply {
            Reply::Answer(w) | Reply::Error(w) => w,
            Reply::Transfer => self.transfer(query, origin, out)?,
            Reply::NotOurs => self.resolve(query, origin, out, extras)?,
            Reply::Update => self.update(query, origin, out, None)?,
            Reply::Notify => {
                let peer = origin.peer.map(|p| p.ip());
                // A NOTIFY for a transferred policy zone is the resolver's.
                let policy = self
                    .recursion
                    .as_deref()
                    .and_then(|r| r.notify(query, peer, out));
                match (policy, self.secondary) {
                    (Some(w), _) => w,
                    (None, Some(inbox)) => inbox.notify(query, peer, unix_now(), out, self.control),
                    (None, None) => shardns_zone::not_implemented(query, out),
                }
            }
        })
    }

    /// An UPDATE (RFC 2136): queued for the control plane, which answers it later through
    /// this worker; REFUSED now when no zone may be updated or the queue is full. Its TSIG
    /// goes with it checked, verified once: `tsig` as `answer_signed` verified it, else
    /// read here (a TSIG that is not last is FORMERR).
    #[inline(never)]
    fn update(
        &mut self,
        query: &Query<'_>,
        origin: Origin,
        out: &mut [u8],
        tsig: Option<update::Tsig>,
    ) -> Result<Written, Action> {
        let updates = &self.back.shared.plane.updates;
        let Some(peer) = origin.peer.filter(|_| updates.enabled()) else {
            return Ok(shardns_zone::notify_answer(query, Rcode::REFUSED, out));
        };
        let tsig = tsig.unwrap_or_else(|| {
            update::Tsig::check(query.bytes(), self.transfer_acl.load().keys(), unix_now())
        });
        let (shared, worker) = (Arc::clone(self.back.shared), self.back.worker);
        let job = update::Job {
            message: query.bytes().to_vec(),
            peer: peer.ip(),
            operator: false,
            tsig,
            reply: Box::new(move |answer| shared.deliver_late(worker, origin, answer)),
        };
        match updates.submit(job) {
            Ok(()) => Err(Action::Pending),
            Err(_) => Ok(shardns_zone::notify_answer(query, Rcode::REFUSED, out)),
        }
    }

    /// A signed query (a secondary's SOA query, say), answered as RFC 8945 §5.3 asks: the
    /// TSIG is checked against every `[[key]]` and the answer written short of the room
    /// its own TSIG takes within the response's size limit (TC and the question alone if
    /// the rest does not fit), then signed. One that does not verify gets FORMERR or NOTAUTH
    /// with the TSIG error ([`tsig_refusal`]). Transfers and NOTIFY check their TSIG
    /// themselves (NOTIFY against the zone's key, not `[[key]]`): the check here is then
    /// done twice, on a rare path.
    #[inline(never)]
    fn answer_signed(
        &mut self,
        query: &Query<'_>,
        origin: Origin,
        out: &mut [u8],
        extras: Extras,
    ) -> Result<Written, Action> {
        let transport = origin.transport();
        let Ok(Some(sig)) = tsig::read(query.bytes()) else {
            // A TSIG record that does not read: FORMERR (RFC 8945 §5.1).
            let error = shardns_wire::Error::Malformed {
                header: *query.header(),
                qtype: Some(query.qtype()),
            };
            return reject(&error, out).ok_or(Action::Drop);
        };
        let now = unix_now();
        let acl = self.transfer_acl.load();
        let verdict = tsig::verify(query.bytes(), &sig, acl.keys(), now);
        let limit = size_limit(query, transport).min(out.len());
        let cut = match &verdict {
            Ok(key) => Signer::new(key, &sig).limit(limit),
            Err(_) => limit,
        };
        match respond(self.zones, query, transport, &mut out[..cut]) {
            Reply::Answer(mut w) | Reply::Error(mut w) => Ok(match verdict {
                Ok(key) => {
                    w.len = Signer::new(key, &sig).sign(out, w.len, now);
                    // The TSIG is the last record now.
                    w.opt = OptAt::Absent;
                    w
                }
                Err(failure) => tsig_refusal(&sig, &failure, now, &mut out[..limit], |rcode, o| {
                    shardns_zone::notify_answer(query, rcode, o)
                }),
            }),
            // The verdict goes with the update: the control plane does not verify it again.
            Reply::Update => {
                let tsig = update::Tsig::verified(sig, verdict);
                self.update(query, origin, out, Some(tsig))
            }
            other => self.other_role(other, query, origin, out, extras),
        }
    }

    /// A query whose OPT record has options: the answer with the NSID, COOKIE and PADDING
    /// options they ask for (`extras`), written into the buffer less the room those take;
    /// FORMERR for a malformed COOKIE, BADCOOKIE for a server cookie not ours over UDP.
    #[inline(never)]
    fn handle_options<const TAP: bool>(
        &mut self,
        query: &Query<'_>,
        origin: Origin,
        out: &mut [u8],
    ) -> Action {
        let edns = self.edns;
        let policy = edns.load();
        let transport = origin.transport();
        let verdict = extras::read(
            query,
            &policy,
            origin.peer.map(|p| p.ip()),
            self.unix.secs(self.exit.now),
            transport == Transport::Tcp,
            origin.encrypted(),
        );
        // The response's size limit, as the answering code computes it.
        let limit = size_limit(query, transport).min(out.len());
        match verdict {
            OptionsVerdict::Malformed => {
                let error = shardns_wire::Error::Malformed {
                    header: *query.header(),
                    qtype: Some(query.qtype()),
                };
                match reject(&error, out) {
                    Some(w) => self.send::<TAP>(w, Some(query), query.bytes(), origin, out),
                    None => Action::Drop,
                }
            }
            OptionsVerdict::BadCookie(x) => {
                let cut = limit.saturating_sub(x.room(&policy));
                let mut w = refuse(query, transport, &mut out[..cut]);
                extras::set_badcookie(out, &w);
                w.len = x.apply(out, &w, limit, &policy);
                w.rcode = extras::BADCOOKIE;
                self.exit.stats.bad_cookies.add(1);
                self.send::<TAP>(w, Some(query), query.bytes(), origin, out)
            }
            OptionsVerdict::Answer(x) => {
                // A signed answer gets no options (below): its TSIG's room is held back
                // instead, which leaves the header and question room in 512 octets.
                let cut = if query.has_tsig() {
                    limit
                } else {
                    limit.saturating_sub(x.room(&policy))
                };
                match self.answer(query, origin, &mut out[..cut], x) {
                    Ok(mut w) => {
                        // A signed answer ends with its TSIG, which covers what is before
                        // it: no option is added after it.
                        if !x.is_empty() && !query.has_tsig() {
                            w.len = x.apply(out, &w, limit, &policy);
                        }
                        self.send::<TAP>(w, Some(query), query.bytes(), origin, out)
                    }
                    Err(action) => action,
                }
            }
        }
    }

    /// An AXFR or IXFR: the transfer policy's one-message reply, or a transfer to stream.
    fn transfer(
        &mut self,
        query: &Query<'_>,
        origin: Origin,
        out: &mut [u8],
    ) -> Result<Written, Action> {
        let tcp = origin.transport() == Transport::Tcp;
        // Over UDP a transfer query gets one message of at most 512 octets: an allowed IXFR
        // our SOA (RFC 1995 §2; TC if it does not fit), the rest their refusal.
        let room = if tcp { out.len() } else { out.len().min(512) };
        let ip = origin.peer.map(|p| p.ip());
        let answer = transfers::decide(
            self.zones,
            &self.transfer_acl.load(),
            self.journals,
            query,
            ip,
            tcp,
            unix_now(),
            &mut out[..room],
        );
        match answer {
            TransferAnswer::Stream(t) => {
                let stats = self.exit.stats;
                stats.answered(Some(query.qtype()), Rcode::NOERROR, false);
                stats.xfr[XFR_STARTED].add(1);
                info!(
                    "transfer of {} ({}{}, serial {}) to {}: started",
                    t.zone().apex(),
                    t.request().qtype,
                    match t.request().client_serial {
                        Some(s) if t.is_incremental() => format!(" incremental from {s}"),
                        Some(s) => format!(" from {s} in AXFR form"),
                        None => String::new(),
                    },
                    t.zone().serial(),
                    OrDash(origin.peer)
                );
                Err(Action::Stream(t))
            }
            TransferAnswer::Reply(r) => {
                if r.rcode != Rcode::NOERROR {
                    self.exit.stats.xfr[XFR_REFUSED].add(1);
                    // Over UDP the source address may be forged: no log line per refusal.
                    if tcp {
                        info!(
                            "transfer of {} to {} refused: {}",
                            query.qname(),
                            OrDash(origin.peer),
                            r.rcode
                        );
                    }
                }
                Ok(r)
            }
        }
    }

    /// A query for a name outside our zones: the resolver role's (from its cache now, or
    /// later), else REFUSED.
    fn resolve(
        &mut self,
        query: &Query<'_>,
        origin: Origin,
        out: &mut [u8],
        extras: Extras,
    ) -> Result<Written, Action> {
        let transport = origin.transport();
        if let Some(rec) = self.recursion.as_deref_mut() {
            self.recursive = true;
            let (now, stats) = (self.exit.now, self.exit.stats);
            // The resolver keeps `origin` for an answer that comes later.
            match rec.query(query, origin, out, now, stats, extras) {
                Handling::Refused => {}
                Handling::Pending => return Err(Action::Pending),
                Handling::Dropped => return Err(Action::Drop),
                Handling::Written(w) => return Ok(w),
            }
        }
        Ok(refuse(query, transport, out))
    }

    /// An early response (written now, into `out`) on its way out: [`Exit::send`].
    #[inline]
    fn send<const TAP: bool>(
        &mut self,
        w: Written,
        query: Option<&Query<'_>>,
        bytes: &[u8],
        origin: Origin,
        out: &mut [u8],
    ) -> Action {
        // The policy hit of a query the resolver role answered now (dnstap only).
        let hit = match self.recursion.as_deref_mut() {
            Some(rec) if TAP && self.recursive => rec.take_hit(),
            _ => None,
        };
        let asked = Asked {
            qname: query.map(QName::Parsed),
            query: Some(bytes),
            client: self.recursive,
            policy: hit.as_ref(),
        };
        match self.exit.send::<TAP>(w, asked, origin, out) {
            Some(w) => Action::Send(w),
            None => Action::Drop,
        }
    }
}

/// The one way out of a worker for every response, early (the dispatcher's, written
/// while the query is handled) or late (the resolver's, when its resolution ends):
/// [`Exit::send`]. Only the moving of the bytes is left to the transport.
pub(crate) struct Exit<'w> {
    /// Response rate limiting (`[rrl]`), else `None`.
    pub(crate) rrl: Option<&'w mut Rrl>,
    /// `now` on the rate limiter's clock (0 without RRL).
    pub(crate) rrl_now: u64,
    pub(crate) stats: &'w WorkerStats,
    pub(crate) log_queries: bool,
    /// The worker's end of the dnstap log (`[dnstap]`), else `None`.
    pub(crate) tap: Option<&'w mut Tap>,
    /// The loop turn's time.
    pub(crate) now: Instant,
}

/// What a response answers, for the query log and dnstap.
#[derive(Clone, Copy)]
pub(crate) struct Asked<'a> {
    /// The question's name, for the query log (`None`: the query did not parse).
    pub(crate) qname: Option<QName<'a>>,
    /// The query's octets, logged by dnstap just before the response; `None` when the
    /// query was logged as it came in (a resolver's later answer).
    pub(crate) query: Option<&'a [u8]>,
    /// The resolver role answers (dnstap's CLIENT_QUERY and CLIENT_RESPONSE).
    pub(crate) client: bool,
    /// The response policy that made the response, for dnstap.
    pub(crate) policy: Option<&'a PolicyHit>,
}

impl Exit<'_> {
    /// A response (`w.len` octets at the start of `out`) on its way out to `origin`: rate
    /// limiting (UDP only; slip rewrites it in place), statistics, the query log (if on)
    /// and, if `TAP`, dnstap (the query, when `asked` has it, then the response). `None`:
    /// dropped by RRL (counted), send nothing.
    ///
    /// The resolver's later answers take this way too. RRL applies to them over UDP as to
    /// its answers from the cache: the same response to the same (maybe forged) address
    /// counts the same whether the cache had it or not (before, late answers bypassed RRL).
    #[inline]
    pub(crate) fn send<const TAP: bool>(
        &mut self,
        mut w: Written,
        asked: Asked<'_>,
        origin: Origin,
        out: &mut [u8],
    ) -> Option<Written> {
        // RRL off costs this one branch.
        if let (Some(rrl), Some(p), Transport::Udp) =
            (self.rrl.as_deref_mut(), origin.peer, origin.transport())
        {
            let response = &mut out[..w.len];
            match rrl.check(
                p.ip(),
                w.rcode,
                w.truncated,
                w.wildcard,
                response,
                self.rrl_now,
            ) {
                Verdict::Send => {}
                Verdict::Drop => {
                    self.stats.rrl_dropped.add(1);
                    self.stats.dropped.add(1);
                    return None;
                }
                Verdict::Slip(len) => {
                    self.stats.rrl_slipped.add(1);
                    w.len = len;
                    w.truncated = true;
                    w.opt = OptAt::Absent;
                }
            }
        }
        self.stats.answered(w.qtype, w.rcode, w.truncated);
        if self.log_queries {
            log_query(origin, asked.qname, &w, self.stats);
        }
        if TAP {
            if let Some(tap) = self.tap.as_deref_mut() {
                if let Some(query) = asked.query {
                    tap.query(query, origin, self.now, self.stats, asked.client);
                }
                if let Some(response) = out.get(..w.len) {
                    let policy = asked.policy.map(|h| (h, asked.qname.map(QName::wire)));
                    let (now, stats) = (self.now, self.stats);
                    tap.response(response, origin, now, stats, asked.client, policy);
                }
            }
        }
        Some(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::origin::Via;
    use shardns_config::RrlConfig;
    use shardns_wire::RType;

    /// A NOERROR response with question `a. A` and no records.
    fn response() -> Vec<u8> {
        let mut r = vec![0x12, 0x34, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0];
        r.extend_from_slice(&[1, b'a', 0, 0, 1, 0, 1]);
        r
    }

    fn written(len: usize) -> Written {
        Written {
            len,
            rcode: Rcode::NOERROR,
            qtype: Some(RType::A),
            truncated: false,
            wildcard: None,
            opt: OptAt::Absent,
        }
    }

    #[test]
    fn every_answer_takes_the_same_way_out() {
        let mut config = RrlConfig::default();
        (config.enabled, config.rate, config.slip, config.window) = (true, 1, 0, 1);
        let now = Instant::now();
        let mut rrl = Rrl::new(&config, 7, now);
        let stats = WorkerStats::default();
        let mut exit = Exit {
            rrl: Some(&mut rrl),
            rrl_now: 1000,
            stats: &stats,
            log_queries: false,
            tap: None,
            now,
        };
        let peer = Some("192.0.2.1:5300".parse().unwrap());
        let name: shardns_wire::Name = "a.".parse().unwrap();
        // A resolver's later answer: no query bytes (dnstap logged the query already).
        let late = Asked {
            qname: Some(QName::Kept(&name)),
            query: None,
            client: true,
            policy: None,
        };
        let udp = Origin::new(Via::Udp { socket: 0 }, false, peer);
        let xdp = Origin::new(Via::Xdp { socket: 0 }, false, peer);
        let tcp = Origin::new(
            Via::Tcp {
                slot: 0,
                generation: 0,
            },
            false,
            peer,
        );
        let mut out = response();
        let len = out.len();
        // One response a second to this client: the first goes, then RRL drops, over UDP
        // and AF_XDP alike; never over a stream.
        assert!(exit
            .send::<true>(written(len), late, udp, &mut out)
            .is_some());
        assert!(exit
            .send::<true>(written(len), late, udp, &mut out)
            .is_none());
        assert!(exit
            .send::<false>(written(len), late, xdp, &mut out)
            .is_none());
        for _ in 0..3 {
            assert!(exit
                .send::<true>(written(len), late, tcp, &mut out)
                .is_some());
        }
        assert_eq!(stats.rrl_dropped.get(), 2);
        assert_eq!(stats.dropped.get(), 2);
        assert_eq!(
            stats.rcodes[0].get(),
            4,
            "answers counted once each, dropped ones not"
        );
    }
}
