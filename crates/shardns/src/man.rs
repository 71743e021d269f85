//! `shardns man DIR`: the man pages, made from what the program already says of itself, so
//! they cannot drift from it: shardns(8) and a page per command from the clap definitions
//! that make `--help`, and shardns.toml(5) from the annotated example configuration
//! (docs/shardns.example.toml, which `shardns check` reads in the tests).

use crate::cli::Cli;
use clap::CommandFactory;
use std::fmt::Write as _;
use std::path::Path;

/// The annotated example configuration: every key, commented, with its default.
const EXAMPLE: &str = include_str!("../../../docs/shardns.example.toml");

/// Writes shardns.8, shardns-COMMAND.8 for each visible command, and shardns.toml.5.
pub(crate) fn write_pages(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))
    };
    let cmd = Cli::command().version(env!("CARGO_PKG_VERSION"));
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .section("8")
        .render(&mut page)
        .map_err(|e| e.to_string())?;
    write("shardns.8", &page)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("shardns-{}", sub.get_name());
        let mut page = Vec::new();
        // clap names take 'static strings; a few bytes per page, once, for a man-page run.
        let title: &'static str = Box::leak(name.clone().into_boxed_str());
        clap_mangen::Man::new(sub.clone().name(title))
            .section("8")
            .render(&mut page)
            .map_err(|e| e.to_string())?;
        write(&format!("{name}.8"), &page)?;
    }
    write("shardns.toml.5", config_page(EXAMPLE).as_bytes())
}

/// shardns.toml(5) in roff: each `[section]` of the example a subsection, each key (set or
/// commented out) an entry with the comment lines above it as its text.
fn config_page(example: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        ".TH SHARDNS.TOML 5 \"\" \"shardns {}\" \"File Formats\"",
        env!("CARGO_PKG_VERSION")
    );
    out.push_str(".SH NAME\nshardns.toml \\- configuration file of shardns(8)\n");
    out.push_str(
        ".SH DESCRIPTION\nA TOML file (`shardns serve \\-c FILE`). Every key and section is \
         optional; each entry below shows the key as the annotated example sets it, which is its \
         default unless the text says otherwise. `shardns check \\-c FILE` checks a file. \
         Command-line flags override it (see shardns\\-serve(8)).\n",
    );
    let mut comment: Vec<&str> = Vec::new();
    for line in example.lines() {
        let t = line.trim();
        if t.is_empty() {
            comment.clear();
            continue;
        }
        // A commented-out key (`# key = value`) or table is an entry like a set one.
        let code = t.strip_prefix("# ").filter(|c| is_key(c) || is_table(c));
        match code.or((!t.starts_with('#')).then_some(t)) {
            Some(c) if is_table(c) => {
                let _ = writeln!(out, ".SS \"{}\"", escape(c));
                for l in comment.drain(..) {
                    let _ = writeln!(out, "{}", escape(l));
                }
            }
            Some(c) => {
                // In-line bold: `.B` would take the value's quotes as its own.
                let _ = writeln!(out, ".TP\n\\fB{}\\fR", escape(c));
                let text: Vec<String> = comment.drain(..).map(escape).collect();
                let _ = writeln!(out, "{}", text.join("\n"));
            }
            None => comment.push(t.trim_start_matches('#').trim()),
        }
    }
    out.push_str(".SH SEE ALSO\nshardns(8), shardns\\-serve(8), shardns\\-check(8)\n");
    out
}

fn is_table(s: &str) -> bool {
    s.starts_with('[') && s.ends_with(']')
}

fn is_key(s: &str) -> bool {
    s.split_once(" = ").is_some_and(|(k, _)| {
        !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Text for roff: backslashes doubled, and a line that would start with a control
/// character (`.` or `'`) protected.
fn escape(s: &str) -> String {
    let s = s.replace('\\', "\\\\").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_of_the_example_has_an_entry_with_its_comment() {
        let page = config_page(EXAMPLE);
        for key in [
            "listen",
            "key_directory",
            "tcp_idle_timeout_ms",
            "primary",
            "dnssec",
        ] {
            assert!(
                page.lines()
                    .any(|l| l.starts_with(&format!("\\fB{key} = "))),
                "{key} missing from the page"
            );
        }
        assert!(page.contains(".SS \"[server]\""));
        assert!(page.contains(".SS \"[[zone]]\""));
        // The text above `listen` is its description.
        let at = page.find("\\fBlisten = [\"127.0.0.1").unwrap();
        assert!(page[at..]
            .lines()
            .nth(1)
            .unwrap()
            .contains("Addresses to serve"));
    }
}
