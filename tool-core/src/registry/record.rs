//! The registry's data: one record per tool, and its files.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::spec::ToolExample;
use crate::toolbox::Toolbox;

/// One tool as the registry keeps it: everything a reviewer of its contract reads.
///
/// ```
/// #[toolsmith::tool(effect = "read", version = "1.0.0", example = r#"{"city": "Oslo"}"#)]
/// /// The weather in a city now. Not for forecasts.
/// fn current_weather(
///     /// The city.
///     #[arg(length(max = 80))]
///     city: String,
/// ) -> String {
///     city
/// }
/// let registry = toolsmith::registry::Registry::of(&toolsmith::Toolbox::new().with(CurrentWeather));
/// let record = &registry.tools["current_weather"];
/// assert_eq!(record.version.as_deref(), Some("1.0.0"));
/// assert_eq!(record.risk.effect.as_deref(), Some("read"));
/// assert_eq!(record.examples.len(), 1);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolRecord {
    /// The tool's name.
    pub name: String,
    /// Its declared version (`#[tool(version = "1.2.0")]`), a semantic version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Its title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the model reads.
    pub description: String,
    /// The behaviour hints, as MCP names them (`readOnlyHint`, ...).
    #[serde(default)]
    pub annotations: Map<String, Value>,
    /// What the tool may do, and who may call it.
    pub risk: Risk,
    /// How the runtime runs it.
    pub policy: Policy,
    /// The canonical input schema (JSON Schema 2020-12). Kept in `input.schema.json`.
    #[serde(skip)]
    pub input_schema: Value,
    /// The output schema, when the tool declares one. Kept in `output.schema.json`.
    #[serde(skip)]
    pub output_schema: Option<Value>,
    /// Example calls. Kept in `examples.jsonl`, one per line.
    #[serde(skip)]
    pub examples: Vec<ToolExample>,
}

/// A tool's risk metadata.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Risk {
    /// `read`, `write` or `destructive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    /// Whether it reaches outside systems the operator does not control.
    #[serde(default)]
    pub open_world: bool,
    /// The class of data it handles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_classification: Option<String>,
    /// The scopes a caller needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Whether a person approves each call.
    #[serde(default)]
    pub requires_approval: bool,
}

/// A tool's runtime policy, as declared and as the toolbox overrides it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Policy {
    /// Time per attempt, in milliseconds (unset: the toolbox's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Attempts per call (unset: the toolbox's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    /// Calls at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<usize>,
    /// Runs alone.
    #[serde(default)]
    pub sequential: bool,
    /// The tool called when this one fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// Whether repeating a call is safe (the `idempotentHint`).
    #[serde(default)]
    pub idempotent: bool,
}

/// Every tool of a toolbox, by name.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Registry {
    /// The tools, sorted by name.
    pub tools: BTreeMap<String, ToolRecord>,
}

/// Why a registry could not be read or written.
#[derive(Debug)]
#[non_exhaustive]
pub struct RegistryError {
    path: PathBuf,
    problem: String,
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.problem)
    }
}

impl std::error::Error for RegistryError {}

fn error(path: &Path, problem: impl fmt::Display) -> RegistryError {
    RegistryError {
        path: path.to_owned(),
        problem: problem.to_string(),
    }
}

const TOOL_FILE: &str = "tool.json";
const INPUT_FILE: &str = "input.schema.json";
const OUTPUT_FILE: &str = "output.schema.json";
const EXAMPLES_FILE: &str = "examples.jsonl";

impl Registry {
    /// The registry of `toolbox`'s tools (enabled or not), with the policy each runs with.
    #[must_use]
    pub fn of(toolbox: &Toolbox) -> Self {
        let tools = toolbox
            .own_definitions()
            .map(|def| {
                let policy = toolbox.policy_of(def);
                let annotations = def.annotations();
                let record = ToolRecord {
                    name: def.name().to_owned(),
                    version: def.version().map(str::to_owned),
                    title: def.title().map(str::to_owned),
                    description: def.description().to_owned(),
                    annotations: annotations.to_mcp(),
                    risk: Risk {
                        effect: def.effect().map(|e| e.as_str().to_owned()),
                        open_world: annotations.open_world == Some(true),
                        data_classification: def.data_classification().map(str::to_owned),
                        scopes: def.scopes().to_vec(),
                        requires_approval: def.requires_approval(),
                    },
                    policy: Policy {
                        timeout_ms: policy
                            .timeout
                            .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
                        max_attempts: policy.max_attempts,
                        concurrency: policy.concurrency,
                        sequential: policy.sequential,
                        fallback: policy.fallback.clone(),
                        idempotent: annotations.idempotent == Some(true),
                    },
                    input_schema: def.input_schema().clone(),
                    output_schema: def.output_schema().cloned(),
                    examples: def.examples().to_vec(),
                };
                (record.name.clone(), record)
            })
            .collect();
        Self { tools }
    }

