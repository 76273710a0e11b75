//! What the streamable HTTP endpoint checks before rmcp sees a request, and its sessions.
//!
//! - **Host** (DNS rebinding): the header is parsed strictly (a name or an address, a
//!   bracketed IPv6 literal, an optional port, nothing else) and must name an allowed host.
//! - **Origin**: the MCP transport specification (2025-11-25, "Security Warning") says servers
//!   MUST validate the `Origin` header and answer 403 to an invalid one. Loopback origins are
//!   allowed by default; [`HttpOptions::allowed_origins`](super::HttpOptions::allowed_origins)
//!   widens the list.
//! - **The body** is at most the message limit and is checked like a stdio line (JSON, limits,
//!   no key twice in one object) without building it, so rmcp never parses a document that
//!   could cost more than the limits allow.
//! - **Sessions** are capped in number (`sessions`); only a request that would open one (an
//!   `initialize` without a session id) is refused at the cap.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::Value;

use crate::limits::InputLimits;

/// What the guard in front of rmcp checks.
#[derive(Clone, Debug)]
pub(super) struct Guard {
    pub(super) allowed_hosts: Vec<String>,
    pub(super) allowed_origins: Vec<String>,
    pub(super) limits: InputLimits,
    pub(super) sessions: Arc<super::sessions::Sessions>,
    /// The server that answers a plain call in place, when it serves without sessions.
    pub(super) in_place: Option<super::server::McpServer>,
    /// The server, whose context hook names a request's principal.
    pub(super) server: super::server::McpServer,
}

/// The middleware: Host, Origin, then the body; a refused request never reaches rmcp.
pub(super) async fn guard(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(refused) = host_and_origin(&guard, &request) {
        return refused;
    }
    // A resource server: the metadata is public; every other request shows a valid token
    // before anything of it is read, and its grant names the principal.
    #[cfg(feature = "mcp-auth")]
    let (mut request, granted) = match &guard.server.config.gate {
        Some(gate) if gate.serves_metadata_at(request.uri().path()) => {
            return next.run(request).await;
        }
        Some(gate) => match gate.check(request.headers()).await {
            Ok(grant) => (request, Some(grant)),
            Err(refused) => return unauthorized(gate, &refused),
        },
        None => (request, None),
    };
    let headers = request.headers();
    // A session is its opener's: another principal's request with its id is answered as
    // for an unknown session (MCP's security best practices: bind session ids to the user).
    let principal = guard.server.principal_of_headers(headers);
    #[cfg(feature = "mcp-auth")]
    let principal = match &granted {
        Some(grant) => Some(grant.subject().to_owned()),
        None => principal,
    };
    let session = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(id) = &session
        && !guard.sessions.belongs(id, principal.as_deref())
    {
        return refuse(StatusCode::NOT_FOUND, "Not Found: Session not found");
    }
    #[cfg(feature = "mcp-auth")]
    if let Some(grant) = granted.clone() {
        request.extensions_mut().insert(grant);
    }
    if request.method() != http::Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match read_limited(body, guard.limits.max_bytes).await {
        Ok(bytes) => bytes,
        Err(start) => {
            return json_rpc_refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                // Answered with the request's id when its start names one.
                &crate::json::request_id::request_id(&start).unwrap_or(Value::Null),
                &format!(
                    "Parse error: the message is longer than {} bytes; send a shorter one",
                    guard.limits.max_bytes
                ),
            );
        }
    };
    let refusal = match std::str::from_utf8(&bytes) {
        Ok(text) => crate::validate::reader::check(text, &guard.limits)
            .err()
            .map(|r| {
                (
                    super::stdio::refused_id(&r, &bytes),
                    super::stdio::refusal_text(&r, &guard.limits),
                )
            }),
        Err(_) => Some((
            Value::Null,
            "Parse error: the message is not UTF-8".to_owned(),
        )),
    };
    if let Some((id, message)) = refusal {
        return json_rpc_refusal(StatusCode::BAD_REQUEST, &id, &message);
    }
    // A call of a tool whose scopes the token lacks: 403, naming the scopes to ask for.
    #[cfg(feature = "mcp-auth")]
    if let (Some(gate), Some(grant)) = (&guard.server.config.gate, &granted)
        && gate.scoped()
        && let Some(needed) = scopes_lacking(&guard.server, &bytes, grant)
    {
        return insufficient_scope(gate, &needed);
    }
    // A JSON-RPC batch (an array): MCP has none since 2025-06-18. Answered as stdio answers
    // it, with a JSON-RPC error, not rmcp's plain-text 415.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        let body = super::stdio::error_answer(
            &Value::Null,
            -32600,
            "Invalid Request: a batch of messages is not accepted; send one JSON-RPC request per message",
        );
        return (
            StatusCode::BAD_REQUEST,
            [(http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
    }
    // Only an `initialize` without a session id opens a session: the cap on sessions never
    // refuses a request that needs none (MCP 2026-07-28, a stateless server's).
    // The count first: the body is read again only when the cap is reached.
    if !parts.headers.contains_key("mcp-session-id")
        && guard.sessions.full().await
        && opens_session(&bytes)
    {
        let mut response = refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "Service Unavailable: too many open sessions; retry later",
        );
        response.headers_mut().insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("5"),
        );
        return response;
    }
    if let Some(server) = &guard.in_place
        && let Some(plain) = super::stateless::plain_call(&parts, &bytes)
        && server.answers_in_place(&plain)
    {
        return server.answer_plain(plain, parts).await;
    }
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    // A session opened by this request is bound to its principal.
    if session.is_none()
        && let Some(id) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
    {
        guard.sessions.bind(id, principal);
    }
    response
}

