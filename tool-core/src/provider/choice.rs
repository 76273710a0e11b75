//! The request's tool block: the tools, which of them the model may or must call, whether it
//! may call several at once, and where the prompt cache may break, in each provider's words.
//!
//! [`ToolRequest`] says what the application wants once, for every provider;
//! [`ProviderToolbox::request`](crate::toolbox::ProviderToolbox::request) turns it into the
//! request fields of one provider ([`ToolBlock`]) and says what it had to do for that provider
//! ([`ChoiceReport`]): whether a subset was filtered by the provider (the cached tool list
//! unchanged) or trimmed from the list, and every setting the provider cannot express.

use std::fmt;

use serde_json::{Map, Value, json};

use crate::dialect::Dialect;

/// Which tools the model may or must call in a request.
///
/// Names are the tools' registered names (the ones `#[tool]` gave them); each provider's
/// spelling is written for it.
///
/// ```
/// use toolsmith::provider::ToolChoice;
/// let only = ToolChoice::Only { tools: vec!["search_web".into()], require: false };
/// assert!(!only.forces_a_call());
/// assert!(ToolChoice::Tool("search_web".into()).forces_a_call());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides: a call of any tool, several, or a text answer.
    #[default]
    Auto,
    /// No tool call: the model answers in text (the tools stay in the request, so the cached
    /// prefix is unchanged).
    None,
    /// At least one call, of any tool.
    Required,
    /// A call of this tool.
    Tool(String),
    /// Only these tools: the model may call them or answer in text (`require: false`), or
    /// must call at least one of them (`require: true`).
    Only {
        /// The registered names of the tools allowed.
        tools: Vec<String>,
        /// Whether a call is required.
        require: bool,
    },
}

impl ToolChoice {
    /// Whether this choice makes the model call a tool: the choices a [`Reset`] relaxes.
    #[must_use]
    pub fn forces_a_call(&self) -> bool {
        matches!(
            self,
            Self::Required | Self::Tool(_) | Self::Only { require: true, .. }
        )
    }

    /// The choice once a forced one is reset: [`Auto`](Self::Auto), or the same subset
    /// without the requirement (the subset stays, and with it the cache-friendly filter).
    #[must_use]
    pub fn relaxed(&self) -> Self {
        match self {
            Self::Only { tools, .. } => Self::Only {
                tools: tools.clone(),
                require: false,
            },
            Self::Required | Self::Tool(_) => Self::Auto,
            other => other.clone(),
        }
    }
}

/// When a choice that forces a call goes back to the model's own choice. A forced choice that
/// is never reset makes the model call a tool on every turn: the loop never ends.
///
/// [`Turn::next_request`](crate::toolbox::Turn::next_request) applies it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum Reset {
    /// After the first turn with a call (the default, as openai-agents does).
    #[default]
    AfterFirstCall,
    /// After this many calls, over as many turns as they take.
    AfterCalls(u32),
    /// Never. The application resets it itself, or the loop's limits end the run.
    Never,
}

/// The order tools are exported in: the same in every process and every run, so that a
/// provider's cached prefix stays warm.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum ExportOrder {
    /// The order the tools were registered in (the default).
    #[default]
    Registered,
    /// By registered name.
    ByName,
}

/// How a model finds deferred tools ([`ToolRequest::defer`]) where the provider searches them
/// itself (Anthropic; OpenAI Responses, whose hosted search has one kind). Elsewhere the
/// toolbox's own search tool ([`LOCAL_SEARCH_TOOL`](crate::provider::LOCAL_SEARCH_TOOL))
/// ranks by BM25.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum ToolSearch {
    /// Words ranked by BM25 (the default).
    #[default]
    Bm25,
    /// Regular expressions (Anthropic's regex search tool).
    Regex,
}

/// Tools grouped under one name with a summary (OpenAI Responses' `namespace`): the model sees
/// the namespace's name and description, and finds its tools through tool search. Other
/// providers get the tools one by one, and the report says so.
///
/// ```
/// use toolsmith::provider::Namespace;
/// let crm = Namespace {
///     name: "crm".into(),
///     description: "Customers and their orders.".into(),
///     tools: vec!["list_open_orders".into(), "refund_order".into()],
/// };
/// # let _ = crm;
/// ```
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Namespace {
    /// The namespace's name.
    pub name: String,
    /// What its tools are for, for the model.
    pub description: String,
    /// The registered names of its tools.
    pub tools: Vec<String>,
}

