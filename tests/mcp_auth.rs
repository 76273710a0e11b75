//! An MCP server as an OAuth resource server, against a real authorization server that signs
//! JWTs with a published key set (oauth2-mock-server, from npm, started on 127.0.0.1 on a free
//! port): metadata, every way a token is refused, scopes per tool, and the token's subject as
//! the principal.
//!
//! `scripts/test.sh` installs the authorization server into `target/oauth/` and requires it
//! (`TOOLSMITH_REQUIRE_OAUTH=1`); without it these tests say so and pass nothing off as run.

#[path = "support/http.rs"]
mod http_exchange;
#[path = "support/oracle.rs"]
mod oracle;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_exchange::{exchange, message};
use serde_json::{Value, json};
use toolsmith::mcp::{
    Authorization, HttpOptions, IntrospectionVerifier, JwtVerifier, McpServer, ScopeListing,
    TokenVerifier,
};
use toolsmith::toolset::{ClientCredentials, McpToolset, TokenRequest};
use toolsmith::{ToolContext, ToolError, Toolbox, tool};

/// Reads a ticket, as the caller. Read-only. Not for changing tickets.
#[tool(effect = "read", scopes = ["tickets:read"])]
fn read_ticket(
    ctx: &ToolContext,
    /// The ticket.
    #[arg(range(min = 1, max = 1000))]
    id: u64,
) -> String {
    format!("ticket {id} for {}", ctx.principal().unwrap_or("nobody"))
}

/// Closes a ticket. Writes the ticket. Not for reopening tickets.
#[tool(effect = "write", scopes = ["tickets:write"])]
fn close_ticket(
    ctx: &ToolContext,
    /// The ticket.
    #[arg(range(min = 1, max = 1000))]
    id: u64,
) -> Result<String, ToolError> {
    Ok(format!(
        "closed {id} for {}",
        ctx.principal().unwrap_or("nobody")
    ))
}

/// An authorization server of the test's, stopped when dropped.
struct Issuer {
    child: Child,
    url: String,
}

impl Drop for Issuer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where `scripts/test.sh` installed the authorization server's package.
fn node_modules() -> Option<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/oauth/node_modules");
    dir.join("oauth2-mock-server").exists().then_some(dir)
}

/// Starts an authorization server, or `None` (and says why) when it is not installed.
fn issuer() -> Option<Issuer> {
    let Some(modules) = node_modules() else {
        assert!(
            std::env::var_os("TOOLSMITH_REQUIRE_OAUTH").is_none(),
            "the authorization server is required and not installed: run scripts/test.sh"
        );
        eprintln!("skipped: no authorization server in target/oauth (scripts/test.sh installs it)");
        return None;
    };
    let mut child = Command::new("node")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/oauth/server.js"
        ))
        .env("NODE_PATH", modules)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let issuer = Issuer {
        child,
        url: line.trim().to_owned(),
    };
    assert!(
        issuer.url.starts_with("http://127.0.0.1:"),
        "{}",
        issuer.url
    );
    Some(issuer)
}

/// A free port on the loopback interface, for a server whose resource URL names it.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A token from `issuer`'s token endpoint, with the claims `fields` ask for.
async fn token(issuer: &Issuer, fields: &[(&str, &str)]) -> String {
    token_at(&issuer.url, fields).await
}

/// A token of `issuer`'s for `sub`, for `resource`, with `scope`.
async fn user_token(issuer: &Issuer, sub: &str, resource: &str, scope: &str) -> String {
    token(issuer, &[("sub", sub), ("aud", resource), ("scope", scope)]).await
}

/// The tools of the protected server at `url` as proxies, its client signed in by `source`
/// (the server is this test's own: its annotations are believed).
async fn signed_in_proxies(url: &str, source: impl toolsmith::toolset::TokenSource) -> Toolbox {
    let remote = McpToolset::http_signed_in("tickets", url, source)
        .await
        .unwrap()
        .trusted();
    Toolbox::new().with_toolset(remote.tools().await.unwrap())
}

