//! The macro's own view of a tool function, produced by `parse` and consumed by `expand`.

use proc_macro2::{Span, TokenStream};

use syn::{Attribute, Expr, Ident, LitFloat, LitInt, LitStr, Signature, Type, Visibility};
use toolsmith_lint_rules::Level;

/// A `#[tool]` function.
pub(crate) struct ToolFn {
    /// Attributes of the function other than `#[tool]` (doc comments included).
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    /// The signature with parameter docs and `#[arg]` removed.
    pub(crate) sig: Signature,
    /// The body, untouched.
    pub(crate) body: TokenStream,
    pub(crate) args: ToolArgs,
    /// `#[doc = ...]` values of the function, in order.
    pub(crate) docs: Vec<Expr>,
    /// The span of the first doc attribute.
    pub(crate) doc_span: Option<Span>,
    /// Whether the first parameter is the context.
    pub(crate) takes_context: bool,
    /// The model-visible parameters, in order.
    pub(crate) params: Vec<Param>,
    /// The level of every lint for this tool (crate config and `#[tool]` settings).
    pub(crate) lint_levels: Vec<(&'static str, Level)>,
}

/// `#[tool(...)]` keys.
#[derive(Default)]
pub(crate) struct ToolArgs {
    pub(crate) name: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) title: Option<LitStr>,
    pub(crate) read_only: Option<bool>,
    pub(crate) destructive: Option<bool>,
    pub(crate) idempotent: Option<bool>,
    pub(crate) open_world: Option<bool>,
    /// `effect = "read" | "write" | "destructive"`.
    pub(crate) effect: Option<LitStr>,
    /// `requires_approval`.
    pub(crate) requires_approval: Option<Span>,
    /// `long_running`.
    pub(crate) long_running: Option<Span>,
    /// `allow(...)`, `warn(...)`, `deny(...)`.
    pub(crate) levels: Vec<LevelSetting>,
    /// `timeout = "5s"`, in milliseconds.
    pub(crate) timeout_ms: Option<u64>,
    /// `attempts = 3`.
    pub(crate) attempts: Option<u32>,
    /// `concurrency = 2`.
    pub(crate) concurrency: Option<usize>,
    /// `sequential`.
    pub(crate) sequential: Option<Span>,
    /// `inline`: a synchronous tool that runs in place instead of on the blocking pool.
    pub(crate) inline: Option<Span>,
    /// `stream_args`: Anthropic sends the arguments unbuffered (`eager_input_streaming`).
    pub(crate) stream_args: Option<Span>,
    /// `show_partial`: a call that ends without a result shows the model its last partial.
    pub(crate) show_partial: Option<Span>,
    /// `fallback = "other_tool"`.
    pub(crate) fallback: Option<LitStr>,
    /// `scopes("a", "b")`.
    pub(crate) scopes: Option<Vec<LitStr>>,
    /// `data_classification = "internal"`.
    pub(crate) data_classification: Option<LitStr>,
    /// `version = "1.2.0"`.
    pub(crate) version: Option<LitStr>,
    /// `limits(max_bytes = 4_194_304, ...)`: each limit given, by its name.
    pub(crate) limits: Option<Vec<(&'static str, u64)>>,
    /// `example = r#"{...}"#`, repeated: calls that fit, as JSON objects.
    pub(crate) examples: Vec<LitStr>,
    /// `invalid_example(arguments = r#"{...}"#, error = "/field")`, repeated: calls that must
    /// be refused, and where the error is.
    pub(crate) invalid_examples: Vec<(LitStr, LitStr)>,
}

/// One lint named in `allow(...)`, `warn(...)` or `deny(...)`.
pub(crate) struct LevelSetting {
    pub(crate) lint: &'static str,
    pub(crate) level: Level,
}

/// A model-visible parameter.
pub(crate) struct Param {
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    pub(crate) docs: Vec<Expr>,
    /// The span of the first doc attribute, where doc-text findings point.
    pub(crate) doc_span: Option<Span>,
    pub(crate) args: ParamArgs,
}

/// `#[arg(...)]` keys of one parameter.
#[derive(Default)]
pub(crate) struct ParamArgs {
    pub(crate) length: Option<Length>,
    pub(crate) range: Option<Range>,
    pub(crate) pattern: Option<LitStr>,
    pub(crate) email: Option<Span>,
    pub(crate) url: Option<Span>,
    pub(crate) default: Option<Expr>,
    pub(crate) rename: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    /// `allow(...)`, `warn(...)`, `deny(...)` for this parameter's lints.
    pub(crate) levels: Vec<LevelSetting>,
    /// `sensitive`: redacted in audit records.
    pub(crate) sensitive: Option<Span>,
    /// Whether the attribute had a key that is not one (a misspelling): the parameter's lints
    /// are left out, so that the one error is not followed by findings it caused.
    pub(crate) unparsed: bool,
}

/// `length(min = .., max = ..)`.
pub(crate) struct Length {
    pub(crate) min: Option<LitInt>,
    pub(crate) max: Option<LitInt>,
}

/// `range(min = .., max = .., exclusive_min = .., exclusive_max = ..)`.
pub(crate) struct Range {
    pub(crate) key: Ident,
    pub(crate) min: Option<Number>,
    pub(crate) max: Option<Number>,
    pub(crate) exclusive_min: Option<Number>,
    pub(crate) exclusive_max: Option<Number>,
}

/// A numeric literal, possibly negated.
pub(crate) struct Number {
    pub(crate) negative: bool,
    pub(crate) lit: NumberLit,
}

pub(crate) enum NumberLit {
    Int(LitInt),
    Float(LitFloat),
}

impl ToolFn {
    /// The tool's name: `#[tool(name = "...")]` or the function's name without `r#`.
    pub(crate) fn tool_name(&self) -> String {
        match &self.args.name {
            Some(name) => name.value(),
            None => unraw(&self.sig.ident),
        }
    }