/// What an application wants of the tool block of a request, for any provider.
///
/// ```
/// use toolsmith::provider::{Reset, ToolChoice, ToolRequest};
/// let request = ToolRequest {
///     choice: ToolChoice::Tool("search_web".into()),
///     reset: Reset::AfterFirstCall,
///     parallel: Some(false),
///     ..ToolRequest::default()
/// };
/// assert_eq!(request.forced_calls, 0);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolRequest {
    /// Which tools the model may or must call.
    pub choice: ToolChoice,
    /// Whether the model may call several tools in one turn: `None` leaves the provider's
    /// default (on, for every provider). A `sequential` tool among those offered turns it off.
    pub parallel: Option<bool>,
    /// When a forced choice goes back to the model's own.
    pub reset: Reset,
    /// The calls made under the current forced choice;
    /// [`Turn::next_request`](crate::toolbox::Turn::next_request) counts them.
    pub forced_calls: u32,
    /// The order of the tools.
    pub order: ExportOrder,
    /// Anthropic: mark the prompt-cache breakpoint (`cache_control`) on the last tool of the
    /// stable prefix (the tools before any tool offered only under a condition, deferred
    /// tools left out). Other providers cache the prefix on their own, and the flag is
    /// ignored for them.
    pub cache_breakpoint: bool,
    /// Tools the model finds through tool search instead of receiving them (registered
    /// names): sent with `defer_loading` where the provider searches (Anthropic, OpenAI
    /// Responses), left out where it does not (OpenAI Chat, Gemini), with the toolbox's own
    /// search tool in their place.
    pub defer: Vec<String>,
    /// How the provider's search finds deferred tools.
    pub search: ToolSearch,
    /// Groups of tools (OpenAI Responses namespaces).
    pub namespaces: Vec<Namespace>,
    /// Tools the provider runs, sent after the function tools in the provider's wire form
    /// ([`HostedTool`](super::HostedTool)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosted: Vec<super::HostedTool>,
    /// Deferred tools the toolbox's search has found, in the provider's spelling and the order
    /// found: sent in full, after the other tools, so the cached prefix stays.
    /// [`Turn::next_request`](crate::toolbox::Turn::next_request) adds them.
    pub revealed: Vec<String>,
    /// Tools a program the provider runs may call (registered names): programmatic tool
    /// calling. Anthropic: each names the code execution tool in `allowed_callers`, and the
    /// code execution tool joins the request if it is not there. OpenAI Responses: each has
    /// `allowed_callers` with `"programmatic"` and its output schema (`output_schema`), and
    /// the `programmatic_tool_calling` tool joins the request. Other dialects have no such
    /// calls: [`RequestError::ProgrammaticUnsupported`]. See docs/code-mode.md.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub programmatic: Vec<String>,
    /// Whether the [`programmatic`](Self::programmatic) tools are for programs only: the
    /// model cannot call them directly (`allowed_callers` names only the program).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub programmatic_only: bool,
}

impl ToolRequest {
    /// The request with the tools a search found added to [`revealed`](Self::revealed) (each
    /// once, in the order found).
    #[must_use]
    pub fn with_revealed(mut self, found: impl IntoIterator<Item = String>) -> Self {
        for name in found {
            if !self.revealed.contains(&name) {
                self.revealed.push(name);
            }
        }
        self
    }

    /// The request for the next turn, after one in which the model made `calls` calls: the
    /// forced choice counted, and relaxed once [`reset`](Self::reset) says so.
    ///
    /// ```
    /// use toolsmith::provider::{Reset, ToolChoice, ToolRequest};
    /// let forced = ToolRequest { choice: ToolChoice::Required, reset: Reset::AfterCalls(2), ..Default::default() };
    /// let once = forced.after_calls(1);
    /// assert_eq!(once.choice, ToolChoice::Required);
    /// assert_eq!(once.after_calls(1).choice, ToolChoice::Auto);
    /// ```
    #[must_use]
    pub fn after_calls(&self, calls: usize) -> Self {
        let mut next = self.clone();
        if !self.choice.forces_a_call() || calls == 0 {
            return next;
        }
        next.forced_calls = self
            .forced_calls
            .saturating_add(u32::try_from(calls).unwrap_or(u32::MAX));
        let done = match self.reset {
            Reset::AfterFirstCall => true,
            Reset::AfterCalls(n) => next.forced_calls >= n,
            Reset::Never => false,
        };
        if done {
            next.choice = self.choice.relaxed();
            next.forced_calls = 0;
        }
        next
    }
}

/// How a subset of the tools ([`ToolChoice::Only`]) reached the provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Subset {
    /// No subset: every tool is offered.
    All,
    /// Every tool is in the request and the provider filters them (OpenAI `allowed_tools`,
    /// Gemini `allowedFunctionNames`): the cached tool list is unchanged.
    Filtered,
    /// Only the subset is in the request (Anthropic, which has no filter): the tool list, and
    /// with it the cached prefix, differs from the full one.
    Trimmed,
}

/// What [`ProviderToolbox::request`](crate::toolbox::ProviderToolbox::request) did for one
/// provider: nothing is changed silently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChoiceReport {
    /// How a subset was sent.
    pub subset: Subset,
    /// Whether parallel calls were allowed in the request (`None`: the provider's default).
    pub parallel: Option<bool>,
    /// Each setting the provider could not express as asked, and what was sent instead.
    pub notes: Vec<String>,
}

/// The tool block of one request, for one provider: the fields to put in the request body,
/// and what it took.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolBlock {
    /// The request body's fields: `tools` and, as the request says, `tool_choice` and
    /// `parallel_tool_calls` (OpenAI), `tool_choice` (Anthropic), `toolConfig` (Gemini).
    pub fields: Map<String, Value>,
    /// What was done for this provider.
    pub report: ChoiceReport,
    /// Each tool's name (the provider's spelling) and its exported text, in order.
    pub(crate) tools: Vec<(String, String)>,
    /// The entries sent deferred (the model loads them through tool search).
    #[cfg_attr(not(feature = "tokens"), allow(dead_code))]
    pub(crate) deferred: Vec<String>,
    /// Deferred tools held back from the list where the toolbox's own search finds them
    /// (OpenAI Chat, Gemini): each name and the text it is sent as once found.
    #[cfg_attr(not(feature = "tokens"), allow(dead_code))]
    pub(crate) held: Vec<(String, String)>,
    /// The dialect the block is for.
    #[cfg_attr(not(feature = "tokens"), allow(dead_code))]
    pub(crate) dialect: Dialect,
    /// HTTP headers the request needs for what the block holds: Anthropic's
    /// `anthropic-beta` for computer use and its MCP connector. Empty for most blocks.
    pub headers: Vec<(String, String)>,
    /// What the model may call in its answer.
    pub(crate) offer: super::Offer,
}

