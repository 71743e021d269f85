//! Authoritative answering: one parsed query in, one response out, into the caller's buffer.
//!
//! [`respond`] is where a query is classified, once: answered from our zones, an error no
//! role can serve, a zone transfer (for the server's transfer policy), or not ours (for a
//! resolver role, else [`refuse`]). [`lookup`] decides what a name is in a zone (RFC 1034 §4.3.2: an exact match, a referral,
//! a DNAME redirection, a wildcard synthesis per RFC 4592, or a name that does not exist);
//! [`respond`] turns that into sections, follows CNAME chains inside the zone, adds
//! additional addresses, handles EDNS (RFC 6891) and truncation.
//!
//! Policy (documented in docs/ANSWERS.md): minimal responses like Knot DNS (no apex NS in the
//! authority section of positive answers); ANY over UDP gets one RRset (RFC 8482 §4.1), over
//! TCP every RRset; a response that does not fit is sent with TC set, only the question and
//! the OPT record, so the client retries over TCP.
//!
//! Never: allocation, locks, clocks or I/O. Every step is O(labels) hash lookups.

use crate::db::{NodeRef, RRset, Zone, ZoneSet};
use shardns_wire::writer::Full;
use shardns_wire::{
    rdata, Class, Header, MessageWriter, NameBuf, NameRef, Opcode, Query, RType, Rcode, Section,
    Transport,
};

/// Our EDNS UDP payload size: large enough for most answers, small enough not to fragment
/// (the DNS flag day 2020 figure).
pub const EDNS_UDP_SIZE: u16 = 1232;
/// Size of an OPT record without options.
const OPT_LEN: usize = 11;
/// Most CNAME/DNAME steps followed inside a zone for one query.
const MAX_CHAIN: usize = 12;
/// Most distinct names whose addresses go in the additional section.
const MAX_ADDITIONAL: usize = 16;
/// Most NSEC/NSEC3 records in one answer's proofs: three for a name error, one per
/// wildcard expansion of a CNAME chain.
const MAX_PROOFS: usize = 4 + MAX_CHAIN;

/// What the zones make of a query: the one place that decides which role takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// A name in one of our zones: the answer, referral or denial is written.
    Answer(Written),
    /// A query no role can serve (an unknown opcode, EDNS version or class, a meta type as
    /// the question): the error response is written.
    Error(Written),
    /// AXFR or IXFR of class IN: the transfer policy decides; nothing is written.
    Transfer,
    /// A well-formed query for a name outside every zone of ours: nothing is written. A
    /// resolver role may take it; else [`refuse`] answers it.
    NotOurs,
    /// A NOTIFY (RFC 1996): nothing is written. A secondary role takes it (and answers with
    /// [`notify_answer`]); without one, [`not_implemented`] answers it.
    Notify,
    /// An UPDATE (RFC 2136): nothing is written. The control plane takes it for a zone that
    /// may be updated; without one, [`not_implemented`] answers it.
    Update,
}

