//! End-to-end resolution over a simulated network (`sim`), by concern. No sockets.

mod sim;

mod caching;
mod dns64;
mod dns64_options;
mod failing_servers;
mod iteration;
mod limits;
mod loopback;
mod qmin;
mod spoofing;
mod stale;
mod upstream;
mod validation;
mod validation_edges;
