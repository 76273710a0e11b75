//! The tool index: tools by name and in order, each provider's spelling of their names, and
//! which tools are offered where.

use std::collections::HashMap;
use std::sync::Arc;

use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::error::ToolError;
use crate::policy::{Enablement, ToolsChanged};
use crate::tool::Tool;
use crate::toolset::{NameTable, Prepare, Prepared, RegistrationError, ShownNames};

/// Name lookups on every call: foldhash is several times faster than SipHash on short keys,
/// and tool names are the application's own, not attacker-chosen map keys.
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The tools of a toolbox.
#[derive(Clone)]
pub(crate) struct ToolIndex {
    /// Registered name → index in `in_order`.
    pub(crate) by_name: FastMap<Arc<str>, usize>,
    /// The name a model is shown (a toolset's rename, or the registered name) → index.
    pub(crate) by_shown: ShownNames,
    pub(crate) in_order: Vec<Arc<dyn Tool>>,
    /// By index: the definition a model is shown, where a toolset renamed or re-described
    /// the tool (its own definition otherwise).
    pub(crate) views: Vec<Option<Arc<ToolDefinition>>>,
    /// By index: the toolset the tool came from (empty for a tool added on its own).
    pub(crate) origins: Vec<Arc<str>>,
    /// The names taken, own and shown (each provider's spelling → the registered name).
    pub(crate) names: NameTable,
    /// Tools offered only where their predicate says so.
    pub(crate) enablement: HashMap<String, Arc<dyn Enablement>>,
    /// What hides or re-describes tools for one request.
    pub(crate) prepare: Option<Arc<dyn Prepare>>,
    pub(crate) changes: ToolsChanged,
}

impl Default for ToolIndex {
    fn default() -> Self {
        Self {
            by_name: FastMap::default(),
            by_shown: ShownNames::default(),
            in_order: Vec::new(),
            names: NameTable::default(),
            views: Vec::new(),
            origins: Vec::new(),
            enablement: HashMap::new(),
            prepare: None,
            changes: ToolsChanged::new(),
        }
    }
}

impl ToolIndex {
    /// Adds a tool, or says why it cannot be added.
    pub(crate) fn insert(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistrationError> {
        self.insert_as(tool, None, Arc::from(""))
    }

    /// Adds a tool from `origin`, shown to models as `view` when a toolset renamed or
    /// re-described it, or says why it cannot be added.
    pub(crate) fn insert_as(
        &mut self,
        tool: Arc<dyn Tool>,
        view: Option<Arc<ToolDefinition>>,
        origin: Arc<str>,
    ) -> Result<(), RegistrationError> {
        let def = tool.definition();
        let shown = view.as_deref().unwrap_or(def).name();
        let key = self.names.insert(def, shown, &origin)?;
        self.by_shown.insert(Arc::from(shown), self.in_order.len());
        self.by_name.insert(key, self.in_order.len());
        self.in_order.push(tool);
        self.views.push(view);
        self.origins.push(origin);
        Ok(())
    }

    /// The definition a model is shown for the tool at `i`: a toolset's view of it, or its
    /// own.
    pub(crate) fn shown(&self, i: usize) -> &ToolDefinition {
        match &self.views[i] {
            Some(view) => view,
            None => self.in_order[i].definition(),
        }
    }

    /// The tool named `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.by_name.get(name).and_then(|&i| self.in_order.get(i))
    }

    /// Whether the tool `name` is offered only where a predicate (or a prepare step) says so
    /// (most toolboxes have none: no lookup then).
    #[inline]
    pub(crate) fn has_predicate(&self, name: &str) -> bool {
        self.prepare.is_some()
            || (!self.enablement.is_empty() && self.enablement.contains_key(name))
    }

    /// The prepare step's decisions for `ctx` over every tool (nothing hidden without one).
    pub(crate) fn prepared(&self, ctx: &ToolContext) -> Prepared<'_> {
        let mut prepared = Prepared::new(&self.in_order, &self.views, &self.by_shown);
        if let Some(prepare) = &self.prepare {
            prepare.prepare(ctx, &mut prepared);
        }
        prepared
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
