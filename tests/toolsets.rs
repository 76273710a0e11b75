//! Toolsets composed as values: merge, prefix, rename, filter, prepare and argument
//! transforms, and what each leaves the same behind the call.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use proptest::prelude::*;
use serde_json::{Value, json};
use toolsmith::audit::MemorySink;
use toolsmith::policy::Approvals;
use toolsmith::provider::{ToolChoice, ToolRequest};
use toolsmith::toolset::{Prepared, Toolset, Transform, TransformError, fit_name};
use toolsmith::{
    Dialect, RegistrationError, Tool, ToolCall, ToolContext, ToolDefinition, Toolbox, tool,
};

static BOOKED: AtomicU32 = AtomicU32::new(0);

/// Books a room. Writes a booking. Not for changing one.
#[tool(effect = "write")]
fn book_room(
    /// The room.
    #[arg(length(min = 1, max = 20))]
    room: String,
    /// How many nights.
    #[arg(range(min = 1, max = 30))]
    nights: u32,
) -> String {
    let n = BOOKED.fetch_add(1, Ordering::SeqCst);
    format!("booking {n}: {room} for {nights}")
}

/// Searches the wiki. Read-only. Not for tickets.
#[tool(effect = "read")]
fn search(
    /// Words to look for.
    #[arg(length(min = 1, max = 100))]
    text: String,
) -> String {
    format!("wiki: {text}")
}

/// Searches the tickets of a tenant. Read-only. Not for the wiki.
#[tool(name = "search_tickets", effect = "read")]
fn search_tickets(
    /// The tenant.
    #[arg(length(min = 1, max = 40))]
    tenant: String,
    /// Words to look for.
    #[arg(length(min = 1, max = 100))]
    text: String,
    /// How many results.
    #[arg(default = 5, range(min = 1, max = 50))]
    limit: u32,
) -> String {
    format!("{tenant}: {text} ({limit})")
}

/// Deletes a ticket. Destructive: it cannot be undone. Not for closing tickets.
#[tool(effect = "destructive", requires_approval)]
fn delete_ticket(
    /// The ticket.
    #[arg(range(min = 1))]
    id: u64,
) -> String {
    format!("deleted {id}")
}

#[test]
fn a_merge_clash_names_both_sets() {
    let err = Toolset::new("wiki")
        .with(Search)
        .merge(Toolset::new("helpdesk").with(Search))
        .unwrap_err();
    assert!(matches!(err, RegistrationError::Clash { .. }));
    let text = err.to_string();
    assert!(
        text.contains("toolset `wiki`") && text.contains("toolset `helpdesk`"),
        "{text}"
    );

    // Shown under the same name by a rename: a clash too, in the provider's spelling.
    let err = Toolset::new("wiki")
        .with(Search)
        .merge(
            Toolset::new("helpdesk")
                .with(SearchTickets)
                .renamed("search_tickets", "search")
                .unwrap(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("toolset `helpdesk`"), "{err}");

    // With a tool added on its own.
    let mut toolbox = Toolbox::new().with(Search);
    let err = toolbox
        .register_toolset(Toolset::new("wiki").with(Search))
        .unwrap_err();
    assert!(err.to_string().contains("a tool added on its own"), "{err}");
    // Nothing of a refused set joined.
    assert_eq!(toolbox.len(), 1);
}

#[test]
fn prefixes_and_renames_are_views() {
    let toolbox = Toolbox::new().with_toolset(
        Toolset::new("wiki")
            .with(Search)
            .with(BookRoom)
            .prefixed("wiki")
            .renamed("wiki_book_room", "reserve")
            .unwrap()
            .described(
                "reserve",
                "Reserves a room. Writes a booking. Not for changes.",
            )
            .unwrap(),
    );
    let names: Vec<&str> = toolbox.names().collect();
    assert_eq!(names, ["wiki_search", "reserve"]);
    let tools = toolbox
        .export(Dialect::Anthropic { strict: false })
        .unwrap();
    assert_eq!(tools[1]["name"], "reserve");
    assert_eq!(
        tools[1]["description"],
        "Reserves a room. Writes a booking. Not for changes."
    );
    // The schema is the tool's own.
    assert_eq!(
        tools[1]["input_schema"],
        BookRoom
            .definition()
            .export(Dialect::Anthropic { strict: false })
            .unwrap()["input_schema"]
    );
    // Registered under the own name.
    assert!(toolbox.get("book_room").is_some());
    assert!(toolbox.get("reserve").is_none());
}

#[tokio::test]
async fn a_renamed_tool_calls_as_the_original_in_audit_and_idempotency() {
    let sink = Arc::new(MemorySink::default());
    let toolbox = Toolbox::new()
        .with_toolset(
            Toolset::new("hotel")
                .with(BookRoom)
                .renamed("book_room", "reserve")
                .unwrap(),
        )
        .with_audit(Arc::clone(&sink));
    let ctx = ToolContext::new()
        .with_run_id("run-rename")
        .with_principal("ada");
    let openai = toolbox.provider(Dialect::OpenAiChat { strict: true });
    let call = ToolCall {
        id: Some("call_1".into()),
        name: "reserve".into(),
        arguments: json!("{\"room\":\"12\",\"nights\":2}"),
    };
    let first = openai.run(&call, &ctx).await;
    assert!(first.is_success(), "{}", first.to_json());
    // The same write by its own name, in the same run: one key, answered from the first.
    let second = toolbox
        .call("book_room", json!({"nights": 2, "room": "12"}), &ctx)
        .await;
    assert!(second.is_replay(), "{}", second.to_json());
    assert_eq!(first.data().unwrap().get(), second.data().unwrap().get());

    let records = sink.records();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0].tool, "book_room");
    assert_eq!(records[1].tool, "book_room");
    assert_eq!(records[0].arguments, records[1].arguments);
    assert_eq!(records[0].arguments_hash, records[1].arguments_hash);

    // The model is told about the tool under the name it knows.
    let unknown = ToolCall {
        id: None,
        name: "book_room".into(),
        arguments: json!({}),
    };
    let err = openai.run(&unknown, &ctx).await;
    assert!(
        err.error().unwrap().message().contains("`reserve`"),
        "{}",
        err.to_json()
    );
}

