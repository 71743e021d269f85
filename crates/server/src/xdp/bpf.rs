//! The XDP program that steers our UDP queries to AF_XDP sockets: assembled here from raw
//! BPF instructions (no compiler, no libbpf), loaded with the `bpf()` system call, and
//! attached to an interface through a BPF link, so that it detaches by itself when the
//! process exits or dies.
//!
//! The program passes every frame to the kernel unchanged (`XDP_PASS`) except IPv4 (no
//! options, not a fragment) and IPv6 UDP datagrams to one of the served addresses and
//! ports; those go to the AF_XDP socket registered in the XSKMAP under the frame's receive
//! queue, or, when that queue has no socket, on to the kernel as well.
#![allow(unsafe_code)]

use std::io;
use std::mem::size_of;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

// bpf(2) commands, map and program types, attach type (include/uapi/linux/bpf.h).
const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
#[cfg(test)]
const BPF_PROG_TEST_RUN: libc::c_long = 10;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;
/// Generic (SKB) mode: works on every device, loopback included.
const XDP_FLAGS_SKB_MODE: u32 = 2;
const BPF_FUNC_REDIRECT_MAP: i32 = 51;
const BPF_PSEUDO_MAP_FD: u8 = 1;

/// XDP verdicts.
#[cfg(test)]
const XDP_DROP: i32 = 1;
const XDP_PASS: i32 = 2;

// Instruction encodings: class | size/op | mode/source.
const LDX_W: u8 = 0x61;
const LDX_H: u8 = 0x69;
const LDX_B: u8 = 0x71;
const LDX_DW: u8 = 0x79;
const LD_IMM64: u8 = 0x18;
const MOV64_X: u8 = 0xbf;
const MOV64_K: u8 = 0xb7;
const ADD64_K: u8 = 0x07;
const AND64_K: u8 = 0x57;
const JA: u8 = 0x05;
const JGT_X: u8 = 0x2d;
const JNE_X: u8 = 0x5d;
const JEQ32_K: u8 = 0x16;
const JNE32_K: u8 = 0x56;
const CALL: u8 = 0x85;
const EXIT: u8 = 0x95;

// xdp_md field offsets.
const MD_DATA: i16 = 0;
const MD_DATA_END: i16 = 4;
const MD_RX_QUEUE: i16 = 16;

/// One BPF instruction, as the kernel reads it (`struct bpf_insn`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Insn {
    code: u8,
    /// dst in the low nibble, src in the high one.
    regs: u8,
    off: i16,
    imm: i32,
}

/// A jump target, resolved when the program is finished.
#[derive(Clone, Copy)]
struct Label(usize);

/// A tiny assembler: instructions plus jumps to labels fixed up at the end.
#[derive(Default)]
struct Asm {
    insns: Vec<Insn>,
    labels: Vec<Option<usize>>,
    fixups: Vec<(usize, Label)>,
}

impl Asm {
    fn op(&mut self, code: u8, dst: u8, src: u8, off: i16, imm: i32) {
        self.insns.push(Insn {
            code,
            regs: dst | (src << 4),
            off,
            imm,
        });
    }
    fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }
    fn bind(&mut self, l: Label) {
        self.labels[l.0] = Some(self.insns.len());
    }
    fn jump(&mut self, code: u8, dst: u8, src: u8, imm: i32, to: Label) {
        self.fixups.push((self.insns.len(), to));
        self.op(code, dst, src, 0, imm);
    }
    fn ld_imm64(&mut self, dst: u8, src: u8, v: u64) {
        self.op(LD_IMM64, dst, src, 0, v as u32 as i32);
        self.op(0, 0, 0, 0, (v >> 32) as u32 as i32);
    }
    fn finish(mut self) -> Vec<Insn> {
        for (at, l) in self.fixups {
            let to = self.labels[l.0].expect("every label is bound");
            self.insns[at].off = (to as isize - at as isize - 1) as i16;
        }
        self.insns
    }
}

/// A 16-bit network-order field as the program's little- or big-endian load sees it.
fn ne16(v: u16) -> i32 {
    i32::from(u16::from_ne_bytes(v.to_be_bytes()))
}

