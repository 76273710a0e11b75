#![doc = include_str!("../docs/crate.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// The runtime's public API, as it is: the core path at the root, everything else under its
// module (`policy`, `audit`, `idempotency`, `provider`, `lint`, `mcp`, `testing`).
pub use toolsmith_core::*;

/// Re-exported for hand-written tools and hosts: schemas, parsed arguments and results are
/// `serde_json::Value`s, so depending on `toolsmith` alone is enough.
///
/// ```
/// use toolsmith::serde_json::json;
/// let schema = json!({"type": "object", "properties": {}});
/// assert!(toolsmith::ToolDefinition::new("t", "d", schema).problem().is_none());
/// ```
pub use serde_json;

#[doc = include_str!("../docs/tool-attribute.md")]
pub use toolsmith_macros::tool;

// The traits a parameter's type must have and the reader whose bound asks for them, at the
// root so that a compiler error about a parameter names `toolsmith::HasLength` or
// `parse_arguments`, not the module behind the generated code.
#[doc(hidden)]
pub use schemars;
#[doc(hidden)]
pub use toolsmith_core::__macro_support::{
    HasLength, HasRange, HasText, ResultTag, StringDefault, ToolParam, ValueTag, assert_param,
    parse_arguments,
};

/// What the code `#[tool]` generates names, and nothing else: not a public API.
///
/// Generated code reaches serde, schemars and the runtime only through this module, so users
/// depend on `toolsmith` alone. The macro and the runtime are pinned to the same version.
#[doc(hidden)]
pub mod __private {
    pub use schemars;
    pub use serde;
    pub use toolsmith_core::__macro_support::*;
}

/// The lint guide's examples, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../docs/lints.md")]
pub struct LintsDoctests;

/// The agent loop guide's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../docs/agent-loop.md")]
pub struct AgentLoopDoctests;

/// The toolsets and agents guide's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../docs/agents.md")]
pub struct AgentsDoctests;

/// The streamed arguments guide's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../docs/streaming.md")]
pub struct StreamingDoctests;

/// The registry guide's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../docs/registry.md")]
pub struct RegistryDoctests;

/// The output contract guide's examples (a paging tool, a batch tool), compiled and run as
/// doc tests.
#[cfg(doctest)]
#[doc = include_str!("../docs/output.md")]
pub struct OutputDoctests;

/// The code mode guide's examples, compiled and run as doc tests.
#[cfg(all(doctest, feature = "sandbox"))]
#[doc = include_str!("../docs/code-mode.md")]
pub struct CodeModeDoctests;

/// The testing guide's examples, compiled and run as doc tests.
#[cfg(all(doctest, feature = "testing"))]
#[doc = include_str!("../docs/testing.md")]
pub struct TestingDoctests;

/// The telemetry guide's examples, compiled and run as doc tests.
#[cfg(all(doctest, feature = "otel"))]
#[doc = include_str!("../docs/telemetry.md")]
pub struct TelemetryDoctests;

/// The MCP guide's examples, compiled and run as doc tests.
#[cfg(all(doctest, feature = "mcp"))]
#[doc = include_str!("../docs/mcp.md")]
pub struct McpDoctests;

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
