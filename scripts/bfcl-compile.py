"""How many real tool definitions compile as `#[tool]` functions with the default lint levels.

Reads the Berkeley Function Calling Leaderboard v4 data (BFCL_v4_*.json and
multi_turn_func_doc/*.json, Apache-2.0; pass the folder that holds them), writes every distinct
function (first occurrence of each name) as a `#[tool]` fn the way its author would write it,
into one crate under target/bfcl-compile/, builds it once, and counts the tools with at least
one compile error (the macro reports every tool's errors in one build, each on its own line
range). Prints the total, the count that compile, and the errors by lint or kind.

Usage: python3 scripts/bfcl-compile.py PATH/TO/bfcl [--allow-all]
(`--allow-all` sets every lint to `allow` in the generated crate's Cargo.toml.)
"""

import collections
import glob
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "target", "bfcl-compile")

KEYWORDS = {
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use",
    "where", "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final",
    "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
}


def ident(name, used):
    base = re.sub(r"[^0-9a-zA-Z_]", "_", name)
    base = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", base).lower().strip("_") or "x"
    if base[0].isdigit():
        base = "n_" + base
    if base in KEYWORDS:
        base += "_"
    out, i = base, 2
    while out in used:
        out, i = f"{base}_{i}", i + 1
    used.add(out)
    return out


def camel(name):
    parts = re.split(r"[^0-9a-zA-Z]+", name)
    out = "".join(p[:1].upper() + p[1:] for p in parts if p)
    return out if out and not out[0].isdigit() else "T" + out


def doc(text, indent):
    text = (text or "").strip()
    if not text:
        return ""
    return "".join(f"{indent}/// {line}\n" for line in text.replace("\r", "").split("\n"))


