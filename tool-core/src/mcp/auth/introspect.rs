//! An opaque access token checked by asking its issuer (RFC 7662 token introspection).

use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::verify::{TokenError, TokenVerifier, Verified, grant_of};
use crate::tool::BoxFuture;

/// The most bytes of an introspection answer read.
const MAX_ANSWER: usize = 64 * 1024;

/// Checks an access token by asking the authorization server's introspection endpoint
/// (RFC 7662), for tokens that are not JWTs or that must be revocable.
///
/// The token is taken when the answer is `"active": true`, its `aud` names this server's
/// resource (RFC 8707: an answer without `aud`, or for another resource, is refused), its
/// `iss` is the issuer named with [`with_issuer`](Self::with_issuer) (when one is), and its
/// `exp` and `nbf` hold (30 s of clock skew). The principal, scopes and client are read from
/// the answer as [`JwtVerifier`](super::JwtVerifier) reads a JWT's claims.
///
/// A taken token is kept by the server until it expires or for 30 seconds, whichever comes
/// first ([`with_cache_for`](Self::with_cache_for)): a revoked token is refused at most that
/// long after it was revoked. [`Duration::ZERO`] asks on every request.
///
/// ```
/// use std::time::Duration;
/// use toolsmith::mcp::IntrospectionVerifier;
///
/// let verifier = IntrospectionVerifier::new(
///     "https://auth.example.com/introspect",
///     "https://api.example.com/mcp",
/// )
/// .with_client("mcp-server", "its-secret")
/// .with_issuer("https://auth.example.com")
/// .with_cache_for(Duration::from_secs(10));
/// # let _ = verifier;
/// ```
pub struct IntrospectionVerifier {
    endpoint: String,
    audience: String,
    issuer: Option<String>,
    client: Option<(String, String)>,
    principal_claim: String,
    cache_for: Duration,
    leeway: Duration,
    http: reqwest::Client,
}

impl std::fmt::Debug for IntrospectionVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionVerifier")
            .field("endpoint", &self.endpoint)
            .field("audience", &self.audience)
            .field("issuer", &self.issuer)
            .field("cache_for", &self.cache_for)
            .finish_non_exhaustive()
    }
}

impl IntrospectionVerifier {
    /// Tokens checked at `endpoint` (the authorization server's introspection endpoint) and
    /// issued for `audience` (this server's resource URL).
    #[must_use]
    pub fn new(endpoint: impl Into<String>, audience: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            audience: audience.into(),
            issuer: None,
            client: None,
            principal_claim: "sub".to_owned(),
            cache_for: Duration::from_secs(30),
            leeway: Duration::from_secs(30),
            http: crate::json::fetched::client(Duration::from_secs(10)),
        }
    }

    /// The server's own client credentials at the introspection endpoint (HTTP Basic, RFC
    /// 7662 §2.1: the endpoint is protected).
    #[must_use]
    pub fn with_client(mut self, id: impl Into<String>, secret: impl Into<String>) -> Self {
        self.client = Some((id.into(), secret.into()));
        self
    }

    /// The issuer whose tokens are taken: an answer naming another `iss` is refused.
    #[must_use]
    pub fn with_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// The claim whose value is the principal (`sub` by default).
    #[must_use]
    pub fn with_principal_claim(mut self, claim: impl Into<String>) -> Self {
        self.principal_claim = claim.into();
        self
    }

    /// How long a taken token is kept before the endpoint is asked again (30 s by default;
    /// never past the token's expiry).
    #[must_use]
    pub fn with_cache_for(mut self, cache_for: Duration) -> Self {
        self.cache_for = cache_for;
        self
    }

    async fn check(&self, token: &str) -> Result<Verified, TokenError> {
        let mut request = self
            .http
            .post(&self.endpoint)
            .header(http::header::ACCEPT, "application/json")
            .form(&[("token", token), ("token_type_hint", "access_token")]);
        if let Some((id, secret)) = &self.client {
            request = request.basic_auth(id, Some(secret));
        }
        let response = request.send().await.map_err(|err| {
            TokenError::Unavailable(format!(
                "the introspection endpoint cannot be reached: {}",
                err.without_url()
            ))
        })?;
        let answer =
            crate::json::fetched::read_json(response, "the introspection endpoint", MAX_ANSWER)
                .await
                .map_err(TokenError::Unavailable)?;
        self.read(&answer, SystemTime::now())
    }

    /// What an introspection answer grants at `now`.
    fn read(&self, answer: &Value, now: SystemTime) -> Result<Verified, TokenError> {
        let invalid = |why: &str| Err(TokenError::Invalid(why.to_owned()));
        let Some(claims) = answer.as_object() else {
            return Err(TokenError::Unavailable(
                "the introspection answer is not an object".into(),
            ));
        };
        if claims.get("active") != Some(&Value::Bool(true)) {
            return invalid("not active (expired, revoked or unknown)");
        }
        let for_us = match claims.get("aud") {
            Some(Value::String(aud)) => *aud == self.audience,
            Some(Value::Array(list)) => list.iter().any(|aud| *aud == *self.audience),
            _ => false,
        };
        if !for_us {
            return invalid("not issued for this resource");
        }
        let issuer = claims.get("iss").and_then(Value::as_str);
        if let Some(trusted) = &self.issuer
            && issuer != Some(trusted.as_str())
        {
            return invalid("issued by another issuer");
        }
        let at = |claim: &str| {
            claims
                .get(claim)
                .and_then(Value::as_u64)
                .map(|s| SystemTime::UNIX_EPOCH + Duration::from_secs(s))
        };
        if at("exp").is_some_and(|exp| exp + self.leeway <= now) {
            return invalid("expired");
        }
        if at("nbf").is_some_and(|nbf| nbf > now + self.leeway) {
            return invalid("not yet valid");
        }
        let issuer = self.issuer.as_deref().or(issuer).unwrap_or_default();
        let mut verified = grant_of(claims, &self.principal_claim, issuer)?;
        let kept_until = now + self.cache_for;
        verified.expires_at = Some(
            verified
                .expires_at
                .map_or(kept_until, |exp| exp.min(kept_until)),
        );
        Ok(verified)
    }
}

