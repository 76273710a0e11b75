//! The sources keep their shape: no function of the runtime or the macro is over 150 lines. A
//! longer one is split by shape, as serde_derive splits its expansion (docs/architecture.md).

use std::path::{Path, PathBuf};

const MAX_LINES: usize = 150;

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Each function's name and length in lines: from its `fn` line to the `}` at its indent.
fn functions(text: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let rest = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .find_map(|p| trimmed.strip_prefix(p))
            .unwrap_or(trimmed);
        let rest = rest.strip_prefix("async ").unwrap_or(rest);
        let rest = rest.strip_prefix("const ").unwrap_or(rest);
        let Some(signature) = rest.strip_prefix("fn ") else {
            continue;
        };
        let name: String = signature
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // A declaration without a body (a trait's) ends on its own line.
        if line.trim_end().ends_with(';') {
            continue;
        }
        let close = format!("{indent}}}");
        if let Some(end) = lines[i + 1..].iter().position(|l| *l == close) {
            out.push((name, end + 2));
        }
    }
    out
}

#[test]
fn no_function_is_over_150_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["tool-core/src", "tool-macros/src", "src"] {
        sources(&root.join(dir), &mut files);
    }
    let mut long = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a source file");
        for (name, lines) in functions(&text) {
            if lines > MAX_LINES {
                long.push(format!(
                    "{}: `{name}` is {lines} lines",
                    file.strip_prefix(root).unwrap_or(&file).display()
                ));
            }
        }
    }
    assert!(
        long.is_empty(),
        "split these by shape:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_length_is_read_as_written() {
    let text = "fn short() {\n    one();\n}\n\nimpl X {\n    pub(crate) async fn two(\n        a: u8,\n    ) {\n        a;\n    }\n}\n";
    assert_eq!(
        functions(text),
        [("short".to_owned(), 3), ("two".to_owned(), 5)]
    );
}

/// The MCP server is kept in rooms (docs/architecture.md): no file of it is over 600 lines.
#[test]
fn no_file_of_the_mcp_server_is_over_600_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("tool-core/src/mcp"), &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let lines = std::fs::read_to_string(file)
                .expect("a source file")
                .lines()
                .count();
            (lines > 600).then(|| {
                format!(
                    "{}: {lines} lines",
                    file.strip_prefix(root).unwrap_or(file).display()
                )
            })
        })
        .collect();
    assert!(
        long.is_empty(),
        "split these into rooms:\n{}",
        long.join("\n")
    );
}
