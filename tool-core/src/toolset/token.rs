//! How an MCP client signs in: where its access token comes from, and the connection that
//! gets a new one when the server asks (feature `mcp-client`).
//!
//! A server that answers 401 (the token expired or was refused) or 403 `insufficient_scope`
//! (a tool needs a scope the token lacks) is asked again once, with a token the source gives
//! for the scopes the challenge names and those asked before (step-up); never in a loop. A
//! token is sent only to the server it was asked for: the source is told that resource.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::service::ClientServiceExt;
use rmcp::service::{RoleClient, RunningService};

use crate::tool::BoxFuture;

/// The client of one server.
pub(super) type Client = RunningService<RoleClient, super::answering::Answering>;

/// What a token is asked for: the server (its URL, the resource a token is issued for, RFC
/// 8707) and the scopes a call needs (empty for the first token: what the source gives by
/// default).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokenRequest {
    /// The server's URL: the resource the token is for.
    pub resource: String,
    /// The scopes to ask for.
    pub scopes: Vec<String>,
    /// The server's `WWW-Authenticate` challenge that asked for a new token (a 401, or a 403
    /// `insufficient_scope`): where its metadata is, and the scopes it names. `None` for the
    /// first token.
    pub challenge: Option<String>,
}

/// Where an MCP client's access tokens come from ([`McpToolset::http_signed_in`](super::McpToolset::http_signed_in)):
/// a fixed token ([`StaticToken`]), OAuth client credentials ([`ClientCredentials`]), or a
/// closure that gets one (from a cache, a refresh token, a secret store).
///
/// ```
/// use toolsmith::toolset::{TokenRequest, TokenSource};
///
/// // A closure: asked for the first token and whenever the server wants another.
/// let source = |request: TokenRequest| async move {
///     let _ = (request.resource, request.scopes);
///     Ok::<_, String>("a token from the application's own store".to_owned())
/// };
/// fn takes(_: impl TokenSource) {}
/// takes(source);
/// ```
pub trait TokenSource: Send + Sync + 'static {
    /// A token for `request`, or why there is none.
    fn token(&self, request: TokenRequest) -> BoxFuture<'_, Result<String, String>>;

    /// Whether the client first connects without a token and asks for one only when the
    /// server answers 401, its challenge in hand (a person signing in, who should be asked
    /// only when a server wants it, for the scopes it names). `false` by default: a token is
    /// asked for before the first request.
    fn waits_for_challenge(&self) -> bool {
        false
    }
}

impl<F, Fut> TokenSource for F
where
    F: Fn(TokenRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, String>> + Send + 'static,
{
    fn token(&self, request: TokenRequest) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(self(request))
    }
}

/// A fixed access token: sent as it is, never renewed.
#[derive(Clone)]
pub struct StaticToken(String);

impl StaticToken {
    /// The token `token`.
    #[must_use]
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }
}

impl std::fmt::Debug for StaticToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StaticToken(..)")
    }
}

impl TokenSource for StaticToken {
    fn token(&self, _: TokenRequest) -> BoxFuture<'_, Result<String, String>> {
        let token = self.0.clone();
        Box::pin(async move { Ok(token) })
    }
}