impl ToolBlock {
    /// What the model may call in its answer to this request: the calls answering it are
    /// judged against it ([`ProviderToolbox::answering`](crate::ProviderToolbox::answering)).
    #[must_use]
    pub fn offer(&self) -> &super::Offer {
        &self.offer
    }

    /// The names of the tools in the block, in order, in the provider's spelling.
    #[must_use]
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(|(name, _)| name.as_str()).collect()
    }

    /// A SHA-256 of the tools' bytes (hex): equal for two requests exactly when their tool
    /// lists are byte for byte the same, the prefix a provider caches.
    #[must_use]
    pub fn tools_hash(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut hasher = Sha256::new();
        for (_, text) in &self.tools {
            hasher.update(text.len().to_le_bytes());
            hasher.update(text.as_bytes());
        }
        let mut hex = String::with_capacity(64);
        crate::json::canonical::push_hex(&mut hex, &hasher.finalize());
        hex
    }

    /// How the tools changed since `before` (the previous request's block), as a provider's
    /// prompt cache sees it.
    ///
    /// ```
    /// use toolsmith::provider::{CacheChange, ToolRequest};
    /// use toolsmith::{tool, Dialect, Toolbox};
    ///
    /// /// Says hello. Read-only. Not for real conversations.
    /// #[tool(effect = "read")]
    /// fn say_hello() -> &'static str { "hello" }
    ///
    /// /// Says goodbye. Read-only. Not for real conversations.
    /// #[tool(effect = "read")]
    /// fn say_goodbye() -> &'static str { "goodbye" }
    ///
    /// let request = ToolRequest::default();
    /// let dialect = Dialect::Anthropic { strict: false };
    /// let one = Toolbox::new().with(SayHello);
    /// let two = Toolbox::new().with(SayHello).with(SayGoodbye);
    /// let before = one.provider(dialect).request(&request).unwrap();
    /// let after = two.provider(dialect).request(&request).unwrap();
    /// assert_eq!(after.change_from(&before), CacheChange::Appended(vec!["say_goodbye".into()]));
    /// assert!(matches!(before.change_from(&after), CacheChange::Broken(_)));
    /// assert_ne!(before.tools_hash(), after.tools_hash());
    /// ```
    #[must_use]
    pub fn change_from(&self, before: &ToolBlock) -> CacheChange {
        let kept = before
            .tools
            .iter()
            .zip(&self.tools)
            .take_while(|(a, b)| a == b)
            .count();
        if kept == before.tools.len() {
            if kept == self.tools.len() {
                return CacheChange::Unchanged;
            }
            return CacheChange::Appended(
                self.tools[kept..].iter().map(|(n, _)| n.clone()).collect(),
            );
        }
        let (name, _) = &before.tools[kept];
        let reason = match self.tools.iter().position(|(n, _)| n == name) {
            None => format!("`{name}` was removed"),
            Some(at) if at == kept => format!("`{name}` changed"),
            Some(_) => format!(
                "the order changed at `{name}` (now `{}`)",
                self.tools.get(kept).map_or("nothing", |(n, _)| n.as_str())
            ),
        };
        CacheChange::Broken(reason)
    }
}

/// How a request's tools changed from the one before, for the prompt cache.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheChange {
    /// The same tools, byte for byte: the cached prefix is used.
    Unchanged,
    /// The same tools with these added at the end (the provider's spelling): the prefix up
    /// to them is still cached.
    Appended(Vec<String>),
    /// The tools before changed, and the cache from that point is lost: why.
    Broken(String),
}

