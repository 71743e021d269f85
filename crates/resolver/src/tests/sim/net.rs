//! The fake network: authoritative servers as in-memory zones keyed by address, each with a
//! latency and a [`Behaviour`] (silent, lame, truncating, forging, ...), and the small
//! answering routine they share.

use std::collections::HashMap;
use std::net::SocketAddr;

use shardns_wire::text::Token;
use shardns_wire::{
    rdata, Class, Header, Message, MessageWriter, Name, NameRef, RType, Rcode, Record, Section,
};

use super::{addr, n};

/// Records from lines of `owner ttl TYPE rdata...` (absolute names).
pub(crate) fn records(text: &str) -> Vec<Record> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|line| {
            let mut f: Vec<&str> = line.split_whitespace().collect();
            if f.get(2) == Some(&"IN") {
                f.remove(2);
            }
            let rtype = RType::from_text(f[2]).unwrap();
            let tokens: Vec<Token<'_>> =
                f[3..].iter().map(|t| Token::plain(t.as_bytes())).collect();
            let mut rd = Vec::new();
            rdata::from_text(rtype, &tokens, NameRef::ROOT, &mut rd)
                .unwrap_or_else(|e| panic!("{line}: {e}"));
            Record {
                owner: n(f[0]),
                rtype,
                class: Class::IN,
                ttl: f[1].parse().unwrap(),
                rdata: rd,
            }
        })
        .collect()
}

pub(crate) fn soa_line(zone: &str) -> String {
    let sep = if zone == "." { "" } else { zone };
    format!("{zone} 3600 SOA ns.{sep} host.{sep} 1 7200 900 86400 300")
}

pub(crate) struct Zone {
    pub(crate) apex: Name,
    pub(crate) records: Vec<Record>,
}

pub(crate) fn zone(apex: &str, text: &str) -> Zone {
    Zone {
        apex: n(apex),
        records: records(&format!("{}\n{text}", soa_line(apex))),
    }
}

#[derive(Default, Clone)]
pub(crate) struct Behaviour {
    /// Never answers.
    pub(crate) silent: bool,
    /// UDP answers come back empty with TC set.
    pub(crate) truncate_udp: bool,
    /// Answers with the wrong message ID.
    pub(crate) wrong_id: bool,
    /// Answers a different question.
    pub(crate) wrong_question: bool,
    /// FORMERR (without OPT) to any query with EDNS.
    pub(crate) no_edns: bool,
    /// REFUSED to everything.
    pub(crate) refused: bool,
    /// NXDOMAIN for empty non-terminals (a server broken for QNAME minimisation).
    pub(crate) nxdomain_for_ent: bool,
    /// Behaves as a recursive server: answers without AA, RD required.
    pub(crate) recursive: bool,
    /// Answers everything with this referral (to a zone above its own, or beside it).
    pub(crate) refer_up: Option<Record>,
    /// Sets AA on the `refer_up` answers.
    pub(crate) refer_aa: bool,
    /// Answers a name with no data of its own (a zone cut or an empty non-terminal: what a
    /// minimised query asks) with this rcode instead; NOERROR comes without AA and with
    /// the zone's SOA, as from a parent answering from its own data.
    pub(crate) qmin_broken: Option<Rcode>,
    /// Records added to every answer (out-of-bailiwick poisoning attempts).
    pub(crate) inject: Vec<(Section, Record)>,
}

#[derive(Default)]
pub(crate) struct Server {
    pub(crate) zones: Vec<Zone>,
    /// Zones answered by shardns's own authoritative code (signed zones: RRSIGs, NSEC and
    /// NSEC3 proofs as shardns serves them); `zones` is not used then.
    pub(crate) auth: Option<shardns_zone::ZoneSet>,
    pub(crate) behaviour: Behaviour,
    pub(crate) latency: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Sent {
    pub(crate) at: u64,
    pub(crate) server: SocketAddr,
    pub(crate) qname: Name,
    pub(crate) qtype: RType,
    pub(crate) tcp: bool,
    pub(crate) edns: bool,
    pub(crate) rd: bool,
}

#[derive(Default)]
pub(crate) struct Net {
    pub(crate) servers: HashMap<SocketAddr, Server>,
}

impl Net {
    pub(crate) fn add(&mut self, ip: &str, zones: Vec<Zone>) -> &mut Server {
        let s = self.servers.entry(addr(ip)).or_default();
        s.zones.extend(zones);
        if s.latency == 0 {
            s.latency = 10;
        }
        s
    }

