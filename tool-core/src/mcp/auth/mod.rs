//! The MCP server as an OAuth resource server (MCP's authorization specification, 2025-06-18
//! onwards): it checks the bearer token of every HTTP request, and never issues one.
//!
//! - **Metadata.** RFC 9728 protected-resource metadata at
//!   `/.well-known/oauth-protected-resource` and its path-suffixed form, naming the
//!   authorization servers and `scopes_supported`.
//! - **401** for a request without a valid token, before any JSON-RPC is read, with
//!   `WWW-Authenticate: Bearer resource_metadata="…"` (RFC 9728 §5.1; `error="invalid_token"`
//!   for a token that was refused, RFC 6750 §3.1).
//! - **403** for a `tools/call` whose token lacks a scope the tool needs, with
//!   `error="insufficient_scope"` and the scopes to ask for, so that a client can step up.
//! - **The token's subject is the principal**: the verified [`Grant`] goes into every call's
//!   context ([`ToolContext::with_grant`](crate::ToolContext::with_grant)), after the server's
//!   context hook, which can add to it and never loosen it.
//!
//! stdio has no tokens: its credentials come from the environment (the specification says so).

use std::sync::Arc;

use serde_json::{Value, json};

pub(crate) mod gate;
mod introspect;
mod jwt;
mod verify;

pub use introspect::IntrospectionVerifier;
/// The signature algorithms of JWTs ([`JwtVerifier::with_algorithms`]): jsonwebtoken's.
pub use jsonwebtoken::Algorithm as JwtAlgorithm;
pub use jwt::JwtVerifier;
use verify::split_resource;
pub use verify::{TokenError, TokenVerifier, Verified};

/// Whether `tools/list` shows a caller the tools its token's scopes do not allow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScopeListing {
    /// Left out, as from every other list the caller gets (the default).
    #[default]
    Hide,
    /// Listed; a call is answered 403 with the scopes to ask for (step-up).
    Show,
}

/// The server's authorization: the resource it is, whom it trusts to issue tokens for it,
/// the scopes it knows, and how a token is checked. Set with
/// [`McpServer::with_authorization`](super::McpServer::with_authorization); over stdio it has
/// no effect.
///
/// ```
/// use toolsmith::mcp::{Authorization, JwtVerifier, McpServer};
///
/// let issuer = "http://127.0.0.1:9000";
/// let resource = "http://127.0.0.1:8000/mcp";
/// let server = McpServer::new(toolsmith::Toolbox::new()).with_authorization(
///     Authorization::new(resource, JwtVerifier::new(issuer, resource))
///         .with_authorization_server(issuer)
///         .with_scopes_supported(["tickets:read", "tickets:write"])
///         .with_write_scopes(["*:write"]),
/// )?;
/// # let _ = server;
/// # Ok::<(), toolsmith::mcp::ScopeError>(())
/// ```
#[derive(Clone)]
pub struct Authorization {
    resource: String,
    authorization_servers: Vec<String>,
    scopes_supported: Vec<String>,
    /// Patterns of the scopes that allow writing (`*:write`).
    write_scopes: Vec<String>,
    /// The scopes a 401 asks for, when set.
    challenge_scopes: Option<Vec<String>>,
    listing: ScopeListing,
    verifier: Arc<dyn TokenVerifier>,
}

impl std::fmt::Debug for Authorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorization")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("scopes_supported", &self.scopes_supported)
            .field("listing", &self.listing)
            .finish_non_exhaustive()
    }
}

impl Authorization {
    /// The server is the resource `resource` (its URL, `https://host/mcp`: the audience its
    /// tokens must be issued for) and checks tokens with `verifier`.
    #[must_use]
    pub fn new(resource: impl Into<String>, verifier: impl TokenVerifier) -> Self {
        Self {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
            write_scopes: Vec::new(),
            challenge_scopes: None,
            listing: ScopeListing::default(),
            verifier: Arc::new(verifier),
        }
    }

    /// An authorization server clients get tokens from (its issuer URL), named in the
    /// metadata.
    #[must_use]
    pub fn with_authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// The scopes the server knows, named in the metadata (`scopes_supported`).
    #[must_use]
    pub fn with_scopes_supported<S: Into<String>>(
        mut self,
        scopes: impl IntoIterator<Item = S>,
    ) -> Self {
        self.scopes_supported
            .extend(scopes.into_iter().map(Into::into));
        self
    }

