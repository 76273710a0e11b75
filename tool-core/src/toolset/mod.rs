//! Toolsets: tools from several places composed as values before they join a toolbox.
//!
//! A [`Toolset`] is a named list of tools (your own, an MCP server's, a teammate's crate).
//! Sets [`merge`](Toolset::merge) (a clash is an error naming both sets), take a
//! [`prefix`](Toolset::prefixed), [`rename`](Toolset::renamed) or
//! [`re-describe`](Toolset::described) a tool, and [`filter`](Toolset::filtered) what they
//! hold; [`Toolbox::with_toolset`](crate::Toolbox::with_toolset) adds one to a toolbox.
//!
//! **A rename is a view.** The model is shown the new name (and description); everything that
//! runs behind the call (validation, the execution policy, approvals, idempotency keys, the
//! audit and the registry) keeps the tool's own name, so a renamed tool's calls are the
//! original's calls. Two tools of one own name cannot share a toolbox, whatever they are
//! called in front: their approvals and idempotency keys would be one.
//!
//! Every name a model is shown is checked against each provider's rules when the set joins a
//! toolbox. A prefixed or renamed name longer than every provider takes (64 characters) is
//! shortened with a stable hash of the whole name, never cut: two long names that begin
//! alike stay two names.
//!
//! To change what a tool *takes* (hide a parameter behind a value, rename or re-describe
//! one), derive a new tool with [`Transform`]. To hide or re-describe tools for one request,
//! give the toolbox a [`Prepare`] step ([`Toolbox::with_prepare`](crate::Toolbox::with_prepare)).
//!
//! ```
//! use toolsmith::toolset::Toolset;
//! use toolsmith::{tool, Dialect, Toolbox};
//!
//! /// Searches the wiki. Read-only. Not for tickets.
//! #[tool(effect = "read")]
//! fn search(
//!     /// Words to look for.
//!     #[arg(length(min = 1, max = 100))]
//!     text: String,
//! ) -> Vec<String> {
//!     vec![text]
//! }
//!
//! /// Reads a wiki page. Read-only. Not for editing.
//! #[tool(effect = "read")]
//! fn read_page(
//!     /// The page's path.
//!     #[arg(length(min = 1, max = 200))]
//!     path: String,
//! ) -> String {
//!     path
//! }
//!
//! let wiki = Toolset::new("wiki").with(Search).with(ReadPage).prefixed("wiki");
//! let toolbox = Toolbox::new().with_toolset(wiki);
//! let names: Vec<_> = toolbox.definitions().map(|d| d.name().to_owned()).collect();
//! assert_eq!(names, ["wiki_search", "wiki_read_page"]);
//! // The model calls `wiki_search`; the toolbox knows the tool as `search`.
//! let openai = toolbox.provider(Dialect::OpenAiChat { strict: true });
//! assert_eq!(openai.resolve("wiki_search").unwrap().definition().name(), "search");
//! ```

use std::fmt;
use std::sync::Arc;

use crate::definition::ToolDefinition;
use crate::tool::Tool;

#[cfg(feature = "mcp-client")]
mod mcp;
mod names;
mod prepare;
mod transform;

#[cfg(feature = "mcp-client")]
pub use mcp::{ListingChanges, McpClientError, McpToolset};
pub(crate) use names::{NameTable, valid_name};
pub use names::{RegistrationError, fit_name};
pub(crate) use prepare::OfferedDef;
pub use prepare::{Prepare, Prepared};
pub use transform::{Transform, TransformError, Transformed};

/// Why a set cannot be composed or added: the same error a toolbox refuses a tool with.
pub type ToolsetError = RegistrationError;

/// A named list of tools, composed as a value (see the [module docs](self)).
#[derive(Clone)]
pub struct Toolset {
    name: Arc<str>,
    entries: Vec<Entry>,
}

