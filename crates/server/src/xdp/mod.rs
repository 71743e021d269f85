//! Kernel bypass for UDP queries with AF_XDP: the plumbing shared by the server's XDP mode
//! and `examples/xdp_floor.rs`.
//!
//! - `bpf`: the XDP program (raw BPF instructions), its XSKMAP, and the BPF link that
//!   attaches it to an interface in generic (SKB) mode and detaches it when closed.
//! - `ring`: one AF_XDP socket in copy mode, its UMEM and rings; frames are answered in place.
//! - `frame`: Ethernet/IP/UDP headers of a query frame and of its reply (sans-I/O).
//!
//! Needs CAP_NET_ADMIN and CAP_BPF (in practice: root).

mod bpf;
mod frame;
mod ring;

pub use bpf::XdpProgram;
pub use frame::{parse, Udp};
pub use ring::{Xsk, XskStats, FRAME};

use std::ffi::CString;
use std::io;

/// The index of network interface `name`.
pub fn ifindex(name: &str) -> io::Result<u32> {
    let c = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let i = nametoindex(&c);
    if i == 0 {
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no network interface {name:?}"),
        ))
    } else {
        Ok(i)
    }
}

#[allow(unsafe_code)]
fn nametoindex(name: &CString) -> u32 {
    // SAFETY: `name` is a NUL-terminated string that outlives the call.
    unsafe { libc::if_nametoindex(name.as_ptr()) }
}

/// How many receive queues interface `name` has (`/sys/class/net/NAME/queues/rx-*`); 1 when
/// that cannot be read.
pub fn rx_queues(name: &str) -> u32 {
    std::fs::read_dir(format!("/sys/class/net/{name}/queues"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
                .count() as u32
        })
        .unwrap_or(1)
        .max(1)
}

/// The interface of `server.xdp_interface`, unless PROXY protocol proxies are configured:
/// frames answered in place never see their header, so then sockets serve UDP.
pub(crate) fn interface(config: &shardns_config::Config) -> Option<&String> {
    let iface = config.server.xdp_interface.as_ref()?;
    if !config.server.proxy_protocol_from.is_empty() {
        tracing::error!(
            "XDP on {iface} is off, UDP is served by sockets: server.proxy_protocol_from is set \
             (PROXY protocol headers are read on sockets only)"
        );
        return None;
    }
    Some(iface)
}

/// The server's XDP mode: attaches the program for `endpoints` (the UDP sockets' local
/// addresses) to interface `iface` and binds one AF_XDP socket per receive queue, at most
/// `workers`; socket i is for worker i. Keep the program alive while the sockets serve.
pub(crate) fn setup(
    iface: &str,
    endpoints: &[std::net::SocketAddr],
    workers: usize,
) -> io::Result<(XdpProgram, Vec<Xsk>)> {
    let ifindex = ifindex(iface)?;
    check_loopback_sysctls(iface, endpoints)?;
    let queues = rx_queues(iface);
    let prog = XdpProgram::attach(ifindex, endpoints, queues).map_err(|e| {
        let hint = match e.raw_os_error() {
            Some(libc::EPERM) => " (needs CAP_NET_ADMIN and CAP_BPF)",
            Some(libc::EBUSY) | Some(libc::EEXIST) => " (the interface has an XDP program already)",
            _ => "",
        };
        io::Error::new(
            e.kind(),
            format!("attaching the XDP program to {iface}: {e}{hint}"),
        )
    })?;
    let mut sockets = Vec::new();
    for q in 0..queues.min(workers as u32) {
        let xsk = Xsk::bind(ifindex, q).map_err(|e| {
            io::Error::new(e.kind(), format!("AF_XDP socket on {iface} queue {q}: {e}"))
        })?;
        prog.register(q, std::os::fd::AsRawFd::as_raw_fd(&xsk))?;
        sockets.push(xsk);
    }
    Ok((prog, sockets))
}

/// Our replies enter the loopback interface without the route the kernel's own senders
/// attach, so for 127.0.0.0/8 the input path treats them as martians unless lo accepts
/// local-network addresses (`route_localnet`) and local sources (`accept_local`).
fn check_loopback_sysctls(iface: &str, endpoints: &[std::net::SocketAddr]) -> io::Result<()> {
    let loopback_v4 = endpoints.iter().any(
        |a| matches!(a.ip(), std::net::IpAddr::V4(ip) if ip.is_loopback() || ip.is_unspecified()),
    );
    if !loopback_v4 || iface != "lo" {
        return Ok(());
    }
    let off: Vec<String> = ["route_localnet", "accept_local"]
        .iter()
        .map(|k| format!("net.ipv4.conf.{iface}.{k}"))
        .filter(|k| {
            let path = format!("/proc/sys/{}", k.replace('.', "/"));
            std::fs::read_to_string(path).map_or(true, |v| v.trim() != "1")
        })
        .collect();
    if off.is_empty() {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "replies to 127.0.0.0/8 over AF_XDP on {iface} need {} = 1 (sysctl -w)",
                off.join(" and ")
            ),
        ))
    }
}
