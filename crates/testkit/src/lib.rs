//! Support for the shardns crates' tests and benchmarks (a dev-dependency only).
//!
//! [`CountingAlloc`] checks that the query path makes no heap allocation and [`query`]
//! builds the queries that tests and benchmarks send.
#![warn(missing_docs)]

use shardns_wire::{Class, Header, Message, MessageWriter, Name, Question, RType};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// A global allocator that forwards to the system allocator and, while counting is on,
/// counts allocations and reallocations. Install it with `#[global_allocator]`.
///
/// Counting is per thread: `count` sees the allocations of the thread that calls it and no
/// other, so the test harness's threads (or tests running in parallel in the same binary)
/// cannot add stray allocations to a figure.
pub struct CountingAlloc {
    _private: (),
}

thread_local! {
    // Const-initialised with no destructor, so reading them never allocates (which would
    // recurse into the allocator).
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

impl CountingAlloc {
    /// A counter that is off.
    pub const fn new() -> Self {
        Self { _private: () }
    }

    /// Runs `f` with counting on; returns its result and the allocations it made on this
    /// thread.
    pub fn count<R>(&self, f: impl FnOnce() -> R) -> (R, usize) {
        let before = ALLOCATIONS.with(Cell::get);
        let was = COUNTING.with(|c| c.replace(true));
        let r = f();
        COUNTING.with(|c| c.set(was));
        (r, ALLOCATIONS.with(Cell::get) - before)
    }

    fn note(&self) {
        // try_with: during thread teardown the slots may be gone; such frees are not ours.
        if COUNTING.try_with(Cell::get).unwrap_or(false) {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        }
    }
}

impl Default for CountingAlloc {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: every method forwards to the system allocator with its caller's arguments, so the
// GlobalAlloc contract is the system allocator's; counting touches only two thread-local cells.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.note();
        // SAFETY: the caller upholds `alloc`'s contract, which we pass on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through this allocator, with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.note();
        // SAFETY: the caller upholds `realloc`'s contract, which we pass on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// EDNS settings of a query built by [`query`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edns {
    /// Advertised UDP payload size.
    pub udp_size: u16,
    /// EDNS version (0; higher to provoke BADVERS).
    pub version: u8,
    /// The DO bit.
    pub dnssec_ok: bool,
}

/// A query for `qname` (absolute or taken as absolute) and `qtype`, class IN, with ID `id`,
/// RD set, and an OPT record when `edns` is given.
pub fn query(id: u16, qname: &str, qtype: RType, edns: Option<Edns>) -> Vec<u8> {
    let mut buf = [0u8; 512];
    let mut w = MessageWriter::new(&mut buf, 512);
    let name: Name = qname.parse().expect("a valid query name");
    w.put_question(name.as_ref(), qtype, Class::IN)
        .expect("a question fits in 512 octets");
    if let Some(e) = edns {
        w.put_opt(e.udp_size, 0, e.version, e.dnssec_ok, &[])
            .expect("an OPT record fits");
    }
    let mut h = Header {
        id,
        ..Header::default()
    };
    h.set_rd(true);
    w.finish(&h).to_vec()
}

/// A fake server's response to `query`: the query's ID and question, QR set, AA as given,
/// and whatever `fill` writes after the question (it may also change the header, e.g. the
/// RCODE). For the tests and benches that play an upstream server to the resolver.
pub fn reply(
    query: &[u8],
    aa: bool,
    fill: impl FnOnce(&Question, &mut MessageWriter<'_>, &mut Header),
) -> Vec<u8> {
    let q = Message::parse(query).expect("the resolver sends well-formed queries");
    let question = &q.questions[0];
    let mut buf = vec![0u8; 4096];
    let mut w = MessageWriter::new(&mut buf, 4096);
    w.put_question(question.qname.as_ref(), question.qtype, Class::IN)
        .expect("a question fits");
    let mut h = Header {
        id: q.header.id,
        ..Header::default()
    };
    h.set_qr(true);
    h.set_aa(aa);
    fill(question, &mut w, &mut h);
    w.finish(&h).to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardns_wire::Message;

    #[test]
    fn query_parses_back() {
        let q = query(
            7,
            "www.Example.test",
            RType::AAAA,
            Some(Edns {
                udp_size: 1232,
                version: 0,
                dnssec_ok: true,
            }),
        );
        let m = Message::parse(&q).unwrap();
        assert_eq!(m.header.id, 7);
        assert!(m.header.rd() && !m.header.qr());
        assert_eq!(m.questions[0].qname.to_string(), "www.Example.test.");
        assert_eq!(m.questions[0].qtype, RType::AAAA);
        assert_eq!(m.opt().unwrap().class.0, 1232);
        assert_eq!(m.opt().unwrap().ttl & 0x8000, 0x8000);
        assert!(Message::parse(&query(1, "a.", RType::A, None))
            .unwrap()
            .opt()
            .is_none());
    }

    #[test]
    fn reply_echoes_id_and_question() {
        let r = reply(&query(9, "x.test", RType::MX, None), true, |q, w, h| {
            assert_eq!(q.qtype, RType::MX);
            h.set_rcode(shardns_wire::Rcode::NXDOMAIN);
            let _ = w;
        });
        let m = Message::parse(&r).unwrap();
        assert_eq!(m.header.id, 9);
        assert!(m.header.qr() && m.header.aa());
        assert_eq!(m.rcode(), shardns_wire::Rcode::NXDOMAIN);
        assert_eq!(m.questions[0].qname.to_string(), "x.test.");
    }
}
