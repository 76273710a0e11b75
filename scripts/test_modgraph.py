"""Checks scripts/modgraph.py on small crates written for the purpose: it must see the
imports a use declaration and a path in place make, follow re-exports to an item's home,
leave comments, strings and test modules out, and report paths through the crate root."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import modgraph  # noqa: E402


def crate(files):
    root = tempfile.mkdtemp(prefix="modgraph-")
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)
    return root


def expect(name, got, want):
    if got != want:
        sys.exit(f"modgraph self-test `{name}`: got {sorted(got)}, want {sorted(want)}")


src = crate({
    "lib.rs": "mod a;\nmod b;\npub mod c;\n#[path = \"d_file.rs\"]\npub mod d;\npub use a::Thing;\n",
    "a.rs": "use crate::b::{self, inner::{X, Y as Z}};\npub struct Thing;\n"
            "// crate::c::Hidden in a comment\nconst S: &str = \"crate::c::InString\";\n",
    "b/mod.rs": "pub mod inner;\npub fn f() { let _ = super::c::value(); }\n",
    "b/inner.rs": "use crate::d::Q;\npub struct X; pub struct Y;\nfn g() -> crate::Thing { crate::Thing }\n",
    "c.rs": "pub fn value() {}\n#[cfg(test)]\nmod tests { use crate::d::Q; }\nmod local { use super::value; }\n",
    "d_file.rs": "pub struct Q;\n",
})
edges, through_root = modgraph.edges(src)
expect("edges", edges, {
    ("", "a"), ("a", "b"), ("a", "b::inner"), ("b", "c"), ("b::inner", "a"), ("b::inner", "d"),
    ("c::local", "c"),
})
expect("through the root", {p for _, p in through_root}, {"crate::Thing"})

print("modgraph: self-test passed")
