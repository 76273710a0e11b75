//! A person signs in: OAuth 2.1's authorization code flow with PKCE, as MCP's authorization
//! specification has a client run it, on rmcp's implementation of it (discovery from the
//! server's challenge and RFC 9728 metadata, RFC 8414 metadata, client ID metadata documents or
//! dynamic registration, RFC 8707 resource indicators, the RFC 9207 issuer check, refresh).

use std::sync::Arc;

use rmcp::transport::auth::{
    AuthorizationCallback, AuthorizationManager, AuthorizationRequest, OAuthState,
};

use super::token::{TokenRequest, TokenSource};
use crate::tool::BoxFuture;

/// Where the authorization URL is taken to the person, and their answer comes back from.
type Authorize = dyn Fn(String) -> BoxFuture<'static, Result<String, String>> + Send + Sync;

/// Tokens a person grants through their browser: OAuth 2.1's authorization code flow with
/// PKCE, run when the server first answers 401 and again when it asks for more scopes
/// (step-up). The client connects without a token until then. A token that expires or is
/// refused is refreshed without asking the person again where the grant allows.
///
/// The flow follows MCP's authorization specification: the server's challenge and RFC 9728
/// metadata name its authorization server, whose RFC 8414 metadata says how to register; the
/// client is identified by a client ID metadata document
/// ([`with_client_metadata_url`](Self::with_client_metadata_url)), by credentials it was
/// given ([`with_client`](Self::with_client)), or registers itself (RFC 7591); the scopes
/// asked first are those the challenge names, else the server's `scopes_supported`; each
/// request names the server as the resource (RFC 8707), so a token is only ever issued for
/// the server it is sent to; an authorization response naming another issuer than the one
/// asked (RFC 9207 `iss`) is refused. Metadata that points at a private or loopback address is
/// refused unless the server itself is at one.
///
/// `authorize` is given the authorization URL to send the person to, and answers with the
/// URL the authorization server redirected their browser to (the redirect URI with `code`,
/// `state` and `iss`): open a browser and listen on the loopback redirect URI, or show the
/// URL and read the answer back.
///
/// ```no_run
/// use toolsmith::toolset::{AuthorizationCode, McpToolset};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let source = AuthorizationCode::new("http://127.0.0.1:8976/callback", |url: String| async move {
///     println!("Open {url} and paste the address you land on:");
///     let mut answer = String::new();
///     std::io::stdin().read_line(&mut answer).map_err(|e| e.to_string())?;
///     Ok(answer.trim().to_owned())
/// })
/// .with_client_name("ticket desk");
/// let tickets = McpToolset::http_signed_in("tickets", "https://tickets.example.com/mcp", source).await?;
/// # let _ = tickets;
/// # Ok(()) }
/// ```
pub struct AuthorizationCode {
    redirect_uri: String,
    authorize: Arc<Authorize>,
    client_name: Option<String>,
    client_metadata_url: Option<String>,
    client: Option<(String, Option<String>)>,
    scopes: Vec<String>,
    held: tokio::sync::Mutex<Option<Held>>,
}

/// The grant the person gave last: for which server and scopes, and its tokens.
struct Held {
    resource: String,
    scopes: Vec<String>,
    manager: AuthorizationManager,
}