/// Answers `query` from `zones` into `out`, or says which other role takes it. `out` should
/// hold 65535 octets for TCP; for UDP at least [`EDNS_UDP_SIZE`].
pub fn respond(zones: &ZoneSet, query: &Query<'_>, transport: Transport, out: &mut [u8]) -> Reply {
    if query.header().opcode() != Opcode::QUERY {
        if query.header().opcode() == Opcode::NOTIFY {
            return Reply::Notify;
        }
        if query.header().opcode() == Opcode::UPDATE {
            return Reply::Update;
        }
        return Reply::Error(bare(
            response_header(query.header()),
            Rcode::NOTIMP,
            None,
            out,
        ));
    }
    let qtype = query.qtype();
    let qclass = query.qclass();
    let error = if query.edns().is_some_and(|e| e.version > 0) {
        Some(Rcode::BADVERS)
    } else if qclass != Class::IN && qclass != Class::ANY {
        Some(Rcode::REFUSED)
    } else if matches!(qtype, RType::OPT | RType::TSIG | RType::TKEY) {
        Some(Rcode::FORMERR)
    } else if matches!(qtype, RType::AXFR | RType::IXFR) {
        if qclass != Class::IN {
            Some(Rcode::REFUSED)
        } else {
            return Reply::Transfer;
        }
    } else if qtype.0 == 0 {
        // Type 0 is reserved (RFC 6895 §3.1): not a kind of query we support.
        Some(Rcode::NOTIMP)
    } else {
        None
    };
    if let Some(rcode) = error {
        return Reply::Error(write(query, transport, out, |_| Body {
            rcode,
            ..Body::default()
        }));
    }
    let qname = query.qname();
    let mut zone = zones.find(qname);
    if qtype == RType::DS && zone.is_some_and(|z| z.apex().eq_ci(&qname)) {
        // RFC 4035 §3.1.4.1: DS lives on the parent side; answer from the parent zone if
        // this server has it.
        if let Some(parent) = qname.parent().and_then(|p| zones.find(p)) {
            zone = Some(parent);
        }
    }
    let Some(zone) = zone else {
        return Reply::NotOurs;
    };
    if zone.is_unavailable() {
        // A secondary's zone with nothing to answer from (expired, or never transferred).
        return Reply::Error(write(query, transport, out, |_| Body {
            rcode: Rcode::SERVFAIL,
            ..Body::default()
        }));
    }
    Reply::Answer(write(query, transport, out, |w| {
        // Most names written from here on end in the zone's apex: found by a comparison.
        w.set_question_suffix(zone.apex_node().name());
        let mut a = Answerer {
            zone,
            w,
            qtype,
            transport,
            dnssec: zone.is_signed() && query.edns().is_some_and(|e| e.dnssec_ok),
            proved: [0; MAX_PROOFS],
            nproved: 0,
            aa: true,
            rcode: Rcode::NOERROR,
            additional: [0; MAX_ADDITIONAL],
            nadditional: 0,
            wildcard: None,
        };
        let truncated = a.run(qname).is_err();
        Body {
            rcode: a.rcode,
            aa: a.aa,
            truncated,
            wildcard: a.wildcard,
        }
    }))
}

/// The response header's fixed part: the query's ID, opcode, RD and CD, with QR set.
fn response_header(qh: &Header) -> Header {
    let mut h = Header {
        id: qh.id,
        ..Header::default()
    };
    h.set_qr(true);
    h.set_opcode(qh.opcode());
    h.set_rd(qh.rd());
    h.set_cd(qh.cd());
    h
}

/// What a response body came to, for its header.
struct Body {
    rcode: Rcode,
    aa: bool,
    truncated: bool,
    wildcard: Option<u8>,
}

impl Default for Body {
    fn default() -> Self {
        Self {
            rcode: Rcode::NOERROR,
            aa: false,
            truncated: false,
            wildcard: None,
        }
    }
}

/// Writes a response to `query`: the header, the question, what `body` writes (rolled back
/// to the question if it did not fit, with TC set) and our OPT if the query had one.
#[inline]
fn write<'o>(
    query: &Query<'_>,
    transport: Transport,
    out: &'o mut [u8],
    body: impl FnOnce(&mut MessageWriter<'o>) -> Body,
) -> Written {
    let mut h = response_header(query.header());
    let edns = query.edns();
    let limit = size_limit(query, transport).min(out.len());
    let mut w = MessageWriter::new(out, limit);
    // A question of at most 259 octets always fits in 512.
    let _ = w.put_question(query.qname(), query.qtype(), query.qclass());
    let after_question = w.checkpoint();
    if edns.is_some() {
        w.set_limit(limit.saturating_sub(OPT_LEN));
    }
    let b = body(&mut w);
    if b.truncated {
        w.rollback(after_question);
        h.set_tc(true);
    }
    h.set_aa(b.aa);
    h.set_rcode(b.rcode);
    w.set_limit(limit);
    // The OPT record goes where the writer is (its room was kept: it always fits).
    let mut opt = OptAt::Absent;
    if let Some(e) = edns {
        let at = w.len() as u16;
        if w.put_opt(EDNS_UDP_SIZE, b.rcode.extended_bits(), 0, e.dnssec_ok, &[])
            .is_ok()
        {
            opt = OptAt::At(at);
        }
    }
    let len = w.finish(&h).len();
    Written {
        len,
        rcode: b.rcode,
        qtype: Some(query.qtype()),
        truncated: b.truncated,
        wildcard: b.wildcard,
        opt,
    }
}

