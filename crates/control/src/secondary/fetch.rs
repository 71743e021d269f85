//! secondary::fetch -- one refresh of a zone kept outside the zone set (a resolver's
//! response policy zone), on the caller's thread: the primary's SOA serial, then, when it
//! is newer than the caller's, the changes since the caller's version by IXFR (RFC 1995),
//! or the zone by AXFR when the caller has no version, the primary answers the IXFR with
//! the whole zone or its SOA alone, or the changes cannot be read. The same client code
//! as the secondary zones' refreshes (`client`), without their timers, journal or copy on
//! disk. The changes are handed over as records, not applied: the caller keeps the zone
//! in its own form (a policy table) and has no `Zone` to patch.

use super::client::{self, Bounds, Failure, Feed};
use shardns_config::PrimaryTls;
use shardns_wire::message::{read_record, Reader, HEADER_LEN};
use shardns_wire::tsig::{self, Key, ResponseVerifier};
use shardns_wire::{
    Class, Header, MessageWriter, Name, NameBuf, Opcode, RType, Rcode, Record, Section,
};
use shardns_zone::xfr::incoming::{Limits, Outcome, Progress};
use shardns_zone::xfr::is_newer;
use shardns_zone::Zone;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// What a refresh brought.
#[derive(Debug)]
pub enum Fetched {
    /// The whole zone (AXFR).
    Whole(Zone),
    /// The changes from the caller's version to `serial` (IXFR, incremental form), in
    /// order: each record deleted (`false`) or added (`true`), apex SOAs left out.
    Changes {
        /// The new version's serial.
        serial: u32,
        /// The records deleted and added.
        changes: Vec<(bool, Record)>,
    },
}

/// Most records an IXFR answer may hold before the caller is better off with AXFR.
const MAX_CHANGES: usize = 5_000_000;

/// Asks `primary` for `apex`'s serial and, if it is newer than `have` (RFC 1982) or there
/// is no `have`, transfers the changes since `have` (IXFR) or the whole zone (AXFR).
/// `primary`: its address, and over TLS (XoT, RFC 9103) how its certificate is checked;
/// `ids`: random message IDs for the SOA query and the transfers; `key`: the TSIG key that
/// signs every query, whose answers must be signed with it. Every wait is bounded: each
/// message by `idle`, each transfer by `timeout`. `Ok(None)`: nothing newer.
pub fn fetch(
    (primary, tls): (SocketAddr, Option<&PrimaryTls>),
    apex: &Name,
    have: Option<u32>,
    key: Option<&Key>,
    ids: [u16; 3],
    idle: Duration,
    timeout: Duration,
) -> Result<Option<Fetched>, String> {
    let serial = client::soa_serial(primary, tls, apex, key, ids[0], idle)
        .map_err(|e| format!("SOA query to {primary}: {e}"))?;
    if have.is_some_and(|h| !is_newer(serial, h)) {
        return Ok(None);
    }
    let bounds = || Bounds {
        deadline: Instant::now() + timeout,
        idle,
    };
    if let Some(have) = have {
        let mut ixfr = Changes::new(apex, have, key, ids[2]);
        match client::run(primary, tls, &mut ixfr, bounds()) {
            Ok(()) if ixfr.state == State::Done && ixfr.signed() => {
                return Ok(Some(Fetched::Changes {
                    serial: ixfr.last,
                    changes: ixfr.changes,
                }));
            }
            // The whole zone, the SOA alone, or a stream cut short: AXFR.
            Ok(()) => tracing::info!(
                "IXFR of {apex} from {primary}: {}; asking AXFR",
                ixfr.state.why()
            ),
            Err(e) => tracing::info!("IXFR of {apex} from {primary}: {e}; asking AXFR"),
        }
    }
    let mut bytes = 0;
    let done = client::transfer(
        primary,
        tls,
        apex,
        RType::AXFR,
        None,
        key,
        ids[1],
        Limits::default(),
        bounds(),
        &mut bytes,
    )
    .map_err(|e| format!("AXFR from {primary}: {e}"))?;
    match done.outcome {
        Outcome::Zone { zone, .. } => Ok(Some(Fetched::Whole(zone))),
        Outcome::SoaOnly(s) => Err(format!("AXFR from {primary}: only the SOA ({s})")),
    }
}

/// Where the reading of an IXFR answer stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// No record yet.
    Start,
    /// The opening SOA (the new serial) only.
    Opened,
    /// The deletions of a step.
    Deleting,
    /// The additions of the step to this serial.
    Adding(u32),
    /// The closing SOA has come.
    Done,
    /// Not the incremental form (the whole zone, or an SOA alone): AXFR instead.
    NotIncremental,
}

impl State {
    fn why(self) -> &'static str {
        match self {
            Self::NotIncremental => "answered with the whole zone",
            Self::Opened => "answered with the SOA alone",
            Self::Done => "its last message was not signed",
            _ => "the answer ended before its closing SOA",
        }
    }
}

