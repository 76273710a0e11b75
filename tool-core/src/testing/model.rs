//! A fake model driven by the tools' schemas: it calls every tool it is offered with
//! arguments made from the tool's input schema, in the provider's own response shape, and
//! then says it is done. In its mutation mode every call breaks exactly one constraint.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use super::mutate::mutations;
use super::sample::sample;
use super::trajectory::Difference;
use crate::agent::{ModelClient, ModelError, ModelRequest};
use crate::audit::AuditRecord;
use crate::dialect::Dialect;
use crate::tool::BoxFuture;
use crate::toolbox::Toolbox;

/// What a [`SchemaModel`] expects of one of its calls.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Expected {
    /// Valid arguments: the validator must accept them (the tool may still fail for its own
    /// reasons).
    Accepted,
    /// Arguments that break one constraint: refused with `invalid_arguments`, the
    /// violation at `pointer`.
    Refused {
        /// Where the violation is.
        pointer: String,
        /// The JSON Schema keyword broken.
        keyword: &'static str,
    },
}

/// One call a [`SchemaModel`] made.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PlannedCall {
    /// The call id it gave.
    pub id: String,
    /// The tool's name in the toolbox.
    pub tool: String,
    /// The arguments it sent.
    pub arguments: Value,
    /// What the toolbox must do with them.
    pub expected: Expected,
}

/// A model for tests, driven by the tools' schemas, like pydantic-ai's `TestModel`: on its
/// first request it calls every tool the request offers, with arguments made from the tool's
/// input schema ([`sample`](super::sample), each accepted by the tool's validator); when the
/// results come back it answers in text. [`mutating`](Self::mutating) makes it call each
/// tool once per [`mutation`](super::mutations) instead, a few calls per turn, every one
/// breaking exactly one constraint.
///
/// It answers in the request's dialect (OpenAI Chat or Responses, Anthropic, Gemini), calls
/// only tools the request offers, and gives every call an id, so [`check`](Self::check) can
/// hold the run's audit log to what it expected: valid arguments accepted, every mutation
/// refused with `invalid_arguments`.
///
/// ```
/// use std::sync::Arc;
/// use toolsmith::agent::{Agent, Stop};
/// use toolsmith::audit::MemorySink;
/// use toolsmith::testing::SchemaModel;
/// use toolsmith::{tool, Dialect, ToolContext, Toolbox};
///
/// /// Books a table. Not for changing a booking.
/// #[tool(effect = "write")]
/// fn book_table(
///     /// The restaurant.
///     #[arg(length(min = 2, max = 60))]
///     restaurant: String,
///     /// How many people.
///     #[arg(range(min = 1, max = 12))]
///     people: u8,
/// ) -> String {
///     format!("booked {restaurant} for {people}")
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let audit = Arc::new(MemorySink::default());
/// let toolbox = Toolbox::new().with(BookTable).with_audit(audit.clone());
/// let model = SchemaModel::mutating(&toolbox);
/// let agent = Agent::new(toolbox, Dialect::Anthropic { strict: false }, model.clone());
/// let mut state = agent.start("Book something.");
/// let stop = agent.run(&mut state, &ToolContext::new()).await.unwrap();
/// assert!(matches!(stop, Stop::Answered(_)));
///
/// // Each constraint broken once, each refused with `invalid_arguments`.
/// assert!(model.calls().len() >= 8);
/// model.check(&audit.records()).unwrap();
/// # });
/// ```
#[derive(Clone)]
pub struct SchemaModel {
    inner: Arc<Mutex<Plan>>,
}

struct Plan {
    /// Per tool (in the toolbox's order): its name, and the arguments to send with what
    /// they must get.
    tools: Vec<(String, Vec<(Value, Expected)>)>,
    /// The calls still to make, once the first request said which tools are offered.
    queue: Option<VecDeque<(String, Value, Expected)>>,
    per_turn: usize,
    made: Vec<PlannedCall>,
    skipped: Vec<String>,
}

impl SchemaModel {
    /// A model that calls each tool of `toolbox` once, with valid arguments.
    #[must_use]
    pub fn new(toolbox: &Toolbox) -> Self {
        let mut skipped = Vec::new();
        let tools = toolbox
            .definitions()
            .filter_map(|def| match sample(def.input_schema()) {
                Some(arguments) => {
                    Some((def.name().to_owned(), vec![(arguments, Expected::Accepted)]))
                }
                None => {
                    skipped.push(def.name().to_owned());
                    None
                }
            })
            .collect();
        Self::planned(tools, usize::MAX, skipped)
    }

