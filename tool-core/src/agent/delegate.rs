//! An agent as a tool of another agent, its approvals intact.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::arguments::Arguments;
use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::error::{ErrorCode, ToolError};
use crate::outcome::ToolOutcome;
use crate::spec::Effect;
use crate::tool::{BoxFuture, Tool};

use super::children::Children;
use super::run::{Agent, Stop};
use super::state::Usage;

type Prompt = Arc<dyn Fn(&Value) -> Result<String, ToolError> + Send + Sync>;
type Output = Arc<dyn Fn(String) -> Result<ToolOutcome, ToolError> + Send + Sync>;

/// An [`Agent`] wrapped as an ordinary tool: another agent delegates a task to it.
///
/// Its input is `{"task": "..."}` unless [`with_input`](Self::with_input) types it; its output
/// is the child's text answer unless [`with_output`](Self::with_output) types it. It is
/// exported, linted and run like any tool. Its effect is `read` when every tool of the child
/// only reads, `write` otherwise (a destructive child tool is gated in the child, where its
/// exact call is known: nobody is asked twice).
///
/// **The child shares** the parent call's cancellation, principal, run id and deadline, so
/// run-scoped idempotency keys and run budgets are the parent run's (give the child's
/// toolbox the parent's [`State`](crate::state::State) to count budgets in one place). **Its
/// context is its own** (no extension of the parent's) unless
/// [`with_context_passed`](Self::with_context_passed).
///
/// **Approvals.** A child call that waits for a person surfaces in the parent's
/// [`Agent::run`] as [`Stop::Paused`] with its path, `[parent call id, child call id]`; it is
/// decided on the parent's state ([`Agent::approve`](super::Agent::approve)), and when the parent runs again the
/// child resumes where it stopped. Called outside a parent loop (nobody to ask), such a call
/// fails closed: the tool answers `approval_required` and the child's call never runs.
///
/// ```
/// use toolsmith::agent::{Agent, AgentTool, ScriptedModel};
/// use toolsmith::serde_json::json;
/// use toolsmith::{tool, Dialect, Tool, Toolbox};
///
/// /// Looks a word up. Read-only. Not for translations.
/// #[tool(effect = "read")]
/// fn look_up(
///     /// The word.
///     #[arg(length(min = 1, max = 40))]
///     word: String,
/// ) -> String {
///     format!("{word}: a word")
/// }
///
/// let child = Agent::new(Toolbox::new().with(LookUp), Dialect::Anthropic { strict: false }, ScriptedModel::default());
/// let researcher = AgentTool::new("researcher", "Researches one question with the dictionary. Read-only. Not for writing.", child);
/// assert_eq!(researcher.definition().input_schema()["required"], json!(["task"]));
/// assert_eq!(researcher.definition().effect(), Some(toolsmith::Effect::Read));
/// ```
pub struct AgentTool {
    agent: Agent,
    definition: ToolDefinition,
    prompt: Prompt,
    output: Output,
    pass_context: bool,
}

impl AgentTool {
    /// `agent` as the tool `name`, described to the parent's model by `description`, taking
    /// `{"task": "..."}` and answering with the child's text.
    ///
    /// # Panics
    ///
    /// Never for a valid name; an invalid one is refused when the tool joins a toolbox.
    #[must_use]
    pub fn new(
        name: impl Into<std::borrow::Cow<'static, str>>,
        description: impl Into<String>,
        agent: Agent,
    ) -> Self {
        let schema = json!({
            "type": "object",
            "properties": {"task": {
                "type": "string",
                "minLength": 1,
                "maxLength": 16000,
                "description": "The task, in full: the agent sees nothing else of this conversation."
            }},
            "required": ["task"],
            "additionalProperties": false
        });
        let effect = effect_of(agent.toolbox());
        let definition = ToolDefinition::new(name, description, schema).with_effect(effect);
        Self {
            agent,
            definition,
            prompt: Arc::new(|arguments: &Value| {
                Ok(arguments["task"].as_str().unwrap_or_default().to_owned())
            }),
            output: Arc::new(|text: String| {
                ToolOutcome::success(&text).map_err(|_| ToolError::internal("answer not JSON"))
            }),
            pass_context: false,
        }
    }

