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

/// Asks Cargo to run this script again when `path` changes, if it exists.
fn watch(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

fn main() {
    println!("cargo:rerun-if-env-changed=SHARDNS_COMMIT");
    let commit = match std::env::var("SHARDNS_COMMIT") {
        Ok(c) if !c.is_empty() => c,
        _ => {
            // Build again when HEAD moves: HEAD itself, its reflog (appended to whenever
            // HEAD moves, a commit to its branch included, even while the branch is only in
            // packed-refs), the branch's own file and packed refs. Only paths that exist:
            // Cargo runs a script again on every build while a path it watches is missing (a
            // fresh clone may have no packed-refs), and a folder would change with any
            // other branch.
            if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
                watch(&Path::new(&dir).join("HEAD"));
                watch(&Path::new(&dir).join("logs/HEAD"));
            }
            if let (Some(common), Some(head)) = (
                git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]),
                git(&["rev-parse", "--symbolic-full-name", "HEAD"]),
            ) {
                let common = Path::new(&common);
                // A detached HEAD names no branch ("HEAD"): HEAD's own file says it all.
                if head.starts_with("refs/") {
                    watch(&common.join(&head));
                }
                watch(&common.join("packed-refs"));
            }
            git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into())
        }
    };
    println!("cargo:rustc-env=SHARDNS_COMMIT={commit}");
}
