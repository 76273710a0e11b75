//! What a token verifier is and says: the trait, its answer and its refusal.

use std::time::{Duration, SystemTime};

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
pub(super) fn at_unix(seconds: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)
}