/// The program: frames to `endpoints` (unspecified address: any) → XSKMAP `map_fd`, keyed
/// by receive queue, falling back to `fallback` when the queue has no socket.
fn program(endpoints: &[SocketAddr], map_fd: RawFd, fallback: i32) -> Vec<Insn> {
    let mut a = Asm::default();
    let (pass, redirect, v4, v6) = (a.label(), a.label(), a.label(), a.label());
    a.op(MOV64_X, 6, 1, 0, 0); // r6 = ctx
    a.op(LDX_W, 2, 1, MD_DATA, 0); // r2 = data
    a.op(LDX_W, 3, 1, MD_DATA_END, 0); // r3 = data_end
    a.op(MOV64_X, 4, 2, 0, 0);
    a.op(ADD64_K, 4, 0, 0, 14 + 20 + 8); // Ethernet + IPv4 + UDP
    a.jump(JGT_X, 4, 3, 0, pass);
    a.op(LDX_H, 5, 2, 12, 0); // EtherType
    a.jump(JEQ32_K, 5, 0, ne16(0x0800), v4);
    a.jump(JEQ32_K, 5, 0, ne16(0x86dd), v6);
    a.jump(JA, 0, 0, 0, pass);

    a.bind(v4);
    a.op(LDX_B, 5, 2, 14, 0);
    a.jump(JNE32_K, 5, 0, 0x45, pass); // version 4, no options
    a.op(LDX_B, 5, 2, 14 + 9, 0);
    a.jump(JNE32_K, 5, 0, 17, pass); // UDP
    a.op(LDX_H, 5, 2, 14 + 6, 0);
    a.op(AND64_K, 5, 0, 0, ne16(0x3fff)); // more fragments, fragment offset
    a.jump(JNE32_K, 5, 0, 0, pass);
    a.op(LDX_W, 5, 2, 14 + 16, 0); // destination address
    a.op(LDX_H, 7, 2, 14 + 20 + 2, 0); // destination port
    for ep in endpoints {
        let IpAddr::V4(ip) = ep.ip() else { continue };
        let next = a.label();
        if !ip.is_unspecified() {
            a.jump(JNE32_K, 5, 0, u32::from_ne_bytes(ip.octets()) as i32, next);
        }
        a.jump(JEQ32_K, 7, 0, ne16(ep.port()), redirect);
        a.bind(next);
    }
    a.jump(JA, 0, 0, 0, pass);

    a.bind(v6);
    a.op(MOV64_X, 4, 2, 0, 0);
    a.op(ADD64_K, 4, 0, 0, 14 + 40 + 8); // Ethernet + IPv6 + UDP
    a.jump(JGT_X, 4, 3, 0, pass);
    a.op(LDX_B, 5, 2, 14 + 6, 0);
    a.jump(JNE32_K, 5, 0, 17, pass); // next header UDP
    a.op(LDX_DW, 4, 2, 14 + 24, 0); // destination address, first half
    a.op(LDX_DW, 5, 2, 14 + 32, 0); // second half
    a.op(LDX_H, 7, 2, 14 + 40 + 2, 0); // destination port
    for ep in endpoints {
        let IpAddr::V6(ip) = ep.ip() else { continue };
        let next = a.label();
        if !ip.is_unspecified() {
            let o = ip.octets();
            let (hi, lo) = o.split_at(8);
            a.ld_imm64(8, 0, u64::from_ne_bytes(hi.try_into().expect("8 octets")));
            a.jump(JNE_X, 4, 8, 0, next);
            a.ld_imm64(8, 0, u64::from_ne_bytes(lo.try_into().expect("8 octets")));
            a.jump(JNE_X, 5, 8, 0, next);
        }
        a.jump(JEQ32_K, 7, 0, ne16(ep.port()), redirect);
        a.bind(next);
    }
    a.jump(JA, 0, 0, 0, pass);

    a.bind(redirect);
    a.op(LDX_W, 2, 6, MD_RX_QUEUE, 0); // key: the receive queue
    a.ld_imm64(1, BPF_PSEUDO_MAP_FD, map_fd as u32 as u64);
    a.op(MOV64_K, 3, 0, 0, fallback); // the action when the queue has no socket
    a.op(CALL, 0, 0, 0, BPF_FUNC_REDIRECT_MAP);
    a.op(EXIT, 0, 0, 0, 0);

    a.bind(pass);
    a.op(MOV64_K, 0, 0, 0, XDP_PASS);
    a.op(EXIT, 0, 0, 0, 0);
    a.finish()
}

/// `bpf(cmd, attr, size)`; a new file descriptor for the commands that return one.
fn bpf<T>(cmd: libc::c_long, attr: &mut T) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a live, initialised `repr(C)` value laid out as the kernel's
    // `union bpf_attr` member for `cmd` (fields the kernel does not know stay zero), and its
    // size is passed along; the kernel reads (and for some commands writes) only that much.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            (attr as *mut T).cast::<libc::c_void>(),
            size_of::<T>() as libc::c_uint,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn owned(fd: libc::c_long) -> OwnedFd {
    // SAFETY: `fd` was just returned by bpf() as a new descriptor that nothing else owns.
    unsafe { OwnedFd::from_raw_fd(fd as RawFd) }
}

