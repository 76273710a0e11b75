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

/// The delegation story: the child's delete waits for a person, the parent's run pauses with
/// the call's path, is stored and read back, and the child resumes to delete one ticket.
#[test]
fn the_delegate_example_pauses_resumes_and_deletes_once() {
    let binary = example_binary("delegate");
    assert!(
        binary.exists(),
        "{} is missing: run `cargo test --all-targets` or `cargo build --examples`",
        binary.display()
    );
    let output = Command::new(&binary).output().expect("the example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "delegate failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(
            "waiting for a person: delete_ticket {\"id\":2} at path toolu_helpdesk > call_delete"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("answer: Done: the duplicate (ticket 2) is deleted."),
        "{stdout}"
    );
    assert!(stdout.contains("tickets left: 1"), "{stdout}");
}

/// The recorded stream: one call refused while it streams, one run, one cut off and not run.
#[test]
fn the_streaming_example_refuses_early_and_never_runs_a_cut_off_call() {
    let binary = example_binary("streaming");
    assert!(
        binary.exists(),
        "{} is missing: run `cargo build --examples`",
        binary.display()
    );
    let output = Command::new(&binary).output().expect("the example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "streaming failed:\n{stdout}");
    let refused = stdout
        .lines()
        .position(|l| l.contains("refused: invalid_arguments"))
        .expect(&stdout);
    let whole = stdout
        .lines()
        .position(|l| l.contains("is whole; running it"))
        .expect(&stdout);
    assert!(
        refused < whole,
        "refused before the stream went on: {stdout}"
    );
    assert!(stdout.contains("refused: truncated_arguments"), "{stdout}");
    assert!(stdout.contains("3 calls answered, 1 ran"), "{stdout}");
}

/// The large tool set: deferral costs less on every provider, and the three scripted turns
/// search, append what was found (the cached prefix kept), and call under a forced choice
/// that resets itself.
#[cfg(feature = "tokens")]
#[test]
fn the_large_toolset_example_defers_searches_and_keeps_the_cache() {
    let binary = example_binary("large_toolset");
    assert!(
        binary.exists(),
        "{} is missing: run `cargo build --examples --features tokens`",
        binary.display()
    );
    let output = Command::new(&binary).output().expect("the example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "large_toolset failed:\n{stdout}");
    assert!(
        stdout.starts_with("200 tools, 190 of them deferred"),
        "{stdout}"
    );
    for line in stdout.lines().filter(|l| l.contains("all sent:")) {
        let numbers: Vec<u64> = line
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        assert!(numbers[1] < numbers[0], "deferral costs less: {line}");
    }
    assert!(stdout.contains("appended [\"refunds_archive\""), "{stdout}");
    assert!(stdout.contains("turn 2: 14 tools sent"), "{stdout}");
    assert!(
        stdout.contains("\"name\":\"refunds_archive\"}}"),
        "forced in turn 2: {stdout}"
    );
    assert!(
        stdout.contains("turn 3: 14 tools sent") && stdout.contains("tool_choice auto, tools"),
        "{stdout}"
    );
    assert!(
        stdout.contains("tools unchanged: the cached prefix is used"),
        "{stdout}"
    );
}

/// The durable story: a run killed (SIGKILL) while it waits for a person, the decision made
/// with who and why from a third process, the run finished by a second one; one note and one
/// deletion applied. Needs `redis-server`, as `scripts/test.sh` installs it.
#[test]
fn the_durable_example_survives_its_process_being_killed() {
    let binary = example_binary("durable");
    if !binary.exists() {
        eprintln!("the durable example is not built (feature `redis`): skipping");
        return;
    }
    if std::process::Command::new("redis-server")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("TOOLSMITH_REQUIRE_REDIS").is_none(),
            "redis-server is required"
        );
        return;
    }
    let output = Command::new(&binary).output().expect("the example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "durable failed:\n{stdout}");
    assert!(stdout.contains("KILLME paused"), "{stdout}");
    assert!(
        stdout.contains(
            "ANSWER Done. ticket 7 is open | done: note on 7: duplicate of 6 | done: deleted 7"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            r#"audit: "delete_ticket" "success" {"approver":"lin@example.com","decision":"approved","reason":"checked with the customer"}"#
        ) || stdout.contains(
            r#"audit: "delete_ticket" "success" {"decision":"approved","approver":"lin@example.com","reason":"checked with the customer"}"#
        ),
        "{stdout}"
    );
    assert!(stdout.contains("effects applied: 2"), "{stdout}");
}

/// The same story on Restate: the service killed while its run waits, a second process
/// taking over, the decision given through Restate's ingress. Needs the Restate server, as
/// `scripts/test.sh` installs it.
#[test]
fn the_restate_example_survives_its_service_being_killed() {
    let binary = example_binary("restate");
    if !binary.exists() {
        eprintln!("the restate example is not built (feature `restate`): skipping");
        return;
    }
    let installed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "target/restate/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server",
    );
    if std::env::var_os("TOOLSMITH_RESTATE_SERVER").is_none() && !installed.exists() {
        assert!(
            std::env::var_os("TOOLSMITH_REQUIRE_RESTATE").is_none(),
            "restate-server is required"
        );
        return;
    }
    let output = Command::new(&binary).output().expect("the example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "restate failed:\n{stdout}");
    assert!(stdout.contains("KILLME paused"), "{stdout}");
    assert!(
        stdout.contains(r#""answer":"Done. ticket 7 is open | done: note on 7: duplicate of 6 | done: deleted 7""#),
        "{stdout}"
    );
    assert!(
        stdout.contains(r#""approver":"lin@example.com""#)
            && stdout.contains(r#""reason":"checked with the customer""#),
        "{stdout}"
    );
    assert!(stdout.contains("effects applied: 2"), "{stdout}");
}

/// Code mode end to end: the program's nine calls and answer, and in each dialect the input
/// tokens of the question asked one call at a time, in parallel, and as one program.
#[test]
fn the_code_mode_example_answers_with_one_program_for_far_fewer_tokens() {
    let binary = example_binary("code_mode");
    if !binary.exists() {
        eprintln!("the code_mode example is not built (features `sandbox`, `tokens`): skipping");
        return;
    }
    let output = Command::new(&binary).output().expect("the example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "code_mode failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("\"total_arr_usd\":23600"), "{stdout}");
    assert!(
        stdout.contains("tool calls made by the program: 9"),
        "{stdout}"
    );
    let rows: Vec<&str> = stdout.lines().filter(|l| l.contains(" fewer")).collect();
    assert_eq!(rows.len(), 4, "one row per dialect:\n{stdout}");
    for row in rows {
        let percents: Vec<f64> = row
            .split_whitespace()
            .zip(row.split_whitespace().skip(1))
            .filter(|(_, next)| *next == "%")
            .map(|(n, _)| n.parse().expect("a percentage"))
            .collect();
        assert_eq!(percents.len(), 2, "{row}");
        assert!(
            percents[0] >= 60.0,
            "one call at a time: at least 60 % fewer: {row}"
        );
        assert!(percents[1] > 0.0, "parallel calls: fewer still: {row}");
    }
}
