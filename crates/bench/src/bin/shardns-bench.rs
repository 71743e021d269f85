//! `shardns-bench`: the benchmark lab on its own (`shardns bench` runs the same code).

fn main() {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(first) = args.first_mut() {
        *first = "shardns-bench".into();
    }
    std::process::exit(shardns_bench::run_cli(args));
}
