//! `shardns-bench`: the benchmark lab. `shardns bench ...` runs this binary with argv[0]
//! "shardns bench" (the server binary does not link the lab or its plotting stack).

fn main() {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(first) = args.first_mut() {
        if first != "shardns bench" {
            *first = "shardns-bench".into();
        }
    }
    std::process::exit(shardns_bench::run_cli(args));
}