    /// A model that calls each tool of `toolbox` once per mutation of its arguments, eight
    /// calls per turn, every one breaking exactly one constraint.
    #[must_use]
    pub fn mutating(toolbox: &Toolbox) -> Self {
        let mut skipped = Vec::new();
        let tools = toolbox
            .definitions()
            .filter_map(|def| {
                let list: Vec<(Value, Expected)> = mutations(def.input_schema())
                    .into_iter()
                    .map(|m| {
                        let expected = Expected::Refused {
                            pointer: m.pointer,
                            keyword: m.keyword,
                        };
                        (m.arguments, expected)
                    })
                    .collect();
                if list.is_empty() {
                    skipped.push(def.name().to_owned());
                    None
                } else {
                    Some((def.name().to_owned(), list))
                }
            })
            .collect();
        Self::planned(tools, 8, skipped)
    }

    fn planned(
        tools: Vec<(String, Vec<(Value, Expected)>)>,
        per_turn: usize,
        skipped: Vec<String>,
    ) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Plan {
                tools,
                queue: None,
                per_turn,
                made: Vec::new(),
                skipped,
            })),
        }
    }

    /// How many calls to make per turn (at least one).
    #[must_use]
    pub fn per_turn(self, calls: usize) -> Self {
        self.lock().per_turn = calls.max(1);
        self
    }

    /// The calls made so far, in order.
    #[must_use]
    pub fn calls(&self) -> Vec<PlannedCall> {
        self.lock().made.clone()
    }

    /// The tools it has nothing to call with: no sample of their schema was found, or (in
    /// the mutation mode) their schema has no constraint to break.
    #[must_use]
    pub fn skipped(&self) -> Vec<String> {
        self.lock().skipped.clone()
    }

    /// Holds the audit log of the run to what each call expected: valid arguments read
    /// (the call was not refused with `invalid_arguments` or `truncated_arguments`), each
    /// mutation refused with `invalid_arguments`, and every call the model made recorded.
    ///
    /// # Errors
    ///
    /// A [`Difference`] naming each call that went otherwise.
    pub fn check(&self, records: &[AuditRecord]) -> Result<(), Difference> {
        let mut wrong = Vec::new();
        for call in self.calls() {
            let record = records
                .iter()
                .find(|r| r.call_id.as_deref() == Some(call.id.as_str()));
            let shown = crate::json::text::cut(&call.arguments.to_string(), 200);
            let Some(record) = record else {
                wrong.push(format!(
                    "call {} (`{}` with {shown}) has no audit record",
                    call.id, call.tool
                ));
                continue;
            };
            let code = record.error_code.unwrap_or("none");
            match &call.expected {
                Expected::Accepted
                    if matches!(code, "invalid_arguments" | "truncated_arguments") =>
                {
                    wrong.push(format!(
                        "call {} (`{}` with {shown}) was refused with `{code}`; its arguments are valid",
                        call.id, call.tool
                    ));
                }
                Expected::Refused { pointer, keyword } if code != "invalid_arguments" => {
                    wrong.push(format!(
                        "call {} (`{}` with {shown}) breaks `{keyword}` at {pointer:?}, but ended `{}` with error `{code}`",
                        call.id, call.tool, record.status
                    ));
                }
                _ => {}
            }
        }
        if wrong.is_empty() {
            Ok(())
        } else {
            let more = wrong.len().saturating_sub(10);
            wrong.truncate(10);
            if more > 0 {
                wrong.push(format!("and {more} more"));
            }
            Err(Difference::new(wrong.join("\n")))
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Plan> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The response to `request`: the next calls, or the closing text.
    fn respond(&self, request: &ModelRequest) -> Result<Value, ModelError> {
        let dialect = request.dialect;
        let offered = offered(dialect, &request.body)?;
        let mut plan = self.lock();
        if plan.queue.is_none() {
            let queue = plan
                .tools
                .iter()
                .filter(|(name, _)| offered.contains(&dialect.tool_name(name)))
                .flat_map(|(name, list)| {
                    list.iter().map(|(arguments, expected)| {
                        (name.clone(), arguments.clone(), expected.clone())
                    })
                })
                .collect();
            plan.queue = Some(queue);
        }
        let per_turn = plan.per_turn;
        let batch: Vec<(String, Value, Expected)> = match plan.queue.as_mut() {
            Some(queue) => {
                let n = per_turn.min(queue.len());
                queue.drain(..n).collect()
            }
            None => Vec::new(),
        };
        if batch.is_empty() {
            let text = format!("Done: {} calls made.", plan.made.len());
            return Ok(said(dialect, &text));
        }
        let mut calls = Vec::new();
        for (tool, arguments, expected) in batch {
            let id = format!("call_{}", plan.made.len() + 1);
            calls.push((id.clone(), dialect.tool_name(&tool), arguments.clone()));
            plan.made.push(PlannedCall {
                id,
                tool,
                arguments,
                expected,
            });
        }
        Ok(calling(dialect, &calls))
    }
}

impl ModelClient for SchemaModel {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<Value, ModelError>> {
        let response = self.respond(request);
        Box::pin(async move { response })
    }

    fn model(&self) -> Option<&str> {
        Some("toolsmith-schema-model")
    }
}

impl fmt::Debug for SchemaModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plan = self.lock();
        f.debug_struct("SchemaModel")
            .field("tools", &plan.tools.len())
            .field("made", &plan.made.len())
            .finish_non_exhaustive()
    }
}

