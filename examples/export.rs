//! Prints the quickstart's tools as one provider takes them: one JSON document on stdout.
//!
//! `cargo run --example export -- <dialect>`, with dialect one of `openai`, `openai-strict`,
//! `openai-responses`, `openai-responses-strict`, `anthropic`, `anthropic-strict`, `gemini`, `mcp`.

mod telemetry;
mod tools;

use std::process::ExitCode;

use toolsmith::Dialect;

fn main() -> ExitCode {
    let _telemetry = telemetry::export();
    let Some(name) = std::env::args().nth(1) else {
        let names: Vec<&str> = Dialect::ALL.iter().map(|d| d.name()).collect();
        eprintln!(
            "usage: cargo run --example export -- <dialect>\ndialects: {}",
            names.join(", ")
        );
        return ExitCode::from(2);
    };
    let dialect: Dialect = match name.parse() {
        Ok(dialect) => dialect,
        Err(err) => {
            eprintln!("{err}");
            return ExitCode::from(2);
        }
    };
    match tools::toolbox().export(dialect) {
        Ok(json) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&json).unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("{err}");
            ExitCode::FAILURE
        }
    }
}
