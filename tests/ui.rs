//! Compile errors of `#[tool]`, compared with the `.stderr` files under `tests/ui/`.
//!
//! The expected output was recorded with rustc 1.95; other compilers word diagnostics
//! differently, so the comparison runs only there (regenerate with `TRYBUILD=overwrite`).
//! The expected errors are the same with the default features and with every feature;
//! `scripts/test.sh` runs the cases with the default features, as a user's crate builds.

#[test]
fn ui() {
    let version =
        std::process::Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
            .arg("--version")
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
            .unwrap_or_default();
    if !version.starts_with("rustc 1.95.") {
        eprintln!(
            "skipping the compile-fail tests: they are pinned to rustc 1.95, found {version:?}"
        );
        return;
    }
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/**/*.rs");
    cases.pass("tests/ui-pass/*.rs");
}

/// No expected compile error names the module the generated code goes through: a user writes
/// `toolsmith::...` and must read the same in rustc's messages.
#[test]
fn no_expected_error_names_the_hidden_module() {
    fn stderr_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stderr_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "stderr") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    stderr_files(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui"),
        &mut files,
    );
    assert!(files.len() > 30, "{} .stderr files", files.len());
    let named: Vec<String> = files
        .iter()
        .filter(|path| std::fs::read_to_string(path).unwrap().contains("__private"))
        .map(|path| path.display().to_string())
        .collect();
    assert!(named.is_empty(), "these name `__private`: {named:?}");
}
