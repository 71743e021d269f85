//! The `config` target: any text through the server's config parser
//! (`shardns_server::Config::from_toml`, the function `Config::from_file` calls after
//! reading the file).

use shardns_server::{Config, Overrides};
use std::path::Path;

/// Where the fuzzed text claims to come from: errors name it, relative paths hang off it.
const CONFIG_PATH: &str = "/etc/shardns/fuzz.toml";

/// Config text: never panics. A rejected text gets one error line that names the file and
/// a line and column inside the text; an accepted one has the limits the docs promise
/// (every count at least 1, a UDP batch of 1 to 1024), absolute zone and hints paths, ACL
/// prefixes that contain their own address, and parses the same way twice.
///
pub fn config(data: &[u8]) {
    check_config(data);
}

fn check_config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return; // `from_file` reads with `read_to_string`: text is UTF-8 by then
    };
    let path = Path::new(CONFIG_PATH);
    match Config::from_toml(text, path) {
        Err(e) => {
            assert_eq!(e.path, path);
            let shown = e.to_string();
            assert!(shown.starts_with(CONFIG_PATH), "{shown}");
            assert!(!shown.contains('\n'), "a multi-line error: {shown:?}");
            assert!(!e.message.is_empty(), "an empty error message: {shown:?}");
            if let Some((line, col)) = e.position {
                let lines = text.split('\n').count();
                assert!(line >= 1 && line <= lines, "line {line} of {lines}");
                let width = text
                    .split('\n')
                    .nth(line - 1)
                    .map_or(0, |l| l.chars().count());
                assert!(col >= 1 && col <= width + 1, "column {col} of {width}");
            }
        }
        Ok(c) => {
            assert!(!c.listen_addrs().is_empty());
            assert!(c.worker_count() >= 1);
            assert!(c.server.workers.is_none_or(|w| w >= 1));
            let l = &c.limits;
            assert!(l.tcp_connections_per_worker >= 1 && l.tcp_connections >= 1);
            assert!(l.tcp_idle_timeout_ms >= 1);
            assert!((1..=1024).contains(&l.udp_batch));
            assert!(c.resolver.cache_size >= 1);
            for z in &c.zones {
                assert!(z.file.is_absolute(), "zone file {:?} not anchored", z.file);
            }
            if let Some(h) = &c.resolver.root_hints {
                assert!(h.is_absolute(), "root hints {h:?} not anchored");
            }
            for a in &c.resolver.allow {
                assert!(a.contains(a.addr), "{a:?} does not contain its own address");
            }
            let _ = c.control_socket_path();
            let mut again = c.clone();
            again.apply(&Overrides::default());
            assert_eq!(again, c, "applying no overrides changed the config");
            assert_eq!(
                Config::from_toml(text, path).as_ref(),
                Ok(&c),
                "parsed differently twice"
            );
        }
    }
}
