#!/usr/bin/env python3
"""Checks the declared MSRV (`rust-version` in the root Cargo.toml) against what we lock.

Fails when:
  - a package of Cargo.lock or fuzz/Cargo.lock that the host target builds (normal, build and
    dev-dependencies alike) declares a `rust-version` above ours;
  - a workspace member does not inherit our `rust-version` (`rust-version.workspace = true`),
    or does not inherit the workspace lints (`[lints] workspace = true`): clippy's
    `incompatible_msrv` lint only sees a crate's own rust-version;
  - fuzz/Cargo.toml (its own workspace) has another rust-version or other lint tables.

What it does not do: build anything with the old compiler. std APIs newer than our
rust-version are clippy's `incompatible_msrv` (denied in [workspace.lints.clippy], run by CI);
language features and Cargo features newer than it are checked by nobody (CONTRIBUTING.md).

Usage: python3 scripts/msrv.py   (from anywhere; needs cargo and Python 3.11+ for tomllib)
"""

import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def version(text):
    """'1.85' or '1.85.0' -> (1, 85, 0)."""
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def show(v):
    return ".".join(str(p) for p in v[:2]) if v[2] == 0 else ".".join(map(str, v))


def host_triple():
    out = subprocess.run(["rustc", "-vV"], check=True, capture_output=True, text=True).stdout
    return next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("host:"))


def metadata(manifest, triple):
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked",
         "--filter-platform", triple, "--manifest-path", str(manifest)],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)


def dependencies(meta):
    """(rust-version, name, version) of every locked package from a registry (our own crates,
    path dependencies of fuzz/, are checked as members of the main workspace)."""
    resolved = {node["id"] for node in meta["resolve"]["nodes"]}
    return [
        (version(p["rust_version"]) if p["rust_version"] else (0, 0, 0), p["name"], p["version"])
        for p in meta["packages"]
        if p["id"] in resolved and p["source"] is not None
    ]


def main():
    errors = []
    root_toml = tomllib.loads((ROOT / "Cargo.toml").read_text())
    ours = version(root_toml["workspace"]["package"]["rust-version"])
    lints = root_toml["workspace"]["lints"]
    triple = host_triple()

    root_meta = metadata(ROOT / "Cargo.toml", triple)
    for p in root_meta["packages"]:
        if p["id"] not in root_meta["workspace_members"]:
            continue
        manifest = Path(p["manifest_path"])
        where = manifest.relative_to(ROOT)
        if p["rust_version"] is None or version(p["rust_version"]) != ours:
            errors.append(f"{where}: rust-version is {p['rust_version']}, not the workspace's "
                          f"{show(ours)} (use rust-version.workspace = true)")
        if tomllib.loads(manifest.read_text()).get("lints") != {"workspace": True}:
            errors.append(f"{where}: needs [lints] workspace = true")

    fuzz_toml = tomllib.loads((ROOT / "fuzz/Cargo.toml").read_text())
    fuzz_rv = fuzz_toml["package"].get("rust-version")
    if fuzz_rv is None or version(fuzz_rv) != ours:
        errors.append(f"fuzz/Cargo.toml: rust-version is {fuzz_rv}, not {show(ours)}")
    if fuzz_toml["workspace"].get("lints") != lints:
        errors.append("fuzz/Cargo.toml: [workspace.lints] differs from the root Cargo.toml's")
    if fuzz_toml.get("lints") != {"workspace": True}:
        errors.append("fuzz/Cargo.toml: needs [lints] workspace = true")

    deps = dependencies(root_meta) + dependencies(metadata(ROOT / "fuzz/Cargo.toml", triple))
    deps = sorted(set(deps), reverse=True)
    for rv, name, ver in deps:
        if rv > ours:
            errors.append(f"{name} {ver} needs Rust {show(rv)}, above our rust-version {show(ours)}")
    top = deps[0][0]
    setters = sorted({f"{n} {v}" for rv, n, v in deps if rv == top})
    print(f"msrv: rust-version {show(ours)}; {len(deps)} locked packages for {triple}; "
          f"the highest declares {show(top)}: {', '.join(setters)}")

    for e in errors:
        print(f"msrv: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