    /// The server's rule for which scopes allow writing: each pattern a scope, or a scope
    /// with `*` standing for any text (`*:write`, `admin`). A read-only tool
    /// (`effect = "read"`) that asks for such a scope is refused when the server is built
    /// ([`McpServer::with_authorization`](super::McpServer::with_authorization)): it asks for
    /// more than it needs.
    #[must_use]
    pub fn with_write_scopes<S: Into<String>>(
        mut self,
        patterns: impl IntoIterator<Item = S>,
    ) -> Self {
        self.write_scopes
            .extend(patterns.into_iter().map(Into::into));
        self
    }

    /// The scopes a client is asked for when it comes without a valid token (the `scope` of
    /// the 401's challenge, which MCP clients ask their authorization server for). By default
    /// they are the supported scopes that are not write scopes
    /// ([`with_write_scopes`](Self::with_write_scopes)): a client starts with the least it
    /// needs, and a call that needs more is answered 403 with the scopes to step up to.
    /// An empty list leaves `scope` out, and clients fall back to `scopes_supported`.
    #[must_use]
    pub fn with_challenge_scopes<S: Into<String>>(
        mut self,
        scopes: impl IntoIterator<Item = S>,
    ) -> Self {
        self.challenge_scopes = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// The scopes a 401 names.
    fn challenge_scopes(&self) -> Vec<&str> {
        match &self.challenge_scopes {
            Some(scopes) => scopes.iter().map(String::as_str).collect(),
            None => self
                .scopes_supported
                .iter()
                .filter(|scope| !self.write_scopes.iter().any(|p| matches(p, scope)))
                .map(String::as_str)
                .collect(),
        }
    }

    /// Why the tools of `toolbox` do not fit this server's scopes: a scope not among
    /// `scopes_supported` (when it names any), or a read-only tool asking for a write scope.
    pub(super) fn check_tools(&self, toolbox: &crate::toolbox::Toolbox) -> Result<(), ScopeError> {
        let named = self
            .scopes_supported
            .iter()
            .chain(self.challenge_scopes.iter().flatten());
        if let Some(bad) = named.into_iter().find(|scope| !is_scope_token(scope)) {
            return Err(ScopeError::Malformed {
                tool: None,
                scope: bad.clone(),
            });
        }
        for def in toolbox.definitions() {
            for scope in def.scopes() {
                if !is_scope_token(scope) {
                    return Err(ScopeError::Malformed {
                        tool: Some(def.name().to_owned()),
                        scope: scope.clone(),
                    });
                }
                if !self.scopes_supported.is_empty() && !self.scopes_supported.contains(scope) {
                    return Err(ScopeError::Unsupported {
                        tool: def.name().to_owned(),
                        scope: scope.clone(),
                        supported: self.scopes_supported.clone(),
                    });
                }
                if def.effect() == Some(crate::spec::Effect::Read)
                    && let Some(pattern) = self.write_scopes.iter().find(|p| matches(p, scope))
                {
                    return Err(ScopeError::WriteScopeOnReadTool {
                        tool: def.name().to_owned(),
                        scope: scope.clone(),
                        pattern: pattern.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    /// Whether `tools/list` shows a caller tools its scopes do not allow ([`ScopeListing`]).
    #[must_use]
    pub fn with_listing(mut self, listing: ScopeListing) -> Self {
        self.listing = listing;
        self
    }

    /// The resource this server is.
    #[must_use]
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The scopes the server knows.
    #[must_use]
    pub fn scopes_supported(&self) -> &[String] {
        &self.scopes_supported
    }

    /// Whether `tools/list` shows tools the caller's scopes do not allow.
    pub(super) fn listing(&self) -> ScopeListing {
        self.listing
    }

    /// The RFC 9728 metadata document.
    pub(super) fn metadata(&self) -> Value {
        let mut doc = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes_supported.is_empty() {
            doc["scopes_supported"] = json!(self.scopes_supported);
        }
        doc
    }

    /// Where the metadata is: the resource's origin, the well-known path, then the
    /// resource's path (RFC 9728 §3.1).
    pub(super) fn metadata_url(&self) -> String {
        let (origin, path) = split_resource(&self.resource);
        format!("{origin}{WELL_KNOWN}{path}")
    }

    /// The path the metadata is served at, suffixed with the resource's path.
    pub(super) fn metadata_path(&self) -> String {
        let (_, path) = split_resource(&self.resource);
        format!("{WELL_KNOWN}{path}")
    }
}

/// Why a toolbox's tools do not fit a server's scopes
/// ([`McpServer::with_authorization`](super::McpServer::with_authorization)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScopeError {
    /// A tool asks for a scope the server does not list in `scopes_supported`: no client
    /// could ask for it, so no caller could ever call the tool.
    Unsupported {
        /// The tool.
        tool: String,
        /// Its scope.
        scope: String,
        /// The scopes the server lists.
        supported: Vec<String>,
    },
    /// A scope that is no OAuth scope token (RFC 6749 §3.3: printable ASCII but space, `"`
    /// and `\\`), named by a tool or by the server's own setting.
    Malformed {
        /// The tool that names it, or none for the server's setting.
        tool: Option<String>,
        /// The scope.
        scope: String,
    },
    /// A read-only tool asks for a scope the server's rule names as a write scope.
    WriteScopeOnReadTool {
        /// The tool.
        tool: String,
        /// Its scope.
        scope: String,
        /// The rule's pattern it matches.
        pattern: String,
    },
}

impl std::fmt::Display for ScopeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unsupported {
                tool,
                scope,
                supported,
            } => write!(
                f,
                "`{tool}` needs the scope `{scope}`, which the server does not support (`{}`): add it to `with_scopes_supported` or fix the tool's `scopes`",
                supported.join("`, `")
            ),
            Self::Malformed { tool, scope } => {
                let scope = format!("`{}`", crate::echo::echo(scope));
                match tool {
                    Some(tool) => write!(f, "`{tool}` names the scope {scope}, "),
                    None => write!(f, "the server names the scope {scope}, "),
                }?;
                f.write_str("which is no OAuth scope token: printable ASCII without spaces, quotes or backslashes, like `tickets:write`")
            }
            Self::WriteScopeOnReadTool {
                tool,
                scope,
                pattern,
            } => write!(
                f,
                "`{tool}` is read-only but asks for `{scope}`, a write scope (`{pattern}`): ask for a read scope, or declare the tool's effect"
            ),
        }
    }
}

impl std::error::Error for ScopeError {}

/// Whether `scope` is an OAuth scope token (RFC 6749 §3.3).
fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .bytes()
            .all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E))
}

