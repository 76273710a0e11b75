//! Parameters: the context, the model-visible ones, and `#[arg(...)]`.

use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, ExprUnary, FnArg, Lit, LitStr, Pat, Signature, Type, UnOp};

use super::args::{set_once, skip_value, unknown_key};
use super::doc;
use crate::errors::Errors;
use crate::model::{Length, Number, NumberLit, Param, ParamArgs, Range};

const LENGTH: &str = "length";
const RANGE: &str = "range";
const PATTERN: &str = "pattern";
const EMAIL: &str = "email";
const URL: &str = "url";
const DEFAULT: &str = "default";
const RENAME: &str = "rename";
const DESCRIPTION: &str = "description";
const ALLOW: &str = "allow";
const WARN: &str = "warn";
const DENY: &str = "deny";
const SENSITIVE: &str = "sensitive";
/// Every key `#[arg]` accepts; drives the parser and the "expected one of" message.
pub(crate) const ARG_KEYS: &[&str] = &[
    LENGTH,
    RANGE,
    PATTERN,
    EMAIL,
    URL,
    DEFAULT,
    RENAME,
    DESCRIPTION,
    ALLOW,
    WARN,
    DENY,
    SENSITIVE,
];
const LENGTH_KEYS: &[&str] = &["min", "max"];
const RANGE_KEYS: &[&str] = &["min", "max", "exclusive_min", "exclusive_max"];

/// How a parameter's type relates to `ToolContext`.
enum ContextUse {
    /// `&ToolContext`
    ByRef,
    /// `ToolContext` or `&mut ToolContext`
    Wrong,
    No,
}

/// The context is recognised by its type's last path segment, `ToolContext`: the macro sees
/// tokens, not types. A type alias of it is not recognised and is then rejected as a parameter
/// type (it implements neither `Deserialize` nor `JsonSchema`), so a miss cannot go unnoticed.
fn context_use(ty: &Type) -> ContextUse {
    fn is_context(ty: &Type) -> bool {
        match ty {
            Type::Path(path) => path
                .path
                .segments
                .last()
                .is_some_and(|seg| seg.ident == "ToolContext" && seg.arguments.is_none()),
            Type::Paren(inner) => is_context(&inner.elem),
            Type::Group(inner) => is_context(&inner.elem),
            _ => false,
        }
    }
    match ty {
        Type::Reference(r) if is_context(&r.elem) => {
            if r.mutability.is_some() {
                ContextUse::Wrong
            } else {
                ContextUse::ByRef
            }
        }
        ty if is_context(ty) => ContextUse::Wrong,
        _ => ContextUse::No,
    }
}

/// Parses every parameter. Returns whether the first one is the context, and the others.
pub(crate) fn parse_all(errors: &Errors, sig: &mut Signature) -> (bool, Vec<Param>) {
    let mut takes_context = false;
    let mut seen_context = false;
    let mut params = Vec::new();
    for (index, input) in sig.inputs.iter().enumerate() {
        let pat_type = match input {
            FnArg::Receiver(recv) => {
                errors.at(
                    recv,
                    "`self` is not supported; a tool is a free function: move it out of the `impl` block and reach shared state with `ctx.get::<T>()`",
                );
                continue;
            }
            FnArg::Typed(pat_type) => pat_type,
        };
        match context_use(&pat_type.ty) {
            ContextUse::ByRef | ContextUse::Wrong if seen_context => {
                errors.at(
                    &pat_type.ty,
                    "only one context parameter is allowed; remove this one",
                );
                continue;
            }
            ContextUse::Wrong => {
                seen_context = true;
                errors.at(
                    &pat_type.ty,
                    "take the context by shared reference: `ctx: &ToolContext`",
                );
                continue;
            }
            ContextUse::ByRef => {
                seen_context = true;
                if index == 0 {
                    takes_context = true;
                } else {
                    errors.at(
                        pat_type,
                        "the context parameter must come first: `fn name(ctx: &ToolContext, ...)`",
                    );
                }
                if let Some(attr) = pat_type.attrs.iter().find(|a| a.path().is_ident("arg")) {
                    errors.at(
                        attr,
                        "`#[arg]` does not apply to the context parameter; remove it",
                    );
                }
                continue;
            }
            ContextUse::No => {}
        }
        let ident = match &*pat_type.pat {
            Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => pat.ident.clone(),
            pat => {
                errors.at(
                    pat,
                    "parameter patterns are not supported; bind a name, e.g. `city: String`",
                );
                continue;
            }
        };
        check_type(errors, &pat_type.ty);
        let args = parse_arg_attrs(errors, &pat_type.attrs);
        let docs = doc::collect(&pat_type.attrs);
        params.push(Param {
            ident,
            ty: (*pat_type.ty).clone(),
            docs,
            doc_span: doc::first_span(&pat_type.attrs),
            args,
        });
    }
    strip_param_attrs(sig);
    (takes_context, params)
}

