//! `shardns`: reads the command line and config, calls the server runtime, prints
//! `shardns: <error>` and picks the exit status (0 success, 1 error, 2 usage).
#![deny(unsafe_code)]

mod cli;
mod man;
mod offline;
mod tools;

use clap::Parser;
use cli::{Cli, Command, ControlArgs, KeyCommand, ServeArgs, SignArgs, ZoneAction};
use shardns_server::{logging, EmbeddedZone};
use std::ffi::OsString;
use std::process::ExitCode;
use tools::Rollover;

/// The zone served when none is configured.
const EXAMPLE_ZONE: EmbeddedZone = EmbeddedZone {
    name: "example.test.",
    label: "<embedded>/example.test.zone",
    text: include_str!("../data/example.test.zone"),
};

/// The IANA root hints, used by the resolver role when no --root-hints file is given.
const ROOT_HINTS: &str = include_str!("../data/root.hints");

fn main() -> ExitCode {
    // `shardns bench ...` belongs to the benchmark's own parser, flags and all.
    let args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "bench") {
        return bench(args.into_iter().skip(2).collect());
    }
    let cli = Cli::parse();
    let result = match cli.command {
        None => serve(&ServeArgs::default()),
        Some(Command::Serve(a)) => serve(&a),
        Some(Command::Check(a)) => check(&a),
        Some(Command::Reload { control, zones }) => {
            // Zone names go on the command line as they were given; the server parses them.
            let line = std::iter::once("reload".to_string())
                .chain(zones)
                .collect::<Vec<_>>();
            control_command(&control, &line.join(" "))
        }
        Some(Command::Stats(a)) => control_command(&a, "stats"),
        Some(Command::Key(KeyCommand::List(a))) => zone_name(&a.zone)
            .and_then(|z| tools::key_list(&z, &a.key_dir))
            .map(|text| print!("{text}")),
        Some(Command::Key(KeyCommand::Ds(a))) => zone_name(&a.zone)
            .and_then(|z| tools::key_ds(&z, &a.key_dir))
            .map(|text| print!("{text}")),
        Some(Command::Key(KeyCommand::Rollover(a))) => zone_name(&a.key.zone)
            .and_then(|z| match (a.zsk, a.confirm) {
                (true, _) => tools::key_rollover(&z, &a.key.key_dir, Rollover::Zsk),
                (false, false) => tools::key_rollover(&z, &a.key.key_dir, Rollover::Ksk),
                (false, true) => tools::key_submitted(&z, &a.key.key_dir, None),
            })
            .map(|text| print!("{text}")),
        Some(Command::Key(KeyCommand::Submitted(a))) => zone_name(&a.key.zone)
            .and_then(|z| tools::key_submitted(&z, &a.key.key_dir, a.tag))
            .map(|text| print!("{text}")),
        Some(Command::Key(KeyCommand::Pregenerate(a))) => {
            offline::pregenerate(&a).map(|t| print!("{t}"))
        }
        Some(Command::Key(KeyCommand::Ksr(a))) => offline::ksr(&a).map(|t| print!("{t}")),
        Some(Command::Key(KeyCommand::SignKsr(a))) => offline::sign_ksr(&a).map(|t| print!("{t}")),
        Some(Command::Key(KeyCommand::ImportSkr(a))) => {
            offline::import_skr(&a).map(|t| print!("{t}"))
        }
        Some(Command::Sign(a)) => sign(&a),
        Some(Command::Man { dir }) => man::write_pages(&dir),
        Some(Command::Zone { action }) => {
            let (word, control, zones) = match action {
                ZoneAction::Status { control, zones } => ("status", control, zones),
                ZoneAction::Refresh { control, zones } => ("refresh", control, zones),
                ZoneAction::Retransfer { control, zones } => ("retransfer", control, zones),
                ZoneAction::Notify { control, zones } => ("notify", control, zones),
                ZoneAction::Flush { control, zones } => ("flush", control, zones),
                ZoneAction::Begin(t) => ("begin", t.control, vec![t.zone]),
                ZoneAction::Diff(t) => ("diff", t.control, vec![t.zone]),
                ZoneAction::Commit(t) => ("commit", t.control, vec![t.zone]),
                ZoneAction::Abort(t) => ("abort", t.control, vec![t.zone]),
                ZoneAction::Set(r) => ("set", r.control, record_words(r.zone, r.owner, r.record)),
                ZoneAction::Unset(r) => {
                    ("unset", r.control, record_words(r.zone, r.owner, r.record))
                }
            };
            if zones.iter().any(|w| w.contains(['\n', '\r'])) {
                say(format_args!(
                    "shardns: a line break in an argument (one record at a time)"
                ));
                return ExitCode::from(2);
            }
            let line = ["zone".to_string(), word.to_string()]
                .into_iter()
                .chain(zones)
                .collect::<Vec<_>>();
            control_command(&control, &line.join(" "))
        }
        Some(Command::Bench { args }) => return bench(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            say(format_args!("shardns: {e}"));
            ExitCode::from(1)
        }
    }
}

