//! Exporting definitions: a cached per-tool export, and a whole toolbox of 1,000 tools in each
//! dialect (as request-ready text, and once as an owned `serde_json::Value`), and the first
//! build of them all.
//!
//! `cargo bench --bench export`; the per-tool figures and limits are printed at the end.

mod support;

use std::hint::black_box;

use criterion::Criterion;
use serde_json::{Value, json};
use toolsmith::{Dialect, ToolDefinition, Toolbox};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 2, "maxLength": 300,
                      "description": "Search keywords in natural language; never a URL or SQL."},
            "num_results": {"type": ["integer", "null"], "minimum": 1, "maximum": 10, "default": 5,
                            "description": "How many results to return."},
            "date_restrict": {"anyOf": [{"$ref": "#/$defs/DateRestrict"}, {"type": "null"}],
                              "description": "Only results from this recent window; omit for no limit."}
        },
        "required": ["query"],
        "additionalProperties": false,
        "$defs": {"DateRestrict": {"type": "string", "enum": ["d1", "w1", "m1"],
                                   "description": "A recent time window."}}
    })
}

fn toolbox(n: usize) -> Toolbox {
    let mut toolbox = Toolbox::new();
    for i in 0..n {
        let def = ToolDefinition::new(
            format!("search_source_{i:04}"),
            "Search one source for real-time information. Read-only. Not for private documents.",
            schema(),
        );
        toolbox
            .register(support::Defined(def))
            .expect("distinct names");
    }
    toolbox
}

const TOOLS: usize = 1000;

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let toolbox = toolbox(TOOLS);
    // First build of every export, then the cached ones are measured.
    for dialect in Dialect::ALL {
        let _ = toolbox.export(dialect);
    }
    let mut group = c.benchmark_group("export");
    group.bench_function("cached_definition_1000", |b| {
        b.iter(|| {
            for def in toolbox.definitions() {
                black_box(
                    def.export(black_box(Dialect::OpenAiChat { strict: true }))
                        .is_ok(),
                );
            }
        });
    });
    for dialect in Dialect::ALL {
        group.bench_function(format!("text_1000_{dialect}"), |b| {
            b.iter(|| toolbox.export_text(black_box(dialect)));
        });
    }
    group.bench_function("value_1000_openai-strict", |b| {
        b.iter(|| toolbox.export(black_box(Dialect::OpenAiChat { strict: true })));
    });
    group.sample_size(10);
    group.bench_function("first_build_1000_openai-strict", |b| {
        b.iter_batched(
            toolbox_fresh,
            |fresh| fresh.export(Dialect::OpenAiChat { strict: true }),
            criterion::BatchSize::LargeInput,
        );
    });
    group.finish();
    c.final_summary();

    println!("\nExport, {TOOLS} tools");
    support::report_limit(
        "export/cached_definition_1000",
        TOOLS as f64,
        50.0,
        "per tool",
    );
    for dialect in Dialect::ALL {
        support::report_limit(
            &format!("export/text_1000_{dialect}"),
            1.0,
            1_000_000.0,
            "per toolbox, as text",
        );
    }
    support::report_limit(
        "export/value_1000_openai-strict",
        1.0,
        f64::INFINITY,
        "per toolbox, as an owned Value",
    );
    support::report_limit(
        "export/first_build_1000_openai-strict",
        1.0,
        f64::INFINITY,
        "per toolbox, nothing cached",
    );
}

fn toolbox_fresh() -> Toolbox {
    toolbox(TOOLS)
}
