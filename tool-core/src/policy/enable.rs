//! Which tools are offered: per context, and switched at run time with a notice to
//! subscribers (an MCP server's clients re-read the list).

use std::sync::{Arc, Mutex};

use crate::context::ToolContext;
use crate::tool::BoxFuture;

/// Decides, per context, whether a tool is offered at all.
pub trait Enablement: Send + Sync + 'static {
    /// Whether the tool is enabled for this context.
    fn enabled<'a>(&'a self, ctx: &'a ToolContext) -> BoxFuture<'a, bool>;

    /// Called once when the enablement is given to a toolbox. An enablement that can change
    /// on its own (like [`Switch`]) keeps `changes` and calls [`ToolsChanged::notify`] when it
    /// does, so that connected clients (an MCP server's) re-read the tool list. The default
    /// does nothing: a predicate over the context changes only with the context.
    fn watch(&self, changes: ToolsChanged) {
        let _ = changes;
    }
}

/// Tells a toolbox's subscribers that the set of enabled tools may have changed (see
/// [`Toolbox::subscribe_changes`](crate::Toolbox::subscribe_changes)).
#[derive(Clone, Debug)]
pub struct ToolsChanged(Arc<tokio::sync::watch::Sender<u64>>);

impl ToolsChanged {
    pub(crate) fn new() -> Self {
        Self(Arc::new(tokio::sync::watch::Sender::new(0)))
    }

    /// Signals a change: every subscriber wakes once, however many changes it missed.
    pub fn notify(&self) {
        self.0
            .send_modify(|generation| *generation = generation.wrapping_add(1));
    }

    pub(crate) fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.0.subscribe()
    }
}

/// An [`Enablement`] flipped at run time: `set` turns the tool on or off everywhere and
/// notifies the toolbox's subscribers (an MCP server sends `notifications/tools/list_changed`).
///
/// ```
/// use toolsmith::{tool, ToolContext, Toolbox};
/// use toolsmith::policy::Switch;
///
/// /// Publish a draft by id. Writes data. Not for sent messages.
/// #[tool(effect = "write")]
/// fn publish_draft(
///     /// The draft's id.
///     #[arg(length(min = 1, max = 64))]
///     id: String,
/// ) {
///     let _ = id;
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let publishing = Switch::new(false);
/// let toolbox = Toolbox::new().with(PublishDraft).with_enabled_when("publish_draft", publishing.clone());
/// let mut changes = toolbox.subscribe_changes();
/// assert!(toolbox.definitions_for(&ToolContext::new()).await.is_empty());
///
/// publishing.set(true);
/// assert!(changes.has_changed().unwrap());
/// assert_eq!(toolbox.definitions_for(&ToolContext::new()).await.len(), 1);
/// # });
/// ```
#[derive(Clone, Debug, Default)]
pub struct Switch(Arc<SwitchState>);

#[derive(Debug, Default)]
struct SwitchState {
    on: std::sync::atomic::AtomicBool,
    watchers: Mutex<Vec<ToolsChanged>>,
}

impl Switch {
    /// A switch, initially `on` or off.
    #[must_use]
    pub fn new(on: bool) -> Self {
        let switch = Self::default();
        switch.0.on.store(on, std::sync::atomic::Ordering::Relaxed);
        switch
    }

    /// Whether the switch is on.
    #[must_use]
    pub fn is_on(&self) -> bool {
        self.0.on.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Turns the switch on or off; the toolboxes it was given to are notified when the
    /// state actually changes.
    pub fn set(&self, on: bool) {
        if self.0.on.swap(on, std::sync::atomic::Ordering::Relaxed) != on {
            let watchers = self
                .0
                .watchers
                .lock()
                .map(|w| w.clone())
                .unwrap_or_default();
            for changes in watchers {
                changes.notify();
            }
        }
    }
}

impl Enablement for Switch {
    fn enabled<'a>(&'a self, _ctx: &'a ToolContext) -> BoxFuture<'a, bool> {
        let on = self.is_on();
        Box::pin(async move { on })
    }

    fn watch(&self, changes: ToolsChanged) {
        if let Ok(mut watchers) = self.0.watchers.lock() {
            watchers.push(changes);
        }
    }
}

impl<F> Enablement for F
where
    F: Fn(&ToolContext) -> bool + Send + Sync + 'static,
{
    fn enabled<'a>(&'a self, ctx: &'a ToolContext) -> BoxFuture<'a, bool> {
        let enabled = self(ctx);
        Box::pin(async move { enabled })
    }
}
