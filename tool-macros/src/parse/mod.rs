//! syn → model. Every parser reports into `Errors` and goes on with a best-effort value.

pub(crate) mod args;
mod doc;
mod param;

use proc_macro2::{TokenStream, TokenTree};
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Signature, Visibility};

use crate::errors::Errors;
use crate::model::ToolFn;

/// The function as written: attributes, visibility and signature parsed, the body kept as
/// tokens (it is never looked at, so newer syntax and body errors stay rustc's business).
pub(crate) struct ItemFn {
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) sig: Signature,
    pub(crate) body: TokenStream,
}

impl Parse for ItemFn {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let sig = input.parse()?;
        let body: TokenTree = input.parse()?;
        Ok(Self {
            attrs,
            vis,
            sig,
            body: body.into(),
        })
    }
}

impl ToolFn {
    /// Builds the model from the `#[tool(...)]` arguments and the function.
    pub(crate) fn parse(errors: &Errors, args: TokenStream, item: ItemFn) -> ToolFn {
        let tool_args = args::parse(errors, args);
        let docs = doc::collect(&item.attrs);
        let doc_span = doc::first_span(&item.attrs);
        crate::check::signature(errors, &item.sig);
        let mut sig = item.sig;
        let (takes_context, params) = param::parse_all(errors, &mut sig);
        ToolFn {
            attrs: item.attrs,
            vis: item.vis,
            sig,
            body: item.body,
            args: tool_args,
            docs,
            doc_span,
            takes_context,
            params,
            lint_levels: Vec::new(),
        }
    }
}
