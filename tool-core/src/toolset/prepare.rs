//! A step that hides or re-describes tools for one request.

use std::collections::{HashMap, HashSet};
use std::ops::Deref;
use std::sync::Arc;

use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::tool::Tool;

/// Decides, per request, which of a toolbox's tools are offered and how they are described:
/// hide the write tools until the user has confirmed a plan, re-describe a tool with the
/// current account's limits. Set with [`Toolbox::with_prepare`](crate::Toolbox::with_prepare).
///
/// It runs with the context of the request ([`ProviderToolbox::request_for`], `export_for`,
/// an MCP listing) and of each call: a tool hidden for a context is refused for it exactly
/// as an unknown one, so a model cannot call what it was not offered. It cannot reorder or
/// add tools: the order of a tool block stays what a provider's prompt cache keys on.
///
/// [`ProviderToolbox::request_for`]: crate::ProviderToolbox::request_for
///
/// ```
/// use toolsmith::toolset::Prepared;
/// use toolsmith::{tool, Effect, ToolContext, Toolbox};
///
/// /// Reads a note. Read-only. Not for editing.
/// #[tool(effect = "read")]
/// fn read_note(
///     /// The note's id.
///     #[arg(range(max = 1000))]
///     id: u32,
/// ) -> String {
///     format!("note {id}")
/// }
///
/// /// Deletes a note. Destructive: it cannot be undone. Not for archiving.
/// #[tool(effect = "destructive", requires_approval)]
/// fn delete_note(
///     /// The note's id.
///     #[arg(range(max = 1000))]
///     id: u32,
/// ) {
///     let _ = id;
/// }
///
/// struct ReadOnly;
///
/// let toolbox = Toolbox::new().with(ReadNote).with(DeleteNote).with_prepare(
///     |ctx: &ToolContext, tools: &mut Prepared<'_>| {
///         if ctx.get::<ReadOnly>().is_some() {
///             tools.retain(|def| def.effect() == Some(Effect::Read));
///         }
///     },
/// );
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let ctx = ToolContext::new().with_extension(ReadOnly);
/// let offered = toolbox.definitions_for(&ctx).await;
/// assert_eq!(offered.iter().map(|d| d.name()).collect::<Vec<_>>(), ["read_note"]);
/// // A hidden tool is refused as if it did not exist.
/// let out = toolbox.call("delete_note", r#"{"id": 1}"#, &ctx).await;
/// assert_eq!(out.error().unwrap().code().as_str(), "unknown_tool");
/// # });
/// ```
pub trait Prepare: Send + Sync + 'static {
    /// Hides or re-describes `tools` for the request or call in `ctx`.
    fn prepare(&self, ctx: &ToolContext, tools: &mut Prepared<'_>);
}

impl<F> Prepare for F
where
    F: Fn(&ToolContext, &mut Prepared<'_>) + Send + Sync + 'static,
{
    fn prepare(&self, ctx: &ToolContext, tools: &mut Prepared<'_>) {
        self(ctx, tools);
    }
}

/// The index of each tool by the name a model is shown.
pub(crate) type ShownNames = HashMap<Arc<str>, usize, foldhash::fast::RandomState>;

/// A toolbox's tools as one [`Prepare`] step sees them: in order, each offered or hidden,
/// with the description a model will be shown.
///
/// Nothing is copied to make it: a step that hides or re-describes tools by name
/// ([`hide`](Self::hide), [`describe`](Self::describe)) costs the same whatever the number of
/// tools, and so does asking whether the one tool a call names is hidden. [`retain`](Self::retain)
/// and [`definitions`](Self::definitions) visit every tool.
pub struct Prepared<'a> {
    tools: &'a [Arc<dyn Tool>],
    /// By index: the definition a model is shown, where a toolset made one.
    views: &'a [Option<Arc<ToolDefinition>>],
    /// The index of the tool a model is shown by a name.
    by_shown: &'a ShownNames,
    /// The indices hidden.
    hidden: HashSet<usize, foldhash::fast::RandomState>,
    /// Re-descriptions, by index.
    described: Vec<(usize, String)>,
}

impl std::fmt::Debug for Prepared<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field(
                "offered",
                &self
                    .definitions()
                    .map(ToolDefinition::name)
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl<'a> Prepared<'a> {
    /// Every tool, in order, with the view a model is shown by index (its own definition
    /// where there is none), and how a shown name is found.
    pub(crate) fn new(
        tools: &'a [Arc<dyn Tool>],
        views: &'a [Option<Arc<ToolDefinition>>],
        by_shown: &'a ShownNames,
    ) -> Self {
        Self {
            tools,
            views,
            by_shown,
            hidden: HashSet::default(),
            described: Vec::new(),
        }
    }

    /// The definition a model is shown for the tool at `i`.
    fn shown(&self, i: usize) -> &'a ToolDefinition {
        match self.views.get(i) {
            Some(Some(view)) => view,
            _ => self.tools[i].definition(),
        }
    }

    /// The definitions still offered, in order, as a model is shown them (before this step's
    /// re-descriptions).
    pub fn definitions(&self) -> impl Iterator<Item = &ToolDefinition> + '_ {
        (0..self.tools.len())
            .filter(|i| !self.hidden.contains(i))
            .map(|i| self.shown(i))
    }

    /// Hides the tool a model is shown as `name`; `false` when there is none.
    pub fn hide(&mut self, name: &str) -> bool {
        self.index(name).map(|i| self.hidden.insert(i)).is_some()
    }

    /// Keeps offering only the tools `keep` accepts (hidden ones stay hidden).
    pub fn retain(&mut self, mut keep: impl FnMut(&ToolDefinition) -> bool) {
        for i in 0..self.tools.len() {
            if !self.hidden.contains(&i) && !keep(self.shown(i)) {
                self.hidden.insert(i);
            }
        }
    }

    /// Shows the tool a model is shown as `name` with `description` for this request;
    /// `false` when there is none.
    pub fn describe(&mut self, name: &str, description: impl Into<String>) -> bool {
        let Some(i) = self.index(name) else {
            return false;
        };
        let description = description.into();
        match self.described.iter_mut().find(|(at, _)| *at == i) {
            Some((_, text)) => *text = description,
            None => self.described.push((i, description)),
        }
        true
    }

    /// The index of the tool a model is shown as `shown`.
    fn index(&self, shown: &str) -> Option<usize> {
        self.by_shown
            .get(shown)
            .copied()
            .filter(|&i| i < self.tools.len())
    }

    /// Whether the tool at `index` is hidden.
    pub(crate) fn hides(&self, index: usize) -> bool {
        self.hidden.contains(&index)
    }

    /// The definitions offered, re-described where this step said so.
    pub(crate) fn into_offered(self) -> Vec<OfferedDef<'a>> {
        (0..self.tools.len())
            .filter(|i| !self.hidden.contains(i))
            .map(|i| {
                let shown = self.shown(i);
                match self.described.iter().find(|(at, _)| *at == i) {
                    Some((_, text)) => OfferedDef::Described(Box::new(
                        shown.view(shown.name().to_owned(), Some(text)),
                    )),
                    None => OfferedDef::Shown(shown),
                }
            })
            .collect()
    }
}

/// A definition offered for one request: as shown, or re-described by a prepare step.
pub(crate) enum OfferedDef<'a> {
    Shown(&'a ToolDefinition),
    Described(Box<ToolDefinition>),
}

impl Deref for OfferedDef<'_> {
    type Target = ToolDefinition;

    fn deref(&self) -> &ToolDefinition {
        match self {
            Self::Shown(def) => def,
            Self::Described(def) => def,
        }
    }
}
