//! What the run saw, per kind of input (inputs, UDP and TCP sends, silences, RCODEs), printed
//! as the summary; and how an input is shown in a failure report.

use std::collections::BTreeMap;

#[derive(Default)]
pub(crate) struct KindTally {
    pub(crate) inputs: usize,
    pub(crate) udp: usize,
    pub(crate) tcp: usize,
    pub(crate) silent: usize,
    pub(crate) rcodes: BTreeMap<u16, usize>,
}

#[derive(Default)]
pub(crate) struct Tally(pub(crate) BTreeMap<&'static str, KindTally>);

impl Tally {
    pub(crate) fn print(&self) {
        println!(
            "{:<16} {:>7} {:>6} {:>6} {:>7}  RCODEs seen",
            "kind", "inputs", "udp", "tcp", "silent"
        );
        let mut total = KindTally::default();
        for (kind, t) in &self.0 {
            println!(
                "{kind:<16} {:>7} {:>6} {:>6} {:>7}  {:?}",
                t.inputs, t.udp, t.tcp, t.silent, t.rcodes
            );
            total.inputs += t.inputs;
            total.udp += t.udp;
            total.tcp += t.tcp;
            total.silent += t.silent;
        }
        println!(
            "{:<16} {:>7} {:>6} {:>6} {:>7}",
            "total", total.inputs, total.udp, total.tcp, total.silent
        );
    }
}

/// Counts one TCP case under `kind`.
pub(crate) fn count_tcp(tally: &mut Tally, kind: &'static str, n: usize) {
    let t = tally.0.entry(kind).or_default();
    t.inputs += n;
    t.tcp += n;
}

/// A message for a failure report: its length and at most its first 96 octets.
pub(crate) fn hex(m: &[u8]) -> String {
    let shown: Vec<String> = m.iter().take(96).map(|b| format!("{b:02x}")).collect();
    let more = if m.len() > 96 { " ..." } else { "" };
    format!("({} octets) {}{more}", m.len(), shown.join(" "))
}
