//! The tools, resources and prompts of the MCP conformance suite's server scenarios
//! (`@modelcontextprotocol/conformance`), built with `#[tool]` and served over streamable HTTP.
//!
//! ```sh
//! cargo run --example mcp_conformance --features mcp            # http://127.0.0.1:8000/mcp
//! cargo run --example mcp_conformance --features mcp -- 127.0.0.1:0
//! bash scripts/conformance.sh                                  # runs the suite against it
//! ```
//!
//! The first line on stdout is the endpoint's URL; Ctrl-C stops the server.

mod telemetry;

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolsmith::caller::{Elicited, LogLevel, Sampling};
use toolsmith::mcp::rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, ErrorData, GetPromptRequestParams,
    GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    PaginatedRequestParams, Prompt, PromptArgument, PromptMessage, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, UnsubscribeRequestParams,
};
use toolsmith::mcp::rmcp::service::RequestContext;
use toolsmith::mcp::rmcp::{self, RoleServer};
use toolsmith::mcp::{McpServer, TaskSupport};
use toolsmith::output::Content;
use toolsmith::policy::Switch;
use toolsmith::{ToolContext, ToolError, Toolbox, tool};

/// A 1×1 red PNG.
const RED_PIXEL: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53,
    0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x08, 0xd7, 0x63, 0xf8, 0xcf, 0xc0, 0x00,
    0x00, 0x03, 0x01, 0x01, 0x00, 0x18, 0xdd, 0x8d, 0xb0, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A WAV file of one silent sample.
const SILENCE: &[u8] = &[
    b'R', b'I', b'F', b'F', 38, 0, 0, 0, b'W', b'A', b'V', b'E', b'f', b'm', b't', b' ', 16, 0, 0,
    0, 1, 0, 1, 0, 0x44, 0xac, 0, 0, 0x88, 0x58, 0x01, 0, 2, 0, 16, 0, b'd', b'a', b't', b'a', 2,
    0, 0, 0, 0, 0,
];

/// Returns a simple text response. Read-only. Not for real work.
#[tool(effect = "read")]
fn test_simple_text() -> Content {
    Content::new().text("This is a simple text response for testing.")
}

/// Returns a small image. Read-only. Not for real work.
#[tool(effect = "read")]
fn test_image_content() -> Content {
    Content::new().image(RED_PIXEL, "image/png")
}

/// Returns a short sound. Read-only. Not for real work.
#[tool(effect = "read")]
fn test_audio_content() -> Content {
    Content::new().audio(SILENCE, "audio/wav")
}

/// Returns an embedded resource. Read-only. Not for real work.
#[tool(effect = "read")]
fn test_embedded_resource() -> Content {
    Content::new().resource_text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    )
}

/// Returns text, an image and a resource. Read-only. Not for real work.
#[tool(effect = "read")]
fn test_multiple_content_types() -> Content {
    Content::new()
        .text("Multiple content types test:")
        .image(RED_PIXEL, "image/png")
        .resource_text(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#,
        )
}

/// Logs three messages as it runs. Read-only. Not for real work.
#[tool(effect = "read")]
async fn test_tool_with_logging(ctx: &ToolContext) -> Content {
    ctx.log(LogLevel::Info, "Tool execution started").await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    ctx.log(LogLevel::Info, "Tool processing data").await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    ctx.log(LogLevel::Info, "Tool execution completed").await;
    Content::new().text("Tool with logging executed successfully")
}