/// The most octets a response to `query` may take over `transport` (RFC 1035 §4.2.1: 512
/// over UDP without EDNS; RFC 6891 §6.2.5: the client's size, at least 512, capped by ours;
/// 65535 over a stream). Callers that append to an answer (a TSIG, EDNS options) write it
/// into a buffer cut short of this by what they append.
#[inline]
pub fn size_limit(query: &Query<'_>, transport: Transport) -> usize {
    match (transport, query.edns()) {
        (Transport::Tcp, _) => u16::MAX as usize,
        (Transport::Udp, None) => 512,
        (Transport::Udp, Some(e)) => e.udp_size.clamp(512, EDNS_UDP_SIZE) as usize,
    }
}

/// The name of step `step` of an answer: the query's name, then the chain's.
#[inline]
fn step_name<'a>(
    qname: NameRef<'a>,
    chain: &'a Option<[NameBuf; MAX_CHAIN]>,
    step: usize,
) -> NameRef<'a> {
    match chain {
        Some(names) if step > 0 => names[step].as_ref(),
        _ => qname,
    }
}

/// What the last step of an answer leaves to prove in a DNSSEC answer (RFC 4035 §3.1.3,
/// RFC 5155 §7.2), written after the authority section's SOA or NS.
#[derive(Clone, Copy)]
enum Proof<'z> {
    None,
    /// The name does not exist; the node is its closest encloser.
    NxDomain(NodeRef<'z>),
    /// The name exists (this node) without an RRset of the type.
    NoData(NodeRef<'z>),
    /// The name does not exist and this wildcard, which matches it, has no RRset of the type.
    WildcardNoData(NodeRef<'z>),
    /// A referral to this zone cut: its DS, or proof that it has none.
    Referral(NodeRef<'z>),
}

/// What goes in the authority section once the answer section is done.
enum Authority<'z> {
    None,
    /// The apex SOA, for NXDOMAIN and NODATA (RFC 2308 §2).
    Soa,
    /// The NS RRset of a zone cut, for a referral.
    Referral(NodeRef<'z>),
}

struct Answerer<'z, 'w, 'b> {
    zone: &'z Zone,
    w: &'w mut MessageWriter<'b>,
    qtype: RType,
    transport: Transport,
    /// DNSSEC records go in (RFC 4035 §3.1): the query set DO and the zone is signed.
    dnssec: bool,
    /// Nodes whose NSEC or NSEC3 is already in the authority section.
    proved: [u32; MAX_PROOFS],
    nproved: usize,
    aa: bool,
    rcode: Rcode,
    /// Nodes whose A/AAAA go in the additional section.
    additional: [u32; MAX_ADDITIONAL],
    nadditional: usize,
    /// See [`Outcome::wildcard`].
    wildcard: Option<u8>,
}

impl<'z> Answerer<'z, '_, '_> {
    /// Writes the answer and authority sections; `Err(Full)` means truncate.
    fn run(&mut self, qname: NameRef<'_>) -> Result<(), Full> {
        // The names of the steps after the first (a CNAME or DNAME chain), made only when a
        // chain is followed: built on every answer, these 3 KiB of name buffers were twelve
        // 256-octet copies per answer (most of the answer code's time outside the writer
        // and the lookups on NSEC3 name errors, by the profile).
        let mut chain: Option<[NameBuf; MAX_CHAIN]> = None;
        let mut authority = Authority::None;
        let mut proof = Proof::None;
        // Steps answered from a wildcard (RFC 4035 §3.1.3.3), and their wildcards.
        let mut hits = [(0u8, 0u32); MAX_CHAIN];
        let mut nhits = 0;
        let mut last = 0;
        for step in 0..MAX_CHAIN {
            let cur = step_name(qname, &chain, step);
            if step > 0 && !cur.ends_with(&self.zone.apex()) {
                // The chain leaves the zone: the client follows it from here.
                break;
            }
            last = step;
            let mut next = None::<NameBuf>;
            match lookup(self.zone, cur, self.qtype) {
                Found::Referral(cut) => {
                    if step == 0 {
                        self.aa = false;
                    }
                    authority = Authority::Referral(cut);
                    proof = Proof::Referral(cut);
                    break;
                }
                Found::NxDomain(encloser) => {
                    self.rcode = Rcode::NXDOMAIN;
                    authority = Authority::Soa;
                    proof = Proof::NxDomain(encloser);
                    break;
                }
                Found::Dname(node) => {
                    // `next` stays empty where the chain stops.
                    self.follow_dname(cur, node, &mut next)?;
                }
                found @ (Found::Exact(node) | Found::Wildcard(node)) => {
                    let from_wildcard = matches!(found, Found::Wildcard(_));
                    if step == 0 && from_wildcard {
                        // A name has at most 127 labels: the encloser's count fits.
                        self.wildcard = Some(node.name().label_count().saturating_sub(1) as u8);
                    }
                    let nodata = if from_wildcard {
                        Proof::WildcardNoData(node)
                    } else {
                        Proof::NoData(node)
                    };
                    // An expansion is proven, unless this turns out to be no data.
                    let hit = from_wildcard;
                    if hit {
                        hits[nhits] = (step as u8, node.id());
                        nhits += 1;
                    }
                    if self.qtype == RType::ANY {
                        if self.put_any(cur, node)? == 0 {
                            authority = Authority::Soa;
                            proof = nodata;
                            nhits -= usize::from(hit);
                        }
                        break;
                    }
                    if let Some(set) = node.rrset(self.qtype) {
                        self.put_signed(Section::Answer, cur, node, set)?;
                        self.queue_additional(set, false);
                        break;
                    }
                    // RRSIG and NSEC sit beside a CNAME (RFC 4035 §2.5, RFC 2181 §10.1): a
                    // query for them is about the alias itself, like a query for the CNAME.
                    let cname = match node.rrset(RType::CNAME) {
                        Some(c) if !matches!(self.qtype, RType::RRSIG | RType::NSEC) => c,
                        _ => {
                            authority = Authority::Soa;
                            proof = nodata;
                            nhits -= usize::from(hit);
                            break;
                        }
                    };
                    self.put_signed(Section::Answer, cur, node, cname)?;
                    let Some(target) = cname
                        .rdatas()
                        .next()
                        .and_then(|d| rdata::target_name(RType::CNAME, d))
                    else {
                        break;
                    };
                    next.insert(NameBuf::new()).set(target);
                }
            }
            // Every arm that does not stop the chain gave the next name.
            let Some(next) = next else { break };
            // Follow the chain unless it loops.
            if (0..=step).any(|s| step_name(qname, &chain, s).eq_ci(&next.as_ref())) {
                break;
            }
            if step + 1 == MAX_CHAIN {
                break;
            }
            chain.get_or_insert([const { NameBuf::new() }; MAX_CHAIN])[step + 1] = next;
        }
        self.put_authority(authority)?;
        if self.dnssec {
            self.put_proof(step_name(qname, &chain, last), proof)?;
            for &(step, star) in &hits[..nhits] {
                let name = step_name(qname, &chain, step as usize);
                self.put_wildcard_proof(name, self.zone.node(star))?;
            }
        }
        self.put_additional();
        Ok(())
    }

    /// A DNAME at `node` above `cur` (RFC 6672 §2.2): its RRset and the CNAME synthesized
    /// for `cur`, whose target goes into `next` unless the chain stops here (`next` left
    /// empty: no DNAME data, a substituted name too long (YXDOMAIN), or a CNAME query).
    #[inline(always)]
    fn follow_dname(
        &mut self,
        cur: NameRef<'_>,
        node: NodeRef<'z>,
        next: &mut Option<NameBuf>,
    ) -> Result<(), Full> {
        let Some(dname) = node.rrset(RType::DNAME) else {
            return Ok(());
        };
        self.put_signed(Section::Answer, node.name(), node, dname)?;
        let Some(target) = dname
            .rdatas()
            .next()
            .and_then(|d| rdata::target_name(RType::DNAME, d))
        else {
            return Ok(());
        };
        let prefix = &cur.as_wire()[..cur.len() - node.name().len()];
        let buf = next.insert(NameBuf::new());
        if buf.set_concat(prefix, target).is_err() {
            // RFC 6672 §2.2: the substituted name is too long.
            self.rcode = Rcode::YXDOMAIN;
            *next = None;
            return Ok(());
        }
        self.w.put_record(
            Section::Answer,
            cur,
            RType::CNAME,
            Class::IN,
            dname.ttl,
            buf.as_ref().as_wire(),
        )?;
        if self.qtype == RType::CNAME {
            *next = None;
        }
        Ok(())
    }

    /// The authority section `run` decided on: the SOA with the negative TTL (RFC 2308
    /// §3) and its signatures, or a referral's NS RRset (its addresses queued as additional
    /// data).
    #[inline(always)]
    fn put_authority(&mut self, authority: Authority<'z>) -> Result<(), Full> {
        match authority {
            Authority::None => {}
            Authority::Soa => {
                let apex = self.zone.apex_node();
                if let Some(soa) = apex.rrset(RType::SOA) {
                    // The SOA and its signatures with the negative TTL (RFC 2308 §3).
                    let ttl = self.zone.negative_ttl();
                    self.put_rrset(Section::Authority, apex.name(), soa.with_ttl(ttl))?;
                    if let Some(sigs) = apex.signatures(&soa).filter(|_| self.dnssec) {
                        let after = !soa.is_empty();
                        self.put_rrset_after(
                            Section::Authority,
                            apex.name(),
                            sigs.with_ttl(ttl),
                            after,
                        )?;
                    }
                }
            }
            Authority::Referral(cut) => {
                if let Some(ns) = cut.rrset(RType::NS) {
                    self.put_rrset(Section::Authority, cut.name(), ns)?;
                    self.queue_additional(ns, true);
                }
            }
        }
        Ok(())
    }

    /// ANY (RFC 8482 §4.1): one RRset over UDP, all over TCP. Returns how many were written.
    fn put_any(&mut self, owner: NameRef<'_>, node: NodeRef<'z>) -> Result<usize, Full> {
        let mut n = 0;
        for set in node.rrsets() {
            if self.transport == Transport::Tcp {
                // Every RRset of the name, signatures included (they are RRsets there).
                self.put_rrset(Section::Answer, owner, set)?;
                n += 1;
            } else if set.rtype != RType::RRSIG {
                self.put_signed(Section::Answer, owner, node, set)?;
                return Ok(1);
            }
        }
        Ok(n)
    }

    /// Writes `set` (an RRset of `node`, written under `owner`: the query name for a
    /// wildcard) and, in a DNSSEC answer, its signatures (RFC 4035 §3.1.1).
    fn put_signed(
        &mut self,
        section: Section,
        owner: NameRef<'_>,
        node: NodeRef<'z>,
        set: RRset<'_>,
    ) -> Result<(), Full> {
        self.put_rrset(section, owner, set)?;
        if self.dnssec {
            if let Some(sigs) = node.signatures(&set) {
                self.put_rrset_after(section, owner, sigs, !set.is_empty())?;
            }
        }
        Ok(())
    }

    fn put_rrset(
        &mut self,
        section: Section,
        owner: NameRef<'_>,
        set: RRset<'_>,
    ) -> Result<(), Full> {
        self.put_rrset_after(section, owner, set, false)
    }

    /// [`Answerer::put_rrset`]; `same_owner`: the previous record written has this owner
    /// (an RRset's signatures after it), so no record's owner is compared with it.
    fn put_rrset_after(
        &mut self,
        section: Section,
        owner: NameRef<'_>,
        set: RRset<'_>,
        same_owner: bool,
    ) -> Result<(), Full> {
        let mut again = same_owner;
        for d in set.rdatas() {
            if again {
                self.w
                    .put_record_same_owner(section, owner, set.rtype, Class::IN, set.ttl, d)?;
            } else {
                self.w
                    .put_record(section, owner, set.rtype, Class::IN, set.ttl, d)?;
            }
            again = true;
        }
        Ok(())
    }
}

mod additional;
mod dnssec;
mod find;
mod short;
mod written;
pub use find::{lookup, Found};
use short::bare;
pub use short::{not_implemented, notify_answer, refuse, reject, respond_to_message};
pub use written::{OptAt, Written};
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_dnssec;