/// Why a tool block could not be made: nothing is sent.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestError {
    /// The choice names a tool the toolbox does not have (or does not offer here).
    UnknownTool {
        /// The name.
        name: String,
        /// The tools offered, by registered name.
        available: Vec<String>,
    },
    /// A subset with no tool in it.
    EmptySubset,
    /// The dialect has no request to put a tool choice in (MCP: the client's model chooses).
    NoToolChoice(&'static str),
    /// The choice forces a call of a deferred tool, which the model has not loaded.
    DeferredChoice(String),
    /// A tool of the toolbox is named like the toolbox's own search tool, which deferral
    /// needs for this provider.
    SearchNameTaken,
    /// A namespace is named like a tool or twice, has a name a provider does not take (1 to
    /// 64 of `A-Z a-z 0-9 _ -`), or has no tools.
    NamespaceName(String),
    /// A tool is in two namespaces.
    NamespaceTwice(String),
    /// The choice requires a call, and no tool is offered.
    NoTools,
    /// A tool the dialect cannot express.
    Export(crate::provider::ExportError),
    /// A hosted tool the provider does not have.
    HostedUnsupported {
        /// The provider ([`Dialect::provider`]).
        provider: &'static str,
        /// The tool's kind (`web_fetch`, `remote_mcp`, ...).
        tool: &'static str,
    },
    /// A hosted tool the provider has, with a setting it cannot express and the tool needs.
    HostedSetting {
        /// The provider ([`Dialect::provider`]).
        provider: &'static str,
        /// The tool's kind.
        tool: &'static str,
        /// What is missing, and what to do.
        why: String,
    },
    /// A function tool is named like a hosted tool of the request (`web_search`,
    /// `web_fetch`, `code_execution`, `computer`): the model could not tell them apart.
    HostedNameTaken(String),
    /// Tools marked callable from a program, for a provider that runs no program with tools
    /// (its name: [`Dialect::provider`]).
    ProgrammaticUnsupported(&'static str),
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownTool { name, available } => write!(
                f,
                "the tool choice names `{}`, which is not offered; the tools are: {}",
                crate::echo::echo(name),
                available.join(", ")
            ),
            Self::EmptySubset => f.write_str(
                "the tool choice allows an empty set of tools; use `ToolChoice::None` for no call",
            ),
            Self::NoToolChoice(dialect) => write!(
                f,
                "{dialect} has no tool choice: the client's model chooses among the tools listed"
            ),
            Self::DeferredChoice(name) => write!(
                f,
                "the tool choice forces `{}`, which is deferred: the model has not loaded it; do not defer it, or let the model find it",
                crate::echo::echo(name)
            ),
            Self::SearchNameTaken => write!(
                f,
                "a tool is named `{}`, the name of the toolbox's own tool search that deferring tools needs here; rename it",
                crate::provider::LOCAL_SEARCH_TOOL
            ),
            Self::NamespaceName(name) => write!(
                f,
                "the namespace `{}` is empty, named like a tool or another namespace, or not 1 to 64 of `A-Z a-z 0-9 _ -`; give it tools and a name of its own",
                crate::echo::echo(name)
            ),
            Self::NoTools => f.write_str(
                "the tool choice requires a call, and no tool is offered; offer a tool, or let the model answer (`ToolChoice::Auto`)",
            ),
            Self::NamespaceTwice(tool) => write!(
                f,
                "the tool `{}` is in two namespaces; put it in one",
                crate::echo::echo(tool)
            ),
            Self::Export(err) => fmt::Display::fmt(err, f),
            Self::HostedUnsupported { provider, tool } => write!(
                f,
                "{provider} has no hosted `{tool}` tool; leave it out of the request for {provider}, or offer a function tool that does the same"
            ),
            Self::HostedSetting {
                provider,
                tool,
                why,
            } => write!(f, "{provider} cannot take the hosted `{tool}` tool as set: {why}"),
            Self::HostedNameTaken(name) => write!(
                f,
                "a function tool is named `{}`, the name of a hosted tool in the request; rename the function tool",
                crate::echo::echo(name)
            ),
            Self::ProgrammaticUnsupported(provider) => write!(
                f,
                "{provider} runs no programs that call tools: programmatic tool calling is Anthropic's and OpenAI Responses'; leave `programmatic` empty for {provider}, or give the model the sandbox's `run_code` tool"
            ),
        }
    }
}

impl std::error::Error for RequestError {}

impl From<crate::provider::ExportError> for RequestError {
    fn from(err: crate::provider::ExportError) -> Self {
        Self::Export(err)
    }
}

/// One tool as the block is built from it: its exported name and value, whether it is
/// offered only under a condition, and whether it must run alone.
pub(crate) struct Offered {
    pub(crate) registered: String,
    pub(crate) exported: String,
    pub(crate) value: Value,
    /// The tool's output schema, for a program that calls it (OpenAI's `output_schema`).
    pub(crate) output_schema: Option<Value>,
    pub(crate) conditional: bool,
    pub(crate) sequential: bool,
}

/// One entry of the block's tool list: a tool, the search tool or a namespace.
struct Entry {
    name: String,
    value: Value,
    conditional: bool,
    deferred: bool,
}

