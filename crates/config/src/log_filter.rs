//! log_filter -- the syntax of a log filter (`info`, `warn,shardns::query=info`...):
//! parsed for the server's logging, checked for `[log] level`.

use tracing_subscriber::EnvFilter;

/// Checks that `filter` is a valid filter (`info`, `warn,shardns::query=info`...).
pub fn check_filter(filter: &str) -> Result<(), String> {
    parse_filter(filter).map(drop)
}

/// Parses a filter, each comma-separated directive trimmed first. tracing-subscriber 0.3
/// scans a directive trimmed but slices the untrimmed text at the offsets it found: with a
/// space after a comma, `warn, shardns::query=info` was refused ("error parsing level
/// filter"), and a space before a non-ASCII character panicked (`"\tÚ[=0"` as `[log]
/// level` stopped `shardns serve` and `check` with a panic; found by the `config` fuzz
/// target).
pub fn parse_filter(filter: &str) -> Result<EnvFilter, String> {
    let trimmed: Vec<&str> = filter.split(',').map(str::trim).collect();
    EnvFilter::try_new(trimmed.join(",")).map_err(|e| format!("bad log filter {filter:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaces_around_directives_do_not_change_or_break_them() {
        let spaced = parse_filter(" warn , shardns::query=info ")
            .unwrap()
            .to_string();
        let plain = parse_filter("warn,shardns::query=info")
            .unwrap()
            .to_string();
        assert_eq!(spaced, plain);
        assert!(plain.contains("shardns::query=info"), "{plain}");
        // These panicked inside tracing-subscriber before the directives were trimmed.
        for f in ["\t\u{da}[=0x", " \u{e9}=info", "info,\t\u{1f600}[x]=debug"] {
            let _ = check_filter(f);
        }
        assert!(check_filter("shardns=[{").is_err());
    }
}
