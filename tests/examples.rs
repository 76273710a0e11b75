//! The examples that tell a whole story run to the end: `agent_turn` asserts its own outcome
//! (the email sent once, the duplicate ticket deleted after approval), so running it is the test.

use std::process::Command;

/// The example's binary, built beside this test by `cargo test --all-targets` (and by
/// `scripts/test.sh` before the tests).
fn example_binary(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let dir = exe
        .parent()
        .and_then(std::path::Path::parent)
        .expect("target/<profile>/deps");
    dir.join("examples").join(name)
}

#[test]
fn the_agent_turn_example_completes_its_loop() {
    let binary = example_binary("agent_turn");
    assert!(
        binary.exists(),
        "{} is missing: run `cargo test --all-targets` or `cargo build --examples`",
        binary.display()
    );
    let output = Command::new(&binary).output().expect("the example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "agent_turn failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("\"code\":\"invalid_arguments\""),
        "{stdout}"
    );
    assert!(
        stdout.contains("approval asked: tickets.delete"),
        "{stdout}"
    );
    assert!(stdout.contains("assistant: \"Ticket 2 is open"), "{stdout}");
}