    /// Each file of the registry, by its path under the registry's folder, with its text:
    /// `<tool>/tool.json`, `<tool>/input.schema.json`, and when the tool has them,
    /// `<tool>/output.schema.json` and `<tool>/examples.jsonl`. JSON with sorted keys, two
    /// spaces, one newline at the end; no timestamps.
    #[must_use]
    pub fn files(&self) -> BTreeMap<String, String> {
        let mut files = BTreeMap::new();
        for (name, record) in &self.tools {
            let meta = serde_json::to_value(record).unwrap_or(Value::Null);
            files.insert(format!("{name}/{TOOL_FILE}"), pretty(&meta));
            files.insert(format!("{name}/{INPUT_FILE}"), pretty(&record.input_schema));
            if let Some(output) = &record.output_schema {
                files.insert(format!("{name}/{OUTPUT_FILE}"), pretty(output));
            }
            if !record.examples.is_empty() {
                let lines: String = record
                    .examples
                    .iter()
                    .map(|e| {
                        let line = sorted(&serde_json::to_value(e).unwrap_or(Value::Null));
                        format!("{line}\n")
                    })
                    .collect();
                files.insert(format!("{name}/{EXAMPLES_FILE}"), lines);
            }
        }
        files
    }

    /// Writes the registry into `dir`: one folder per tool, and no others (a folder of a
    /// tool no longer in the registry is removed).
    ///
    /// # Errors
    ///
    /// A [`RegistryError`] when a file cannot be written, or a tool's name cannot be a folder
    /// name (`.` or `..`).
    pub fn write(&self, dir: impl AsRef<Path>) -> Result<(), RegistryError> {
        let dir = dir.as_ref();
        for name in self.tools.keys() {
            if name == "." || name == ".." {
                return Err(error(dir, format!("`{name}` cannot be a folder name")));
            }
        }
        std::fs::create_dir_all(dir).map_err(|e| error(dir, e))?;
        for entry in std::fs::read_dir(dir).map_err(|e| error(dir, e))? {
            let path = entry.map_err(|e| error(dir, e))?.path();
            let stale = path.is_dir()
                && path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| !self.tools.contains_key(n))
                && path.join(TOOL_FILE).exists();
            if stale {
                std::fs::remove_dir_all(&path).map_err(|e| error(&path, e))?;
            }
        }
        for name in self.tools.keys() {
            let folder = dir.join(name);
            if folder.exists() {
                std::fs::remove_dir_all(&folder).map_err(|e| error(&folder, e))?;
            }
            std::fs::create_dir_all(&folder).map_err(|e| error(&folder, e))?;
        }
        for (file, text) in self.files() {
            let path = dir.join(&file);
            std::fs::write(&path, text).map_err(|e| error(&path, e))?;
        }
        Ok(())
    }

    /// Reads the registry written into `dir` (an absent folder is an empty registry).
    ///
    /// # Errors
    ///
    /// A [`RegistryError`] when a file cannot be read or does not parse.
    pub fn read(dir: impl AsRef<Path>) -> Result<Self, RegistryError> {
        let dir = dir.as_ref();
        let mut tools = BTreeMap::new();
        if !dir.exists() {
            return Ok(Self { tools });
        }
        let mut folders: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| error(dir, e))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join(TOOL_FILE).is_file())
            .collect();
        folders.sort();
        for folder in folders {
            let read = |file: &str| -> Result<Option<String>, RegistryError> {
                let path = folder.join(file);
                match std::fs::read_to_string(&path) {
                    Ok(text) => Ok(Some(text)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(error(&path, e)),
                }
            };
            let parse = |file: &str, text: &str| -> Result<Value, RegistryError> {
                serde_json::from_str(text).map_err(|e| error(&folder.join(file), e))
            };
            let meta = read(TOOL_FILE)?.unwrap_or_default();
            let mut record: ToolRecord = serde_json::from_value(parse(TOOL_FILE, &meta)?)
                .map_err(|e| error(&folder.join(TOOL_FILE), e))?;
            record.input_schema = match read(INPUT_FILE)? {
                Some(text) => parse(INPUT_FILE, &text)?,
                None => return Err(error(&folder.join(INPUT_FILE), "missing")),
            };
            record.output_schema = read(OUTPUT_FILE)?
                .map(|text| parse(OUTPUT_FILE, &text))
                .transpose()?;
            record.examples = read(EXAMPLES_FILE)?
                .unwrap_or_default()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|line| {
                    serde_json::from_str(line).map_err(|e| error(&folder.join(EXAMPLES_FILE), e))
                })
                .collect::<Result<_, _>>()?;
            tools.insert(record.name.clone(), record);
        }
        Ok(Self { tools })
    }
}

/// JSON with its object keys sorted, recursively.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Sorted, indented JSON with a final newline.
fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(&sorted(value)).unwrap_or_default();
    text.push('\n');
    text
}
