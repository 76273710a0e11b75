//! The lints that can be decided from a tool's tokens. What tokens cannot tell (the shape of a
//! parameter's own type, text from `include_str!`) is left to `Toolbox::lint` at run time.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, GenericArgument, Lit, PathArguments, Type};

use crate::model::{Param, ToolFn};
use toolsmith_lint_rules::{self as rules, *};

/// One lint finding.
pub(crate) struct Finding {
    pub(crate) lint: &'static str,
    pub(crate) span: Span,
    pub(crate) message: String,
    /// The parameter it concerns, for parameter-level `allow`.
    pub(crate) param: Option<usize>,
}

pub(crate) fn all(tool: &ToolFn) -> Vec<Finding> {
    let mut out = Vec::new();
    tool_lints(tool, &mut out);
    for (index, param) in tool.params.iter().enumerate() {
        param_lints(index, param, &mut out);
    }
    unbounded_list(tool, &mut out);
    out
}

fn finding(
    out: &mut Vec<Finding>,
    lint: &'static str,
    span: Span,
    message: String,
    param: Option<usize>,
) {
    out.push(Finding {
        lint,
        span,
        message,
        param,
    });
}

/// The doc text, if every doc attribute is a string literal (one leading space stripped per
/// line, as the runtime does); `None` for `include_str!` and other macros.
fn doc_text(docs: &[Expr]) -> Option<String> {
    let mut lines = Vec::new();
    for doc in docs {
        match doc {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => lines.push(s.value()),
            _ => return None,
        }
    }
    let joined = lines.join("\n");
    Some(
        joined
            .lines()
            .map(|l| l.strip_prefix(' ').unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n")
            .trim()
            .to_owned(),
    )
}

fn tool_lints(tool: &ToolFn, out: &mut Vec<Finding>) {
    let ident = &tool.sig.ident;
    let name = tool.tool_name();
    let undocumented = tool.docs.is_empty() && tool.args.description.is_none();
    if undocumented {
        finding(
            out,
            MISSING_DOCS,
            ident.span(),
            format!(
                "missing doc comment on tool `{ident}`; the model reads it to decide when to call the tool: write `/// What it does. When to use it.` above the function, or `#[tool(description = \"...\")]`"
            ),
            None,
        );
    }
    let name_span = tool.args.name.as_ref().map_or(ident.span(), Spanned::span);
    // A name no provider accepts is already a compile error.
    if crate::check::name_problem(&name).is_none()
        && let Some(message) = check_tool_name(&name)
    {
        finding(out, TOOL_NAME, name_span, message, None);
    }
    let (text, text_span) = match &tool.args.description {
        Some(lit) => (Some(lit.value()), lit.span()),
        None => (doc_text(&tool.docs), tool.doc_span.unwrap_or(ident.span())),
    };
    if let Some(text) = text.filter(|_| !undocumented) {
        let what = format!("the description of `{name}`");
        if let Some(message) = check_description_length(&name, &text) {
            finding(out, DESCRIPTION_LENGTH, text_span, message, None);
        }
        let effect = tool.args.effect.as_ref().map(syn::LitStr::value);
        if let Some(message) = check_description_scope(&name, &text, effect.as_deref()) {
            finding(out, DESCRIPTION_SCOPE, text_span, message, None);
        }
        if let Some(message) = check_injection(&what, &text) {
            finding(out, DESCRIPTION_INJECTION, text_span, message, None);
        }
        if let Some(message) = check_secret(&what, &text) {
            finding(out, SECRET_IN_DESCRIPTION, text_span, message, None);
        }
    }
    let effect = tool.args.effect.as_ref().map(syn::LitStr::value);
    if effect.is_none() {
        finding(
            out,
            MISSING_EFFECT,
            ident.span(),
            format!(
                "tool `{name}` declares no effect; approval and retry policies need to know whether it reads or writes: add `#[tool(effect = \"read\")]`, `\"write\"` or `\"destructive\"`"
            ),
            None,
        );
    }
    // A tool declared destructive waits for approval at run time: the gate is there already.
    // The rule catches a destructive or bulk name whose calls would run ungated.
    let gated = effect.as_deref() == Some("destructive") || tool.args.requires_approval.is_some();
    let has_environment = tool
        .params
        .iter()
        .any(|p| matches!(p.json_name().as_str(), "environment" | "env") && !is_string(&p.ty));
    if rules::is_destructive_name(&name) && !gated && !has_environment {
        let span = tool.args.effect.as_ref().map_or(name_span, Spanned::span);
        finding(
            out,
            DESTRUCTIVE_WITHOUT_ENVIRONMENT,
            span,
            format!(
                "`{name}` is named like a destructive or bulk action, yet calls run without a person's approval: declare `#[tool(effect = \"destructive\")]` (its calls then wait for approval), `#[tool(requires_approval)]`, or an `environment` parameter whose enum lists `staging` and `production`"
            ),
            None,
        );
    }
}

/// A tool that returns a list (`Vec<T>`, a set, or either in `Result`) and has no numeric
/// parameter bounded by `range(max = ..)` named like a limit.
fn unbounded_list(tool: &ToolFn, out: &mut Vec<Finding>) {
    let ty = match crate::model::result_parts(&tool.sig.output) {
        Some((ok, _)) => ok,
        None => match &tool.sig.output {
            syn::ReturnType::Type(_, ty) => &**ty,
            syn::ReturnType::Default => return,
        },
    };
    let list = last_segment(ty).is_some_and(|s| {
        matches!(
            s.ident.to_string().as_str(),
            "Vec" | "VecDeque" | "HashSet" | "BTreeSet" | "IndexSet"
        )
    });
    let limited = tool.params.iter().any(|p| {
        rules::is_limit_param(&p.json_name())
            && p.args
                .range
                .as_ref()
                .is_some_and(|r| r.max.is_some() || r.exclusive_max.is_some())
    });
    if list && !limited {
        finding(
            out,
            UNBOUNDED_LIST,
            ty.span(),
            rules::unbounded_list_message(&tool.tool_name()),
            None,
        );
    }
}

fn param_lints(index: usize, param: &Param, out: &mut Vec<Finding>) {
    let name = param.json_name();
    let ident_span = param.ident.span();
    let ty_span = param.ty.span();
    let args = &param.args;
    if param.docs.is_empty() && args.description.is_none() {
        finding(
            out,
            MISSING_DOCS,
            ident_span,
            format!(
                "missing doc comment on parameter `{}`; the model reads it to fill in the value: write `/// ...` above the parameter, list it under `# Arguments` in the function's doc, or use `#[arg(description = \"...\")]`",
                param.ident
            ),
            Some(index),
        );
    }
    let (text, text_span) = match &args.description {
        Some(lit) => (Some(lit.value()), lit.span()),
        None => (doc_text(&param.docs), param.doc_span.unwrap_or(ident_span)),
    };
    let string = is_string(&param.ty);
    let shaped = args.pattern.is_some() || args.email.is_some() || args.url.is_some();
    if let Some(text) = &text {
        let what = format!("the doc of parameter `{name}`");
        if let Some(message) = check_injection(&what, text) {
            finding(out, DESCRIPTION_INJECTION, text_span, message, Some(index));
        }
        if let Some(message) = check_secret(&what, text) {
            finding(out, SECRET_IN_DESCRIPTION, text_span, message, Some(index));
        }
        if string
            && !shaped
            && let Some(found) = stringly_enum(text)
        {
            finding(
                out,
                STRINGLY_ENUM,
                text_span,
                stringly_enum_message(&name, &found),
                Some(index),
            );
        }
    }
    // A `range` meant as the bound: its own error says it does not apply to a string.
    let bounded = args.length.as_ref().is_some_and(|l| l.max.is_some()) || args.range.is_some();
    if string && !bounded && !shaped {
        finding(
            out,
            UNBOUNDED_STRING,
            ty_span,
            format!(
                "`{name}` is a string with no maximum length, pattern or format; a model can send anything, of any size: add `#[arg(length(max = 200))]`, a `pattern`, or use an enum"
            ),
            Some(index),
        );
    }
    if is_map(&param.ty) {
        finding(
            out,
            OPEN_MAP,
            ty_span,
            format!(
                "`{name}` is an open map or free JSON: models guess its keys, and strict provider modes cannot express it; use a struct with named fields, or a list of key/value structs"
            ),
            Some(index),
        );
    }
    if let Some(shape) = inexpressible(&param.ty) {
        finding(
            out,
            PROVIDER_INCOMPATIBLE,
            ty_span,
            format!("`{name}` {shape}"),
            Some(index),
        );
    }
    if rules::is_dangerous(&name) && (string || is_strings(&param.ty)) && args.pattern.is_none() {
        finding(
            out,
            DANGEROUS_PARAMETER,
            ident_span,
            dangerous_message(&name),
            Some(index),
        );
    }
    if rules::is_permission(&name) {
        finding(
            out,
            SELF_DECLARED_PERMISSION,
            ident_span,
            permission_message(&name),
            Some(index),
        );
    }
    if rules::is_destination(&name) && (string || is_strings(&param.ty)) && !shaped {
        finding(
            out,
            UNRESTRICTED_DESTINATION,
            ident_span,
            destination_message(&name),
            Some(index),
        );
    }
}

/// The type's last path segment, through `Option<..>`.
fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    let Type::Path(path) = ty else { return None };
    let segment = path.path.segments.last()?;
    if segment.ident == "Option"
        && let PathArguments::AngleBracketed(args) = &segment.arguments
        && let Some(GenericArgument::Type(inner)) = args.args.first()
    {
        return last_segment(inner);
    }
    Some(segment)
}

