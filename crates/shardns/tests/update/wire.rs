//! UPDATE messages built by hand (RFC 2136 §2), signed with `tsig::sign_request` or not,
//! and the RCODE of an answer with its TSIG error (RFC 8945), for the comparison with knotd.

use super::*;
use shardns_wire::tsig::{self, Key};
use std::time::{SystemTime, UNIX_EPOCH};

pub(crate) const IN: u16 = 1;
pub(crate) const CH: u16 = 3;
pub(crate) const NONE: u16 = 254;
pub(crate) const ANY: u16 = 255;

pub(crate) const A: u16 = 1;
pub(crate) const NS: u16 = 2;
pub(crate) const CNAME: u16 = 5;
pub(crate) const SOA: u16 = 6;
pub(crate) const TXT: u16 = 16;
pub(crate) const AAAA: u16 = 28;
pub(crate) const NSEC: u16 = 47;
pub(crate) const DNSKEY: u16 = 48;
pub(crate) const AXFR: u16 = 252;
pub(crate) const T_ANY: u16 = 255;

/// Who signs a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signer {
    /// The update key.
    Key,
    /// Nobody.
    Unsigned,
    /// The update key's name with another secret.
    WrongSecret,
    /// A key neither server knows.
    UnknownKey,
}

/// An UPDATE message under construction: zone section, prerequisites, updates.
#[derive(Debug, Clone)]
pub(crate) struct Update {
    zone: Vec<u8>,
    zcount: u16,
    prereqs: Vec<Vec<u8>>,
    updates: Vec<Vec<u8>>,
}

impl Update {
    /// An update of `zone` (class IN, type SOA).
    pub(crate) fn new(zone: &str) -> Self {
        Self::zone(zone, SOA, IN)
    }

    /// An update whose zone section has type `ztype` and class `zclass`.
    pub(crate) fn zone(zone: &str, ztype: u16, zclass: u16) -> Self {
        let mut z = wire_name(zone);
        z.extend_from_slice(&ztype.to_be_bytes());
        z.extend_from_slice(&zclass.to_be_bytes());
        Self {
            zone: z,
            zcount: 1,
            prereqs: Vec::new(),
            updates: Vec::new(),
        }
    }

    /// The zone section given twice (ZOCOUNT 2).
    pub(crate) fn twice(mut self) -> Self {
        self.zone = [self.zone.clone(), self.zone].concat();
        self.zcount = 2;
        self
    }

    /// A prerequisite record (TTL 0).
    pub(crate) fn prereq(self, owner: &str, class: u16, rtype: u16, rdata: &[u8]) -> Self {
        self.prereq_ttl(owner, class, rtype, 0, rdata)
    }

    /// A prerequisite record with a TTL (non-zero is FORMERR, §3.2).
    pub(crate) fn prereq_ttl(
        mut self,
        owner: &str,
        class: u16,
        rtype: u16,
        ttl: u32,
        rdata: &[u8],
    ) -> Self {
        self.prereqs.push(rr(owner, class, rtype, ttl, rdata));
        self
    }

    /// Add `rdata` to `owner`'s `rtype` RRset (class IN, TTL 300).
    pub(crate) fn add(self, owner: &str, rtype: u16, rdata: &[u8]) -> Self {
        self.update(owner, IN, rtype, 300, rdata)
    }

    /// An update record as given.
    pub(crate) fn update(
        mut self,
        owner: &str,
        class: u16,
        rtype: u16,
        ttl: u32,
        rdata: &[u8],
    ) -> Self {
        self.updates.push(rr(owner, class, rtype, ttl, rdata));
        self
    }

    /// Delete an RRset (class ANY, empty rdata; `T_ANY`: every RRset of the name).
    pub(crate) fn delete_rrset(self, owner: &str, rtype: u16) -> Self {
        self.update(owner, ANY, rtype, 0, &[])
    }

    /// Delete one record (class NONE).
    pub(crate) fn delete_record(self, owner: &str, rtype: u16, rdata: &[u8]) -> Self {
        self.update(owner, NONE, rtype, 0, rdata)
    }