/// OAuth 2 client credentials (RFC 6749 §4.4): a token from the authorization server's token
/// endpoint for this client, the scopes asked for and the server as the resource (RFC 8707).
/// The client authenticates with HTTP Basic (`client_secret_basic`).
///
/// The token endpoint is given ([`new`](Self::new)), or found as MCP clients find it
/// ([`discovered`](Self::discovered)): the client first connects without a token, and the
/// server's 401 challenge names its RFC 9728 metadata, whose authorization server's RFC 8414
/// metadata names the endpoint.
///
/// ```
/// use toolsmith::toolset::ClientCredentials;
/// let source = ClientCredentials::new("https://auth.example.com/token", "desk-bot", "its secret")
///     .with_scopes(["tickets:read"]);
/// let found = ClientCredentials::discovered("desk-bot", "its secret");
/// # let _ = (source, found);
/// ```
pub struct ClientCredentials {
    /// The token endpoint, given or found (then kept).
    token_url: Mutex<Option<String>>,
    /// Whether the endpoint is found from the server's challenge.
    discovers: bool,
    client_id: String,
    secret: String,
    scopes: Vec<String>,
    http: reqwest::Client,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("discovers", &self.discovers)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl ClientCredentials {
    /// The client `client_id` with `secret`, at the token endpoint `token_url`.
    #[must_use]
    pub fn new(
        token_url: impl Into<String>,
        client_id: impl Into<String>,
        secret: impl Into<String>,
    ) -> Self {
        Self {
            token_url: Mutex::new(Some(token_url.into())),
            discovers: false,
            client_id: client_id.into(),
            secret: secret.into(),
            scopes: Vec::new(),
            http: crate::json::fetched::client(Duration::from_secs(30)),
        }
    }

    /// The client `client_id` with `secret`, at the token endpoint the server's challenge
    /// leads to (its metadata's authorization server's metadata).
    #[must_use]
    pub fn discovered(client_id: impl Into<String>, secret: impl Into<String>) -> Self {
        Self {
            token_url: Mutex::new(None),
            discovers: true,
            client_id: client_id.into(),
            secret: secret.into(),
            scopes: Vec::new(),
            http: crate::json::fetched::client(Duration::from_secs(30)),
        }
    }

    /// The token endpoint: the one given or found before, else found from `request`'s
    /// challenge.
    async fn token_url(&self, request: &TokenRequest) -> Result<String, String> {
        let known = self
            .token_url
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(url) = known {
            return Ok(url);
        }
        let manager = rmcp::transport::auth::AuthorizationManager::new(request.resource.as_str())
            .await
            .map_err(|err| format!("the server's authorization cannot be found: {err}"))?;
        let found = manager
            .resolve_metadata_from_challenge(request.challenge.as_deref())
            .await
            .map_err(|err| format!("the server's authorization cannot be found: {err}"))?
            .metadata
            .token_endpoint;
        *self
            .token_url
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(found.clone());
        Ok(found)
    }

    /// The scopes every token is asked with (those a server's challenge names are added).
    #[must_use]
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    async fn fetch(&self, request: TokenRequest) -> Result<String, String> {
        let token_url = self.token_url(&request).await?;
        let mut scopes = self.scopes.clone();
        for scope in request.scopes {
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        let mut form = vec![
            ("grant_type", "client_credentials".to_owned()),
            ("resource", request.resource),
        ];
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        let response = self
            .http
            .post(&token_url)
            .basic_auth(&self.client_id, Some(&self.secret))
            .form(&form)
            .send()
            .await
            .map_err(|err| {
                format!(
                    "the token endpoint cannot be reached: {}",
                    err.without_url()
                )
            })?;
        let doc = crate::json::fetched::read_json(response, "the token endpoint", MAX_TOKEN_ANSWER)
            .await?;
        doc["access_token"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| "the token endpoint's answer has no access_token".to_owned())
    }
}

/// The most bytes of a token endpoint's answer read.
const MAX_TOKEN_ANSWER: usize = 64 * 1024;

impl TokenSource for ClientCredentials {
    fn token(&self, request: TokenRequest) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(self.fetch(request))
    }

    /// A source that finds its token endpoint waits for the server's challenge.
    fn waits_for_challenge(&self) -> bool {
        self.discovers
    }
}

/// Why a signed-in connection could not be made.
#[derive(Debug)]
pub(super) enum Failed {
    /// No token, or the server cannot be reached or does not initialize.
    Connect(String),
    /// The server did not answer in time.
    Timeout(Duration),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Connect(why) => f.write_str(why),
            Self::Timeout(limit) => write!(f, "no answer within {} s", limit.as_secs_f64()),
        }
    }
}

/// The connection to one server: its client, and over HTTP how to connect again (where a new
/// token comes from, the scopes asked for so far).
pub(super) struct Link {
    client: tokio::sync::RwLock<Arc<Connection>>,
    http: Option<Http>,
}

/// One session with the server: the client, and when it was opened. When the last request
/// using it is done after it was replaced (a new token) or the toolset dropped, the session
/// has ended: with the `otel` feature its duration is recorded
/// (`mcp.client.session.duration`).
pub(super) struct Connection {
    client: Client,
    #[cfg(feature = "otel")]
    opened: std::time::Instant,
    #[cfg(feature = "otel")]
    transport: &'static str,
}

impl Connection {
    #[cfg_attr(
        not(feature = "otel"),
        expect(unused_variables, reason = "only OpenTelemetry measures")
    )]
    fn new(client: Client, transport: &'static str) -> Arc<Self> {
        Arc::new(Self {
            client,
            #[cfg(feature = "otel")]
            opened: std::time::Instant::now(),
            #[cfg(feature = "otel")]
            transport,
        })
    }
}