    /// The server's response to `query`, if it gives one.
    pub(crate) fn respond(
        &self,
        to: SocketAddr,
        query: &[u8],
        tcp: bool,
    ) -> Option<(u64, Vec<u8>)> {
        let server = self.servers.get(&to)?;
        let b = &server.behaviour;
        if b.silent {
            return None;
        }
        if let Some(zones) = &server.auth {
            let q = shardns_wire::Query::parse(query).ok()?;
            let transport = if tcp {
                shardns_wire::Transport::Tcp
            } else {
                shardns_wire::Transport::Udp
            };
            let mut out = vec![0u8; 65535];
            let len = match shardns_zone::respond(zones, &q, transport, &mut out) {
                shardns_zone::Reply::Answer(w) | shardns_zone::Reply::Error(w) => w.len,
                shardns_zone::Reply::NotOurs | shardns_zone::Reply::Transfer => {
                    shardns_zone::refuse(&q, transport, &mut out).len
                }
                // The simulated servers have no secondary zones: NOTIMP, as shardns says.
                shardns_zone::Reply::Notify | shardns_zone::Reply::Update => {
                    shardns_zone::not_implemented(&q, &mut out).len
                }
            };
            out.truncate(len);
            if !b.inject.is_empty() {
                out = with_records(&out, &b.inject)?;
            }
            return Some((server.latency, out));
        }
        let q = Message::parse(query).ok()?;
        let question = q.questions.first()?.clone();
        let edns = q.opt().is_some();
        let mut h = Header {
            id: if b.wrong_id {
                q.header.id ^ 0x5555
            } else {
                q.header.id
            },
            ..Header::default()
        };
        h.set_qr(true);
        h.set_rd(q.header.rd());
        let mut out = Out::default();
        let rcode = if b.no_edns && edns {
            Rcode::FORMERR
        } else if b.refused {
            Rcode::REFUSED
        } else if let Some(ns) = &b.refer_up {
            out.push(Section::Authority, ns.clone());
            h.set_aa(b.refer_aa);
            Rcode::NOERROR
        } else if let Some(rcode) = b.qmin_broken.filter(|_| no_own_data(server, &question)) {
            if rcode == Rcode::NOERROR {
                let apex = closest_zone(server, question.qname.as_ref()).map(|z| &z.apex);
                let soa = server
                    .zones
                    .iter()
                    .flat_map(|z| &z.records)
                    .find(|r| r.rtype == RType::SOA && apex.is_some_and(|a| r.owner == *a));
                out.records
                    .extend(soa.map(|r| (Section::Authority, r.clone())));
            }
            rcode
        } else {
            answer(
                server,
                question.qname.as_ref(),
                question.qtype,
                &mut out,
                &mut h,
            )
        };
        h.set_rcode(rcode);
        for (section, r) in &b.inject {
            out.push(*section, r.clone());
        }
        let mut buf = vec![0u8; 65535];
        let mut w = MessageWriter::new(&mut buf, 65535);
        let qname = if b.wrong_question {
            n("wrong.question.")
        } else {
            question.qname.clone()
        };
        w.put_question(qname.as_ref(), question.qtype, Class::IN)
            .unwrap();
        if b.truncate_udp && !tcp {
            h.set_tc(true);
        } else {
            // The writer counts per section but writes in order: sort by section.
            out.records.sort_by_key(|(s, _)| *s as u8);
            for (section, r) in out.records {
                w.put_record(
                    section,
                    r.owner.as_ref(),
                    r.rtype,
                    Class::IN,
                    r.ttl,
                    &r.rdata,
                )
                .unwrap();
            }
        }
        if edns && !(b.no_edns) {
            w.put_opt(1232, 0, 0, false, &[]).unwrap();
        }
        let bytes = w.finish(&h).to_vec();
        Some((server.latency, bytes))
    }
}

/// `msg` with `extra` records added to their sections.
fn with_records(msg: &[u8], extra: &[(Section, Record)]) -> Option<Vec<u8>> {
    let m = Message::parse(msg).ok()?;
    let mut buf = vec![0u8; 65535];
    let mut w = MessageWriter::new(&mut buf, 65535);
    for q in &m.questions {
        w.put_question(q.qname.as_ref(), q.qtype, q.qclass).ok()?;
    }
    let sections = [
        (Section::Answer, &m.answers),
        (Section::Authority, &m.authority),
        (Section::Additional, &m.additional),
    ];
    for (section, records) in sections {
        let added = extra.iter().filter(|(s, _)| *s == section).map(|(_, r)| r);
        for r in records.iter().chain(added) {
            w.put_record(section, r.owner.as_ref(), r.rtype, r.class, r.ttl, &r.rdata)
                .ok()?;
        }
    }
    Some(w.finish(&m.header).to_vec())
}

#[derive(Default)]
pub(crate) struct Out {
    pub(crate) records: Vec<(Section, Record)>,
}

impl Out {
    pub(crate) fn push(&mut self, s: Section, r: Record) {
        self.records.push((s, r));
    }
}

/// The zone of `server` closest to `qname`.
fn closest_zone<'s>(server: &'s Server, qname: NameRef<'_>) -> Option<&'s Zone> {
    server
        .zones
        .iter()
        .filter(|z| qname.ends_with(&z.apex.as_ref()))
        .max_by_key(|z| z.apex.as_ref().len())
}

/// True if the question's name is below its zone's apex and has no records of its own but
/// NS (a cut) while names exist at or below it: what a minimised question asks.
fn no_own_data(server: &Server, q: &shardns_wire::Question) -> bool {
    let name = q.qname.as_ref();
    let Some(zone) = closest_zone(server, name) else {
        return false;
    };
    let recs = &zone.records;
    name != zone.apex.as_ref()
        && q.qtype == RType::A
        && !recs
            .iter()
            .any(|r| r.owner.as_ref() == name && r.rtype != RType::NS)
        && recs.iter().any(|r| r.owner.as_ref().ends_with(&name))
}

/// A small authoritative answering routine (RFC 1034 §4.3.2, no wildcards).
pub(crate) fn answer(
    server: &Server,
    qname: NameRef<'_>,
    qtype: RType,
    out: &mut Out,
    h: &mut Header,
) -> Rcode {
    if server.behaviour.recursive {
        return recursive_answer(server, qname, qtype, out);
    }
    let Some(zone) = closest_zone(server, qname) else {
        return Rcode::REFUSED;
    };
    let at = |name: NameRef<'_>, t: RType| -> Vec<Record> {
        zone.records
            .iter()
            .filter(|r| r.owner.as_ref() == name && r.rtype == t)
            .cloned()
            .collect()
    };
    let soa = at(zone.apex.as_ref(), RType::SOA);
    // Delegations: the highest cut below the apex on the way to qname.
    let depth = qname.label_count() - zone.apex.as_ref().label_count();
    for keep in (zone.apex.as_ref().label_count() + 1)..=(zone.apex.as_ref().label_count() + depth)
    {
        let cut = qname.suffix(keep);
        let ns = at(cut, RType::NS);
        if !ns.is_empty() {
            for r in &ns {
                let target = NameRef::from_wire(&r.rdata).unwrap();
                for t in [RType::A, RType::AAAA] {
                    for g in at(target, t) {
                        out.push(Section::Additional, g);
                    }
                }
            }
            for r in ns {
                out.push(Section::Authority, r);
            }
            return Rcode::NOERROR;
        }
        // DNAME strictly above qname.
        if cut != qname {
            if let Some(d) = at(cut, RType::DNAME).into_iter().next() {
                h.set_aa(true);
                let target = rdata::target_name(RType::DNAME, &d.rdata).unwrap();
                let prefix = &qname.as_wire()[..qname.len() - cut.len()];
                let mut buf = shardns_wire::NameBuf::new();
                buf.set_concat(prefix, target).unwrap();
                out.push(
                    Section::Answer,
                    Record {
                        owner: qname.to_name(),
                        rtype: RType::CNAME,
                        class: Class::IN,
                        ttl: d.ttl,
                        rdata: buf.as_ref().as_wire().to_vec(),
                    },
                );
                out.push(Section::Answer, d);
                return Rcode::NOERROR;
            }
        }
    }
    h.set_aa(true);
    let mut name = qname.to_name();
    for _ in 0..32 {
        let rrs = at(name.as_ref(), qtype);
        if !rrs.is_empty() {
            for r in rrs {
                out.push(Section::Answer, r);
            }
            return Rcode::NOERROR;
        }
        let cname = at(name.as_ref(), RType::CNAME);
        if let Some(c) = cname.into_iter().next() {
            let target = NameRef::from_wire(&c.rdata).unwrap().to_name();
            out.push(Section::Answer, c);
            if !target.as_ref().ends_with(&zone.apex.as_ref()) {
                return Rcode::NOERROR;
            }
            name = target;
            continue;
        }
        break;
    }
    let exists = zone
        .records
        .iter()
        .any(|r| r.owner.as_ref().ends_with(&name.as_ref()));
    let has_own = zone.records.iter().any(|r| r.owner == name);
    for s in soa {
        out.push(Section::Authority, s);
    }
    if exists && (has_own || !server.behaviour.nxdomain_for_ent) {
        Rcode::NOERROR
    } else {
        Rcode::NXDOMAIN
    }
}

/// A forwarder: answers from all its zones, without AA.
pub(crate) fn recursive_answer(
    server: &Server,
    qname: NameRef<'_>,
    qtype: RType,
    out: &mut Out,
) -> Rcode {
    let rrs: Vec<Record> = server
        .zones
        .iter()
        .flat_map(|z| z.records.iter())
        .filter(|r| r.owner.as_ref() == qname && r.rtype == qtype)
        .cloned()
        .collect();
    if rrs.is_empty() {
        return Rcode::NXDOMAIN;
    }
    for r in rrs {
        out.push(Section::Answer, r);
    }
    Rcode::NOERROR
}
