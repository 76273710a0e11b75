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

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde_json::{Value, json};

use crate::context::Grant;

mod introspect;
mod jwt;
mod verify;

pub use introspect::IntrospectionVerifier;
/// The signature algorithms of JWTs ([`JwtVerifier::with_algorithms`]): jsonwebtoken's.
pub use jsonwebtoken::Algorithm as JwtAlgorithm;
pub use jwt::JwtVerifier;
use verify::split_resource;
pub use verify::{TokenError, TokenVerifier, Verified};

/// How many verified tokens are kept, each until it expires...
const CACHED_TOKENS: usize = 10_000;
/// ...and how many bytes of tokens, at most.
const CACHED_BYTES: usize = 8 * 1024 * 1024;

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

/// The check in front of every HTTP request: a verifier, with each verified token kept until
/// it expires.
pub(super) struct Gate {
    pub(super) authorization: Authorization,
    cache: Mutex<Kept>,
    scoped: bool,
    /// Where the metadata is served, suffixed with the resource's path.
    metadata_path: String,
}

/// The verified tokens kept: each by its text (hashed with a random key, so a client cannot
/// choose tokens that collide), with its grant and until when it holds.
#[derive(Default)]
struct Kept {
    tokens: HashMap<Box<[u8]>, (Grant, SystemTime)>,
    bytes: usize,
}

impl Kept {
    /// Keeps `token` until `until`, first dropping the expired ones (or all) when full.
    fn keep(&mut self, token: &[u8], grant: Grant, until: SystemTime, now: SystemTime) {
        if self.tokens.len() >= CACHED_TOKENS || self.bytes + token.len() > CACHED_BYTES {
            self.tokens.retain(|_, (_, until)| *until > now);
            self.bytes = self.tokens.keys().map(|t| t.len()).sum();
            if self.tokens.len() >= CACHED_TOKENS || self.bytes + token.len() > CACHED_BYTES {
                self.tokens.clear();
                self.bytes = 0;
            }
        }
        if self.tokens.insert(token.into(), (grant, until)).is_none() {
            self.bytes += token.len();
        }
    }
}

/// Why a request was refused, for its answer.
pub(super) enum Refused {
    /// No bearer token.
    Missing,
    /// A token that is not valid (or an `Authorization` header that is no bearer token).
    Invalid,
    /// A token that could not be checked now.
    Unavailable,
}

impl Gate {
    /// The gate of `authorization`, in front of `toolbox`.
    pub(super) fn new(authorization: Authorization, toolbox: &crate::toolbox::Toolbox) -> Self {
        Self {
            metadata_path: authorization.metadata_path(),
            authorization,
            cache: Mutex::default(),
            scoped: toolbox.definitions().any(|def| !def.scopes().is_empty()),
        }
    }

    /// Whether any tool needs a scope (else no call is read for the scopes it needs).
    pub(super) fn scoped(&self) -> bool {
        self.scoped
    }

    /// What the request's bearer token grants.
    pub(super) async fn check(&self, headers: &http::HeaderMap) -> Result<Grant, Refused> {
        let bytes = bearer_bytes(headers)?;
        let now = SystemTime::now();
        // A token kept is the exact text of one verified before: its syntax was checked then.
        if let Ok(cache) = self.cache.lock()
            && let Some((grant, until)) = cache.tokens.get(bytes)
            && *until > now
        {
            return Ok(grant.clone());
        }
        let token = token68(bytes)?;
        match self.authorization.verifier.verify(token).await {
            Ok(Verified { grant, expires_at }) => {
                if let Some(until) = expires_at
                    && until > now
                    && let Ok(mut cache) = self.cache.lock()
                {
                    cache.keep(bytes, grant.clone(), until, now);
                }
                Ok(grant)
            }
            Err(TokenError::Unavailable(why)) => {
                tracing::warn!(reason = %why, "an access token could not be checked");
                Err(Refused::Unavailable)
            }
            Err(err) => {
                tracing::info!(reason = %err, "an access token was refused");
                Err(Refused::Invalid)
            }
        }
    }

    /// Whether `path` is where the metadata is served (the well-known path, or its form
    /// suffixed with the resource's path): the one place a request needs no token.
    pub(super) fn serves_metadata_at(&self, path: &str) -> bool {
        path == WELL_KNOWN || path == self.metadata_path
    }

    /// The `WWW-Authenticate` value of a 401: where the metadata is, and the scopes to ask
    /// for (MCP's authorization specification, "Protected Resource Metadata Discovery").
    pub(super) fn challenge(&self, refused: &Refused) -> String {
        let url = self.authorization.metadata_url();
        let scopes = self.authorization.challenge_scopes();
        let scope = if scopes.is_empty() {
            String::new()
        } else {
            format!(", scope=\"{}\"", scopes.join(" "))
        };
        match refused {
            Refused::Missing => format!("Bearer resource_metadata=\"{url}\"{scope}"),
            Refused::Invalid | Refused::Unavailable => format!(
                "Bearer error=\"invalid_token\", error_description=\"The access token is missing, malformed, expired or not for this resource\", resource_metadata=\"{url}\"{scope}"
            ),
        }
    }

    /// The `WWW-Authenticate` value of a 403 for a call that needs `scopes`.
    pub(super) fn step_up(&self, scopes: &[&str]) -> String {
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}\", error_description=\"The call needs more scopes than the access token has\"",
            scopes.join(" "),
            self.authorization.metadata_url()
        )
    }
}

