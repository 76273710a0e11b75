//! JSON as Python source, for programs that call tools with given arguments.

use std::fmt::Write as _;

use serde_json::Value;

/// `value` as a Python literal: `None`, `True`, numbers, strings, lists and dicts.
pub fn literal(value: &Value) -> String {
    let mut out = String::new();
    write_literal(value, &mut out);
    out
}

fn write_literal(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => out.push_str(&quoted(s)),
        Value::Array(items) => {
            out.push('[');
            for item in items {
                write_literal(item, out);
                out.push_str(", ");
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (k, v) in map {
                write!(out, "{}: ", quoted(k)).unwrap();
                write_literal(v, out);
                out.push_str(", ");
            }
            out.push('}');
        }
    }
}

/// A JSON string is a Python string literal too.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}
