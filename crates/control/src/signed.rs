//! signed -- the answer to a signed request whose TSIG fails, one for every role that
//! checks one (queries in `dispatch`, transfers in `transfers`, NOTIFY in `secondary`), so
//! that none of them imports another for it.

use shardns_wire::tsig;
use shardns_wire::Rcode;
use shardns_zone::{OptAt, Written};

/// The answer to a signed request whose TSIG does not verify (RFC 8945 §5.2), for queries,
/// transfers and NOTIFY alike: `write` writes the response with the RCODE (FORMERR for a MAC
/// of a size §5.2.2.1 forbids, else NOTAUTH) into `out`, then the TSIG `failure` asks for
/// is appended: unsigned (BADKEY, BADSIG) or signed (BADTIME with our time, BADTRUNC).
pub fn tsig_refusal(
    sig: &tsig::Signature,
    failure: &tsig::Failure<'_>,
    now: u64,
    out: &mut [u8],
    write: impl FnOnce(Rcode, &mut [u8]) -> Written,
) -> Written {
    let rcode = match failure {
        tsig::Failure::Malformed => Rcode::FORMERR,
        _ => Rcode::NOTAUTH,
    };
    let mut w = write(rcode, out);
    w.len = tsig::append_failure(out, w.len, sig, failure, now);
    w.opt = OptAt::Absent;
    w
}
