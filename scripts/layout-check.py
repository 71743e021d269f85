#!/usr/bin/env python3
"""The layout rules of CONTRIBUTING.md, checked: no import circle between the modules of a
crate, no non-test source file over 600 lines, no function over 150 lines.

Reads every `crates/*/src/**/*.rs`. Test code does not count: files that are test modules
(`tests.rs`, files under a `tests/` folder, modules declared behind `#[cfg(test)]`) and
inline `#[cfg(test)] mod ... { }` blocks.

A module is a crate's top-level module (`src/dispatch.rs`, `src/secondary/` and all under
it); an edge A -> B is a path `crate::B` (or `super::B` that resolves to it) written in A's
non-test code. A circle is a strongly connected set of two or more modules.

What is wrong today and not yet fixed is listed in scripts/layout-allow.txt: a listed
violation is reported but does not fail; one not listed fails, and so does a listed one that
is gone (take it off the list, so that the list only shrinks).

    scripts/layout-check.py            # check; exit 1 on a failure
    scripts/layout-check.py --list     # print every violation in the list's form
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ALLOW = ROOT / "scripts" / "layout-allow.txt"
MAX_FILE = 600
MAX_FN = 150


def strip_code(text):
    """`text` with comments and the insides of string and char literals blanked (newlines
    kept), so that braces and paths are read from code only."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif (m := re.match(r'b?r(#*)"', text[i:i + 70])) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\x[0-9a-fA-F]{2}|\\.|[^\\'])'", text[i:i + 12])
            if m:
                out.append(" " * m.end())
                i += m.end()
            else:  # a lifetime or label
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(code, open_at):
    """Index just past the `}` matching the `{` at `open_at`."""
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(code)


