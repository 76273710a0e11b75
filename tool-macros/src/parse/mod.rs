//! syn → model. Every parser reports into `Errors` and goes on with a best-effort value.

pub(crate) mod args;
mod doc;
mod param;
mod sections;

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
        let sections = sections::read(&item.attrs);
        let docs = match &sections {
            Some(sections) => sections.kept.clone(),
            None => doc::collect(&item.attrs),
        };
        let doc_span = doc::first_span(&item.attrs);
        crate::check::signature(errors, &item.sig);
        let mut sig = item.sig;
        let inputs: Vec<String> = sig
            .inputs
            .iter()
            .filter_map(|input| match input {
                syn::FnArg::Typed(pat) => match &*pat.pat {
                    syn::Pat::Ident(ident) => Some(ident.ident.to_string()),
                    _ => None,
                },
                syn::FnArg::Receiver(_) => None,
            })
            .collect();
        let (takes_context, mut params) = param::parse_all(errors, &mut sig);
        if let Some(sections) = sections {
            document(errors, &sig.ident, &inputs, &mut params, sections.arguments);
        }
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

/// Gives each parameter without a doc comment of its own its `# Arguments` item. A parameter
/// documented in both places, or an item naming no parameter, is an error on the item's line.
fn document(
    errors: &Errors,
    function: &syn::Ident,
    inputs: &[String],
    params: &mut [crate::model::Param],
    items: Vec<sections::Item>,
) {
    for item in items {
        let param = params
            .iter_mut()
            .find(|p| p.ident == item.name.as_str() || p.json_name() == item.name);
        match param {
            Some(param) if !param.docs.is_empty() || param.args.description.is_some() => {
                errors.at_span(
                    item.span,
                    format!(
                        "`{}` is documented twice: in its own doc comment and under `# Arguments`; keep one",
                        item.name
                    ),
                );
            }
            Some(param) => {
                param.docs = vec![syn::Expr::Lit(syn::ExprLit {
                    attrs: Vec::new(),
                    lit: syn::Lit::Str(syn::LitStr::new(&item.text, item.span)),
                })];
                param.doc_span = Some(item.span);
            }
            // The context parameter is the program's, not the model's: its item is left out.
            None if inputs.contains(&item.name) => {}
            None => {
                let names: Vec<String> = params.iter().map(|p| format!("`{}`", p.ident)).collect();
                let known = if names.is_empty() {
                    format!("`{function}` takes no parameters the model fills")
                } else {
                    format!("the parameters are {}", names.join(", "))
                };
                errors.at_span(
                    item.span,
                    format!(
                        "`# Arguments` lists `{}`, which is not a parameter of `{function}`; {known}",
                        item.name
                    ),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::args::{LIMIT_KEYS, TOOL_KEYS};
    use super::param::ARG_KEYS;

    /// The keys the first column of the table under `heading` names: the name at the start of
    /// each code span (`limits(max_bytes = ..)` names `limits`), and every name a span holds.
    fn documented(guide: &str, heading: &str) -> (BTreeSet<String>, String) {
        let start = guide
            .find(heading)
            .unwrap_or_else(|| panic!("no `{heading}` in docs/tool-attribute.md"));
        let section = &guide[start + heading.len()..];
        let section = &section[..section.find("\n# ").unwrap_or(section.len())];
        let mut keys = BTreeSet::new();
        let mut cells = String::new();
        for row in section.lines().filter(|l| l.starts_with("| `")) {
            let first = row.split(" | ").next().unwrap_or_default();
            cells.push_str(first);
            for span in first.split('`').skip(1).step_by(2) {
                let name: String = span
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    keys.insert(name);
                }
            }
        }
        (keys, cells)
    }

    fn set(keys: &[&str]) -> BTreeSet<String> {
        keys.iter().map(|k| (*k).to_owned()).collect()
    }

    /// docs/tool-attribute.md lists exactly the keys the parser accepts, for `#[tool]`,
    /// `limits(..)` and `#[arg]`.
    #[test]
    fn the_guide_lists_every_key_the_parser_accepts() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/tool-attribute.md");
        let guide = std::fs::read_to_string(path).expect("docs/tool-attribute.md");
        let (tool, cells) = documented(&guide, "# `#[tool(...)]` keys");
        assert_eq!(tool, set(TOOL_KEYS), "`#[tool]` keys in the guide");
        for key in LIMIT_KEYS {
            assert!(cells.contains(key), "`limits({key})` is not in the guide");
        }
        let (arg, _) = documented(&guide, "# `#[arg(...)]` keys");
        assert_eq!(arg, set(ARG_KEYS), "`#[arg]` keys in the guide");
    }
}
