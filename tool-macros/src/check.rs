//! Rules that look at more than one token at a time. Each reports into `Errors`.

use std::collections::HashMap;

use quote::ToTokens;

use crate::errors::Errors;
use syn::{LitStr, Signature};

use crate::model::{Number, NumberLit, ToolFn};

/// Rules on the function itself, reported before the parameters' so errors come in source order.
pub(crate) fn signature(errors: &Errors, sig: &Signature) {
    if let Some(unsafety) = &sig.unsafety {
        errors.at(unsafety, "a tool cannot be an `unsafe fn`; make the function safe and keep the `unsafe` block inside it");
    }
    if let Some(abi) = &sig.abi {
        errors.at(abi, "a tool cannot have an `extern` ABI; remove it");
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.at(
            &sig.generics,
            "generic tools are not supported; the schema needs concrete types, so replace the type parameters with the types the model will send",
        );
    }
    if let Some(variadic) = &sig.variadic {
        errors.at(variadic, "a tool cannot be variadic");
    }
}

/// A name no provider could carry is refused here, so that registering a tool the macro
/// accepted never fails on its own name.
fn tool_name(errors: &Errors, tool: &ToolFn) {
    if let Some(problem) = name_problem(&tool.tool_name()) {
        let span = tool
            .args
            .name
            .as_ref()
            .map_or_else(|| tool.sig.ident.span(), LitStr::span);
        errors.at_span(span, problem);
    }
}

/// Why no provider could carry `name` as a tool name, or `None`.
pub(crate) fn name_problem(name: &str) -> Option<String> {
    use toolsmith_lint_rules::{MAX_TOOL_NAME, is_portable_name};
    if is_portable_name(name) {
        None
    } else if !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    {
        Some(format!(
            "the tool name `{name}` is too long: providers accept at most {MAX_TOOL_NAME} characters (a name that does not start with a letter or `_` gets one more on export); choose a shorter one with `#[tool(name = \"...\")]`"
        ))
    } else {
        Some(format!(
            "`{name}` cannot be a tool name: providers accept only `A-Z`, `a-z`, `0-9`, `_`, `-` and `.`; choose one with `#[tool(name = \"...\")]`"
        ))
    }
}

/// Rules across parameters and across keys of one parameter.
pub(crate) fn tool(errors: &Errors, tool: &ToolFn) {
    if let (Some(inline), Some(_)) = (tool.args.inline, &tool.sig.asyncness) {
        errors.at_span(
            inline,
            "`inline` is for synchronous tools; an `async fn` tool already runs in place, so remove `inline`",
        );
    }
    error_type(errors, &tool.sig.output);
    tool_name(errors, tool);
    let mut names: HashMap<String, &syn::Ident> = HashMap::new();
    for param in &tool.params {
        if let (Some(email), Some(_)) = (param.args.email, param.args.url) {
            errors.at_span(email, "`email` and `url` cannot both apply; keep one");
        }
        if let Some(length) = &param.args.length
            && let (Some(min), Some(max)) = (&length.min, &length.max)
            && let (Ok(lo), Ok(hi)) = (min.base10_parse::<u64>(), max.base10_parse::<u64>())
            && lo > hi
        {
            errors.at(
                max,
                format!("`max` ({hi}) is less than `min` ({lo}); no value could pass"),
            );
        }
        if let Some(range) = &param.args.range
            && let (Some(min), Some(max)) = (&range.min, &range.max)
            && let (Some(lo), Some(hi)) = (value(min), value(max))
            && lo > hi
        {
            errors.at(
                &range.key,
                format!("`max` ({hi}) is less than `min` ({lo}); no value could pass"),
            );
        }
        if let Some(pattern) = &param.args.pattern
            && jsonschema_regex::to_rust_regex(&pattern.value()).is_err()
        {
            errors.at(
                pattern,
                "this `pattern` is not a regular expression JSON Schema validators accept (ECMA-262 syntax); check its brackets, groups and escapes",
            );
        }
        let name = param.json_name();
        if let Some(first) = names.insert(name.clone(), &param.ident) {
            let at = match &param.args.rename {
                Some(lit) => lit.to_token_stream(),
                None => param.ident.to_token_stream(),
            };
            errors.at(
                at,
                format!(
                    "two parameters are named `{name}` in the schema (`{first}` and `{}`); give one of them another `rename`",
                    param.ident
                ),
            );
        }
    }
}

fn value(number: &Number) -> Option<f64> {
    let v = match &number.lit {
        NumberLit::Int(int) => int.base10_parse::<f64>().ok()?,
        NumberLit::Float(float) => float.base10_parse::<f64>().ok()?,
    };
    Some(if number.negative { -v } else { v })
}

/// A `Result` whose error is a string: it cannot become a `ToolError`, and the model would get
/// no code to act on. Reported on the error type, with what to write instead.
fn error_type(errors: &Errors, output: &syn::ReturnType) {
    let syn::ReturnType::Type(_, ty) = output else {
        return;
    };
    let syn::Type::Path(path) = &**ty else { return };
    let Some(last) = path.path.segments.last() else {
        return;
    };
    if last.ident != "Result" {
        return;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return;
    };
    let Some(syn::GenericArgument::Type(error)) = args.args.iter().nth(1) else {
        return;
    };
    let stringly = match error {
        syn::Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == "String"),
        syn::Type::Reference(r) => matches!(&*r.elem, syn::Type::Path(p) if p.path.is_ident("str")),
        _ => false,
    };
    if stringly {
        errors.at(
            error,
            "a tool's error type must convert into `ToolError`, and a string does not: return `Result<T, ToolError>` and choose the error's code, e.g. `ToolError::not_found(\"No such ticket.\")` or `ToolError::invalid_arguments(..)`, so the model knows whether to retry, fix its call or ask the user",
        );
    }
}