/// A token from the token endpoint of the authorization server at `url`.
async fn token_at(url: &str, fields: &[(&str, &str)]) -> String {
    let addr: SocketAddr = url.trim_start_matches("http://").parse().unwrap();
    let mut form = vec!["grant_type=client_credentials".to_owned()];
    form.extend(fields.iter().map(|(k, v)| {
        format!(
            "{k}={}",
            v.replace(' ', "+").replace(':', "%3A").replace('/', "%2F")
        )
    }));
    let body = form.join("&");
    let request = format!(
        "POST /token HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/x-www-form-urlencoded\r\nauthorization: Basic ZGVzazpzZWNyZXQ=\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let answer = exchange(addr, request, |_| false).await;
    let json = &answer[answer.find("\r\n\r\n").unwrap() + 4..];
    let doc: Value = serde_json::from_str(json.trim()).unwrap_or_else(|_| panic!("{answer}"));
    doc["access_token"].as_str().unwrap().to_owned()
}

/// The protected server: two tools, each with its scope; stateless HTTP, so that a plain call
/// is answered in place and a listing goes through rmcp.
async fn protected(issuer: &Issuer, listing: ScopeListing) -> (toolsmith::mcp::HttpServer, String) {
    protected_by(issuer, listing, |resource| {
        JwtVerifier::new(&issuer.url, resource)
    })
    .await
}

/// [`protected`], its tokens checked by the verifier `verifier` makes for its resource.
async fn protected_by<V: TokenVerifier>(
    issuer: &Issuer,
    listing: ScopeListing,
    verifier: impl FnOnce(&str) -> V,
) -> (toolsmith::mcp::HttpServer, String) {
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let verifier = verifier(&resource);
    let http = McpServer::new(Toolbox::new().with(ReadTicket).with(CloseTicket))
        .with_http(HttpOptions {
            stateless: true,
            ..HttpOptions::default()
        })
        .with_authorization(
            Authorization::new(&resource, verifier)
                .with_authorization_server(&issuer.url)
                .with_scopes_supported(["tickets:read", "tickets:write"])
                .with_write_scopes(["*:write"])
                .with_listing(listing),
        )
        .unwrap()
        .bind_http(("127.0.0.1", port))
        .await
        .unwrap();
    (http, resource)
}

/// A JSON-RPC request to the server, with `authorization` as the header's value.
async fn post(addr: SocketAddr, authorization: Option<&str>, body: &Value) -> String {
    let body = body.to_string();
    let auth = authorization.map_or(String::new(), |v| format!("authorization: {v}\r\n"));
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\n{auth}connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    exchange(addr, request, |_| false).await
}

fn call(name: &str, id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": {"id": id}}})
}

fn status(answer: &str) -> u16 {
    answer[9..12].parse().unwrap()
}

fn header<'a>(answer: &'a str, name: &str) -> Option<&'a str> {
    let head = &answer[..answer.find("\r\n\r\n").unwrap_or(answer.len())];
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resource_server_takes_only_its_own_valid_tokens_and_their_scopes() {
    let Some(issuer) = issuer() else { return };
    let (http, resource) = protected(&issuer, ScopeListing::Hide).await;
    let addr = http.local_addr();
    let metadata_url = format!(
        "http://127.0.0.1:{}/.well-known/oauth-protected-resource/mcp",
        addr.port()
    );

    // The metadata, at both places, without a token.
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let answer = exchange(
            addr,
            format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"),
            |_| false,
        )
        .await;
        assert_eq!(status(&answer), 200, "{answer}");
        let doc: Value =
            serde_json::from_str(answer[answer.find("\r\n\r\n").unwrap() + 4..].trim()).unwrap();
        assert_eq!(doc["resource"], resource.as_str());
        assert_eq!(doc["authorization_servers"], json!([issuer.url]));
        assert_eq!(
            doc["scopes_supported"],
            json!(["tickets:read", "tickets:write"])
        );
    }

    // Only the metadata itself is open: a path beside it asks for a token like any other.
    let beside = exchange(
        addr,
        format!(
            "GET /.well-known/oauth-protected-resource/mcp/../other HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
        ),
        |_| false,
    )
    .await;
    assert_eq!(status(&beside), 401, "{beside}");

    // No token: 401, where the metadata is, and the scopes to start with (the supported
    // ones that are not write scopes).
    let answer = post(addr, None, &call("read_ticket", 1)).await;
    assert_eq!(status(&answer), 401, "{answer}");
    let challenge = header(&answer, "www-authenticate").unwrap();
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{metadata_url}\", scope=\"tickets:read\"")
    );

    // Tokens that are not this server's: each 401 `invalid_token`.
    let good = [
        ("sub", "ada"),
        ("aud", resource.as_str()),
        ("scope", "tickets:read"),
    ];
    let with = |change: (&'static str, &'static str)| {
        let mut fields: Vec<(&str, &str)> = good.to_vec();
        fields.retain(|(k, _)| *k != change.0);
        fields.push(change);
        fields
    };
    let valid = token(&issuer, &good).await;
    let mut refused = vec![
        (
            "a header that is no bearer token",
            "Basic YWRhOnB3".to_owned(),
        ),
        (
            "expired",
            format!(
                "Bearer {}",
                token(&issuer, &with(("exp_in", "-3600"))).await
            ),
        ),
        (
            "not yet valid",
            format!("Bearer {}", token(&issuer, &with(("nbf_in", "3600"))).await),
        ),
        (
            "another issuer",
            format!(
                "Bearer {}",
                token(&issuer, &with(("iss", "http://127.0.0.1:1"))).await
            ),
        ),
        (
            "another resource",
            format!(
                "Bearer {}",
                token(&issuer, &with(("aud", "http://127.0.0.1:1/mcp"))).await
            ),
        ),
        (
            "an unknown key id",
            format!(
                "Bearer {}",
                token(&issuer, &with(("kid", "no-such-key"))).await
            ),
        ),
    ];
    // Signed with `none`.
    let parts: Vec<&str> = valid.split('.').collect();
    let none_header = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0";
    refused.push(("alg none", format!("Bearer {none_header}.{}.", parts[1])));
    // A payload changed after signing: the write scope added.
    let payload = String::from_utf8(base64url_decode(parts[1])).unwrap();
    let widened = payload.replace("tickets:read", "tickets:read tickets:write");
    assert_ne!(payload, widened);
    refused.push((
        "a tampered payload",
        format!(
            "Bearer {}.{}.{}",
            parts[0],
            base64url_encode(widened.as_bytes()),
            parts[2]
        ),
    ));
    // Signed by another authorization server's key, claiming this issuer.
    let other = self::issuer().unwrap();
    let forged = token(
        &other,
        &[
            ("sub", "ada"),
            ("aud", resource.as_str()),
            ("scope", "tickets:read"),
            ("iss", issuer.url.as_str()),
        ],
    )
    .await;
    refused.push(("another key for this issuer", format!("Bearer {forged}")));
    for (case, value) in &refused {
        let answer = post(addr, Some(value), &call("read_ticket", 1)).await;
        assert_eq!(status(&answer), 401, "{case}: {answer}");
        let challenge = header(&answer, "www-authenticate").unwrap();
        assert!(
            challenge.contains("error=\"invalid_token\""),
            "{case}: {challenge}"
        );
        assert!(challenge.contains(&metadata_url), "{case}: {challenge}");
    }

    // A valid token: its subject is the principal, its scopes choose the tools.
    let bearer = format!("Bearer {valid}");
    let answer = post(addr, Some(&bearer), &call("read_ticket", 7)).await;
    assert_eq!(status(&answer), 200, "{answer}");
    let text = message(&answer)["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("ticket 7 for ada"), "{text}");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let listed = message(&post(addr, Some(&bearer), &list).await);
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read_ticket"]);
    // A call its scopes do not allow: 403, naming the scope to ask for; nothing ran.
    let answer = post(addr, Some(&bearer), &call("close_ticket", 7)).await;
    assert_eq!(status(&answer), 403, "{answer}");
    let challenge = header(&answer, "www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(challenge.contains("scope=\"tickets:write\""), "{challenge}");
    // Stepped up: the wider token runs it, for the same subject.
    let wider = token(&issuer, &with(("scope", "tickets:read tickets:write"))).await;
    let answer = post(
        addr,
        Some(&format!("Bearer {wider}")),
        &call("close_ticket", 7),
    )
    .await;
    assert_eq!(status(&answer), 200, "{answer}");
    let text = message(&answer)["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("closed 7 for ada"), "{text}");
    http.shutdown().await.unwrap();
}