/// Parameter types must be owned, concrete types.
fn check_type(errors: &Errors, ty: &Type) {
    match ty {
        Type::ImplTrait(_) => errors.at(
            ty,
            "`impl Trait` parameters are not supported; use a concrete type that implements `Deserialize` and `JsonSchema`",
        ),
        Type::Reference(_) => errors.at(
            ty,
            "tool parameters are read from JSON and must be owned; use `String` for `&str`, `Vec<T>` for `&[T]`",
        ),
        Type::Paren(inner) => check_type(errors, &inner.elem),
        _ => {}
    }
}

fn parse_arg_attrs(errors: &Errors, attrs: &[Attribute]) -> ParamArgs {
    let mut out = ParamArgs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("arg")) {
        let result = attr.parse_nested_meta(|meta| {
            let key = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
            match key.as_str() {
                LENGTH => {
                    // #[arg(length(min = 2, max = 300))]
                    let mut length = Length { min: None, max: None };
                    if empty_parens(&meta)? {
                        errors.at(&meta.path, "`length` needs `min`, `max` or both, e.g. `length(min = 1, max = 100)`");
                        return Ok(());
                    }
                    meta.parse_nested_meta(|inner| {
                        let which = inner.path.get_ident().map(ToString::to_string).unwrap_or_default();
                        let slot = match which.as_str() {
                            "min" => &mut length.min,
                            "max" => &mut length.max,
                            _ => {
                                errors.at(&inner.path, unknown_key("length", &which, LENGTH_KEYS));
                                return skip_value(&inner);
                            }
                        };
                        let value: syn::LitInt = inner.value()?.parse()?;
                        set_once(errors, &inner, slot, value, "length");
                        Ok(())
                    })?;
                    if length.min.is_none() && length.max.is_none() {
                        errors.at(&meta.path, "`length` needs `min`, `max` or both, e.g. `length(min = 1, max = 100)`");
                    }
                    set_once(errors, &meta, &mut out.length, length, "arg");
                }
                RANGE => {
                    // #[arg(range(min = 1, max = 10))], also `exclusive_min`, `exclusive_max`
                    let mut range = Range { key: meta.path.get_ident().cloned().unwrap_or_else(|| syn::Ident::new("range", meta.path.span())), min: None, max: None, exclusive_min: None, exclusive_max: None };
                    if empty_parens(&meta)? {
                        errors.at(&meta.path, "`range` needs at least one bound, e.g. `range(min = 1, max = 10)`");
                        return Ok(());
                    }
                    // A bound that is given but is not a number is reported on its own.
                    let mut given = false;
                    meta.parse_nested_meta(|inner| {
                        given = true;
                        let which = inner.path.get_ident().map(ToString::to_string).unwrap_or_default();
                        let slot = match which.as_str() {
                            "min" => &mut range.min,
                            "max" => &mut range.max,
                            "exclusive_min" => &mut range.exclusive_min,
                            "exclusive_max" => &mut range.exclusive_max,
                            _ => {
                                errors.at(&inner.path, unknown_key("range", &which, RANGE_KEYS));
                                return skip_value(&inner);
                            }
                        };
                        let expr: Expr = inner.value()?.parse()?;
                        match number(&expr) {
                            Some(n) => set_once(errors, &inner, slot, n, "range"),
                            None => errors.at(&expr, "expected a number literal, e.g. `10`, `-5` or `0.5`"),
                        }
                        Ok(())
                    })?;
                    if !given {
                        errors.at(&meta.path, "`range` needs at least one bound, e.g. `range(min = 1, max = 10)`");
                    }
                    set_once(errors, &meta, &mut out.range, range, "arg");
                }
                PATTERN => {
                    // #[arg(pattern = "^[a-z]+$")]
                    let value: LitStr = meta.value()?.parse()?;
                    set_once(errors, &meta, &mut out.pattern, value, "arg");
                }
                EMAIL | URL => {
                    // #[arg(email)], #[arg(url)]
                    if meta.input.peek(syn::Token![=]) || meta.input.peek(syn::token::Paren) {
                        errors.at(&meta.path, format!("`{key}` takes no value; write `#[arg({key})]`"));
                        skip_value(&meta)?;
                    }
                    let slot = if key == EMAIL { &mut out.email } else { &mut out.url };
                    set_once(errors, &meta, slot, meta.path.span(), "arg");
                }
                DEFAULT => {
                    // #[arg(default = 5)]
                    let value: Expr = meta.value()?.parse()?;
                    set_once(errors, &meta, &mut out.default, value, "arg");
                }
                RENAME => {
                    // #[arg(rename = "q")]
                    let value: LitStr = meta.value()?.parse()?;
                    set_once(errors, &meta, &mut out.rename, value, "arg");
                }
                DESCRIPTION => {
                    // #[arg(description = "...")]
                    let value: LitStr = meta.value()?.parse()?;
                    set_once(errors, &meta, &mut out.description, value, "arg");
                }
                SENSITIVE => {
                    // #[arg(sensitive)]
                    set_once(errors, &meta, &mut out.sensitive, meta.path.span(), "arg");
                }
                ALLOW | WARN | DENY => {
                    // #[arg(allow(unbounded_string))]
                    super::args::parse_levels(errors, &meta, &key, &mut out.levels)?;
                }
                _ => {
                    errors.at(&meta.path, unknown_key("arg", &key, ARG_KEYS));
                    out.unparsed = true;
                    skip_value(&meta)?;
                }
            }
            Ok(())
        });
        if let Err(err) = result {
            out.unparsed = true;
            errors.push(err);
        }
    }
    out
}

