//! Sending the hostile inputs over UDP: each followed by a valid query on the same socket, so
//! every answer (or silence) is attributed and the server is seen still to answer.

use crate::common::*;
use crate::oracle::{check_response, classify, u16_at};
use crate::tally::{hex, Tally};
use std::net::{SocketAddr, UdpSocket};

/// A valid query's ID must differ from the hostile input's so their answers cannot mix.
fn good_query(bad: &[u8]) -> Vec<u8> {
    let id = u16_at(bad, 0).unwrap_or(0) ^ 0xa5a5;
    query(id, "www.hostile.test", 1, None)
}

/// Sends `bad` then a valid query on `sock`; returns what came back before the valid
/// query's answer (which it checks against the zone).
fn udp_probe(sock: &UdpSocket, what: &str, bad: &[u8]) -> Vec<Vec<u8>> {
    let good = good_query(bad);
    sock.send(bad)
        .unwrap_or_else(|e| panic!("{what}: send: {e}"));
    sock.send(&good).unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65535];
    loop {
        let n = sock
            .recv(&mut buf)
            .unwrap_or_else(|e| panic!("{what}: the server stopped answering: {e}"));
        let r = &buf[..n];
        if r.len() >= 12 && r[..2] == good[..2] {
            if let Err(e) = check_response(&good, &classify(&good), r, false) {
                panic!("{what}: the valid query after it: {e}");
            }
            return got;
        }
        got.push(r.to_vec());
    }
}

/// Throws every input at `addr` over UDP; each answer is checked by the oracle.
pub(crate) fn udp_batch(
    addr: SocketAddr,
    inputs: &[(&'static str, String, Vec<u8>)],
    tally: &mut Tally,
) {
    let sock = udp_client(addr);
    for (kind, what, bad) in inputs {
        let exp = classify(bad);
        let got = udp_probe(&sock, what, bad);
        let t = tally.0.entry(kind).or_default();
        t.udp += 1;
        match got.as_slice() {
            [] => {
                // A query never needs more than 4,096 octets: a longer datagram may be dropped.
                assert!(
                    !exp.must_answer() || bad.len() > 4096,
                    "{what}: no response to {}, expected {exp:?}",
                    hex(bad)
                );
                t.silent += 1;
            }
            [r] => match check_response(bad, &exp, r, false) {
                Ok(rcode) => *t.rcodes.entry(rcode).or_default() += 1,
                Err(e) => panic!(
                    "{what} over UDP: {e}\nquery    {}\nresponse {}\nexpected {exp:?}",
                    hex(bad),
                    hex(r)
                ),
            },
            many => panic!("{what}: {} responses", many.len()),
        }
    }
}
