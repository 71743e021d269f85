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
