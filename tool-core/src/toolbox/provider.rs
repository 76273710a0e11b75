//! A toolbox as one provider sees it: tool names in that provider's spelling, a whole
//! response's calls run at once, and exactly the messages that provider expects next.
//!
//! The two families of calls: [`Toolbox::call`], [`call_into`](Toolbox::call_into) and
//! [`call_all`](Toolbox::call_all) take the names tools were *registered* under
//! (`tickets.search`); everything on [`ProviderToolbox`] takes the names a *provider* sent
//! (`tickets_search` for OpenAI), and speaks of tools in that spelling.

use std::sync::Arc;

use serde_json::Value;

use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::outcome::ToolOutcome;
use crate::provider::{
    CallParseError, Dialect, ExportError, RequestError, ToolBlock, ToolCall, ToolRequest,
    encode_result,
};
use crate::tool::Tool;

use super::{ProviderToolbox, Spelling, Toolbox, Turn, join};

impl Toolbox {
    /// This toolbox as `dialect`'s provider sees it: its calls use that provider's names.
    #[must_use]
    pub fn provider(&self, dialect: Dialect) -> ProviderToolbox<'_> {
        ProviderToolbox {
            toolbox: self,
            dialect,
            offer: None,
            programs: None,
        }
    }
}

impl<'a> ProviderToolbox<'a> {
    /// This view for the calls answering the request that offered `offer`
    /// ([`ToolBlock::offer`]): a call of a tool the request did not offer is refused as an
    /// unknown tool ([`Refusal::NotOffered`](crate::error::Refusal::NotOffered)), on
    /// [`run`](Self::run), [`respond_to`](Self::respond_to) and the rest, and a
    /// [`call_stream`](Self::call_stream) checks no arguments against it. Without it, a call
    /// may name any tool offered in its context: a model could call a tool the request left
    /// out.
    ///
    /// ```
    /// use toolsmith::provider::{ToolChoice, ToolRequest};
    /// use toolsmith::serde_json::json;
    /// use toolsmith::error::Refusal;
    /// use toolsmith::{tool, Dialect, ToolContext, Toolbox};
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
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let toolbox = Toolbox::new().with(ReadTicket).with(CloseTicket);
    /// let anthropic = toolbox.provider(Dialect::Anthropic { strict: false });
    /// let request = ToolRequest {
    ///     choice: ToolChoice::Only { tools: vec!["read_ticket".into()], require: false },
    ///     ..ToolRequest::default()
    /// };
    /// let block = anthropic.request(&request).unwrap();
    /// // The model answers with a call of the tool it was not sent.
    /// let response = json!({"content": [{"type": "tool_use", "id": "toolu_1", "name": "close_ticket", "input": {"id": 7}}]});
    /// let turn = anthropic.answering(block.offer()).respond_to(&response, &ToolContext::new()).await.unwrap();
    /// let err = turn.outcomes[0].error().unwrap();
    /// assert_eq!(err.refusal(), Some(Refusal::NotOffered));
    /// assert!(err.message().contains("the available tools are `read_ticket`"));
    /// # });
    /// ```
    #[must_use]
    pub fn answering(mut self, offer: &'a crate::provider::Offer) -> Self {
        self.offer = Some(offer);
        self
    }

    /// This view for answering `calls`, the calls a program the provider ran made
    /// ([`program_calls`](crate::provider::program_calls) of the response): each is answered
    /// into the program (the tool's value as JSON text, what its output schema describes; an
    /// error as its envelope, marked as an error; OpenAI's `caller` echoed), not as a result
    /// for the model to read. [`respond_to`](Self::respond_to) finds them in the response on
    /// its own.
    ///
    /// ```
    /// use toolsmith::provider::program_calls;
    /// use toolsmith::serde_json::json;
    /// use toolsmith::{tool, Dialect, ToolCall, ToolContext, Toolbox};
    ///
    /// /// Counts a SKU's stock. Read-only. Not for orders.
    /// #[tool(effect = "read")]
    /// fn get_stock(
    ///     /// The SKU.
    ///     #[arg(length(min = 1, max = 20))]
    ///     sku: String,
    /// ) -> u32 {
    ///     let _ = sku;
    ///     12
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let toolbox = Toolbox::new().with(GetStock);
    /// let dialect = Dialect::OpenAiResponses { strict: true };
    /// let response = json!({"output": [{"type": "function_call", "call_id": "call_1", "name": "get_stock",
    ///     "arguments": "{\"sku\":\"a\"}", "caller": {"type": "program", "caller_id": "call_prog"}}]});
    /// let programs = program_calls(dialect, &response);
    /// let calls = ToolCall::parse(dialect, &response).unwrap();
    /// let provider = toolbox.provider(dialect).with_program_calls(&programs);
    /// let outcomes = provider.run_all(&calls, &ToolContext::new()).await;
    /// let answer = &provider.messages(&calls, &outcomes)[0];
    /// assert_eq!(answer["output"], "12");
    /// assert_eq!(answer["caller"]["caller_id"], "call_prog");
    /// # });
    /// ```
    #[must_use]
    pub fn with_program_calls(mut self, calls: &'a [crate::provider::ProgramCall]) -> Self {
        self.programs = Some(calls);
        self
    }

