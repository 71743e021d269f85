//! The caching recursive resolver core of shardns: a sharded, memory-bounded cache and
//! iterative resolution as a sans-I/O state machine.
//!
//! This crate never opens a socket, reads a clock, spawns a thread or sleeps. Responses and
//! `now` (milliseconds on the driver's monotonic clock, as a `u64`) come in; queries to send,
//! sockets to close, deadlines and answers come out. The server's workers drive it with real
//! sockets (the quinn-proto model).
//!
//! # Shape
//! - [`Resolver`] (`Send + Sync`, in an `Arc`): the [`Config`], the shared [`Cache`] and the
//!   per-server SRTT/EDNS/hold-down table. Shared by all workers.
//! - [`Cache`]: 64 shards by name hash, each a `Mutex` taken only to copy a record set in or
//!   out. [`Cache::answer`] is the hit path: it renders a cached answer (following CNAMEs,
//!   negative answers with their SOA) straight into the worker's `MessageWriter` with
//!   counted-down TTLs, one lock per name, no allocation.
//! - [`Engine`]: one per worker, never shared. It owns that worker's resolutions (tasks),
//!   its outstanding upstream queries (random ID, random source port, coalesced when two
//!   tasks ask the same question of the same zone), its timers and its CSPRNG (`StdRng`,
//!   ChaCha12, seeded by the driver).
//! - Iteration itself (module `iterate`): from the closest cut (forward zone, cached NS,
//!   stub zone or root hints) down through referrals, with in-bailiwick glue only,
//!   sub-resolutions of name-server addresses, CNAME/DNAME chains, relaxed QNAME
//!   minimisation (RFC 9156), negative caching (RFC 2308), trust ranking (RFC 2181 §5.4.1),
//!   SRTT server selection, hold-down of servers that stopped answering (shared by all
//!   workers, as Unbound's infrastructure cache), and limits on chain length, referrals,
//!   queries and depth.
//!   Failures become SERVFAIL with an Extended DNS Error (RFC 8914, [`Ede`]).
//!
//! # Driver loop (what a server implements)
//! ```no_run
//! # use std::sync::Arc;
//! # use shardns_resolver::{Config, Engine, Event, Resolver, CacheAnswer};
//! # use shardns_wire::{MessageWriter, Name, RType};
//! # fn clock_ms() -> u64 { 0 }
//! let resolver = Arc::new(Resolver::new(Config::default()));
//! let mut engine = Engine::new(Arc::clone(&resolver), [7; 32] /* getrandom in real life */);
//! // A client query arrives: try the cache first (no allocation, one shard lock).
//! let (qname, qtype): (Name, RType) = ("www.example.com.".parse().unwrap(), RType::A);
//! let mut buf = [0u8; 1232];
//! let mut w = MessageWriter::new(&mut buf, 1232);
//! w.put_question(qname.as_ref(), qtype, shardns_wire::Class::IN).unwrap();
//! if let CacheAnswer::Miss { .. } = resolver.cache().answer(qname.as_ref(), qtype, clock_ms(), &mut w) {
//!     let _task = engine.resolve(qname.as_ref(), qtype, clock_ms()); // remember task -> client
//! }
//! loop {
//!     while let Some(ev) = engine.poll() {
//!         match ev {
//!             // Fresh socket per query (UDP: bind t.source_port, connect to t.server);
//!             // TCP: prefix the 2-octet length. Map the socket to t.query.
//!             Event::Transmit(t) => { let _ = (t.query, t.server, t.tcp, t.payload()); }
//!             Event::Close(_query) => { /* close that socket */ }
//!             Event::Done(_task, answer) => {
//!                 // Header + question, then answer.write(&mut w, dnssec_ok), then
//!                 // put_opt_with_ede(&mut w, size, answer.rcode, false, answer.ede.as_ref()).
//!                 let _ = answer;
//!             }
//!         }
//!     }
//!     let _deadline = engine.poll_timeout(); // sleep in epoll until then at most
//!     // On a datagram on query q's socket: engine.handle_response(q, from, bytes, clock_ms());
//!     // On ICMP unreachable / connection refused: engine.handle_send_error(q, clock_ms());
//!     engine.handle_timeout(clock_ms());
//!     # break;
//! }
//! ```
//! Memory: [`CacheStats::bytes`] charges each name its slot, key, per-RRset header, rdata
//! and 16 bytes per heap allocation; a name with one A record costs about 170 bytes.
//!
//! DNSSEC validation (module `validate`, on by default) checks answers from the trust
//! anchors down and stamps each cached set with its [`Security`]; a cache hit never checks
//! a signature again. Each cached set also keeps its RRSIGs (and a denial its NSEC/NSEC3
//! proof), written only for clients that set DO ([`Cache::answer_query`]); validated NSEC
//! ranges answer NXDOMAIN/NODATA without asking (RFC 8198, [`Config::aggressive_nsec`]).
//!
//! Serve-stale (RFC 8767, [`Config::serve_stale`]: expired sets kept and answered from when
//! resolution fails or is slow), prefetch ([`Config::prefetch`]: the hit path reports sets
//! in the last tenth of their TTL, [`Engine::prefetch`] refreshes them) and DNS64 (RFC 6147,
//! [`Config::dns64`]) are off by default.
//!
//! Response policy zones ([`Rpz`]) are the server's to hold and swap; it checks a query
//! before the cache ([`Rpz::check_before`]) and an answer's data after resolution (its
//! CNAME targets, its addresses and the name servers above its names,
//! [`Rpz::check_resolved`], those read from the cache by [`policy_name_servers`]):
//! QNAME, client-IP, IP-answer, NSDNAME and NSIP triggers, BIND's actions and precedence;
//! the zones' records come from the caller.
//!
//! Not done (yet): 0x20 case randomisation, root priming (the hints are
//! used as the root's servers), RFC 8020 NXDOMAIN cuts, aggressive NSEC3 use,
//! TCP connection reuse. Coalescing is per engine (worker); across workers the
//! shared cache absorbs repeats once the first answer is in.
//!
//! Only class IN is resolved; the server answers other classes itself. Lock acquisitions
//! are counted per shard ([`CacheStats::lock_acquisitions`]) and returned per call
//! ([`CacheAnswer`]), so the server can report locks per cache-hit query.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod cache;
mod config;
mod dns64;
mod engine;
mod error;
mod iterate;
pub mod local;
mod msg;
mod reply;
mod rpz;
mod servers;
mod validate;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Mutex;

