"""The module graph of a Rust crate, read from its sources: which module uses which.

A module is a file (`lib.rs` is the root, `a.rs` and `a/mod.rs` are `a`, `a/b.rs` is
`a::b`) or an inline `mod name { ... }` inside one. An edge `a -> b` means code in `a` names
an item of `b` by a path: a `use` declaration (`crate::`, `super::`, `self::`, or a child
module's name) or a path written in place (`crate::b::Item`, `super::Item`). Comments,
strings and `#[cfg(test)]` modules are left out, as they are not part of the library.

`edges(src)` returns the set of `(a, b)` pairs, `a != b`, with the root written `""`, and the
paths that name an item of the root itself (`crate::Item` where `Item` is no module), which
reach an item through the crate's table of contents instead of its home.
"""

import os
import re

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip(text):
    """The code of `text` with comments, strings and character literals blanked out."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            out.append(" ")
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not re.match(r"\w", text[i - 1])):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            i = n if end < 0 else end + 1 + len(hashes)
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.[^']*|[^\\'])'", text[i:]):
            i += len(re.match(r"'(\\.[^']*|[^\\'])'", text[i:]).group(0))
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand(tree):
    """The paths of a use tree without white space: `a::{b, c::{d, e}}` -> a::b, a::c::d, a::c::e."""
    tree = tree.strip()
    m = re.match(r"^(.*?)\{(.*)\}$", tree, re.S)
    if not m:
        return [tree]
    prefix, inner = m.group(1), m.group(2)
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(inner):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:k])
            start = k + 1
    parts.append(inner[start:])
    out = []
    for part in parts:
        if part.strip():
            for p in expand(part):
                out.append(prefix + p if p != "self" else prefix.rstrip(":"))
    return out


def modules(src):
    """Each file's module path and stripped text."""
    files, renamed = {}, {}
    # `#[path = "file.rs"] mod name;` in the root: the file is module `name`.
    for root in ("lib.rs", "main.rs"):
        if os.path.exists(os.path.join(src, root)):
            with open(os.path.join(src, root), encoding="utf-8") as f:
                for m in re.finditer(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)', f.read()):
                    renamed[m.group(1)[:-3]] = m.group(2)
    for dirpath, _, names in os.walk(src):
        for name in names:
            if not name.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("lib", "mod", "main"):
                parts = parts[:-1]
            if len(parts) == 1 and parts[0] in renamed:
                parts = [renamed[parts[0]]]
            with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                files["::".join(parts)] = strip(f.read())
    return files


def block_end(text, open_at):
    depth = 0
    for k in range(open_at, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if not depth:
                return k + 1
    return len(text)


def split_inline(files):
    """Inline `mod name { ... }` blocks become modules of their own; test modules are dropped,
    and so are the files of modules declared under `#[cfg(test)]`."""
    out = {}
    dropped = set()
    pending = list(files.items())
    while pending:
        path, text = pending.pop()
        while True:
            m = re.search(r"(#\[cfg\(test\)\]\s*)?(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*([{;])", text)
            if not m:
                break
            name = m.group(2)
            child = f"{path}::{name}" if path else name
            if m.group(3) == ";":
                if m.group(1):
                    dropped.add(child)
                text = text[: m.start()] + " " * (m.end() - m.start()) + text[m.end():]
                continue
            end = block_end(text, m.end() - 1)
            if not m.group(1):
                pending.append((child, text[m.end(): end - 1]))
            text = text[: m.start()] + " " * (end - m.start()) + text[end:]
        out[path] = text
    return {
        k: v
        for k, v in out.items()
        if not any(k == d or k.startswith(d + "::") for d in dropped)
    }


def use_paths(text):
    """Each `use` declaration's paths, with the name it binds and whether it is public."""
    leaf = re.compile(r"\s+as\s+(" + IDENT + r")$")
    for m in re.finditer(r"(\bpub(?:\([^)]*\))?\s+)?\buse\s+([^;]+);", text):
        tree = re.sub(r"\s*([{},]|::)\s*", r"\1", re.sub(r"\s+", " ", m.group(2)))
        for path in expand(tree):
            path = path.strip()
            alias = leaf.search(path)
            path = leaf.sub("", path).removeprefix("::")
            name = alias.group(1) if alias else path.split("::")[-1]
            yield path, name, m.group(1) is not None and "(" not in (m.group(1) or "")


def edges(src):
    files = split_inline(modules(src))
    known = set(files)
    found, through_root = set(), []

    def absolute(here, path):
        """`path` as written in `here`, made absolute: a list of segments from the root, or
        None for a path outside the crate."""
        segs = [s for s in path.split("::") if s]
        mine = here.split("::") if here else []
        if not segs:
            return None
        if segs[0] == "crate":
            return segs[1:]
        if segs[0] in ("self", "super"):
            base, rest = mine, segs
            while rest and rest[0] in ("self", "super"):
                if rest[0] == "super":
                    base = base[:-1]
                rest = rest[1:]
            return base + rest
        if "::".join(mine + [segs[0]]) in known:
            return mine + segs
        return None

    # What each module re-exports (`pub use` or `pub(crate) use`): name -> absolute path.
    exports = {}
    for here, text in files.items():
        for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", text):
            for path, name, _ in use_paths("use " + m.group(1) + ";"):
                full = absolute(here, path)
                if full is not None and name != "*":
                    exports.setdefault(here, {})[name] = full

    def home(full, depth=0):
        """The module that defines the item at `full`, following re-exports."""
        target = []
        for s in full:
            if "::".join(target + [s]) in known:
                target.append(s)
            else:
                break
        name = "::".join(target)
        left = full[len(target):]
        if left and depth < 16:
            again = exports.get(name, {}).get(left[0])
            if again is not None and again != full:
                return home(again + left[1:], depth + 1)
        return name

    def resolve(here, path):
        full = absolute(here, path)
        if full is None:
            return
        segs = path.split("::")
        if segs[0] == "crate" and len(full) >= 1 and full[0] != "*" and full[0] not in {
            k.split("::")[0] for k in known if k
        }:
            through_root.append((here, path))
        target = home(full)
        if target != here:
            found.add((here, target))

    for here, text in files.items():
        for path, _, _ in use_paths(text):
            resolve(here, path)
        code = re.sub(r"\buse\s+[^;]+;", " ", text)
        for m in re.finditer(r"(?<![\w:])((?:crate|super|self|" + IDENT + r")(?:::" + IDENT + r")+)", code):
            resolve(here, m.group(1))
    return {(a, b) for a, b in found if a != b}, through_root
