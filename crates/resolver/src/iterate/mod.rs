//! One client query's resolution: iteration from the closest known zone cut, as a state
//! machine over parsed responses.
//!
//! Owns: [`Task`], a stack of frames (the client's question at the bottom, name-server
//! address sub-resolutions above it), and the rules for reading a response: answer, CNAME
//! and DNAME chains, referrals with in-bailiwick glue, NXDOMAIN and NODATA, lame servers
//! (upward and sideways referrals included), QNAME minimisation (RFC 9156, relaxed unless
//! strict), forward and stub zones, no loopback server address learned from DNS data unless
//! allowed, server selection by SRTT (skipping servers held down as unresponsive), giving up
//! a zone cut (going back to the parent only when the cut's servers were lame, never twice
//! to the same servers), and the limits (chain length, referrals, queries, sub-resolution
//! depth, loops).
//! The [`crate::Engine`] validates responses (source, ID, question), handles TC and EDNS
//! fallback, and coalesces identical queries before anything reaches a task.
//! Never: sockets, clocks, randomness of its own (a per-task salt comes from the engine).
//!
//! This module holds what the parts share: the types the engine sees ([`Step`],
//! [`UpstreamQuery`], [`Failure`]) and the state of a task and its frames. The behaviour, by
//! concern:
//! - `task`: [`Task`], the stack of frames and the task-wide limits.
//! - `frame`: one frame's state machine, answers from the cache, CNAME/DNAME hops, the
//!   client answer.
//! - `cut`: the closest zone cut, and the zone's name servers with their cached addresses.
//! - `qmin`: QNAME minimisation (RFC 9156).
//! - `select`: server selection, tries and failures within a zone.
//! - `response`: reading a response (chains, referrals, negative answers, lame servers).

use std::net::{IpAddr, SocketAddr};

use shardns_wire::{NameBuf, NameRef, RType, Record};

use crate::cache::{DnssecRecords, Rank};
use crate::reply::{Ede, Resolution};
use crate::validate::Security;

mod cut;
mod frame;
mod qmin;
mod response;
mod secure;
mod select;
mod task;

pub(crate) use task::Task;

/// What the engine should do for a task next.
// An `UpstreamQuery` carries its names inline (no allocation per upstream query); a step is
// moved once or twice, so the size difference costs nothing that matters.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Step {
    /// Send this query, then wait for its response or timeout.
    Send(UpstreamQuery),
    /// The resolution is over.
    Done(Resolution),
}

/// One upstream query a task wants sent. Names are inline: nothing on the heap.
#[derive(Clone, Debug)]
pub(crate) struct UpstreamQuery {
    pub(crate) server: SocketAddr,
    pub(crate) qname: NameBuf,
    pub(crate) qtype: RType,
    /// Recursion desired: set for forwarders only.
    pub(crate) rd: bool,
    /// The zone cut the query is sent into (part of the coalescing key).
    pub(crate) zone: NameBuf,
}

/// Why a query produced no usable response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    Timeout,
    /// The driver could not send, or the server refused the connection.
    Network,
}

/// Counters shared by all frames of a task.
#[derive(Debug, Default)]
struct Budget {
    queries: u32,
    referrals: u32,
    /// Set when a task-wide limit is passed: the whole resolution fails.
    exhausted: Option<Ede>,
}

/// How a frame's resolution ended.
#[derive(Clone, Debug)]
enum FrameOutcome {
    /// The chain ends in the RRset asked for.
    Answer,
    NxDomain(Option<Record>),
    NoData(Option<Record>),
    Fail(Ede),
}

/// Where a frame is in its state machine (see `frame`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FrameState {
    /// Look in the cache, then find the closest zone cut.
    Start,
    /// Pick a server and send.
    Select,
    /// A query is out.
    Waiting,
}

/// A name server of the current zone. Its addresses are in [`Frame::addrs`].
struct Ns {
    name: NameBuf,
    /// How many addresses it has in `Frame::addrs`.
    addrs: u16,
    /// Address types not looked up yet: bit 0 A, bit 1 AAAA (looked up in that order).
    to_resolve: u8,
    resolving: bool,
}

/// An address of name server `servers[ns]`.
#[derive(Clone, Copy)]
struct Addr {
    ns: u16,
    addr: SocketAddr,
}

/// A server address tried in the current zone.
struct Tried {
    addr: SocketAddr,
    tries: u8,
    dead: bool,
}

/// A zone cut given up, with what was learned there.
struct Abandoned {
    zone: NameBuf,
    /// Every address of its servers (all had failed, were used up or held down).
    dead: Vec<SocketAddr>,
    timeouts: u32,
    network_errors: u32,
    lame: u32,
    held: bool,
}