    /// Takes `I` (its JSON Schema, from schemars) instead of `{task}`; `prompt` writes the
    /// child's first message from it.
    #[must_use]
    pub fn with_input<I>(mut self, prompt: impl Fn(I) -> String + Send + Sync + 'static) -> Self
    where
        I: schemars::JsonSchema + DeserializeOwned,
    {
        let mut schema = schemars::schema_for!(I).to_value();
        if let Some(object) = schema.as_object_mut() {
            object.remove("$schema");
            object.remove("title");
        }
        let old = &self.definition;
        self.definition =
            ToolDefinition::new(old.name().to_owned(), old.description().to_owned(), schema)
                .with_effect(old.effect().unwrap_or(Effect::Write));
        self.prompt = Arc::new(move |arguments: &Value| {
            let input = I::deserialize(arguments).map_err(|err| {
                ToolError::new(
                    ErrorCode::InvalidArguments,
                    format!(
                        "The arguments cannot be read: {}. Fix them and call the tool again.",
                        crate::echo::echo(&err.to_string())
                    ),
                )
            })?;
            Ok(prompt(input))
        });
        self
    }

    /// Answers with `O`, read from the child's answer as JSON (ask for it in the child's
    /// instructions), instead of the text; the tool's output schema is `O`'s. An answer that
    /// is not an `O` is an error the parent's model sees.
    #[must_use]
    pub fn with_output<O>(self) -> Self
    where
        O: schemars::JsonSchema + DeserializeOwned + Serialize,
    {
        let schema = schemars::schema_for!(O).to_value();
        let Self {
            agent,
            definition,
            prompt,
            pass_context,
            ..
        } = self;
        let output: Output = Arc::new(|text: String| {
            let trimmed = text
                .trim()
                .trim_start_matches("```json")
                .trim_start_matches("```")
                .trim_end_matches("```");
            let value: O = serde_json::from_str(trimmed).map_err(|err| {
                ToolError::new(
                    ErrorCode::UpstreamError,
                    format!(
                        "The delegated agent did not answer in the expected shape ({}). Ask it again, saying what the answer must hold.",
                        crate::echo::echo(&err.to_string())
                    ),
                )
            })?;
            ToolOutcome::success(&value)
                .map_err(|_| ToolError::internal("the answer does not serialize"))
        });
        Self {
            agent,
            definition: definition.with_output_schema(schema),
            prompt,
            output,
            pass_context,
        }
    }

    /// The child's calls get the parent call's whole context (its extensions too), not a
    /// context of their own.
    #[must_use]
    pub fn with_context_passed(mut self) -> Self {
        self.pass_context = true;
        self
    }

    /// The agent behind the tool.
    #[must_use]
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The child's context: the parent call's cancellation, principal, run and deadline.
    fn child_context(&self, ctx: &ToolContext) -> ToolContext {
        let mut child = if self.pass_context {
            ctx.clone()
        } else {
            let mut child = ToolContext::new().with_trace_id(ctx.trace_id().to_owned());
            if let Some(run) = ctx.run_id() {
                child = child.with_run_id(run.to_owned());
            }
            if let Some(principal) = ctx.principal() {
                child = child.with_principal(principal.to_owned());
            }
            if let Some(deadline) = ctx.deadline() {
                child = child.with_deadline(deadline);
            }
            child
        };
        child = child.with_cancellation(ctx.cancellation().clone());
        // The parent's remaining limits: the child spends from them.
        if let Some(budget) = ctx.get::<super::budget::ParentBudget>() {
            child = child.with_extension(budget.clone());
        }
        child
    }

    async fn run(&self, arguments: Arguments<'_>, ctx: &ToolContext) -> ToolOutcome {
        let arguments = match self.definition.validate(arguments) {
            Ok(arguments) => arguments,
            Err(err) => return ToolOutcome::Error(err),
        };
        let children = ctx.get::<Children>();
        let key = ctx.call_id().map(str::to_owned);
        let saved = match (children, &key) {
            (Some(children), Some(key)) => children.take(key),
            _ => None,
        };
        let mut state = match saved {
            Some(state) => state,
            None => match (self.prompt)(&arguments) {
                Ok(prompt) => self.agent.start(&prompt),
                Err(err) => return ToolOutcome::Error(err),
            },
        };
        let child_ctx = self.child_context(ctx);
        let before = state.usage();
        // A saved child's state is inside its parent's, sealed with it.
        let mut stop = self.agent.run_sealed(&mut state, &child_ctx, None).await;
        // A child waiting on its long-running calls' tasks is waited for here: the parent's
        // call is the child's whole run (bounded by the agent tool's own timeout).
        while let Ok(Stop::Waiting(_)) = stop {
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            stop = self.agent.run_sealed(&mut state, &child_ctx, None).await;
        }
        if let Some(children) = children {
            let after = state.usage();
            children.spend(Usage {
                input_tokens: after.input_tokens.saturating_sub(before.input_tokens),
                output_tokens: after.output_tokens.saturating_sub(before.output_tokens),
            });
        }
        let name = self.definition.name();
        match stop {
            Ok(Stop::Answered(text)) => match (self.output)(text) {
                Ok(outcome) => outcome,
                Err(err) => ToolOutcome::Error(err),
            },
            Ok(Stop::Paused(pending)) => {
                let what: Vec<String> = pending.iter().map(|p| format!("`{}`", p.tool)).collect();
                match (children, key) {
                    (Some(children), Some(key)) => {
                        children.put(key, state);
                        ToolOutcome::Error(ToolError::approval_required(format!(
                            "`{name}` is waiting for a person to approve {} before it can go on; the run pauses until they decide. Tell the user what it wants to do.",
                            what.join(", ")
                        )))
                    }
                    // Nobody can be asked from here: the child's calls never run.
                    _ => ToolOutcome::Error(
                        ToolError::new(
                            ErrorCode::ApprovalRequired,
                            format!(
                                "`{name}` needs a person's approval for {}, and nobody can be asked from here, so it did not run them. Do not call it again; tell the user it needs their approval.",
                                what.join(", ")
                            ),
                        )
                        .human_review(true),
                    ),
                }
            }
            // Waited for above.
            Ok(Stop::Waiting(_)) => ToolOutcome::Error(ToolError::internal(
                "a delegated agent stopped while its tasks ran",
            )),
            Ok(Stop::Limit(limit)) => ToolOutcome::Error(ToolError::new(
                ErrorCode::BudgetExhausted,
                format!(
                    "`{name}` reached its {limit} limit before it finished. Do not call it again with the same task; answer with what you have or split the task."
                ),
            )),
            Err(err) => ToolOutcome::Error(ToolError::internal(err)),
        }
    }
}

/// `read` when every tool of the toolbox only reads, `write` otherwise.
fn effect_of(toolbox: &crate::toolbox::Toolbox) -> Effect {
    if toolbox
        .definitions()
        .all(|def| def.effect() == Some(Effect::Read))
    {
        Effect::Read
    } else {
        Effect::Write
    }
}

impl Tool for AgentTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call<'a>(
        &'a self,
        arguments: Arguments<'a>,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(self.run(arguments, ctx))
    }
}

impl fmt::Debug for AgentTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentTool")
            .field("name", &self.definition.name())
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}
