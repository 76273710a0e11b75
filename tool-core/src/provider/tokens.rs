//! What a tool block costs in tokens, on every turn (feature `tokens`): by OpenAI's published
//! rules for function definitions over the o200k encoding, and an estimate for Anthropic and
//! Gemini; a report naming the largest parts, and budgets a lint run fails on.
//!
//! The o200k data ships inside the tokenizer crate (`tiktoken-rs`): nothing is downloaded.

use serde_json::Value;

use crate::dialect::Dialect;
use crate::lint::{LintFinding, LintLevel};

use super::choice::ToolBlock;

/// OpenAI's constants for function definitions (gpt-4o and later models), from its cookbook
/// "How to count tokens with tiktoken": each function starts with 7 tokens, its properties
/// with 3, each property key 3, an enum list −3 and each enum item 3; the functions together
/// end with 12, once per request (the cookbook adds `func_end` after its loop over them).
const FUNC_INIT: i64 = 7;
const PROP_INIT: i64 = 3;
const PROP_KEY: i64 = 3;
const ENUM_INIT: i64 = -3;
const ENUM_ITEM: i64 = 3;
const FUNC_END: i64 = 12;

/// Anthropic's tool-use system prompt, added to a request with tools (its pricing page, "Tool
/// use system prompt token count", Claude 4 models): 346 tokens with `tool_choice` `auto` or
/// `none`, 313 with `any` or `tool`.
const ANTHROPIC_AUTO: usize = 346;
const ANTHROPIC_FORCED: usize = 313;

/// The tokens of `text` in OpenAI's o200k encoding.
///
/// ```
/// assert_eq!(toolsmith::provider::o200k_tokens("hello world"), 2);
/// ```
#[must_use]
pub fn o200k_tokens(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len()
}

/// The tokens one exported tool costs, and its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolTokens {
    /// The tool's name, in the provider's spelling.
    pub name: String,
    /// Its tokens.
    pub tokens: usize,
}

/// What a tool block costs in tokens, per tool and in all, on every turn that sends it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenReport {
    /// The dialect counted.
    pub dialect: Dialect,
    /// Each tool's cost, in the block's order (deferred tools left out).
    pub tools: Vec<ToolTokens>,
    /// What each deferred tool costs once the model loads it: not in the total, which is
    /// what every turn pays.
    pub deferred: Vec<ToolTokens>,
    /// What the provider adds once per request with tools: OpenAI's 12 tokens that close the
    /// functions, Anthropic's tool-use system prompt; 0 where none is published.
    pub overhead: usize,
    /// The whole block: the tools, the overhead, and for OpenAI Responses the name and
    /// description of each deferred function, which the model still sees.
    pub total: usize,
    /// `true` for OpenAI's published rules; `false` for an estimate (Anthropic and Gemini
    /// count with their own tokenizers, which are not published: their count endpoints give
    /// the exact figure; deferred tools are not covered by OpenAI's rules).
    pub exact: bool,
}

impl TokenReport {
    /// The `n` costliest tools, costliest first (ties in the block's order).
    #[must_use]
    pub fn largest(&self, n: usize) -> Vec<&ToolTokens> {
        let mut tools: Vec<&ToolTokens> = self.tools.iter().collect();
        tools.sort_by_key(|t| std::cmp::Reverse(t.tokens));
        tools.truncate(n);
        tools
    }
}

/// Token budgets for a tool block: a lint run fails when one is exceeded.
///
/// ```
/// use toolsmith::provider::TokenBudget;
/// let budget = TokenBudget { per_tool: Some(400), total: Some(8_000) };
/// # let _ = budget;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenBudget {
    /// The most one tool may cost.
    pub per_tool: Option<usize>,
    /// The most the whole block may cost, overhead included.
    pub total: Option<usize>,
}

