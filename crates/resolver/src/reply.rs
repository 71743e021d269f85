//! What goes back to a client: the result of one resolution, and Extended DNS Errors
//! (RFC 8914).
//!
//! Owns: [`Resolution`] (rcode and the records of the answer and authority sections),
//! [`Ede`] and [`put_opt_with_ede`], which writes the EDE option into the response's OPT,
//! and the end of a response to a client ([`client_response_limit`],
//! [`finish_client_response`]), shared by the server and the fuzz target of its cache path.
//! Never: the question (the server writes it), I/O.

use shardns_wire::message::Header;
use shardns_wire::writer::Full;
use shardns_wire::{Class, MessageWriter, Opcode, Rcode, Record, Section};

/// Largest UDP payload sent to clients in a recursive answer (as for authoritative ones).
pub const CLIENT_UDP_MAX: u16 = 1232;
/// Room kept for the OPT record with an Extended DNS Error (11 + 4 + 2 + 64 octets) while
/// the answer is written.
pub const OPT_ROOM: usize = 81;

/// EDNS option code of Extended DNS Error (RFC 8914 §2).
pub const EDE_OPTION: u16 = 15;

/// Longest EDE extra text we write (keeps the option on the stack).
const MAX_EDE_TEXT: usize = 64;

/// An Extended DNS Error (RFC 8914): an info code and a short text for operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ede {
    /// INFO-CODE (RFC 8914 §5.2).
    pub code: u16,
    /// EXTRA-TEXT, UTF-8; cut to 64 octets when written.
    pub text: &'static str,
}

impl Ede {
    /// 3, Stale Answer: served from expired cached data (RFC 8767).
    pub const STALE_ANSWER: u16 = 3;
    /// 19, Stale NXDOMAIN Answer: an expired cached NXDOMAIN (RFC 8767).
    pub const STALE_NXDOMAIN: u16 = 19;
    /// 0, Other Error.
    pub const OTHER: u16 = 0;
    /// 22, No Reachable Authority: every server of a zone timed out or failed.
    pub const NO_REACHABLE_AUTHORITY: u16 = 22;
    /// 23, Network Error: sending to the servers failed.
    pub const NETWORK_ERROR: u16 = 23;
    /// 1, Unsupported DNSKEY Algorithm.
    pub const UNSUPPORTED_DNSKEY_ALGORITHM: u16 = 1;
    /// 2, Unsupported DS Digest Type.
    pub const UNSUPPORTED_DS_DIGEST: u16 = 2;
    /// 6, DNSSEC Bogus: validation failed for another reason than those below.
    pub const DNSSEC_BOGUS: u16 = 6;
    /// 7, Signature Expired.
    pub const SIGNATURE_EXPIRED: u16 = 7;
    /// 8, Signature Not Yet Valid.
    pub const SIGNATURE_NOT_YET_VALID: u16 = 8;
    /// 9, DNSKEY Missing: no DNSKEY matches the DS records or the RRSIGs.
    pub const DNSKEY_MISSING: u16 = 9;
    /// 10, RRSIGs Missing: a secure zone's data came unsigned.
    pub const RRSIGS_MISSING: u16 = 10;
    /// 11, No Zone Key Bit Set.
    pub const NO_ZONE_KEY_BIT: u16 = 11;
    /// 12, NSEC Missing: a denial of existence without its proof.
    pub const NSEC_MISSING: u16 = 12;

    pub(crate) const fn new(code: u16, text: &'static str) -> Self {
        Self { code, text }
    }

    /// The EDE of a bogus answer with this INFO-CODE (cached answers keep the code only).
    pub fn bogus(code: u16) -> Self {
        let text = match code {
            Self::UNSUPPORTED_DNSKEY_ALGORITHM => "unsupported DNSKEY algorithm",
            Self::UNSUPPORTED_DS_DIGEST => "unsupported DS digest type",
            Self::SIGNATURE_EXPIRED => "signature expired",
            Self::SIGNATURE_NOT_YET_VALID => "signature not yet valid",
            Self::DNSKEY_MISSING => "no DNSKEY matches the DS or RRSIG",
            Self::RRSIGS_MISSING => "RRSIGs missing in a signed zone",
            Self::NO_ZONE_KEY_BIT => "no zone key bit set",
            Self::NSEC_MISSING => "denial of existence not proven",
            _ => "DNSSEC validation failed",
        };
        let code = if code == Self::OTHER {
            Self::DNSSEC_BOGUS
        } else {
            code
        };
        Self { code, text }
    }