/// Reports its progress as it runs. Read-only. Not for real work.
#[tool(effect = "read")]
async fn test_tool_with_progress(ctx: &ToolContext) -> Content {
    for done in [0.0, 50.0, 100.0] {
        ctx.progress(done, Some(100.0), None).await;
        if done < 100.0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    Content::new().text("Tool with progress executed successfully")
}

/// Always fails. Read-only. Not for real work.
#[tool(effect = "read")]
fn test_error_handling() -> Result<u32, ToolError> {
    Err(ToolError::invalid_arguments(
        "This tool intentionally returns an error for testing",
    ))
}

/// Asks the client's model to answer a prompt. Read-only. Not for real work.
#[tool(effect = "read")]
async fn test_sampling(
    ctx: &ToolContext,
    /// The prompt to send to the model.
    #[arg(length(max = 2000))]
    prompt: String,
) -> Result<Content, ToolError> {
    let answer = ctx
        .sample(Sampling::new(prompt).with_max_tokens(100))
        .await?;
    Ok(Content::new().text(format!("LLM response: {}", answer.text)))
}

/// The user's details.
#[derive(Serialize, Deserialize, JsonSchema)]
struct UserDetails {
    /// User's response
    username: String,
    /// User's email address
    email: String,
}

/// Asks the user for their name and email. Read-only. Not for real work.
#[tool(effect = "read")]
async fn test_elicitation(
    ctx: &ToolContext,
    /// The message to show the user.
    #[arg(length(max = 2000))]
    message: String,
) -> Result<Content, ToolError> {
    let answer = ctx.elicit::<UserDetails>(&message).await?;
    Ok(Content::new().text(describe(&answer)))
}

fn default_name() -> String {
    "John Doe".into()
}
fn default_age() -> i64 {
    30
}
fn default_score() -> f64 {
    95.5
}
fn default_verified() -> bool {
    true
}

/// A status.
#[derive(Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "lowercase")]
enum Status {
    #[default]
    Active,
    Inactive,
    Pending,
}

/// A form with a default for every primitive type.
#[derive(Serialize, Deserialize, JsonSchema)]
struct Defaults {
    #[serde(default = "default_name")]
    name: String,
    #[serde(default = "default_age")]
    age: i64,
    #[serde(default = "default_score")]
    score: f64,
    #[serde(default)]
    status: Status,
    #[serde(default = "default_verified")]
    verified: bool,
}

/// Asks the user for a form whose fields have defaults. Read-only. Not for real work.
#[tool(effect = "read")]
async fn test_elicitation_sep1034_defaults(ctx: &ToolContext) -> Result<Content, ToolError> {
    let answer = ctx
        .elicit::<Defaults>("Please review and update the form fields with defaults")
        .await?;
    Ok(Content::new().text(describe(&answer)))
}

/// Three options, without titles.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Untitled {
    Option1,
    Option2,
    Option3,
}

/// Three options, with titles.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Titled {
    Value1,
    Value2,
    Value3,
}

/// Every kind of choice a form can offer, each field's schema in the exact form elicitation
/// defines for it (SEP-1330): the form the client shows and the check of its answer.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Choices {
    #[serde(default)]
    #[schemars(schema_with = "untitled_single")]
    untitled_single: Option<Untitled>,
    #[serde(default)]
    #[schemars(schema_with = "titled_single")]
    titled_single: Option<Titled>,
    #[serde(default)]
    #[schemars(schema_with = "legacy_titled")]
    legacy_enum: Option<String>,
    #[serde(default)]
    #[schemars(schema_with = "untitled_multi")]
    untitled_multi: Option<Vec<Untitled>>,
    #[serde(default)]
    #[schemars(schema_with = "titled_multi")]
    titled_multi: Option<Vec<Titled>>,
}

fn titled_options() -> serde_json::Value {
    serde_json::json!([
        {"const": "value1", "title": "First Option"},
        {"const": "value2", "title": "Second Option"},
        {"const": "value3", "title": "Third Option"}
    ])
}

fn untitled_single(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "enum": ["option1", "option2", "option3"]})
}

fn titled_single(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "oneOf": titled_options()})
}

fn legacy_titled(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "enum": ["opt1", "opt2", "opt3"],
        "enumNames": ["Option One", "Option Two", "Option Three"]})
}

fn untitled_multi(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "array",
        "items": {"type": "string", "enum": ["option1", "option2", "option3"]}})
}

fn titled_multi(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "array", "items": {"anyOf": titled_options()}})
}

/// Asks the user to choose from every kind of list. Read-only. Not for real work.
#[tool(effect = "read")]
async fn test_elicitation_sep1330_enums(ctx: &ToolContext) -> Result<Content, ToolError> {
    let answer = ctx
        .elicit::<Choices>("Please select options from the enum fields")
        .await?;
    Ok(Content::new().text(describe(&answer)))
}

