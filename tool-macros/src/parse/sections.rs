//! Rustdoc sections of a function's doc comment: `# Arguments` (or `# Parameters`) lists give
//! parameters their descriptions, as the standard library and most crates write them, and the
//! sections written for Rust callers (`# Examples`, `# Panics`, `# Safety`) stay out of the
//! tool's description.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, Lit, LitStr, Meta};

/// What a function's doc comment holds once its sections are read.
pub(crate) struct Sections {
    /// The doc lines the tool's description is made of, with the sections taken out.
    pub(crate) kept: Vec<Expr>,
    /// Each item of an `# Arguments` list: the name it documents, its text, and the span of
    /// its first line.
    pub(crate) arguments: Vec<Item>,
}

/// One documented parameter of an `# Arguments` list.
pub(crate) struct Item {
    pub(crate) name: String,
    pub(crate) text: String,
    pub(crate) span: Span,
}

/// What a heading opens.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A list of parameters.
    Arguments,
    /// For Rust callers only: left out of the description.
    Dropped,
    /// Anything else: kept.
    Kept,
}

/// The headings that list parameters, and those left out of a tool's description.
const ARGUMENT_HEADINGS: &[&str] = &["arguments", "parameters", "args", "params"];
const DROPPED_HEADINGS: &[&str] = &["examples", "example", "panics", "safety"];

/// Reads the sections of `attrs`' doc comment. `None` when a doc attribute is not a string
/// literal (`#[doc = include_str!(..)]`): its text is only known later, and is kept whole.
pub(crate) fn read(attrs: &[Attribute]) -> Option<Sections> {
    let mut lines: Vec<(String, Span)> = Vec::new();
    for attr in attrs {
        let Meta::NameValue(nv) = &attr.meta else {
            continue;
        };
        if !nv.path.is_ident("doc") {
            continue;
        }
        let Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) = &nv.value
        else {
            return None;
        };
        // `split`, not `lines`: an empty `///` line is a line too (a paragraph break).
        for line in text.value().split('\n') {
            lines.push((line.trim_end_matches('\r').to_owned(), attr.span()));
        }
    }
    let mut kept = Vec::new();
    let keep = |kept: &mut Vec<Expr>, line: &str, span: Span| {
        kept.push(Expr::Lit(ExprLit {
            attrs: Vec::new(),
            lit: Lit::Str(LitStr::new(line, span)),
        }));
    };
    let mut arguments: Vec<Item> = Vec::new();
    // The open section: its kind and heading level.
    let mut section: Option<(Kind, usize)> = None;
    let mut fence: Option<char> = None;
    // Whether the last argument line was blank (a following line goes on only if indented),
    // and whether the last item was a paragraph (`name` text, no bullet), which goes on over
    // paragraphs until the next item.
    let mut after_blank = true;
    let mut paragraph_item = false;
    // Whether the last line was the section's own prose (kept for the description): the
    // lines after it go on with it, not with the item before it.
    let mut prose = false;
    for (line, span) in lines {
        let body = line.strip_prefix(' ').unwrap_or(&line);
        let trimmed = body.trim_start();
        let heading = if fence.is_none() {
            heading(trimmed)
        } else {
            None
        };
        if let Some(ch) = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')
            && trimmed.starts_with(&ch.to_string().repeat(3))
        {
            fence = match fence {
                Some(open) if open == ch => None,
                Some(open) => Some(open),
                None => Some(ch),
            };
        }
        if let Some((level, title)) = heading {
            let closes = section.is_some_and(|(_, open)| level <= open);
            if section.is_none() || closes {
                let kind = kind_of(&title);
                section = (kind != Kind::Kept).then_some((kind, level));
                after_blank = true;
                paragraph_item = false;
                if kind != Kind::Kept {
                    continue;
                }
            }
        }
        // A link reference definition (`[name]: target`): rustdoc shows nothing for it.
        if fence.is_none() && is_link_definition(trimmed) {
            continue;
        }
        match section {
            None | Some((Kind::Kept, _)) => keep(&mut kept, &line, span),
            Some((Kind::Dropped, _)) => {}
            Some((Kind::Arguments, _)) => {
                if trimmed.is_empty() {
                    after_blank = true;
                    continue;
                }
                if let Some((name, text)) = list_item(trimmed) {
                    arguments.push(Item { name, text, span });
                    after_blank = false;
                    paragraph_item = false;
                    prose = false;
                    continue;
                }
                if after_blank && let Some((name, text)) = paragraph_item_of(trimmed) {
                    arguments.push(Item { name, text, span });
                    after_blank = false;
                    paragraph_item = true;
                    prose = false;
                    continue;
                }
                let indented = body.len() - trimmed.len() >= 2;
                match arguments.last_mut() {
                    // A list item ends at a blank line unless the next line is indented; a
                    // paragraph item goes on until the next item.
                    Some(item) if !prose && (!after_blank || indented || paragraph_item) => {
                        // The item goes on; a blank line inside it is a paragraph break.
                        item.text.push_str(if after_blank { "\n\n" } else { "\n" });
                        item.text.push_str(trimmed);
                    }
                    // Prose of the section, around its list: the tool's description keeps it.
                    _ => {
                        keep(&mut kept, &line, span);
                        prose = true;
                    }
                }
                after_blank = false;
            }
        }
    }
    // Blank lines left before a dropped section at the end.
    while let Some(Expr::Lit(ExprLit {
        lit: Lit::Str(last),
        ..
    })) = kept.last()
    {
        if last.value().trim().is_empty() {
            kept.pop();
        } else {
            break;
        }
    }
    Some(Sections { kept, arguments })
}

