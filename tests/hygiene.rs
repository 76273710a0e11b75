//! Generated code names everything by absolute path: shadowing prelude items, `serde_json`,
//! `serde`, `schemars` or `toolsmith` in the user's module breaks nothing.
#![allow(dead_code, non_camel_case_types, unused_macros, clippy::all)]

mod shadowed {
    pub struct Result;
    pub struct Option;
    pub struct Some;
    pub struct None;
    pub struct Ok;
    pub struct Err;
    pub struct Box;
    pub struct Vec;
    pub struct String;
    pub struct Default;
    pub struct Clone;
    pub mod serde_json {}
    pub mod serde {}
    pub mod schemars {}
    pub mod core {}
    pub mod std {}
    pub mod toolsmith {}
    macro_rules! concat {
        () => {};
    }
    macro_rules! unreachable {
        () => {};
    }

    /// Echoes a word.
    #[::toolsmith::tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
    pub async fn echo(
        /// The word.
        #[arg(length(min = 1, max = 10), default = "hi")]
        word: ::std::string::String,
        /// Repeats.
        #[arg(range(min = 1, max = 3))]
        times: ::core::option::Option<u8>,
    ) -> ::core::result::Result<::std::string::String, ::toolsmith::ToolError> {
        ::core::result::Result::Ok(word.repeat(usize::from(times.unwrap_or(1))))
    }
}

#[tokio::test]
async fn works_with_shadowed_names() {
    let toolbox = toolsmith::Toolbox::new().with(shadowed::Echo);
    let out = toolbox
        .call("echo", r#"{"times":2}"#, &toolsmith::ToolContext::default())
        .await;
    assert_eq!(out.to_json(), r#"{"status":"success","data":"hihi"}"#);
}
