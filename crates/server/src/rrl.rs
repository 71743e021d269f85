//! rrl -- response rate limiting (RRL) for UDP answers, one table per worker.
//!
//! Owns: [`Rrl`], one worker's fixed-size table of token buckets, and the classification of
//! a response into the bucket it is charged to. As in BIND's and Knot DNS's RRL, a bucket
//! is keyed by the client's address prefix (IPv4 /24 and IPv6 /56 by default) and the kind
//! of response:
//!
//! | class | responses | the name in the key |
//! |---|---|---|
//! | answer | NOERROR with answers, and any truncated (TC) response | the qname, plus the qtype |
//! | NXDOMAIN | NXDOMAIN | the zone (owner of the SOA in the authority section) |
//! | NODATA/referral | NOERROR without answers | the zone for NODATA, the zone cut for a referral (owner of the first authority record) |
//! | error | every other RCODE (REFUSED, SERVFAIL, FORMERR...) | none: one bucket per prefix |
//!
//! Keying NXDOMAIN and NODATA by zone means random names (a reflection attack's favourite)
//! all land in one bucket. A bucket holds `rate × window` responses and refills at `rate`
//! per second (kept in thousandths of a response against a millisecond clock, so the
//! refill is smooth); a response that finds it empty is *limited*: dropped, except every
//! `slip`-th limited response of the bucket, which is sent truncated (TC=1, the question
//! only), so that a real client at an address a flood is spoofing retries over TCP,
//! where it is answered. TCP is never
//! limited (the caller only asks for UDP). Answers that a resolution delivers later (the
//! resolver role) are not limited either: only clients in `resolver.allow` get them and
//! `resolver.max_pending` bounds them.
//!
//! The table is set-associative: a key hashes (with a per-worker secret seed, so a client
//! cannot aim at one set) to a set of [`WAYS`] entries; a new key takes an empty entry or
//! the set's least recently used one. An evicted bucket that was still limiting starts
//! again full, so the table should hold every prefix/name pair active within a window.
//!
//! Share-nothing: every worker has its own table, with no lock and no allocation after
//! start. With SO_REUSEPORT the kernel picks a UDP socket (so a worker) by hashing the
//! client's address and port, so one client socket always reaches the same worker and is
//! limited exactly; a client that spreads its queries over many source ports can reach
//! every worker and get up to `rate` per worker.
//!
//! Never: locks, allocation after [`Rrl::new`], system calls, linear scans.

use crate::config::RrlConfig;
use crate::keyed_hash;
use shardns_wire::message::{read_question, Reader, HEADER_LEN};
use shardns_wire::{NameBuf, Rcode};
use std::net::IpAddr;
use std::time::Instant;

/// Entries per set: the candidates for a key, and for eviction.
const WAYS: usize = 4;
/// One response, in the bucket's unit (thousandths of a response).
const COST: u64 = 1000;

/// What to do with a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Send it as it is.
    Send,
    /// Limited: send nothing.
    Drop,
    /// Limited: the response was cut to this many octets (header and question, TC set).
    Slip(usize),
}

/// What the token-bucket core decided, before the response is rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Pass,
    Drop,
    Slip,
}

/// Response classes (part of the key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Class {
    Answer = 1,
    NxDomain = 2,
    NoData = 3,
    Error = 4,
}

/// One bucket.
#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    /// The key's hash; 0 marks an empty entry.
    key: u64,
    /// Tokens left, in thousandths of a response.
    tokens: u64,
    /// Milliseconds (on the table's clock) of the last response charged here.
    last: u64,
    /// Limited responses since the bucket was last full (the slip cadence).
    limited: u32,
}

/// One worker's response rate limiter.
pub(crate) struct Rrl {
    table: Box<[Entry]>,
    /// Sets in the table, minus one (a power of two minus one).
    set_mask: usize,
    seed: u64,
    /// Refill: tokens (thousandths) per millisecond = responses per second.
    rate: u64,
    /// A full bucket, in thousandths.
    capacity: u64,
    slip: u32,
    ipv4_prefix: u8,
    ipv6_prefix: u8,
    base: Instant,
}

