//! `#[tool(...)]`.

use proc_macro2::TokenStream;
use syn::LitStr;
use syn::meta::ParseNestedMeta;

use syn::spanned::Spanned;

use crate::errors::Errors;
use crate::lints::rules::{self, Level};
use crate::model::{LevelSetting, ToolArgs};

pub(crate) const NAME: &str = "name";
pub(crate) const DESCRIPTION: &str = "description";
pub(crate) const TITLE: &str = "title";
pub(crate) const READ_ONLY: &str = "read_only";
pub(crate) const DESTRUCTIVE: &str = "destructive";
pub(crate) const IDEMPOTENT: &str = "idempotent";
pub(crate) const OPEN_WORLD: &str = "open_world";
pub(crate) const EFFECT: &str = "effect";
pub(crate) const REQUIRES_APPROVAL: &str = "requires_approval";
pub(crate) const ALLOW: &str = "allow";
pub(crate) const WARN: &str = "warn";
pub(crate) const DENY: &str = "deny";
/// Every key `#[tool]` accepts; drives the parser and the "expected one of" message.
pub(crate) const TOOL_KEYS: &[&str] = &[
    NAME,
    DESCRIPTION,
    TITLE,
    EFFECT,
    REQUIRES_APPROVAL,
    READ_ONLY,
    DESTRUCTIVE,
    IDEMPOTENT,
    OPEN_WORLD,
    ALLOW,
    WARN,
    DENY,
];
const EFFECTS: &[&str] = &["read", "write", "destructive"];

/// `allow(a, b)`, `warn(..)`, `deny(..)`: lint names checked against the list of lints.
pub(crate) fn parse_levels(
    errors: &Errors,
    meta: &ParseNestedMeta<'_>,
    key: &str,
    out: &mut Vec<LevelSetting>,
) -> syn::Result<()> {
    let level = Level::parse(key).unwrap_or(Level::Deny);
    meta.parse_nested_meta(|inner| {
        let name = inner
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match rules::find(&name) {
            Some(lint) => {
                if out.iter().any(|s| s.lint == lint.name) {
                    errors.at(
                        &inner.path,
                        format!("lint `{name}` is given a level twice; keep one"),
                    );
                }
                out.push(LevelSetting {
                    lint: lint.name,
                    level,
                });
            }
            None => errors.at(
                &inner.path,
                format!("unknown lint `{name}`; expected one of {}", rules::names()),
            ),
        }
        Ok(())
    })
}

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
        } else if meta.path.is_ident(EFFECT) {
            // #[tool(effect = "read" | "write" | "destructive")]
            let value: LitStr = meta.value()?.parse()?;
            if !EFFECTS.contains(&value.value().as_str()) {
                errors.at(
                    &value,
                    format!(
                        "unknown effect {:?}; expected one of \"read\", \"write\", \"destructive\"",
                        value.value()
                    ),
                );
            }
            set_once(errors, &meta, &mut out.effect, value, "tool");
        } else if meta.path.is_ident(REQUIRES_APPROVAL) {
            // #[tool(requires_approval)]
            set_once(
                errors,
                &meta,
                &mut out.requires_approval,
                meta.path.span(),
                "tool",
            );
        } else if meta.path.is_ident(ALLOW) || meta.path.is_ident(WARN) || meta.path.is_ident(DENY)
        {
            // #[tool(allow(unbounded_string), warn(open_map))]
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            parse_levels(errors, &meta, &key, &mut out.levels)?;
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