impl ToolBlock {
    /// What this block costs in tokens: by OpenAI's published rules for OpenAI Chat and
    /// Responses (o200k, gpt-4o and later), an estimate for Anthropic (each tool's JSON in
    /// o200k, and Anthropic's published tool-use system prompt) and Gemini (each declaration's
    /// JSON in o200k). See docs/providers.md, "Token cost".
    ///
    /// ```
    /// use toolsmith::provider::ToolRequest;
    /// use toolsmith::{tool, Dialect, Toolbox};
    ///
    /// /// Looks a word up. Read-only. Not for translations.
    /// #[tool(effect = "read")]
    /// fn look_up(
    ///     /// The word.
    ///     #[arg(length(min = 1, max = 40))]
    ///     word: String,
    /// ) -> String {
    ///     word
    /// }
    ///
    /// let toolbox = Toolbox::new().with(LookUp);
    /// let block = toolbox.provider(Dialect::OpenAiChat { strict: true }).request(&ToolRequest::default()).unwrap();
    /// let report = block.tokens();
    /// assert!(report.exact);
    /// // Each function's tokens, and 12 that close the functions, once per request.
    /// assert_eq!(report.total, report.tools[0].tokens + report.overhead);
    /// assert_eq!(report.overhead, 12);
    /// ```
    #[must_use]
    pub fn tokens(&self) -> TokenReport {
        let dialect = self.dialect;
        let count = |(name, text): &(String, String)| ToolTokens {
            name: name.clone(),
            tokens: match dialect {
                Dialect::OpenAiChat { .. } | Dialect::OpenAiResponses { .. } => {
                    serde_json::from_str::<Value>(text)
                        .map_or_else(|_| o200k_tokens(text), |v| openai_function(&v))
                }
                _ => o200k_tokens(text),
            },
        };
        let (tools, mut deferred): (Vec<ToolTokens>, Vec<ToolTokens>) = self
            .tools
            .iter()
            .map(count)
            .partition(|t| !self.deferred.contains(&t.name));
        // Where the toolbox's own search finds deferred tools, they are held back from the
        // list: what each costs once found.
        deferred.extend(self.held.iter().map(count));
        let overhead = match dialect {
            Dialect::Anthropic { .. } if !tools.is_empty() => {
                match self.fields.get("tool_choice").and_then(|c| c.get("type")) {
                    Some(Value::String(kind)) if kind == "any" || kind == "tool" => {
                        ANTHROPIC_FORCED
                    }
                    _ => ANTHROPIC_AUTO,
                }
            }
            Dialect::OpenAiChat { .. } | Dialect::OpenAiResponses { .. } if !tools.is_empty() => {
                usize::try_from(FUNC_END).unwrap_or(0)
            }
            _ => 0,
        };
        // OpenAI Responses still shows a deferred function's name and description (its
        // tool-search guide): they count, as an estimate; Anthropic keeps deferred tools out of
        // the context until a search loads them.
        let shown: usize = match dialect {
            Dialect::OpenAiResponses { .. } => self
                .tools
                .iter()
                .filter(|(name, _)| self.deferred.contains(name))
                .filter_map(|(_, text)| serde_json::from_str::<Value>(text).ok())
                .map(|tool| {
                    let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
                    let description = tool
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    o200k_tokens(&format!("{name}:{description}"))
                })
                .sum(),
            _ => 0,
        };
        let total = overhead + shown + tools.iter().map(|t| t.tokens).sum::<usize>();
        TokenReport {
            dialect,
            tools,
            deferred,
            overhead,
            total,
            exact: matches!(
                dialect,
                Dialect::OpenAiChat { .. } | Dialect::OpenAiResponses { .. }
            ) && self.deferred.is_empty(),
        }
    }