/// One line to stderr; a stderr that cannot take it (a full disk, a closed pipe) is ignored,
/// where `eprintln!` would panic and turn an error exit into a crash.
fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// `shardns bench ...` runs the benchmark lab, which is a separate binary, `shardns-bench`, so
/// that the server does not link the load generator and its plotting stack (plotters, png and
/// an embedded font). The lab replaces this process (exec: same PID, so CPU accounting of the
/// `shardns bench` process and its exit status work as before) and is looked for in
/// `$SHARDNS_BENCH`, then beside this binary (where cargo builds and installs it), then on
/// PATH.
fn bench(rest: Vec<OsString>) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let beside = std::env::current_exe()
        .ok()
        .map(|exe| exe.with_file_name("shardns-bench"))
        .filter(|p| p.is_file());
    let program: OsString = std::env::var_os("SHARDNS_BENCH")
        .or_else(|| beside.map(Into::into))
        .unwrap_or_else(|| "shardns-bench".into());
    // argv[0] "shardns bench": the lab's usage and errors name the command that was typed.
    let err = std::process::Command::new(&program)
        .arg0("shardns bench")
        .args(rest)
        .exec();
    say(format_args!(
        "shardns bench: cannot run {} ({err}); it is the lab's own binary, built by \
         `cargo build --release -p shardns-bench` beside shardns (or set SHARDNS_BENCH)",
        std::path::Path::new(&program).display()
    ));
    ExitCode::from(1)
}

fn serve(args: &ServeArgs) -> Result<(), String> {
    let setup = args.setup(EXAMPLE_ZONE).with_root_hints(ROOT_HINTS);
    let config = setup.config().map_err(|e| e.to_string())?;
    logging::init(&logging::filter_for(&setup.overrides, Some(&config)))?;
    shardns_server::run(setup).map_err(|e| e.to_string())
}

fn check(args: &ServeArgs) -> Result<(), String> {
    let setup = args.setup(EXAMPLE_ZONE).with_root_hints(ROOT_HINTS);
    let (zones, warnings) = shardns_server::check(&setup).map_err(|e| e.to_string())?;
    for w in &warnings {
        say(format_args!("shardns: warning: {w}"));
    }
    println!("ok: configuration and {zones} zones load");
    Ok(())
}

fn zone_name(s: &str) -> Result<shardns_server::Name, String> {
    s.parse().map_err(|e| format!("zone {s:?}: {e}"))
}

fn sign(a: &SignArgs) -> Result<(), String> {
    let zone = zone_name(&a.zone)?;
    let mut opts = tools::SignOptions::new(a.key_dir.clone());
    opts.algorithm = shardns_server::SignAlgorithm::from_mnemonic(&a.algorithm)
        .filter(|a| a.can_generate())
        .ok_or_else(|| {
            format!(
                "--algorithm {:?}: expected ecdsap256sha256, ecdsap384sha384, ed25519, rsasha256 or rsasha512",
                a.algorithm
            )
        })?;
    opts.nsec3 = a.nsec3;
    opts.opt_out = a.nsec3_opt_out;
    opts.validity = shardns_server::parse_duration(&a.signature_validity)
        .map_err(|e| format!("--signature-validity: {e}"))?;
    opts.threads = a.threads;
    opts.ignore_updates = a.ignore_updates;
    let s = tools::sign_file(&zone, &a.file, &a.output, &opts)?;
    if let Some(line) = &s.updates {
        println!("{zone}: {line}");
    }
    println!(
        "signed {zone}: {} records, serial {}, written to {} (read {:.2} s, signed {:.2} s, written {:.2} s)",
        s.records,
        s.serial,
        a.output.display(),
        s.seconds[0],
        s.seconds[1],
        s.seconds[2]
    );
    Ok(())
}

/// `ZONE OWNER RECORD...` as the words of a control line (the server reads the record's
/// words as a zone file's, so quotes given on the command line reach it).
fn record_words(zone: String, owner: String, record: Vec<String>) -> Vec<String> {
    [zone, owner].into_iter().chain(record).collect()
}

fn control_command(args: &ControlArgs, command: &str) -> Result<(), String> {
    let config = args.setup().config().map_err(|e| e.to_string())?;
    let path = config.control_socket_path();
    let (ok, text) = shardns_server::request(&path, command).map_err(|e| e.to_string())?;
    print!("{text}");
    if ok {
        Ok(())
    } else {
        Err(format!("{command} failed"))
    }
}