/// A name.
#[derive(Serialize, Deserialize, JsonSchema)]
struct Name {
    name: String,
}

/// A colour.
#[derive(Serialize, Deserialize, JsonSchema)]
struct Colour {
    color: String,
}

/// A confirmation.
#[derive(Serialize, Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

/// Asks for the user's name (under the key `user_name`) and greets them.
async fn hello(ctx: &ToolContext) -> Result<Content, ToolError> {
    let Name { name } = accepted(
        ctx.elicit_as::<Name>("user_name", "What is your name?")
            .await?,
    )?;
    Ok(Content::new().text(format!("Hello, {name}!")))
}

fn accepted<T>(answer: Elicited<T>) -> Result<T, ToolError> {
    match answer {
        Elicited::Accepted(value) => Ok(value),
        _ => Err(ToolError::invalid_arguments("The user did not answer.")),
    }
}

/// Greets the user by the name they give. Read-only. Not for real work.
#[tool(effect = "read")]
async fn test_input_required_result_elicitation(ctx: &ToolContext) -> Result<Content, ToolError> {
    hello(ctx).await
}

/// Lists the client's roots. Read-only. Not for real work.
#[tool(effect = "read")]
async fn test_input_required_result_list_roots(ctx: &ToolContext) -> Result<Content, ToolError> {
    let roots = ctx.roots("client_roots").await?;
    let uris: Vec<&str> = roots.iter().map(|r| r.uri.as_str()).collect();
    Ok(Content::new().text(format!("Roots: {}", uris.join(", "))))
}

/// Asks the client's model a question. Read-only. Not for real work.
#[tool(effect = "read")]
async fn test_input_required_result_sampling(ctx: &ToolContext) -> Result<Content, ToolError> {
    let answer = ctx
        .sample_as(
            "capital_question",
            Sampling::new("What is the capital of France?").with_max_tokens(100),
        )
        .await?;
    Ok(Content::new().text(answer.text))
}

/// Asks for a confirmation, carrying state between rounds. Read-only. Not for real work.
#[tool(effect = "read")]
async fn test_input_required_result_request_state(ctx: &ToolContext) -> Result<Content, ToolError> {
    let Confirm { ok } = accepted(
        ctx.elicit_as::<Confirm>("confirm", "Please confirm")
            .await?,
    )?;
    Ok(Content::new().text(format!("state-ok: confirmed={ok}")))
}

/// Asks for a name and a greeting at once. Read-only. Not for real work.
#[tool(effect = "read")]
async fn test_input_required_result_multiple_inputs(
    ctx: &ToolContext,
) -> Result<Content, ToolError> {
    // Both asked in one round: each is recorded before either answer is needed.
    let name = ctx
        .elicit_as::<Name>("user_name", "What is your name?")
        .await;
    let greeting = ctx
        .sample_as(
            "greeting",
            Sampling::new("Generate a greeting").with_max_tokens(50),
        )
        .await;
    let roots = ctx.roots("client_roots").await;
    let Name { name } = accepted(name?)?;
    let roots = roots?;
    Ok(Content::new().text(format!(
        "{}, {name} ({} roots)",
        greeting?.text,
        roots.len()
    )))
}

/// Asks for a name, then a colour, in two rounds. Read-only. Not for real work.
#[tool(effect = "read")]
async fn test_input_required_result_multi_round(ctx: &ToolContext) -> Result<Content, ToolError> {
    let Name { name } = accepted(
        ctx.elicit_as::<Name>("step1", "Step 1: What is your name?")
            .await?,
    )?;
    let Colour { color } = accepted(
        ctx.elicit_as::<Colour>("step2", "Step 2: What is your favorite color?")
            .await?,
    )?;
    Ok(Content::new().text(format!("{name} likes {color}")))
}

/// Asks for a name; its state is sealed against changes. Read-only. Not for real work.
#[tool(effect = "read")]
async fn test_input_required_result_tampered_state(
    ctx: &ToolContext,
) -> Result<Content, ToolError> {
    hello(ctx).await
}

