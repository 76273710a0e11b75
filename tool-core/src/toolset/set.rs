//! The toolset value: tools and the views a model is shown them through.

use std::fmt;
use std::sync::Arc;

use crate::definition::ToolDefinition;
use crate::tool::Tool;

use super::names::{NameTable, RegistrationError, fit_name, valid_name};

/// Why a set cannot be composed or added: the same error a toolbox refuses a tool with.
pub type ToolsetError = RegistrationError;

/// A named list of tools, composed as a value (see the [module docs](crate::toolset)).
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