/// What was sent and is awaited.
struct Sent {
    server: SocketAddr,
    qname: NameBuf,
    qtype: RType,
}

/// One RRset of a validating frame's chain, for the judge (`secure`).
struct Note {
    /// The RRset is `chain[start..end]`.
    start: usize,
    end: usize,
    /// The zone whose servers gave it.
    zone: NameBuf,
    /// The rank it was cached with.
    rank: Rank,
    /// Taken from the cache, already judged: (security, EDE code).
    cached: Option<(Security, u16)>,
    /// A CNAME synthesised from the DNAME before it (RFC 6672): as secure as the DNAME.
    synth: bool,
}

/// What a validating frame keeps of its responses for the judge.
#[derive(Default)]
struct Evidence {
    /// One per RRset of the frame's chain.
    notes: Vec<Note>,
    /// The RRSIGs at the owners of the RRsets accepted.
    sigs: Vec<Record>,
    /// NSEC, NSEC3 and RRSIG records of the final response's authority section (a denial,
    /// or the proof that a wildcard answer was allowed).
    proof: Vec<Record>,
    /// The zone whose servers gave the final response.
    proof_zone: NameBuf,
    /// A negative outcome taken from the cache: (security, EDE code).
    cached_negative: Option<(Security, u16)>,
    /// The rank of a negative outcome.
    negative_rank: Option<Rank>,
}

impl Evidence {
    fn clear(&mut self) {
        self.notes.clear();
        self.sigs.clear();
        self.proof.clear();
        self.proof_zone = NameBuf::new();
        self.cached_negative = None;
        self.negative_rank = None;
    }
}

/// Resolution of one (name, type): the client's, or a name server's address.
struct Frame {
    /// Its outcome is validated (the client's question unless CD; a DS or DNSKEY question
    /// of validation itself).
    validating: bool,
    /// A DS or DNSKEY question of validation itself (`secure`): what it proves goes into
    /// the key cache.
    key_frame: bool,
    /// What validation needs of the responses (kept only when `validating`).
    ev: Evidence,
    /// The DNSSEC records of the answer (RRSIGs, proofs), shown to a client that set DO.
    shown: DnssecRecords,
    /// The name first asked (loop detection).
    origin: NameBuf,
    /// The name now being resolved (moves along CNAME/DNAME chains).
    qname: NameBuf,
    qtype: RType,
    /// In a sub-resolution: the parent's name server this resolves.
    parent_ns: usize,
    /// Answer records so far: the chain, then the final RRset.
    chain: Vec<Record>,
    /// CNAME/DNAME hops taken.
    hops: u8,
    state: FrameState,
    outcome: Option<FrameOutcome>,
    zone: NameBuf,
    forward: bool,
    servers: Vec<Ns>,
    /// The servers' addresses, in the order found.
    addrs: Vec<Addr>,
    tried: Vec<Tried>,
    /// Labels of the minimised QNAME, or 0 for the full name.
    qmin_labels: usize,
    qmin_steps: u8,
    /// The server whose NXDOMAIN to a minimised question sent the full name: held to
    /// have broken minimisation if the full name exists.
    qmin_suspect: Option<SocketAddr>,
    timeouts: u32,
    network_errors: u32,
    lame: u32,
    /// An address was skipped as held down (unresponsive, see `servers`).
    held: bool,
    /// The cached cut this frame gave up on, so that the parent's referral back to it does
    /// not lead to the same servers again.
    abandoned: Option<Box<Abandoned>>,
    sent: Option<Sent>,
    /// The zone came from a cached NS RRset (not hints or configuration).
    from_cached_cut: bool,
    /// Only cached cuts with a shorter wire name than this are used.
    ceiling: usize,
    /// A prefetch: the cached answer to the question itself is not used (it is what is
    /// being refreshed); cached cuts and CNAME targets are.
    refresh: bool,
}

/// A name in an inline buffer.
fn name_buf(name: NameRef<'_>) -> NameBuf {
    let mut b = NameBuf::new();
    b.set(name);
    b
}

/// The address in an A or AAAA record's RDATA.
fn ip_of(rtype: RType, rdata: &[u8]) -> Option<IpAddr> {
    match rtype {
        RType::A => <[u8; 4]>::try_from(rdata).ok().map(IpAddr::from),
        RType::AAAA => <[u8; 16]>::try_from(rdata).ok().map(IpAddr::from),
        _ => None,
    }
}

/// Adds a name server (once) to a zone's list, without addresses yet.
fn push_ns(servers: &mut Vec<Ns>, name: NameRef<'_>) {
    if !servers.iter().any(|s| s.name.as_ref() == name) {
        servers.push(Ns {
            name: name_buf(name),
            addrs: 0,
            to_resolve: 0,
            resolving: false,
        });
    }
}