/// Asks only for what the client can give. Read-only. Not for real work.
#[tool(effect = "read")]
async fn test_input_required_result_capabilities(ctx: &ToolContext) -> Result<Content, ToolError> {
    use toolsmith::caller::CallerErrorKind;
    let name = ctx
        .elicit_as::<Name>("user_name", "What is your name?")
        .await;
    let answer = ctx
        .sample_as(
            "capital_question",
            Sampling::new("What is the capital of France?").with_max_tokens(100),
        )
        .await;
    // Whatever the client cannot give is skipped; the rest waits for its answers.
    fn waiting<T>(r: &Result<T, toolsmith::caller::CallerError>) -> bool {
        matches!(r, Err(e) if e.kind() == CallerErrorKind::InputRequired)
    }
    if waiting(&name) || waiting(&answer) {
        return Err(toolsmith::caller::CallerError::new(
            CallerErrorKind::InputRequired,
            "waiting for the client",
        )
        .into());
    }
    Ok(Content::new().text("capabilities checked"))
}

/// Logs a message at info level. Read-only. Not for real work.
#[tool(effect = "read")]
async fn test_logging_tool(ctx: &ToolContext) -> Content {
    ctx.log(LogLevel::Info, "test_logging_tool ran").await;
    Content::new().text("logged")
}

/// Needs sampling, which a client may not offer. Read-only. Not for real work.
#[tool(effect = "read")]
async fn test_missing_capability(ctx: &ToolContext) -> Result<Content, ToolError> {
    let answer = ctx
        .sample_as("question", Sampling::new("Say hi.").with_max_tokens(10))
        .await?;
    Ok(Content::new().text(answer.text))
}

/// Asks the user for their name. Read-only. Not for real work.
#[tool(effect = "read")]
async fn test_streaming_elicitation(ctx: &ToolContext) -> Result<Content, ToolError> {
    hello(ctx).await
}

/// Shows or hides `test_hidden_tool`, changing the tool list. Writes data. Not for real work.
#[tool(effect = "write", idempotent)]
fn test_trigger_tool_change(ctx: &ToolContext) -> Result<Content, ToolError> {
    let switch = ctx
        .get::<Switch>()
        .ok_or_else(|| ToolError::internal("no switch in the context"))?;
    switch.set(!switch.is_on());
    Ok(Content::new().text("tool list changed"))
}

/// Offered only while the switch is on. Read-only. Not for real work.
#[tool(effect = "read")]
fn test_hidden_tool() -> Content {
    Content::new().text("now you see me")
}

fn describe<T: Serialize>(answer: &Elicited<T>) -> String {
    match answer {
        Elicited::Accepted(content) => format!(
            "Elicitation completed: action=accept, content={}",
            serde_json::to_string(content).unwrap_or_default()
        ),
        Elicited::Declined => "Elicitation completed: action=decline".to_owned(),
        Elicited::Cancelled => "Elicitation completed: action=cancel".to_owned(),
    }
}

/// The suite's resources and prompts, written with rmcp's own API.
#[derive(Default)]
struct Catalog {
    subscribed: Mutex<BTreeSet<String>>,
}

fn text_resource(uri: &str, mime: &str, text: &str) -> ResourceContents {
    ResourceContents::TextResourceContents {
        uri: uri.to_owned(),
        mime_type: Some(mime.to_owned()),
        text: text.to_owned(),
        meta: None,
    }
}