    /// The dialect.
    #[must_use]
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The toolbox behind it.
    #[must_use]
    pub fn toolbox(&self) -> &'a Toolbox {
        self.toolbox
    }

    /// Every tool, as this provider takes them in a request ([`Toolbox::export`]).
    ///
    /// # Errors
    ///
    /// [`ExportError`] when the dialect cannot express a tool.
    pub fn export(&self) -> Result<Value, ExportError> {
        self.toolbox.export(self.dialect)
    }

    /// The tool block of a request to this provider: every tool, and the choice, parallel
    /// calls and cache breakpoint `request` asks for, in this provider's words. Every name the
    /// choice gives is checked first: a tool the toolbox does not have is an error, and
    /// nothing is sent. See docs/providers.md, "The tool block of a request".
    ///
    /// ```
    /// use toolsmith::provider::{Subset, ToolChoice, ToolRequest};
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
    /// /// Says hello. Read-only. Not for real conversations.
    /// #[tool(effect = "read")]
    /// fn say_hello() -> &'static str { "hello" }
    ///
    /// let toolbox = Toolbox::new().with(LookUp).with(SayHello);
    /// let only = ToolRequest {
    ///     choice: ToolChoice::Only { tools: vec!["look_up".into()], require: true },
    ///     ..ToolRequest::default()
    /// };
    /// // OpenAI filters the subset itself: both tools are sent, and the cached list is the same.
    /// let openai = toolbox.provider(Dialect::OpenAiChat { strict: true }).request(&only).unwrap();
    /// assert_eq!(openai.report.subset, Subset::Filtered);
    /// assert_eq!(openai.fields["tools"].as_array().unwrap().len(), 2);
    /// assert_eq!(openai.fields["tool_choice"]["allowed_tools"]["mode"], "required");
    /// // Anthropic has no filter: the list is trimmed, and the report says so.
    /// let anthropic = toolbox.provider(Dialect::Anthropic { strict: false }).request(&only).unwrap();
    /// assert_eq!(anthropic.report.subset, Subset::Trimmed);
    /// assert_eq!(anthropic.fields["tool_choice"], toolsmith::serde_json::json!({"type": "tool", "name": "look_up"}));
    /// // A name the toolbox does not have is refused before anything is sent.
    /// let typo = ToolRequest { choice: ToolChoice::Tool("lookup".into()), ..ToolRequest::default() };
    /// assert!(toolbox.provider(Dialect::Gemini).request(&typo).is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`RequestError`] for a name the toolbox does not have, an empty subset, a dialect with no
    /// tool choice (MCP), or a tool the dialect cannot express.
    pub fn request(&self, request: &ToolRequest) -> Result<ToolBlock, RequestError> {
        let defs: Vec<&ToolDefinition> = self.toolbox.definitions().collect();
        self.block(request, &defs)
    }

    /// [`request`](Self::request) with the tools offered in `ctx` (those whose
    /// [`with_enabled_when`](Toolbox::with_enabled_when) condition holds). A tool offered
    /// under a condition ends the stable prefix the Anthropic cache breakpoint marks.
    ///
    /// # Errors
    ///
    /// As [`request`](Self::request); a choice naming a tool not offered in `ctx` is
    /// [`RequestError::UnknownTool`].
    pub async fn request_for(
        &self,
        request: &ToolRequest,
        ctx: &ToolContext,
    ) -> Result<ToolBlock, RequestError> {
        let offered = self.toolbox.offered_for(ctx).await;
        let defs: Vec<&ToolDefinition> = offered.iter().map(|d| &**d).collect();
        let mut block = self.block(request, &defs)?;
        // The prepare step chose these tools in the request's context: a call answering the
        // block is judged by its place in the offer, without preparing every tool again.
        block.offer = std::mem::take(&mut block.offer).prepared();
        Ok(block)
    }

    fn block(
        &self,
        request: &ToolRequest,
        defs: &[&ToolDefinition],
    ) -> Result<ToolBlock, RequestError> {
        if self.dialect == Dialect::Mcp {
            return Err(RequestError::NoToolChoice(self.dialect.name()));
        }
        // The dialect's own checks of the whole list (Anthropic strict's limits).
        crate::provider::export_all(self.dialect, defs)?;
        // The stable prefix (where a cache breakpoint goes) ends at the first tool registered
        // with a condition, whether or not it is offered this time: a tool after it counts as
        // conditional, so the breakpoint stays put when the condition's tool is left out.
        let registry = &self.toolbox.registry;
        let first_conditional = self
            .toolbox
            .own_definitions()
            .position(|def| registry.has_predicate(def.name()));
        let after_condition: std::collections::HashSet<&str> = match first_conditional {
            Some(first) => self
                .toolbox
                .own_definitions()
                .skip(first)
                .map(ToolDefinition::name)
                .collect(),
            None => std::collections::HashSet::new(),
        };
        let offered = defs
            .iter()
            .map(|def| {
                let exported = self.dialect.tool_name(def.name());
                // The tool's own definition: its conditions and policy go by its own name.
                let own = self
                    .resolve(&exported)
                    .map_or(*def, |tool| tool.definition());
                Ok(crate::provider::Offered {
                    registered: def.name().to_owned(),
                    exported,
                    value: def.export(self.dialect)?.clone(),
                    output_schema: def.output_schema().cloned(),
                    conditional: registry.has_predicate(own.name())
                        || after_condition.contains(own.name()),
                    sequential: self.toolbox.policy_of(own).sequential,
                })
            })
            .collect::<Result<Vec<_>, ExportError>>()?;
        crate::provider::build_block(self.dialect, request, offered)
    }

    /// A [`CallStream`](crate::provider::CallStream) for this provider's streamed responses
    /// that checks each call's arguments against its tool while they arrive: a call is given
    /// out as an error as soon as no completion of its arguments could be valid, with the
    /// field errors a whole call would get, and a call cut off is a `truncated_arguments`
    /// error; neither runs. See docs/streaming.md.
    ///
    /// ```
    /// use toolsmith::serde_json::json;
    /// use toolsmith::{tool, Dialect, Toolbox};
    ///
    /// /// Sets a thermostat. Writes the device's setting. Not for reading it.
    /// #[tool(effect = "write")]
    /// fn set_temperature(
    ///     /// Degrees Celsius.
    ///     #[arg(range(min = 5, max = 30))]
    ///     celsius: u32,
    /// ) -> String {
    ///     format!("set to {celsius}")
    /// }
    ///
    /// let toolbox = Toolbox::new().with(SetTemperature);
    /// let mut stream = toolbox.provider(Dialect::OpenAiChat { strict: true }).call_stream();
    /// let start = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
    ///     "function": {"name": "set_temperature", "arguments": "{\"celsius\": 95, "}}]}}]});
    /// // Not run, and known before the model has finished writing: 95 is out of range.
    /// let refused = stream.push(&start).remove(0).unwrap_err();
    /// assert_eq!(refused.error.fields()[0].pointer, "/celsius");
    /// ```
    #[must_use]
    pub fn call_stream(&self) -> crate::provider::CallStream {
        let toolbox = self.toolbox.clone();
        let dialect = self.dialect;
        // A stream answering a request checks arguments only against what it offered.
        let offer = self.offer.cloned();
        crate::provider::CallStream::new(dialect).with_resolver(crate::provider::Resolver(
            Arc::new(move |name: &str| {
                if offer.as_ref().is_some_and(|offer| !offer.contains(name)) {
                    return None;
                }
                toolbox.resolve(dialect, name).cloned()
            }),
        ))
    }

    /// The tools offered in `ctx` ([`Toolbox::export_for`]).
    ///
    /// # Errors
    ///
    /// As [`export`](Self::export).
    pub async fn export_for(&self, ctx: &ToolContext) -> Result<Value, ExportError> {
        self.toolbox.export_for(self.dialect, ctx).await
    }

    /// The tool a name in this provider's spelling refers to.
    #[must_use]
    pub fn resolve(&self, name: &str) -> Option<&'a Arc<dyn Tool>> {
        self.toolbox.resolve(self.dialect, name)
    }

    /// Runs one parsed call through the toolbox's door ([`Toolbox::admit`]) in this
    /// provider's spelling, its id given to the context as the call id. A name no tool has
    /// here, one not offered in `ctx` (its condition, the prepare step) or, for a view
    /// [`answering`](Self::answering) a request, one that request did not offer, is an
    /// `unknown_tool` error listing what the model may call, in this provider's spelling.
    pub async fn run(&self, call: &ToolCall, ctx: &ToolContext) -> ToolOutcome {
        let with_id;
        let ctx = match &call.id {
            Some(id) if ctx.call_id() != Some(id.as_str()) => {
                with_id = ctx.clone().with_call_id(id.as_str());
                &with_id
            }
            _ => ctx,
        };
        let spelling = Spelling::Provider(self.dialect);
        // Looked up once: the door's route takes the tool found here.
        let found = self.toolbox.find_own(&call.name, spelling);
        let index = found.map(|(i, _)| i);
        // The toolbox's own tool search (offered where a provider has none, for deferred
        // tools), unless a tool of the toolbox has its name; answering a request, only if
        // that request offered it.
        if index.is_none()
            && call.name == crate::provider::LOCAL_SEARCH_TOOL
            && self.offer.is_none_or(|offer| offer.contains(&call.name))
        {
            return self.search(call, ctx).await;
        }
        let arguments = match index {
            Some(i) => self.arguments(self.toolbox.registry.in_order[i].definition(), call, ctx),
            None => call.arguments(),
        };
        let knock = super::Knock {
            name: &call.name,
            spelling,
            offer: self.offer,
        };
        let slots = super::CallSlots::default();
        #[cfg(feature = "otel")]
        let started = std::time::Instant::now();
        let done = match self
            .toolbox
            .enter(knock, found, arguments, ctx, None, &slots)
        {
            crate::policy::Flow::Now(done) => done,
            crate::policy::Flow::Later(future) => future.await,
        };
        let name = index.map_or(call.name.as_str(), |i| {
            self.toolbox.registry.in_order[i].definition().name()
        });
        let outcome = super::outcome_of(self.toolbox.finished(done.ran, name, ctx));
        #[cfg(feature = "otel")]
        crate::telemetry::record_tool_duration(
            self.dialect,
            started.elapsed().as_secs_f64(),
            outcome.error().map(|err| err.code().as_str()),
        );
        outcome
    }

    /// A call's arguments for the tool `def`. A strict OpenAI export made a hand-written
    /// tool's optional parameters nullable: there their `null` means "left out", for every
    /// step of the call (the tool's own read too).
    fn arguments<'c>(
        &self,
        def: &ToolDefinition,
        call: &'c ToolCall,
        ctx: &ToolContext,
    ) -> crate::arguments::Arguments<'c> {
        let arguments = call.arguments();
        let strict = matches!(
            self.dialect,
            Dialect::OpenAiChat { strict: true } | Dialect::OpenAiResponses { strict: true }
        );
        if !strict {
            return arguments;
        }
        match def.strict_arguments(&arguments, ctx) {
            Some(left_out) => left_out.into(),
            None => arguments,
        }
    }

    /// The toolbox's tool search: the tools offered in `ctx` that match the query best, in
    /// this provider's spelling.
    async fn search(&self, call: &ToolCall, ctx: &ToolContext) -> ToolOutcome {
        let definition = crate::provider::search_definition();
        let arguments = match definition.validate(self.arguments(definition, call, ctx)) {
            Ok(arguments) => arguments,
            Err(mut err) => {
                super::finish_error(&mut err, definition.name(), ctx);
                return ToolOutcome::Error(err);
            }
        };
        let defs = self.toolbox.definitions_for(ctx).await;
        let found =
            crate::provider::search_answer(&defs, &arguments, |name| self.dialect.tool_name(name));
        // Descriptions reach the model here as data: they go through the output checks as
        // any tool's result does.
        let found = ToolOutcome::success(&found).unwrap_or_else(ToolOutcome::Error);
        self.toolbox
            .settings
            .output_checks(definition)
            .outcome(found)
    }

    /// Runs one parsed call and encodes its outcome as this provider takes a tool result.
    ///
    /// ```
    /// use toolsmith::serde_json::json;
    /// use toolsmith::{tool, Dialect, ToolCall, ToolContext, Toolbox};
    ///
    /// /// Adds two integers. Pure, no side effects. Not for floating-point numbers.
    /// #[tool(effect = "read")]
    /// async fn add(
    ///     /// The first addend.
    ///     a: i64,
    ///     /// The second addend.
    ///     b: i64,
    /// ) -> i64 {
    ///     a + b
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let toolbox = Toolbox::new().with(Add);
    /// let response = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
    ///     {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{\"a\":2,\"b\":3}"}}
    /// ]}}]});
    /// let openai = toolbox.provider(Dialect::OpenAiChat { strict: true });
    /// let call = &ToolCall::parse(openai.dialect(), &response).unwrap()[0];
    /// let message = openai.respond(call, &ToolContext::new()).await;
    /// assert_eq!(message, json!({"role": "tool", "tool_call_id": "call_1", "content": "{\"status\":\"success\",\"data\":5}"}));
    /// # });
    /// ```
    pub async fn respond(&self, call: &ToolCall, ctx: &ToolContext) -> Value {
        let outcome = self.run(call, ctx).await;
        self.encode(call, &outcome)
    }

    /// Runs parsed calls concurrently (the toolbox's limits, each tool's own and sequential
    /// tools honoured) and returns their outcomes in input order.
    pub async fn run_all(&self, calls: &[ToolCall], ctx: &ToolContext) -> Vec<ToolOutcome> {
        let futures = calls.iter().map(|call| self.run(call, ctx)).collect();
        join::JoinAll::new(futures).await
    }

    /// Runs parsed calls concurrently and returns the messages this provider expects next
    /// (see [`Turn::messages`]).
    pub async fn respond_all(&self, calls: &[ToolCall], ctx: &ToolContext) -> Vec<Value> {
        let outcomes = self.run_all(calls, ctx).await;
        self.messages(calls, &outcomes)
    }

    /// One turn: reads every call from a provider's response (whatever
    /// [`ToolCall::parse`] accepts: the whole response or the part holding the calls), runs
    /// them concurrently and returns the calls, their outcomes and the messages to send
    /// back. A response without calls gives a [`Turn::is_final`] turn.
    ///
    /// # Errors
    ///
    /// [`CallParseError`] when the response is not of this provider's shape. A call whose
    /// arguments are wrong is not an error here: the model gets its `invalid_arguments`
    /// envelope and can fix the call.
    pub async fn respond_to(
        &self,
        response: &Value,
        ctx: &ToolContext,
    ) -> Result<Turn, CallParseError> {
        let calls = ToolCall::parse(self.dialect, response)?;
        let outcomes = self.run_all(&calls, ctx).await;
        let programs = crate::provider::program_calls(self.dialect, response);
        let messages = self
            .with_program_calls(&programs)
            .messages(&calls, &outcomes);
        Ok(Turn {
            calls,
            outcomes,
            messages,
        })
    }

    /// The messages answering `calls` with `outcomes`, in this provider's shape.
    #[must_use]
    pub fn messages(&self, calls: &[ToolCall], outcomes: &[ToolOutcome]) -> Vec<Value> {
        let results: Vec<Value> = calls
            .iter()
            .zip(outcomes)
            .map(|(call, outcome)| self.encode(call, outcome))
            .collect();
        self.group(results)
    }

    /// Each call's encoded result, grouped as this provider takes them next.
    pub(crate) fn group(&self, results: Vec<Value>) -> Vec<Value> {
        if results.is_empty() {
            return results;
        }
        match self.dialect {
            Dialect::OpenAiChat { .. } | Dialect::OpenAiResponses { .. } | Dialect::Mcp => results,
            // "Tool results … must come … in the user message that follows", all of them in one.
            Dialect::Anthropic { .. } => {
                vec![serde_json::json!({"role": "user", "content": results})]
            }
            Dialect::Gemini => vec![serde_json::json!({"role": "user", "parts": results})],
        }
    }

    /// One call's outcome as this provider takes a tool result.
    pub(crate) fn encode(&self, call: &ToolCall, outcome: &ToolOutcome) -> Value {
        let program = self.programs.and_then(|programs| {
            programs
                .iter()
                .find(|p| call.id.as_deref() == Some(p.call_id.as_str()))
        });
        if let Some(program) = program {
            return crate::provider::encode_program_result(
                self.dialect,
                call,
                outcome,
                &program.caller,
            );
        }
        let def = self.resolve(&call.name).map(|tool| tool.definition());
        encode_result(self.dialect, call, outcome, def)
    }
}
