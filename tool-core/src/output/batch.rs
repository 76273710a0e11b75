//! Partial success: a tool that works on several items says which succeeded and which failed,
//! each with its error, and can let the runtime retry only the failed ones.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ToolError;

/// The result of a tool that works on several items (send these emails, update these rows):
/// the items that succeeded with their results, the items that failed with their errors, and,
/// when the tool allows it, the arguments that redo only the failed ones.
///
/// The envelope of such a result says how many of each there were (`"partial"`), so neither
/// the model nor the audit log can take a half-done batch for a done one. When some failures
/// are retryable (a rate limit, a timeout) and the tool gave `retry_arguments`, the runtime's
/// retries call the tool again with those arguments alone, as the retry policy allows, and
/// merge what comes back: items that succeeded are never redone.
///
/// ```
/// use toolsmith::output::Batch;
/// use toolsmith::{tool, ToolContext, ToolError, Toolbox};
///
/// /// Sends this month's newsletter to each member. Writes data. Not for one-off messages.
/// #[tool(effect = "write", idempotent)]
/// fn send_newsletter(
///     /// The members' ids.
///     #[arg(length(max = 100))]
///     members: Vec<u64>,
/// ) -> Batch<String> {
///     let mut batch = Batch::new();
///     for id in &members {
///         if *id == 0 {
///             batch.fail(id.to_string(), ToolError::not_found("No member has id 0."));
///         } else {
///             batch.succeed(id.to_string(), format!("queued for member {id}"));
///         }
///     }
///     batch
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let toolbox = Toolbox::new().with(SendNewsletter);
/// let args = r#"{"members": [7, 0]}"#;
/// let out = toolbox.call("send_newsletter", args, &ToolContext::new()).await;
/// let env: toolsmith::serde_json::Value = toolsmith::serde_json::from_str(&out.to_json()).unwrap();
/// assert_eq!(env["partial"]["succeeded"], 1);
/// assert_eq!(env["partial"]["failed"], 1);
/// assert_eq!(env["data"]["failed"][0]["item"], "0");
/// assert_eq!(env["data"]["failed"][0]["error"]["code"], "not_found");
/// # });
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Batch<T> {
    /// The items that succeeded, each with its result.
    pub succeeded: Vec<Succeeded<T>>,
    /// The items that failed, each with its error.
    pub failed: Vec<Failed>,
    /// Arguments that redo only the failed items, when the tool allows the runtime to retry
    /// them ([`retry_with`](Self::retry_with)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_arguments: Option<Value>,
}

/// One item that succeeded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Succeeded<T> {
    /// Which item: its id, address or key, as the caller named it.
    pub item: String,
    /// What the tool made of it.
    pub result: T,
}

/// One item that failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failed {
    /// Which item.
    pub item: String,
    /// Why, as a tool error (its code says whether trying again may help).
    pub error: ToolError,
}

impl JsonSchema for Failed {
    fn schema_name() -> Cow<'static, str> {
        "FailedItem".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "properties": {
                "item": {"type": "string", "description": "Which item."},
                "error": {
                    "type": "object",
                    "description": "Why it failed: a code, a message, and whether a retry may help.",
                    "properties": {
                        "code": {"type": "string"},
                        "message": {"type": "string"},
                        "retryable": {"type": "boolean"}
                    },
                    "required": ["code", "message", "retryable"]
                }
            },
            "required": ["item", "error"]
        })
    }
}

impl<T: JsonSchema> JsonSchema for Batch<T> {
    fn schema_name() -> Cow<'static, str> {
        format!("Batch_of_{}", T::schema_name()).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let succeeded = generator.subschema_for::<Vec<Succeeded<T>>>();
        let failed = generator.subschema_for::<Vec<Failed>>();
        json_schema!({
            "type": "object",
            "properties": {
                "succeeded": succeeded,
                "failed": failed,
                "retry_arguments": {
                    "description": "Arguments that redo only the failed items."
                }
            },
            "required": ["succeeded", "failed"]
        })
    }
}

impl<T> Default for Batch<T> {
    fn default() -> Self {
        Self {
            succeeded: Vec::new(),
            failed: Vec::new(),
            retry_arguments: None,
        }
    }
}

impl<T> Batch<T> {
    /// An empty batch.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Records an item that succeeded.
    pub fn succeed(&mut self, item: impl Into<String>, result: T) -> &mut Self {
        self.succeeded.push(Succeeded {
            item: item.into(),
            result,
        });
        self
    }

    /// Records an item that failed.
    pub fn fail(&mut self, item: impl Into<String>, error: ToolError) -> &mut Self {
        self.failed.push(Failed {
            item: item.into(),
            error,
        });
        self
    }

    /// Lets the runtime retry the failed items whose errors are retryable, by calling the tool
    /// again with `arguments` (which must name only those items). Retries follow the tool's
    /// retry policy and are made only for reads, idempotent writes and calls with an
    /// idempotency key.
    #[must_use]
    pub fn retry_with(mut self, arguments: Value) -> Self {
        self.retry_arguments = Some(arguments);
        self
    }
}

/// Whether an output schema is a [`Batch`]'s.
pub(crate) fn is_batch_schema(schema: &Value) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| {
            p.contains_key("succeeded")
                && p.contains_key("failed")
                && p.contains_key("retry_arguments")
        })
}

/// How many items of a batch's data succeeded and failed, and the arguments to retry the
/// failed ones when some of them may succeed on a retry.
pub(crate) struct Tally {
    pub(crate) succeeded: usize,
    pub(crate) failed: usize,
    /// The arguments that redo the failed items, and the first retryable failure's error
    /// (whose delay the retry waits for), when a retry may help.
    pub(crate) retry: Option<(Value, ToolError)>,
}

pub(crate) fn tally(data: &Value) -> Option<Tally> {
    let succeeded = data.get("succeeded")?.as_array()?.len();
    let failed = data.get("failed")?.as_array()?;
    let retryable = failed
        .iter()
        .filter_map(|f| serde_json::from_value::<ToolError>(f.get("error")?.clone()).ok())
        .find(ToolError::is_retryable);
    let arguments = data
        .get("retry_arguments")
        .filter(|a| a.is_object())
        .cloned();
    Some(Tally {
        succeeded,
        failed: failed.len(),
        retry: arguments.zip(retryable),
    })
}

/// `earlier` with the items `later` redid: its successes added; of the earlier failures,
/// those it redid replaced by its own (the others, not retried, kept); its retry arguments.
pub(crate) fn merge(earlier: &mut Value, later: Value) {
    let Value::Object(mut later) = later else {
        return;
    };
    let item = |v: &Value| v.get("item").and_then(Value::as_str).map(str::to_owned);
    let later_succeeded = match later.remove("succeeded") {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    };
    let later_failed = match later.remove("failed") {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    };
    let redone: std::collections::HashSet<String> = later_succeeded
        .iter()
        .chain(&later_failed)
        .filter_map(item)
        .collect();
    if let Some(Value::Array(done)) = earlier.get_mut("succeeded") {
        done.extend(later_succeeded);
    }
    if let Some(Value::Array(failed)) = earlier.get_mut("failed") {
        failed.retain(|f| item(f).is_none_or(|i| !redone.contains(&i)));
        failed.extend(later_failed);
    }
    if let Some(map) = earlier.as_object_mut() {
        match later.remove("retry_arguments") {
            Some(args) => {
                map.insert("retry_arguments".into(), args);
            }
            None => {
                map.remove("retry_arguments");
            }
        }
    }
}