impl std::fmt::Debug for AuthorizationCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizationCode")
            .field("redirect_uri", &self.redirect_uri)
            .field("client_name", &self.client_name)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl AuthorizationCode {
    /// The flow with `redirect_uri` (where the authorization server sends the person's
    /// browser back), the person reached through `authorize`.
    #[must_use]
    pub fn new<F, Fut>(redirect_uri: impl Into<String>, authorize: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, String>> + Send + 'static,
    {
        Self {
            redirect_uri: redirect_uri.into(),
            authorize: Arc::new(move |url| Box::pin(authorize(url))),
            client_name: None,
            client_metadata_url: None,
            client: None,
            scopes: Vec::new(),
            held: tokio::sync::Mutex::new(None),
        }
    }

    /// The client's name, shown to the person and sent when it registers itself.
    #[must_use]
    pub fn with_client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = Some(name.into());
        self
    }

    /// The HTTPS URL of the client's metadata document, its client ID where the
    /// authorization server takes such documents (`client_id_metadata_document_supported`).
    #[must_use]
    pub fn with_client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Credentials the client was given by the authorization server (pre-registration): its
    /// ID, and its secret for a confidential client.
    #[must_use]
    pub fn with_client(mut self, id: impl Into<String>, secret: Option<String>) -> Self {
        self.client = Some((id.into(), secret));
        self
    }

    /// Scopes asked for with every grant, beside those a server's challenge names.
    #[must_use]
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    async fn fetch(&self, request: TokenRequest) -> Result<String, String> {
        let mut held = self.held.lock().await;
        let mut scopes = self.scopes.clone();
        for scope in &request.scopes {
            if !scopes.contains(scope) {
                scopes.push(scope.clone());
            }
        }
        if let Some(grant) = held.as_ref()
            && grant.resource == request.resource
            && scopes.iter().all(|scope| grant.scopes.contains(scope))
        {
            // Refused with a token that should do: refresh it; else the one held (refreshed
            // when it is about to expire).
            let refreshed = match request.challenge {
                Some(_) => grant.manager.refresh_token().await.map(|_| ()),
                None => Ok(()),
            };
            if refreshed.is_ok()
                && let Ok(token) = grant.manager.get_access_token().await
            {
                return Ok(token);
            }
        }
        let manager = self.sign_in(&request, &scopes).await?;
        let token = manager
            .get_access_token()
            .await
            .map_err(|err| format!("no access token after signing in: {err}"))?;
        let granted = if scopes.is_empty() {
            manager.get_current_scopes().await
        } else {
            scopes
        };
        *held = Some(Held {
            resource: request.resource,
            scopes: granted,
            manager,
        });
        Ok(token)
    }

    /// One run of the flow: discovery, registration, the person's consent, the code's
    /// exchange.
    async fn sign_in(
        &self,
        request: &TokenRequest,
        scopes: &[String],
    ) -> Result<AuthorizationManager, String> {
        let mut state = OAuthState::new(request.resource.as_str(), None)
            .await
            .map_err(failed("the server's authorization cannot be found"))?;
        let mut asked = AuthorizationRequest::new(self.redirect_uri.clone());
        asked = if scopes.is_empty() {
            asked.with_initial_scope_selection()
        } else {
            asked.with_scopes(scopes.iter().cloned())
        };
        if let Some(name) = &self.client_name {
            asked = asked.with_client_name(name.clone());
        }
        if let Some(url) = &self.client_metadata_url {
            asked = asked.with_client_metadata_url(url.clone());
        }
        if let Some((id, secret)) = &self.client {
            asked = asked.with_preregistered_client(id.clone());
            if let Some(secret) = secret {
                asked = asked.with_client_secret(secret.clone());
            }
        }
        // The server's challenge names its metadata and the scopes to start with.
        if let Some(challenge) = &request.challenge {
            asked = asked.with_challenge(challenge.clone());
        }
        state
            .start_authorization(asked)
            .await
            .map_err(failed("signing in could not start"))?;
        let url = state
            .get_authorization_url()
            .await
            .map_err(failed("no authorization URL"))?;
        let answer = (self.authorize)(url).await?;
        let callback = AuthorizationCallback::from_redirect_url(&answer)
            .map_err(failed("the authorization response"))?;
        state
            .handle_callback_with_issuer(
                &callback.code,
                &callback.csrf_token,
                callback.issuer.as_deref(),
            )
            .await
            .map_err(failed("the authorization was refused"))?;
        state
            .into_authorization_manager()
            .ok_or_else(|| "signing in did not finish".to_owned())
    }
}

/// Why a step of signing in failed, for the application's log.
fn failed(step: &'static str) -> impl Fn(rmcp::transport::auth::AuthError) -> String {
    move |err| format!("{step}: {err}")
}

impl TokenSource for AuthorizationCode {
    fn token(&self, request: TokenRequest) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(self.fetch(request))
    }

    /// A person is asked only when a server wants a token, with its challenge in hand.
    fn waits_for_challenge(&self) -> bool {
        true
    }
}
