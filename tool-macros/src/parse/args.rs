//! `#[tool(...)]`.

use proc_macro2::TokenStream;
use syn::LitStr;
use syn::meta::ParseNestedMeta;

use syn::spanned::Spanned;

use crate::errors::Errors;
use crate::model::{LevelSetting, ToolArgs};
use toolsmith_lint_rules::{self as rules, Level};

pub(crate) const NAME: &str = "name";
pub(crate) const DESCRIPTION: &str = "description";
pub(crate) const TITLE: &str = "title";
pub(crate) const READ_ONLY: &str = "read_only";
pub(crate) const DESTRUCTIVE: &str = "destructive";
pub(crate) const IDEMPOTENT: &str = "idempotent";
pub(crate) const OPEN_WORLD: &str = "open_world";
pub(crate) const EFFECT: &str = "effect";
pub(crate) const REQUIRES_APPROVAL: &str = "requires_approval";
pub(crate) const LONG_RUNNING: &str = "long_running";
pub(crate) const ALLOW: &str = "allow";
pub(crate) const WARN: &str = "warn";
pub(crate) const DENY: &str = "deny";
pub(crate) const TIMEOUT: &str = "timeout";
pub(crate) const ATTEMPTS: &str = "attempts";
pub(crate) const CONCURRENCY: &str = "concurrency";
pub(crate) const SEQUENTIAL: &str = "sequential";
pub(crate) const INLINE: &str = "inline";
pub(crate) const STREAM_ARGS: &str = "stream_args";
pub(crate) const SHOW_PARTIAL: &str = "show_partial";
pub(crate) const FALLBACK: &str = "fallback";
pub(crate) const SCOPES: &str = "scopes";
pub(crate) const DATA_CLASSIFICATION: &str = "data_classification";
pub(crate) const VERSION: &str = "version";
pub(crate) const LIMITS: &str = "limits";
pub(crate) const EXAMPLE: &str = "example";
pub(crate) const INVALID_EXAMPLE: &str = "invalid_example";
/// The keys of `limits(...)`, as `InputLimits` names its fields.
pub(crate) const LIMIT_KEYS: &[&str] = &[
    "max_bytes",
    "max_depth",
    "max_nodes",
    "max_members",
    "max_items",
];
/// Every key `#[tool]` accepts; drives the parser and the "expected one of" message.
pub(crate) const TOOL_KEYS: &[&str] = &[
    NAME,
    DESCRIPTION,
    TITLE,
    EFFECT,
    REQUIRES_APPROVAL,
    LONG_RUNNING,
    TIMEOUT,
    ATTEMPTS,
    CONCURRENCY,
    SEQUENTIAL,
    INLINE,
    STREAM_ARGS,
    SHOW_PARTIAL,
    FALLBACK,
    SCOPES,
    DATA_CLASSIFICATION,
    VERSION,
    LIMITS,
    EXAMPLE,
    INVALID_EXAMPLE,
    READ_ONLY,
    DESTRUCTIVE,
    IDEMPOTENT,
    OPEN_WORLD,
    ALLOW,
    WARN,
    DENY,
];
const EFFECTS: &[&str] = &["read", "write", "destructive"];

/// An example's arguments: a JSON object.
fn check_example(errors: &Errors, value: &LitStr) {
    match serde_json::from_str::<serde_json::Value>(&value.value()) {
        Ok(serde_json::Value::Object(_)) => {}
        Ok(_) => errors.at(
            value,
            "an example is the arguments of a call: a JSON object, like r#\"{\"city\": \"Paris\"}\"#",
        ),
        Err(err) => errors.at(value, format!("this example is not JSON: {err}")),
    }
}