TEST_MOD = re.compile(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*([;{])")


def test_parts(code):
    """The inline `#[cfg(test)] mod x { }` blocks of `code` as (start, end) spans, and the
    names of the modules declared `#[cfg(test)] mod x;` (their files are tests)."""
    spans, names = [], set()
    for m in TEST_MOD.finditer(code):
        if m.group(2) == ";":
            names.add(m.group(1))
        else:
            spans.append((m.start(), matching_brace(code, m.end() - 1)))
    return spans, names


def blank(code, spans):
    for start, end in spans:
        code = code[:start] + re.sub(r"[^\n]", " ", code[start:end]) + code[end:]
    return code


class Source:
    def __init__(self, crate, src, path):
        self.crate, self.path = crate, path
        rel = path.relative_to(src).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] in ("mod", "lib", "main"):
            parts.pop()
        self.modpath = parts  # e.g. ["secondary", "client"]; [] for the crate root
        # A file `a.rs` beside a folder `a/`: its children live there.
        self.is_dir_module = path.name in ("mod.rs", "lib.rs", "main.rs")
        text = path.read_text()
        self.lines = text.count("\n") + (0 if text.endswith("\n") else 1)
        code = strip_code(text)
        spans, self.test_children = test_parts(code)
        self.code = blank(code, spans)
        self.test_lines = sum(code.count("\n", s, e) for s, e in spans)


def sources():
    """Every crate's non-test source files, by crate."""
    crates = {}
    for src in sorted(ROOT.glob("crates/*/src")):
        crate = src.parent.name
        files = [Source(crate, src, p) for p in sorted(src.rglob("*.rs"))]
        by_mod = {tuple(f.modpath): f for f in files}
        test_mods = set()
        for f in files:
            for child in f.test_children:
                test_mods.add(tuple(f.modpath) + (child,))
        kept = []
        for f in files:
            mp = tuple(f.modpath)
            if f.path.name == "tests.rs" or "tests" in f.path.relative_to(src).parts[:-1]:
                continue
            if any(mp[:k] in test_mods for k in range(1, len(mp) + 1)):
                continue
            kept.append(f)
        crates[crate] = (kept, by_mod)
    return crates


def use_paths(code):
    """Every path written in `code` that starts with `crate::`, `super::` or `self::`, `use`
    groups expanded: lists of segments."""
    paths = []
    for m in re.finditer(r"(?<![\w:])(crate|super|self)\s*::", code):
        paths.extend(tree(code, m.start(), []))
    return paths


def tree(code, j, prefix):
    """The paths of the use tree (or plain path) at `code[j:]`, each after `prefix`."""
    segs = list(prefix)
    while True:
        m = re.match(r"\s*(\w+)\s*", code[j:])
        if not m:
            break
        segs.append(m.group(1))
        j += m.end()
        if code.startswith("::", j):
            j += 2
            k = j + len(code[j:]) - len(code[j:].lstrip())
            if k < len(code) and code[k] == "{":
                end = matching_brace(code, k)
                out = []
                for item in split_group(code[k + 1:end - 1]):
                    if item.strip() in ("", "self", "*"):
                        out.append(list(segs))
                    else:
                        out.extend(tree(item, 0, segs))
                return out
            continue
        break
    return [segs]


def split_group(body):
    items, depth, cur = [], 0, ""
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    return items


def target(f, segs, modules):
    """The deepest module of the crate that the path `segs` written in `f` names."""
    if segs[0] == "crate":
        base, i = [], 1
    else:
        base, i = list(f.modpath), 0
        while i < len(segs) and segs[i] in ("super", "self"):
            base = base[:-1] if segs[i] == "super" else base
            i += 1
    for seg in segs[i:]:
        if tuple(base + [seg]) not in modules:
            break
        base.append(seg)
    return tuple(base)


def circles(files):
    """Import circles between sibling modules, at every level: an edge between two files'
    modules counts between their ancestors just below the modules' common ancestor."""
    modules = {tuple(f.modpath) for f in files}
    graphs = {}  # common ancestor -> {child: {child: example file}}
    for f in files:
        src = tuple(f.modpath)
        for segs in use_paths(f.code):
            dst = target(f, segs, modules)
            k = 0
            while k < min(len(src), len(dst)) and src[k] == dst[k]:
                k += 1
            if k == len(src) or k == len(dst):
                continue  # one holds the other
            a, b = src[: k + 1], dst[: k + 1]
            g = graphs.setdefault(src[:k], {})
            g.setdefault(a, {}).setdefault(b, str(f.path.relative_to(ROOT)))
    out = []
    for parent in sorted(graphs):
        for comp in scc(graphs[parent]):
            names = ["::".join(m) for m in comp]
            why = "; ".join(
                f"{'::'.join(a)} -> {'::'.join(b)} ({graphs[parent][a][b]})"
                for a in comp
                for b in graphs[parent].get(a, {})
                if b in comp
            )
            out.append((names, why))
    return out


def scc(edges):
    """Tarjan's strongly connected components of two or more nodes, each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    nodes = sorted(set(edges) | {w for ws in edges.values() for w in ws})
    for v in nodes:
        if v not in index:
            visit(v)
    return sorted(out)


FN = re.compile(r"(?m)^[ \t]*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"[^\"]*\"\s+)?fn\s+(\w+)")


def long_functions(f):
    out = []
    code = f.code
    for m in FN.finditer(code):
        # The body's `{`: the first brace at depth 0 of parentheses/angles after the name,
        # unless a `;` ends a declaration without a body first.
        j, paren = m.end(), 0
        while j < len(code):
            ch = code[j]
            if ch in "([":
                paren += 1
            elif ch in ")]":
                paren -= 1
            elif paren == 0 and ch in "{;":
                break
            j += 1
        if j >= len(code) or code[j] == ";":
            continue
        end = matching_brace(code, j)
        length = code.count("\n", m.start(), end) + 1
        if length > MAX_FN:
            out.append((m.group(1), length, code.count("\n", 0, m.start()) + 1))
    return out


def violations():
    found = {}
    for crate, (files, _) in sources().items():
        for f in files:
            rel = f.path.relative_to(ROOT)
            lines = f.lines - f.test_lines
            if lines > MAX_FILE:
                found[f"file {rel}"] = f"{lines} lines (limit {MAX_FILE})"
            for name, length, line in long_functions(f):
                found[f"fn {rel}::{name}"] = f"{length} lines at line {line} (limit {MAX_FN})"
        for names, why in circles(files):
            found[f"circle {crate}: {' '.join(names)}"] = why
    return found


def main():
    found = violations()
    if "--list" in sys.argv:
        for key in sorted(found):
            print(key)
        return 0
    allowed = set()
    if ALLOW.exists():
        for line in ALLOW.read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                allowed.add(line)
    new = sorted(k for k in found if k not in allowed)
    gone = sorted(k for k in allowed if k not in found)
    for key in sorted(found):
        tag = "allowed" if key in allowed else "NEW"
        print(f"{tag:8} {key}: {found[key]}")
    for key in gone:
        print(f"GONE     {key}: fixed, take it off {ALLOW.relative_to(ROOT)}")
    counts = {
        kind: sum(1 for k in found if k.startswith(kind + " "))
        for kind in ("file", "fn", "circle")
    }
    print(
        f"layout: {counts['circle']} import circles, {counts['file']} files over {MAX_FILE} "
        f"lines, {counts['fn']} functions over {MAX_FN} lines; "
        f"{len(new)} not allowed, {len(gone)} fixed but still listed"
    )
    return 1 if new or gone else 0


if __name__ == "__main__":
    sys.exit(main())
