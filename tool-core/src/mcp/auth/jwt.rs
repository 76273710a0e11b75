//! A JWT access token checked against its issuer's published keys (RFC 9068's profile:
//! signature, `iss`, `aud`, `exp`, `nbf`).

use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::verify::{TokenError, TokenVerifier, Verified, grant_of, split_resource};
use crate::tool::BoxFuture;

/// The most bytes of an issuer's metadata or key set read.
const MAX_DOCUMENT: usize = 256 * 1024;

/// Checks a JWT access token: its signature against the issuer's keys (its JWKS, found in the
/// issuer's metadata, kept, and fetched again for an unknown key id at most once a minute), an
/// allowed algorithm (asymmetric only: never `none`, never HMAC, whose secret a public key
/// would be taken for), its issuer, its audience (this server's resource, RFC 8707: a token
/// for another resource is refused) and its lifetime (`exp` required, `nbf` honoured, 30 s of
/// clock skew).
///
/// The principal is the `sub` claim unless [`with_principal_claim`](Self::with_principal_claim)
/// names another; the scopes are `scope` (space-separated) or `scp` (a list); the client is
/// `client_id` or `azp`.
///
/// ```
/// use toolsmith::mcp::JwtVerifier;
/// let verifier = JwtVerifier::new("https://auth.example.com", "https://api.example.com/mcp")
///     .with_jwks_uri("https://auth.example.com/jwks.json");
/// # let _ = verifier;
/// ```
pub struct JwtVerifier {
    issuer: String,
    audience: String,
    algorithms: Vec<Algorithm>,
    jwks_uri: Option<String>,
    principal_claim: String,
    leeway: Duration,
    refetch_after: Duration,
    keys: tokio::sync::Mutex<Keys>,
    client: reqwest::Client,
}

/// The issuer's keys as last fetched.
#[derive(Default)]
struct Keys {
    set: Option<JwkSet>,
    fetched: Option<Instant>,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("algorithms", &self.algorithms)
            .finish_non_exhaustive()
    }
}

