//! Collects every error of one expansion, so that a compile reports all of them at once.

use std::cell::RefCell;
use std::fmt::Display;

use quote::ToTokens;

/// Errors gathered while parsing and checking; must be consumed with [`Errors::finish`].
#[derive(Default)]
pub(crate) struct Errors(RefCell<Option<Vec<syn::Error>>>);

impl Errors {
    pub(crate) fn new() -> Self {
        Self(RefCell::new(Some(Vec::new())))
    }

    /// An error spanned on `tokens`.
    pub(crate) fn at(&self, tokens: impl ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// An error spanned on one span.
    pub(crate) fn at_span(&self, span: proc_macro2::Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    pub(crate) fn push(&self, err: syn::Error) {
        if let Some(list) = self.0.borrow_mut().as_mut() {
            list.push(err);
        }
    }

    /// All errors combined, in source order (then in the order they were reported).
    pub(crate) fn finish(self) -> Result<(), syn::Error> {
        let mut list = self.0.borrow_mut().take().unwrap_or_default();
        list.sort_by_key(|err| {
            let start = err.span().start();
            (start.line, start.column)
        });
        let mut iter = list.into_iter();
        match iter.next() {
            None => Ok(()),
            Some(mut first) => {
                first.extend(iter);
                Err(first)
            }
        }
    }
}

impl Drop for Errors {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.0.borrow().is_some() {
            panic!("Errors dropped without calling `finish`");
        }
    }
}