use shardns_wire::{MessageWriter, NameRef, RType};

pub use cache::{Cache, CacheAnswer, CacheStats};
pub use config::{Config, Hints, ZoneServers};
pub use dns64::{Dns64Options, Dns64Prefix, Ipv6Range};
pub use engine::{Ask, Engine, EngineStats, Event, QueryId, TaskId, Transmit, WallClock};
pub use error::Error;
pub use reply::{
    client_response_limit, finish_client_response, put_opt_with_ede, Ede, Resolution,
    CLIENT_UDP_MAX, EDE_OPTION, OPT_ROOM,
};
pub use rpz::{
    name_servers as policy_name_servers, Action as PolicyAction, Change as PolicyChange,
    Hit as PolicyHit, LocalData, NameServer as PolicyNameServer, Override as PolicyOverride,
    PolicyZone, PolicyZoneBuilder, Rpz, Trigger as PolicyTrigger,
    ACTION_LABELS as POLICY_ACTION_LABELS, MIN_NS_DOTS as POLICY_MIN_NS_DOTS,
};
pub use validate::{Security, TrustAnchors};

/// A question under serve-stale's failure-recheck timer: the lower-cased wire name, then
/// the type (big-endian); one slice, so that it is looked up from a stack copy (the
/// cache-hit path's check allocates nothing).
type RecheckKey = Box<[u8]>;
const RECHECK_KEY_MAX: usize = 255 + 2;

/// Writes the key of (`name`, `qtype`) into `buf`; returns its length.
fn recheck_key(name: NameRef<'_>, qtype: RType, buf: &mut [u8; RECHECK_KEY_MAX]) -> usize {
    let wire = name.as_wire();
    let n = wire.len().min(255);
    for (d, s) in buf.iter_mut().zip(&wire[..n]) {
        *d = s.to_ascii_lowercase();
    }
    buf[n..n + 2].copy_from_slice(&qtype.0.to_be_bytes());
    n + 2
}

/// The shared part of the resolver: configuration, cache and server knowledge.
/// `Send + Sync`; one per server, in an `Arc`, used by every worker's [`Engine`].
pub struct Resolver {
    config: Config,
    cache: Cache,
    servers: servers::ServerTable,
    /// What DNSSEC validation learned of each zone's keys.
    keys: validate::KeyCache,
    /// Validated NSEC ranges, for aggressive use (RFC 8198).
    nsec: validate::NsecCache,
    /// Serve-stale's failure-recheck timers: (lower-cased name, type) -> until when the
    /// question is answered stale without asking. Touched only on cache misses.
    stale_recheck: Mutex<HashMap<RecheckKey, u64>>,
}

/// Most failure-recheck timers kept; past it the expired ones go, then all.
const MAX_RECHECKS: usize = 16_384;

