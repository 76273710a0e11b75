//! The check in front of every HTTP request of a protected server: the bearer token read,
//! verified once and then kept until it expires.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;

use super::{Authorization, TokenError, Verified, WELL_KNOWN};
use crate::context::Grant;

/// How many verified tokens are kept, each until it expires...
const CACHED_TOKENS: usize = 10_000;
/// ...and how many bytes of tokens, at most.
const CACHED_BYTES: usize = 8 * 1024 * 1024;

/// The check in front of every HTTP request: a verifier, with each verified token kept until
/// it expires.
pub(crate) struct Gate {
    pub(crate) authorization: Authorization,
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
pub(crate) enum Refused {
    /// No bearer token.
    Missing,
    /// A token that is not valid (or an `Authorization` header that is no bearer token).
    Invalid,
    /// A token that could not be checked now.
    Unavailable,
}

impl Gate {
    /// The gate of `authorization`, in front of `toolbox`.
    pub(crate) fn new(authorization: Authorization, toolbox: &crate::toolbox::Toolbox) -> Self {
        Self {
            metadata_path: authorization.metadata_path(),
            authorization,
            cache: Mutex::default(),
            scoped: toolbox.definitions().any(|def| !def.scopes().is_empty()),
        }
    }

    /// Whether any tool needs a scope (else no call is read for the scopes it needs).
    pub(crate) fn scoped(&self) -> bool {
        self.scoped
    }

    /// What the request's bearer token grants.
    pub(crate) async fn check(&self, headers: &http::HeaderMap) -> Result<Grant, Refused> {
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
    pub(crate) fn serves_metadata_at(&self, path: &str) -> bool {
        path == WELL_KNOWN || path == self.metadata_path
    }

    /// The `WWW-Authenticate` value of a 401: where the metadata is, and the scopes to ask
    /// for (MCP's authorization specification, "Protected Resource Metadata Discovery").
    pub(crate) fn challenge(&self, refused: &Refused) -> String {
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
    pub(crate) fn step_up(&self, scopes: &[&str]) -> String {
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
    use crate::mcp::auth::{JwtVerifier, TokenVerifier};

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
}