impl TokenVerifier for IntrospectionVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Verified, TokenError>> {
        Box::pin(self.check(token))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn verifier() -> IntrospectionVerifier {
        IntrospectionVerifier::new("http://127.0.0.1:1/introspect", "http://127.0.0.1:2/mcp")
            .with_issuer("http://127.0.0.1:1")
    }

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000)
    }

    #[test]
    fn an_active_answer_for_this_resource_grants_its_subject_and_scopes() {
        let answer = json!({"active": true, "sub": "ada", "scope": "a b", "client_id": "app",
            "aud": ["other", "http://127.0.0.1:2/mcp"], "iss": "http://127.0.0.1:1", "exp": 1_000_100});
        let verified = verifier().read(&answer, now()).unwrap();
        assert_eq!(verified.grant.subject(), "ada");
        assert_eq!(verified.grant.scopes(), ["a", "b"]);
        assert_eq!(verified.grant.client_id(), Some("app"));
        // Kept 30 s, sooner than its expiry.
        assert_eq!(verified.expires_at, Some(now() + Duration::from_secs(30)));
        let short = verifier().with_cache_for(Duration::ZERO);
        assert_eq!(short.read(&answer, now()).unwrap().expires_at, Some(now()));
    }

    #[test]
    fn anything_but_an_active_answer_for_this_resource_is_refused() {
        let good = json!({"active": true, "sub": "ada", "aud": "http://127.0.0.1:2/mcp",
            "iss": "http://127.0.0.1:1"});
        assert!(verifier().read(&good, now()).is_ok());
        let with = |key: &str, value: Value| {
            let mut answer = good.clone();
            answer[key] = value;
            answer
        };
        for bad in [
            json!({"active": false}),
            with("active", json!("true")),
            with("aud", json!("http://127.0.0.1:3/mcp")),
            with("aud", json!(null)),
            with("iss", json!("http://127.0.0.1:9")),
            with("exp", json!(999_000)),
            with("nbf", json!(1_001_000)),
            with("sub", json!("")),
        ] {
            assert!(
                matches!(verifier().read(&bad, now()), Err(TokenError::Invalid(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            verifier().read(&json!([1]), now()),
            Err(TokenError::Unavailable(_))
        ));
    }
}