#[cfg(feature = "mcp-auth")]
/// For a message that is a `tools/call` of a tool whose scopes `grant` lacks: the tool's
/// scopes, for the client to ask for.
fn scopes_lacking(
    server: &super::server::McpServer,
    body: &[u8],
    grant: &crate::context::Grant,
) -> Option<Vec<String>> {
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
        params: Option<Params<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        name: Option<std::borrow::Cow<'a, str>>,
    }
    let message: Message<'_> = serde_json::from_slice(body).ok()?;
    if message.method.as_deref() != Some("tools/call") {
        return None;
    }
    let name = message.params?.name?;
    let toolbox = &server.config.toolbox;
    let (_, own) = toolbox.find_own(
        &name,
        crate::toolbox::Spelling::Provider(crate::provider::Dialect::Mcp),
    )?;
    let scopes = toolbox.get(own)?.definition().scopes();
    (!grant.allows(scopes)).then(|| scopes.to_vec())
}

/// The refusal of a request whose Host or Origin header is not allowed.
fn host_and_origin(guard: &Guard, request: &Request) -> Option<Response> {
    let headers = request.headers();
    let host = headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| request.uri().authority().map(|a| a.as_str().to_owned()));
    match host.as_deref().map(parse_authority) {
        Some(Some((name, port))) if host_allowed(&name, port, &guard.allowed_hosts) => {}
        Some(Some(_)) => {
            return Some(refuse(
                StatusCode::FORBIDDEN,
                "Forbidden: Host header is not allowed",
            ));
        }
        _ => {
            return Some(refuse(
                StatusCode::BAD_REQUEST,
                "Bad Request: invalid or missing Host header",
            ));
        }
    }
    if let Some(origin) = headers.get(http::header::ORIGIN) {
        let allowed = origin
            .to_str()
            .ok()
            .and_then(parse_origin)
            .is_some_and(|origin| origin_allowed(&origin, &guard.allowed_origins));
        if !allowed {
            return Some(refuse(
                StatusCode::FORBIDDEN,
                "Forbidden: Origin header is not allowed",
            ));
        }
    }
    None
}