#[tokio::test]
async fn approvals_of_a_renamed_tool_go_by_its_own_name() {
    let approvals = Approvals::new();
    let toolbox = Toolbox::new()
        .with_toolset(Toolset::new("desk").with(DeleteTicket).prefixed("desk"))
        .with_approver(approvals.clone());
    let ctx = ToolContext::new().with_principal("ada");
    let anthropic = toolbox.provider(Dialect::Anthropic { strict: false });
    let call = ToolCall {
        id: Some("toolu_1".into()),
        name: "desk_delete_ticket".into(),
        arguments: json!({"id": 7}),
    };
    let first = anthropic.run(&call, &ctx).await;
    assert_eq!(first.error().unwrap().code().as_str(), "approval_required");
    let pending = approvals.pending();
    assert_eq!(pending[0].tool, "delete_ticket");
    anthropic.approve(&call, &ctx).unwrap();
    assert!(anthropic.run(&call, &ctx).await.is_success());
}

#[test]
fn long_names_are_shortened_with_a_stable_hash() {
    let long = "a".repeat(60);
    let toolbox = Toolbox::new().with_toolset(
        Toolset::new("x")
            .with(Search)
            .with(SearchTickets)
            .prefixed(&long),
    );
    let names: Vec<String> = toolbox.names().map(str::to_owned).collect();
    assert_eq!(names.len(), 2);
    for name in &names {
        assert_eq!(name.len(), 64, "{name}");
    }
    // Cut at 64 they would be one name; the hash keeps them two.
    assert_ne!(names[0], names[1]);
    assert_eq!(names[0], fit_name(&format!("{long}_search")));
    // Every provider takes them.
    for dialect in Dialect::ALL {
        toolbox.export(dialect).unwrap();
    }
}

#[test]
fn filters_keep_the_order() {
    let set = Toolset::new("all")
        .with(Search)
        .with(BookRoom)
        .with(SearchTickets)
        .with(DeleteTicket)
        .filtered(|def| def.effect() == Some(toolsmith::Effect::Read));
    assert_eq!(
        set.names().collect::<Vec<_>>(),
        ["search", "search_tickets"]
    );
}

struct Planning;

