//! Snapshots of every dialect's JSON for a representative set of tools: flat with constraints,
//! nested structs, a data enum, an integer enum, a recursive type, no parameters, an output
//! schema and an open map. A change in any export shows up as a reviewed diff.

#[path = "common/shapes.rs"]
mod common;

use serde_json::{Map, Value};
use toolsmith::Dialect;

const TOOLS: &[&str] = &[
    "search",
    "locate",
    "draw",
    "set_level",
    "walk",
    "ping",
    "forecast",
    "count_words",
];

#[test]
fn every_dialect() {
    let toolbox = common::toolbox();
    for dialect in Dialect::ALL {
        let mut exported = Map::new();
        for name in TOOLS {
            let def = toolbox
                .resolve(Dialect::Mcp, name)
                .expect("a shape")
                .definition();
            let value = match def.export(dialect) {
                Ok(tool) => tool.clone(),
                Err(err) => Value::String(format!("error: {err}")),
            };
            exported.insert((*name).to_owned(), value);
        }
        insta::assert_json_snapshot!(dialect.name(), exported);
    }
}