/// Revokes `token` at `issuer`'s revocation endpoint (RFC 7009).
async fn revoke(issuer: &Issuer, token: &str) {
    let addr: SocketAddr = issuer.url.trim_start_matches("http://").parse().unwrap();
    let body = format!("token={token}");
    let request = format!(
        "POST /revoke HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/x-www-form-urlencoded\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let answer = exchange(addr, request, |_| false).await;
    assert_eq!(status(&answer), 200, "{answer}");
}

/// The text of a call's first content block.
fn text_of(answer: &str) -> String {
    message(answer)["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opaque_tokens_are_introspected_and_a_revoked_one_is_refused() {
    let Some(issuer) = issuer() else { return };
    let introspect = format!("{}/introspect", issuer.url);
    let checked = |cache_for: Duration| {
        let introspect = introspect.clone();
        let trusted = issuer.url.clone();
        move |resource: &str| {
            IntrospectionVerifier::new(introspect, resource)
                .with_client("mcp-server", "its-secret")
                .with_issuer(trusted)
                .with_cache_for(cache_for)
        }
    };
    let (http, resource) = protected_by(&issuer, ScopeListing::Hide, checked(Duration::ZERO)).await;
    let addr = http.local_addr();
    let opaque = |sub: &'static str, aud: String| {
        let issuer = &issuer;
        async move {
            token(
                issuer,
                &[
                    ("sub", sub),
                    ("aud", &aud),
                    ("scope", "tickets:read"),
                    ("opaque", "1"),
                ],
            )
            .await
        }
    };
    let ada = opaque("ada", resource.clone()).await;
    assert_eq!(ada.split('.').count(), 1, "an opaque token: {ada}");
    let answer = post(
        addr,
        Some(&format!("Bearer {ada}")),
        &call("read_ticket", 7),
    )
    .await;
    assert_eq!(status(&answer), 200, "{answer}");
    assert!(text_of(&answer).contains("ticket 7 for ada"));
    // Its scopes hold as a JWT's do.
    let answer = post(
        addr,
        Some(&format!("Bearer {ada}")),
        &call("close_ticket", 7),
    )
    .await;
    assert_eq!(status(&answer), 403, "{answer}");

    // Revoked: refused on the next request.
    revoke(&issuer, &ada).await;
    let answer = post(
        addr,
        Some(&format!("Bearer {ada}")),
        &call("read_ticket", 7),
    )
    .await;
    assert_eq!(status(&answer), 401, "{answer}");
    assert!(
        header(&answer, "www-authenticate")
            .unwrap()
            .contains("invalid_token")
    );

    // For another resource, or unknown to the issuer: refused.
    let elsewhere = opaque("bo", "http://127.0.0.1:1/mcp".to_owned()).await;
    let unknown = "bm90LWEtdG9rZW4";
    for bad in [elsewhere.as_str(), unknown] {
        let answer = post(
            addr,
            Some(&format!("Bearer {bad}")),
            &call("read_ticket", 7),
        )
        .await;
        assert_eq!(status(&answer), 401, "{bad}: {answer}");
    }
    http.shutdown().await.unwrap();

    // Kept for a while (the default): a revoked token still works until then, which is the
    // bound the setting documents.
    let (http, resource) = protected_by(
        &issuer,
        ScopeListing::Hide,
        checked(Duration::from_secs(300)),
    )
    .await;
    let addr = http.local_addr();
    let cy = opaque("cy", resource).await;
    let first = post(addr, Some(&format!("Bearer {cy}")), &call("read_ticket", 1)).await;
    assert_eq!(status(&first), 200, "{first}");
    revoke(&issuer, &cy).await;
    let kept = post(addr, Some(&format!("Bearer {cy}")), &call("read_ticket", 1)).await;
    assert_eq!(status(&kept), 200, "{kept}");
    http.shutdown().await.unwrap();

    // Without the server's own credentials the endpoint refuses to answer: the token cannot
    // be checked, so the request is refused for now (503), never taken.
    let (http, resource) = protected_by(&issuer, ScopeListing::Hide, |resource| {
        IntrospectionVerifier::new(format!("{}/introspect", issuer.url), resource)
    })
    .await;
    let addr = http.local_addr();
    let dee = opaque("dee", resource).await;
    let answer = post(
        addr,
        Some(&format!("Bearer {dee}")),
        &call("read_ticket", 1),
    )
    .await;
    assert_eq!(status(&answer), 503, "{answer}");
    assert!(header(&answer, "retry-after").is_some(), "{answer}");
    http.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_may_list_what_a_caller_must_step_up_for() {
    let Some(issuer) = issuer() else { return };
    let (http, resource) = protected(&issuer, ScopeListing::Show).await;
    let addr = http.local_addr();
    let reader = user_token(&issuer, "bo", &resource, "tickets:read").await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let listed = message(&post(addr, Some(&format!("Bearer {reader}")), &list).await);
    assert_eq!(
        listed["result"]["tools"].as_array().unwrap().len(),
        2,
        "{listed}"
    );
    let answer = post(
        addr,
        Some(&format!("Bearer {reader}")),
        &call("close_ticket", 3),
    )
    .await;
    assert_eq!(status(&answer), 403, "{answer}");
    http.shutdown().await.unwrap();
}

fn base64url_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = Vec::new();
    for c in text.bytes() {
        let v = ALPHABET.iter().position(|&a| a == c).unwrap() as u32;
        bits = (bits << 6) | v;
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
            bits &= (1 << n) - 1;
        }
    }
    out
}