#[repr(C)]
#[derive(Default)]
struct MapCreate {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
}

#[repr(C)]
#[derive(Default)]
struct MapUpdate {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

#[repr(C)]
#[derive(Default)]
struct ProgLoad {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

#[repr(C)]
#[derive(Default)]
struct LinkCreate {
    prog_fd: u32,
    target_ifindex: u32,
    attach_type: u32,
    flags: u32,
}

#[cfg(test)]
#[repr(C)]
#[derive(Default)]
struct TestRun {
    prog_fd: u32,
    retval: u32,
    data_size_in: u32,
    data_size_out: u32,
    data_in: u64,
    data_out: u64,
    repeat: u32,
    duration: u32,
}

fn name16(s: &str) -> [u8; 16] {
    let mut n = [0u8; 16];
    n[..s.len().min(15)].copy_from_slice(&s.as_bytes()[..s.len().min(15)]);
    n
}

/// An XSKMAP with `entries` slots (one per receive queue).
fn xskmap(entries: u32) -> io::Result<OwnedFd> {
    let mut attr = MapCreate {
        map_type: BPF_MAP_TYPE_XSKMAP,
        key_size: 4,
        value_size: 4,
        max_entries: entries.max(1),
        map_name: name16("shardns_xsk"),
        ..Default::default()
    };
    bpf(BPF_MAP_CREATE, &mut attr).map(owned)
}

/// Loads the program; on a verifier rejection loads it again with the log on and returns
/// the log in the error.
fn load(insns: &[Insn]) -> io::Result<OwnedFd> {
    static LICENSE: &[u8] = b"Dual MIT/GPL\0";
    let mut attr = ProgLoad {
        prog_type: BPF_PROG_TYPE_XDP,
        insn_cnt: insns.len() as u32,
        insns: insns.as_ptr() as u64,
        license: LICENSE.as_ptr() as u64,
        prog_name: name16("shardns_xdp"),
        expected_attach_type: BPF_XDP,
        ..Default::default()
    };
    match bpf(BPF_PROG_LOAD, &mut attr) {
        Ok(fd) => Ok(owned(fd)),
        Err(e)
            if e.raw_os_error() == Some(libc::EACCES) || e.raw_os_error() == Some(libc::EINVAL) =>
        {
            let mut log = vec![0u8; 1 << 16];
            attr.log_level = 1;
            attr.log_size = log.len() as u32;
            attr.log_buf = log.as_mut_ptr() as u64;
            let again = bpf(BPF_PROG_LOAD, &mut attr);
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            match again {
                Ok(fd) => Ok(owned(fd)),
                Err(_) => Err(io::Error::new(
                    e.kind(),
                    format!(
                        "the verifier rejected the XDP program ({e}):\n{}",
                        String::from_utf8_lossy(&log[..end])
                    ),
                )),
            }
        }
        Err(e) => Err(e),
    }
}

/// The loaded and attached program with its XSKMAP. Dropping it closes the link, which
/// detaches the program from the interface; so does the process ending in any way.
#[derive(Debug)]
pub struct XdpProgram {
    map: OwnedFd,
    _prog: OwnedFd,
    _link: OwnedFd,
    ifindex: u32,
}

impl XdpProgram {
    /// Loads the program for `endpoints` (UDP destinations to steer; an unspecified address
    /// matches any) and attaches it in generic (SKB) mode to interface `ifindex`, with an
    /// XSKMAP of `queues` slots. Fails with `EBUSY` if the interface already has an XDP
    /// program, `EPERM` without CAP_BPF and CAP_NET_ADMIN.
    pub fn attach(ifindex: u32, endpoints: &[SocketAddr], queues: u32) -> io::Result<Self> {
        let map = xskmap(queues)?;
        let prog = load(&program(endpoints, map.as_raw_fd(), XDP_PASS))?;
        let mut attr = LinkCreate {
            prog_fd: prog.as_raw_fd() as u32,
            target_ifindex: ifindex,
            attach_type: BPF_XDP,
            flags: XDP_FLAGS_SKB_MODE,
        };
        let link = bpf(BPF_LINK_CREATE, &mut attr).map(owned)?;
        Ok(Self {
            map,
            _prog: prog,
            _link: link,
            ifindex,
        })
    }

