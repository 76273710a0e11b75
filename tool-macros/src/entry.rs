//! Runs the stages: parse → check → expand, or the fallback when anything is wrong.

use proc_macro2::TokenStream;

use crate::errors::Errors;
use crate::lints::{self, config::Config};
use crate::model::ToolFn;
use crate::parse::ItemFn;
use crate::{check, expand, fallback};

pub(crate) fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    let item_fn = match syn::parse2::<ItemFn>(item.clone()) {
        Ok(item_fn) => item_fn,
        // Not a function we can read: hand it back as written, with the error.
        Err(err) => return fallback::unparsed(item, &err),
    };
    let errors = Errors::new();
    let config = Config::load();
    let mut tool = ToolFn::parse(&errors, args, item_fn);
    check::tool(&errors, &tool);
    let lint_tokens = lints::run(&errors, &config, &tool);
    tool.lint_levels = lints::tool_levels(&config, &tool);
    let expanded = match errors.finish() {
        Ok(()) => expand::tool(&tool),
        Err(err) => fallback::expand(&tool, &err),
    };
    // A method lives in an `impl` block, where `const _` items (the warnings) cannot go; it is an
    // error anyway.
    let is_method = tool
        .sig
        .inputs
        .iter()
        .any(|arg| matches!(arg, syn::FnArg::Receiver(_)));
    if is_method {
        return expanded;
    }
    quote::quote! { #expanded #lint_tokens }
}