/// Whether `scope` fits `pattern`, where each `*` stands for any text.
fn matches(pattern: &str, scope: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == scope,
        Some((head, rest)) => {
            let Some(after) = scope.strip_prefix(head) else {
                return false;
            };
            (0..=after.len())
                .filter(|&i| after.is_char_boundary(i))
                .any(|i| matches(rest, &after[i..]))
        }
    }
}

/// The well-known path of RFC 9728 metadata.
pub(super) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::BoxFuture;

    #[test]
    fn metadata_lives_under_the_well_known_path_suffixed_with_the_resource_s() {
        let auth = Authorization::new("https://api.example.com/mcp/", NoTokens);
        assert_eq!(
            auth.metadata_url(),
            "https://api.example.com/.well-known/oauth-protected-resource/mcp"
        );
        let root = Authorization::new("http://127.0.0.1:8000", NoTokens);
        assert_eq!(
            root.metadata_url(),
            "http://127.0.0.1:8000/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn a_write_rule_is_a_scope_with_stars() {
        assert!(matches("*:write", "tickets:write"));
        assert!(!matches("*:write", "tickets:read"));
        assert!(!matches("*:write", "tickets:writer"));
        assert!(matches("admin", "admin"));
        assert!(!matches("admin", "admins"));
        assert!(matches("org:*:write", "org:a:b:write"));
    }

    struct NoTokens;

    impl TokenVerifier for NoTokens {
        fn verify<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Verified, TokenError>> {
            Box::pin(async { Err(TokenError::Invalid("no tokens".into())) })
        }
    }
}