    /// The name of the generated unit struct: `search_web` → `SearchWeb`. This is the one
    /// place the name is made; users name it to register the tool.
    pub(crate) fn struct_ident(&self) -> Ident {
        struct_ident(&self.sig.ident)
    }
}

pub(crate) fn struct_ident(fn_ident: &Ident) -> Ident {
    let name: String = unraw(fn_ident)
        .split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default()
        })
        .collect();
    let name = if name.is_empty() {
        "Tool".to_owned()
    } else {
        name
    };
    Ident::new(&name, fn_ident.span())
}

impl Param {
    /// The parameter's JSON name: `rename = "..."` or the identifier without `r#`.
    pub(crate) fn json_name(&self) -> String {
        match &self.args.rename {
            Some(name) => name.value(),
            None => unraw(&self.ident),
        }
    }
}

pub(crate) fn unraw(ident: &Ident) -> String {
    let text = ident.to_string();
    text.strip_prefix("r#").map(str::to_owned).unwrap_or(text)
}

/// A return type written `Result<T, E>`, or `Result<T>` (an alias with its error fixed, such
/// as `anyhow::Result<T>` or `io::Result<T>`): the `T`, and the `E` when written.
pub(crate) fn result_parts(output: &syn::ReturnType) -> Option<(&syn::Type, Option<&syn::Type>)> {
    let syn::ReturnType::Type(_, ty) = output else {
        return None;
    };
    let syn::Type::Path(path) = &**ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let mut types = args.args.iter().filter_map(|arg| match arg {
        syn::GenericArgument::Type(ty) => Some(ty),
        _ => None,
    });
    let (ok, err) = (types.next()?, types.next());
    types.next().is_none().then_some((ok, err))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_names() {
        let name = |s: &str| struct_ident(&syn::parse_str::<Ident>(s).unwrap()).to_string();
        assert_eq!(name("search_web"), "SearchWeb");
        assert_eq!(name("add"), "Add");
        assert_eq!(name("r#type"), "Type");
        assert_eq!(name("get_v2_item"), "GetV2Item");
        assert_eq!(name("_private"), "Private");
    }
}
