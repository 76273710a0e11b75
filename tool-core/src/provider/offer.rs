//! What one request offered a model: the names it may call in its answer.

use serde::{Deserialize, Serialize};

/// The tools a request offered, in the provider's spelling: the calls answering that
/// request may name only these. A [`ToolBlock`](super::ToolBlock) gives it
/// ([`ToolBlock::offer`](super::ToolBlock::offer)); hand it to
/// [`ProviderToolbox::answering`](crate::ProviderToolbox::answering) to run the answer's
/// calls, and a call of anything else is refused as an unknown tool
/// ([`Refusal::NotOffered`](crate::error::Refusal::NotOffered)), whatever the toolbox holds.
///
/// It holds what the model could call: the tools in the block (a deferred tool once a search
/// can load it), only those of a subset ([`ToolChoice::Only`](super::ToolChoice::Only)) or
/// the one forced, none for [`ToolChoice::None`](super::ToolChoice::None), and the toolbox's
/// own search where it stands in for deferred tools. It is plain data: a run keeps it in its
/// sealed state, so that calls answered after a pause are judged against the same offer.
///
/// ```
/// use toolsmith::provider::{ToolChoice, ToolRequest};
/// use toolsmith::{tool, Dialect, Toolbox};
///
/// /// Reads a ticket. Read-only. Not for editing.
/// #[tool(effect = "read")]
/// fn read_ticket(
///     /// The ticket's id.
///     #[arg(range(max = 10_000))]
///     id: u32,
/// ) -> String {
///     format!("ticket {id}")
/// }
///
/// /// Closes a ticket. Writes the ticket's state. Not for deleting.
/// #[tool(effect = "write")]
/// fn close_ticket(
///     /// The ticket's id.
///     #[arg(range(max = 10_000))]
///     id: u32,
/// ) {
///     let _ = id;
/// }
///
/// let toolbox = Toolbox::new().with(ReadTicket).with(CloseTicket);
/// let request = ToolRequest {
///     choice: ToolChoice::Only { tools: vec!["read_ticket".into()], require: false },
///     ..ToolRequest::default()
/// };
/// let block = toolbox.provider(Dialect::OpenAiChat { strict: true }).request(&request).unwrap();
/// // Both tools are sent (OpenAI filters them), only one may be called.
/// assert_eq!(block.tool_names(), ["read_ticket", "close_ticket"]);
/// assert!(block.offer().contains("read_ticket"));
/// assert!(!block.offer().contains("close_ticket"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offer {
    /// Sorted, each once.
    names: Vec<String>,
    /// Whether the toolbox's prepare step chose these tools, in the request's context
    /// ([`ProviderToolbox::request_for`](crate::ProviderToolbox::request_for)): a call
    /// answering the offer is then not prepared again, its tool's place in the offer is
    /// enough (one lookup, however many tools there are).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    prepared: bool,
}

impl Offer {
    /// An offer of exactly `names` (in the provider's spelling).
    #[must_use]
    pub fn new(names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut names: Vec<String> = names.into_iter().map(Into::into).collect();
        names.sort_unstable();
        names.dedup();
        Self {
            names,
            prepared: false,
        }
    }

    /// The offer of a request whose tools the prepare step chose in its context.
    pub(crate) fn prepared(mut self) -> Self {
        self.prepared = true;
        self
    }

    /// Whether the prepare step chose these tools ([`Offer::prepared`]).
    pub(crate) fn is_prepared(&self) -> bool {
        self.prepared
    }

    /// Whether a call of `name` (the provider's spelling) answers this offer.
    #[must_use]
    pub fn contains(&self, name: &str) -> bool {
        self.names
            .binary_search_by(|n| n.as_str().cmp(name))
            .is_ok()
    }

    /// The names, sorted.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.names.iter().map(String::as_str)
    }

    /// How many names.
    #[must_use]
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether nothing may be called.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}