/// Builds the block for `dialect` from the tools offered, in order.
pub(crate) fn build(
    dialect: Dialect,
    request: &ToolRequest,
    mut offered: Vec<Offered>,
) -> Result<ToolBlock, RequestError> {
    if dialect == Dialect::Mcp {
        return Err(RequestError::NoToolChoice(dialect.name()));
    }
    if request.order == ExportOrder::ByName {
        offered.sort_by(|a, b| a.registered.cmp(&b.registered));
    }
    let (subset, require) = check_names(dialect, request, &offered)?;
    let native_search = matches!(
        dialect,
        Dialect::Anthropic { .. } | Dialect::OpenAiResponses { .. }
    );
    // A deferred tool the toolbox's search has revealed is loaded like any other.
    let unloaded = |name: &str| {
        request.defer.iter().any(|d| d == name)
            && (native_search || !request.revealed.contains(&dialect.tool_name(name)))
    };
    let searching = !request.defer.is_empty();

    let with_code_execution = with_code_execution(dialect, request);
    let request = with_code_execution.as_ref().unwrap_or(request);
    let mut hosted = hosted_of(dialect, request, &offered)?;
    super::program::code_execution_version(dialect, &request.programmatic, &mut hosted.entries);

    let mut notes = hosted.notes.clone();
    // Anthropic has no filter: a subset is trimmed from the list.
    let trim = subset.is_some() && matches!(dialect, Dialect::Anthropic { .. });
    if trim {
        notes.push(
            "Anthropic has no filter for a subset of the tools: only the subset is sent, so the tool list (and the cached prefix) differs from the full one".to_owned(),
        );
        if let Some(names) = subset {
            offered.retain(|t| names.contains(&t.registered));
        }
    }
    let (mut parallel, offer) = parallel_and_offer(
        request,
        subset,
        &offered,
        &|t: &Offered| native_search || !unloaded(&t.registered),
        searching && !native_search,
        &mut notes,
    );
    let spellings: Vec<(String, String)> = offered
        .iter()
        .map(|t| (t.registered.clone(), t.exported.clone()))
        .collect();
    let spelled = |name: &str| -> String {
        spellings
            .iter()
            .find(|(registered, _)| registered == name)
            .map_or_else(|| dialect.tool_name(name), |(_, exported)| exported.clone())
    };
    let subset_names = match subset {
        Some(names) => allowed_names(
            names,
            &spelled,
            &|name| !native_search && unloaded(name),
            &mut notes,
        )?,
        None => Vec::new(),
    };
    let mut held = Vec::new();
    let entries = entries(
        dialect,
        request,
        offered,
        native_search,
        &mut notes,
        &mut held,
    );

    if entries.is_empty() && hosted.entries.is_empty() {
        return empty_block(dialect, request, notes, held, offer);
    }
    let mut values: Vec<Value> = entries.iter().map(|e| e.value.clone()).collect();
    if request.cache_breakpoint && matches!(dialect, Dialect::Anthropic { .. }) {
        place_breakpoint(&entries, &mut values, &mut notes);
    }
    let mut tools: Vec<(String, String)> = entries
        .iter()
        .zip(&values)
        .map(|(e, v)| (e.name.clone(), v.to_string()))
        .collect();
    // The provider's own tools come after the functions, in the order given: part of the
    // cached prefix like any tool.
    for (tool, entry) in request.hosted.iter().zip(&hosted.entries) {
        tools.push((tool.kind().to_owned(), entry.to_string()));
    }
    let functions = !values.is_empty();
    if dialect != Dialect::Gemini {
        values.extend(hosted.entries.iter().cloned());
    }
    super::program::push_program_tool(dialect, &request.programmatic, &mut tools, &mut values);
    let deferred_names: Vec<String> = entries
        .iter()
        .filter(|e| e.deferred)
        .map(|e| e.name.clone())
        .collect();

    let mut fields = choice_fields(
        dialect,
        &Choosing {
            request,
            spelled: &spelled,
            subset_names: &subset_names,
            require,
        },
        values,
        functions,
        &hosted.entries,
        &mut parallel,
        &mut notes,
    );
    fields.extend(hosted.fields);
    let headers = if hosted.betas.is_empty() {
        Vec::new()
    } else {
        vec![("anthropic-beta".to_owned(), hosted.betas.join(","))]
    };
    let subset = match (subset, trim) {
        (None, _) => Subset::All,
        (Some(_), true) => Subset::Trimmed,
        (Some(_), false) => Subset::Filtered,
    };
    Ok(ToolBlock {
        fields,
        report: ChoiceReport {
            subset,
            parallel,
            notes,
        },
        tools,
        deferred: deferred_names,
        held,
        dialect,
        headers,
        offer,
    })
}

/// The request with Anthropic's code execution tool added, when it marks tools for programs
/// and has none: Anthropic's programs run in it.
fn with_code_execution(dialect: Dialect, request: &ToolRequest) -> Option<ToolRequest> {
    super::program::needs_code_execution(dialect, &request.programmatic, &request.hosted).then(
        || {
            let mut more = request.clone();
            more.hosted.push(super::HostedTool::CodeExecution(
                super::CodeExecution::default(),
            ));
            more
        },
    )
}

/// The block of a request that offers no tools: providers refuse an empty tool list, and a
/// tool choice or parallel calls without tools, so nothing is sent, and a choice that needs a
/// call cannot be had.
fn empty_block(
    dialect: Dialect,
    request: &ToolRequest,
    mut notes: Vec<String>,
    held: Vec<(String, String)>,
    offer: super::Offer,
) -> Result<ToolBlock, RequestError> {
    if request.choice.forces_a_call() {
        return Err(RequestError::NoTools);
    }
    notes.push("no tools are offered: the request carries no tool fields".to_owned());
    Ok(ToolBlock {
        fields: Map::new(),
        report: ChoiceReport {
            subset: Subset::All,
            parallel: None,
            notes,
        },
        tools: Vec::new(),
        deferred: Vec::new(),
        held,
        dialect,
        headers: Vec::new(),
        offer,
    })
}

/// A subset's names in the provider's spelling, each once. Where the toolbox searches, a
/// deferred tool not found yet (`hidden`) is not in the list: a filter naming it would be
/// refused by the provider, so it is left out and noted.
fn allowed_names(
    names: &[String],
    spelled: &dyn Fn(&str) -> String,
    hidden: &dyn Fn(&str) -> bool,
    notes: &mut Vec<String>,
) -> Result<Vec<String>, RequestError> {
    let mut allowed: Vec<String> = Vec::new();
    for name in names {
        if hidden(name) {
            notes.push(format!(
                "`{name}` is deferred and not found yet: it is left out of the allowed tools"
            ));
        } else {
            let spelled = spelled(name);
            // A name given twice is sent once.
            if !allowed.contains(&spelled) {
                allowed.push(spelled);
            }
        }
    }
    if allowed.is_empty() {
        return Err(RequestError::DeferredChoice(names[0].clone()));
    }
    Ok(allowed)
}

