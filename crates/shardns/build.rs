//! Puts the build's git commit into `shardns --version` (`SHARDNS_COMMIT`): the
//! environment's `SHARDNS_COMMIT` if set (a package built from a tarball), else
//! `git rev-parse` of the source tree, else "unknown" (no git, or not a checkout).

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-env-changed=SHARDNS_COMMIT");
    let commit = match std::env::var("SHARDNS_COMMIT") {
        Ok(c) if !c.is_empty() => c,
        _ => {
            // Build again when HEAD moves: HEAD itself, the branch it names, packed refs.
            if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
                println!("cargo:rerun-if-changed={dir}/HEAD");
            }
            if let (Some(common), Some(head)) = (
                git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]),
                git(&["rev-parse", "--symbolic-full-name", "HEAD"]),
            ) {
                let reference = Path::new(&common).join(&head);
                if reference.exists() {
                    println!("cargo:rerun-if-changed={}", reference.display());
                }
                println!("cargo:rerun-if-changed={common}/packed-refs");
            }
            git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into())
        }
    };
    println!("cargo:rustc-env=SHARDNS_COMMIT={commit}");
}