/// `"5s"`, `"250ms"`, `"2m"`, `"1h"` in milliseconds.
fn duration_ms(text: &str) -> Option<u64> {
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map(|i| text.split_at(i))?;
    let n: u64 = number.parse().ok()?;
    let factor = match unit.trim() {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    n.checked_mul(factor).filter(|ms| *ms > 0)
}

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
/// The error for a key of attribute `attr` that is not one of `keys`: the closest key when
/// the given one looks like a misspelling of it (as rustc suggests names), else every key.
pub(crate) fn unknown_key(attr: &str, key: &str, keys: &[&str]) -> String {
    let closest = keys
        .iter()
        .map(|k| (distance(key, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4) && *d < k.len())
        .min_by_key(|(d, _)| *d);
    match closest {
        Some((_, k)) => format!("unknown `{attr}` key `{key}`; did you mean `{k}`?"),
        None => format!(
            "unknown `{attr}` key `{key}`; expected one of {}",
            one_of(keys)
        ),
    }
}

/// Levenshtein distance, with a swap of two neighbours counted as one edit (`lenght`).
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

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

/// A scope is an OAuth scope token (RFC 6749 §3.3): printable ASCII but space, `"` and `\`,
/// at least one character.
fn check_scope(errors: &Errors, scope: &LitStr) {
    let text = scope.value();
    if text.is_empty()
        || !text
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\')
    {
        errors.at(
            scope,
            "a scope is one OAuth scope token (RFC 6749): printable ASCII without spaces, quotes or backslashes, like \"tickets:write\"",
        );
    }
}

pub(crate) fn parse(errors: &Errors, args: TokenStream) -> ToolArgs {
    let mut out = ToolArgs::default();
    let parser = syn::meta::parser(|meta| {
        if parse_text_key(errors, &meta, &mut out)? || parse_policy_key(errors, &meta, &mut out)? {
            return Ok(());
        }
        if meta.path.is_ident(SCOPES) {
            // #[tool(scopes("tickets:read", "tickets:write"))], or
            // #[tool(scopes = ["tickets:read", "tickets:write"])]
            let content;
            if meta.input.peek(syn::Token![=]) {
                meta.input.parse::<syn::Token![=]>()?;
                syn::bracketed!(content in meta.input);
            } else {
                syn::parenthesized!(content in meta.input);
            }
            let list = content.parse_terminated(|input| input.parse::<LitStr>(), syn::Token![,])?;
            for scope in &list {
                check_scope(errors, scope);
            }
            set_once(
                errors,
                &meta,
                &mut out.scopes,
                list.into_iter().collect(),
                "tool",
            );
        } else if meta.path.is_ident(EXAMPLE) {
            // #[tool(example = r#"{"city": "Paris"}"#)]
            let value: LitStr = meta.value()?.parse()?;
            check_example(errors, &value);
            out.examples.push(value);
        } else if meta.path.is_ident(INVALID_EXAMPLE) {
            // #[tool(invalid_example(arguments = r#"{"days": 0}"#, error = "/days"))]
            let (mut arguments, mut error) = (None, None);
            meta.parse_nested_meta(|inner| {
                if inner.path.is_ident("arguments") {
                    let value: LitStr = inner.value()?.parse()?;
                    check_example(errors, &value);
                    arguments = Some(value);
                } else if inner.path.is_ident("error") {
                    let value: LitStr = inner.value()?.parse()?;
                    let pointer = value.value();
                    if !(pointer.is_empty() || pointer.starts_with('/')) {
                        errors.at(
                            &value,
                            "expected a JSON pointer into the arguments, like \"/days\" (\"\" for the whole call)",
                        );
                    }
                    error = Some(value);
                } else {
                    errors.at(
                        &inner.path,
                        "expected `arguments = r#\"{...}\"#` or `error = \"/field\"`",
                    );
                    skip_value(&inner)?;
                }
                Ok(())
            })?;
            match (arguments, error) {
                (Some(arguments), Some(error)) => out.invalid_examples.push((arguments, error)),
                _ => errors.at(
                    &meta.path,
                    "an invalid example needs both `arguments = r#\"{...}\"#` and `error = \"/field\"` (where the call is refused)",
                ),
            }
        } else if meta.path.is_ident(REQUIRES_APPROVAL) {
            // #[tool(requires_approval)]
            set_once(
                errors,
                &meta,
                &mut out.requires_approval,
                meta.path.span(),
                "tool",
            );
        } else if meta.path.is_ident(LONG_RUNNING) {
            // #[tool(long_running)]
            set_once(
                errors,
                &meta,
                &mut out.long_running,
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
            errors.at(&meta.path, unknown_key("tool", &key, TOOL_KEYS));
            skip_value(&meta)?;
        }
        Ok(())
    });
    if let Err(err) = syn::parse::Parser::parse2(parser, args) {
        errors.push(err);
    }
    out
}

/// A key that names or describes the tool (`name`, `description`, `title`, `effect`, `fallback`,
/// `data_classification`, `version`): `true` when `meta` is one.
fn parse_text_key(
    errors: &Errors,
    meta: &ParseNestedMeta<'_>,
    out: &mut ToolArgs,
) -> syn::Result<bool> {
    if meta.path.is_ident(NAME) {
        // #[tool(name = "calendar.create_event")]
        let value: LitStr = meta.value()?.parse()?;
        set_once(errors, meta, &mut out.name, value, "tool");
    } else if meta.path.is_ident(DESCRIPTION) {
        // #[tool(description = "...")]
        let value: LitStr = meta.value()?.parse()?;
        set_once(errors, meta, &mut out.description, value, "tool");
    } else if meta.path.is_ident(TITLE) {
        // #[tool(title = "Create event")]
        let value: LitStr = meta.value()?.parse()?;
        set_once(errors, meta, &mut out.title, value, "tool");
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
        set_once(errors, meta, &mut out.effect, value, "tool");
    } else if meta.path.is_ident(FALLBACK)
        || meta.path.is_ident(DATA_CLASSIFICATION)
        || meta.path.is_ident(VERSION)
    {
        // #[tool(fallback = "search_cache")], data_classification = "internal", version = "1.2.0"
        let value: LitStr = meta.value()?.parse()?;
        if meta.path.is_ident(VERSION) && semver::Version::parse(&value.value()).is_err() {
            errors.at(
                &value,
                "expected a semantic version like \"1.2.0\": the registry compares versions to tell breaking changes",
            );
        }
        let slot = if meta.path.is_ident(FALLBACK) {
            &mut out.fallback
        } else if meta.path.is_ident(VERSION) {
            &mut out.version
        } else {
            &mut out.data_classification
        };
        set_once(errors, meta, slot, value, "tool");
    } else {
        return Ok(false);
    }
    Ok(true)
}

/// A key of the tool's execution policy (`timeout`, `attempts`, `concurrency`, `sequential`,
/// `inline`, `stream_args`, `show_partial`, `limits`): `true` when `meta` is one.
fn parse_policy_key(
    errors: &Errors,
    meta: &ParseNestedMeta<'_>,
    out: &mut ToolArgs,
) -> syn::Result<bool> {
    if meta.path.is_ident(TIMEOUT) {
        // #[tool(timeout = "5s")]
        let value: LitStr = meta.value()?.parse()?;
        match duration_ms(&value.value()) {
            Some(ms) => set_once(errors, meta, &mut out.timeout_ms, ms, "tool"),
            None => errors.at(
                &value,
                "expected a duration like \"500ms\", \"5s\", \"2m\" or \"1h\"",
            ),
        }
    } else if meta.path.is_ident(ATTEMPTS) || meta.path.is_ident(CONCURRENCY) {
        // #[tool(attempts = 3)], #[tool(concurrency = 2)]
        let value: syn::LitInt = meta.value()?.parse()?;
        match value.base10_parse::<u32>() {
            Ok(n) if n > 0 => {
                if meta.path.is_ident(ATTEMPTS) {
                    set_once(errors, meta, &mut out.attempts, n, "tool");
                } else {
                    set_once(errors, meta, &mut out.concurrency, n as usize, "tool");
                }
            }
            _ => errors.at(&value, "expected a whole number of at least 1"),
        }
    } else if meta.path.is_ident(SEQUENTIAL) {
        // #[tool(sequential)]
        set_once(errors, meta, &mut out.sequential, meta.path.span(), "tool");
    } else if meta.path.is_ident(INLINE) {
        // #[tool(inline)]
        set_once(errors, meta, &mut out.inline, meta.path.span(), "tool");
    } else if meta.path.is_ident(STREAM_ARGS) {
        // #[tool(stream_args)]
        set_once(errors, meta, &mut out.stream_args, meta.path.span(), "tool");
    } else if meta.path.is_ident(SHOW_PARTIAL) {
        // #[tool(show_partial)]
        set_once(
            errors,
            meta,
            &mut out.show_partial,
            meta.path.span(),
            "tool",
        );
    } else if meta.path.is_ident(LIMITS) {
        // #[tool(limits(max_bytes = 4_194_304, max_items = 50_000))]
        let mut limits: Vec<(&'static str, u64)> = Vec::new();
        meta.parse_nested_meta(|inner| {
            let name = inner
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            let Some(key) = LIMIT_KEYS.iter().find(|k| **k == name) else {
                errors.at(
                    &inner.path,
                    format!(
                        "unknown limit `{name}`; expected one of {}",
                        one_of(LIMIT_KEYS)
                    ),
                );
                return skip_value(&inner);
            };
            let value: syn::LitInt = inner.value()?.parse()?;
            match value.base10_parse::<u64>() {
                Ok(n) if n > 0 => {
                    if limits.iter().any(|(k, _)| k == key) {
                        errors.at(
                            &inner.path,
                            format!("limit `{name}` is given twice; keep one"),
                        );
                    }
                    limits.push((key, n));
                }
                _ => errors.at(&value, "expected a whole number of at least 1"),
            }
            Ok(())
        })?;
        set_once(errors, meta, &mut out.limits, limits, "tool");
    } else {
        return Ok(false);
    }
    Ok(true)
}