/// `String`, `Box<str>`, `Cow<str>`, or an `Option` of one: a free-form string.
fn is_string(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|s| {
        s.ident == "String"
            || ((s.ident == "Box" || s.ident == "Cow" || s.ident == "Arc" || s.ident == "Rc")
                && quote::ToTokens::to_token_stream(&s.arguments)
                    .to_string()
                    .contains("str"))
    })
}

/// A list of free-form strings (`Vec<String>`).
fn is_strings(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|s| {
        matches!(
            s.ident.to_string().as_str(),
            "Vec" | "VecDeque" | "HashSet" | "BTreeSet"
        ) && match &s.arguments {
            PathArguments::AngleBracketed(args) => {
                matches!(args.args.first(), Some(GenericArgument::Type(inner)) if is_string(inner))
            }
            _ => false,
        }
    })
}

/// A map, or free JSON (`serde_json::Value`, `serde_json::Map`).
fn is_map(ty: &Type) -> bool {
    let Some(segment) = last_segment(ty) else {
        return false;
    };
    let name = segment.ident.to_string();
    if matches!(name.as_str(), "HashMap" | "BTreeMap" | "IndexMap") {
        return true;
    }
    let Type::Path(path) = ty else { return false };
    let json = path
        .path
        .segments
        .iter()
        .any(|s| s.ident == "serde_json" || s.ident == "json");
    matches!(name.as_str(), "Value" | "Map")
        && (json || path.path.segments.len() == 1 && name == "Value")
}

