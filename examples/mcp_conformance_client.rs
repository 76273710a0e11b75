//! The client side of the official MCP conformance suite: `McpToolset` as the client under
//! test (`scripts/conformance.sh` runs `conformance client --command <this example>`).
//!
//! The suite starts a test server for one scenario and runs this example with the server's
//! URL as its last argument, the scenario's name in `MCP_CONFORMANCE_SCENARIO` and any data it
//! needs (pre-registered credentials, tool calls) as JSON in `MCP_CONFORMANCE_CONTEXT`. The
//! example connects, lists the tools and calls them, as an application would:
//!
//! - `auth/*`: signed in with [`AuthorizationCode`] (OAuth 2.1 with PKCE; a client ID metadata
//!   document, pre-registered credentials or dynamic registration), the person's consent
//!   fetched without a browser: the authorization URL is requested and its redirect read;
//! - every other scenario: connected without a token.
//!
//! ```sh
//! cargo run --example mcp_conformance_client --features mcp-client -- http://127.0.0.1:3000/mcp
//! ```

mod telemetry;

use std::process::ExitCode;

use serde_json::{Map, Value, json};
use toolsmith::caller::{BoxFuture, Caller, CallerError, Elicited};
use toolsmith::policy::{ApprovalDecision, ApprovalRequest};
use toolsmith::toolset::{
    AuthorizationCode, ClientCredentials, Lifecycle, McpClientOptions, McpToolset,
};
use toolsmith::{ToolContext, Toolbox};

/// The client ID metadata document the suite's authorization server expects (its fixture).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// The tool whose input schema the suite's echo tool asks for.
const ECHO_OF: &str = "json_schema_2020_12_tool";
/// Where the authorization server sends the person back; nothing listens there: the redirect
/// is read, not followed.
const REDIRECT_URI: &str = "http://127.0.0.1:3000/callback";

#[tokio::main]
async fn main() -> ExitCode {
    let _telemetry = telemetry::export();
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: mcp_conformance_client <server URL>");
        return ExitCode::FAILURE;
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    match run(&url, &scenario, &context).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("mcp_conformance_client: {scenario}: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(url: &str, scenario: &str, context: &Value) -> Result<(), String> {
    // The revision the suite asks for: 2026-07-28 has no `initialize`, only `server/discover`.
    let lifecycle = match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").as_deref() {
        Ok("2026-07-28") => Lifecycle::Discover,
        _ => Lifecycle::Initialize,
    };
    let mut options = McpClientOptions::default()
        .with_lifecycle(lifecycle)
        .with_caller(TakesTheDefaults);
    if scenario == "auth/client-credentials-basic" {
        // A client of its own, no person: client credentials at the endpoint discovered.
        let id = context["client_id"].as_str().unwrap_or_default();
        let secret = context["client_secret"].as_str().unwrap_or_default();
        options = options.with_sign_in(ClientCredentials::discovered(id, secret));
    } else if scenario.starts_with("auth/") {
        options = options.with_sign_in(sign_in(context));
    }
    let remote = McpToolset::http_with("conformance", url, options)
        .await
        .map_err(|err| err.to_string())?;
    let toolset = remote.tools().await.map_err(|err| err.to_string())?;
    // The suite's tools declare no annotations, so MCP counts them as possibly destructive and
    // the toolbox asks for approval: the person running the suite is taken to approve the
    // calls its scenario makes.
    let toolbox = Toolbox::new()
        .with_toolset(toolset)
        .with_approver(|_: &ApprovalRequest<'_>| ApprovalDecision::Approved);
    let ctx = ToolContext::new();
    // The calls the scenario names, else one of each tool with arguments made from its schema.
    let calls: Vec<(String, Value)> = match context["toolCalls"].as_array() {
        Some(calls) => calls
            .iter()
            .filter_map(|call| {
                let name = call["name"].as_str()?.to_owned();
                // A null argument is an absent one (as a model writing for a strict provider
                // means it): left out.
                let mut arguments = call.get("arguments").cloned().unwrap_or(json!({}));
                if let Some(fields) = arguments.as_object_mut() {
                    fields.retain(|_, value| !value.is_null());
                }
                Some((name, arguments))
            })
            .collect(),
        None => toolbox
            .definitions()
            .map(|def| {
                let echoed = toolbox.definitions().find(|d| d.name() == ECHO_OF);
                let arguments = match echoed {
                    // The echo tool asks for another tool's input schema, as this client
                    // holds it: what the suite reads to see that no keyword was lost.
                    Some(echoed) if def.name() == "json_schema_echo" => {
                        json!({"schema": echoed.input_schema()})
                    }
                    _ => arguments_for(def.input_schema()),
                };
                (def.name().to_owned(), arguments)
            })
            .collect(),
    };
    for (name, arguments) in calls {
        let outcome = toolbox.call(&name, &arguments.to_string(), &ctx).await;
        eprintln!("{name}: {}", outcome.to_json());
    }
    Ok(())
}

/// An authorization code flow whose consent is fetched headlessly.
fn sign_in(context: &Value) -> AuthorizationCode {
    let source = AuthorizationCode::new(REDIRECT_URI, |authorization_url: String| async move {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|err| err.to_string())?;
        let answer = http
            .get(&authorization_url)
            .send()
            .await
            .map_err(|err| err.to_string())?;
        answer
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|location| location.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| format!("the authorization endpoint answered {}", answer.status()))
    })
    .with_client_name("toolsmith conformance client")
    .with_client_metadata_url(CLIENT_METADATA_URL);
    match context["client_id"].as_str() {
        Some(id) => source.with_client(id, context["client_secret"].as_str().map(str::to_owned)),
        None => source,
    }
}

/// The person at this client: accepts every form the server sends with the defaults it
/// proposes (what the suite's elicitation scenario expects of a client).
struct TakesTheDefaults;

impl Caller for TakesTheDefaults {
    fn elicit<'a>(
        &'a self,
        _: Option<&'a str>,
        _: &'a str,
        schema: &'a Value,
    ) -> BoxFuture<'a, Result<Elicited<Value>, CallerError>> {
        let mut answer = Map::new();
        if let Some(properties) = schema["properties"].as_object() {
            for (name, property) in properties {
                if let Some(default) = property.get("default") {
                    answer.insert(name.clone(), default.clone());
                }
            }
        }
        Box::pin(async move { Ok(Elicited::Accepted(Value::Object(answer))) })
    }
}

/// Arguments for a tool from its input schema: each required property given a value of its
/// type.
fn arguments_for(schema: &Value) -> Value {
    let mut arguments = Map::new();
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        let value = match schema["properties"][name]["type"].as_str() {
            Some("number") => json!(1.0),
            Some("integer") => json!(1),
            Some("boolean") => json!(true),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => json!("test"),
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}
