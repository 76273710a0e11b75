//! A step that hides or re-describes tools for one request.

use std::ops::Deref;

use crate::context::ToolContext;
use crate::definition::ToolDefinition;

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

/// A toolbox's tools as one [`Prepare`] step sees them: in order, each offered or hidden,
/// with the description a model will be shown.
#[derive(Debug)]
pub struct Prepared<'a> {
    tools: Vec<Slot<'a>>,
}

#[derive(Debug)]
struct Slot<'a> {
    /// The tool's own name.
    own: &'a str,
    /// The definition a model is shown.
    shown: &'a ToolDefinition,
    hidden: bool,
    description: Option<String>,
}

impl<'a> Prepared<'a> {
    /// Every tool: `(own name, definition a model is shown)`, in order.
    pub(crate) fn new(tools: Vec<(&'a str, &'a ToolDefinition)>) -> Self {
        Self {
            tools: tools
                .into_iter()
                .map(|(own, shown)| Slot {
                    own,
                    shown,
                    hidden: false,
                    description: None,
                })
                .collect(),
        }
    }

    /// The definitions still offered, in order, as a model is shown them (before this step's
    /// re-descriptions).
    pub fn definitions(&self) -> impl Iterator<Item = &ToolDefinition> + '_ {
        self.tools
            .iter()
            .filter(|slot| !slot.hidden)
            .map(|slot| slot.shown)
    }

    /// Hides the tool a model is shown as `name`; `false` when there is none.
    pub fn hide(&mut self, name: &str) -> bool {
        self.slot(name).map(|slot| slot.hidden = true).is_some()
    }

    /// Keeps offering only the tools `keep` accepts (hidden ones stay hidden).
    pub fn retain(&mut self, mut keep: impl FnMut(&ToolDefinition) -> bool) {
        for slot in &mut self.tools {
            if !slot.hidden && !keep(slot.shown) {
                slot.hidden = true;
            }
        }
    }

    /// Shows the tool a model is shown as `name` with `description` for this request;
    /// `false` when there is none.
    pub fn describe(&mut self, name: &str, description: impl Into<String>) -> bool {
        let description = description.into();
        self.slot(name)
            .map(|slot| slot.description = Some(description))
            .is_some()
    }

    fn slot(&mut self, shown: &str) -> Option<&mut Slot<'a>> {
        self.tools
            .iter_mut()
            .find(|slot| slot.shown.name() == shown)
    }

    /// Whether the tool of this own name is hidden.
    pub(crate) fn hides(&self, own: &str) -> bool {
        self.tools.iter().any(|slot| slot.hidden && slot.own == own)
    }

    /// The definitions offered, re-described where this step said so.
    pub(crate) fn into_offered(self) -> Vec<OfferedDef<'a>> {
        self.tools
            .into_iter()
            .filter(|slot| !slot.hidden)
            .map(|slot| match slot.description {
                Some(text) => OfferedDef::Described(Box::new(
                    slot.shown.view(slot.shown.name().to_owned(), Some(&text)),
                )),
                None => OfferedDef::Shown(slot.shown),
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