impl Rrl {
    /// A table for `config` (its size rounded up to a power of two, at least one set);
    /// `seed` is secret, `base` starts the clock.
    pub(crate) fn new(config: &RrlConfig, seed: u64, base: Instant) -> Self {
        let entries = config.table_size.max(WAYS).next_power_of_two();
        let rate = u64::from(config.rate.max(1));
        Self {
            table: vec![Entry::default(); entries].into_boxed_slice(),
            set_mask: entries / WAYS - 1,
            seed,
            rate,
            capacity: rate * u64::from(config.window.max(1)) * COST,
            slip: config.slip,
            ipv4_prefix: config.ipv4_prefix.min(32),
            ipv6_prefix: config.ipv6_prefix.min(128),
            base,
        }
    }

    /// The table's clock: milliseconds since `base`.
    #[inline]
    pub(crate) fn clock(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.base).as_millis() as u64
    }

    /// Decides whether the UDP response `resp` (whole, as built) to `peer` goes out;
    /// `rcode`, `truncated` and `wildcard` are what the answering code reported. On
    /// [`Verdict::Slip`] `resp` has been rewritten in place to the returned length.
    pub(crate) fn check(
        &mut self,
        peer: IpAddr,
        rcode: Rcode,
        truncated: bool,
        wildcard: Option<u8>,
        resp: &mut [u8],
        now_ms: u64,
    ) -> Verdict {
        let mut c = classify(resp, rcode, truncated);
        if let (Class::Answer, Some(labels)) = (c.class, wildcard) {
            // Keyed by the wildcard, not by each of the names it answers: a flood of random
            // names under one wildcard is one flood (BIND's RRL does the same).
            c.name = wildcard_key(resp, labels).unwrap_or(c.name);
        }
        let key = self.key(peer, c.class, c.name, c.qtype);
        match self.account(key, now_ms) {
            Decision::Pass => Verdict::Send,
            Decision::Drop => Verdict::Drop,
            Decision::Slip => Verdict::Slip(slip_response(resp, c.question_end)),
        }
    }

    /// The bucket key for a response class to a client prefix.
    fn key(&self, peer: IpAddr, class: Class, name: u64, qtype: u16) -> u64 {
        let (family, hi, lo) = prefix(peer, self.ipv4_prefix, self.ipv6_prefix);
        let kind = family | (class as u64) << 8 | u64::from(qtype) << 16;
        // 0 marks an empty entry.
        keyed_hash(self.seed, &[kind, hi, lo, name]) | 1
    }

    /// Charges one response to the bucket `key` at `now_ms`.
    fn account(&mut self, key: u64, now_ms: u64) -> Decision {
        let set = ((key >> 1) as usize & self.set_mask) * WAYS;
        let ways = &mut self.table[set..set + WAYS];
        let i = match ways.iter().position(|e| e.key == key) {
            Some(i) => i,
            None => {
                // An empty entry, else the least recently used one.
                let i = ways
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, e)| if e.key == 0 { 0 } else { e.last + 1 })
                    .map_or(0, |(i, _)| i);
                ways[i] = Entry {
                    key,
                    tokens: self.capacity,
                    last: now_ms,
                    limited: 0,
                };
                i
            }
        };
        let e = &mut ways[i];
        let elapsed = now_ms.saturating_sub(e.last);
        if elapsed > 0 {
            e.tokens = e
                .tokens
                .saturating_add(elapsed.saturating_mul(self.rate))
                .min(self.capacity);
            e.last = now_ms;
        }
        if e.tokens == self.capacity {
            e.limited = 0;
        }
        if e.tokens >= COST {
            e.tokens -= COST;
            return Decision::Pass;
        }
        e.limited = e.limited.wrapping_add(1);
        if self.slip != 0 && e.limited.is_multiple_of(self.slip) {
            Decision::Slip
        } else {
            Decision::Drop
        }
    }
}

/// The client's network: (family, high 64 bits, low 64 bits) of the address with all but
/// the first `v4`/`v6` bits cleared.
fn prefix(ip: IpAddr, v4: u8, v6: u8) -> (u64, u64, u64) {
    match ip {
        IpAddr::V4(a) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(v4)).unwrap_or(0);
            (4, u64::from(u32::from(a) & mask), 0)
        }
        IpAddr::V6(a) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(v6)).unwrap_or(0);
            let x = u128::from(a) & mask;
            (6, (x >> 64) as u64, x as u64)
        }
    }
}

/// A response's class, the hash of the name that keys it, its qtype (answers only) and
/// where its question ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Classified {
    class: Class,
    name: u64,
    qtype: u16,
    question_end: usize,
}

