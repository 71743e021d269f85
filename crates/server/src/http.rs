//! http -- a minimal HTTP/1.0 responder for Prometheus scrapes (`GET /metrics`).
//!
//! One thread, one request per connection, bounded reads with timeouts. Off unless
//! `[stats] http` (or `--stats-http`) is set. Never touches a worker.

use crate::stats::render_prometheus;
use crate::Shared;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use tracing::debug;

/// Serves scrapes until shutdown.
pub(crate) fn serve(listener: TcpListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.shutdown.load(Relaxed) {
            return;
        }
        let Ok(stream) = stream else { continue };
        if let Err(e) = handle(stream, &shared) {
            debug!("stats http: {e}");
        }
    }
}

fn handle(mut stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut buf = [0u8; 4096];
    let mut len = 0;
    // Read the request head (we need only its first line).
    while len < buf.len()
        && !buf[..len].windows(4).any(|w| w == b"\r\n\r\n")
        && !buf[..len].windows(2).any(|w| w == b"\n\n")
    {
        match stream.read(&mut buf[len..])? {
            0 => break,
            n => len += n,
        }
    }
    let head = String::from_utf8_lossy(&buf[..len]);
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (status, body) = match (method, target) {
        ("GET", "/metrics" | "/") => (
            "200 OK",
            render_prometheus(
                &shared.worker_stats(),
                &shared.control,
                shared.started.elapsed().as_secs_f64(),
            ),
        ),
        ("GET", _) => ("404 Not Found", "not found; try /metrics\n".to_string()),
        _ => ("405 Method Not Allowed", "only GET\n".to_string()),
    };
    let head = format!(
        "HTTP/1.0 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    Ok(())
}
