//! The Ethernet, IPv4/IPv6 and UDP headers of the frames an AF_XDP socket hands us: find the
//! UDP payload of a query frame, and turn that frame into the reply frame in place (swap the
//! addresses and ports, fix the lengths and checksums). Sans-I/O; no `unsafe`.
//!
//! Only the shapes the XDP program redirects are accepted: IPv4 without options and not a
//! fragment, IPv6 whose next header is UDP. Everything else stays on the kernel's path.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Ethernet header: two MAC addresses and the EtherType.
const ETH: usize = 14;
const IPV4: usize = 20;
const IPV6: usize = 40;
const UDP: usize = 8;
const ETHERTYPE_IPV4: [u8; 2] = [0x08, 0x00];
const ETHERTYPE_IPV6: [u8; 2] = [0x86, 0xdd];
const PROTO_UDP: u8 = 17;
/// Hop limit of our replies (the kernel's default TTL).
const TTL: u8 = 64;

/// Where the UDP payload of a query frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Udp {
    /// IPv6 (else IPv4).
    pub v6: bool,
    /// Offset of the payload in the frame (after the UDP header).
    pub offset: usize,
    /// Payload length, from the UDP header, checked against the frame and the IP length.
    pub len: usize,
}

fn be16(b: &[u8], at: usize) -> usize {
    usize::from(u16::from_be_bytes([b[at], b[at + 1]]))
}

fn put16(b: &mut [u8], at: usize, v: usize) {
    b[at..at + 2].copy_from_slice(&(v as u16).to_be_bytes());
}

/// The ones'-complement sum of `data` as 16-bit big-endian words, added to `sum`, not folded.
fn sum16(mut sum: u32, data: &[u8]) -> u32 {
    let mut pairs = data.chunks_exact(2);
    for p in &mut pairs {
        sum += u32::from(u16::from_be_bytes([p[0], p[1]]));
    }
    if let [last] = pairs.remainder() {
        sum += u32::from(*last) << 8;
    }
    sum
}

fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Finds the UDP payload of an Ethernet frame, or `None` for anything that is not a
/// well-formed IPv4 (no options, not fragmented, valid header checksum) or IPv6 (UDP as the
/// next header) UDP datagram. The UDP checksum is not verified: on loopback the sender leaves
/// it partial, and the kernel's own UDP path trusts the device the same way.
pub fn parse(frame: &[u8]) -> Option<Udp> {
    if frame.len() < ETH + IPV4 + UDP {
        return None;
    }
    let (ip_end, ip_payload, v6) = match [frame[12], frame[13]] {
        ETHERTYPE_IPV4 => {
            let ip = &frame[ETH..ETH + IPV4];
            // Version 4, header length 5 words; no fragment offset, no more-fragments bit.
            if ip[0] != 0x45 || ip[9] != PROTO_UDP || be16(ip, 6) & 0x3fff != 0 {
                return None;
            }
            if fold(sum16(0, ip)) != 0xffff {
                return None;
            }
            let total = be16(ip, 2);
            if total < IPV4 + UDP || ETH + total > frame.len() {
                return None;
            }
            (ETH + IPV4, total - IPV4, false)
        }
        ETHERTYPE_IPV6 => {
            if frame.len() < ETH + IPV6 + UDP {
                return None;
            }
            let ip = &frame[ETH..ETH + IPV6];
            if ip[0] >> 4 != 6 || ip[6] != PROTO_UDP {
                return None;
            }
            let payload = be16(ip, 4);
            if payload < UDP || ETH + IPV6 + payload > frame.len() {
                return None;
            }
            (ETH + IPV6, payload, true)
        }
        _ => return None,
    };
    let udp_len = be16(frame, ip_end + 4);
    if udp_len < UDP || udp_len > ip_payload {
        return None;
    }
    Some(Udp {
        v6,
        offset: ip_end + UDP,
        len: udp_len - UDP,
    })
}

impl Udp {
    /// The query's source: where the reply goes.
    pub fn peer(&self, frame: &[u8]) -> SocketAddr {
        let port = be16(frame, self.offset - UDP) as u16;
        SocketAddr::new(self.addr(frame, 0), port)
    }

    /// The query's destination: the address and port the client asked.
    pub fn local(&self, frame: &[u8]) -> SocketAddr {
        let port = be16(frame, self.offset - UDP + 2) as u16;
        SocketAddr::new(self.addr(frame, 1), port)
    }

    /// Source (`which` 0) or destination (1) address of the IP header.
    fn addr(&self, frame: &[u8], which: usize) -> IpAddr {
        if self.v6 {
            let at = ETH + 8 + 16 * which;
            let mut a = [0u8; 16];
            a.copy_from_slice(&frame[at..at + 16]);
            IpAddr::V6(Ipv6Addr::from(a))
        } else {
            let at = ETH + 12 + 4 * which;
            IpAddr::V4(Ipv4Addr::new(
                frame[at],
                frame[at + 1],
                frame[at + 2],
                frame[at + 3],
            ))
        }
    }