/// The reader of an IXFR answer into the changes it lists.
struct Changes {
    apex: Name,
    id: u16,
    query: Vec<u8>,
    have: u32,
    /// The opening SOA's serial: the version the changes lead to.
    last: u32,
    state: State,
    changes: Vec<(bool, Record)>,
    /// With a TSIG key: what checks the answer's signatures.
    verifier: Option<ResponseVerifier>,
}

impl Changes {
    /// The IXFR query from `have` (RFC 1995 §3: our SOA in the authority section; only its
    /// serial matters to the primary).
    fn new(apex: &Name, have: u32, key: Option<&Key>, id: u16) -> Self {
        let mut bytes = vec![0u8; 1024];
        let mut w = MessageWriter::new(&mut bytes, 1024);
        let _ = w.put_question(apex.as_ref(), RType::IXFR, Class::IN);
        let mut soa = vec![0, 0];
        soa.extend_from_slice(&have.to_be_bytes());
        soa.extend_from_slice(&[0; 16]);
        let _ = w.put_record(
            Section::Authority,
            apex.as_ref(),
            RType::SOA,
            Class::IN,
            0,
            &soa,
        );
        let h = Header {
            id,
            ..Header::default()
        };
        let mut len = w.finish(&h).len();
        let mut verifier = None;
        if let Some(key) = key {
            len = tsig::sign_request(&mut bytes, len, key, shardns_sys::unix_now());
            if let Ok(Some(sig)) = tsig::read(&bytes[..len]) {
                verifier = Some(ResponseVerifier::new(key, &sig.mac));
            }
        }
        bytes.truncate(len);
        Self {
            apex: apex.clone(),
            id,
            query: bytes,
            have,
            last: 0,
            state: State::Start,
            changes: Vec::new(),
            verifier,
        }
    }

    /// Without a key, true; with one, whether the last message was signed (RFC 8945
    /// §5.3.1: a transfer must end with a signed message).
    fn signed(&self) -> bool {
        self.verifier.as_ref().is_none_or(|v| v.last_was_signed())
    }

    /// One record of the answer.
    fn record(&mut self, rec: Record) -> Result<(), String> {
        let soa = (rec.rtype == RType::SOA && rec.owner.as_ref().eq_ci(&self.apex.as_ref()))
            .then(|| soa_serial(&rec.rdata))
            .flatten();
        match (self.state, soa) {
            (State::Start, Some(s)) => {
                self.last = s;
                self.state = State::Opened;
            }
            (State::Start, None) => return Err(format!("the first record is {}", rec.owner)),
            (State::Opened, Some(s)) if s == self.have => self.state = State::Deleting,
            (State::Opened, Some(s)) => {
                return Err(format!(
                    "the changes start at serial {s}, ours is {}",
                    self.have
                ))
            }
            (State::Opened, None) => self.state = State::NotIncremental,
            (State::Deleting, Some(to)) => self.state = State::Adding(to),
            (State::Adding(to), Some(s)) if s == to && to == self.last => self.state = State::Done,
            (State::Adding(to), Some(s)) if s == to => self.state = State::Deleting,
            (State::Adding(to), Some(s)) => {
                return Err(format!(
                    "a step starts at serial {s}, the one before ended at {to}"
                ))
            }
            (State::Deleting | State::Adding(_), None) => {
                if self.changes.len() >= MAX_CHANGES {
                    return Err(format!("more than {MAX_CHANGES} changes"));
                }
                if rec.class == Class::IN && rec.owner.as_ref().ends_with(&self.apex.as_ref()) {
                    let add = matches!(self.state, State::Adding(_));
                    self.changes.push((add, rec));
                }
            }
            (State::Done, _) => return Err("records after the closing SOA".into()),
            (State::NotIncremental, _) => {}
        }
        Ok(())
    }
}

impl Feed for Changes {
    fn query(&self) -> &[u8] {
        &self.query
    }