fn classify(resp: &[u8], rcode: Rcode, truncated: bool) -> Classified {
    let mut c = Classified {
        class: Class::Error,
        name: 0,
        qtype: 0,
        question_end: resp.len().min(HEADER_LEN),
    };
    let Some(h) = resp.get(..HEADER_LEN) else {
        return c;
    };
    let count = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
    let (qdcount, ancount, nscount) = (count(4), count(6), count(8));
    if qdcount != 1 {
        return c;
    }
    let mut qname = NameBuf::new();
    let Ok((qtype, _, end)) = read_question(resp, HEADER_LEN, &mut qname) else {
        return c;
    };
    c.question_end = end;
    if rcode == Rcode::NOERROR && (truncated || ancount > 0) {
        c.class = Class::Answer;
        c.name = qname.as_ref().hash_ci();
        c.qtype = qtype.0;
    } else if rcode == Rcode::NXDOMAIN || rcode == Rcode::NOERROR {
        c.class = if rcode == Rcode::NXDOMAIN {
            Class::NxDomain
        } else {
            Class::NoData
        };
        // The zone (SOA owner) or zone cut (NS owner): the first authority record's owner.
        // Without one (not from our zone code), the qname.
        c.name = first_authority_owner(resp, end, ancount, nscount, &mut qname)
            .unwrap_or_else(|| qname.as_ref().hash_ci());
    }
    c
}

/// The hash of `*.<encloser>`, the encloser being the question name's last
/// `encloser_labels` labels.
fn wildcard_key(resp: &[u8], encloser_labels: u8) -> Option<u64> {
    let mut qname = NameBuf::new();
    read_question(resp, HEADER_LEN, &mut qname).ok()?;
    let encloser = qname.as_ref().suffix(usize::from(encloser_labels));
    let mut star = NameBuf::new();
    star.set_concat(&[1, b'*'], encloser).ok()?;
    Some(star.as_ref().hash_ci())
}

/// The hash of the owner name of the first authority record, after `ancount` answers.
fn first_authority_owner(
    resp: &[u8],
    pos: usize,
    ancount: u16,
    nscount: u16,
    buf: &mut NameBuf,
) -> Option<u64> {
    if nscount == 0 {
        return None;
    }
    let mut r = Reader::new(resp, pos);
    for _ in 0..ancount {
        r.skip_name().ok()?;
        r.bytes(8).ok()?; // type, class, TTL
        let rdlen = r.u16().ok()?;
        r.bytes(usize::from(rdlen)).ok()?;
    }
    r.name(buf).ok()?;
    Some(buf.as_ref().hash_ci())
}