#[derive(Clone)]
pub(crate) struct Entry {
    pub(crate) tool: Arc<dyn Tool>,
    /// The name a model is shown, when it is not the tool's own.
    pub(crate) shown: Option<String>,
    /// The description a model is shown, when it is not the tool's own.
    pub(crate) description: Option<String>,
    /// The set the tool came from.
    pub(crate) origin: Arc<str>,
}

impl Entry {
    /// The name a model is shown.
    fn shown_name(&self) -> &str {
        self.shown
            .as_deref()
            .unwrap_or_else(|| self.tool.definition().name())
    }

    /// The definition a model is shown, when a view changed it.
    pub(crate) fn view(&self) -> Option<Arc<ToolDefinition>> {
        if self.shown.is_none() && self.description.is_none() {
            return None;
        }
        let def = self.tool.definition();
        Some(Arc::new(def.view(
            self.shown_name().to_owned(),
            self.description.as_deref(),
        )))
    }
}

impl Toolset {
    /// An empty set called `name` (what a clash message calls it).
    ///
    /// ```
    /// assert!(toolsmith::toolset::Toolset::new("billing").is_empty());
    /// ```
    #[must_use]
    pub fn new(name: impl Into<Arc<str>>) -> Self {
        Self {
            name: name.into(),
            entries: Vec::new(),
        }
    }

    /// Adds a tool, builder style.
    ///
    /// ```
    /// use toolsmith::tool;
    /// use toolsmith::toolset::Toolset;
    ///
    /// /// Says hello. Read-only. Not for real conversations.
    /// #[tool(effect = "read")]
    /// fn say_hello() -> &'static str { "hello" }
    ///
    /// assert_eq!(Toolset::new("greetings").with(SayHello).names().collect::<Vec<_>>(), ["say_hello"]);
    /// ```
    #[must_use]
    pub fn with(self, tool: impl Tool) -> Self {
        self.with_arc(Arc::new(tool))
    }

    /// Adds a tool that is already shared.
    #[must_use]
    pub fn with_arc(mut self, tool: Arc<dyn Tool>) -> Self {
        self.entries.push(Entry {
            tool,
            shown: None,
            description: None,
            origin: Arc::clone(&self.name),
        });
        self
    }

