//! Crate-wide lint levels from the user's Cargo.toml, like Cargo's own `[lints]` table:
//!
//! ```toml
//! [package.metadata.toolsmith.lints]
//! unbounded_string = "allow"
//! missing_effect = "deny"
//! ```
//!
//! Only this table is read, by a small line reader (keys and quoted levels), so the macro
//! needs no TOML crate.

use std::path::PathBuf;

use toolsmith_lint_rules::{self as rules, Level};

const TABLE: &str = "[package.metadata.toolsmith.lints]";

/// The levels a crate sets for all its tools.
#[derive(Default)]
pub(crate) struct Config {
    pub(crate) levels: Vec<(&'static str, Level)>,
    /// The manifest read, so the expansion can make rustc track it.
    pub(crate) manifest: Option<PathBuf>,
    /// What is wrong in the table.
    pub(crate) problems: Vec<String>,
}

impl Config {
    /// Reads `$CARGO_MANIFEST_DIR/Cargo.toml`; no manifest means no crate-wide levels.
    pub(crate) fn load() -> Self {
        let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") else {
            return Self::default();
        };
        let path = PathBuf::from(dir).join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Self::default();
        };
        let (levels, problems) = parse(&text);
        Self {
            levels,
            manifest: Some(path),
            problems,
        }
    }

    pub(crate) fn level(&self, lint: &str) -> Option<Level> {
        self.levels
            .iter()
            .find(|(l, _)| *l == lint)
            .map(|(_, level)| *level)
    }
}

/// The `name = "level"` entries of the table, and what is wrong in it.
pub(crate) fn parse(text: &str) -> (Vec<(&'static str, Level)>, Vec<String>) {
    let mut levels = Vec::new();
    let mut problems = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line.split('#').next().unwrap_or("").trim() == TABLE;
            continue;
        }
        if !inside || line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            problems.push(format!("`{line}` is not `lint_name = \"level\"`"));
            continue;
        };
        let key = key.trim().trim_matches('"');
        let value = value
            .split('#')
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches('"');
        match (rules::find(key), Level::parse(value)) {
            (Some(lint), Some(level)) => levels.push((lint.name, level)),
            (None, _) => problems.push(format!(
                "unknown lint `{key}`; expected one of {}",
                rules::names()
            )),
            (_, None) => problems.push(format!(
                "`{key} = \"{value}\"` is not a level; use \"allow\", \"warn\" or \"deny\""
            )),
        }
    }
    let problems = problems
        .into_iter()
        .map(|p| format!("in Cargo.toml, {TABLE}: {p}"))
        .collect();
    (levels, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_the_toolsmith_table() {
        let text = r#"
[package]
name = "app"
[package.metadata.toolsmith.lints]
unbounded_string = "allow"   # strings are bounded upstream
missing_effect = "deny"
[dependencies]
open_map = "allow"
"#;
        let (levels, problems) = parse(text);
        assert_eq!(
            levels,
            [
                ("unbounded_string", Level::Allow),
                ("missing_effect", Level::Deny)
            ]
        );
        assert!(problems.is_empty());
    }

    #[test]
    fn reports_unknown_lints_and_levels() {
        let (_, problems) = parse(
            "[package.metadata.toolsmith.lints]\nunbounded = \"allow\"\nopen_map = \"loud\"\n",
        );
        assert_eq!(problems.len(), 2);
        assert!(problems[0].contains("unknown lint `unbounded`"));
        assert!(problems[1].contains("not a level"));
    }
}
