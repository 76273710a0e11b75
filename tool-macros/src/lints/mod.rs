//! Schema lints on the tokens of a tool: each finding has a lint name, a level and a span.
//!
//! Levels come from, most specific first: `#[arg(allow(..))]` on a parameter, `#[tool(allow(..))]`
//! on the tool, `[package.metadata.toolsmith.lints]` in the crate's Cargo.toml, the lint's default.
//! `deny` findings are compile errors; `warn` findings become real compiler warnings through a
//! deprecated item used at the offending token (the one stable way for a proc macro to warn).

mod checks;
pub(crate) mod config;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

use self::config::Config;
use crate::errors::Errors;
use crate::model::{LevelSetting, Param, ToolFn};
use toolsmith_lint_rules::{self as rules, Level};

fn setting(levels: &[LevelSetting], lint: &str) -> Option<Level> {
    levels.iter().find(|s| s.lint == lint).map(|s| s.level)
}

/// The level of `lint` for the tool (and parameter), most specific setting first.
pub(crate) fn level(
    config: &Config,
    tool: &ToolFn,
    param: Option<&Param>,
    lint: &'static str,
) -> Level {
    param
        .and_then(|p| setting(&p.args.levels, lint))
        .or_else(|| setting(&tool.args.levels, lint))
        .or_else(|| config.level(lint))
        .or_else(|| rules::find(lint).map(|l| l.default))
        .unwrap_or(Level::Warn)
}

/// The tool's level of every lint (crate config and `#[tool]` settings), for the runtime's
/// `Toolbox::lint`.
pub(crate) fn tool_levels(config: &Config, tool: &ToolFn) -> Vec<(&'static str, Level)> {
    // Only levels that differ from the defaults: the runtime falls back to those.
    rules::LINTS
        .iter()
        .map(|lint| {
            (
                lint.name,
                level(config, tool, None, lint.name),
                lint.default,
            )
        })
        .filter(|(_, level, default)| level != default)
        .map(|(name, level, _)| (name, level))
        .collect()
}

/// Runs every lint: `deny` findings go to `errors`; the returned tokens carry the warnings
/// (and make rustc track the manifest the levels came from).
pub(crate) fn run(errors: &Errors, config: &Config, tool: &ToolFn) -> TokenStream {
    for problem in &config.problems {
        errors.at_span(Span::call_site(), problem);
    }
    let mut warnings = Vec::new();
    for finding in checks::all(tool) {
        let param = finding.param.map(|i| &tool.params[i]);
        if param.is_some_and(|p| p.args.unparsed) {
            continue;
        }
        match level(config, tool, param, finding.lint) {
            Level::Allow => {}
            Level::Deny => errors.at_span(
                finding.span,
                format!("{}{}", finding.message, rules::note(finding.lint)),
            ),
            Level::Warn => warnings.push(warning(finding.lint, finding.span, &finding.message)),
        }
    }
    let track = config
        .manifest
        .as_ref()
        .and_then(|p| p.to_str())
        .map(|path| {
            quote! { const _: &[u8] = ::core::include_bytes!(#path); }
        });
    quote! { #(#warnings)* #track }
}

/// A compiler warning at `span`: the use of a deprecated constant named after the lint, in a
/// module named `toolsmith_lint`. It reads `use of deprecated constant
/// `_::toolsmith_lint::unbounded_string`: <message> (toolsmith lint `unbounded_string`: allow it
/// with ...)`, all on the first line, so that the location and rustc's own note follow it.
fn warning(lint: &str, span: Span, message: &str) -> TokenStream {
    let name = format_ident!("{}", lint);
    // Every token of the use carries the finding's span: rustc reports the deprecation there.
    let used_name = format_ident!("{}", lint, span = span);
    let used = quote_spanned!(span=> toolsmith_lint::#used_name);
    let message =
        format!("{message} (toolsmith lint `{lint}`: allow it with `#[tool(allow({lint}))]`)");
    // `warn(deprecated)` on the finding itself: a crate's `#![allow(deprecated)]`, meant for
    // rustc's own deprecations, does not mute toolsmith's lints (each has its own `allow`).
    quote! {
        #[warn(deprecated)]
        const _: () = {
            #[allow(dead_code, non_upper_case_globals)]
            mod toolsmith_lint {
                #[deprecated(note = #message)]
                pub const #name: () = ();
            }
            let _ = #used;
        };
    }
}
