//! Running a Python oracle script (`scripts/test.sh` sets `TOOLSMITH_ORACLES` to the
//! interpreter of the virtualenv it makes under `target/`).

use std::ffi::OsStr;
use std::process::Command;

/// The oracle interpreter, or `None` (after saying so) when the tests run without one.
pub fn python(what: &str) -> Option<std::ffi::OsString> {
    let python = std::env::var_os("TOOLSMITH_ORACLES");
    if python.is_none() {
        eprintln!("TOOLSMITH_ORACLES is not set: skipping {what} (scripts/test.sh runs it)");
    }
    python
}

/// Runs `script` (a path under `tests/`) with `args`; fails the test unless the script exits
/// 0 and its tally reports no failure. Prints the script's report either way.
pub fn run(python: &OsStr, script: &str, args: &[&OsStr], what: &str) {
    let script = format!("{}/tests/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .expect("the oracle interpreter runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}");
    assert!(
        out.status.success(),
        "{what} found problems:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}