/// Whether a message (already checked under the limits) is an `initialize` request.
fn opens_session(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Method<'_>>(body)
        .ok()
        .and_then(|m| m.method)
        .is_some_and(|method| method == "initialize")
}

/// The answer to a request without a valid token: 401 with the challenge (RFC 6750 §3,
/// RFC 9728 §5.1), or 503 when the token cannot be checked now.
#[cfg(feature = "mcp-auth")]
fn unauthorized(gate: &super::auth::gate::Gate, refused: &super::auth::gate::Refused) -> Response {
    if matches!(refused, super::auth::gate::Refused::Unavailable) {
        let mut response = refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "Service Unavailable: the access token cannot be checked now; retry later",
        );
        response.headers_mut().insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("5"),
        );
        return response;
    }
    challenged(
        StatusCode::UNAUTHORIZED,
        "Unauthorized: send an access token for this resource (see its metadata)",
        &gate.challenge(refused),
    )
}

/// A refusal with its `WWW-Authenticate` challenge.
#[cfg(feature = "mcp-auth")]
fn challenged(status: StatusCode, message: &'static str, challenge: &str) -> Response {
    let mut response = refuse(status, message);
    if let Ok(value) = http::HeaderValue::from_str(challenge) {
        response
            .headers_mut()
            .insert(http::header::WWW_AUTHENTICATE, value);
    }
    response
}

/// The answer to a call whose token lacks scopes the tool needs: 403 with the step-up
/// challenge (RFC 6750 §3.1, `insufficient_scope`).
#[cfg(feature = "mcp-auth")]
fn insufficient_scope(gate: &super::auth::gate::Gate, needed: &[String]) -> Response {
    let needed: Vec<&str> = needed.iter().map(String::as_str).collect();
    challenged(
        StatusCode::FORBIDDEN,
        "Forbidden: the access token lacks a scope this tool needs; ask for the scopes named in WWW-Authenticate",
        &gate.step_up(&needed),
    )
}

fn refuse(status: StatusCode, message: &'static str) -> Response {
    (status, message).into_response()
}