impl rmcp::ServerHandler for Catalog {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_prompts()
                .enable_completions()
                .build(),
        )
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new("test://static-text", "static-text").with_mime_type("text/plain"),
            Resource::new("test://static-binary", "static-binary").with_mime_type("image/png"),
            Resource::new("test://watched-resource", "watched-resource")
                .with_mime_type("text/plain"),
        ]))
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("test://template/{id}/data", "template-data")
                .with_mime_type("application/json"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        use base64::Engine as _;
        let uri = request.uri.as_str();
        let contents = match uri {
            "test://static-text" => text_resource(
                uri,
                "text/plain",
                "This is the content of the static text resource.",
            ),
            "test://watched-resource" => text_resource(uri, "text/plain", "Watched content."),
            "test://static-binary" => ResourceContents::BlobResourceContents {
                uri: uri.to_owned(),
                mime_type: Some("image/png".to_owned()),
                blob: base64::engine::general_purpose::STANDARD.encode(RED_PIXEL),
                meta: None,
            },
            _ => match uri
                .strip_prefix("test://template/")
                .and_then(|rest| rest.strip_suffix("/data"))
            {
                Some(id) if !id.contains('/') => text_resource(
                    uri,
                    "application/json",
                    &serde_json::json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
                        .to_string(),
                ),
                _ => {
                    return Err(ErrorData::resource_not_found(
                        format!("no resource {uri}"),
                        Some(serde_json::json!({"uri": uri})),
                    ));
                }
            },
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut subscribed) = self.subscribed.lock() {
            subscribed.insert(request.uri);
        }
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut subscribed) = self.subscribed.lock() {
            subscribed.remove(&request.uri);
        }
        Ok(())
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let argument = |name: &str, description: &str| {
            PromptArgument::new(name)
                .with_description(description)
                .with_required(true)
        };
        Ok(ListPromptsResult::with_all_items(vec![
            Prompt::new("test_simple_prompt", Some("A simple prompt"), None),
            Prompt::new(
                "test_prompt_with_arguments",
                Some("A prompt with arguments"),
                Some(vec![
                    argument("arg1", "First test argument"),
                    argument("arg2", "Second test argument"),
                ]),
            ),
            Prompt::new(
                "test_prompt_with_embedded_resource",
                Some("A prompt with an embedded resource"),
                Some(vec![argument(
                    "resourceUri",
                    "URI of the resource to embed",
                )]),
            ),
            Prompt::new(
                "test_prompt_with_image",
                Some("A prompt with an image"),
                None,
            ),
        ]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        use base64::Engine as _;
        let arg = |name: &str| {
            request
                .arguments
                .as_ref()
                .and_then(|a| a.get(name))
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_owned()
        };
        let message = |content: serde_json::Value| -> Result<PromptMessage, ErrorData> {
            serde_json::from_value(serde_json::json!({"role": "user", "content": content}))
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))
        };
        let messages = match request.name.as_str() {
            "test_simple_prompt" => vec![PromptMessage::new_text(
                Role::User,
                "This is a simple prompt for testing.",
            )],
            "test_prompt_with_arguments" => vec![PromptMessage::new_text(
                Role::User,
                format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    arg("arg1"),
                    arg("arg2")
                ),
            )],
            "test_prompt_with_embedded_resource" => vec![
                message(serde_json::json!({"type": "resource", "resource": {
                    "uri": arg("resourceUri"), "mimeType": "text/plain",
                    "text": "Embedded resource content for testing."}}))?,
                PromptMessage::new_text(Role::User, "Please process the embedded resource above."),
            ],
            "test_input_required_result_prompt" => {
                // MCP 2026-07-28: ask the client's user first, with rmcp's input-required result.
                let Some(answer) = request
                    .input_responses
                    .as_ref()
                    .and_then(|r| r.get("user_context"))
                else {
                    let requests = serde_json::from_value(serde_json::json!({"user_context": {
                        "method": "elicitation/create",
                        "params": {"message": "What context should the prompt use?",
                            "requestedSchema": {"type": "object",
                                "properties": {"context": {"type": "string"}}, "required": ["context"]}}}}))
                        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                    return Ok(rmcp::model::GetPromptResponse::InputRequired(
                        rmcp::model::InputRequiredResult::from_input_requests(requests),
                    ));
                };
                let context = answer["content"]["context"].as_str().unwrap_or_default();
                vec![PromptMessage::new_text(
                    Role::User,
                    format!("Use this context: {context}"),
                )]
            }
            "test_prompt_with_image" => vec![
                message(serde_json::json!({"type": "image", "mimeType": "image/png",
                    "data": base64::engine::general_purpose::STANDARD.encode(RED_PIXEL)}))?,
                PromptMessage::new_text(Role::User, "Please analyze the image above."),
            ],
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no prompt named {other}"),
                    None,
                ));
            }
        };
        Ok(GetPromptResult::new(messages).into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let typed = request.argument.value.to_lowercase();
        let values: Vec<String> = ["paris", "park", "party"]
            .into_iter()
            .filter(|v| v.starts_with(&typed))
            .map(str::to_owned)
            .collect();
        let info = CompletionInfo::new(values)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(CompleteResult::new(info))
    }
}