def lit(s):
    """A Rust string literal."""
    escaped = "".join(
        c if c.isprintable() and c not in '"\\' else
        {"\"": '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(c, f"\\u{{{ord(c):x}}}")
        for c in s
    )
    return f'"{escaped}"'


class Writer:
    def __init__(self):
        self.items = []
        self.type_names = set()

    def type_name(self, hint):
        base = camel(hint) or "T"
        name, i = base, 2
        while name in self.type_names:
            name, i = f"{base}{i}", i + 1
        self.type_names.add(name)
        return name

    def rust_type(self, schema, hint):
        """The Rust type an author would write for this BFCL schema."""
        if not isinstance(schema, dict):
            return "serde_json::Value"
        t = schema.get("type", "")
        enum = schema.get("enum")
        if enum and all(isinstance(v, str) for v in enum) and t in ("string", "String"):
            return self.enum_type(enum, hint, schema.get("description", ""))
        if t in ("string", "String", "char"):
            return "String"
        if t in ("integer", "long"):
            return "i64"
        if t in ("float", "double"):
            return "f64"
        if t in ("boolean", "Boolean"):
            return "bool"
        if t in ("array", "Array", "ArrayList", "tuple"):
            items = schema.get("items")
            inner = self.rust_type(items, hint + "_item") if items else "serde_json::Value"
            return f"Vec<{inner}>"
        if t in ("dict", "HashMap"):
            props = schema.get("properties")
            if props:
                return self.struct_type(schema, hint)
            return "std::collections::HashMap<String, serde_json::Value>"
        return "serde_json::Value"

    def enum_type(self, values, hint, description):
        name = self.type_name(hint)
        variants, used = [], set()
        for v in values:
            variant = camel(v) or "Empty"
            base, i = variant, 2
            while variant in used:
                variant, i = f"{base}{i}", i + 1
            used.add(variant)
            variants.append(f"    #[serde(rename = {lit(v)})]\n    {variant},\n")
        self.items.append(
            doc(description or f"One of the values of `{hint}`.", "")
            + "#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]\n"
            + f"pub enum {name} {{\n" + "".join(variants) + "}\n"
        )
        return name

    def struct_type(self, schema, hint):
        name = self.type_name(hint)
        required = set(schema.get("required") or [])
        fields, used = [], set()
        for pname, pschema in schema["properties"].items():
            field = ident(pname, used)
            ty = self.rust_type(pschema, f"{hint}_{pname}")
            if pname not in required:
                ty = f"Option<{ty}>"
            rename = f"    #[serde(rename = {lit(pname)})]\n" if field != pname else ""
            fields.append(doc(pschema.get("description", "") if isinstance(pschema, dict) else "", "    ")
                          + rename + f"    pub {field}: {ty},\n")
        self.items.append(
            doc(schema.get("description", "") or f"The `{hint}` object.", "")
            + "#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]\n"
            + f"pub struct {name} {{\n" + "".join(fields) + "}\n"
        )
        return name

    def tool(self, fn, fn_ident):
        params = fn.get("parameters") or {}
        required = set(params.get("required") or [])
        lines, used = [], set()
        for pname, pschema in (params.get("properties") or {}).items():
            arg = ident(pname, used)
            ty = self.rust_type(pschema, f"{fn_ident}_{pname}")
            if pname not in required:
                ty = f"Option<{ty}>"
            rename = f"    #[arg(rename = {lit(pname)})]\n" if arg != pname else ""
            description = pschema.get("description", "") if isinstance(pschema, dict) else ""
            lines.append(doc(description, "    ") + rename + f"    {arg}: {ty},\n")
        start = len("".join(self.items).splitlines())
        self.items.append(
            doc(fn.get("description", ""), "")
            + f"#[tool(name = {lit(fn['name'])})]\n"
            + f"pub fn {fn_ident}(\n" + "".join(lines) + ") -> String {\n    String::new()\n}\n"
        )
        end = len("".join(self.items).splitlines())
        return start, end


def functions(data):
    seen = {}
    for path in sorted(glob.glob(os.path.join(data, "BFCL_v4_*.json"))):
        for line in open(path, encoding="utf-8"):
            if line.strip():
                for fn in json.loads(line).get("function", []):
                    seen.setdefault(fn["name"], fn)
    for path in sorted(glob.glob(os.path.join(data, "multi_turn_func_doc", "*.json"))):
        for line in open(path, encoding="utf-8"):
            if line.strip():
                fn = json.loads(line)
                seen.setdefault(fn["name"], fn)
    return list(seen.values())


LINTS = [
    "missing_docs", "tool_name", "description_length", "description_scope", "unbounded_string",
    "stringly_enum", "open_map", "missing_effect", "destructive_without_environment",
    "dangerous_parameter", "self_declared_permission", "unrestricted_destination",
    "description_injection", "secret_in_description",
]


def main(data, allow_all):
    fns = functions(data)
    w = Writer()
    w.items.append("#![allow(unused_variables, clippy::all, non_camel_case_types, dead_code)]\nuse toolsmith::tool;\n")
    ranges, used = [], set()
    for fn in fns:
        fn_ident = ident(fn["name"], used)
        ranges.append((fn["name"], *w.tool(fn, fn_ident)))
    os.makedirs(os.path.join(OUT, "src"), exist_ok=True)
    with open(os.path.join(OUT, "src", "lib.rs"), "w", encoding="utf-8") as f:
        f.write("".join(w.items))
    with open(os.path.join(OUT, "Cargo.toml"), "w", encoding="utf-8") as f:
        f.write(f"""[package]
name = "bfcl-compile"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
toolsmith = {{ path = {lit(ROOT)} }}
serde = {{ version = "1", features = ["derive"] }}
serde_json = "1"
schemars = "1"

[workspace]
""")
        if allow_all:
            f.write("\n[package.metadata.toolsmith.lints]\n")
            f.write("".join(f'{lint} = "allow"\n' for lint in LINTS))
    build = subprocess.run(
        ["cargo", "build", "--message-format=json", "--quiet"],
        cwd=OUT, capture_output=True, text=True,
        env={**os.environ, "CARGO_TARGET_DIR": os.path.join(OUT, "target")},
    )
    failed, kinds = {}, collections.Counter()
    for line in build.stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("reason") != "compiler-message":
            continue
        m = msg["message"]
        if m["level"] != "error" or not m["spans"]:
            continue
        span = next((s for s in m["spans"] if s["is_primary"]), m["spans"][0])
        if not span["file_name"].endswith("lib.rs"):
            continue
        line_no = span["line_start"] - 1
        lint = re.search(r"toolsmith lint `([a-z_]+)`", m["rendered"] or "")
        kind = lint.group(1) if lint else (m.get("code") or {}).get("code") or m["message"][:60]
        for name, start, end in ranges:
            if start <= line_no < end:
                failed.setdefault(name, set()).add(kind)
                break
        else:
            failed.setdefault("<types>", set()).add(kind)
        kinds[kind] += 1
    total = len(fns)
    bad = len([n for n in failed if n != "<types>"])
    levels = "every lint allowed" if allow_all else "the default lint levels"
    print(f"{total} distinct functions; {total - bad} compile with {levels}; {bad} do not")
    by_first = collections.Counter(sorted(k)[0] for n, k in failed.items() if n != "<types>")
    for kind, n in by_first.most_common():
        names = sorted(name for name, k in failed.items() if name != "<types>" and sorted(k)[0] == kind)
        shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        print(f"  {n:5}  {kind}: {shown}")
    if "<types>" in failed:
        print("  errors in the generated types (not in a tool):", sorted(failed["<types>"]))


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--allow-all"]
    if len(args) != 1:
        sys.exit(__doc__)
    main(args[0], "--allow-all" in sys.argv)
