//! Toolsets: tools from several places composed as values before they join a toolbox.
//!
//! A [`Toolset`] is a named list of tools (your own, an MCP server's, a teammate's crate).
//! Sets [`merge`](Toolset::merge) (a clash is an error naming both sets), take a
//! [`prefix`](Toolset::prefixed), [`rename`](Toolset::renamed) or
//! [`re-describe`](Toolset::described) a tool, and [`filter`](Toolset::filtered) what they
//! hold; [`Toolbox::with_toolset`](crate::Toolbox::with_toolset) adds one to a toolbox.
//!
//! **A rename is a view.** The model is shown the new name (and description); everything that
//! runs behind the call (validation, the execution policy, approvals, idempotency keys, the
//! audit and the registry) keeps the tool's own name, so a renamed tool's calls are the
//! original's calls. Two tools of one own name cannot share a toolbox, whatever they are
//! called in front: their approvals and idempotency keys would be one.
//!
//! Every name a model is shown is checked against each provider's rules when the set joins a
//! toolbox. A prefixed or renamed name longer than every provider takes (64 characters) is
//! shortened with a stable hash of the whole name, never cut: two long names that begin
//! alike stay two names.
//!
//! To change what a tool *takes* (hide a parameter behind a value, rename or re-describe
//! one), derive a new tool with [`Transform`]. To hide or re-describe tools for one request,
//! give the toolbox a [`Prepare`] step ([`Toolbox::with_prepare`](crate::Toolbox::with_prepare)).
//!
//! ```
//! use toolsmith::toolset::Toolset;
//! use toolsmith::{tool, Dialect, Toolbox};
//!
//! /// Searches the wiki. Read-only. Not for tickets.
//! #[tool(effect = "read")]
//! fn search(
//!     /// Words to look for.
//!     #[arg(length(min = 1, max = 100))]
//!     text: String,
//! ) -> Vec<String> {
//!     vec![text]
//! }
//!
//! /// Reads a wiki page. Read-only. Not for editing.
//! #[tool(effect = "read")]
//! fn read_page(
//!     /// The page's path.
//!     #[arg(length(min = 1, max = 200))]
//!     path: String,
//! ) -> String {
//!     path
//! }
//!
//! let wiki = Toolset::new("wiki").with(Search).with(ReadPage).prefixed("wiki");
//! let toolbox = Toolbox::new().with_toolset(wiki);
//! let names: Vec<_> = toolbox.definitions().map(|d| d.name().to_owned()).collect();
//! assert_eq!(names, ["wiki_search", "wiki_read_page"]);
//! // The model calls `wiki_search`; the toolbox knows the tool as `search`.
//! let openai = toolbox.provider(Dialect::OpenAiChat { strict: true });
//! assert_eq!(openai.resolve("wiki_search").unwrap().definition().name(), "search");
//! ```

#[cfg(feature = "mcp-client")]
mod answering;
#[cfg(feature = "mcp-client")]
mod connect;
#[cfg(feature = "mcp-client")]
mod mcp;
mod names;
#[cfg(feature = "mcp-client")]
mod oauth;
mod prepare;
mod set;
#[cfg(feature = "mcp-client")]
mod token;
mod transform;

#[cfg(feature = "mcp-client")]
pub use connect::{Lifecycle, McpClientOptions};
#[cfg(feature = "mcp-client")]
pub use mcp::{ListingChanges, McpClientError, McpToolset};
pub(crate) use names::NameTable;
pub use names::{RegistrationError, fit_name};
#[cfg(feature = "mcp-client")]
pub use oauth::AuthorizationCode;
pub(crate) use prepare::OfferedDef;
pub(crate) use prepare::ShownNames;
pub use prepare::{Prepare, Prepared};
pub use set::{Toolset, ToolsetError};
#[cfg(feature = "mcp-client")]
pub use token::{ClientCredentials, StaticToken, TokenRequest, TokenSource};
pub use transform::{Transform, TransformError, Transformed};
