//! The `#[tool]` attribute of [toolsmith](https://docs.rs/toolsmith). Depend on `toolsmith`, which
//! re-exports it; the generated code names only `::toolsmith::__private`.
//!
//! The pipeline: `entry` parses the function into the model (`model`, via `parse`), checks it
//! (`check`), and expands it (`expand`); when anything is wrong it emits the function unchanged
//! but for the helper attributes, every error, and a stand-in impl (`fallback`), so that one
//! mistake does not cascade into errors elsewhere.

#[cfg(test)]
mod audit;
mod check;
mod entry;
mod errors;
mod expand;
mod fallback;
mod lints;
mod model;
mod parse;

use proc_macro::TokenStream;

/// Turns a function into a tool a model can call. See the `toolsmith` crate for the guide.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::tool(args.into(), item.into()).into()
}
