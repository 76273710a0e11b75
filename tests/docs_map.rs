//! docs/ has a map: docs/README.md lists every guide, each guide links to the guides it leans
//! on, and every link between guides reaches a file and, with an anchor, a heading in it.

use std::collections::BTreeSet;
use std::path::Path;

const REPOSITORY_DOCS: &str = "https://github.com/toolsmith-rs/toolsmith/blob/main/docs/";

fn docs() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs")
}

fn guides() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(docs())
        .expect("docs/")
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            let text = std::fs::read_to_string(docs().join(&name)).ok()?;
            name.ends_with(".md").then_some((name, text))
        })
        .collect();
    out.sort();
    out
}

/// The targets of the Markdown links `[text](target)` in `text`, outside code blocks.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    out
}

/// A heading's anchor as GitHub makes it: lower case, punctuation but `-` and `_` dropped,
/// spaces made `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut in_code = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            out.insert(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// The guide a link names, and its anchor: a relative `x.md#a` or the repository's
/// `.../docs/x.md#a` (the form the guides shown on docs.rs use). Other links are not guides.
fn guide_link(target: &str) -> Option<(String, Option<String>)> {
    let local = target.strip_prefix(REPOSITORY_DOCS).unwrap_or(target);
    if local.contains("://") || local.starts_with('#') {
        return None;
    }
    let (file, anchor) = match local.split_once('#') {
        Some((file, anchor)) => (file, Some(anchor.to_owned())),
        None => (local, None),
    };
    file.ends_with(".md").then(|| (file.to_owned(), anchor))
}

#[test]
fn the_map_lists_every_guide() {
    let map = std::fs::read_to_string(docs().join("README.md")).expect("docs/README.md");
    let listed: BTreeSet<String> = links(&map)
        .iter()
        .filter_map(|l| guide_link(l))
        .map(|(file, _)| file)
        .collect();
    for (name, _) in guides() {
        if name != "README.md" {
            assert!(
                listed.contains(&name),
                "docs/README.md does not list {name}"
            );
        }
    }
    for group in ["## Start", "## Reference", "## Operate", "## Internals"] {
        assert!(map.contains(group), "docs/README.md has no `{group}` group");
    }
}

#[test]
fn every_guide_links_to_the_guides_it_leans_on() {
    for (name, text) in guides() {
        if name == "README.md" {
            continue;
        }
        let line = text
            .lines()
            .find(|l| l.starts_with("Leans on: "))
            .unwrap_or_else(|| panic!("{name} has no `Leans on:` line"));
        let leaned: Vec<_> = links(line).iter().filter_map(|l| guide_link(l)).collect();
        assert!(!leaned.is_empty(), "{name}: `Leans on:` links to no guide");
    }
}

#[test]
fn every_link_between_guides_reaches_a_file_and_a_heading() {
    let all = guides();
    for (name, text) in &all {
        for target in links(text) {
            let Some((file, anchor)) = guide_link(&target) else {
                continue;
            };
            let Some((_, linked)) = all.iter().find(|(n, _)| *n == file) else {
                panic!("{name}: link to {target}, which is not in docs/");
            };
            if let Some(anchor) = anchor {
                assert!(
                    anchors(linked).contains(&anchor),
                    "{name}: link to {target}: {file} has no heading `#{anchor}`"
                );
            }
        }
    }
}

/// The guides each text names (`x.md`, in any form of link or quote).
fn guides_named(text: &str) -> BTreeSet<String> {
    guides()
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| name != "README.md" && text.contains(name.as_str()))
        .collect()
}

#[test]
fn the_guides_are_listed_in_one_place() {
    // A text that names more than half of the guides is a list of them: only the map is.
    let all = guides().len() - 1;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut texts: Vec<(String, String)> = guides()
        .into_iter()
        .filter(|(name, _)| name != "README.md")
        .collect();
    for file in ["README.md", "tool-core/src/lib.rs", "src/lib.rs"] {
        let text = std::fs::read_to_string(root.join(file)).expect(file);
        // The crate roots include the guides; their `include_str!` lines are not a list.
        let text: String = text
            .lines()
            .filter(|l| !l.contains("include_str!"))
            .collect::<Vec<_>>()
            .join("\n");
        texts.push((file.to_owned(), text));
    }
    for (name, text) in texts {
        let named = guides_named(&text);
        assert!(
            named.len() * 2 <= all,
            "{name} names {} of the {all} guides ({named:?}): link to docs/README.md instead of listing them",
            named.len()
        );
    }
}

#[test]
fn the_floors_are_listed_in_one_place() {
    // docs/architecture.md's table is the list of floors: scripts/layers.py reads it, and no
    // other file keeps a copy of the modules by floor.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let layers = std::fs::read_to_string(root.join("scripts/layers.py")).expect("layers.py");
    assert!(
        layers.contains("read_floors(ARCHITECTURE)"),
        "layers.py keeps its own floors"
    );
    let lib = std::fs::read_to_string(root.join("tool-core/src/lib.rs")).expect("lib.rs");
    assert!(
        !lib.contains("// Floor "),
        "tool-core/src/lib.rs names the floors again"
    );
    let table = std::fs::read_to_string(docs().join("architecture.md")).expect("architecture.md");
    for floor in 1..=9 {
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(&format!("| {floor}. "))),
            "docs/architecture.md's table has no floor {floor}"
        );
    }
}

#[test]
fn the_steps_are_listed_in_one_place_and_the_code_keeps_their_order() {
    // docs/execution.md numbers the steps of a tool's plan; the composition pushes them in
    // that order (the read once step may be preceded by repair and followed by guards, which
    // the list shows unnumbered).
    let execution = std::fs::read_to_string(docs().join("execution.md")).expect("execution.md");
    let listed: Vec<String> = execution
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l
                .strip_prefix("├─ ")
                .or_else(|| l.strip_prefix("└─ "))?
                .trim_start();
            let (number, rest) = rest.split_once(". ")?;
            number.parse::<u32>().ok()?;
            Some(rest.split("  ").next()?.trim().to_owned())
        })
        .collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let compose =
        std::fs::read_to_string(root.join("tool-core/src/policy/compose.rs")).expect("compose.rs");
    let step_of = |line: &str| -> Option<&'static str> {
        let l = line.trim();
        [
            ("vec![Arc::clone(&audit)", "audit"),
            ("steps.push(Arc::new(Authorize", "authorization"),
            ("steps.push(Arc::new(ReadArguments", "read once"),
            ("steps.push(Arc::new(Idempotent", "idempotency"),
            ("steps.push(Arc::new(Approve", "approval"),
            ("steps.push(Arc::new(Budget", "run budget"),
            ("steps.push(Arc::new(Fallback", "fallback"),
            ("steps.push(Arc::new(SharedCircuit", "circuit"),
            ("steps.push(Arc::new(Limit", "limits"),
            ("steps.push(attempts)", "attempts"),
        ]
        .iter()
        .find(|(code, _)| l.contains(code))
        .map(|(_, step)| *step)
    };
    let composed: Vec<&str> = compose.lines().filter_map(step_of).collect();
    assert_eq!(
        listed, composed,
        "docs/execution.md's steps and compose.rs's order differ"
    );
    // No other guide lists them in order.
    for (name, text) in guides() {
        if name != "execution.md" {
            assert!(
                !text.contains("idempotent ─► approve") && !text.contains("authorize ─► read once"),
                "{name} lists the steps again: point to docs/execution.md"
            );
        }
    }
}
