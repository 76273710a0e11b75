//! The tool index: tools by name and in order, each provider's spelling of their names, and
//! which tools are offered where.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::context::ToolContext;
use crate::dialect::Dialect;
use crate::error::ToolError;
use crate::policy::{Enablement, ToolsChanged};
use crate::tool::Tool;

/// Name lookups on every call: foldhash is several times faster than SipHash on short keys,
/// and tool names are the application's own, not attacker-chosen map keys.
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The tools of a toolbox.
#[derive(Clone)]
pub(crate) struct ToolIndex {
    /// Registered name → index in `in_order`.
    pub(crate) by_name: FastMap<Arc<str>, usize>,
    pub(crate) in_order: Vec<Arc<dyn Tool>>,
    /// Per dialect (by `Dialect::index`): the name the provider sees → the registered name.
    pub(crate) exported: [FastMap<String, Arc<str>>; 8],
    /// Tools offered only where their predicate says so.
    pub(crate) enablement: HashMap<String, Arc<dyn Enablement>>,
    pub(crate) changes: ToolsChanged,
}

/// Why a tool could not be registered.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistrationError {
    /// A tool of this name is already registered.
    Duplicate {
        /// The name.
        name: String,
    },
    /// The name is empty, too long, or has characters outside `A-Z a-z 0-9 _ - .`.
    InvalidName {
        /// The name.
        name: String,
    },
    /// Two tools get the same name in a provider's spelling (`a.b` and `a_b` are both
    /// `a_b` for OpenAI and Anthropic).
    NameCollision {
        /// The name being registered.
        name: String,
        /// The tool registered earlier.
        other: String,
        /// The provider's spelling they share.
        exported: String,
        /// The dialect.
        dialect: &'static str,
    },
    /// The tool's definition is broken (e.g. a `pattern` that does not compile).
    InvalidDefinition {
        /// The tool's name.
        name: String,
        /// What is wrong.
        problem: String,
    },
}

impl fmt::Display for RegistrationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Duplicate { name } => write!(
                f,
                "a tool named `{name}` is already registered; give one of them another name with `#[tool(name = \"...\")]`"
            ),
            Self::InvalidName { name } => write!(
                f,
                "`{name}` is not a valid tool name; use 1 to 128 characters from A-Z, a-z, 0-9, `_`, `-` and `.`"
            ),
            Self::NameCollision {
                name,
                other,
                exported,
                dialect,
            } => write!(
                f,
                "`{name}` and `{other}` are both named `{exported}` for {dialect}; rename one with `#[tool(name = \"...\")]`"
            ),
            Self::InvalidDefinition { name, problem } => {
                write!(f, "the tool `{name}` cannot be registered: {problem}")
            }
        }
    }
}

impl std::error::Error for RegistrationError {}

fn valid_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

impl Default for ToolIndex {
    fn default() -> Self {
        Self {
            by_name: FastMap::default(),
            in_order: Vec::new(),
            exported: Default::default(),
            enablement: HashMap::new(),
            changes: ToolsChanged::new(),
        }
    }
}

impl ToolIndex {
    /// Adds a tool, or says why it cannot be added.
    pub(crate) fn insert(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistrationError> {
        let def = tool.definition();
        let name = def.name();
        if !valid_name(name) {
            return Err(RegistrationError::InvalidName {
                name: name.to_owned(),
            });
        }
        if self.by_name.contains_key(name) {
            return Err(RegistrationError::Duplicate {
                name: name.to_owned(),
            });
        }
        if let Some(problem) = def.problem() {
            return Err(RegistrationError::InvalidDefinition {
                name: name.to_owned(),
                problem: problem.to_owned(),
            });
        }
        let mut spellings = Vec::with_capacity(Dialect::ALL.len());
        for dialect in Dialect::ALL {
            let exported = dialect.tool_name(name);
            if exported.len() > dialect.max_name_len() {
                return Err(RegistrationError::InvalidDefinition {
                    name: name.to_owned(),
                    problem: format!(
                        "{dialect} allows tool names of at most {} characters",
                        dialect.max_name_len()
                    ),
                });
            }
            if let Some(other) = self.exported[dialect.index()].get(&exported) {
                return Err(RegistrationError::NameCollision {
                    name: name.to_owned(),
                    other: other.to_string(),
                    exported,
                    dialect: dialect.name(),
                });
            }
            spellings.push(exported);
        }
        let key: Arc<str> = Arc::from(name);
        for (dialect, exported) in Dialect::ALL.into_iter().zip(spellings) {
            self.exported[dialect.index()].insert(exported, Arc::clone(&key));
        }
        self.by_name.insert(key, self.in_order.len());
        self.in_order.push(tool);
        Ok(())
    }

    /// The tool named `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.by_name.get(name).and_then(|&i| self.in_order.get(i))
    }

    /// Whether the tool `name` is offered only where a predicate says so (most toolboxes have
    /// none: no lookup then).
    #[inline]
    pub(crate) fn has_predicate(&self, name: &str) -> bool {
        !self.enablement.is_empty() && self.enablement.contains_key(name)
    }

    /// Whether the tool `name` is offered in `ctx`.
    pub(crate) async fn is_enabled(&self, name: &str, ctx: &ToolContext) -> bool {
        match self.enablement.get(name) {
            Some(enabled) => enabled.enabled(ctx).await,
            None => true,
        }
    }

    /// The refusal of a call of no tool (or of a tool disabled for the caller), listing the
    /// tools that are available.
    pub(crate) fn unknown(&self, name: &str, available: &[&str]) -> ToolError {
        let mut names = available.to_vec();
        names.sort_unstable();
        let listed = if names.is_empty() {
            "no tools are available".to_owned()
        } else {
            format!("the available tools are `{}`", names.join("`, `"))
        };
        let shown = crate::echo::echo(name);
        ToolError::unknown_tool(format!(
            "There is no tool named `{shown}`; {listed}. Call one of those instead."
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::valid_name;

    #[test]
    fn names() {
        assert!(valid_name("calendar.create_event"));
        assert!(valid_name("a-b_C9"));
        assert!(!valid_name(""));
        assert!(!valid_name("has space"));
        assert!(!valid_name(&"x".repeat(129)));
    }
}