fn base64url_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// Reads a ticket, asking to write. Read-only. Not for changing tickets.
#[tool(effect = "read", scopes = ["tickets:write"])]
fn peek_ticket(
    /// The ticket.
    #[arg(range(min = 1, max = 1000))]
    id: u64,
) -> u64 {
    id
}

/// Archives a ticket. Writes the ticket. Not for reading.
#[tool(effect = "write", scopes = ["archive:write"])]
fn archive_ticket(
    /// The ticket.
    #[arg(range(min = 1, max = 1000))]
    id: u64,
) -> u64 {
    id
}

/// A hand-written tool, for its definition's scopes.
struct Quoted(toolsmith::ToolDefinition);

impl toolsmith::Tool for Quoted {
    fn definition(&self) -> &toolsmith::ToolDefinition {
        &self.0
    }
    fn call<'a>(
        &'a self,
        _: toolsmith::Arguments<'a>,
        _: &'a ToolContext,
    ) -> toolsmith::tool::BoxFuture<'a, toolsmith::ToolOutcome> {
        Box::pin(async { toolsmith::ToolOutcome::success("x").unwrap() })
    }
}

#[test]
fn tools_whose_scopes_do_not_fit_the_server_are_refused_when_it_is_built() {
    let resource = "http://127.0.0.1:1/mcp";
    let authorization = || {
        Authorization::new(resource, JwtVerifier::new("http://127.0.0.1:2", resource))
            .with_scopes_supported(["tickets:read", "tickets:write"])
            .with_write_scopes(["*:write"])
    };
    let err = McpServer::new(Toolbox::new().with(ReadTicket).with(ArchiveTicket))
        .with_authorization(authorization())
        .unwrap_err();
    assert!(
        matches!(err, toolsmith::mcp::ScopeError::Unsupported { .. }),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("`archive_ticket` needs the scope `archive:write`"),
        "{err}"
    );
    let err = McpServer::new(Toolbox::new().with(PeekTicket))
        .with_authorization(authorization())
        .unwrap_err();
    assert!(
        matches!(err, toolsmith::mcp::ScopeError::WriteScopeOnReadTool { .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("`peek_ticket` is read-only"),
        "{err}"
    );
    assert!(
        McpServer::new(Toolbox::new().with(ReadTicket).with(CloseTicket))
            .with_authorization(authorization())
            .is_ok()
    );
    // A scope that is no OAuth scope token, from a hand-written definition or the server's
    // own setting, would break the challenge that names it: refused.
    let quoted = Quoted(
        toolsmith::ToolDefinition::new("quoted", "Reads. Read-only.", json!({"type": "object"}))
            .with_scopes(["tickets:\"read"]),
    );
    let err = McpServer::new(Toolbox::new().with(quoted))
        .with_authorization(authorization())
        .unwrap_err();
    assert!(
        matches!(&err, toolsmith::mcp::ScopeError::Malformed { tool: Some(t), .. } if t == "quoted"),
        "{err}"
    );
    let err = McpServer::new(Toolbox::new().with(ReadTicket))
        .with_authorization(authorization().with_scopes_supported(["tickets:\"read"]))
        .unwrap_err();
    assert!(
        matches!(
            err,
            toolsmith::mcp::ScopeError::Malformed { tool: None, .. }
        ),
        "{err}"
    );
    let err = McpServer::new(Toolbox::new().with(ReadTicket))
        .with_authorization(authorization().with_challenge_scopes(["a b"]))
        .unwrap_err();
    assert!(err.to_string().contains("no OAuth scope token"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_signs_in_and_steps_up_once_for_a_tool_that_needs_more() {
    let Some(issuer) = issuer() else { return };
    let (http, resource) = protected(&issuer, ScopeListing::Show).await;
    let url = resource.clone();
    // A source that asks the authorization server for what it is told, counting the asks.
    let asked = Arc::new(Mutex::new(Vec::<Vec<String>>::new()));
    let source = {
        let asked = Arc::clone(&asked);
        let issuer_url = issuer.url.clone();
        move |request: TokenRequest| {
            let asked = Arc::clone(&asked);
            let issuer_url = issuer_url.clone();
            async move {
                asked.lock().unwrap().push(request.scopes.clone());
                let mut scopes = vec!["tickets:read".to_owned()];
                scopes.extend(request.scopes);
                let scope = scopes.join(" ");
                Ok(token_at(
                    &issuer_url,
                    &[
                        ("sub", "cy"),
                        ("aud", request.resource.as_str()),
                        ("scope", scope.as_str()),
                    ],
                )
                .await)
            }
        }
    };
    let proxies = signed_in_proxies(&url, source).await;
    let ctx = ToolContext::new();
    let out = proxies.call("read_ticket", json!({"id": 4}), &ctx).await;
    assert!(out.is_success(), "{}", out.to_json());
    assert!(
        out.to_json().contains("ticket 4 for cy"),
        "{}",
        out.to_json()
    );
    assert_eq!(asked.lock().unwrap().len(), 1);
    // The write tool needs `tickets:write`: one new token for it, and the call once more.
    let out = proxies.call("close_ticket", json!({"id": 4}), &ctx).await;
    assert!(out.is_success(), "{}", out.to_json());
    assert!(
        out.to_json().contains("closed 4 for cy"),
        "{}",
        out.to_json()
    );
    assert_eq!(
        asked.lock().unwrap().clone(),
        [Vec::<String>::new(), vec!["tickets:write".to_owned()]]
    );
    http.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_cannot_get_the_scope_asks_once_and_stops() {
    let Some(issuer) = issuer() else { return };
    let (http, resource) = protected(&issuer, ScopeListing::Show).await;
    let asks = Arc::new(Mutex::new(0_u32));
    let source = {
        let asks = Arc::clone(&asks);
        let issuer_url = issuer.url.clone();
        move |request: TokenRequest| {
            let asks = Arc::clone(&asks);
            let issuer_url = issuer_url.clone();
            async move {
                *asks.lock().unwrap() += 1;
                // This client is only ever given the read scope.
                Ok(token_at(
                    &issuer_url,
                    &[
                        ("sub", "di"),
                        ("aud", request.resource.as_str()),
                        ("scope", "tickets:read"),
                    ],
                )
                .await)
            }
        }
    };
    let proxies = signed_in_proxies(&resource, source).await;
    let out = proxies
        .call("close_ticket", json!({"id": 5}), &ToolContext::new())
        .await;
    // Refused for good, not retried: the toolbox's retries would only ask again.
    let err = out.error().unwrap();
    assert_eq!(
        err.code().as_str(),
        "permission_denied",
        "{}",
        out.to_json()
    );
    assert!(!err.is_retryable());
    assert_eq!(
        *asks.lock().unwrap(),
        2,
        "one token to sign in, one step-up, no loop"
    );
    http.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_get_a_token_for_the_server_they_call() {
    let Some(issuer) = issuer() else { return };
    let (http, resource) = protected(&issuer, ScopeListing::Hide).await;
    let source = ClientCredentials::new(format!("{}/token", issuer.url), "desk-bot", "its secret")
        .with_scopes(["tickets:read"]);
    let proxies = signed_in_proxies(&resource, source).await;
    let out = proxies
        .call("read_ticket", json!({"id": 9}), &ToolContext::new())
        .await;
    assert!(
        out.to_json().contains("ticket 9 for desk-bot"),
        "{}",
        out.to_json()
    );
    http.shutdown().await.unwrap();
}

/// The example's server process, stopped when dropped.
struct Example(Child);

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_serves_a_protected_toolbox() {
    let Some(issuer) = issuer() else { return };
    let exe = std::env::current_exe().unwrap();
    let binary = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join("examples").join("mcp_auth"))
        .unwrap();
    assert!(
        binary.exists(),
        "build the example first: cargo build --example mcp_auth --features mcp-auth (scripts/test.sh does)"
    );
    let addr = format!("127.0.0.1:{}", free_port());
    let mut child = Command::new(binary)
        .args([issuer.url.as_str(), addr.as_str()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _example = Example(child);
    let resource = line.trim().to_owned();
    assert_eq!(resource, format!("http://{addr}/mcp"));
    let addr: SocketAddr = addr.parse().unwrap();
    assert_eq!(
        status(&post(addr, None, &call("read_ticket", 3)).await),
        401
    );
    let reader = user_token(&issuer, "eve", &resource, "tickets:read").await;
    let bearer = format!("Bearer {reader}");
    // The example serves sessions: open one with the token, then call in it.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});
    let opened = post(addr, Some(&bearer), &init).await;
    assert_eq!(status(&opened), 200, "{opened}");
    let session = header(&opened, "mcp-session-id").unwrap().to_owned();
    let in_session = |body: &Value, auth: &str| {
        let body = body.to_string();
        format!(
            "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\nmcp-session-id: {session}\r\nauthorization: {auth}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    exchange(addr, in_session(&initialized, &bearer), |_| false).await;
    let read = exchange(addr, in_session(&call("read_ticket", 3), &bearer), |a| {
        a.contains("\"result\"")
    })
    .await;
    assert!(read.contains("ticket 3, read by eve"), "{read}");
    let closed = exchange(addr, in_session(&call("close_ticket", 3), &bearer), |_| {
        false
    })
    .await;
    assert_eq!(status(&closed), 403, "{closed}");
    assert!(
        header(&closed, "www-authenticate")
            .unwrap()
            .contains("scope=\"tickets:write\"")
    );
    // Another user's token cannot use eve's session.
    let other = user_token(&issuer, "mallory", &resource, "tickets:read").await;
    let taken = exchange(
        addr,
        in_session(&call("read_ticket", 3), &format!("Bearer {other}")),
        |_| false,
    )
    .await;
    assert_eq!(status(&taken), 404, "{taken}");

    // The official MCP Python SDK, as a user's application holding a token: refused without
    // one, the read tool only with the read scope, the write tool with both.
    if let Some(python) = oracle::python("the MCP Python SDK with a bearer token") {
        let reader = user_token(&issuer, "ada", &resource, "tickets:read").await;
        let writer = user_token(&issuer, "ada", &resource, "tickets:read tickets:write").await;
        let args: Vec<std::ffi::OsString> = [resource, reader, writer]
            .into_iter()
            .map(Into::into)
            .collect();
        tokio::task::spawn_blocking(move || {
            let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
            oracle::run(&python, "mcp/auth_client.py", &args, "the MCP Python SDK");
        })
        .await
        .unwrap();
    }
}

/// Who signs, as the user gives it.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Signer {
    name: String,
}

/// Asks who signs a ticket, then says who did. Read-only. Not for closing tickets.
#[tool(effect = "read", scopes = ["tickets:read"], timeout = "1m")]
async fn sign_ticket(ctx: &ToolContext) -> Result<String, ToolError> {
    Ok(
        match ctx.elicit_as::<Signer>("signer", "Who signs?").await? {
            toolsmith::caller::Elicited::Accepted(Signer { name }) => {
                format!(
                    "signed by {name} for {}",
                    ctx.principal().unwrap_or("nobody")
                )
            }
            _ => "not signed".to_owned(),
        },
    )
}

/// Lists every ticket. Read-only. Not for one ticket.
#[tool(effect = "read", scopes = ["tickets:read"], allow(unbounded_list))]
fn export_tickets() -> Vec<Value> {
    (0..1_000)
        .map(|i| json!({"id": i, "title": "a ticket"}))
        .collect()
}

/// How many tickets were deleted, by anyone.
static DELETED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Deletes a ticket for good. Deletes data. Not for closing tickets.
#[tool(effect = "destructive", scopes = ["tickets:write"])]
fn delete_ticket(
    ctx: &ToolContext,
    /// The ticket.
    #[arg(range(min = 1, max = 1000))]
    id: u64,
) -> String {
    DELETED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    format!("deleted {id} for {}", ctx.principal().unwrap_or("nobody"))
}

/// One MCP 2026-07-28 request (no session), as the holder of `token`.
async fn as_holder(addr: SocketAddr, token: &str, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    let name = params["name"]
        .as_str()
        .or(params["taskId"].as_str())
        .or(params["uri"].as_str())
        .map(|n| format!("mcp-name: {n}\r\n"))
        .unwrap_or_default();
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params}).to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: {method}\r\n{name}authorization: Bearer {token}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let answer = exchange(addr, request, http_exchange::whole_message).await;
    assert_eq!(status(&answer), 200, "{answer}");
    message(&answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_one_user_started_is_unknown_to_another_user_s_token() {
    let Some(issuer) = issuer() else { return };
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let approvals = Arc::new(toolsmith::policy::Approvals::new());
    let http = McpServer::new(
        Toolbox::new()
            .with(SignTicket)
            .with(ExportTickets)
            .with(DeleteTicket)
            .with_approver(Arc::clone(&approvals)),
    )
    .with_task_tool("sign_ticket", toolsmith::mcp::TaskSupport::Optional)
    .with_authorization(
        Authorization::new(&resource, JwtVerifier::new(&issuer.url, &resource))
            .with_scopes_supported(["tickets:read", "tickets:write"]),
    )
    .unwrap()
    .bind_http(("127.0.0.1", port))
    .await
    .unwrap();
    let addr = http.local_addr();
    let both = "tickets:read tickets:write";
    let ada = user_token(&issuer, "ada", &resource, both).await;
    let bo = user_token(&issuer, "bo", &resource, both).await;

    // A task of ada's, waiting for her answer: bo is told of no such task, whatever he asks.
    let created = as_holder(
        addr,
        &ada,
        "tools/call",
        json!({"name": "sign_ticket", "arguments": {}}),
    )
    .await;
    let task = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    let mut seen = Value::Null;
    for _ in 0..200 {
        seen = as_holder(addr, &ada, "tasks/get", json!({"taskId": task})).await;
        if seen["result"]["status"] == "input_required" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(seen["result"]["status"], "input_required", "{seen}");
    let answer = |name: &str| json!({"taskId": task, "inputResponses": {"signer": {"action": "accept", "content": {"name": name}}}});
    for (method, params) in [
        ("tasks/get", json!({"taskId": task})),
        ("tasks/update", answer("bo")),
        ("tasks/cancel", json!({"taskId": task})),
    ] {
        let refused = as_holder(addr, &bo, method, params).await;
        assert_eq!(refused["error"]["code"], -32602, "{method}: {refused}");
        assert_eq!(
            refused["error"]["message"],
            format!("unknown task: {task}"),
            "{method}: {refused}"
        );
    }
    let updated = as_holder(addr, &ada, "tasks/update", answer("Ada")).await;
    assert!(updated.get("error").is_none(), "{updated}");
    for _ in 0..200 {
        seen = as_holder(addr, &ada, "tasks/get", json!({"taskId": task})).await;
        if seen["result"]["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let text = seen["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{seen}"));
    assert!(text.contains("signed by Ada for ada"), "{text}");

    // A result stored for ada is read by ada, and by no one else.
    let exported = as_holder(
        addr,
        &ada,
        "tools/call",
        json!({"name": "export_tickets", "arguments": {}}),
    )
    .await;
    let uri = exported["result"]["content"][1]["uri"]
        .as_str()
        .unwrap_or_else(|| panic!("{exported}"))
        .to_owned();
    let read = as_holder(addr, &ada, "resources/read", json!({"uri": uri})).await;
    assert!(read["result"]["contents"][0]["text"].is_string(), "{read}");
    // Bo gets what a result that is not kept gets (on this revision, -32602).
    let refused = as_holder(addr, &bo, "resources/read", json!({"uri": uri})).await;
    let missing = as_holder(
        addr,
        &bo,
        "resources/read",
        json!({"uri": "toolsmith://results/ffff"}),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(refused["error"]["code"], missing["error"]["code"]);
    let tail = |m: &Value| {
        m["error"]["message"]
            .as_str()
            .unwrap()
            .split_once(": ")
            .map(|(_, t)| t.to_owned())
    };
    assert_eq!(tail(&refused), tail(&missing));

    // An approval is ada's: a person approves her pending call, and it runs for her; bo's
    // same call is still waiting for its own approval, and nothing of his runs.
    let delete = json!({"name": "delete_ticket", "arguments": {"id": 4}});
    let waiting = as_holder(addr, &ada, "tools/call", delete.clone()).await;
    assert!(
        waiting.to_string().contains("approval_required"),
        "{waiting}"
    );
    let pending = approvals.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].principal.as_deref(), Some("ada"));
    approvals.approve(&pending[0]);
    let refused = as_holder(addr, &bo, "tools/call", delete.clone()).await;
    assert!(
        refused.to_string().contains("approval_required"),
        "{refused}"
    );
    assert_eq!(DELETED.load(std::sync::atomic::Ordering::SeqCst), 0);
    let done = as_holder(addr, &ada, "tools/call", delete).await;
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{done}"));
    assert!(text.contains("deleted 4 for ada"), "{text}");
    assert_eq!(DELETED.load(std::sync::atomic::Ordering::SeqCst), 1);
    let waiting: Vec<_> = approvals
        .pending()
        .into_iter()
        .map(|p| p.principal)
        .collect();
    assert_eq!(waiting, [Some("bo".to_owned())]);
    // What a UI shows each of them.
    assert!(approvals.pending_for(Some("ada")).is_empty());
    assert_eq!(
        approvals.pending_for(Some("bo"))[0].arguments,
        json!({"id": 4})
    );
    http.shutdown().await.unwrap();
}

/// A person's consent, without a browser: the authorization URL is requested, and the
/// redirect it answers with is the answer (after `tamper`, to play an attacker); each URL
/// asked is kept in `asked`.
fn consent(
    asked: Arc<Mutex<Vec<String>>>,
    tamper: fn(String) -> String,
) -> toolsmith::toolset::AuthorizationCode {
    toolsmith::toolset::AuthorizationCode::new("http://127.0.0.1:9/callback", move |url: String| {
        asked.lock().unwrap().push(url.clone());
        async move {
            let addr: SocketAddr = url
                .trim_start_matches("http://")
                .split('/')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            let path = &url[url.find(&addr.to_string()).unwrap() + addr.to_string().len()..];
            let answer = exchange(
                addr,
                format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"),
                |_| false,
            )
            .await;
            header(&answer, "location")
                .map(|location| tamper(location.to_owned()))
                .ok_or_else(|| format!("no redirect: {answer}"))
        }
    })
    .with_client("desk", None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_signs_in_when_the_server_asks_and_steps_up_for_a_write() {
    let Some(issuer) = issuer() else { return };
    let (http, _) = protected(&issuer, ScopeListing::Show).await;
    let asked = Arc::new(Mutex::new(Vec::new()));
    let remote = McpToolset::http_signed_in(
        "tickets",
        &http.url(),
        consent(Arc::clone(&asked), |location| location),
    )
    .await
    .unwrap()
    .trusted();
    // Signed in once, when the server answered 401, for the scopes its challenge named.
    {
        let asked = asked.lock().unwrap();
        assert_eq!(asked.len(), 1, "{asked:?}");
        assert!(asked[0].contains("scope=tickets%3Aread"), "{}", asked[0]);
        assert!(asked[0].contains("code_challenge="), "PKCE: {}", asked[0]);
        assert!(asked[0].contains("resource="), "RFC 8707: {}", asked[0]);
    }
    let toolbox = Toolbox::new().with_toolset(remote.tools().await.unwrap());
    let ctx = ToolContext::new();
    let read = toolbox.call("read_ticket", json!({"id": 7}), &ctx).await;
    assert!(
        read.to_json().contains("ticket 7 for johndoe"),
        "{}",
        read.to_json()
    );
    // A write needs more: the person is asked once more, for the write scope too.
    let closed = toolbox.call("close_ticket", json!({"id": 7}), &ctx).await;
    assert!(
        closed.to_json().contains("closed 7 for johndoe"),
        "{}",
        closed.to_json()
    );
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[1].contains("tickets%3Awrite"), "{}", asked[1]);
    http.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_authorization_response_naming_another_issuer_is_refused() {
    let Some(issuer) = issuer() else { return };
    let (http, _) = protected(&issuer, ScopeListing::Hide).await;
    // A mix-up attack (RFC 9207): the response comes back naming another issuer.
    let forged = |location: String| {
        let (head, _) = location.split_once("&iss=").unwrap_or((&location, ""));
        format!("{head}&iss=http%3A%2F%2F127.0.0.1%3A1")
    };
    let asked = Arc::new(Mutex::new(Vec::new()));
    let refused = McpToolset::http_signed_in("tickets", &http.url(), consent(asked, forged)).await;
    let Err(err) = refused else {
        panic!("the forged response is taken")
    };
    assert!(err.to_string().to_lowercase().contains("issuer"), "{err}");
    http.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_find_their_token_endpoint_from_the_challenge() {
    let Some(issuer) = issuer() else { return };
    let (http, _) = protected(&issuer, ScopeListing::Hide).await;
    let source = ClientCredentials::discovered("desk", "secret");
    let toolbox = signed_in_proxies(&http.url(), source).await;
    let read = toolbox
        .call("read_ticket", json!({"id": 3}), &ToolContext::new())
        .await;
    assert!(
        read.to_json().contains("ticket 3 for desk"),
        "{}",
        read.to_json()
    );
    http.shutdown().await.unwrap();
}