/// A shape of the parameter's type that some providers cannot express, said with the fix:
/// a tuple (JSON Schema's `prefixItems`), or a map whose keys are not strings.
fn inexpressible(ty: &Type) -> Option<String> {
    match ty {
        Type::Tuple(tuple) if !tuple.elems.is_empty() => Some(
            "is a tuple, which JSON Schema writes with `prefixItems`: OpenAI strict, Anthropic strict and Gemini cannot express it, and their export fails; use a struct with named fields".to_owned(),
        ),
        Type::Paren(inner) => inexpressible(&inner.elem),
        Type::Group(inner) => inexpressible(&inner.elem),
        Type::Array(array) => inexpressible(&array.elem),
        Type::Slice(slice) => inexpressible(&slice.elem),
        Type::Reference(reference) => inexpressible(&reference.elem),
        Type::Path(path) => {
            let segment = path.path.segments.last()?;
            let PathArguments::AngleBracketed(args) = &segment.arguments else {
                return None;
            };
            let mut types = args.args.iter().filter_map(|arg| match arg {
                GenericArgument::Type(ty) => Some(ty),
                _ => None,
            });
            if matches!(
                segment.ident.to_string().as_str(),
                "HashMap" | "BTreeMap" | "IndexMap"
            ) && let Some(key) = types.next()
                && !is_string(key)
                && !matches!(key, Type::Reference(r) if matches!(&*r.elem, Type::Path(p) if p.path.is_ident("str")))
            {
                let key = quote::ToTokens::to_token_stream(key).to_string().replace(' ', "");
                return Some(format!(
                    "is a map with `{key}` keys: JSON object keys are strings, and no provider can say what they must be; key it by `String`, or take a list of key/value structs"
                ));
            }
            args.args.iter().find_map(|arg| match arg {
                GenericArgument::Type(ty) => inexpressible(ty),
                _ => None,
            })
        }
        _ => None,
    }
}