/// Anthropic's cache breakpoint, on the last tool of the stable prefix: the prefix ends at
/// the first conditional tool, and deferred tools are outside it and never carry one.
fn place_breakpoint(entries: &[Entry], values: &mut [Value], notes: &mut Vec<String>) {
    // The stable prefix ends at the first conditional tool; deferred tools are outside it
    // and never carry a breakpoint.
    let stable = entries.iter().take_while(|e| !e.conditional).count();
    match entries[..stable].iter().rposition(|e| !e.deferred) {
        Some(last) => {
            if let Some(Value::Object(tool)) = values.get_mut(last) {
                tool.insert("cache_control".into(), json!({"type": "ephemeral"}));
            }
        }
        None => notes.push(
            "no tool is offered unconditionally and loaded first: no cache breakpoint is placed"
                .to_owned(),
        ),
    }
}

/// The provider's own tools: each in its wire form, or refused naming the provider; a
/// function tool may not take the name the model calls one of them by.
fn hosted_of(
    dialect: Dialect,
    request: &ToolRequest,
    offered: &[Offered],
) -> Result<super::hosted::HostedBlock, RequestError> {
    let hosted = super::hosted::export(dialect, &request.hosted).map_err(|err| match err {
        super::hosted::HostedError::Unsupported { provider, tool } => {
            RequestError::HostedUnsupported { provider, tool }
        }
        super::hosted::HostedError::Setting {
            provider,
            tool,
            why,
        } => RequestError::HostedSetting {
            provider,
            tool,
            why,
        },
    })?;
    for tool in &request.hosted {
        if let Some(name) = tool.reserved_name()
            && offered.iter().any(|t| t.exported == name)
        {
            return Err(RequestError::HostedNameTaken(name.to_owned()));
        }
    }
    Ok(hosted)
}

/// Whether parallel calls are allowed (off when asked, or when a tool that must run alone
/// may be called), and what the model may call: the tools it may be asked for that are
/// `loaded`, and the toolbox's own search where it stands in for deferred tools
/// (`local_search`) and the choice leaves the model free.
fn parallel_and_offer(
    request: &ToolRequest,
    subset: Option<&[String]>,
    offered: &[Offered],
    loaded: &dyn Fn(&Offered) -> bool,
    local_search: bool,
    notes: &mut Vec<String>,
) -> (Option<bool>, super::Offer) {
    // Parallel calls: off when asked, or when a tool that must run alone may be called.
    let may_call: Vec<&Offered> = match (&request.choice, subset) {
        (ToolChoice::None, _) => Vec::new(),
        (ToolChoice::Tool(name), _) => offered.iter().filter(|t| &t.registered == name).collect(),
        (_, Some(names)) => offered
            .iter()
            .filter(|t| names.contains(&t.registered))
            .collect(),
        _ => offered.iter().collect(),
    };
    let mut parallel = request.parallel;
    if parallel != Some(false)
        && let Some(alone) = may_call.iter().find(|t| t.sequential)
    {
        notes.push(format!(
            "`{}` runs alone (sequential): parallel calls are turned off",
            alone.registered
        ));
        parallel = Some(false);
    }
    if matches!(request.choice, ToolChoice::None) {
        parallel = None;
    }
    // What the model may call: what it may be asked for, once loaded; the toolbox's own search
    // where it stands in for deferred tools and the choice leaves the model free.
    let mut callable: Vec<String> = may_call
        .iter()
        .filter(|t| loaded(t))
        .map(|t| t.exported.clone())
        .collect();
    if local_search && matches!(request.choice, ToolChoice::Auto | ToolChoice::Required) {
        callable.push(super::search::LOCAL_SEARCH_TOOL.to_owned());
    }
    (parallel, super::Offer::new(callable))
}

/// What writing a block's choice needs: the request, each registered name in this
/// provider's spelling, the subset's names so spelled and whether a call is required.
struct Choosing<'a> {
    request: &'a ToolRequest,
    spelled: &'a dyn Fn(&str) -> String,
    subset_names: &'a [String],
    require: bool,
}