impl Connection {
    /// Sends `request` (of `method`, calling `tool` if any) and waits for its answer up to
    /// `timeout`; with the `otel` feature its duration is recorded
    /// (`mcp.client.operation.duration`), with `error.type` a JSON-RPC error code,
    /// `tool_error` for a result `failed` says failed, or `timeout`.
    #[cfg_attr(
        not(feature = "otel"),
        expect(unused_variables, reason = "only OpenTelemetry measures")
    )]
    pub(super) async fn timed<T>(
        &self,
        method: &'static str,
        tool: Option<&str>,
        timeout: Duration,
        failed: fn(&T) -> bool,
        request: impl std::future::Future<Output = Result<T, rmcp::ServiceError>>,
    ) -> Result<Result<T, rmcp::ServiceError>, tokio::time::error::Elapsed> {
        #[cfg(feature = "otel")]
        let started = std::time::Instant::now();
        let answer = tokio::time::timeout(timeout, request).await;
        #[cfg(feature = "otel")]
        crate::telemetry::record_mcp(
            "mcp.client.operation.duration",
            started.elapsed().as_secs_f64(),
            crate::telemetry::McpMeasure {
                method: Some(method),
                tool: tool.map(str::to_owned),
                protocol_version: self
                    .client
                    .peer_info()
                    .map(|info| info.protocol_version.to_string()),
                transport: self.transport,
                error: match &answer {
                    Err(_) => Some("timeout".to_owned()),
                    Ok(Err(rmcp::ServiceError::McpError(err))) => Some(err.code.0.to_string()),
                    Ok(Err(_)) => Some("transport_error".to_owned()),
                    Ok(Ok(result)) if failed(result) => Some("tool_error".to_owned()),
                    Ok(Ok(_)) => None,
                },
            },
        );
        answer
    }
}

impl std::ops::Deref for Connection {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

#[cfg(feature = "otel")]
impl Drop for Connection {
    fn drop(&mut self) {
        crate::telemetry::record_mcp(
            "mcp.client.session.duration",
            self.opened.elapsed().as_secs_f64(),
            crate::telemetry::McpMeasure {
                protocol_version: self
                    .client
                    .peer_info()
                    .map(|info| info.protocol_version.to_string()),
                transport: self.transport,
                ..Default::default()
            },
        );
    }
}

impl Link {
    /// The transport to the server, as OpenTelemetry's `network.transport` names it.
    pub(super) fn transport(&self) -> &'static str {
        if self.http.is_some() { "tcp" } else { "pipe" }
    }
}

/// How a connection over HTTP is made again.
struct Http {
    url: String,
    /// Where tokens come from; none: requests carry no token, and a refusal is final.
    source: Option<Arc<dyn TokenSource>>,
    timeout: Duration,
    scopes: Mutex<Vec<String>>,
    lifecycle: rmcp::service::ClientLifecycleMode,
    answering: super::answering::Answering,
}

/// Why a request failed, as far as signing in goes.
pub(super) struct Challenge {
    /// The scopes the challenge names (on a 401, those to start with; on a 403
    /// `insufficient_scope`, those the call needs).
    scopes: Vec<String>,
    /// The `WWW-Authenticate` value.
    header: String,
}

impl Link {
    /// A connection that never signs in (stdio).
    pub(super) fn fixed(client: Client) -> Self {
        Self {
            client: tokio::sync::RwLock::new(Connection::new(client, "pipe")),
            http: None,
        }
    }

    /// A connection to `url` over streamable HTTP speaking `lifecycle`, signed in by
    /// `source` (if any), the server's questions answered by `answering`.
    pub(super) async fn http(
        url: &str,
        source: Option<Arc<dyn TokenSource>>,
        lifecycle: rmcp::service::ClientLifecycleMode,
        answering: super::answering::Answering,
        timeout: Duration,
    ) -> Result<Self, Failed> {
        let http = Http {
            url: url.to_owned(),
            source,
            timeout,
            scopes: Mutex::new(Vec::new()),
            lifecycle,
            answering,
        };
        let client = if http
            .source
            .as_ref()
            .is_none_or(|source| source.waits_for_challenge())
        {
            // Without a token first; signed in when the server asks, as it asks.
            match http.open(None).await {
                Ok(client) => client,
                Err(Opened::Challenged(challenge)) if http.source.is_some() => {
                    let (scopes, header) = http.asked_with(challenge);
                    http.connect(scopes, Some(header)).await?
                }
                Err(Opened::Challenged(_)) => {
                    return Err(Failed::Connect(
                        "the server asks for an access token: give the toolset a token source"
                            .to_owned(),
                    ));
                }
                Err(Opened::Failed(failed)) => return Err(failed),
            }
        } else {
            http.connect(Vec::new(), None).await?
        };
        Ok(Self {
            client: tokio::sync::RwLock::new(Connection::new(client, "tcp")),
            http: Some(http),
        })
    }

    /// The client to send a request with.
    pub(super) async fn client(&self) -> Arc<Connection> {
        Arc::clone(&*self.client.read().await)
    }

