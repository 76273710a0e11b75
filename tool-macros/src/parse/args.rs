//! `#[tool(...)]`.

use proc_macro2::TokenStream;
use syn::LitStr;
use syn::meta::ParseNestedMeta;

use crate::errors::Errors;
use crate::model::ToolArgs;

pub(crate) const NAME: &str = "name";
pub(crate) const DESCRIPTION: &str = "description";
pub(crate) const TITLE: &str = "title";
pub(crate) const READ_ONLY: &str = "read_only";
pub(crate) const DESTRUCTIVE: &str = "destructive";
pub(crate) const IDEMPOTENT: &str = "idempotent";
pub(crate) const OPEN_WORLD: &str = "open_world";
/// Every key `#[tool]` accepts; drives the parser and the "expected one of" message.
pub(crate) const TOOL_KEYS: &[&str] = &[
    NAME,
    DESCRIPTION,
    TITLE,
    READ_ONLY,
    DESTRUCTIVE,
    IDEMPOTENT,
    OPEN_WORLD,
];

/// "`a`, `b` or `c`": the keys as a message lists them.
pub(crate) fn one_of(keys: &[&str]) -> String {
    let quoted: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
    quoted.join(", ")
}

/// Skips the value of a key that is being rejected (`= expr` or `(...)`), so that the keys
/// after it are still parsed and checked.
pub(crate) fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.input.parse::<proc_macro2::Group>()?;
    }
    Ok(())
}

/// Stores `value` in `slot`, or reports a duplicate on the second key.
pub(crate) fn set_once<T>(
    errors: &Errors,
    meta: &ParseNestedMeta<'_>,
    slot: &mut Option<T>,
    value: T,
    attr: &str,
) {
    if slot.is_some() {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        errors.at(
            &meta.path,
            format!("duplicate `{attr}` key `{key}`; remove one of them"),
        );
    } else {
        *slot = Some(value);
    }
}

pub(crate) fn parse(errors: &Errors, args: TokenStream) -> ToolArgs {
    let mut out = ToolArgs::default();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident(NAME) {
            // #[tool(name = "calendar.create_event")]
            let value: LitStr = meta.value()?.parse()?;
            set_once(errors, &meta, &mut out.name, value, "tool");
        } else if meta.path.is_ident(DESCRIPTION) {
            // #[tool(description = "...")]
            let value: LitStr = meta.value()?.parse()?;
            set_once(errors, &meta, &mut out.description, value, "tool");
        } else if meta.path.is_ident(TITLE) {
            // #[tool(title = "Create event")]
            let value: LitStr = meta.value()?.parse()?;
            set_once(errors, &meta, &mut out.title, value, "tool");
        } else if let Some(slot) = [
            (READ_ONLY, &mut out.read_only),
            (DESTRUCTIVE, &mut out.destructive),
            (IDEMPOTENT, &mut out.idempotent),
            (OPEN_WORLD, &mut out.open_world),
        ]
        .into_iter()
        .find_map(|(key, slot)| meta.path.is_ident(key).then_some(slot))
        {
            // #[tool(read_only)], #[tool(open_world = false)]
            let value = if meta.input.peek(syn::Token![=]) {
                meta.value()?.parse::<syn::LitBool>()?.value
            } else {
                true
            };
            set_once(errors, &meta, slot, value, "tool");
        } else {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_else(|| "?".into());
            errors.at(
                &meta.path,
                format!(
                    "unknown `tool` key `{key}`; expected one of {}",
                    one_of(TOOL_KEYS)
                ),
            );
            skip_value(&meta)?;
        }
        Ok(())
    });
    if let Err(err) = syn::parse::Parser::parse2(parser, args) {
        errors.push(err);
    }
    out
}
