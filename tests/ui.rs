//! Compile errors of `#[tool]`, compared with the `.stderr` files under `tests/ui/`.
//!
//! The expected output was recorded with rustc 1.95; other compilers word diagnostics
//! differently, so the comparison runs only there (regenerate with `TRYBUILD=overwrite`).

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