    /// After `used` failed a request with `challenge`: a new token (for the scopes asked
    /// before and those the challenge names) and a new connection with it, once. `false`
    /// when the link does not sign in, or no new token could be had.
    pub(super) async fn renew(&self, used: &Arc<Connection>, challenge: Challenge) -> bool {
        let Some(http) = self.http.as_ref().filter(|s| s.source.is_some()) else {
            return false;
        };
        let mut current = self.client.write().await;
        // Another request renewed it meanwhile: its client is the one to retry with.
        if !Arc::ptr_eq(&current, used) {
            return true;
        }
        let (scopes, header) = http.asked_with(challenge);
        match http.connect(scopes, Some(header)).await {
            Ok(client) => {
                *current = Connection::new(client, "tcp");
                true
            }
            Err(err) => {
                tracing::warn!(error = %err, "an MCP server asked for a new token and none could be had");
                false
            }
        }
    }
}

/// Why a connection was not opened: the server asked for a token, or something else.
enum Opened {
    Challenged(Challenge),
    Failed(Failed),
}

impl Http {
    /// The scopes to ask for after `challenge` (those asked before and those it names, kept
    /// for the next time), and its header.
    fn asked_with(&self, challenge: Challenge) -> (Vec<String>, String) {
        let mut asked = self.scopes.lock().unwrap_or_else(PoisonError::into_inner);
        for scope in challenge.scopes {
            if !asked.contains(&scope) {
                asked.push(scope);
            }
        }
        (asked.clone(), challenge.header)
    }

    /// A connection with a token from the source, for `scopes`, asked after `challenge`.
    async fn connect(
        &self,
        scopes: Vec<String>,
        challenge: Option<String>,
    ) -> Result<Client, Failed> {
        let Some(source) = &self.source else {
            return Err(Failed::Connect("no token source".to_owned()));
        };
        let token = source
            .token(TokenRequest {
                resource: self.url.clone(),
                scopes,
                challenge,
            })
            .await
            .map_err(Failed::Connect)?;
        self.open(Some(token)).await.map_err(|opened| match opened {
            Opened::Failed(failed) => failed,
            Opened::Challenged(_) => {
                Failed::Connect("the server refused the token the source gave".to_owned())
            }
        })
    }

    /// A connection sending `token` (or none).
    async fn open(&self, token: Option<String>) -> Result<Client, Opened> {
        let mut config =
            rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                self.url.clone(),
            );
        if let Some(token) = token {
            config = config.auth_header(token);
        }
        let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
        let serving = self
            .answering
            .clone()
            .serve_with_lifecycle(transport, self.lifecycle.clone());
        match tokio::time::timeout(self.timeout, serving).await {
            Err(_) => Err(Opened::Failed(Failed::Timeout(self.timeout))),
            Ok(Ok(client)) => Ok(client),
            Ok(Err(err)) => Err(match initialize_challenge(&err) {
                Some(challenge) => Opened::Challenged(challenge),
                None => Opened::Failed(Failed::Connect(err.to_string())),
            }),
        }
    }
}

/// What a failed request says about signing in: a 401, or a 403 `insufficient_scope`, and
/// the scopes its challenge names.
pub(super) fn challenge_of(err: &(dyn std::error::Error + 'static)) -> Option<Challenge> {
    use rmcp::transport::streamable_http_client::{AuthRequiredError, InsufficientScopeError};
    let mut next = Some(err);
    while let Some(err) = next {
        let header = err
            .downcast_ref::<AuthRequiredError>()
            .map(|required| &required.www_authenticate_header)
            .or_else(|| {
                err.downcast_ref::<InsufficientScopeError>()
                    .map(|insufficient| &insufficient.www_authenticate_header)
            });
        if let Some(header) = header {
            return Some(Challenge {
                scopes: scopes_of(header),
                header: header.clone(),
            });
        }
        next = err.source();
    }
    None
}

/// The challenge of a server that refused the `initialize` request (rmcp keeps the
/// transport's error in a field its error does not name as the source).
fn initialize_challenge(err: &rmcp::service::ClientInitializeError) -> Option<Challenge> {
    match err {
        rmcp::service::ClientInitializeError::TransportError { error, .. } => challenge_of(error),
        other => challenge_of(other),
    }
}

/// The `scope` of a `WWW-Authenticate: Bearer` challenge, split into scopes.
fn scopes_of(challenge: &str) -> Vec<String> {
    let Some(at) = challenge.find("scope=\"") else {
        return Vec::new();
    };
    let rest = &challenge[at + 7..];
    let value = rest.split('"').next().unwrap_or("");
    value.split_whitespace().map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_challenge_names_its_scopes() {
        assert_eq!(
            scopes_of(
                r#"Bearer error="insufficient_scope", scope="a:write b", resource_metadata="x""#
            ),
            ["a:write", "b"]
        );
        assert!(scopes_of("Bearer resource_metadata=\"x\"").is_empty());
    }
}
