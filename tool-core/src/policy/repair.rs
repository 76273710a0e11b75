//! Repair that cannot invent: arguments a whole call would refuse are read strictly first;
//! only then are lossless fixes tried (a trailing comma, an object sent as a JSON string),
//! then the application's hook, and the result is read again. Arguments that were cut off are
//! never repaired. Every repair is in the call's audit record and shown to the approver.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::arguments::Arguments;
use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::error::{ErrorCode, ToolError};
use crate::tool::Tool;

use super::step::{Call, Flow, Next, Step};

/// What a repair hook gets: a call whose arguments were refused, after the lossless fixes.
#[derive(Debug)]
#[non_exhaustive]
pub struct RepairRequest<'a> {
    /// The tool's registered name.
    pub tool: &'a str,
    /// The arguments' text as the model sent it.
    pub text: &'a str,
    /// Why they were refused, as the model would be told.
    pub error: &'a ToolError,
    /// The tool's definition (its schema).
    pub definition: &'a ToolDefinition,
    /// The call's context.
    pub ctx: &'a ToolContext,
}

/// Proposes arguments for a call the lossless fixes could not repair ([`Repair::with_hook`]):
/// the arguments, read again against the schema, or `None`. A closure
/// `Fn(&RepairRequest<'_>) -> Option<Value>` is one.
pub trait RepairHook: Send + Sync + 'static {
    /// The arguments proposed for `request`, or `None`.
    fn repair(&self, request: &RepairRequest<'_>) -> Option<Value>;
}

impl<F> RepairHook for F
where
    F: Fn(&RepairRequest<'_>) -> Option<Value> + Send + Sync + 'static,
{
    fn repair(&self, request: &RepairRequest<'_>) -> Option<Value> {
        self(request)
    }
}

type Hook = dyn RepairHook;

/// Repairs arguments a whole call would refuse, without inventing any (see
/// [`Defaults::repair`](super::Defaults::repair); off by default).
///
/// In order: the arguments are read strictly (valid ones are never touched); arguments cut
/// off before they ended are refused as they are; then lossless fixes (a trailing comma
/// before `}` or `]`; a parameter whose schema takes an object or a list, sent as a string
/// holding one); then the hook, if any, for what is left; then the result is read again
/// against the schema. A repair that does not make the arguments valid changes nothing: the
/// model gets the first refusal.
///
/// ```
/// use toolsmith::policy::{Defaults, Repair};
/// use toolsmith::serde_json::json;
/// use toolsmith::{tool, ToolContext, Toolbox};
///
/// /// Tags a ticket. Writes the ticket's tags. Not for removing tags.
/// #[tool(effect = "write")]
/// fn tag(
///     /// The ticket.
///     #[arg(range(min = 1))]
///     id: u64,
///     /// The tags.
///     #[arg(length(max = 5))]
///     tags: Vec<String>,
/// ) -> usize {
///     tags.len()
/// }
///
/// let toolbox = Toolbox::new().with(Tag).with_defaults(Defaults {
///     repair: Some(Repair::lossless()),
///     ..Defaults::default()
/// });
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// // A list sent as a string, and a trailing comma: both read as meant.
/// let out = toolbox.call("tag", r#"{"id": 7, "tags": "[\"vpn\", \"urgent\"]",}"#, &ToolContext::new()).await;
/// assert_eq!(out.into_result::<usize>().unwrap(), 2);
/// // Cut off: never repaired.
/// let out = toolbox.call("tag", r#"{"id": 7, "tags": ["vpn""#, &ToolContext::new()).await;
/// assert_eq!(out.error().unwrap().code().as_str(), "invalid_arguments");
/// # });
/// ```
#[derive(Clone)]
pub struct Repair {
    hook: Option<Arc<Hook>>,
}

impl Repair {
    /// The lossless fixes only.
    #[must_use]
    pub fn lossless() -> Self {
        Self { hook: None }
    }

    /// The lossless fixes, then `hook` for what they leave: it returns the arguments it
    /// proposes (read again against the schema), or `None`. It runs only on arguments that
    /// ended; it must not invent what the model did not say.
    #[must_use]
    pub fn with_hook(mut self, hook: impl RepairHook) -> Self {
        self.hook = Some(Arc::new(hook));
        self
    }
}

impl fmt::Debug for Repair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Repair")
            .field("hook", &self.hook.is_some())
            .finish()
    }
}

/// The step: arguments read once, and repaired when a whole call would refuse them.
pub(crate) struct Repairing {
    pub(crate) repair: Repair,
    pub(crate) tool: Arc<dyn Tool>,
    /// Input guards come next: they read the repaired arguments and leave the one reading,
    /// so the repair hands them the arguments instead of reading them for good.
    pub(crate) then_guards: bool,
}

impl Step for Repairing {
    fn run<'a>(&'a self, mut call: Call<'a>, next: Next<'a>) -> Flow<'a> {
        if call.read.get().is_none() {
            let def = self.tool.definition();
            let checked = match def.read_arguments(&call.arguments, call.ctx) {
                Ok(checked) => checked,
                Err(err) => match self.repaired(def, &call, &err) {
                    Some(checked) => checked,
                    None => return Flow::refused(err),
                },
            };
            if self.then_guards {
                call.repairs = checked.repairs;
                call.arguments = Arguments::Value(std::borrow::Cow::Owned(checked.value));
                return next.run(call);
            }
            let _ = call.read.set(Box::new(checked));
        }
        if let Err(err) = call.read_once(self.tool.definition()) {
            return Flow::refused(err);
        }
        next.run(call)
    }
}

