//! Runs the stages: parse → check → expand, or the fallback when anything is wrong.

use proc_macro2::TokenStream;

use crate::errors::Errors;
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
    let tool = ToolFn::parse(&errors, args, item_fn);
    check::tool(&errors, &tool);
    match errors.finish() {
        Ok(()) => expand::tool(&tool),
        Err(err) => fallback::expand(&tool, &err),
    }
}