/// A tool defined by a hand-written JSON Schema 2020-12 document (`$defs` with an `$anchor`,
/// `allOf`/`anyOf`, `if`/`then`/`else`), which `tools/list` must carry unchanged.
struct SchemaTool(toolsmith::ToolDefinition);

impl SchemaTool {
    fn new() -> Self {
        let schema = serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"}
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        });
        Self(
            toolsmith::ToolDefinition::new(
                "json_schema_2020_12_tool",
                "Tool with JSON Schema 2020-12 features",
                schema,
            )
            .with_effect(toolsmith::Effect::Read),
        )
    }
}

impl toolsmith::Tool for SchemaTool {
    fn definition(&self) -> &toolsmith::ToolDefinition {
        &self.0
    }

    fn call<'a>(
        &'a self,
        arguments: toolsmith::Arguments<'a>,
        _: &'a ToolContext,
    ) -> toolsmith::tool::BoxFuture<'a, toolsmith::ToolOutcome> {
        Box::pin(async move {
            match self.0.validate(arguments) {
                Ok(args) => toolsmith::ToolOutcome::success(&args)
                    .unwrap_or_else(toolsmith::ToolOutcome::Error),
                Err(err) => toolsmith::ToolOutcome::Error(err),
            }
        })
    }
}

/// Greets someone by name. Read-only. Not for real work.
#[tool(effect = "read")]
fn greet(
    /// Who to greet.
    #[arg(length(max = 100))]
    name: String,
) -> Content {
    Content::new().text(format!("Hello, {name}!"))
}

/// Waits `seconds`, then says so: a long call, run as a task. Read-only. Not for real work.
#[tool(effect = "read", timeout = "2m")]
async fn slow_compute(
    ctx: &ToolContext,
    /// How long to work, in seconds.
    #[arg(range(max = 90))]
    seconds: u64,
    /// A name for this run, echoed back.
    #[arg(length(max = 100))]
    label: Option<String>,
) -> Result<Content, ToolError> {
    for done in 0..seconds {
        ctx.progress(done as f64, Some(seconds as f64), None).await;
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            () = ctx.cancelled() => return Err(ToolError::new(toolsmith::ErrorCode::Cancelled, "The computation was cancelled.")),
        }
    }
    let label = label.unwrap_or_default();
    Ok(Content::new().text(format!("computed for {seconds} s ({label})")))
}

/// Works for a second, then fails the way a tool fails: an error result. Read-only.
/// Not for real work.
#[tool(effect = "read")]
async fn failing_job() -> Result<Content, ToolError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(ToolError::new(
        toolsmith::ErrorCode::NotFound,
        "The job's input does not exist.",
    ))
}

/// Works for a second, then panics: a fault of the server, not of the tool's work.
/// Read-only. Not for real work.
#[tool(effect = "read")]
async fn protocol_error_job() -> Result<Content, ToolError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    panic!("the job's worker crashed")
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct DeleteConfirmation {
    confirm: bool,
}