impl Resolver {
    /// A resolver with an empty cache.
    pub fn new(config: Config) -> Self {
        let mut cache = Cache::new(
            config.cache_bytes,
            config.min_ttl,
            config.max_ttl,
            config.max_negative_ttl,
        );
        cache.validating = config.validation;
        if config.serve_stale {
            cache.stale_keep_ms = u64::from(config.serve_stale_max) * 1000;
        }
        cache.prefetch = config.prefetch;
        let servers = servers::ServerTable::new(
            config.srtt_half_life_ms,
            servers::HoldPolicy {
                after: config.server_hold_after,
                base_ms: config.server_hold_ms,
                max_ms: config.server_hold_max_ms,
            },
        );
        Self {
            config,
            cache,
            servers,
            keys: validate::KeyCache::default(),
            nsec: validate::NsecCache::default(),
            stale_recheck: Mutex::new(HashMap::new()),
        }
    }

    /// Serve-stale: (`name`, `qtype`) failed; answer it stale without asking until `until`.
    pub(crate) fn note_failure(&self, name: NameRef<'_>, qtype: RType, until: u64) {
        let mut m = self.stale_recheck.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() >= MAX_RECHECKS {
            let now = until.saturating_sub(self.config.serve_stale_recheck_ms);
            m.retain(|_, &mut t| t > now);
            if m.len() >= MAX_RECHECKS {
                m.clear();
            }
        }
        let mut key = [0; RECHECK_KEY_MAX];
        let len = recheck_key(name, qtype, &mut key);
        m.insert(key[..len].into(), until);
    }

    /// Serve-stale: (`name`, `qtype`) failed less than the failure-recheck time ago.
    pub(crate) fn rechecking(&self, name: NameRef<'_>, qtype: RType, now: u64) -> bool {
        let m = self.stale_recheck.lock().unwrap_or_else(|e| e.into_inner());
        if m.is_empty() {
            return false;
        }
        let mut key = [0; RECHECK_KEY_MAX];
        let len = recheck_key(name, qtype, &mut key);
        m.get(&key[..len]).is_some_and(|&t| t > now)
    }

    /// Serve-stale on the cache-hit path (RFC 8767 §4): while (`qname`, `qtype`) is in its
    /// failure-recheck window (its resolution failed lately and was answered stale), the
    /// stale answer written after the question as [`Cache::answer_query`] writes a hit,
    /// with EDE 3 (19 for an NXDOMAIN) in the `Hit`'s `ede`, without a resolution, a task
    /// or an allocation. A miss otherwise: the caller asks the engine, which keeps RFC
    /// 8767's timers (the client-response timer, the recheck once the window is over).
    pub fn answer_stale(
        &self,
        qname: NameRef<'_>,
        qtype: RType,
        now: u64,
        (cd, dnssec_ok): (bool, bool),
        w: &mut MessageWriter<'_>,
    ) -> CacheAnswer {
        if !self.config.serve_stale || !self.rechecking(qname, qtype, now) {
            return CacheAnswer::Miss { locks: 0 };
        }
        let ttl = self.config.serve_stale_reply_ttl;
        self.cache
            .answer_stale(qname, qtype, now, (cd, dnssec_ok), ttl, w)
    }

    /// The shared cache (the hit path is [`Cache::answer`]).
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// What a query from `client` with RD, CD and DO bits `rd`, `cd`, `dnssec_ok` asks of
    /// [`Engine::resolve_for`]: DNS64 applies if it is on and the client is one it is for
    /// (BIND's `clients` and `recursive-only`).
    pub fn ask(
        &self,
        client: Option<std::net::IpAddr>,
        rd: bool,
        cd: bool,
        dnssec_ok: bool,
    ) -> Ask {
        let dns64 = self.config.dns64 && self.config.dns64_options.applies(client, rd);
        Ask {
            cd,
            dnssec_ok,
            dns64,
        }
    }

    /// DNS64 (`dns64`: on for this query) may change the answer to a `qtype` question
    /// (AAAA synthesis, PTR under the prefix): the server sends such questions to the
    /// engine, not to the cache-hit path, which knows nothing of DNS64.
    pub fn dns64_owns(&self, qtype: RType, dns64: bool) -> bool {
        dns64 && (qtype == RType::AAAA || qtype == RType::PTR)
    }

    /// The wall clock stepped (an engine saw it): what validation judged against the old
    /// time is forgotten, so that a bad boot clock corrected by NTP does not leave bogus
    /// verdicts (signatures "not yet valid" or "expired") behind for `bogus_ttl`. Bogus
    /// records and keys are dropped and the kept NSEC ranges cleared; secure data stays
    /// (its lifetime is bounded by its TTL).
    pub(crate) fn forget_clock_verdicts(&self) {
        self.cache.forget_bogus();
        self.keys.forget_bogus();
        self.nsec.clear();
    }
}
