//! What a token verifier is and says: the trait, its answer and its refusal.

use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

use crate::context::Grant;
use crate::tool::BoxFuture;

/// A verified access token: what it grants, and until when.
#[derive(Clone, Debug)]
pub struct Verified {
    /// Who it was issued for, its scopes, client and issuer.
    pub grant: Grant,
    /// When it expires; a token without an expiry is checked again on each request.
    pub expires_at: Option<SystemTime>,
}

/// Why a token was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenError {
    /// Not a token this server takes: malformed, signed by a key it does not trust, for
    /// another resource, expired, not yet valid, revoked. The reason is for the log, never
    /// for the client.
    Invalid(String),
    /// The token could not be checked now (the issuer's keys or its introspection endpoint
    /// cannot be reached): refused, and the client may retry.
    Unavailable(String),
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Invalid(why) => write!(f, "the token is not valid: {why}"),
            Self::Unavailable(why) => write!(f, "the token cannot be checked now: {why}"),
        }
    }
}

impl std::error::Error for TokenError {}

/// Checks an access token and says what it grants. [`JwtVerifier`](super::JwtVerifier) checks a JWT against its
/// issuer's keys; implement it for anything else (an introspection endpoint, a gateway's
/// session).
///
/// ```
/// use toolsmith::mcp::{TokenError, TokenVerifier, Verified};
/// use toolsmith::Grant;
///
/// /// One fixed token, for a test.
/// struct Fixed;
///
/// impl TokenVerifier for Fixed {
///     fn verify<'a>(&'a self, token: &'a str) -> toolsmith::tool::BoxFuture<'a, Result<Verified, TokenError>> {
///         Box::pin(async move {
///             match token {
///                 "let-me-in" => Ok(Verified { grant: Grant::new("ada"), expires_at: None }),
///                 _ => Err(TokenError::Invalid("unknown token".into())),
///             }
///         })
///     }
/// }
/// ```
pub trait TokenVerifier: Send + Sync + 'static {
    /// What `token` grants, or why it is refused.
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Verified, TokenError>>;
}

/// A resource URL's origin and its path (no trailing `/`; empty for the root).
pub(super) fn split_resource(resource: &str) -> (&str, &str) {
    let after_scheme = resource.find("://").map_or(0, |i| i + 3);
    let path_at = resource[after_scheme..]
        .find('/')
        .map_or(resource.len(), |i| after_scheme + i);
    let path = resource[path_at..].trim_end_matches('/');
    (&resource[..path_at], path)
}

/// An expiry as a time.
fn at_unix(seconds: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)
}

/// What a token's claims grant (a JWT's payload, an introspection answer): the principal is
/// the claim `principal_claim`, the scopes `scope` (space-separated) or `scp` (a list), the
/// client `client_id` or `azp`; it expires at `exp`.
pub(super) fn grant_of(
    claims: &Map<String, Value>,
    principal_claim: &str,
    issuer: &str,
) -> Result<Verified, TokenError> {
    let subject = claims
        .get(principal_claim)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| TokenError::Invalid("no principal claim".into()))?;
    let scopes: Vec<String> = match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(scope)), _) => scope.split_whitespace().map(str::to_owned).collect(),
        (_, Some(Value::Array(list))) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        (_, Some(Value::String(scp))) => scp.split_whitespace().map(str::to_owned).collect(),
        _ => Vec::new(),
    };
    let mut grant = Grant::new(subject)
        .with_scopes(scopes)
        .with_issuer(issuer.to_owned());
    if let Some(client) = claims
        .get("client_id")
        .or_else(|| claims.get("azp"))
        .and_then(Value::as_str)
    {
        grant = grant.with_client_id(client);
    }
    let expires_at = claims.get("exp").and_then(Value::as_u64).map(at_unix);
    Ok(Verified { grant, expires_at })
}