/// Cuts `resp` to its header and question with TC set and no records; returns the length.
fn slip_response(resp: &mut [u8], question_end: usize) -> usize {
    if resp.len() < HEADER_LEN {
        return resp.len();
    }
    resp[2] |= 0x02; // TC
    if question_end <= HEADER_LEN {
        resp[4..6].fill(0);
    }
    resp[6..HEADER_LEN].fill(0);
    question_end.clamp(HEADER_LEN, resp.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardns_wire::message::Message;
    use shardns_wire::{Class as DnsClass, Header, MessageWriter, Name, RType, Section};

    fn config(rate: u32, slip: u32, window: u32) -> RrlConfig {
        RrlConfig {
            enabled: true,
            rate,
            slip,
            window,
            ..RrlConfig::default()
        }
    }

    #[test]
    fn bucket_starts_full_then_refills_at_rate() {
        let mut r = Rrl::new(&config(10, 0, 2), 7, Instant::now());
        // A full bucket: rate × window responses at once.
        let passed = (0..25)
            .filter(|_| r.account(42, 1000) == Decision::Pass)
            .count();
        assert_eq!(passed, 20);
        // 10 per second: one every 100 ms, none in between.
        assert_eq!(r.account(42, 1099), Decision::Drop);
        assert_eq!(r.account(42, 1100), Decision::Pass);
        assert_eq!(r.account(42, 1150), Decision::Drop);
        assert_eq!(r.account(42, 1200), Decision::Pass);
        // Half a second's credit, accrued in small steps, is 5 responses.
        for t in 1201..=1700 {
            assert_eq!(r.account(42, t) == Decision::Pass, t % 100 == 0, "t={t}");
        }
        // A long pause refills to the cap, never beyond.
        let passed = (0..100)
            .filter(|_| r.account(42, 1_000_000) == Decision::Pass)
            .count();
        assert_eq!(passed, 20);
    }

    #[test]
    fn steady_flood_gets_the_rate() {
        let mut r = Rrl::new(&config(50, 0, 1), 7, Instant::now());
        // 1000 queries a second for 10 s, one per millisecond.
        let passed = (0..10_000u64)
            .filter(|&t| r.account(9, t) == Decision::Pass)
            .count();
        // The first second's burst (50) plus 50 per second.
        assert!((500..=550).contains(&passed), "{passed}");
    }

    #[test]
    fn slip_cadence() {
        for (slip, want) in [(0u32, [false; 6]), (1, [true; 6])] {
            let mut r = Rrl::new(&config(1, slip, 1), 1, Instant::now());
            assert_eq!(r.account(5, 0), Decision::Pass);
            for (i, w) in want.iter().enumerate() {
                let d = r.account(5, 0);
                assert_eq!(d == Decision::Slip, *w, "slip {slip}, limited {i}");
                assert_ne!(d, Decision::Pass);
            }
        }
        let mut r = Rrl::new(&config(1, 3, 1), 1, Instant::now());
        assert_eq!(r.account(5, 0), Decision::Pass);
        let got: Vec<Decision> = (0..7).map(|_| r.account(5, 0)).collect();
        use Decision::{Drop as D, Slip as S};
        assert_eq!(got, [D, D, S, D, D, S, D]);
        // A refilled bucket starts the cadence again.
        assert_eq!(r.account(5, 5000), Decision::Pass);
        assert_eq!(r.account(5, 5000), Decision::Drop);
        assert_eq!(r.account(5, 5000), Decision::Drop);
        assert_eq!(r.account(5, 5000), Decision::Slip);
    }

    #[test]
    fn prefixes_mask_host_bits() {
        let p = |s: &str, v4, v6| prefix(s.parse().unwrap(), v4, v6);
        assert_eq!(p("192.0.2.77", 24, 56), (4, 0xc000_0200, 0));
        assert_eq!(p("192.0.2.77", 32, 56), (4, 0xc000_024d, 0));
        assert_eq!(p("192.0.2.77", 0, 56), (4, 0, 0));
        assert_eq!(p("192.0.2.77", 20, 56), (4, 0xc000_0000, 0));
        assert_eq!(
            p("2001:db8:1:2ff:3::1", 24, 56),
            (6, 0x2001_0db8_0001_0200, 0)
        );
        assert_eq!(
            p("2001:db8:1:2ff:3::1", 24, 128),
            (6, 0x2001_0db8_0001_02ff, 0x0003_0000_0000_0001)
        );
        assert_eq!(p("2001:db8::1", 24, 0), (6, 0, 0));
        // Same network, same key; other network or family, another key.
        let r = Rrl::new(&config(1, 0, 1), 3, Instant::now());
        let k = |s: &str| r.key(s.parse().unwrap(), Class::Answer, 1, 1);
        assert_eq!(k("10.1.2.3"), k("10.1.2.200"));
        assert_ne!(k("10.1.2.3"), k("10.1.3.3"));
        assert_eq!(k("2001:db8:0:ff::1"), k("2001:db8:0:ff:1::9"));
        assert_ne!(k("2001:db8:0:ff::1"), k("2001:db8:0:100::1"));
        assert_ne!(k("0.0.0.0"), k("::"));
        let kc = |c| r.key("10.1.2.3".parse().unwrap(), c, 1, 1);
        assert_ne!(kc(Class::Answer), kc(Class::NxDomain));
        assert_ne!(
            r.key("10.1.2.3".parse().unwrap(), Class::Answer, 1, 1),
            r.key("10.1.2.3".parse().unwrap(), Class::Answer, 1, 28)
        );
    }

    #[test]
    fn collisions_evict_the_least_recently_used() {
        let mut c = config(1, 0, 1);
        c.table_size = WAYS; // one set: every key collides
        let mut r = Rrl::new(&c, 0, Instant::now());
        assert_eq!(r.table.len(), WAYS);
        // Four keys fill the set and empty their buckets.
        for k in 1..=4u64 {
            assert_eq!(r.account(k * 2 + 1, k), Decision::Pass);
            assert_eq!(r.account(k * 2 + 1, k), Decision::Drop);
        }
        // Key 3 is used again, so key 5 is now the least recently used.
        assert_eq!(r.account(3, 10), Decision::Drop);
        // A fifth key evicts it and starts full.
        assert_eq!(r.account(11, 11), Decision::Pass);
        assert!(r.table.iter().all(|e| e.key != 5));
        assert!(r.table.iter().any(|e| e.key == 3));
        // The survivors kept their state: still empty.
        for k in [3u64, 7, 9, 11] {
            assert_eq!(r.account(k, 12), Decision::Drop, "key {k}");
        }
        // The evicted key comes back full (the price of a table too small).
        assert_eq!(r.account(5, 13), Decision::Pass);
    }

    #[test]
    fn table_size_rounds_up() {
        let mut c = config(1, 0, 1);
        c.table_size = 1000;
        let r = Rrl::new(&c, 0, Instant::now());
        assert_eq!(r.table.len(), 1024);
        assert_eq!(r.set_mask, 1024 / WAYS - 1);
    }

    /// A response with `answers` A records, then the given authority owner (SOA or NS).
    fn response(qname: &str, rcode: Rcode, answers: usize, authority: Option<&str>) -> Vec<u8> {
        let mut buf = vec![0u8; 1232];
        let qname: Name = qname.parse().unwrap();
        let mut w = MessageWriter::new(&mut buf, 1232);
        w.put_question(qname.as_ref(), RType::A, DnsClass::IN)
            .unwrap();
        for i in 0..answers {
            w.put_record(
                Section::Answer,
                qname.as_ref(),
                RType::A,
                DnsClass::IN,
                60,
                &[192, 0, 2, i as u8],
            )
            .unwrap();
        }
        if let Some(owner) = authority {
            let owner: Name = owner.parse().unwrap();
            w.put_record(
                Section::Authority,
                owner.as_ref(),
                RType::NS,
                DnsClass::IN,
                60,
                &[0],
            )
            .unwrap();
        }
        let mut h = Header::default();
        h.set_qr(true);
        h.set_rcode(rcode);
        let len = w.finish(&h).len();
        buf.truncate(len);
        buf
    }

    fn name_hash(s: &str) -> u64 {
        s.parse::<Name>().unwrap().as_ref().hash_ci()
    }

    #[test]
    fn classes_and_key_names() {
        let c = classify(
            &response("www.example.test", Rcode::NOERROR, 2, None),
            Rcode::NOERROR,
            false,
        );
        assert_eq!(
            (c.class, c.name, c.qtype),
            (Class::Answer, name_hash("WWW.example.test"), 1)
        );
        // Every NXDOMAIN of a zone shares the zone's bucket; CNAMEs before it are skipped.
        let a = classify(
            &response("x1.example.test", Rcode::NXDOMAIN, 0, Some("example.test")),
            Rcode::NXDOMAIN,
            false,
        );
        let b = classify(
            &response("y2.example.test", Rcode::NXDOMAIN, 1, Some("Example.Test")),
            Rcode::NXDOMAIN,
            false,
        );
        assert_eq!((a.class, a.name, a.qtype), (Class::NxDomain, b.name, 0));
        assert_eq!(a.name, name_hash("example.test"));
        // A referral is keyed by its zone cut.
        let c = classify(
            &response(
                "a.b.sub.example.test",
                Rcode::NOERROR,
                0,
                Some("sub.example.test"),
            ),
            Rcode::NOERROR,
            false,
        );
        assert_eq!(
            (c.class, c.name),
            (Class::NoData, name_hash("sub.example.test"))
        );
        // Without authority records: the qname.
        let c = classify(
            &response("n.example.test", Rcode::NOERROR, 0, None),
            Rcode::NOERROR,
            false,
        );
        assert_eq!(
            (c.class, c.name),
            (Class::NoData, name_hash("n.example.test"))
        );
        // Truncated: an answer, whatever the sections hold.
        let c = classify(
            &response("big.example.test", Rcode::NOERROR, 0, None),
            Rcode::NOERROR,
            true,
        );
        assert_eq!(c.class, Class::Answer);
        // Errors: one bucket per prefix, no name.
        for rcode in [Rcode::REFUSED, Rcode::SERVFAIL, Rcode::BADVERS] {
            let c = classify(&response("q.example.test", rcode, 0, None), rcode, false);
            assert_eq!((c.class, c.name, c.qtype), (Class::Error, 0, 0));
        }
        // A bare header (FORMERR) or a runt.
        let c = classify(&[0u8; 12], Rcode::FORMERR, false);
        assert_eq!((c.class, c.question_end), (Class::Error, 12));
        assert_eq!(classify(&[0u8; 5], Rcode::FORMERR, false).question_end, 5);
    }

    #[test]
    fn slipped_response_is_the_question_with_tc() {
        let mut r = response("www.example.test", Rcode::NXDOMAIN, 1, Some("example.test"));
        r[2] |= 0x04; // AA
        let c = classify(&r, Rcode::NXDOMAIN, false);
        let n = slip_response(&mut r, c.question_end);
        let m = Message::parse(&r[..n]).unwrap();
        assert!(m.header.tc() && m.header.aa() && m.header.qr());
        assert_eq!(m.rcode(), Rcode::NXDOMAIN);
        assert_eq!(m.questions.len(), 1);
        assert_eq!(m.questions[0].qname.to_string(), "www.example.test.");
        assert!(m.answers.is_empty() && m.authority.is_empty() && m.additional.is_empty());
        assert_eq!(n, 12 + 18 + 4);
        let mut bare = [0u8; 12];
        bare[5] = 1;
        bare[7] = 3;
        assert_eq!(slip_response(&mut bare, 12), 12);
        assert_eq!(bare[2] & 0x02, 0x02);
        assert_eq!(&bare[4..], &[0; 8]);
    }

    #[test]
    fn check_limits_per_prefix_and_slips_in_place() {
        let mut r = Rrl::new(&config(2, 1, 1), 99, Instant::now());
        let resp = response("www.example.test", Rcode::NOERROR, 1, None);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.200".parse().unwrap();
        let other: IpAddr = "198.51.100.1".parse().unwrap();
        let mut out = resp.clone();
        assert_eq!(
            r.check(a, Rcode::NOERROR, false, None, &mut out, 0),
            Verdict::Send
        );
        assert_eq!(out, resp);
        assert_eq!(
            r.check(b, Rcode::NOERROR, false, None, &mut out, 0),
            Verdict::Send
        );
        // The /24 is out of tokens; slip 1 truncates every limited response.
        let v = r.check(a, Rcode::NOERROR, false, None, &mut out, 0);
        assert_eq!(v, Verdict::Slip(12 + 18 + 4));
        assert_eq!(out[2] & 0x02, 0x02);
        let mut out = resp.clone();
        assert_eq!(
            r.check(other, Rcode::NOERROR, false, None, &mut out, 0),
            Verdict::Send
        );
        // Another class for the same prefix has its own bucket.
        let mut nx = response(
            "nope.example.test",
            Rcode::NXDOMAIN,
            0,
            Some("example.test"),
        );
        assert_eq!(
            r.check(a, Rcode::NXDOMAIN, false, None, &mut nx, 0),
            Verdict::Send
        );
    }

    #[test]
    fn wildcard_answers_share_the_wildcards_bucket() {
        let mut r = Rrl::new(&config(1, 0, 1), 5, Instant::now());
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        // *.example.test answers both names: the encloser example.test has 2 labels.
        let mut one = response("r1.example.test", Rcode::NOERROR, 1, None);
        let mut two = response("r2.example.test", Rcode::NOERROR, 1, None);
        assert_eq!(
            r.check(a, Rcode::NOERROR, false, Some(2), &mut one, 0),
            Verdict::Send
        );
        assert_eq!(
            r.check(a, Rcode::NOERROR, false, Some(2), &mut two, 0),
            Verdict::Drop,
            "a second random name under the same wildcard is the same bucket"
        );
        // Not from a wildcard: each name is its own bucket.
        let mut three = response("r3.example.test", Rcode::NOERROR, 1, None);
        assert_eq!(
            r.check(a, Rcode::NOERROR, false, None, &mut three, 0),
            Verdict::Send
        );
        // Another wildcard (*.sub.example.test) is another bucket.
        let mut four = response("r4.sub.example.test", Rcode::NOERROR, 1, None);
        assert_eq!(
            r.check(a, Rcode::NOERROR, false, Some(3), &mut four, 0),
            Verdict::Send
        );
    }
}
