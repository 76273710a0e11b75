// Compiles: a destructive tool that takes an `environment` enum.
use toolsmith::{Toolbox, tool};

/// Where the tool acts.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Environment {
    Staging,
    Production,
}

/// Deletes a note. Irreversible. Not for archiving.
#[tool(effect = "destructive")]
fn delete_note(
    /// Where to delete it.
    environment: Environment,
    /// The note id.
    id: u64,
) -> u64 {
    match environment {
        Environment::Staging | Environment::Production => id,
    }
}

fn main() {
    let toolbox = Toolbox::new().with(DeleteNote);
    assert!(toolbox.lint().is_empty(), "{:?}", toolbox.lint());
}