/// The request body's tool fields for `dialect`: the tools (`values`, then the provider's
/// own `hosted_entries`), the choice and parallel calls, in its words. What cannot be said
/// as asked is noted, and `parallel` is left as sent.
#[allow(clippy::too_many_arguments)]
fn choice_fields(
    dialect: Dialect,
    choosing: &Choosing<'_>,
    values: Vec<Value>,
    functions: bool,
    hosted_entries: &[Value],
    parallel: &mut Option<bool>,
    notes: &mut Vec<String>,
) -> Map<String, Value> {
    let mut fields = Map::new();
    match dialect {
        Dialect::OpenAiChat { .. } | Dialect::OpenAiResponses { .. } => {
            let chat = matches!(dialect, Dialect::OpenAiChat { .. });
            let function = |name: &str| {
                if chat {
                    json!({"type": "function", "function": {"name": name}})
                } else {
                    json!({"type": "function", "name": name})
                }
            };
            let choice = match &choosing.request.choice {
                ToolChoice::Auto => None,
                ToolChoice::None => Some(json!("none")),
                ToolChoice::Required => Some(json!("required")),
                ToolChoice::Tool(name) => Some(function(&(choosing.spelled)(name))),
                ToolChoice::Only { .. } => {
                    let mode = if choosing.require { "required" } else { "auto" };
                    let allowed: Vec<Value> =
                        choosing.subset_names.iter().map(|n| function(n)).collect();
                    Some(if chat {
                        json!({"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": allowed}})
                    } else {
                        json!({"type": "allowed_tools", "mode": mode, "tools": allowed})
                    })
                }
            };
            fields.insert("tools".into(), Value::Array(values));
            if let Some(choice) = choice {
                fields.insert("tool_choice".into(), choice);
            }
            if let Some(parallel) = *parallel {
                fields.insert("parallel_tool_calls".into(), Value::Bool(parallel));
            }
        }
        Dialect::Anthropic { .. } => {
            let mut choice = match &choosing.request.choice {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::None => json!({"type": "none"}),
                ToolChoice::Required => json!({"type": "any"}),
                ToolChoice::Tool(name) => json!({"type": "tool", "name": (choosing.spelled)(name)}),
                ToolChoice::Only { .. } if choosing.require && choosing.subset_names.len() == 1 => {
                    json!({"type": "tool", "name": choosing.subset_names[0]})
                }
                ToolChoice::Only { .. } if choosing.require => json!({"type": "any"}),
                ToolChoice::Only { .. } => json!({"type": "auto"}),
            };
            if *parallel == Some(false)
                && let Value::Object(choice) = &mut choice
            {
                choice.insert("disable_parallel_tool_use".into(), Value::Bool(true));
            }
            if *parallel == Some(true) {
                // Anthropic's default: nothing to say.
                *parallel = None;
            }
            fields.insert("tools".into(), Value::Array(values));
            let default = choice == json!({"type": "auto"});
            if !default {
                fields.insert("tool_choice".into(), choice);
            }
        }
        Dialect::Gemini => {
            let (mode, names) = match &choosing.request.choice {
                ToolChoice::Auto => ("AUTO", Vec::new()),
                ToolChoice::None => ("NONE", Vec::new()),
                ToolChoice::Required => ("ANY", Vec::new()),
                ToolChoice::Tool(name) => ("ANY", vec![(choosing.spelled)(name)]),
                // VALIDATED: a call or text, calls limited to the names (AUTO takes no names).
                ToolChoice::Only { .. } if choosing.require => {
                    ("ANY", choosing.subset_names.to_vec())
                }
                ToolChoice::Only { .. } => ("VALIDATED", choosing.subset_names.to_vec()),
            };
            if *parallel == Some(false) {
                notes.push(
                    "Gemini has no switch for parallel calls: it may still ask for several; the toolbox runs a sequential tool's calls one at a time".to_owned(),
                );
                *parallel = None;
            }
            // Functions in one tool object, each built-in tool in its own.
            let mut objects = Vec::new();
            if functions {
                objects.push(json!({ "functionDeclarations": values }));
            }
            objects.extend(hosted_entries.iter().cloned());
            fields.insert("tools".into(), Value::Array(objects));
            let mut tool_config = Map::new();
            if mode != "AUTO" && functions {
                let mut config = Map::new();
                config.insert("mode".into(), json!(mode));
                if !names.is_empty() {
                    config.insert("allowedFunctionNames".into(), json!(names));
                }
                tool_config.insert("functionCallingConfig".into(), Value::Object(config));
            }
            if functions && !hosted_entries.is_empty() {
                // Gemini refuses built-in tools beside functions unless told to.
                tool_config.insert("includeServerSideToolInvocations".into(), json!(true));
                notes.push(
                    "Gemini takes built-in tools beside functions only with `includeServerSideToolInvocations`: it is set".to_owned(),
                );
            }
            if !tool_config.is_empty() {
                fields.insert("toolConfig".into(), Value::Object(tool_config));
            }
        }
        Dialect::Mcp => {}
    }
    fields
}

/// Checks every name the request gives against the tools offered, before anything is built:
/// the choice, the subset, deferred tools, namespaces and the search tool's name. The subset
/// asked for, and whether a call is required.
fn check_names<'r>(
    dialect: Dialect,
    request: &'r ToolRequest,
    offered: &[Offered],
) -> Result<(Option<&'r [String]>, bool), RequestError> {
    let known = |name: &str| -> Result<(), RequestError> {
        if offered.iter().any(|t| t.registered == name) {
            Ok(())
        } else {
            Err(RequestError::UnknownTool {
                name: name.to_owned(),
                available: offered.iter().map(|t| t.registered.clone()).collect(),
            })
        }
    };
    // Every name the request gives is checked before anything is built.
    let (subset, require) = match &request.choice {
        ToolChoice::Tool(name) => {
            known(name)?;
            (None, true)
        }
        ToolChoice::Only { tools, require } => {
            if tools.is_empty() {
                return Err(RequestError::EmptySubset);
            }
            for name in tools {
                known(name)?;
            }
            (Some(tools.as_slice()), *require)
        }
        _ => (None, false),
    };
    for name in &request.defer {
        known(name)?;
    }
    if !request.programmatic.is_empty() {
        if !matches!(
            dialect,
            Dialect::Anthropic { .. } | Dialect::OpenAiResponses { .. }
        ) {
            return Err(RequestError::ProgrammaticUnsupported(dialect.provider()));
        }
        for name in &request.programmatic {
            known(name)?;
        }
    }
    let native_search = matches!(
        dialect,
        Dialect::Anthropic { .. } | Dialect::OpenAiResponses { .. }
    );
    // A deferred tool the toolbox's search has revealed is loaded like any other.
    let unloaded = |name: &str| {
        request.defer.iter().any(|d| d == name)
            && (native_search || !request.revealed.contains(&dialect.tool_name(name)))
    };
    match &request.choice {
        ToolChoice::Tool(name) if unloaded(name) => {
            return Err(RequestError::DeferredChoice(name.clone()));
        }
        ToolChoice::Only {
            tools,
            require: true,
        } if tools.iter().all(|t| unloaded(t)) => {
            return Err(RequestError::DeferredChoice(tools[0].clone()));
        }
        _ => {}
    }
    for namespace in &request.namespaces {
        for name in &namespace.tools {
            known(name)?;
        }
        // A name a provider takes, its own, and tools that are in no other namespace.
        let valid = !namespace.name.is_empty()
            && namespace.name.len() <= 64
            && namespace
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        let clash = offered.iter().any(|t| t.exported == namespace.name)
            || request
                .namespaces
                .iter()
                .filter(|n| n.name == namespace.name)
                .count()
                > 1;
        if !valid || clash || namespace.tools.is_empty() {
            return Err(RequestError::NamespaceName(namespace.name.clone()));
        }
        for name in &namespace.tools {
            let homes = request
                .namespaces
                .iter()
                .flat_map(|n| &n.tools)
                .filter(|t| *t == name)
                .count();
            if homes > 1 {
                return Err(RequestError::NamespaceTwice(name.clone()));
            }
        }
    }
    let searching = !request.defer.is_empty();
    if searching
        && !native_search
        && offered
            .iter()
            .any(|t| t.exported == super::search::LOCAL_SEARCH_TOOL)
    {
        return Err(RequestError::SearchNameTaken);
    }
    Ok((subset, require))
}