#[tokio::test]
async fn prepare_hides_and_re_describes_for_one_request_without_reordering() {
    let toolbox = Toolbox::new()
        .with(Search)
        .with(BookRoom)
        .with(SearchTickets)
        .with_prepare(|ctx: &ToolContext, tools: &mut Prepared<'_>| {
            if ctx.get::<Planning>().is_some() {
                tools.retain(|def| def.effect() == Some(toolsmith::Effect::Read));
                tools.describe("search", "Searches the wiki while planning. Read-only.");
            }
        });
    let planning = ToolContext::new().with_extension(Planning);
    let openai = toolbox.provider(Dialect::OpenAiChat { strict: true });
    let block = openai
        .request_for(&ToolRequest::default(), &planning)
        .await
        .unwrap();
    let tools = block.fields["tools"].as_array().unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search", "search_tickets"]);
    assert_eq!(
        tools[0]["function"]["description"],
        "Searches the wiki while planning. Read-only."
    );
    // A call of a hidden tool is refused as an unknown one.
    let out = toolbox
        .call("book_room", json!({"room": "1", "nights": 1}), &planning)
        .await;
    assert_eq!(out.error().unwrap().code().as_str(), "unknown_tool");
    // A choice naming it is refused before anything is sent.
    let forced = ToolRequest {
        choice: ToolChoice::Tool("book_room".into()),
        ..ToolRequest::default()
    };
    assert!(openai.request_for(&forced, &planning).await.is_err());

    // Another request: everything, with its own descriptions, in the same order.
    let all = openai
        .request_for(&ToolRequest::default(), &ToolContext::new())
        .await
        .unwrap();
    let names: Vec<&str> = all.fields["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search", "book_room", "search_tickets"]);
    assert_eq!(
        all.fields["tools"][0]["function"]["description"],
        Search.definition().description()
    );
}

#[tokio::test]
async fn a_prepare_step_names_tools_as_a_model_is_shown_them() {
    let renamed = Toolset::new("desk")
        .with(BookRoom)
        .renamed("book_room", "reserve_room")
        .unwrap();
    let toolbox = Toolbox::new()
        .with(Search)
        .with_toolset(renamed)
        .with_prepare(|_: &ToolContext, tools: &mut Prepared<'_>| {
            // No tool is shown by its registered name once renamed, nor by a name no tool has.
            assert!(!tools.hide("book_room"));
            assert!(!tools.describe("nope", "x"));
            assert!(tools.describe("search", "First words."));
            assert!(tools.describe("search", "Searches the wiki, today. Read-only."));
            assert!(tools.hide("reserve_room"));
            assert!(tools.hide("reserve_room"));
            let left: Vec<&str> = tools.definitions().map(|d| d.name()).collect();
            assert_eq!(left, ["search"]);
        });
    let ctx = ToolContext::new();
    let offered = toolbox
        .export_for(Dialect::OpenAiChat { strict: true }, &ctx)
        .await
        .unwrap();
    let tools = offered.as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(
        tools[0]["function"]["description"],
        "Searches the wiki, today. Read-only."
    );
    // Hidden under the name it is shown by, the tool is refused under its own.
    let out = toolbox
        .call("book_room", json!({"room": "1", "nights": 1}), &ctx)
        .await;
    assert_eq!(out.error().unwrap().code().as_str(), "unknown_tool");
}