/// The names of the function tools a request offers, as the provider spells them.
fn offered(dialect: Dialect, body: &Value) -> Result<Vec<String>, ModelError> {
    let tools = body.get("tools").and_then(Value::as_array);
    let names = |list: Vec<&Value>| -> Vec<String> {
        list.into_iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    let tools = tools.map(Vec::as_slice).unwrap_or_default();
    Ok(match dialect {
        Dialect::OpenAiChat { .. } => names(
            tools
                .iter()
                .filter_map(|t| t.get("function")?.get("name"))
                .collect(),
        ),
        Dialect::OpenAiResponses { .. } => names(
            tools
                .iter()
                .filter(|t| t.get("type").and_then(Value::as_str) == Some("function"))
                .filter_map(|t| t.get("name"))
                .collect(),
        ),
        Dialect::Anthropic { .. } => names(
            tools
                .iter()
                .filter(|t| t.get("input_schema").is_some())
                .filter_map(|t| t.get("name"))
                .collect(),
        ),
        Dialect::Gemini => names(
            tools
                .iter()
                .filter_map(|t| t.get("functionDeclarations").and_then(Value::as_array))
                .flatten()
                .filter_map(|d| d.get("name"))
                .collect(),
        ),
        Dialect::Mcp => {
            return Err(ModelError::new(
                "MCP is not a model's dialect; give the agent a provider's",
            ));
        }
    })
}

/// A response of `dialect` making `calls` (`(id, name, arguments)`).
fn calling(dialect: Dialect, calls: &[(String, String, Value)]) -> Value {
    match dialect {
        Dialect::OpenAiChat { .. } => {
            let calls: Vec<Value> = calls
                .iter()
                .map(|(id, name, arguments)| {
                    json!({"id": id, "type": "function",
                        "function": {"name": name, "arguments": arguments.to_string()}})
                })
                .collect();
            json!({"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": null, "tool_calls": calls}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}})
        }
        Dialect::OpenAiResponses { .. } => {
            let output: Vec<Value> = calls
                .iter()
                .map(|(id, name, arguments)| {
                    json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": id,
                        "name": name, "arguments": arguments.to_string(), "status": "completed"})
                })
                .collect();
            json!({"object": "response", "status": "completed", "output": output,
                "usage": {"input_tokens": 10, "output_tokens": 10, "total_tokens": 20}})
        }
        Dialect::Anthropic { .. } => {
            let content: Vec<Value> = calls
                .iter()
                .map(|(id, name, input)| {
                    json!({"type": "tool_use", "id": id, "name": name, "input": input})
                })
                .collect();
            json!({"type": "message", "role": "assistant", "content": content,
                "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 10}})
        }
        Dialect::Gemini | Dialect::Mcp => {
            let parts: Vec<Value> = calls
                .iter()
                .map(|(id, name, args)| json!({"functionCall": {"id": id, "name": name, "args": args}}))
                .collect();
            json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 10, "totalTokenCount": 20}})
        }
    }
}

/// A response of `dialect` answering in `text`.
fn said(dialect: Dialect, text: &str) -> Value {
    match dialect {
        Dialect::OpenAiChat { .. } => json!({"object": "chat.completion", "choices": [{"index": 0,
            "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}),
        Dialect::OpenAiResponses { .. } => json!({"object": "response", "status": "completed",
            "output": [{"type": "message", "id": "msg_done", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}],
            "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}),
        Dialect::Anthropic { .. } => json!({"type": "message", "role": "assistant",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 5}}),
        Dialect::Gemini | Dialect::Mcp => json!({"candidates": [{"content": {"role": "model",
            "parts": [{"text": text}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}),
    }
}