    /// Turns the query frame into the reply frame in place, once the reply's `payload_len`
    /// octets are written at `self.offset`: swaps the MAC addresses, IP addresses and ports,
    /// sets the lengths and the hop limit, computes the IPv4 header checksum and, for IPv6
    /// (where it is mandatory), the UDP checksum. Returns the frame's length.
    /// Panics if the frame is shorter than `self.offset + payload_len`.
    pub fn reply(&self, frame: &mut [u8], payload_len: usize) -> usize {
        let end = self.offset + payload_len;
        let frame = &mut frame[..end];
        let (mac_dst, mac_src) = frame[..12].split_at_mut(6);
        mac_dst.swap_with_slice(mac_src);
        let udp = self.offset - UDP;
        let udp_len = UDP + payload_len;
        {
            let (src, dst) = frame[udp..udp + 4].split_at_mut(2);
            src.swap_with_slice(dst);
        }
        put16(frame, udp + 4, udp_len);
        put16(frame, udp + 6, 0);
        if self.v6 {
            let ip = &mut frame[ETH..ETH + IPV6];
            put16(ip, 4, udp_len);
            ip[7] = TTL;
            let (src, dst) = ip[8..40].split_at_mut(16);
            src.swap_with_slice(dst);
            // Pseudo-header: both addresses, the UDP length and the next header.
            let mut sum = sum16(0, &frame[ETH + 8..ETH + IPV6]);
            sum += udp_len as u32 + u32::from(PROTO_UDP);
            let csum = !fold(sum16(sum, &frame[udp..end]));
            // An all-zero UDP checksum means "none", which IPv6 forbids: send its other form.
            put16(
                frame,
                udp + 6,
                usize::from(if csum == 0 { 0xffff } else { csum }),
            );
        } else {
            let ip = &mut frame[ETH..ETH + IPV4];
            put16(ip, 2, IPV4 + udp_len);
            put16(ip, 6, 0x4000); // don't fragment, offset 0
            ip[8] = TTL;
            put16(ip, 10, 0);
            let (src, dst) = ip[12..20].split_at_mut(4);
            src.swap_with_slice(dst);
            let csum = !fold(sum16(0, ip));
            put16(ip, 10, usize::from(csum));
            // UDP checksum 0: none, allowed over IPv4.
        }
        end
    }
}

