//! Tools derived from another: a parameter hidden behind a value, renamed or re-described.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::arguments::Arguments;
use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::outcome::ToolOutcome;
use crate::tool::{BoxFuture, Tool};

type FromContext = Arc<dyn Fn(&ToolContext) -> Option<Value> + Send + Sync>;

/// Derives a new tool from another by changing what it takes: a parameter hidden behind a
/// fixed value or one read from the call's context, a parameter renamed or re-described, the
/// tool renamed or re-described. [`build`](Self::build) gives a [`Transformed`] tool whose
/// schema is the derived one and which forwards each call to the original.
///
/// The derived schema is what the model is shown and what a call is first checked against;
/// the original tool then checks the arguments it gets as it always does. Lints run on the
/// derived definition ([`Toolbox::lint`](crate::Toolbox::lint)). The derived tool is a tool
/// of its own: its calls are recorded, approved and keyed under its own name.
///
/// ```
/// use toolsmith::serde_json::json;
/// use toolsmith::toolset::Transform;
/// use toolsmith::{tool, Tool, ToolContext, Toolbox};
///
/// /// Searches a tenant's tickets. Read-only. Not for closed tickets.
/// #[tool(effect = "read")]
/// fn search_tickets(
///     /// The tenant.
///     #[arg(length(min = 1, max = 40))]
///     tenant: String,
///     /// Words to look for.
///     #[arg(length(min = 1, max = 100))]
///     text: String,
/// ) -> String {
///     format!("{tenant}: {text}")
/// }
///
/// struct Tenant(String);
///
/// let find = Transform::new(SearchTickets)
///     .with_name("find_tickets")
///     .with_arg_from_context("tenant", |ctx| ctx.get::<Tenant>().map(|t| json!(t.0)))
///     .with_arg_renamed("text", "query")
///     .with_arg_described("query", "What the user is looking for.")
///     .build()
///     .unwrap();
/// assert_eq!(find.definition().input_schema()["required"], json!(["query"]));
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let toolbox = Toolbox::new().with(find);
/// let ctx = ToolContext::new().with_extension(Tenant("acme".into()));
/// let out = toolbox.call("find_tickets", r#"{"query": "vpn"}"#, &ctx).await;
/// assert_eq!(out.into_result::<String>().unwrap(), "acme: vpn");
/// // The model cannot set the hidden parameter.
/// let out = toolbox.call("find_tickets", r#"{"query": "vpn", "tenant": "other"}"#, &ctx).await;
/// assert_eq!(out.error().unwrap().code().as_str(), "invalid_arguments");
/// # });
/// ```
#[must_use]
pub struct Transform {
    tool: Arc<dyn Tool>,
    name: Option<String>,
    description: Option<String>,
    changes: Vec<Change>,
}

enum Change {
    Rename { from: String, to: String },
    Describe { name: String, text: String },
    Hide { name: String, value: Hidden },
}

#[derive(Clone)]
enum Hidden {
    Fixed(Value),
    FromContext(FromContext),
}

/// Why a [`Transform`] cannot be built.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransformError {
    /// The original tool has no parameter of this name (after the renames before it).
    UnknownParameter {
        /// The tool.
        tool: String,
        /// The parameter named.
        parameter: String,
    },
    /// A rename would give two parameters one name.
    ParameterTaken {
        /// The tool.
        tool: String,
        /// The name already taken.
        parameter: String,
    },
    /// The original schema is not an object with `properties`, or names parameters in
    /// keywords a transform cannot follow (`dependentRequired`, `patternProperties`, ...).
    UnsupportedSchema {
        /// The tool.
        tool: String,
        /// What stands in the way.
        reason: String,
    },
    /// The derived name is not a valid tool name.
    InvalidName {
        /// The name.
        name: String,
    },
}

impl fmt::Display for TransformError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownParameter { tool, parameter } => {
                write!(f, "the tool `{tool}` has no parameter `{parameter}`")
            }
            Self::ParameterTaken { tool, parameter } => write!(
                f,
                "the tool `{tool}` already has a parameter `{parameter}`; rename to another name"
            ),
            Self::UnsupportedSchema { tool, reason } => {
                write!(f, "the tool `{tool}` cannot be transformed: {reason}")
            }
            Self::InvalidName { name } => write!(
                f,
                "`{name}` is not a valid tool name; use 1 to 128 characters from A-Z, a-z, 0-9, `_`, `-` and `.`"
            ),
        }
    }
}

impl std::error::Error for TransformError {}

/// Top-level keywords that name parameters, which a rename or a hidden parameter would
/// have to follow.
const NAMING_KEYWORDS: [&str; 6] = [
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "propertyNames",
    "dependencies",
    "unevaluatedProperties",
];

impl Transform {
    /// Starts from `tool`, unchanged.
    pub fn new(tool: impl Tool) -> Self {
        Self::from_arc(Arc::new(tool))
    }

    /// Starts from a tool that is already shared.
    pub fn from_arc(tool: Arc<dyn Tool>) -> Self {
        Self {
            tool,
            name: None,
            description: None,
            changes: Vec::new(),
        }
    }