    /// The set's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The names a model is shown, in order.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.entries.iter().map(Entry::shown_name)
    }

    /// How many tools the set holds.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// This set's tools followed by `other`'s, under this set's name. Each tool keeps the
    /// name of the set it came from for messages.
    ///
    /// ```
    /// use toolsmith::tool;
    /// use toolsmith::toolset::Toolset;
    ///
    /// /// Says hello. Read-only. Not for real conversations.
    /// #[tool(effect = "read")]
    /// fn say_hello() -> &'static str { "hello" }
    ///
    /// let a = Toolset::new("a").with(SayHello);
    /// let b = Toolset::new("b").with(SayHello);
    /// let err = a.clone().merge(b.clone()).unwrap_err();
    /// assert!(err.to_string().contains("toolset `a` and toolset `b`"), "{err}");
    /// // Prefixing one set shows the model two names, but it is still one tool twice.
    /// assert!(a.clone().merge(b.prefixed("b")).is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`ToolsetError::Clash`] when two tools would be shown under one name (in any
    /// provider's spelling) or are the same tool (one own name), naming both sets; any
    /// other [`ToolsetError`] a toolbox would refuse the merged set with.
    pub fn merge(mut self, other: Self) -> Result<Self, ToolsetError> {
        self.entries.extend(other.entries);
        self.check()?;
        Ok(self)
    }

    /// Every tool shown as `{prefix}_{name}` (shortened with a stable hash past 64
    /// characters, see [`fit_name`]). A view: the tools keep their own names behind the call.
    ///
    /// # Panics
    ///
    /// When `prefix` is empty or has characters outside `A-Z a-z 0-9 _ -`: a mistake in
    /// assembling the program, like a duplicate name in [`Toolbox::with`](crate::Toolbox::with).
    #[must_use]
    pub fn prefixed(mut self, prefix: &str) -> Self {
        assert!(
            !prefix.is_empty()
                && prefix
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-')),
            "the prefix `{prefix}` must be 1 or more characters from A-Z, a-z, 0-9, `_` and `-`"
        );
        for entry in &mut self.entries {
            let name = fit_name(&format!("{prefix}_{}", entry.shown_name()));
            entry.shown = Some(name);
        }
        self
    }

    /// The tool shown as `from` is shown as `to` instead (shortened with a stable hash past 64
    /// characters). A view: the tool keeps its own name behind the call.
    ///
    /// ```
    /// use toolsmith::tool;
    /// use toolsmith::toolset::Toolset;
    ///
    /// /// Says hello. Read-only. Not for real conversations.
    /// #[tool(effect = "read")]
    /// fn say_hello() -> &'static str { "hello" }
    ///
    /// let set = Toolset::new("greetings").with(SayHello).renamed("say_hello", "greet").unwrap();
    /// assert_eq!(set.names().collect::<Vec<_>>(), ["greet"]);
    /// assert!(Toolset::new("greetings").renamed("nope", "x").is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`ToolsetError::NotFound`] when no tool is shown as `from`; [`ToolsetError::InvalidName`]
    /// when `to` has characters outside `A-Z a-z 0-9 _ - .`.
    pub fn renamed(mut self, from: &str, to: &str) -> Result<Self, ToolsetError> {
        if !valid_name(to) {
            return Err(ToolsetError::InvalidName {
                name: to.to_owned(),
            });
        }
        let entry = self.entry_mut(from)?;
        entry.shown = Some(fit_name(to));
        Ok(self)
    }

    /// The tool shown as `name` is described to the model with `description` instead of its
    /// own (a view, like a rename).
    ///
    /// # Errors
    ///
    /// [`ToolsetError::NotFound`] when no tool is shown as `name`.
    pub fn described(
        mut self,
        name: &str,
        description: impl Into<String>,
    ) -> Result<Self, ToolsetError> {
        self.entry_mut(name)?.description = Some(description.into());
        Ok(self)
    }

    /// Only the tools whose definition (as a model is shown it) `keep` accepts, in order.
    ///
    /// ```
    /// use toolsmith::{tool, Effect};
    /// use toolsmith::toolset::Toolset;
    ///
    /// /// Says hello. Read-only. Not for real conversations.
    /// #[tool(effect = "read")]
    /// fn say_hello() -> &'static str { "hello" }
    ///
    /// /// Forgets a greeting. Destructive: it cannot be undone. Not for real data.
    /// #[tool(effect = "destructive", requires_approval)]
    /// fn forget() {}
    ///
    /// let set = Toolset::new("greetings").with(SayHello).with(Forget)
    ///     .filtered(|def| def.effect() == Some(Effect::Read));
    /// assert_eq!(set.names().collect::<Vec<_>>(), ["say_hello"]);
    /// ```
    #[must_use]
    pub fn filtered(mut self, keep: impl Fn(&ToolDefinition) -> bool) -> Self {
        self.entries.retain(|entry| match entry.view() {
            Some(view) => keep(&view),
            None => keep(entry.tool.definition()),
        });
        self
    }

    fn entry_mut(&mut self, shown: &str) -> Result<&mut Entry, ToolsetError> {
        let within = format!("toolset `{}`", self.name);
        self.entries
            .iter_mut()
            .find(|entry| entry.shown_name() == shown)
            .ok_or_else(|| ToolsetError::NotFound {
                name: crate::echo::echo(shown).into_owned(),
                within,
            })
    }

    /// Checks the set as a toolbox would take it.
    fn check(&self) -> Result<(), ToolsetError> {
        let mut names = NameTable::default();
        for entry in &self.entries {
            let def = entry.tool.definition();
            names.insert(def, entry.shown_name(), &entry.origin)?;
        }
        Ok(())
    }

    pub(crate) fn into_entries(self) -> Vec<Entry> {
        self.entries
    }
}

impl fmt::Debug for Toolset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Toolset")
            .field("name", &self.name)
            .field("tools", &self.names().collect::<Vec<_>>())
            .finish()
    }
}
