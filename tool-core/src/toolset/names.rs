//! The names a model is shown: which are valid, how a long one is shortened, and which two
//! cannot share a toolbox.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::definition::ToolDefinition;
use crate::dialect::Dialect;

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

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
    /// Two toolsets offer a tool under one name, or under names a provider spells alike, or
    /// hold the same tool (one name of its own) twice.
    Clash {
        /// The name they share (in the provider's spelling when that is where they meet).
        name: String,
        /// The toolset being added (`""`: a tool added on its own).
        origin: String,
        /// The toolset that offered the name first.
        other_origin: String,
    },
    /// A toolset's rename, re-description or argument transform names a tool or parameter
    /// it does not have.
    NotFound {
        /// The name given.
        name: String,
        /// The toolset or tool it was looked for in.
        within: String,
    },
}

/// How an origin reads in a message.
fn origin_text(origin: &str) -> String {
    if origin.is_empty() {
        "a tool added on its own".to_owned()
    } else {
        format!("toolset `{origin}`")
    }
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
            Self::Clash {
                name,
                origin,
                other_origin,
            } => write!(
                f,
                "`{name}` is offered by both {} and {}; prefix or rename one of them (`Toolset::prefixed`, `Toolset::renamed`), or leave one out (`Toolset::filtered`)",
                origin_text(other_origin),
                origin_text(origin),
            ),
            Self::NotFound { name, within } => {
                write!(f, "`{name}` is not in {within}")
            }
        }
    }
}

impl std::error::Error for RegistrationError {}

/// Whether `name` is a tool name every part of toolsmith takes: 1 to 128 characters from
/// `A-Z a-z 0-9 _ - .`.
pub(crate) fn valid_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The longest name every provider takes: OpenAI, Anthropic and Gemini allow 64 characters
/// (MCP 128).
const MAX_SHOWN: usize = 64;

/// `name` as every provider takes it: unchanged when it fits in 64 characters; otherwise its
/// first characters, `_` and the first 8 hex digits of the SHA-256 of the whole name, 64 in
/// all. Never cut short: two long names that begin alike stay two names, and the same name is
/// always shortened the same way.
///
/// ```
/// use toolsmith::toolset::fit_name;
/// assert_eq!(fit_name("crm_search"), "crm_search");
/// let long = format!("{}_search", "a".repeat(70));
/// let other = format!("{}_delete", "a".repeat(70));
/// assert_eq!(fit_name(&long).len(), 64);
/// assert_ne!(fit_name(&long), fit_name(&other));
/// assert_eq!(fit_name(&long), fit_name(&long));
/// ```
#[must_use]
pub fn fit_name(name: &str) -> String {
    // Gemini puts `_` before a name that starts with a digit.
    let max = if name.starts_with(|c: char| c.is_ascii_digit()) {
        MAX_SHOWN - 1
    } else {
        MAX_SHOWN
    };
    if name.len() <= max {
        return name.to_owned();
    }
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(name.as_bytes());
    let mut hash = String::with_capacity(8);
    crate::json::canonical::push_hex(&mut hash, &digest[..4]);
    let mut keep = max - 9;
    while !name.is_char_boundary(keep) {
        keep -= 1;
    }
    format!("{}_{hash}", &name[..keep])
}

/// Which names are taken: tools by their own names (with the set each came from), and each
/// provider's spelling of the names models are shown.
#[derive(Clone, Default)]
pub(crate) struct NameTable {
    /// Own name → the set it came from.
    own: FastMap<Arc<str>, Arc<str>>,
    /// Per dialect (by `Dialect::index`): the name the provider sees → the own name.
    pub(crate) exported: [FastMap<String, Arc<str>>; 8],
}

impl NameTable {
    /// Takes the names of the tool `def` from `origin`, shown as `shown` (its own name
    /// without a view), or says why they cannot be taken.
    pub(crate) fn insert(
        &mut self,
        def: &ToolDefinition,
        shown: &str,
        origin: &Arc<str>,
    ) -> Result<Arc<str>, RegistrationError> {
        let name = def.name();
        if !valid_name(name) {
            return Err(RegistrationError::InvalidName {
                name: crate::echo::echo(name).into_owned(),
            });
        }
        if let Some(other) = self.own.get(name) {
            return Err(if other == origin {
                RegistrationError::Duplicate {
                    name: name.to_owned(),
                }
            } else {
                RegistrationError::Clash {
                    name: name.to_owned(),
                    origin: origin.to_string(),
                    other_origin: other.to_string(),
                }
            });
        }
        if !valid_name(shown) {
            return Err(RegistrationError::InvalidName {
                name: crate::echo::echo(shown).into_owned(),
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
            let exported = dialect.tool_name(shown);
            if exported.len() > dialect.max_name_len() {
                return Err(RegistrationError::InvalidDefinition {
                    name: shown.to_owned(),
                    problem: format!(
                        "{dialect} allows tool names of at most {} characters; shorten it with `toolsmith::toolset::fit_name`",
                        dialect.max_name_len()
                    ),
                });
            }
            if let Some(other) = self.exported[dialect.index()].get(&exported) {
                let other_origin = self.own.get(other).map_or("", |o| &**o);
                if other_origin != &**origin {
                    return Err(RegistrationError::Clash {
                        name: exported,
                        origin: origin.to_string(),
                        other_origin: other_origin.to_owned(),
                    });
                }
                return Err(RegistrationError::NameCollision {
                    name: shown.to_owned(),
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
        self.own.insert(Arc::clone(&key), Arc::clone(origin));
        Ok(key)
    }
}

#[cfg(test)]
mod tests {
    use super::{fit_name, valid_name};

    #[test]
    fn names() {
        assert!(valid_name("calendar.create_event"));
        assert!(valid_name("a-b_C9"));
        assert!(!valid_name(""));
        assert!(!valid_name("has space"));
        assert!(!valid_name(&"x".repeat(129)));
    }

    #[test]
    fn long_names_keep_a_hash() {
        let digits = format!("9{}", "x".repeat(80));
        assert_eq!(fit_name(&digits).len(), 63);
        let wide = format!("{}é", "x".repeat(60));
        assert!(fit_name(&wide).len() <= 64);
    }
}
