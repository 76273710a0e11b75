//! The runtime contract around a call: context injection, sync tools, panics, errors,
//! envelopes, no-argument tools, overrides and registration.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use toolsmith::{
    ErrorCode, RegistrationError, Tool, ToolContext, ToolError, ToolOutcome, Toolbox, tool,
};

struct Db {
    calls: AtomicUsize,
}

/// Counts calls in the shared database handle. Writes data.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
async fn bump(ctx: &ToolContext) -> Result<Value, ToolError> {
    let db = ctx
        .get::<Arc<Db>>()
        .ok_or_else(|| ToolError::internal("no database in the context"))?;
    let n = db.calls.fetch_add(1, Ordering::SeqCst) + 1;
    Ok(
        json!({"calls": n, "principal": ctx.principal(), "run": ctx.run_id(), "call": ctx.call_id()}),
    )
}

/// Adds two integers.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> i64 {
    a.wrapping_add(b)
}

/// Reports on which thread it runs.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn where_am_i(ctx: &ToolContext) -> String {
    let _ = ctx.trace_id();
    format!("{:?}", std::thread::current().id())
}

/// Panics, to test isolation.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
async fn explode(
    /// Anything.
    #[arg(default = 0)]
    n: u8,
) -> u8 {
    if n < 100 {
        panic!("secret database password is hunter2");
    }
    n
}

/// Panics in a sync tool.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn explode_sync() -> u8 {
    panic!("secret file /etc/shadow")
}

#[derive(Debug)]
struct DbError;

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection to 10.0.0.7:5432 refused")
    }
}

impl std::error::Error for DbError {}

/// Fails with an internal error.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
async fn broken() -> Result<u8, ToolError> {
    Err(DbError)?
}

/// Fails with a retryable error.
#[tool(
    effect = "read",
    allow(description_scope, tool_name, unbounded_string),
    attempts = 1
)]
async fn busy() -> Result<(), ToolError> {
    Err(
        ToolError::rate_limited("The API is rate limited; retry in 30 seconds.")
            .retry_after(std::time::Duration::from_secs(30))
            .with_user_message("Busy, retrying soon."),
    )
}

#[doc = include_str!("fixtures/lookup_description.md")]
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
async fn lookup(#[doc = include_str!("fixtures/lookup_description.md")] id: u32) -> u32 {
    id
}

/// This doc is replaced.
#[tool(
    name = "calendar.create_event",
    description = "Create an event. Writes data.",
    effect = "read",
    allow(description_scope, tool_name, unbounded_string)
)]
async fn create_event(
    /// Ignored in favour of the explicit description.
    #[arg(description = "The event title.", rename = "title")]
    r#type: String,
) -> String {
    r#type
}

/// Returns nothing.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
fn unit() {}

async fn call(toolbox: &Toolbox, name: &str, args: &str) -> Value {
    let out = toolbox
        .call(name, args, &ToolContext::new().with_trace_id("tr_x"))
        .await;
    serde_json::from_str(&out.to_json()).unwrap()
}

#[tokio::test]
async fn context_is_injected_and_carries_state() {
    let db = Arc::new(Db {
        calls: AtomicUsize::new(0),
    });
    let toolbox = Toolbox::new().with(Bump);
    let ctx = ToolContext::new()
        .with_principal("user_1")
        .with_run_id("run_1")
        .with_call_id("call_1")
        .with_extension(Arc::clone(&db));
    let out = toolbox.call("bump", "{}", &ctx).await;
    assert_eq!(
        out.into_result::<Value>().unwrap(),
        json!({"calls": 1, "principal": "user_1", "run": "run_1", "call": "call_1"})
    );
    let schema = Bump.definition().input_schema();
    assert_eq!(
        schema["properties"],
        json!({}),
        "the context is not in the schema"
    );
    assert_eq!(schema["additionalProperties"], false);
}