    /// Writes the option (code, length, INFO-CODE, EXTRA-TEXT) into `out`; returns its length.
    pub fn encode_option(&self, out: &mut [u8; 6 + MAX_EDE_TEXT]) -> usize {
        let text = &self.text.as_bytes()[..self.text.len().min(MAX_EDE_TEXT)];
        out[0..2].copy_from_slice(&EDE_OPTION.to_be_bytes());
        out[2..4].copy_from_slice(&((2 + text.len()) as u16).to_be_bytes());
        out[4..6].copy_from_slice(&self.code.to_be_bytes());
        out[6..6 + text.len()].copy_from_slice(text);
        6 + text.len()
    }
}

/// Writes an OPT record carrying `ede` (if any) as its only option. The extended RCODE bits
/// of `rcode` go in the OPT TTL, as RFC 6891 §6.1.3 requires.
pub fn put_opt_with_ede(
    w: &mut MessageWriter<'_>,
    udp_size: u16,
    rcode: Rcode,
    dnssec_ok: bool,
    ede: Option<&Ede>,
) -> Result<(), Full> {
    let mut buf = [0u8; 6 + MAX_EDE_TEXT];
    let len = ede.map_or(0, |e| e.encode_option(&mut buf));
    w.put_opt(udp_size, rcode.extended_bits(), 0, dnssec_ok, &buf[..len])
}

/// The size limit of a response to a client: 65,535 octets over TCP; over UDP the client's
/// EDNS size within 512..[`CLIENT_UDP_MAX`], or 512 without EDNS; at most `buf`.
pub fn client_response_limit(tcp: bool, edns: Option<(u16, bool)>, buf: usize) -> usize {
    let limit = match (tcp, edns) {
        (true, _) => usize::from(u16::MAX),
        (false, None) => 512,
        (false, Some((size, _))) => usize::from(size.clamp(512, CLIENT_UDP_MAX)),
    };
    limit.min(buf)
}

/// Ends a response to the client query with header `qh`: the header (QR, RA, the query's
/// ID, RD and CD; `rcode`, TC if `truncated`), with the limit raised back to `limit`, and
/// an OPT record if the client sent EDNS (`edns`: its size and DO bit), with `ede` if it
/// fits. Returns the length, and whether the OPT (if one was due) was written.
pub fn finish_client_response(
    mut w: MessageWriter<'_>,
    qh: &Header,
    rcode: Rcode,
    truncated: bool,
    limit: usize,
    edns: Option<(u16, bool)>,
    ede: Option<&Ede>,
) -> (usize, bool) {
    let mut h = Header {
        id: qh.id,
        ..Header::default()
    };
    h.set_qr(true);
    h.set_opcode(Opcode::QUERY);
    h.set_rd(qh.rd());
    h.set_cd(qh.cd());
    h.set_ra(true);
    h.set_tc(truncated);
    h.set_rcode(rcode);
    w.set_limit(limit);
    let mut opt_written = true;
    if let Some((_, dnssec_ok)) = edns {
        opt_written = put_opt_with_ede(&mut w, CLIENT_UDP_MAX, rcode, dnssec_ok, ede).is_ok()
            || put_opt_with_ede(&mut w, CLIENT_UDP_MAX, rcode, dnssec_ok, None).is_ok();
    }
    (w.finish(&h).len(), opt_written)
}

