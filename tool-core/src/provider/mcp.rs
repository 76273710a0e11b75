//! Model Context Protocol 2025-11-25 `Tool`: the canonical schema is already what MCP takes
//! (JSON Schema 2020-12 with an object root).

use serde_json::{Map, Value};

use crate::tool::ToolDefinition;

pub(super) fn tool(def: &ToolDefinition) -> Value {
    let mut tool = Map::new();
    tool.insert("name".into(), def.name().into());
    if let Some(title) = def.title() {
        tool.insert("title".into(), title.into());
    }
    tool.insert("description".into(), def.description().into());
    tool.insert("inputSchema".into(), def.input_schema().clone());
    if let Some(output) = def.output_schema().filter(|s| is_object_root(s)) {
        tool.insert("outputSchema".into(), output.clone());
    }
    let annotations = def.annotations().to_mcp();
    if !annotations.is_empty() {
        tool.insert("annotations".into(), Value::Object(annotations));
    }
    Value::Object(tool)
}

/// MCP restricts `outputSchema` (and `structuredContent`) to objects.
pub(super) fn is_object_root(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}