    /// The findings of lint `token_budget` (deny) for `budget`: each tool over its budget, and
    /// the block over its total, naming the costliest tools. Empty when every budget holds.
    ///
    /// ```
    /// use toolsmith::provider::{TokenBudget, ToolRequest};
    /// use toolsmith::{tool, Dialect, Toolbox};
    ///
    /// /// Says hello. Read-only. Not for real conversations.
    /// #[tool(effect = "read")]
    /// fn say_hello() -> &'static str { "hello" }
    ///
    /// let toolbox = Toolbox::new().with(SayHello);
    /// let block = toolbox.provider(Dialect::Gemini).request(&ToolRequest::default()).unwrap();
    /// assert!(block.lint_tokens(&TokenBudget { per_tool: Some(500), total: None }).is_empty());
    /// let over = block.lint_tokens(&TokenBudget { per_tool: Some(1), total: None });
    /// assert_eq!(over[0].lint, "token_budget");
    /// ```
    #[must_use]
    pub fn lint_tokens(&self, budget: &TokenBudget) -> Vec<LintFinding> {
        let report = self.tokens();
        let how = if report.exact {
            "by OpenAI's published rules"
        } else {
            "estimated"
        };
        let mut findings = Vec::new();
        if let Some(limit) = budget.per_tool {
            for tool in report.tools.iter().filter(|t| t.tokens > limit) {
                findings.push(LintFinding {
                    lint: toolsmith_lint_rules::TOKEN_BUDGET,
                    level: LintLevel::Deny,
                    tool: tool.name.clone(),
                    path: String::new(),
                    message: format!(
                        "`{}` costs {} tokens for {} ({how}), over its budget of {limit}: it is sent on every turn; shorten its description and parameter docs, or defer it",
                        tool.name,
                        tool.tokens,
                        report.dialect.name()
                    ),
                });
            }
        }
        if let Some(limit) = budget.total
            && report.total > limit
        {
            let largest: Vec<String> = report
                .largest(3)
                .iter()
                .map(|t| format!("`{}` {}", t.name, t.tokens))
                .collect();
            findings.push(LintFinding {
                lint: toolsmith_lint_rules::TOKEN_BUDGET,
                level: LintLevel::Deny,
                tool: String::new(),
                path: String::new(),
                message: format!(
                    "the tool block costs {} tokens for {} ({how}), over its budget of {limit}; the largest: {}",
                    report.total,
                    report.dialect.name(),
                    largest.join(", ")
                ),
            });
        }
        findings
    }
}

/// One function by OpenAI's rules: its name and description, then each top-level property's
/// name, type and description and its enum items. A property whose schema nests further (an
/// object, a list of objects, a union) adds the tokens of that schema's JSON: the published
/// rules stop at the top level, and nested schemas are still sent.
fn openai_function(tool: &Value) -> usize {
    let function = tool.get("function").unwrap_or(tool);
    let name = function.get("name").and_then(Value::as_str).unwrap_or("");
    let description = function
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut count = FUNC_INIT;
    count += tokens_i64(&format!(
        "{name}:{}",
        description.strip_suffix('.').unwrap_or(description)
    ));
    let properties = function
        .get("parameters")
        .and_then(|p| p.get("properties"))
        .and_then(Value::as_object);
    if let Some(properties) = properties.filter(|p| !p.is_empty()) {
        count += PROP_INIT;
        for (key, schema) in properties {
            count += PROP_KEY;
            if let Some(items) = schema.get("enum").and_then(Value::as_array) {
                count += ENUM_INIT;
                for item in items {
                    count += ENUM_ITEM;
                    count += match item {
                        Value::String(s) => tokens_i64(s),
                        other => tokens_i64(&other.to_string()),
                    };
                }
            }
            let kind = match schema.get("type") {
                Some(Value::String(t)) => t.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let text = schema
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            count += tokens_i64(&format!(
                "{key}:{kind}:{}",
                text.strip_suffix('.').unwrap_or(text)
            ));
            count += nested(schema);
        }
    }
    usize::try_from(count.max(0)).unwrap_or(0)
}

/// The tokens of what a property's schema nests below the published rules' reach.
fn nested(schema: &Value) -> i64 {
    let Some(map) = schema.as_object() else {
        return 0;
    };
    map.iter()
        .filter(|(key, _)| {
            matches!(
                key.as_str(),
                "properties" | "items" | "anyOf" | "oneOf" | "allOf" | "$defs" | "prefixItems"
            )
        })
        .map(|(_, value)| tokens_i64(&value.to_string()))
        .sum()
}

fn tokens_i64(text: &str) -> i64 {
    i64::try_from(o200k_tokens(text)).unwrap_or(i64::MAX)
}