/// Asks the user to confirm, then pretends to delete `filename`. Not for real work.
#[tool(effect = "read", timeout = "2m")]
async fn confirm_delete(
    ctx: &ToolContext,
    /// The file to delete.
    #[arg(length(max = 200))]
    filename: String,
) -> Result<Content, ToolError> {
    let DeleteConfirmation { confirm } = accepted(
        ctx.elicit::<DeleteConfirmation>(&format!("Delete {filename}?"))
            .await?,
    )?;
    Ok(Content::new().text(if confirm {
        format!("deleted {filename}")
    } else {
        format!("kept {filename}")
    }))
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Part {
    name: String,
    confirm: bool,
}

/// Asks the user two questions at once, then reports both answers. Read-only.
/// Not for real work.
#[tool(effect = "read", timeout = "2m")]
async fn multi_input(ctx: &ToolContext) -> Result<Content, ToolError> {
    let (first, second) = tokio::join!(
        ctx.elicit_as::<Part>("first", "The first part?"),
        ctx.elicit_as::<Part>("second", "The second part?"),
    );
    let (first, second) = (accepted(first?)?, accepted(second?)?);
    Ok(Content::new().text(format!("{} and {}", first.name, second.name)))
}

/// Asks the user's name first, then greets them in the background (a task). Read-only.
/// Not for real work.
#[tool(effect = "read", timeout = "2m")]
async fn test_tool_with_task(ctx: &ToolContext) -> Result<Content, ToolError> {
    let Name { name } = accepted(
        ctx.elicit_as::<Name>("user_name", "What is your name?")
            .await?,
    )?;
    ctx.detach().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(Content::new().text(format!("Hello, {name}!")))
}

/// Names the region a call is routed to; the region also travels as the header
/// `Mcp-Param-Region`. Read-only. Not for real work.
#[tool(effect = "read")]
fn test_header_param(
    /// The region, e.g. "eu-west".
    #[arg(length(max = 100))]
    region: String,
) -> Content {
    Content::new().text(format!("routed to {region}"))
}

fn toolbox(switch: &Switch) -> Toolbox {
    Toolbox::new()
        .with(Greet)
        .with(TestHeaderParam)
        .with(SlowCompute)
        .with(FailingJob)
        .with(ProtocolErrorJob)
        .with(ConfirmDelete)
        .with(MultiInput)
        .with(TestToolWithTask)
        .with(TestTriggerToolChange)
        .with(TestHiddenTool)
        .with_enabled_when("test_hidden_tool", switch.clone())
        .with(SchemaTool::new())
        .with(TestLoggingTool)
        .with(TestMissingCapability)
        .with(TestStreamingElicitation)
        .with(TestInputRequiredResultElicitation)
        .with(TestInputRequiredResultSampling)
        .with(TestInputRequiredResultListRoots)
        .with(TestInputRequiredResultRequestState)
        .with(TestInputRequiredResultMultipleInputs)
        .with(TestInputRequiredResultMultiRound)
        .with(TestInputRequiredResultTamperedState)
        .with(TestInputRequiredResultCapabilities)
        .with(TestSimpleText)
        .with(TestImageContent)
        .with(TestAudioContent)
        .with(TestEmbeddedResource)
        .with(TestMultipleContentTypes)
        .with(TestToolWithLogging)
        .with(TestToolWithProgress)
        .with(TestErrorHandling)
        .with(TestSampling)
        .with(TestElicitation)
        .with(TestElicitationSep1034Defaults)
        .with(TestElicitationSep1330Enums)
}

#[tokio::main]
async fn main() -> ExitCode {
    let _telemetry = telemetry::export();
    let addr = std::env::args().nth(1);
    let switch = Switch::new(false);
    let shared = switch.clone();
    let server = McpServer::new(toolbox(&switch))
        .with_name("toolsmith-conformance", env!("CARGO_PKG_VERSION"))
        .with_handler(Catalog::default())
        .with_param_header("test_header_param", "region", "Region")
        .with_task_tool("slow_compute", TaskSupport::Optional)
        .with_task_tool("failing_job", TaskSupport::Required)
        .with_task_tool("protocol_error_job", TaskSupport::Optional)
        .with_task_tool("confirm_delete", TaskSupport::Optional)
        .with_task_tool("multi_input", TaskSupport::Optional)
        .with_task_tool("test_tool_with_task", TaskSupport::OnDetach)
        .with_context(move |ctx, _| ctx.with_extension(shared.clone()));
    let bound = match addr {
        Some(addr) => server.bind_http(&addr).await,
        None => server.bind_local_http(8000).await,
    };
    let http = match bound {
        Ok(http) => http,
        Err(err) => {
            eprintln!("cannot serve: {err}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", http.url());
    let _ = tokio::signal::ctrl_c().await;
    match http.shutdown().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{err}");
            ExitCode::FAILURE
        }
    }
}