/// The tool list's entries: deferred tools marked or left out, the search tool, revealed tools
/// at the end, and namespaces (OpenAI Responses).
fn entries(
    dialect: Dialect,
    request: &ToolRequest,
    offered: Vec<Offered>,
    native_search: bool,
    notes: &mut Vec<String>,
    held: &mut Vec<(String, String)>,
) -> Vec<Entry> {
    let deferred = |name: &str| request.defer.iter().any(|d| d == name);
    let mut entries = Vec::with_capacity(offered.len() + 1);
    let mut hidden = Vec::new();
    if !request.defer.is_empty() && native_search {
        let (value, name) = match (dialect, request.search) {
            (Dialect::Anthropic { .. }, ToolSearch::Regex) => (
                json!({"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}),
                "tool_search_tool_regex",
            ),
            (Dialect::Anthropic { .. }, ToolSearch::Bm25) => (
                json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}),
                "tool_search_tool_bm25",
            ),
            _ => {
                if request.search == ToolSearch::Regex {
                    notes.push(
                        "OpenAI's tool search has one kind: `tool_search` is sent for the regex search asked for".to_owned(),
                    );
                }
                (json!({"type": "tool_search"}), "tool_search")
            }
        };
        entries.push(Entry {
            name: name.to_owned(),
            value,
            conditional: false,
            deferred: false,
        });
    }
    for tool in offered {
        let is_deferred = deferred(&tool.registered);
        if is_deferred && !native_search {
            hidden.push(tool);
            continue;
        }
        let mut value = tool.value;
        if is_deferred && let Value::Object(map) = &mut value {
            map.insert("defer_loading".into(), Value::Bool(true));
        }
        if request.programmatic.contains(&tool.registered) {
            super::program::mark(
                dialect,
                &mut value,
                tool.output_schema.as_ref(),
                request.programmatic_only,
            );
        }
        entries.push(Entry {
            name: tool.exported,
            value,
            conditional: tool.conditional,
            deferred: is_deferred,
        });
    }
    if !hidden.is_empty() {
        // The toolbox's own search in their place, then what it has found, in that order.
        let search = super::search::definition();
        if let Ok(value) = search.export(dialect) {
            entries.push(Entry {
                name: super::search::LOCAL_SEARCH_TOOL.to_owned(),
                value: value.clone(),
                conditional: false,
                deferred: false,
            });
        }
        for name in &request.revealed {
            if let Some(at) = hidden.iter().position(|t| &t.exported == name) {
                let tool = hidden.remove(at);
                entries.push(Entry {
                    name: tool.exported,
                    value: tool.value,
                    conditional: tool.conditional,
                    deferred: false,
                });
            }
        }
        held.extend(
            hidden
                .into_iter()
                .map(|tool| (tool.exported, tool.value.to_string())),
        );
    }
    if request.namespaces.is_empty() {
        return entries;
    }
    if !matches!(dialect, Dialect::OpenAiResponses { .. }) {
        notes.push(format!(
            "namespaces are OpenAI Responses': {} gets the tools one by one",
            dialect.name()
        ));
        return entries;
    }
    for namespace in &request.namespaces {
        let members: Vec<String> = namespace
            .tools
            .iter()
            .map(|t| dialect.tool_name(t))
            .collect();
        if members.len() >= 10 {
            notes.push(format!(
                "the namespace `{}` has {} tools; OpenAI recommends fewer than ten per namespace",
                namespace.name,
                members.len()
            ));
        }
        let Some(first) = entries.iter().position(|e| members.contains(&e.name)) else {
            continue;
        };
        let mut grouped = Vec::new();
        let mut conditional = false;
        entries.retain(|e| {
            if members.contains(&e.name) {
                grouped.push(e.value.clone());
                conditional |= e.conditional;
                false
            } else {
                true
            }
        });
        entries.insert(
            first.min(entries.len()),
            Entry {
                name: namespace.name.clone(),
                value: json!({
                    "type": "namespace",
                    "name": namespace.name,
                    "description": namespace.description,
                    "tools": grouped,
                }),
                conditional,
                deferred: false,
            },
        );
    }
    entries
}