/// The bytes of RFC 6750's `b64token`: letters, digits and `-._~+/=`.
static TOKEN68: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric()
            || matches!(c, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=');
        b += 1;
    }
    table
};

/// The bearer token of an `Authorization` header (RFC 6750 §2.1).
#[cfg(test)]
fn bearer(headers: &http::HeaderMap) -> Result<&str, Refused> {
    token68(bearer_bytes(headers)?)
}

/// The bytes after `Bearer ` in an `Authorization` header, their syntax not yet checked.
fn bearer_bytes(headers: &http::HeaderMap) -> Result<&[u8], Refused> {
    let Some(value) = headers.get(http::header::AUTHORIZATION) else {
        return Err(Refused::Missing);
    };
    let bytes = value.as_bytes();
    let scheme = b"bearer ";
    if bytes.len() <= scheme.len() || !bytes[..scheme.len()].eq_ignore_ascii_case(scheme) {
        return Err(Refused::Invalid);
    }
    let token = bytes[scheme.len()..].trim_ascii();
    if token.is_empty() || token.len() > 16 * 1024 {
        return Err(Refused::Invalid);
    }
    Ok(token)
}

/// `token` as a bearer token: 1 to 16 KiB of RFC 6750's `b64token` bytes.
fn token68(token: &[u8]) -> Result<&str, Refused> {
    if token.is_empty()
        || token.len() > 16 * 1024
        || !token.iter().all(|&b| TOKEN68[usize::from(b)])
    {
        return Err(Refused::Invalid);
    }
    // Every byte is ASCII (the table holds no other), so this never fails.
    std::str::from_utf8(token).map_err(|_| Refused::Invalid)
}

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

    #[test]
    fn only_a_bearer_token_is_taken() {
        let mut headers = http::HeaderMap::new();
        assert!(matches!(bearer(&headers), Err(Refused::Missing)));
        for bad in [
            "Basic abc",
            "Bearer",
            "Bearer ",
            "Bearer a b",
            "Bearer a\"b",
        ] {
            headers.insert(http::header::AUTHORIZATION, bad.parse().unwrap());
            assert!(matches!(bearer(&headers), Err(Refused::Invalid)), "{bad}");
        }
        headers.insert(
            http::header::AUTHORIZATION,
            "bearer eyJ.abc-_.x=".parse().unwrap(),
        );
        assert_eq!(bearer(&headers).ok(), Some("eyJ.abc-_.x="));
    }

    #[test]
    fn the_tokens_kept_are_bounded_in_number_and_bytes() {
        let now = SystemTime::now();
        let later = now + std::time::Duration::from_secs(60);
        let mut kept = Kept::default();
        for n in 0..CACHED_TOKENS + 5 {
            kept.keep(format!("t{n}").as_bytes(), Grant::new("ada"), later, now);
            assert!(kept.tokens.len() <= CACHED_TOKENS);
        }
        // Bytes: a full store drops its expired tokens first, and keeps the live ones.
        let mut kept = Kept::default();
        let big = "x".repeat(16 * 1024);
        let fit = CACHED_BYTES / (big.len() + 8);
        let soon = now + std::time::Duration::from_secs(1);
        for n in 0..fit / 2 {
            kept.keep(
                format!("{big}{n:08}").as_bytes(),
                Grant::new("ada"),
                soon,
                now,
            );
        }
        let after = soon + std::time::Duration::from_secs(1);
        for n in fit / 2..fit + 5 {
            kept.keep(
                format!("{big}{n:08}").as_bytes(),
                Grant::new("bo"),
                after + std::time::Duration::from_secs(60),
                after,
            );
            assert!(kept.bytes <= CACHED_BYTES, "{}", kept.bytes);
            assert_eq!(
                kept.bytes,
                kept.tokens.keys().map(|t| t.len()).sum::<usize>()
            );
        }
        assert!(
            kept.tokens
                .values()
                .all(|(grant, _)| grant.subject() == "bo")
        );
        assert_eq!(kept.tokens.len(), fit + 5 - fit / 2);
    }

    proptest::proptest! {
        /// Whatever a client sends as its `Authorization` header, the answer is a token of
        /// the bearer syntax or a refusal; and whatever it sends as a token (also behind a
        /// header that names an allowed algorithm, whose key cannot be fetched here), the
        /// verifier refuses it without a panic.
        #[test]
        fn hostile_headers_and_tokens_are_refused_cleanly(text in ".{0,300}", bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let mut headers = http::HeaderMap::new();
            for value in [text.as_bytes(), bytes.as_slice()] {
                if let Ok(value) = http::HeaderValue::from_bytes(value) {
                    headers.insert(http::header::AUTHORIZATION, value);
                    if let Ok(token) = bearer(&headers) {
                        proptest::prop_assert!(!token.is_empty() && token.len() <= 16 * 1024);
                        proptest::prop_assert!(token.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~+/=".contains(&b)));
                    }
                }
            }
            let verifier = JwtVerifier::new("http://127.0.0.1:1", "http://127.0.0.1:2/mcp")
                .with_jwks_uri("http://127.0.0.1:1/jwks");
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            for token in [text.as_str(), &format!("eyJhbGciOiJSUzI1NiJ9.{text}.x")] {
                let verdict = runtime.block_on(verifier.verify(token));
                proptest::prop_assert!(verdict.is_err());
            }
        }
    }

    struct NoTokens;

    impl TokenVerifier for NoTokens {
        fn verify<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Verified, TokenError>> {
            Box::pin(async { Err(TokenError::Invalid("no tokens".into())) })
        }
    }
}
