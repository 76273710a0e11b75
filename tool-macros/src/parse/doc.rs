//! Doc comments, kept as expressions so `#[doc = include_str!("...")]` works.

use syn::{Attribute, Expr, Meta};

/// The values of the `#[doc = ...]` attributes, in order.
pub(crate) fn collect(attrs: &[Attribute]) -> Vec<Expr> {
    attrs
        .iter()
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(nv) if nv.path.is_ident("doc") => Some(nv.value.clone()),
            _ => None,
        })
        .collect()
}

/// The span of the first `#[doc]` attribute.
pub(crate) fn first_span(attrs: &[Attribute]) -> Option<proc_macro2::Span> {
    use syn::spanned::Spanned;
    attrs
        .iter()
        .find(|attr| attr.path().is_ident("doc"))
        .map(Spanned::span)
}
