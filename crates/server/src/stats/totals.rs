//! stats::totals -- every worker's counters added up, when someone reads them.

use super::slots::{QTYPE_SLOTS, RCODE_SLOTS};
use super::{Counter, WorkerStats};
use crate::origin::SLOTS as QUERY_PATHS;

/// Every counter summed over the workers.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Totals {
    pub(crate) queries: [u64; QUERY_PATHS],
    pub(crate) qtypes: [u64; QTYPE_SLOTS],
    pub(crate) rcodes: [u64; RCODE_SLOTS],
    pub(crate) truncated: u64,
    pub(crate) dropped: u64,
    pub(crate) malformed: u64,
    pub(crate) request_locks: u64,
    pub(crate) request_allocations: u64,
    pub(crate) udp_recv_calls: u64,
    pub(crate) udp_send_calls: u64,
    pub(crate) wakeups: u64,
    pub(crate) tcp_accepted: u64,
    pub(crate) tcp_refused: u64,
    pub(crate) tcp_evicted: u64,
    pub(crate) tcp_client_evicted: u64,
    pub(crate) tcp_idle_closed: u64,
    pub(crate) tcp_open: u64,
    pub(crate) resolver_cache_hits: u64,
    pub(crate) resolver_cache_misses: u64,
    pub(crate) resolver_cache_locks: u64,
    pub(crate) resolver_upstream_queries: u64,
    pub(crate) resolver_servfails: u64,
    pub(crate) resolver_refused: u64,
    pub(crate) dnssec_secure: u64,
    pub(crate) dnssec_insecure: u64,
    pub(crate) dnssec_bogus: u64,
    pub(crate) resolver_pending_limited: u64,
    pub(crate) resolver_dropped: u64,
    pub(crate) resolver_local: u64,
    pub(crate) resolver_stale: u64,
    pub(crate) resolver_prefetches: u64,
    pub(crate) tcp_refused_client: u64,
    pub(crate) tcp_read_timeout_closed: u64,
    pub(crate) tcp_query_limit_closed: u64,
    pub(crate) rrl_dropped: u64,
    pub(crate) rrl_slipped: u64,
    pub(crate) xdp_kernel: [u64; 4],
    pub(crate) xfr: [u64; 4],
    pub(crate) xfr_messages: u64,
    pub(crate) tls_handshakes: [u64; 3],
    pub(crate) bad_cookies: u64,
    pub(crate) dnstap: [u64; 2],
    pub(crate) quic_connections: [u64; 3],
    pub(crate) https: [u64; 2],
    pub(crate) proxy_errors: [u64; super::PROXY_REASONS],
}

fn sum_into<const N: usize>(acc: &mut [u64; N], c: &[Counter; N]) {
    for (a, c) in acc.iter_mut().zip(c) {
        *a += c.get();
    }
}

impl Totals {
    /// Adds one worker's counters.
    pub(crate) fn add(&mut self, w: &WorkerStats) {
        sum_into(&mut self.queries, &w.queries);
        sum_into(&mut self.qtypes, &w.qtypes);
        sum_into(&mut self.rcodes, &w.rcodes);
        self.truncated += w.truncated.get();
        self.dropped += w.dropped.get();
        self.malformed += w.malformed.get();
        self.request_locks += w.request_locks.get();
        self.request_allocations += w.request_allocations.get();
        self.udp_recv_calls += w.udp_recv_calls.get();
        self.udp_send_calls += w.udp_send_calls.get();
        self.wakeups += w.wakeups.get();
        self.tcp_accepted += w.tcp_accepted.get();
        self.tcp_refused += w.tcp_refused.get();
        self.tcp_evicted += w.tcp_evicted.get();
        self.tcp_client_evicted += w.tcp_client_evicted.get();
        self.tcp_idle_closed += w.tcp_idle_closed.get();
        self.tcp_open += w.tcp_open.get();
        self.resolver_cache_hits += w.resolver_cache_hits.get();
        self.resolver_cache_misses += w.resolver_cache_misses.get();
        self.resolver_cache_locks += w.resolver_cache_locks.get();
        self.resolver_upstream_queries += w.resolver_upstream_queries.get();
        self.resolver_servfails += w.resolver_servfails.get();
        self.resolver_refused += w.resolver_refused.get();
        self.dnssec_secure += w.dnssec_secure.get();
        self.dnssec_insecure += w.dnssec_insecure.get();
        self.dnssec_bogus += w.dnssec_bogus.get();
        self.resolver_pending_limited += w.resolver_pending_limited.get();
        self.resolver_dropped += w.resolver_dropped.get();
        self.resolver_local += w.resolver_local.get();
        self.resolver_stale += w.resolver_stale.get();
        self.resolver_prefetches += w.resolver_prefetches.get();
        self.tcp_refused_client += w.tcp_refused_client.get();
        self.tcp_read_timeout_closed += w.tcp_read_timeout_closed.get();
        self.tcp_query_limit_closed += w.tcp_query_limit_closed.get();
        self.rrl_dropped += w.rrl_dropped.get();
        self.rrl_slipped += w.rrl_slipped.get();
        sum_into(&mut self.xdp_kernel, &w.xdp_kernel);
        sum_into(&mut self.xfr, &w.xfr);
        self.xfr_messages += w.xfr_messages.get();
        sum_into(&mut self.tls_handshakes, &w.tls_handshakes);
        self.bad_cookies += w.bad_cookies.get();
        sum_into(&mut self.dnstap, &w.dnstap);
        sum_into(&mut self.quic_connections, &w.quic_connections);
        sum_into(&mut self.https, &w.https);
        sum_into(&mut self.proxy_errors, &w.proxy_errors);
    }

    /// Sums every worker's counters.
    pub(crate) fn sum<'a>(workers: impl IntoIterator<Item = &'a WorkerStats>) -> Self {
        let mut t = Self::default();
        for w in workers {
            t.add(w);
        }
        t
    }

    pub(crate) fn queries_total(&self) -> u64 {
        self.queries.iter().sum()
    }
}
