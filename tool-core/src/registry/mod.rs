//! The tool registry: each tool's contract as reviewable files, the check that the code still
//! matches them, and what a change to them means for the tool's version.
//!
//! [`Registry::of`] reads a toolbox; [`Registry::write`] writes one folder per tool (its input
//! and output schemas, its description and metadata, its examples), deterministic and sorted
//! so that a diff shows only what changed. [`assert_registry`], in a test, compares the toolbox
//! with the committed folder and fails with a report of every change, classified breaking or
//! not ([`diff`]), and of every tool whose declared version did not rise accordingly; with
//! `TOOLSMITH_REGISTRY=overwrite` it rewrites the folder instead (when the versions allow).
//! [`eval`] scores recorded model responses against tool-selection cases. See
//! docs/registry.md.

use std::fmt;
use std::path::Path;

use crate::toolbox::Toolbox;

pub mod diff;
pub mod eval;
mod record;

pub use diff::{Change, ChangeKind, Verdict};
pub use record::{Policy, Registry, RegistryError, Risk, ToolRecord};

/// The environment variable that makes [`assert_registry`] rewrite the registry.
pub const OVERWRITE_VAR: &str = "TOOLSMITH_REGISTRY";

/// What [`check`] found: the changes from the committed registry to the toolbox, and the
/// tools whose declared version does not rise as the changes require.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Report {
    /// Every change, tool by tool.
    pub changes: Vec<Change>,
    /// One line per tool whose version breaks the rule.
    pub version_problems: Vec<String>,
    /// Files whose text differs from what the registry writes though their content is the
    /// same (edited by hand): rewritten by an overwrite.
    pub unformatted: Vec<String>,
}

impl Report {
    /// Whether the toolbox matches the registry exactly.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.changes.is_empty() && self.version_problems.is_empty() && self.unformatted.is_empty()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut tool = "";
        for change in &self.changes {
            if change.tool != tool {
                tool = &change.tool;
                writeln!(f, "tool `{tool}`:")?;
            }
            writeln!(f, "  {change}")?;
        }
        for problem in &self.version_problems {
            writeln!(f, "version: {problem}")?;
        }
        for file in &self.unformatted {
            writeln!(f, "not as the registry writes it: {file}")?;
        }
        Ok(())
    }
}

/// Compares `toolbox` with the registry in `dir`: every change, classified, and every tool
/// whose version does not rise as its changes require (see [`diff::required_bump`]).
///
/// # Errors
///
/// A [`RegistryError`] when the registry cannot be read.
pub fn check(toolbox: &Toolbox, dir: impl AsRef<Path>) -> Result<Report, RegistryError> {
    let dir = dir.as_ref();
    let committed = Registry::read(dir)?;
    let current = Registry::of(toolbox);
    let mut report = Report {
        changes: diff::diff(&committed, &current),
        ..Report::default()
    };
    for (name, new) in &current.tools {
        if let Some(old) = committed.tools.get(name) {
            let changes: Vec<&Change> = report.changes.iter().filter(|c| &c.tool == name).collect();
            if let Err(problem) = diff::check_version(old, new, &changes) {
                report.version_problems.push(format!("`{name}`: {problem}"));
            }
        }
    }
    if report.changes.is_empty() {
        for (file, text) in current.files() {
            let on_disk = std::fs::read_to_string(dir.join(&file)).unwrap_or_default();
            if on_disk != text {
                report.unformatted.push(file);
            }
        }
    }
    Ok(report)
}

/// What [`assert_registry_with`] does when the toolbox differs from the registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// Fail with the report.
    Check,
    /// Rewrite the registry, when every tool's version rises as its changes require.
    Overwrite,
}

impl Mode {
    /// `Overwrite` when the environment variable `TOOLSMITH_REGISTRY` is `overwrite`, else
    /// `Check`.
    #[must_use]
    pub fn from_env() -> Self {
        match std::env::var(OVERWRITE_VAR) {
            Ok(v) if v == "overwrite" => Self::Overwrite,
            _ => Self::Check,
        }
    }
}

/// In a test: fails, with the report, when `toolbox` differs from the registry committed in
/// `dir`. With the environment variable `TOOLSMITH_REGISTRY=overwrite`, writes the toolbox's
/// registry into `dir` instead, unless a tool's version does not rise as its changes require
/// (that still fails: raise the version first). The same as
/// `assert_registry_with(toolbox, dir, Mode::from_env())`.
///
/// ```no_run
/// #[test]
/// fn the_registry_is_up_to_date() {
///     toolsmith::registry::assert_registry(&my_toolbox(), "tests/registry");
/// }
/// # fn my_toolbox() -> toolsmith::Toolbox { toolsmith::Toolbox::new() }
/// ```
///
/// # Panics
///
/// When the toolbox differs from the registry, or the registry cannot be read or written.
#[track_caller]
pub fn assert_registry(toolbox: &Toolbox, dir: impl AsRef<Path>) {
    assert_registry_with(toolbox, dir, Mode::from_env());
}

/// [`assert_registry`], in the mode given.
///
/// # Panics
///
/// When the toolbox differs from the registry (in `Overwrite` mode: only when a version
/// does not rise as required), or the registry cannot be read or written.
#[track_caller]
pub fn assert_registry_with(toolbox: &Toolbox, dir: impl AsRef<Path>, mode: Mode) {
    let dir = dir.as_ref();
    let report = match check(toolbox, dir) {
        Ok(report) => report,
        Err(err) => panic!("the tool registry cannot be read: {err}"),
    };
    if report.is_clean() {
        return;
    }
    if mode == Mode::Overwrite && report.version_problems.is_empty() {
        if let Err(err) = Registry::of(toolbox).write(dir) {
            panic!("the tool registry cannot be written: {err}");
        }
        eprintln!(
            "the tool registry in {} was rewritten:\n{report}",
            dir.display()
        );
        return;
    }
    let fix = if report.version_problems.is_empty() {
        format!(
            "if these changes are meant, rewrite the registry: {OVERWRITE_VAR}=overwrite cargo test"
        )
    } else {
        "raise the versions as said, then rewrite the registry with TOOLSMITH_REGISTRY=overwrite"
            .to_owned()
    };
    panic!(
        "the tools differ from the registry in {}:\n{report}{fix}",
        dir.display()
    );
}