impl Repairing {
    fn repaired(
        &self,
        def: &ToolDefinition,
        call: &Call<'_>,
        err: &ToolError,
    ) -> Option<crate::validate::canonical::Checked> {
        if err.code() != ErrorCode::InvalidArguments {
            return None;
        }
        let text = text_of(&call.arguments)?;
        let limits = crate::validate::limits_for(def.validation(), Some(call.ctx));
        // Cut off, or too long: what the model meant is not known (or not allowed), and
        // nothing is made up for it. The hook too sees only text that ended.
        if limits.too_long(text.len()) || !ended(&text) {
            return None;
        }
        let mut notes = Vec::new();
        let mut fixed = std::borrow::Cow::Borrowed(text.as_str());
        if let Some(without) = without_trailing_commas(&text) {
            notes.push("a trailing comma was removed".to_owned());
            fixed = std::borrow::Cow::Owned(without);
        }
        // The fixed text is read strictly: a repeated key, a limit or anything else the fix
        // did not touch is refused as it was.
        let mut value = crate::validate::reader::read(&fixed, limits)
            .ok()
            .map(|read| read.value);
        if let Some(Value::Object(map)) = &mut value {
            unstring_containers(def, map, limits, &mut notes);
        }
        if let Some(value) = &value
            && !notes.is_empty()
            // Read as text again, as a whole call is: every limit and every schema rule.
            && let Ok(mut checked) = def.read_arguments(
                &Arguments::Text(std::borrow::Cow::Owned(value.to_string())),
                call.ctx,
            )
        {
            checked.repairs = notes;
            return Some(checked);
        }
        let hook = self.repair.hook.as_ref()?;
        let proposed = hook.repair(&RepairRequest {
            tool: call.name,
            text: &text,
            error: err,
            definition: def,
            ctx: call.ctx,
        })?;
        let mut checked = def
            .read_arguments(
                &Arguments::Value(std::borrow::Cow::Borrowed(&proposed)),
                call.ctx,
            )
            .ok()?;
        notes.push("the application's repair hook rewrote the arguments".to_owned());
        checked.repairs = notes;
        Some(checked)
    }
}

/// The arguments as text (a parsed value written back; a JSON string holding the text read).
fn text_of(arguments: &Arguments<'_>) -> Option<String> {
    match arguments {
        Arguments::Text(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::String(inner)) => Some(inner),
            _ => Some(text.to_string()),
        },
        Arguments::Value(value) => match &**value {
            Value::String(inner) => Some(inner.clone()),
            other => Some(other.to_string()),
        },
    }
}

/// Whether `text` ended: its first value's brackets all close outside strings. Broken text
/// that ended is not cut off; text still inside a string or an open bracket is, whatever
/// fault came before (a hook must never be handed what the model had not finished).
fn ended(text: &str) -> bool {
    if text.trim().is_empty() {
        return true;
    }
    let mut scan = crate::json::scan::Scan::default();
    scan.feed(text);
    scan.closed
}

/// `text` without the commas that stand right after a value and right before a `}` or `]`
/// (outside strings), or `None` when it has none. A comma after `[`, `{`, `:` or another comma
/// is not trailing (`[,]` is not `[]`): removing it would leave a value the model did not
/// write.
fn without_trailing_commas(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut removed = false;
    for (i, c) in text.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            out.push(c);
            continue;
        }
        if c == '"' {
            in_string = true;
        } else if c == ',' {
            let next = bytes[i + 1..].iter().find(|b| !b.is_ascii_whitespace());
            let before = out.trim_end().chars().next_back();
            if matches!(next, Some(b'}' | b']'))
                && !matches!(before, None | Some('[' | '{' | ':' | ','))
            {
                removed = true;
                continue;
            }
        }
        out.push(c);
    }
    removed.then_some(out)
}

/// Parameters whose schema takes an object or a list, sent as a string holding one: read as
/// what the string holds.
fn unstring_containers(
    def: &ToolDefinition,
    map: &mut serde_json::Map<String, Value>,
    limits: &crate::limits::InputLimits,
    notes: &mut Vec<String>,
) {
    use crate::validate::outline::{ARRAY, OBJECT, STRING, takes};
    // The kinds each parameter takes, read once per tool (the outline a stream follows).
    let outline = def.validation().outline();
    let arguments = outline.node(0);
    for (name, value) in map.iter_mut() {
        let Value::String(text) = value else { continue };
        let Some(at) = arguments.find(name) else {
            continue;
        };
        let kinds = arguments
            .value_at(Some(at))
            .and_then(|node| outline.node(node).kinds);
        let takes = |kind: u8| kinds.is_none_or(|k| takes(k, kind));
        // Read strictly, as the arguments are: a repeated key or a limit inside the string
        // leaves it a string (and the call refused).
        let parsed: Option<Value> = crate::validate::reader::read(text.trim(), limits)
            .ok()
            .map(|read| read.value);
        let fits = match &parsed {
            Some(Value::Object(_)) => takes(OBJECT) && !takes(STRING),
            Some(Value::Array(_)) => takes(ARRAY) && !takes(STRING),
            _ => false,
        };
        if fits && let Some(parsed) = parsed {
            notes.push(format!(
                "`{name}` was sent as a string holding JSON; it was read as the JSON it holds"
            ));
            *value = parsed;
        }
    }
}
