//! `#[tool(inline)]` tools run in place, with the same outcomes and policy as any other tool,
//! and `Toolbox::call_into` writes exactly the envelope `call` returns.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use toolsmith::audit::MemorySink;
use toolsmith::outcome::CallStatus;
use toolsmith::policy::RetryPolicy;
use toolsmith::{ErrorCode, ToolContext, ToolError, Toolbox, tool};

/// Add two integers. Pure; no side effects. Not for floating-point numbers.
#[tool(name = "add", effect = "read", inline)]
fn add_inline(
    /// The first addend.
    #[arg(range(min = -1000, max = 1000))]
    a: i64,
    /// The second addend.
    b: i64,
) -> i64 {
    a.saturating_add(b)
}

/// Add two integers. Pure; no side effects. Not for floating-point numbers.
#[tool(name = "add", effect = "read")]
fn add_blocking(
    /// The first addend.
    #[arg(range(min = -1000, max = 1000))]
    a: i64,
    /// The second addend.
    b: i64,
) -> i64 {
    a.saturating_add(b)
}

/// Add two integers. Pure; no side effects. Not for floating-point numbers.
#[tool(name = "add", effect = "read")]
async fn add_async(
    /// The first addend.
    #[arg(range(min = -1000, max = 1000))]
    a: i64,
    /// The second addend.
    b: i64,
) -> i64 {
    a.saturating_add(b)
}

/// Explode on every call. Read-only. Not for production.
#[tool(effect = "read", inline)]
fn trigger_panic() -> i64 {
    panic!("the inline tool exploded")
}

static FLAKY_CALLS: AtomicU32 = AtomicU32::new(0);

/// Fail twice, then answer. Read-only. Not for production.
#[tool(effect = "read", inline)]
fn fetch_flaky() -> Result<u32, ToolError> {
    let n = FLAKY_CALLS.fetch_add(1, Ordering::SeqCst) + 1;
    if n <= 2 {
        Err(ToolError::upstream_error("The upstream hiccuped; retry."))
    } else {
        Ok(n)
    }
}

/// Say who is calling. Read-only. Not for authentication.
#[tool(effect = "read", inline)]
fn get_caller(ctx: &ToolContext) -> Option<String> {
    ctx.principal().map(str::to_owned)
}

const ARGUMENTS: &[&str] = &[
    r#"{"a": 2, "b": 3}"#,
    r#"{"a": 2000, "b": 3}"#,
    r#"{"a": "two", "c": 1}"#,
    r#"{"a": 2.0, "b": 3}"#,
    r#""{\"a\": 1, \"b\": 1}""#,
    r#"[1, 2]"#,
    "",
    "not json",
];

#[tokio::test]
async fn inline_blocking_and_async_tools_answer_alike() {
    let ctx = ToolContext::new().with_trace_id("tr_same");
    let boxes = [
        Toolbox::new().with(AddInline),
        Toolbox::new().with(AddBlocking),
        Toolbox::new().with(AddAsync),
    ];
    for arguments in ARGUMENTS {
        let outcomes: Vec<String> = futures_join(&boxes, "add", arguments, &ctx).await;
        assert_eq!(outcomes[0], outcomes[1], "{arguments}");
        assert_eq!(outcomes[0], outcomes[2], "{arguments}");
    }
}

async fn futures_join(
    boxes: &[Toolbox],
    name: &str,
    arguments: &str,
    ctx: &ToolContext,
) -> Vec<String> {
    let mut out = Vec::new();
    for toolbox in boxes {
        out.push(toolbox.call(name, arguments, ctx).await.to_json());
    }
    out
}

#[tokio::test]
async fn call_into_appends_the_envelope_call_returns() {
    let ctx = ToolContext::new().with_trace_id("tr_same");
    for toolbox in [
        Toolbox::new().with(AddInline),
        Toolbox::new().with(AddBlocking),
        Toolbox::new().with(AddAsync),
    ] {
        for arguments in ARGUMENTS {
            for name in ["add", "subtract"] {
                let expected = toolbox.call(name, *arguments, &ctx).await;
                let mut out = b"previous;".to_vec();
                let status = toolbox.call_into(name, *arguments, &ctx, &mut out).await;
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    format!("previous;{}", expected.to_json()),
                    "{name}({arguments})"
                );
                assert_eq!(status.is_success(), expected.is_success());
                assert_eq!(status.error_code(), expected.error().map(ToolError::code));
            }
        }
    }
}

#[tokio::test]
async fn a_panic_in_an_inline_tool_is_an_internal_error_and_spares_the_buffer() {
    let toolbox = Toolbox::new().with(TriggerPanic);
    let ctx = ToolContext::new().with_trace_id("tr_boom");
    let mut out = b"kept".to_vec();
    let status = toolbox
        .call_into("trigger_panic", "{}", &ctx, &mut out)
        .await;
    assert_eq!(status, CallStatus::Error(ErrorCode::InternalError));
    assert!(out.starts_with(b"kept{\"status\":\"error\""));
    let envelope: serde_json::Value = serde_json::from_slice(&out[4..]).unwrap();
    assert_eq!(envelope["error"]["trace_id"], "tr_boom");
    assert!(
        !String::from_utf8_lossy(&out).contains("exploded"),
        "the panic message stays in the logs"
    );
}

#[tokio::test(start_paused = true)]
async fn retryable_errors_of_inline_tools_are_retried_by_the_policy() {
    let toolbox = Toolbox::new()
        .with(FetchFlaky)
        .with_defaults(toolsmith::policy::Defaults {
            retry: RetryPolicy {
                max_attempts: 3,
                base: Duration::from_millis(10),
                ..RetryPolicy::default()
            },
            ..toolsmith::policy::Defaults::default()
        });
    let mut out = Vec::new();
    let status = toolbox
        .call_into("fetch_flaky", "{}", &ToolContext::new(), &mut out)
        .await;
    assert_eq!(status, CallStatus::Success);
    assert_eq!(out, br#"{"status":"success","data":3}"#);
    assert_eq!(FLAKY_CALLS.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn inline_tools_see_the_context_and_are_audited() {
    let audit = Arc::new(MemorySink::default());
    let toolbox = Toolbox::new().with(GetCaller).with_audit(audit.clone());
    let ctx = ToolContext::new().with_principal("ada");
    let outcome = toolbox.call("get_caller", "{}", &ctx).await;
    assert_eq!(outcome.to_json(), r#"{"status":"success","data":"ada"}"#);
    let records = audit.records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].tool, "get_caller");
    assert_eq!(records[0].status, "success");
}
