//! The floor of the kernel's UDP path: a responder that does no DNS work at all.
//!
//! It receives datagrams in batches (blocking `recvmmsg` with `MSG_WAITFORONE`, so not even an
//! epoll call), turns each into a response by setting QR and AA, cutting it after the question
//! and appending one A record
//! that points back at the question name (16 octets, the size of a real answer's record), and
//! sends the batch back with one `sendmmsg`. Whatever queries per CPU-second it reaches is the
//! ceiling for any server that uses the socket API on this machine: `bench/compare.py
//! --servers floor,shardns,knotd` measures how close shardns and the peers come to it.
//!
//! With a second argument, each response is padded to that many octets with a TXT record
//! after the A record, so that the floor answers as much as a server whose replies are that
//! long (a DNSSEC denial is 700 octets and more): the copies in the kernel grow with them.
//!
//! Usage: `cargo run --release -p shardns-server --example udp_floor -- 127.0.0.1:5635 [OCTETS]`

use std::mem::{self, size_of};
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::ptr;

const BATCH: usize = 64;
const SLOT: usize = 2048;
const RECORD: [u8; 16] = [
    0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 192, 0, 2, 1, // A 192.0.2.1, TTL 3600
];

fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:5635".into());
    // The reply's length, at most what a slot holds; 0: the A record alone.
    let reply_size: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
        .min(SLOT);
    let socket = UdpSocket::bind(&addr)?;
    let fd = socket.as_raw_fd();
    let mut bufs = vec![0u8; BATCH * SLOT];
    // SAFETY: sockaddr_storage, iovec and mmsghdr are plain old data; all zeroes is valid.
    let (mut peers, mut iov, mut msgs) = unsafe {
        (
            vec![mem::zeroed::<libc::sockaddr_storage>(); BATCH],
            vec![mem::zeroed::<libc::iovec>(); BATCH],
            vec![mem::zeroed::<libc::mmsghdr>(); BATCH],
        )
    };
    loop {
        for i in 0..BATCH {
            iov[i] = libc::iovec {
                iov_base: bufs.as_mut_ptr().wrapping_add(i * SLOT).cast(),
                iov_len: 512,
            };
            let h = &mut msgs[i].msg_hdr;
            h.msg_name = ptr::addr_of_mut!(peers[i]).cast();
            h.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            h.msg_iov = ptr::addr_of_mut!(iov[i]);
            h.msg_iovlen = 1;
        }
        // SAFETY: every header points at its own live iovec, buffer slot and address, with
        // matching lengths; all stay alive and unaliased for the call.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_WAITFORONE,
                ptr::null_mut(),
            )
        };
        if n <= 0 {
            continue;
        }
        let n = n as usize;
        for i in 0..n {
            let len = msgs[i].msg_len as usize;
            let slot = &mut bufs[i * SLOT..(i + 1) * SLOT];
            // The end of the question (labels, then type and class); EDNS and anything
            // after the question is dropped, so the response is header + question + record.
            let mut end = 12;
            while end < len && slot[end] != 0 {
                end += 1 + slot[end] as usize;
            }
            end += 5;
            if len < 12 || end > len {
                iov[i].iov_len = 0;
                continue;
            }
            slot[2] |= 0x84; // QR, AA
            slot[6..12].copy_from_slice(&[0, 1, 0, 0, 0, 0]); // ANCOUNT 1, no other records
            slot[end..end + RECORD.len()].copy_from_slice(&RECORD);
            end += RECORD.len();
            // Padding: a TXT record of as many 255-octet strings (and a last shorter one) as
            // bring the reply to `reply_size`; its 12 octets of header come off the room.
            if reply_size > end + 13 {
                let rdlen = reply_size - end - 12;
                slot[7] = 2; // ANCOUNT 2
                slot[end..end + 10].copy_from_slice(&[0xc0, 0x0c, 0, 16, 0, 1, 0, 0, 0x0e, 0x10]);
                slot[end + 10..end + 12].copy_from_slice(&(rdlen as u16).to_be_bytes());
                let mut at = end + 12;
                let stop = at + rdlen;
                while at < stop {
                    let n = (stop - at - 1).min(255);
                    slot[at] = n as u8;
                    slot[at + 1..at + 1 + n].fill(b'x');
                    at += 1 + n;
                }
                end = stop;
            }
            iov[i].iov_len = end;
        }
        // SAFETY: as above; the first n headers carry the addresses recvmmsg filled in.
        unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), n as libc::c_uint, 0) };
    }
}