struct Tenant(&'static str);

fn find_tickets() -> toolsmith::toolset::Transformed {
    Transform::new(SearchTickets)
        .with_name("find_tickets")
        .with_description("Finds tickets. Read-only. Not for the wiki.")
        .with_arg_from_context("tenant", |ctx| ctx.get::<Tenant>().map(|t| json!(t.0)))
        .with_arg_renamed("text", "query")
        .with_arg_described("query", "What the user is looking for.")
        .with_arg_fixed("limit", json!(3))
        .build()
        .unwrap()
}

#[tokio::test]
async fn transforms_derive_a_schema_and_forward() {
    let find = find_tickets();
    let schema = find.definition().input_schema().clone();
    assert_eq!(schema["required"], json!(["query"]));
    let properties = schema["properties"].as_object().unwrap();
    assert_eq!(properties.keys().collect::<Vec<_>>(), ["query"]);
    assert_eq!(
        properties["query"]["description"],
        "What the user is looking for."
    );
    // The original's checks, kept in the derived schema.
    assert_eq!(properties["query"]["maxLength"], 100);

    let toolbox = Toolbox::new().with(find);
    let ctx = ToolContext::new().with_extension(Tenant("acme"));
    let out = toolbox
        .call("find_tickets", json!({"query": "vpn"}), &ctx)
        .await;
    assert_eq!(out.into_result::<String>().unwrap(), "acme: vpn (3)");
    // The model cannot set a hidden parameter.
    let out = toolbox
        .call(
            "find_tickets",
            json!({"query": "vpn", "tenant": "other"}),
            &ctx,
        )
        .await;
    assert_eq!(out.error().unwrap().code().as_str(), "invalid_arguments");
    // The original validation still runs: a context without a tenant is refused by it.
    let out = toolbox
        .call("find_tickets", json!({"query": "vpn"}), &ToolContext::new())
        .await;
    let err = out.error().unwrap();
    assert_eq!(err.code().as_str(), "invalid_arguments");
    assert!(err.message().contains("tenant"), "{}", err.message());
}

#[test]
fn transform_mistakes_are_errors() {
    let err = Transform::new(SearchTickets)
        .with_arg_renamed("nope", "x")
        .build()
        .unwrap_err();
    assert!(matches!(err, TransformError::UnknownParameter { .. }));
    let err = Transform::new(SearchTickets)
        .with_arg_renamed("text", "tenant")
        .build()
        .unwrap_err();
    assert!(matches!(err, TransformError::ParameterTaken { .. }));
    let err = Transform::new(SearchTickets)
        .with_name("has space")
        .build()
        .unwrap_err();
    assert!(matches!(err, TransformError::InvalidName { .. }));
}

#[test]
fn lints_run_on_the_derived_definition() {
    let vague = Transform::new(Search)
        .with_name("lookup")
        .with_description("Search.")
        .build()
        .unwrap();
    let findings = Toolbox::new().with(vague).lint();
    assert!(findings.iter().any(|f| f.tool == "lookup"), "{findings:?}");
    let clean = Toolbox::new().with(Search).lint();
    assert!(clean.iter().all(|f| f.tool != "lookup"));
}

fn shown_names(toolbox: &Toolbox) -> Vec<String> {
    toolbox.names().map(str::to_owned).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any prefix and rename: every shown name is one each provider takes, the own names are
    /// unchanged, and each shown name resolves to its own tool.
    #[test]
    fn views_resolve_to_their_own_tools(prefix in "[a-z][a-z0-9_-]{0,80}", rename in "[a-z][a-z0-9_.-]{0,100}") {
        let set = Toolset::new("set").with(Search).with(SearchTickets).prefixed(&prefix);
        let first = set.names().next().unwrap().to_owned();
        let set = set.renamed(&first, &rename).unwrap();
        let names: Vec<String> = set.names().map(str::to_owned).collect();
        let mut toolbox = Toolbox::new();
        if let Err(err) = toolbox.register_toolset(set) {
            // Only a rename onto the other tool's shown name (in a provider's spelling) clashes.
            prop_assert!(matches!(err, RegistrationError::Clash { .. }), "{}", err);
            let openai = Dialect::OpenAiChat { strict: false };
            prop_assert_eq!(openai.tool_name(&names[0]), openai.tool_name(&names[1]));
            return Ok(());
        }
        for dialect in Dialect::ALL {
            let exported: Value = toolbox.export(dialect).unwrap();
            let tools = exported
                .as_array()
                .or_else(|| exported["tools"].as_array())
                .or_else(|| exported["functionDeclarations"].as_array());
            prop_assert_eq!(tools.map(Vec::len), Some(2));
        }
        let own: Vec<&str> = ["search", "search_tickets"].to_vec();
        for (shown, own) in shown_names(&toolbox).iter().zip(own) {
            prop_assert!(shown.len() <= 64);
            let openai = toolbox.provider(Dialect::OpenAiChat { strict: false });
            let spelled = Dialect::OpenAiChat { strict: false }.tool_name(shown);
            prop_assert_eq!(openai.resolve(&spelled).unwrap().definition().name(), own);
        }
    }
}

#[test]
fn a_hand_written_definition_joins_a_set() {
    struct Echo(ToolDefinition);
    impl Tool for Echo {
        fn definition(&self) -> &ToolDefinition {
            &self.0
        }
        fn call<'a>(
            &'a self,
            arguments: toolsmith::Arguments<'a>,
            _ctx: &'a ToolContext,
        ) -> toolsmith::tool::BoxFuture<'a, toolsmith::ToolOutcome> {
            Box::pin(async move {
                match self.0.validate(arguments) {
                    Ok(args) => toolsmith::ToolOutcome::success(&args["text"])
                        .unwrap_or_else(toolsmith::ToolOutcome::Error),
                    Err(err) => toolsmith::ToolOutcome::Error(err),
                }
            })
        }
    }
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}},
        "required": ["text"], "additionalProperties": false});
    let echo = Echo(ToolDefinition::new(
        "echo",
        "Echoes the text. Read-only.",
        schema,
    ));
    let toolbox = Toolbox::new().with_toolset(Toolset::new("e").with(echo).prefixed("util"));
    assert_eq!(shown_names(&toolbox), ["util_echo"]);
}