    fn feed(&mut self, msg: &[u8], now: u64) -> Result<Progress, Failure> {
        let bad = |e: String| Failure::Xfr(shardns_zone::Error::Malformed(e));
        let h = Header::parse(msg).map_err(|e| bad(e.to_string()))?;
        if h.id != self.id || !h.qr() || h.opcode() != Opcode::QUERY || h.tc() {
            return Err(bad("not an answer to our IXFR".into()));
        }
        if let Some(v) = self.verifier.as_mut() {
            v.verify(msg, now)
                .map_err(|e| Failure::Xfr(shardns_zone::Error::Wire(e)))?;
        }
        let rcode = Rcode(h.rcode_bits().into());
        if rcode != Rcode::NOERROR {
            return Err(Failure::Xfr(shardns_zone::Error::Rcode(rcode)));
        }
        let mut r = Reader::new(msg, HEADER_LEN);
        let mut name = NameBuf::new();
        for _ in 0..h.qdcount {
            r.name(&mut name).map_err(|e| bad(e.to_string()))?;
            r.bytes(4).map_err(|e| bad(e.to_string()))?;
        }
        for _ in 0..h.ancount {
            let rec = read_record(&mut r, &mut name).map_err(|e| bad(e.to_string()))?;
            self.record(rec).map_err(bad)?;
            if self.state == State::NotIncremental {
                // Not read further: the caller asks AXFR, whose reader keeps the zone.
                return Ok(Progress::Done);
            }
        }
        // An SOA alone in the first message is the whole answer ("up to date", or no
        // changes kept).
        Ok(match self.state {
            State::Done => Progress::Done,
            State::Opened if h.ancount == 1 => Progress::Done,
            _ => Progress::More,
        })
    }
}

/// The serial of an uncompressed SOA rdata.
fn soa_serial(rdata: &[u8]) -> Option<u32> {
    let mut at = 0;
    for _ in 0..2 {
        let (_, len) = shardns_wire::NameRef::from_wire_prefix(rdata.get(at..)?).ok()?;
        at += len;
    }
    Some(u32::from_be_bytes(rdata.get(at..at + 4)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer to `c`'s query holding these records (owner, type, rdata).
    fn answer(c: &Changes, records: &[(&str, RType, Vec<u8>)]) -> Vec<u8> {
        let mut buf = vec![0u8; 4096];
        let mut w = MessageWriter::new(&mut buf, 4096);
        let _ = w.put_question(c.apex.as_ref(), RType::IXFR, Class::IN);
        for (owner, rtype, rdata) in records {
            let owner: Name = owner.parse().unwrap();
            w.put_record(
                Section::Answer,
                owner.as_ref(),
                *rtype,
                Class::IN,
                60,
                rdata,
            )
            .unwrap();
        }
        let mut h = Header {
            id: c.id,
            ..Header::default()
        };
        h.set_qr(true);
        w.finish(&h).to_vec()
    }

    fn soa(serial: u32) -> (&'static str, RType, Vec<u8>) {
        let mut rdata = vec![0, 0];
        rdata.extend_from_slice(&serial.to_be_bytes());
        rdata.extend_from_slice(&[0; 16]);
        ("rpz.", RType::SOA, rdata)
    }

    fn cname(owner: &'static str) -> (&'static str, RType, Vec<u8>) {
        (owner, RType::CNAME, vec![0])
    }

    #[test]
    fn an_ixfr_of_two_steps_over_two_messages_is_read_as_changes_in_order() {
        let mut c = Changes::new(&"rpz.".parse().unwrap(), 1, None, 7);
        let first = answer(&c, &[soa(3), soa(1), cname("a.rpz."), soa(2)]);
        assert_eq!(c.feed(&first, 0).unwrap(), Progress::More);
        let rest = [
            cname("b.rpz."),
            soa(2),
            cname("b.rpz."),
            soa(3),
            cname("c.rpz."),
        ];
        let second = answer(&c, &[rest[0].clone(), rest[1].clone(), rest[2].clone()]);
        assert_eq!(c.feed(&second, 0).unwrap(), Progress::More);
        let last = answer(&c, &[rest[3].clone(), rest[4].clone(), soa(3)]);
        assert_eq!(c.feed(&last, 0).unwrap(), Progress::Done);
        assert_eq!((c.state, c.last), (State::Done, 3));
        let got: Vec<(bool, String)> = c
            .changes
            .iter()
            .map(|(add, r)| (*add, r.owner.to_string()))
            .collect();
        let want = [
            (false, "a.rpz."),
            (true, "b.rpz."),
            (false, "b.rpz."),
            (true, "c.rpz."),
        ];
        assert_eq!(got, want.map(|(a, n)| (a, n.to_string())));
    }

    #[test]
    fn a_whole_zone_an_soa_alone_or_a_wrong_start_is_not_a_change_list() {
        let apex: Name = "rpz.".parse().unwrap();
        let mut c = Changes::new(&apex, 1, None, 7);
        let whole = answer(&c, &[soa(3), cname("a.rpz."), soa(3)]);
        assert_eq!(c.feed(&whole, 0).unwrap(), Progress::Done);
        assert_eq!(c.state, State::NotIncremental);
        let mut c = Changes::new(&apex, 1, None, 7);
        assert_eq!(c.feed(&answer(&c, &[soa(3)]), 0).unwrap(), Progress::Done);
        assert_eq!(c.state, State::Opened);
        let mut c = Changes::new(&apex, 1, None, 7);
        let wrong = answer(&c, &[soa(3), soa(2), soa(3), soa(3)]);
        assert!(c.feed(&wrong, 0).is_err());
    }
}