/// A Markdown heading's level and title.
fn heading(line: &str) -> Option<(usize, String)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let title = line[level..].strip_prefix(' ')?;
    Some((
        level,
        title.trim().trim_end_matches(':').to_ascii_lowercase(),
    ))
}

fn kind_of(title: &str) -> Kind {
    if ARGUMENT_HEADINGS.contains(&title) {
        Kind::Arguments
    } else if DROPPED_HEADINGS.contains(&title) {
        Kind::Dropped
    } else {
        Kind::Kept
    }
}

/// Whether a line is a Markdown link reference definition: `[label]: target`.
fn is_link_definition(line: &str) -> bool {
    line.starts_with('[')
        && line
            .find("]: ")
            .is_some_and(|end| end > 1 && !line[end + 3..].trim().is_empty())
}

/// A paragraph naming a parameter in a code span at its start: `` `name` - text ``,
/// `` `name: Type`: text ``, or `` `name` is ... `` (the whole sentence is the text).
fn paragraph_item_of(line: &str) -> Option<(String, String)> {
    let inner = line.strip_prefix('`')?;
    let end = inner.find('`')?;
    let span = &inner[..end];
    let name = span.split(':').next().unwrap_or(span).trim();
    if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    let rest = inner[end + 1..].trim_start();
    let text = ["--", "-", "–", "—", ":"]
        .iter()
        .find_map(|sep| rest.strip_prefix(sep))
        .map_or_else(|| line.to_owned(), |text| text.trim().to_owned());
    Some((name.to_owned(), text))
}

/// A list item naming a parameter: `` * `name` - text ``, `` - `name`: text ``, `* name -- text`,
/// `` * `name` (type) - text ``, `` * `name: Type` - text `` and the dash forms `–` and `—`.
fn list_item(line: &str) -> Option<(String, String)> {
    let rest = ["* ", "- ", "+ "]
        .iter()
        .find_map(|bullet| line.strip_prefix(bullet))?
        .trim_start();
    let (name, rest) = if let Some(inner) = rest.strip_prefix('`') {
        let end = inner.find('`')?;
        let span = &inner[..end];
        // `name: Type` in one code span.
        let name = span.split(':').next().unwrap_or(span).trim();
        (name, &inner[end + 1..])
    } else {
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        (&rest[..end], &rest[end..])
    };
    if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    let mut rest = rest.trim_start();
    // A type in parentheses after the name.
    if rest.starts_with('(')
        && let Some(close) = rest.find(')')
    {
        rest = rest[close + 1..].trim_start();
    }
    let text = ["--", "-", "–", "—", ":"]
        .iter()
        .find_map(|sep| rest.strip_prefix(sep))?;
    Some((name.to_owned(), text.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::list_item;

    #[test]
    fn list_items_in_the_forms_crates_write() {
        let item = |line| list_item(line).map(|(n, t)| format!("{n}={t}"));
        assert_eq!(item("* `path` - A path."), Some("path=A path.".into()));
        assert_eq!(item("- `path`: A path."), Some("path=A path.".into()));
        assert_eq!(item("* path - A path."), Some("path=A path.".into()));
        assert_eq!(item("+ `path` — A path."), Some("path=A path.".into()));
        assert_eq!(
            item("* `path` (String) - A path."),
            Some("path=A path.".into())
        );
        assert_eq!(
            item("* `path: &str` - A path."),
            Some("path=A path.".into())
        );
        assert_eq!(item("* `path` -- A path."), Some("path=A path.".into()));
        assert_eq!(item("* just prose here"), None);
        assert_eq!(item("text"), None);
    }

    #[test]
    fn paragraphs_naming_a_parameter() {
        use super::paragraph_item_of as item;
        let item = |line| item(line).map(|(n, t)| format!("{n}={t}"));
        assert_eq!(
            item("`path` - Path to a file"),
            Some("path=Path to a file".into())
        );
        assert_eq!(
            item("`token: Token`: The caller picks."),
            Some("token=The caller picks.".into())
        );
        assert_eq!(
            item("`worker` is the index of the worker."),
            Some("worker=`worker` is the index of the worker.".into())
        );
        assert_eq!(item("`a.b` - no"), None);
        assert_eq!(item("plain"), None);
        assert!(super::is_link_definition(
            "[`poll`]: struct.Poll.html#method.poll"
        ));
        assert!(!super::is_link_definition("[a link](x) in prose"));
    }
}
