//! Values across the sandbox's edge: a tool's JSON result as the interpreter's objects, and
//! the program's objects (a call's keyword arguments, its answer) as JSON.
//!
//! Only what JSON can say crosses: `None`, booleans, integers, floats, strings, lists and
//! tuples (as arrays) and dicts with string keys. Anything else (a set, bytes, a date, a
//! function) is refused with a message naming the type and where it was, so the program can
//! convert it itself.

use monty_types::MontyObject;
use num_bigint::BigInt;
use serde_json::{Map, Number, Value};

/// How deep a program's value may nest before it is refused: deeper than any tool's
/// arguments need, and shallow enough for the conversion to recurse safely.
const MAX_DEPTH: usize = 64;

/// A tool's result as the program's value.
pub(super) fn to_object(value: &Value) -> MontyObject {
    match value {
        Value::Null => MontyObject::None,
        Value::Bool(b) => MontyObject::Bool(*b),
        Value::Number(n) => number_object(n),
        Value::String(s) => MontyObject::String(s.clone()),
        Value::Array(items) => MontyObject::List(items.iter().map(to_object).collect()),
        Value::Object(map) => MontyObject::Dict(
            map.iter()
                .map(|(k, v)| (MontyObject::String(k.clone()), to_object(v)))
                .collect::<Vec<_>>()
                .into(),
        ),
    }
}

fn number_object(n: &Number) -> MontyObject {
    if let Some(i) = n.as_i64() {
        MontyObject::Int(i)
    } else if let Some(u) = n.as_u64() {
        MontyObject::BigInt(BigInt::from(u))
    } else {
        MontyObject::Float(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// The program's value as JSON, or what in it JSON cannot hold, at which path.
pub(super) fn to_json(object: &MontyObject) -> Result<Value, String> {
    convert(object, 0).map_err(|problem| {
        let at = if problem.path.is_empty() {
            "the value".to_owned()
        } else {
            format!("the value at {}", problem.path)
        };
        format!("{at} {}", problem.what)
    })
}

/// What JSON cannot hold, and where: the path is written only on the way out of a refusal,
/// so a value that converts costs no path at all.
struct Problem {
    path: String,
    what: String,
}

impl Problem {
    fn new(what: String) -> Self {
        Self {
            path: String::new(),
            what,
        }
    }

    /// The problem one step further out, under `step` (`[3]`, `["name"]`).
    fn under(mut self, step: impl std::fmt::Display) -> Self {
        self.path = format!("{step}{}", self.path);
        self
    }
}

fn convert(object: &MontyObject, depth: usize) -> Result<Value, Problem> {
    if depth > MAX_DEPTH {
        return Err(Problem::new(format!(
            "nests deeper than {MAX_DEPTH} levels"
        )));
    }
    Ok(match object {
        MontyObject::None => Value::Null,
        MontyObject::Bool(b) => Value::Bool(*b),
        MontyObject::Int(i) => Value::from(*i),
        MontyObject::BigInt(big) => {
            let text = big.to_string();
            match text.parse::<u64>() {
                Ok(u) => Value::from(u),
                Err(_) => {
                    return Err(Problem::new(format!(
                        "is an integer too large for JSON ({} digits)",
                        text.trim_start_matches('-').len()
                    )));
                }
            }
        }
        MontyObject::Float(f) => match Number::from_f64(*f) {
            Some(n) => Value::Number(n),
            None => return Err(Problem::new(format!("is {f}, which JSON cannot hold"))),
        },
        MontyObject::String(s) => Value::String(s.clone()),
        MontyObject::List(items) | MontyObject::Tuple(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    convert(item, depth + 1).map_err(|p| p.under(format_args!("[{i}]")))
                })
                .collect::<Result<_, _>>()?,
        ),
        MontyObject::Dict(pairs) => {
            let mut out = Map::new();
            for (key, value) in pairs.iter() {
                let MontyObject::String(key) = key else {
                    return Err(Problem::new(format!(
                        "has a key of type {}; only string keys cross to JSON",
                        type_name(key)
                    )));
                };
                let value = convert(value, depth + 1)
                    .map_err(|p| p.under(format_args!("[{:?}]", crate::echo::echo(key))))?;
                out.insert(key.clone(), value);
            }
            Value::Object(out)
        }
        other => {
            return Err(Problem::new(format!(
                "is a {}, which JSON cannot hold; convert it to a string, number, list or dict",
                type_name(other)
            )));
        }
    })
}

/// The Python type name of an object, for messages.
pub(super) fn type_name(object: &MontyObject) -> &'static str {
    match object {
        MontyObject::None => "NoneType",
        MontyObject::Bool(_) => "bool",
        MontyObject::Int(_) | MontyObject::BigInt(_) => "int",
        MontyObject::Float(_) => "float",
        MontyObject::String(_) => "str",
        MontyObject::Bytes(_) => "bytes",
        MontyObject::List(_) => "list",
        MontyObject::Tuple(_) | MontyObject::NamedTuple { .. } => "tuple",
        MontyObject::Dict(_) => "dict",
        MontyObject::Set(_) => "set",
        MontyObject::FrozenSet(_) => "frozenset",
        MontyObject::Date(_) => "date",
        MontyObject::DateTime(_) => "datetime",
        MontyObject::Time(_) => "time",
        MontyObject::TimeDelta(_) => "timedelta",
        MontyObject::Function { .. } | MontyObject::BuiltinFunction(_) => "function",
        MontyObject::Exception { .. } => "exception",
        MontyObject::Type(_) => "type",
        _ => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_round_trips_through_objects() {
        let value =
            json!({"a": [1, -2, 1.5, "x", null, true], "b": {"c": 18446744073709551615u64}});
        assert_eq!(to_json(&to_object(&value)).unwrap(), value);
    }

    #[test]
    fn what_json_cannot_hold_is_named_with_its_path() {
        let set = MontyObject::Dict(
            vec![(
                MontyObject::String("tags".into()),
                MontyObject::List(vec![MontyObject::Set(vec![])]),
            )]
            .into(),
        );
        let err = to_json(&set).unwrap_err();
        assert!(err.contains("[\"tags\"][0] is a set"), "{err}");
        assert!(to_json(&MontyObject::Float(f64::NAN)).is_err());
        let key = MontyObject::Dict(vec![(MontyObject::Int(1), MontyObject::None)].into());
        assert!(to_json(&key).unwrap_err().contains("key of type int"));
    }

    #[test]
    fn a_long_key_in_a_refusal_is_cut_short() {
        let key = "k".repeat(100_000);
        let object =
            MontyObject::Dict(vec![(MontyObject::String(key), MontyObject::Set(vec![]))].into());
        let err = to_json(&object).unwrap_err();
        assert!(err.len() < 1_000, "{} bytes", err.len());
        assert!(
            err.ends_with("convert it to a string, number, list or dict"),
            "{err}"
        );
    }

    #[test]
    fn deep_values_are_refused_not_recursed() {
        let mut object = MontyObject::None;
        for _ in 0..10_000 {
            object = MontyObject::List(vec![object]);
        }
        assert!(to_json(&object).unwrap_err().contains("deeper than 64"));
        // Dropping a deep tree recurses in the interpreter's own type; keep it out of the
        // test's stack by unwinding it here.
        let mut cur = object;
        while let MontyObject::List(mut items) = cur {
            cur = items.pop().unwrap_or(MontyObject::None);
        }
    }
}