/// `10`, `-5`, `0.5`, `-1e3`.
fn number(expr: &Expr) -> Option<Number> {
    match expr {
        Expr::Lit(ExprLit { lit, .. }) => lit_number(lit, false),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr,
            ..
        }) => match &**expr {
            Expr::Lit(ExprLit { lit, .. }) => lit_number(lit, true),
            _ => None,
        },
        Expr::Group(group) => number(&group.expr),
        _ => None,
    }
}

fn lit_number(lit: &Lit, negative: bool) -> Option<Number> {
    match lit {
        Lit::Int(int) => Some(Number {
            negative,
            lit: NumberLit::Int(int.clone()),
        }),
        Lit::Float(float) => Some(Number {
            negative,
            lit: NumberLit::Float(float.clone()),
        }),
        _ => None,
    }
}

/// Whether the key is followed by `()`, which it then consumes: `range()` is reported as a
/// missing bound rather than as syn's "unexpected end of input".
fn empty_parens(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<bool> {
    if !meta.input.peek(syn::token::Paren) {
        return Ok(false);
    }
    let fork = meta.input.fork();
    let content;
    syn::parenthesized!(content in fork);
    if content.is_empty() {
        let content;
        syn::parenthesized!(content in meta.input);
        let _ = content;
        return Ok(true);
    }
    Ok(false)
}

/// Removes doc comments and `#[arg]` from every parameter: rustc rejects doc comments on
/// parameters, and `#[arg]` is ours.
fn strip_param_attrs(sig: &mut Signature) {
    for input in &mut sig.inputs {
        let attrs = match input {
            FnArg::Typed(pat) => &mut pat.attrs,
            FnArg::Receiver(recv) => &mut recv.attrs,
        };
        attrs.retain(|attr| !attr.path().is_ident("doc") && !attr.path().is_ident("arg"));
    }
}
