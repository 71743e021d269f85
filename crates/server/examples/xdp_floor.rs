//! The floor of an AF_XDP responder: like `udp_floor`, it answers every query with one fixed
//! A record appended and does no DNS work, but it receives and sends raw frames through an
//! AF_XDP socket (copy mode, generic XDP on the interface) instead of a UDP socket.
//!
//! An XDP program (`shardns_server::xdp`) steers UDP datagrams to the given address and
//! port to the socket; everything else goes on to the kernel. The program is attached through
//! a BPF link, so it detaches by itself when this process ends, however it ends. Needs root
//! (CAP_NET_ADMIN + CAP_BPF). `bench/compare.py --servers xdpfloor,floor,knotd` measures it.
//!
//! Usage: `cargo run --release -p shardns-server --example xdp_floor -- 127.0.0.1:5636 [lo]`

use shardns_server::xdp::{self, XdpProgram, Xsk};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

const BATCH: u32 = 64;
const RECORD: [u8; 16] = [
    0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 192, 0, 2, 1, // A 192.0.2.1, TTL 3600
];

/// The fixed answer, written over the query in place: QR and AA set, everything after the
/// question dropped, one A record appended. Returns the reply frame's length.
fn answer(frame: &mut [u8], len: usize) -> Option<usize> {
    let q = xdp::parse(&frame[..len])?;
    let msg = &mut frame[q.offset..];
    let n = q.len;
    let mut end = 12;
    while end < n && msg[end] != 0 {
        end += 1 + msg[end] as usize;
    }
    end += 5;
    if n < 12 || end > n || end + RECORD.len() > msg.len() {
        return None;
    }
    msg[2] |= 0x84; // QR, AA
    msg[6..12].copy_from_slice(&[0, 1, 0, 0, 0, 0]); // ANCOUNT 1, no other records
    msg[end..end + RECORD.len()].copy_from_slice(&RECORD);
    Some(q.reply(frame, end + RECORD.len()))
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr: SocketAddr = args
        .next()
        .unwrap_or_else(|| "127.0.0.1:5636".into())
        .parse()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let iface = args.next().unwrap_or_else(|| "lo".into());
    let ifindex = xdp::ifindex(&iface)?;
    let prog = XdpProgram::attach(ifindex, &[addr], xdp::rx_queues(&iface))?;
    let mut xsk = Xsk::bind(ifindex, 0)?;
    prog.register(0, xsk.as_raw_fd())?;
    eprintln!("xdp_floor: answering UDP to {addr} on {iface} queue 0 (generic XDP, copy mode)");
    let mut pfd = libc::pollfd {
        fd: xsk.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        if !xsk.rx_ready() {
            // Idle: sleep in poll; while replies wait for the kernel, wake up soon to retry.
            let pending = xsk.tx_pending() > 0;
            if pending {
                xsk.kick();
            }
            // SAFETY: one live pollfd, count 1.
            unsafe { libc::poll(&mut pfd, 1, if pending { 1 } else { 1000 }) };
            continue;
        }
        xsk.serve(BATCH, answer);
    }
}