/// A JSON-RPC parse error for a refused body, with the request's id when it could be read.
fn json_rpc_refusal(status: StatusCode, id: &Value, message: &str) -> Response {
    let body = super::stdio::error_answer(id, -32700, message);
    (
        status,
        [(http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`, the host lowercased; `None` for anything else.
pub(super) fn parse_authority(authority: &str) -> Option<(String, Option<u16>)> {
    let (host, rest) = if let Some(inner) = authority.strip_prefix('[') {
        let end = inner.find(']')?;
        let literal = &inner[..end];
        literal.parse::<std::net::Ipv6Addr>().ok()?;
        (literal.to_ascii_lowercase(), &inner[end + 1..])
    } else {
        let (host, rest) = match authority.find(':') {
            Some(at) => (&authority[..at], &authority[at..]),
            None => (authority, ""),
        };
        let valid = !host.is_empty()
            && host.len() <= 253
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
        if !valid {
            return None;
        }
        (host.to_ascii_lowercase(), rest)
    };
    let port = match rest {
        "" => None,
        rest => {
            let digits = rest.strip_prefix(':')?;
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some(digits.parse::<u16>().ok()?)
        }
    };
    Some((host, port))
}

/// Whether `host` (and `port`) is one of `allowed`, each a host or `host:port`.
fn host_allowed(host: &str, port: Option<u16>, allowed: &[String]) -> bool {
    allowed.iter().any(|entry| {
        let entry = entry.trim();
        match parse_authority(entry) {
            Some((name, Some(p))) => name == host && port == Some(p),
            Some((name, None)) => name == host,
            // `::1` written without brackets.
            None => entry
                .parse::<std::net::Ipv6Addr>()
                .is_ok_and(|ip| host.parse::<std::net::Ipv6Addr>().is_ok_and(|h| h == ip)),
        }
    })
}

/// An origin, `scheme://host[:port]`.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Origin {
    scheme: String,
    host: String,
    port: Option<u16>,
}

pub(super) fn parse_origin(text: &str) -> Option<Origin> {
    let (scheme, rest) = text.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if !matches!(scheme.as_str(), "http" | "https") {
        return None;
    }
    let (host, port) = parse_authority(rest)?;
    Some(Origin { scheme, host, port })
}

/// Whether `origin` is allowed: a loopback host (any port), or one of `allowed`, each an
/// origin (`https://app.example.com`, any port unless one is given) or `*`.
fn origin_allowed(origin: &Origin, allowed: &[String]) -> bool {
    if matches!(origin.host.as_str(), "localhost" | "127.0.0.1" | "::1") {
        return true;
    }
    allowed.iter().any(|entry| {
        if entry == "*" {
            return true;
        }
        parse_origin(entry).is_some_and(|e| {
            e.scheme == origin.scheme
                && e.host == origin.host
                && (e.port.is_none() || e.port == origin.port)
        })
    })
}

/// The bytes of a request's body, or, for one longer than `max` bytes (or cut off), its first
/// 4 KiB, where its id is: the rest is dropped as it arrives, never held.
async fn read_limited(body: axum::body::Body, max: usize) -> Result<axum::body::Bytes, Vec<u8>> {
    use futures_util::StreamExt as _;
    const START: usize = 4096;
    let mut stream = body.into_data_stream();
    let mut held: Vec<u8> = Vec::new();
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else {
            held.truncate(START);
            return Err(held);
        };
        if held.len() + chunk.len() > max {
            let room = START.saturating_sub(held.len()).min(chunk.len());
            held.extend_from_slice(&chunk[..room]);
            held.truncate(START);
            return Err(held);
        }
        held.extend_from_slice(&chunk);
    }
    Ok(held.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_are_parsed_strictly() {
        assert_eq!(
            parse_authority("localhost"),
            Some(("localhost".into(), None))
        );
        assert_eq!(
            parse_authority("LocalHost:8080"),
            Some(("localhost".into(), Some(8080)))
        );
        assert_eq!(parse_authority("[::1]:80"), Some(("::1".into(), Some(80))));
        assert_eq!(parse_authority("[::1]"), Some(("::1".into(), None)));
        for bad in [
            "[::1].evil.example.com",
            "[::1]evil",
            "[::1]:80x",
            "[::1:80",
            "[evil.com]",
            "localhost:",
            "localhost:99999",
            "local host",
            "localhost@evil.com",
            "evil.com#localhost",
            "",
            "::1",
        ] {
            assert_eq!(parse_authority(bad), None, "{bad}");
        }
        let allowed = ["localhost".to_owned(), "127.0.0.1".into(), "::1".into()];
        assert!(host_allowed("::1", Some(3000), &allowed));
        assert!(host_allowed("localhost", None, &allowed));
        assert!(!host_allowed("evil.example.com", None, &allowed));
        assert!(!host_allowed("localhost.evil.com", None, &allowed));
    }

    #[test]
    fn origins_are_loopback_or_listed() {
        let listed = ["https://app.example.com".to_owned()];
        let allowed = |o: &str| parse_origin(o).is_some_and(|o| origin_allowed(&o, &listed));
        assert!(allowed("http://localhost:3000"));
        assert!(allowed("http://127.0.0.1"));
        assert!(allowed("http://[::1]:8080"));
        assert!(allowed("https://app.example.com"));
        assert!(!allowed("http://app.example.com"));
        assert!(!allowed("https://evil.example.com"));
        assert!(!allowed("https://localhost.evil.com"));
        assert!(!allowed("null"));
        assert!(!allowed("file://"));
        assert!(!allowed("http://[::1].evil.com"));
    }
}