    /// The interface the program is attached to.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// Steers the frames of receive queue `queue` to the AF_XDP socket `xsk`.
    pub fn register(&self, queue: u32, xsk: RawFd) -> io::Result<()> {
        let key = queue;
        let value = xsk as u32;
        let mut attr = MapUpdate {
            map_fd: self.map.as_raw_fd() as u32,
            key: &key as *const u32 as u64,
            value: &value as *const u32 as u64,
            ..Default::default()
        };
        bpf(BPF_MAP_UPDATE_ELEM, &mut attr).map(drop)
    }
}

/// Runs the program for `endpoints` once over `frame` with BPF_PROG_TEST_RUN (nothing is
/// attached) and returns its verdict; a frame it would redirect comes back as `XDP_DROP`
/// (its map is empty and the fallback is set to drop), a frame it passes as `XDP_PASS`.
#[cfg(test)]
fn test_run(endpoints: &[SocketAddr], frame: &[u8]) -> io::Result<i32> {
    let map = xskmap(1)?;
    let prog = load(&program(endpoints, map.as_raw_fd(), XDP_DROP))?;
    let mut out = vec![0u8; frame.len() + 256];
    let mut attr = TestRun {
        prog_fd: prog.as_raw_fd() as u32,
        data_size_in: frame.len() as u32,
        data_size_out: out.len() as u32,
        data_in: frame.as_ptr() as u64,
        data_out: out.as_mut_ptr() as u64,
        repeat: 1,
        ..Default::default()
    };
    bpf(BPF_PROG_TEST_RUN, &mut attr)?;
    Ok(attr.retval as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jumps_land_on_their_labels() {
        let eps: Vec<SocketAddr> = vec![
            "127.0.0.1:53".parse().unwrap(),
            "[::1]:53".parse().unwrap(),
            "0.0.0.0:5353".parse().unwrap(),
        ];
        let p = program(&eps, 7, XDP_PASS);
        // Every program ends with `r0 = XDP_PASS; exit`, and every jump stays inside.
        assert_eq!(p[p.len() - 1].code, EXIT);
        assert_eq!(
            (p[p.len() - 2].code, p[p.len() - 2].imm),
            (MOV64_K, XDP_PASS)
        );
        for (i, insn) in p.iter().enumerate() {
            if insn.code & 0x07 == 0x05 || insn.code & 0x07 == 0x06 {
                if insn.code == CALL || insn.code == EXIT {
                    continue;
                }
                let to = i as isize + 1 + insn.off as isize;
                assert!(
                    to > i as isize && (to as usize) < p.len(),
                    "jump {i} → {to}"
                );
            }
        }
        // The map reference carries the map fd.
        assert!(p
            .iter()
            .any(|i| i.code == LD_IMM64 && i.regs == 1 | (BPF_PSEUDO_MAP_FD << 4) && i.imm == 7));
    }

    /// The verdicts of the real program in the kernel (needs CAP_BPF; skipped without it).
    #[test]
    fn kernel_runs_the_filter() {
        use crate::xdp::frame::tests_support::udp_frame;
        let eps: Vec<SocketAddr> = vec![
            "127.0.0.1:5636".parse().unwrap(),
            "[::1]:5636".parse().unwrap(),
        ];
        let client4: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let client6: SocketAddr = "[::1]:40000".parse().unwrap();
        let run = |f: &[u8]| test_run(&eps, f);
        match run(&udp_frame(client4, eps[0], b"q")) {
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                eprintln!("skipped: loading a BPF program needs CAP_BPF ({e})");
                return;
            }
            Err(e) => panic!("{e}"),
            Ok(v) => assert_eq!(v, XDP_DROP, "IPv4 query to the endpoint: redirected"),
        }
        assert_eq!(run(&udp_frame(client6, eps[1], b"q")).unwrap(), XDP_DROP);
        let other4: SocketAddr = "127.0.0.2:5636".parse().unwrap();
        let other6: SocketAddr = "[::2]:5636".parse().unwrap();
        let port4: SocketAddr = "127.0.0.1:5637".parse().unwrap();
        for (c, s) in [(client4, other4), (client6, other6), (client4, port4)] {
            assert_eq!(run(&udp_frame(c, s, b"q")).unwrap(), XDP_PASS, "{s}");
        }
        // A fragment, a TCP segment and a short frame pass.
        let mut frag = udp_frame(client4, eps[0], b"q");
        frag[14 + 6] = 0x20;
        assert_eq!(run(&frag).unwrap(), XDP_PASS);
        let mut tcp = udp_frame(client4, eps[0], b"q");
        tcp[14 + 9] = 6;
        assert_eq!(run(&tcp).unwrap(), XDP_PASS);
        assert_eq!(
            run(&udp_frame(client4, eps[0], b"")[..40]).unwrap(),
            XDP_PASS
        );
        // Any address, when the endpoint is unspecified.
        let any = ["0.0.0.0:5636".parse().unwrap()];
        let v = test_run(&any, &udp_frame(client4, other4, b"q")).unwrap();
        assert_eq!(v, XDP_DROP);
    }
}