    /// The derived tool's name (the original's by default).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The derived tool's description (the original's by default).
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The parameter `from` is called `to` in the derived schema; each call's `to` reaches the
    /// original tool as `from`.
    pub fn with_arg_renamed(mut self, from: impl Into<String>, to: impl Into<String>) -> Self {
        self.changes.push(Change::Rename {
            from: from.into(),
            to: to.into(),
        });
        self
    }

    /// The parameter `name` (as named at this point) is described with `text`.
    pub fn with_arg_described(mut self, name: impl Into<String>, text: impl Into<String>) -> Self {
        self.changes.push(Change::Describe {
            name: name.into(),
            text: text.into(),
        });
        self
    }

    /// The parameter `name` leaves the schema: every call gets `value` for it, and a model
    /// that sends it is refused (the derived schema takes no such key).
    pub fn with_arg_fixed(mut self, name: impl Into<String>, value: Value) -> Self {
        self.changes.push(Change::Hide {
            name: name.into(),
            value: Hidden::Fixed(value),
        });
        self
    }

    /// The parameter `name` leaves the schema: each call gets what `value` reads from the
    /// call's context (the principal, an extension). `None` leaves the parameter out, so
    /// that the original tool's default, or its refusal of a missing value, applies.
    pub fn with_arg_from_context(
        mut self,
        name: impl Into<String>,
        value: impl Fn(&ToolContext) -> Option<Value> + Send + Sync + 'static,
    ) -> Self {
        self.changes.push(Change::Hide {
            name: name.into(),
            value: Hidden::FromContext(Arc::new(value)),
        });
        self
    }

    /// The derived tool.
    ///
    /// # Errors
    ///
    /// [`TransformError`] for a parameter the tool does not have, a rename onto a name that
    /// is taken, a schema a transform cannot follow, or an invalid name.
    pub fn build(self) -> Result<Transformed, TransformError> {
        let original = self.tool.definition();
        let tool_name = original.name().to_owned();
        let unsupported = |reason: &str| TransformError::UnsupportedSchema {
            tool: tool_name.clone(),
            reason: reason.to_owned(),
        };
        let mut schema = original.input_schema().clone();
        let Some(object) = schema.as_object_mut() else {
            return Err(unsupported("its input schema is not an object"));
        };
        if let Some(keyword) = NAMING_KEYWORDS.iter().find(|k| object.contains_key(**k)) {
            return Err(unsupported(&format!(
                "its schema names parameters in `{keyword}`"
            )));
        }
        let mut properties = match object.remove("properties") {
            Some(Value::Object(properties)) => properties,
            None => Map::new(),
            Some(_) => return Err(unsupported("its `properties` is not an object")),
        };
        let mut required: Vec<String> = match object.remove("required") {
            Some(Value::Array(names)) => names
                .into_iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        // Derived name → original name, for the parameters that keep a place in the schema.
        let mut renames: Vec<(String, String)> = Vec::new();
        let mut hidden: Vec<(String, Hidden)> = Vec::new();
        let mut sensitive: Vec<std::borrow::Cow<'static, str>> =
            original.sensitive_params().to_vec();
        let missing = |parameter: &str| TransformError::UnknownParameter {
            tool: tool_name.clone(),
            parameter: crate::echo::echo(parameter).into_owned(),
        };
        // The original name of the parameter now called `current`.
        let original_of = |renames: &[(String, String)], current: &str| {
            renames
                .iter()
                .find(|(now, _)| now == current)
                .map_or_else(|| current.to_owned(), |(_, was)| was.clone())
        };
        for change in self.changes {
            match change {
                Change::Rename { from, to } => {
                    let Some(schema) = properties.shift_remove(&from) else {
                        return Err(missing(&from));
                    };
                    if properties.contains_key(&to) {
                        return Err(TransformError::ParameterTaken {
                            tool: tool_name.clone(),
                            parameter: to,
                        });
                    }
                    properties.insert(to.clone(), schema);
                    for name in &mut required {
                        if *name == from {
                            name.clone_from(&to);
                        }
                    }
                    for name in &mut sensitive {
                        if *name == from {
                            *name = std::borrow::Cow::Owned(to.clone());
                        }
                    }
                    let was = original_of(&renames, &from);
                    renames.retain(|(now, _)| *now != from);
                    renames.push((to, was));
                }
                Change::Describe { name, text } => {
                    let Some(schema) = properties.get_mut(&name) else {
                        return Err(missing(&name));
                    };
                    match schema {
                        Value::Object(schema) => {
                            schema.insert("description".into(), Value::String(text));
                        }
                        // `true`: any value, described.
                        other => *other = serde_json::json!({"description": text}),
                    }
                }
                Change::Hide { name, value } => {
                    if properties.shift_remove(&name).is_none() {
                        return Err(missing(&name));
                    }
                    required.retain(|n| *n != name);
                    sensitive.retain(|n| *n != name);
                    let was = original_of(&renames, &name);
                    renames.retain(|(now, _)| *now != name);
                    hidden.push((was, value));
                }
            }
        }
        object.insert("properties".into(), Value::Object(properties));
        if !required.is_empty() {
            object.insert(
                "required".into(),
                Value::Array(required.into_iter().map(Value::String).collect()),
            );
        }
        let name = self.name.unwrap_or_else(|| tool_name.clone());
        if !super::names::valid_name(&name) {
            return Err(TransformError::InvalidName {
                name: crate::echo::echo(&name).into_owned(),
            });
        }
        let definition = original.derived(name, self.description.as_deref(), schema, sensitive);
        renames.retain(|(now, was)| now != was);
        Ok(Transformed {
            inner: self.tool,
            definition,
            renames,
            hidden,
        })
    }
}

impl fmt::Debug for Transform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transform")
            .field("tool", &self.tool.definition().name())
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A tool derived by a [`Transform`]: the derived schema in front, the original tool behind.
pub struct Transformed {
    inner: Arc<dyn Tool>,
    definition: ToolDefinition,
    /// Derived name → original name.
    renames: Vec<(String, String)>,
    /// Original name → the value it gets.
    hidden: Vec<(String, Hidden)>,
}

impl Transformed {
    /// The tool it forwards to.
    #[must_use]
    pub fn original(&self) -> &Arc<dyn Tool> {
        &self.inner
    }

