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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExportOrder {
    /// The order the tools were registered in (the default).
    #[default]
    Registered,
    /// By registered name.
    ByName,
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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
    /// stable prefix (the tools before any tool offered only under a condition). Other
    /// providers cache the prefix on their own, and the flag is ignored for them.
    pub cache_breakpoint: bool,
}

impl ToolRequest {
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
    /// The dialect the block is for.
    #[cfg_attr(not(feature = "tokens"), allow(dead_code))]
    pub(crate) dialect: Dialect,
}

impl ToolBlock {
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
    /// A tool the dialect cannot express.
    Export(crate::provider::ExportError),
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
            Self::Export(err) => fmt::Display::fmt(err, f),
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
    pub(crate) conditional: bool,
    pub(crate) sequential: bool,
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
    let exported_of = |name: &str| -> Result<String, RequestError> {
        offered
            .iter()
            .find(|t| t.registered == name)
            .map(|t| t.exported.clone())
            .ok_or_else(|| RequestError::UnknownTool {
                name: name.to_owned(),
                available: offered.iter().map(|t| t.registered.clone()).collect(),
            })
    };
    // Every name the choice gives is checked before anything is built.
    let (subset, require) = match &request.choice {
        ToolChoice::Tool(name) => {
            exported_of(name)?;
            (None, true)
        }
        ToolChoice::Only { tools, require } => {
            if tools.is_empty() {
                return Err(RequestError::EmptySubset);
            }
            for name in tools {
                exported_of(name)?;
            }
            (Some(tools.as_slice()), *require)
        }
        _ => (None, false),
    };
    let mut notes = Vec::new();
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

    let mut values: Vec<Value> = offered.iter().map(|t| t.value.clone()).collect();
    if request.cache_breakpoint && matches!(dialect, Dialect::Anthropic { .. }) {
        let stable = offered.iter().take_while(|t| !t.conditional).count();
        if stable == 0 {
            notes.push(
                "no tool is offered unconditionally first: no cache breakpoint is placed"
                    .to_owned(),
            );
        } else if let Some(Value::Object(last)) = values.get_mut(stable - 1) {
            last.insert("cache_control".into(), json!({"type": "ephemeral"}));
        }
    }
    let tools: Vec<(String, String)> = offered
        .iter()
        .zip(&values)
        .map(|(t, v)| (t.exported.clone(), v.to_string()))
        .collect();
    let spelled = |name: &str| -> String {
        offered
            .iter()
            .find(|t| t.registered == name)
            .map_or_else(|| dialect.tool_name(name), |t| t.exported.clone())
    };
    let subset_names: Vec<String> = subset
        .map(|names| names.iter().map(|n| spelled(n)).collect())
        .unwrap_or_default();

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
            let choice = match &request.choice {
                ToolChoice::Auto => None,
                ToolChoice::None => Some(json!("none")),
                ToolChoice::Required => Some(json!("required")),
                ToolChoice::Tool(name) => Some(function(&spelled(name))),
                ToolChoice::Only { .. } => {
                    let mode = if require { "required" } else { "auto" };
                    let allowed: Vec<Value> = subset_names.iter().map(|n| function(n)).collect();
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
            if let Some(parallel) = parallel {
                fields.insert("parallel_tool_calls".into(), Value::Bool(parallel));
            }
        }
        Dialect::Anthropic { .. } => {
            let mut choice = match &request.choice {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::None => json!({"type": "none"}),
                ToolChoice::Required => json!({"type": "any"}),
                ToolChoice::Tool(name) => json!({"type": "tool", "name": spelled(name)}),
                ToolChoice::Only { .. } if require && subset_names.len() == 1 => {
                    json!({"type": "tool", "name": subset_names[0]})
                }
                ToolChoice::Only { .. } if require => json!({"type": "any"}),
                ToolChoice::Only { .. } => json!({"type": "auto"}),
            };
            if parallel == Some(false)
                && let Value::Object(choice) = &mut choice
            {
                choice.insert("disable_parallel_tool_use".into(), Value::Bool(true));
            }
            if parallel == Some(true) {
                // Anthropic's default: nothing to say.
                parallel = None;
            }
            fields.insert("tools".into(), Value::Array(values));
            let default = choice == json!({"type": "auto"});
            if !default {
                fields.insert("tool_choice".into(), choice);
            }
        }
        Dialect::Gemini => {
            let (mode, names) = match &request.choice {
                ToolChoice::Auto => ("AUTO", Vec::new()),
                ToolChoice::None => ("NONE", Vec::new()),
                ToolChoice::Required => ("ANY", Vec::new()),
                ToolChoice::Tool(name) => ("ANY", vec![spelled(name)]),
                // VALIDATED: a call or text, calls limited to the names (AUTO takes no names).
                ToolChoice::Only { .. } if require => ("ANY", subset_names.clone()),
                ToolChoice::Only { .. } => ("VALIDATED", subset_names.clone()),
            };
            if parallel == Some(false) {
                notes.push(
                    "Gemini has no switch for parallel calls: it may still ask for several; the toolbox runs a sequential tool's calls one at a time".to_owned(),
                );
                parallel = None;
            }
            fields.insert("tools".into(), json!([{ "functionDeclarations": values }]));
            if mode != "AUTO" {
                let mut config = Map::new();
                config.insert("mode".into(), json!(mode));
                if !names.is_empty() {
                    config.insert("allowedFunctionNames".into(), json!(names));
                }
                fields.insert(
                    "toolConfig".into(),
                    json!({ "functionCallingConfig": config }),
                );
            }
        }
        Dialect::Mcp => {}
    }
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
        dialect,
    })
}