    /// The message with ID `id`, signed by `signer`.
    pub(crate) fn build(&self, id: u16, signer: Signer) -> Vec<u8> {
        let counts = [
            self.zcount,
            self.prereqs.len() as u16,
            self.updates.len() as u16,
            0,
        ];
        // Opcode UPDATE (5), every flag clear.
        let mut m = header(id, 5 << 11, counts);
        m.extend_from_slice(&self.zone);
        for r in self.prereqs.iter().chain(&self.updates) {
            m.extend_from_slice(r);
        }
        let key = match signer {
            Signer::Unsigned => return m,
            Signer::Key => upd_key(),
            Signer::WrongSecret => wrong_key(),
            Signer::UnknownKey => format!("hmac-sha256:other-key.:{SECRET}"),
        };
        sign(&m, &key.parse().unwrap())
    }
}

/// A resource record: owner (absolute), class, type, TTL, rdata.
pub(crate) fn rr(owner: &str, class: u16, rtype: u16, ttl: u32, rdata: &[u8]) -> Vec<u8> {
    let mut r = wire_name(owner);
    r.extend_from_slice(&rtype.to_be_bytes());
    r.extend_from_slice(&class.to_be_bytes());
    r.extend_from_slice(&ttl.to_be_bytes());
    r.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
    r.extend_from_slice(rdata);
    r
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// `msg` signed with `key` now.
pub(crate) fn sign(msg: &[u8], key: &Key) -> Vec<u8> {
    let mut b = msg.to_vec();
    let len = b.len();
    b.resize(len + 512, 0);
    let n = tsig::sign_request(&mut b, len, key, now());
    b.truncate(n);
    b
}

/// An A record's rdata.
pub(crate) fn a(addr: [u8; 4]) -> Vec<u8> {
    addr.to_vec()
}

/// A TXT record's rdata of one string.
pub(crate) fn txt(s: &str) -> Vec<u8> {
    let mut r = vec![s.len() as u8];
    r.extend_from_slice(s.as_bytes());
    r
}

/// An SOA's rdata for the test zone with `serial`.
pub(crate) fn soa(serial: u32) -> Vec<u8> {
    let mut r = wire_name("ns.upd.test.");
    r.extend_from_slice(&wire_name("hostmaster.upd.test."));
    for v in [serial, 3600, 600, 86400, 300] {
        r.extend_from_slice(&v.to_be_bytes());
    }
    r
}

/// What an answer says: its RCODE and, if it has a TSIG, the TSIG's error, by name
/// ("NOERROR", "NOTAUTH/BADSIG"), and whether it carries a MAC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    pub(crate) rcode: String,
    pub(crate) signed: bool,
}

/// The RCODE's name.
pub(crate) fn rcode_name(code: u16) -> String {
    match code {
        0 => "NOERROR",
        1 => "FORMERR",
        2 => "SERVFAIL",
        3 => "NXDOMAIN",
        4 => "NOTIMP",
        5 => "REFUSED",
        6 => "YXDOMAIN",
        7 => "YXRRSET",
        8 => "NXRRSET",
        9 => "NOTAUTH",
        10 => "NOTZONE",
        16 => "BADSIG",
        17 => "BADKEY",
        18 => "BADTIME",
        n => return format!("RCODE{n}"),
    }
    .to_string()
}

/// Reads an answer (`None`: no answer in time).
pub(crate) fn answer_of(wire: Option<Vec<u8>>) -> Answer {
    let Some(wire) = wire else {
        return Answer {
            rcode: "no answer".into(),
            signed: false,
        };
    };
    let mut rcode = rcode_name(u16::from(wire[3] & 0x0f));
    let mut signed = false;
    match tsig::read(&wire) {
        Ok(Some(sig)) => {
            if sig.error != 0 {
                rcode = format!("{rcode}/{}", rcode_name(sig.error));
            }
            signed = !sig.mac.is_empty();
        }
        Ok(None) => {}
        Err(e) => rcode = format!("{rcode} (unreadable TSIG: {e})"),
    }
    Answer { rcode, signed }
}
