//! JSON helpers that know nothing about tools: canonical hashing, exact number comparison and
//! renderings for messages.

pub(crate) mod canonical;
pub(crate) mod escape;
#[cfg(any(feature = "mcp-auth", feature = "mcp-client"))]
pub(crate) mod fetched;
pub(crate) mod number;
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) mod request_id;
pub(crate) mod scan;
pub(crate) mod text;