    /// The arguments the original tool gets for the derived tool's `arguments`.
    fn forward(&self, arguments: Value, ctx: &ToolContext) -> Value {
        let Value::Object(mut given) = arguments else {
            return arguments;
        };
        let mut out = Map::with_capacity(given.len() + self.hidden.len());
        for (key, value) in std::mem::take(&mut given) {
            let key = self
                .renames
                .iter()
                .find(|(now, _)| *now == key)
                .map_or(key, |(_, was)| was.clone());
            out.insert(key, value);
        }
        for (name, value) in &self.hidden {
            let value = match value {
                Hidden::Fixed(value) => Some(value.clone()),
                Hidden::FromContext(read) => read(ctx),
            };
            if let Some(value) = value {
                out.insert(name.clone(), value);
            }
        }
        Value::Object(out)
    }
}

impl Tool for Transformed {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call<'a>(
        &'a self,
        arguments: Arguments<'a>,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let arguments = match self.definition.validate_in(arguments, ctx) {
                Ok(arguments) => arguments,
                Err(err) => return ToolOutcome::Error(err),
            };
            let forwarded = self.forward(arguments, ctx);
            self.inner.call(Arguments::from(forwarded), ctx).await
        })
    }
}

impl fmt::Debug for Transformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transformed")
            .field("name", &self.definition.name())
            .field("original", &self.inner.definition().name())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::context::ReadMark;

    /// Gives back the arguments it got.
    struct Echo(ToolDefinition);

    impl Tool for Echo {
        fn definition(&self) -> &ToolDefinition {
            &self.0
        }

        fn call<'a>(
            &'a self,
            arguments: Arguments<'a>,
            _ctx: &'a ToolContext,
        ) -> BoxFuture<'a, ToolOutcome> {
            Box::pin(async move {
                let got = match arguments {
                    Arguments::Value(value) => value.into_owned(),
                    Arguments::Text(text) => Value::String(text.into_owned()),
                };
                ToolOutcome::success(&got).unwrap_or_else(ToolOutcome::Error)
            })
        }
    }

    fn echo() -> Echo {
        Echo(ToolDefinition::new(
            "echo",
            "Gives back its arguments. Read-only. Not for real work.",
            json!({"type": "object", "properties": {"text": {"type": "string"}},
                "required": ["text"], "additionalProperties": false}),
        ))
    }

    #[tokio::test]
    async fn arguments_the_toolbox_read_against_the_derived_definition_are_not_read_again() {
        let derived = Transform::new(echo())
            .with_arg_renamed("text", "words")
            .build()
            .unwrap();
        // Not what the derived schema takes: read by the tool itself, it is refused.
        let unread = json!({"words": 7});
        let out = derived
            .call(Arguments::from(&unread), &ToolContext::new())
            .await;
        assert_eq!(out.error().unwrap().code().as_str(), "invalid_arguments");
        // Marked as read against the derived definition, it is forwarded as it is: the mark
        // says the toolbox's reading of these exact arguments holds.
        let (ctx, _) =
            ToolContext::new().for_attempt(Some(ReadMark::of(derived.definition())), false);
        let out = derived.call(Arguments::from(&unread), &ctx).await;
        assert_eq!(out.to_json(), r#"{"status":"success","data":{"text":7}}"#);
        // A mark for another definition (the original's) is not this one's.
        let (ctx, _) = ToolContext::new()
            .for_attempt(Some(ReadMark::of(derived.original().definition())), false);
        let out = derived.call(Arguments::from(&unread), &ctx).await;
        assert_eq!(out.error().unwrap().code().as_str(), "invalid_arguments");
        // Text is read whatever the mark says.
        let (ctx, _) =
            ToolContext::new().for_attempt(Some(ReadMark::of(derived.definition())), false);
        let out = derived.call(Arguments::from(r#"{"words": 7}"#), &ctx).await;
        assert!(out.error().is_some());
    }
}