/// On a current-thread runtime every task runs on the test's thread; a sync tool runs elsewhere.
#[tokio::test(flavor = "current_thread")]
async fn sync_tools_run_on_the_blocking_pool() {
    let toolbox = Toolbox::new().with(Add).with(WhereAmI);
    assert_eq!(
        call(&toolbox, "add", r#"{"a":2,"b":40}"#).await,
        json!({"status":"success","data":42})
    );
    let out = call(&toolbox, "where_am_i", "{}").await;
    let here = format!("{:?}", std::thread::current().id());
    assert_ne!(out["data"].as_str().unwrap(), here);
}

#[tokio::test]
async fn panics_become_internal_errors_without_the_panic_text() {
    let toolbox = Toolbox::new().with(Explode).with(ExplodeSync);
    for name in ["explode", "explode_sync"] {
        let out = call(&toolbox, name, "{}").await;
        assert_eq!(out["status"], "error");
        assert_eq!(out["error"]["code"], "internal_error");
        assert_eq!(out["error"]["trace_id"], "tr_x");
        let text = out.to_string();
        assert!(
            !text.contains("hunter2") && !text.contains("shadow"),
            "{text}"
        );
        assert!(out["error"]["message"].as_str().unwrap().contains("tr_x"));
    }
}

#[tokio::test]
async fn other_errors_are_internal_and_do_not_leak() {
    let toolbox = Toolbox::new().with(Broken);
    let out = call(&toolbox, "broken", "").await;
    assert_eq!(out["error"]["code"], "internal_error");
    assert_eq!(out["error"]["retryable"], false);
    assert!(!out.to_string().contains("10.0.0.7"), "{out}");
}

#[tokio::test]
async fn structured_errors_keep_their_fields() {
    let toolbox = Toolbox::new().with(Busy);
    let out = call(&toolbox, "busy", "{}").await;
    assert_eq!(
        out,
        json!({"status":"error","error":{
            "code":"rate_limited",
            "message":"The API is rate limited; retry in 30 seconds.",
            "user_message":"Busy, retrying soon.",
            "retryable":true,
            "retry_after_ms":30000,
            "human_review":false,
            "trace_id":"tr_x"
        }})
    );
    let parsed: ToolOutcome = serde_json::from_value(out.clone()).unwrap();
    assert_eq!(parsed.error().unwrap().code(), ErrorCode::RateLimited);
    assert_eq!(serde_json::to_value(&parsed).unwrap(), out);
}

#[tokio::test]
async fn no_argument_tools_accept_empty_object_and_empty_string() {
    let toolbox = Toolbox::new().with(Unit);
    for args in ["{}", "", "  ", r#""""#, r#""{}""#] {
        assert_eq!(
            call(&toolbox, "unit", args).await,
            json!({"status":"success","data":null}),
            "{args:?}"
        );
    }
    let out = call(&toolbox, "unit", r#"{"x":1}"#).await;
    assert_eq!(
        out["error"]["fields"][0]["message"],
        "unknown parameter `x`; this object takes no parameters; remove it"
    );
    assert_eq!(call(&toolbox, "unit", "null").await["status"], "error");
}

#[test]
fn descriptions_from_include_str_keep_paragraphs_and_indentation() {
    let def = Lookup.definition();
    assert_eq!(
        def.description(),
        "Look up a customer by id. Read-only.\n\n Returns the customer's name and plan."
    );
    assert_eq!(
        def.input_schema()["properties"]["id"]["description"],
        def.description()
    );
}

#[tokio::test]
async fn name_description_and_rename_overrides() {
    let def = CreateEvent.definition();
    assert_eq!(def.name(), "calendar.create_event");
    assert_eq!(def.description(), "Create an event. Writes data.");
    assert_eq!(
        def.input_schema()["properties"]["title"]["description"],
        "The event title."
    );
    assert_eq!(def.input_schema()["required"], json!(["title"]));
    let toolbox = Toolbox::new().with(CreateEvent);
    let out = call(&toolbox, "calendar.create_event", r#"{"title":"Standup"}"#).await;
    assert_eq!(out["data"], "Standup");
}

#[tokio::test]
async fn integers_with_a_fraction_and_duplicate_keys() {
    let toolbox = Toolbox::new().with(Add);
    // JSON Schema counts 5.0 as an integer, so the runtime accepts it too.
    assert_eq!(
        call(&toolbox, "add", r#"{"a":5.0,"b":-2.0}"#).await["data"],
        3
    );
    // A fraction is not an integer.
    let out = call(&toolbox, "add", r#"{"a":5.5,"b":1}"#).await;
    assert_eq!(out["error"]["fields"][0]["pointer"], "/a");
    // Duplicate keys are ambiguous: rejected, though a parsed value would keep the last one.
    let out = call(&toolbox, "add", r#"{"a":1,"a":2,"b":1}"#).await;
    assert_eq!(out["error"]["code"], "invalid_arguments");
    assert_eq!(out["error"]["fields"][0]["pointer"], "/a");
    assert_eq!(
        out["error"]["fields"][0]["message"],
        "`a` appears more than once; send each key once"
    );
}

#[test]
fn registration_errors() {
    let mut toolbox = Toolbox::new();
    toolbox.register(Add).unwrap();
    assert_eq!(
        toolbox.register(Add).unwrap_err(),
        RegistrationError::Duplicate { name: "add".into() }
    );
    assert_eq!(toolbox.len(), 1);
    let err = std::panic::catch_unwind(|| Toolbox::new().with(Add).with(Add)).unwrap_err();
    let message = err.downcast_ref::<String>().unwrap();
    assert!(
        message.contains("a tool named `add` is already registered"),
        "{message}"
    );
}

/// Takes a code with a look-ahead, which the regex engine of the validator supports.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
async fn lookahead_pattern(
    /// A code that is not `admin`.
    #[arg(pattern = "^(?!admin$)[a-z]+$")]
    code: String,
) -> String {
    code
}

#[path = "support/defined.rs"]
mod defined;
use defined::Defined;

#[tokio::test]
async fn a_pattern_the_macro_accepts_registers() {
    // A pattern that does not compile is a compile error of `#[tool]`
    // (tests/ui/args/conflicting-constraints.rs); one that compiles registers and checks.
    let toolbox = Toolbox::new().with(LookaheadPattern);
    let ok = toolbox
        .call(
            "lookahead_pattern",
            r#"{"code":"alice"}"#,
            &ToolContext::new(),
        )
        .await;
    assert!(ok.is_success(), "{}", ok.to_json());
    let refused = toolbox
        .call(
            "lookahead_pattern",
            r#"{"code":"admin"}"#,
            &ToolContext::new(),
        )
        .await;
    assert_eq!(refused.error().unwrap().code(), ErrorCode::InvalidArguments);
}

#[test]
fn a_broken_pattern_in_a_hand_written_schema_is_refused_at_registration() {
    let def = toolsmith::ToolDefinition::new(
        "bad_pattern",
        "Has a pattern the regex engine rejects.",
        json!({"type": "object", "properties": {"code": {"type": "string", "pattern": "(unclosed"}}}),
    );
    let err = Toolbox::new()
        .register(Defined(def))
        .map(|_| ())
        .unwrap_err();
    assert!(
        matches!(err, RegistrationError::InvalidDefinition { ref name, .. } if name == "bad_pattern"),
        "{err}"
    );
}

#[test]
fn definitions_and_names_keep_registration_order() {
    let toolbox = Toolbox::new().with(Unit).with(Add).with(Busy);
    assert_eq!(toolbox.names().collect::<Vec<_>>(), ["unit", "add", "busy"]);
    let json = serde_json::to_value(toolbox.definitions().nth(1).unwrap()).unwrap();
    assert_eq!(json["name"], "add");
    assert_eq!(json["description"], "Adds two integers.");
    assert_eq!(json["input_schema"]["required"], json!(["a", "b"]));
}

#[tokio::test]
async fn lookup_does_not_depend_on_the_number_of_tools() {
    // Structural: the toolbox is a hash map from name to tool, so a call's lookup is O(1).
    // Here: 1 tool or 1 + many registered under other names give the same result.
    let small = Toolbox::new().with(Add);
    let mut large = Toolbox::new();
    large.register(Add).unwrap();
    for tool in [
        Arc::new(Unit) as Arc<dyn Tool>,
        Arc::new(Busy),
        Arc::new(Bump),
        Arc::new(Lookup),
    ] {
        large.register_arc(tool).unwrap();
    }
    assert_eq!(
        call(&small, "add", r#"{"a":1,"b":1}"#).await,
        call(&large, "add", r#"{"a":1,"b":1}"#).await
    );
}

#[tokio::test]
async fn errors_stay_small_for_huge_input() {
    let toolbox = Toolbox::new().with(Add);
    let mut args = serde_json::Map::new();
    for i in 0..900 {
        args.insert(format!("key_{i}_{}", "x".repeat(200)), json!(i));
    }
    let out = call(&toolbox, "add", &Value::Object(args).to_string()).await;
    let fields = out["error"]["fields"].as_array().unwrap();
    assert_eq!(fields.len(), 21);
    assert_eq!(
        fields[20]["message"],
        "and more problems: fix these and call again to see the rest"
    );
    assert!(out.to_string().len() < 20_000, "{}", out.to_string().len());
    // Past the limits, one problem names the limit.
    let mut args = serde_json::Map::new();
    for i in 0..5000 {
        args.insert(format!("key_{i}"), json!(i));
    }
    let out = call(&toolbox, "add", &Value::Object(args).to_string()).await;
    let fields = out["error"]["fields"].as_array().unwrap();
    assert_eq!(fields.len(), 1);
    assert_eq!(fields[0]["pointer"], "");
    assert!(
        fields[0]["message"]
            .as_str()
            .unwrap()
            .contains("more than 1000 keys, the limit (max_members)")
    );
}

/// A hand-written schema the JSON Schema validator cannot compile (a reference to nothing)
/// is still refused when the tool registers: only a `#[tool]` schema, generated from types,
/// has its validator built on first use instead.
#[test]
fn a_hand_written_schema_that_does_not_compile_is_refused_at_registration() {
    let def = toolsmith::ToolDefinition::new(
        "bad_reference",
        "Has a reference to nothing.",
        json!({"type": "object", "properties": {"code": {"$ref": "#/$defs/Nowhere"}}}),
    );
    let err = Toolbox::new()
        .register(Defined(def))
        .map(|_| ())
        .unwrap_err();
    assert!(
        matches!(err, RegistrationError::InvalidDefinition { ref name, .. } if name == "bad_reference"),
        "{err}"
    );
}