/// Frames for the tests of this module and of the XDP program.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    pub(crate) const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 0xa];
    pub(crate) const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 0xb];

    /// A frame as a kernel would send it: `src` → `dst`, `payload` after the UDP header.
    pub(crate) fn udp_frame(src: SocketAddr, dst: SocketAddr, payload: &[u8]) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&MAC_B); // destination
        f.extend_from_slice(&MAC_A); // source
        let udp_len = UDP + payload.len();
        match (src.ip(), dst.ip()) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                f.extend_from_slice(&ETHERTYPE_IPV4);
                let mut ip = [0u8; IPV4];
                ip[0] = 0x45;
                ip[2..4].copy_from_slice(&((IPV4 + udp_len) as u16).to_be_bytes());
                ip[4..6].copy_from_slice(&[0x12, 0x34]);
                ip[8] = 1;
                ip[9] = PROTO_UDP;
                ip[12..16].copy_from_slice(&s.octets());
                ip[16..20].copy_from_slice(&d.octets());
                let c = !fold(sum16(0, &ip));
                ip[10..12].copy_from_slice(&c.to_be_bytes());
                f.extend_from_slice(&ip);
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                f.extend_from_slice(&ETHERTYPE_IPV6);
                let mut ip = [0u8; IPV6];
                ip[0] = 0x60;
                ip[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
                ip[6] = PROTO_UDP;
                ip[7] = 1;
                ip[8..24].copy_from_slice(&s.octets());
                ip[24..40].copy_from_slice(&d.octets());
                f.extend_from_slice(&ip);
            }
            _ => unreachable!("one family"),
        }
        f.extend_from_slice(&src.port().to_be_bytes());
        f.extend_from_slice(&dst.port().to_be_bytes());
        f.extend_from_slice(&(udp_len as u16).to_be_bytes());
        f.extend_from_slice(&[0xab, 0xcd]); // a partial checksum, as loopback leaves it
        f.extend_from_slice(payload);
        f
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::{udp_frame as frame, MAC_A, MAC_B};
    use super::*;

    /// Checks a reply frame the way a receiver would: IPv4 header checksum, IPv6 UDP
    /// checksum over the pseudo-header, the lengths.
    fn check_reply(f: &[u8], v6: bool, payload_len: usize) {
        if v6 {
            assert_eq!(be16(f, ETH + 4), UDP + payload_len);
            assert_eq!(f[ETH + 7], TTL);
            let udp = &f[ETH + IPV6..];
            let mut sum = sum16(0, &f[ETH + 8..ETH + IPV6]);
            sum += udp.len() as u32 + u32::from(PROTO_UDP);
            assert_eq!(fold(sum16(sum, udp)), 0xffff, "UDP checksum");
            assert_ne!(be16(udp, 6), 0);
        } else {
            assert_eq!(fold(sum16(0, &f[ETH..ETH + IPV4])), 0xffff, "IPv4 checksum");
            assert_eq!(be16(f, ETH + 2), IPV4 + UDP + payload_len);
            assert_eq!(f[ETH + 8], TTL);
            assert_eq!(be16(f, ETH + IPV4 + 6), 0);
        }
        assert_eq!(
            f.len(),
            ETH + if v6 { IPV6 } else { IPV4 } + UDP + payload_len
        );
    }

    fn roundtrip(client: &str, server: &str) {
        let (c, s): (SocketAddr, SocketAddr) = (client.parse().unwrap(), server.parse().unwrap());
        let query = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03www\x00\x00\x01\x00\x01";
        let mut f = frame(c, s, query);
        let q = parse(&f).expect("a query frame");
        assert_eq!(q.v6, c.is_ipv6());
        assert_eq!(&f[q.offset..q.offset + q.len], query);
        assert_eq!(q.peer(&f), c);
        assert_eq!(q.local(&f), s);
        // A longer (and odd-length) reply written in place, as a responder would.
        let reply = b"\x12\x34\x81\x80 a longer answer of odd length";
        f.resize(q.offset + reply.len(), 0);
        f[q.offset..].copy_from_slice(reply);
        let n = q.reply(&mut f, reply.len());
        assert_eq!(n, f.len());
        check_reply(&f, q.v6, reply.len());
        assert_eq!(&f[..6], &MAC_A);
        assert_eq!(&f[6..12], &MAC_B);
        // The reply parses as a datagram from the server to the client with the payload.
        let r = parse(&f).expect("the reply parses");
        assert_eq!((r.peer(&f), r.local(&f)), (s, c));
        assert_eq!(&f[r.offset..r.offset + r.len], reply);
    }

    #[test]
    fn ipv4_query_becomes_reply() {
        roundtrip("127.0.0.1:40000", "127.0.0.1:5636");
        roundtrip("192.0.2.200:53", "198.51.100.255:53000");
    }

    #[test]
    fn ipv6_query_becomes_reply() {
        roundtrip("[::1]:40000", "[::1]:5636");
        roundtrip("[2001:db8::ffff:1]:65535", "[fe80::1]:53");
    }

    #[test]
    fn ipv6_checksum_zero_is_sent_as_ffff() {
        // Search for a payload whose checksum comes out as zero; check it is sent as 0xffff.
        let c: SocketAddr = "[::1]:1000".parse().unwrap();
        let s: SocketAddr = "[::1]:53".parse().unwrap();
        let mut found = false;
        for x in 0..=u16::MAX {
            let mut f = frame(c, s, &[0, 0]);
            let q = parse(&f).unwrap();
            f[q.offset..q.offset + 2].copy_from_slice(&x.to_be_bytes());
            q.reply(&mut f, 2);
            let csum = be16(&f, q.offset - 2);
            assert_ne!(csum, 0);
            if csum == 0xffff {
                found = true;
                check_reply(&f, true, 2);
                break;
            }
        }
        assert!(found);
    }

    #[test]
    fn rejects_what_the_kernel_should_handle() {
        let c: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let s: SocketAddr = "127.0.0.1:53".parse().unwrap();
        let good = frame(c, s, b"hello world!");
        assert!(parse(&good).is_some());
        let mut bad = good.clone();
        bad[12..14].copy_from_slice(&[0x08, 0x06]); // ARP
        assert_eq!(parse(&bad), None);
        let mut bad = good.clone();
        bad[ETH] = 0x46; // IP options
        assert_eq!(parse(&bad), None);
        let mut bad = good.clone();
        bad[ETH + 9] = 6; // TCP
        assert_eq!(parse(&bad), None);
        let mut bad = good.clone();
        bad[ETH + 6] = 0x20; // more fragments
        assert_eq!(parse(&bad), None);
        let mut bad = good.clone();
        bad[ETH + 10] ^= 1; // header checksum
        assert_eq!(parse(&bad), None);
        let mut bad = good.clone();
        put16(&mut bad, ETH + IPV4 + 4, 100); // UDP length past the IP datagram
        assert_eq!(parse(&bad), None);
        let mut bad = good.clone();
        put16(&mut bad, ETH + IPV4 + 4, 7); // UDP length below its header
        assert_eq!(parse(&bad), None);
        assert_eq!(
            parse(&good[..good.len() - 1]),
            None,
            "IP length past the frame"
        );
        assert_eq!(parse(&good[..ETH + IPV4 + 4]), None, "cut inside UDP");
        // Ethernet padding after the datagram is allowed and ignored.
        let mut padded = good.clone();
        padded.extend_from_slice(&[0; 8]);
        assert_eq!(parse(&padded), parse(&good));

        let c6: SocketAddr = "[::1]:40000".parse().unwrap();
        let s6: SocketAddr = "[::1]:53".parse().unwrap();
        let good = frame(c6, s6, b"hi");
        assert!(parse(&good).is_some());
        let mut bad = good.clone();
        bad[ETH + 6] = 0; // hop-by-hop options header first
        assert_eq!(parse(&bad), None);
        assert_eq!(parse(&good[..good.len() - 1]), None);
    }
}