impl JwtVerifier {
    /// Tokens issued by `issuer` (its URL, as in the tokens' `iss`) for `audience` (this
    /// server's resource URL). RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384 and
    /// EdDSA are allowed.
    #[must_use]
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            audience: audience.into(),
            algorithms: vec![
                Algorithm::RS256,
                Algorithm::RS384,
                Algorithm::RS512,
                Algorithm::PS256,
                Algorithm::PS384,
                Algorithm::PS512,
                Algorithm::ES256,
                Algorithm::ES384,
                Algorithm::EdDSA,
            ],
            jwks_uri: None,
            principal_claim: "sub".to_owned(),
            leeway: Duration::from_secs(30),
            refetch_after: Duration::from_secs(60),
            keys: tokio::sync::Mutex::default(),
            client: crate::json::fetched::client(Duration::from_secs(10)),
        }
    }

    /// Where the issuer's keys are, when its metadata does not say (or is not to be asked).
    #[must_use]
    pub fn with_jwks_uri(mut self, uri: impl Into<String>) -> Self {
        self.jwks_uri = Some(uri.into());
        self
    }

    /// Only these algorithms; HMAC ones (`HS256`, `HS384`, `HS512`) are never taken.
    #[must_use]
    pub fn with_algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> Self {
        self.algorithms = algorithms
            .into_iter()
            .filter(|alg| !matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512))
            .collect();
        self
    }

    /// The claim whose value is the principal (`sub` by default).
    #[must_use]
    pub fn with_principal_claim(mut self, claim: impl Into<String>) -> Self {
        self.principal_claim = claim.into();
        self
    }

    /// The key of `kid` (or the one key for `alg` when the token names none), fetching the
    /// keys when none are kept, or when the key is unknown and the last fetch is a minute old.
    async fn key(&self, kid: Option<&str>, alg: Algorithm) -> Result<Jwk, TokenError> {
        let mut keys = self.keys.lock().await;
        if let Some(found) = keys.set.as_ref().and_then(|set| pick(set, kid, alg)) {
            return Ok(found);
        }
        let stale = keys
            .fetched
            .is_none_or(|at| at.elapsed() >= self.refetch_after);
        if !stale {
            return Err(TokenError::Invalid(
                "signed by a key the issuer does not publish".into(),
            ));
        }
        let set = self.fetch_keys().await?;
        keys.fetched = Some(Instant::now());
        let found = pick(&set, kid, alg);
        keys.set = Some(set);
        found.ok_or_else(|| {
            TokenError::Invalid("signed by a key the issuer does not publish".into())
        })
    }

    /// The issuer's key set, from its metadata's `jwks_uri` unless one was given.
    async fn fetch_keys(&self) -> Result<JwkSet, TokenError> {
        let uri = match &self.jwks_uri {
            Some(uri) => uri.clone(),
            None => self.discover().await?,
        };
        let doc = self.get(&uri).await?;
        serde_json::from_value(doc)
            .map_err(|err| TokenError::Unavailable(format!("the key set is not a JWKS: {err}")))
    }

    /// The `jwks_uri` of the issuer's metadata (RFC 8414, then OpenID Connect discovery),
    /// whose `issuer` must be the one trusted.
    async fn discover(&self) -> Result<String, TokenError> {
        let issuer = self.issuer.trim_end_matches('/');
        let (origin, path) = split_resource(issuer);
        let places = [
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{issuer}/.well-known/openid-configuration"),
        ];
        let mut last = None;
        for place in places {
            match self.get(&place).await {
                Ok(doc) => {
                    if doc["issuer"].as_str().map(|i| i.trim_end_matches('/')) != Some(issuer) {
                        return Err(TokenError::Unavailable(
                            "the issuer's metadata names another issuer".into(),
                        ));
                    }
                    return doc["jwks_uri"].as_str().map(str::to_owned).ok_or_else(|| {
                        TokenError::Unavailable("the issuer's metadata has no jwks_uri".into())
                    });
                }
                Err(err) => last = Some(err),
            }
        }
        Err(last.unwrap_or_else(|| TokenError::Unavailable("no issuer metadata".into())))
    }

    /// A JSON document, at most [`MAX_DOCUMENT`] bytes.
    async fn get(&self, url: &str) -> Result<Value, TokenError> {
        let response = self.client.get(url).send().await.map_err(|err| {
            TokenError::Unavailable(format!("{url} cannot be reached: {}", err.without_url()))
        })?;
        crate::json::fetched::read_json(response, url, MAX_DOCUMENT)
            .await
            .map_err(TokenError::Unavailable)
    }

    async fn check(&self, token: &str) -> Result<Verified, TokenError> {
        let invalid = |why: &str| TokenError::Invalid(why.to_owned());
        let header = jsonwebtoken::decode_header(token).map_err(|_| invalid("malformed"))?;
        if !self.algorithms.contains(&header.alg) {
            return Err(invalid(
                "signed with an algorithm this server does not take",
            ));
        }
        let jwk = self.key(header.kid.as_deref(), header.alg).await?;
        let key =
            DecodingKey::from_jwk(&jwk).map_err(|_| invalid("the issuer's key is not usable"))?;
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.set_issuer(&[self.issuer.as_str()]);
        validation.set_audience(&[self.audience.as_str()]);
        validation.leeway = self.leeway.as_secs();
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|err| TokenError::Invalid(format!("{:?}", err.kind())))?;
        grant_of(&data.claims, &self.principal_claim, &self.issuer)
    }
}

/// The key of `kid` in `set`, fit for `alg`; without a `kid`, the set's one key fit for it.
fn pick(set: &JwkSet, kid: Option<&str>, alg: Algorithm) -> Option<Jwk> {
    let fits = |jwk: &&Jwk| {
        jwk.common
            .key_algorithm
            .is_none_or(|declared| declared.to_string() == format!("{alg:?}"))
    };
    match kid {
        Some(kid) => set.find(kid).filter(fits).cloned(),
        None => {
            let mut fit = set.keys.iter().filter(fits);
            match (fit.next(), fit.next()) {
                (Some(one), None) => Some(one.clone()),
                _ => None,
            }
        }
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Verified, TokenError>> {
        Box::pin(self.check(token))
    }
}
