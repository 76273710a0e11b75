//! The quickstart's tools are lint-clean at run time too (`Toolbox::lint` sees the resolved
//! schemas: nested types, array items), the way a user's own test suite would check theirs.

#[path = "../examples/tools/mod.rs"]
#[allow(dead_code)]
mod tools;

#[test]
fn quickstart_tools_are_lint_clean() {
    tools::toolbox().assert_lint_clean();
}