/// What a resolution produced: the response code and the records to answer with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolution {
    /// NOERROR (answer or NODATA), NXDOMAIN, or SERVFAIL.
    pub rcode: Rcode,
    /// The answer section: any CNAME/DNAME chain, then the answer RRset.
    pub answers: Vec<Record>,
    /// The authority section: the SOA of a negative answer.
    pub authority: Vec<Record>,
    /// The RRSIGs of the answer section's RRsets, for a client that set DO.
    pub dnssec_answer: Vec<Record>,
    /// For a client that set DO: the proof of a denial or of a wildcard expansion (NSEC or
    /// NSEC3 records and their RRSIGs, the SOA's RRSIGs), in the authority section.
    pub dnssec_authority: Vec<Record>,
    /// Why resolution failed, for a SERVFAIL; for a stale answer (RFC 8767), EDE 3 or 19.
    pub ede: Option<Ede>,
    /// DNSSEC validation found every RRset of the answer (and the proof of a denial)
    /// secure: the server sets AD if the client set DO or AD (RFC 6840 §5.8).
    pub secure: bool,
}

impl Resolution {
    /// An answer with `rcode` and no records.
    pub(crate) fn empty(rcode: Rcode) -> Self {
        Self {
            rcode,
            answers: Vec::new(),
            authority: Vec::new(),
            dnssec_answer: Vec::new(),
            dnssec_authority: Vec::new(),
            ede: None,
            secure: false,
        }
    }

    pub(crate) fn servfail(ede: Ede) -> Self {
        Self {
            rcode: Rcode::SERVFAIL,
            answers: Vec::new(),
            authority: Vec::new(),
            dnssec_answer: Vec::new(),
            dnssec_authority: Vec::new(),
            ede: Some(ede),
            secure: false,
        }
    }

    /// Writes the answer and authority sections after the caller's question, with the
    /// DNSSEC records if the client set DO (`dnssec_ok`). On [`Full`] the records that fit
    /// are kept (the caller sets TC).
    pub fn write(&self, w: &mut MessageWriter<'_>, dnssec_ok: bool) -> Result<(), Full> {
        let none: &[Record] = &[];
        let (an, ns) = if dnssec_ok {
            (&self.dnssec_answer[..], &self.dnssec_authority[..])
        } else {
            (none, none)
        };
        for (section, records) in [
            (Section::Answer, &self.answers[..]),
            (Section::Answer, an),
            (Section::Authority, &self.authority[..]),
            (Section::Authority, ns),
        ] {
            for r in records {
                w.put_record(
                    section,
                    r.owner.as_ref(),
                    r.rtype,
                    Class::IN,
                    r.ttl,
                    &r.rdata,
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardns_wire::{Header, Message, Name, RType};

    #[test]
    fn ede_in_opt_round_trips() {
        let mut buf = [0u8; 512];
        let mut w = MessageWriter::new(&mut buf, 512);
        let q: Name = "example.".parse().unwrap();
        w.put_question(q.as_ref(), RType::A, Class::IN).unwrap();
        let ede = Ede::new(Ede::NO_REACHABLE_AUTHORITY, "all servers timed out");
        put_opt_with_ede(&mut w, 1232, Rcode::SERVFAIL, false, Some(&ede)).unwrap();
        let msg = w.finish(&Header::default()).to_vec();
        let m = Message::parse(&msg).unwrap();
        let opt = m.opt().unwrap();
        let opts: Vec<_> = shardns_wire::edns::options(&opt.rdata).collect();
        assert_eq!(opts.len(), 1);
        assert_eq!(opts[0].0, EDE_OPTION);
        assert_eq!(&opts[0].1[..2], &22u16.to_be_bytes());
        assert_eq!(&opts[0].1[2..], b"all servers timed out");
    }

    #[test]
    fn long_ede_text_is_cut() {
        let ede = Ede::new(
            0,
            "0123456789012345678901234567890123456789012345678901234567890123456789",
        );
        let mut buf = [0u8; 70];
        assert_eq!(ede.encode_option(&mut buf), 70);
    }

    #[test]
    fn client_limits_follow_transport_and_edns() {
        assert_eq!(client_response_limit(false, None, 4096), 512);
        assert_eq!(
            client_response_limit(false, Some((4096, false)), 4096),
            1232
        );
        assert_eq!(client_response_limit(false, Some((100, false)), 4096), 512);
        assert_eq!(client_response_limit(true, None, 70000), 65535);
    }
}
