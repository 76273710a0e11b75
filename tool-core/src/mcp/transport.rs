//! The transports: stdio, any byte stream, and streamable HTTP behind its guard.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::serve::ListenerExt as _;
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::SessionStore;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use super::server::{HTTP_PATH, McpServer};
use super::sessions::Sessions;
use super::{http_guard, stdio};

impl McpServer {
    /// Serves one client on this process's stdin and stdout until it disconnects. Logs must
    /// go to stderr: stdout carries the protocol.
    ///
    /// # Errors
    ///
    /// When the client does not complete the `initialize` handshake or the connection fails.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        self.serve(rmcp::transport::stdio()).await
    }

    /// Serves one client over any byte stream carrying newline-delimited JSON-RPC (a pipe, a
    /// socket, `tokio::io::duplex` in tests) until it disconnects.
    ///
    /// ```
    /// use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    /// use toolsmith::mcp::McpServer;
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let (client, server) = tokio::io::duplex(1 << 16);
    /// tokio::spawn(McpServer::new(toolsmith::Toolbox::new()).serve(tokio::io::split(server)));
    /// let (read, mut write) = tokio::io::split(client);
    /// let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"doc","version":"1"}}}"#;
    /// write.write_all(format!("{initialize}\n").as_bytes()).await.unwrap();
    /// let answer = BufReader::new(read).lines().next_line().await.unwrap().unwrap();
    /// assert!(answer.contains(r#""protocolVersion":"2025-11-25""#));
    /// # });
    /// ```
    ///
    /// # Errors
    ///
    /// When the client does not complete the `initialize` handshake or the connection fails.
    pub async fn serve<R, W>(self, (read, write): (R, W)) -> Result<(), ServeError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let transport = stdio::transport(read, write, self.config.message_limits);
        #[cfg(feature = "otel")]
        let opened = std::time::Instant::now();
        let running = ServiceExt::serve(self.for_session(), transport)
            .await
            .map_err(ServeError::new)?;
        #[cfg(feature = "otel")]
        let protocol_version = running
            .peer_info()
            .map(|info| info.protocol_version.to_string());
        let ended = running.waiting().await;
        // The session's duration (`mcp.server.session.duration`), with the `otel` feature.
        #[cfg(feature = "otel")]
        crate::telemetry::record_mcp(
            "mcp.server.session.duration",
            opened.elapsed().as_secs_f64(),
            crate::telemetry::McpMeasure {
                protocol_version,
                transport: "pipe",
                error: ended.as_ref().err().map(|_| "connection_error".to_owned()),
                ..Default::default()
            },
        );
        ended.map_err(ServeError::new)?;
        Ok(())
    }

    /// Serves streamable HTTP at `http://{addr}/mcp` until [`HttpServer::shutdown`]. Bind
    /// `127.0.0.1:0` for a free local port; serving beyond the loopback interface also needs
    /// [`HttpOptions::allowed_hosts`](super::HttpOptions::allowed_hosts).
    ///
    /// ```no_run
    /// # async fn run(toolbox: toolsmith::Toolbox) -> std::io::Result<()> {
    /// use toolsmith::mcp::McpServer;
    ///
    /// let http = McpServer::new(toolbox).bind_http("127.0.0.1:8000").await?;
    /// println!("MCP endpoint: {}", http.url());
    /// http.wait().await
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// When the address cannot be bound.
    pub async fn bind_http(
        self,
        addr: impl tokio::net::ToSocketAddrs,
    ) -> std::io::Result<HttpServer> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let shutdown = CancellationToken::new();
        let mut config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(self.config.allowed_hosts.clone())
            .with_max_request_body_bytes(self.config.message_limits.max_bytes)
            .with_legacy_session_mode(!self.config.stateless_http)
            // Without sessions, a call with nothing to stream is answered as plain JSON.
            .with_json_response(self.config.stateless_http)
            .with_cancellation_token(shutdown.child_token());
        let sessions = Sessions::start(self.for_session(), shutdown.child_token());
        // Tells the sessions when a handshake is done and when a client deletes its session.
        config.session_store = Some(Arc::clone(&sessions) as Arc<dyn SessionStore>);
        let guard = Arc::new(http_guard::Guard {
            allowed_hosts: self.config.allowed_hosts.clone(),
            allowed_origins: self.config.allowed_origins.clone(),
            limits: self.config.message_limits,
            sessions: Arc::clone(&sessions),
            // Without sessions, a plain call is answered in place (`stateless`).
            in_place: self.config.stateless_http.then(|| self.for_session()),
            server: self.for_session(),
        });
        #[cfg(feature = "mcp-auth")]
        let self_gate = self.config.gate.clone();
        let server = self;
        let service =
            StreamableHttpService::new(move || Ok(server.for_session()), sessions, config);
        let router = axum::Router::new().nest_service(HTTP_PATH, service);
        // A resource server's RFC 9728 metadata, at the well-known path and its form suffixed
        // with the resource's path (which clients try first).
        #[cfg(feature = "mcp-auth")]
        let router = match &self_gate {
            Some(gate) => {
                let doc = (
                    [(http::header::CONTENT_TYPE, "application/json")],
                    gate.authorization.metadata().to_string(),
                );
                let suffixed = gate.authorization.metadata_path();
                let router = router.route(
                    super::auth::WELL_KNOWN,
                    axum::routing::get({
                        let doc = doc.clone();
                        move || std::future::ready(doc.clone())
                    }),
                );
                if suffixed == super::auth::WELL_KNOWN {
                    router
                } else {
                    router.route(
                        &suffixed,
                        axum::routing::get(move || std::future::ready(doc.clone())),
                    )
                }
            }
            None => router,
        };
        let router = router.layer(axum::middleware::from_fn_with_state(
            guard,
            http_guard::guard,
        ));
        let stop = shutdown.clone();
        // An answer in server-sent events is written in several small parts (headers, each
        // event, the end); with Nagle's algorithm each part after the first waits for the
        // client's delayed acknowledgement, about 40 ms on Linux.
        let listener = listener.tap_io(|stream| {
            if let Err(error) = stream.set_nodelay(true) {
                tracing::debug!(%error, "TCP_NODELAY not set on an MCP connection");
            }
        });
        let task = tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async move { stop.cancelled_owned().await })
                .await
        });
        Ok(HttpServer {
            addr,
            shutdown,
            task,
        })
    }

    /// Serves streamable HTTP on the loopback interface, `http://127.0.0.1:{port}/mcp` (port 0
    /// for a free one): the default place for a local server, out of reach of other machines.
    ///
    /// ```no_run
    /// # async fn run(toolbox: toolsmith::Toolbox) -> std::io::Result<()> {
    /// let http = toolsmith::mcp::McpServer::new(toolbox).bind_local_http(8000).await?;
    /// assert!(http.local_addr().ip().is_loopback());
    /// # http.shutdown().await
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// When the port cannot be bound.
    pub async fn bind_local_http(self, port: u16) -> std::io::Result<HttpServer> {
        self.bind_http((std::net::Ipv4Addr::LOCALHOST, port)).await
    }
}

/// A running streamable HTTP endpoint (see [`McpServer::bind_http`]).
#[derive(Debug)]
pub struct HttpServer {
    pub(super) addr: SocketAddr,
    pub(super) shutdown: CancellationToken,
    pub(super) task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl HttpServer {
    /// The address bound.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The endpoint's URL, `http://{addr}/mcp`.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let server = toolsmith::mcp::McpServer::new(toolsmith::Toolbox::new());
    /// let http = server.bind_local_http(0).await.unwrap();
    /// assert_eq!(http.url(), format!("http://127.0.0.1:{}/mcp", http.local_addr().port()));
    /// http.shutdown().await.unwrap();
    /// # });
    /// ```
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}{HTTP_PATH}", self.addr)
    }

    /// Stops accepting connections, ends the sessions and waits for the server to finish.
    ///
    /// # Errors
    ///
    /// When the server failed while running.
    pub async fn shutdown(self) -> std::io::Result<()> {
        self.shutdown.cancel();
        self.wait().await
    }

    /// Serves until the server fails; it otherwise runs until [`shutdown`](Self::shutdown).
    ///
    /// # Errors
    ///
    /// When the server failed while running.
    pub async fn wait(self) -> std::io::Result<()> {
        match self.task.await {
            Ok(result) => result,
            Err(join) => Err(std::io::Error::other(join)),
        }
    }
}

/// Why serving a connection failed.
#[derive(Debug)]
pub struct ServeError(Box<dyn std::error::Error + Send + Sync>);

impl ServeError {
    pub(super) fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(Box::new(error))
    }
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the MCP connection failed: {}", self.0)
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}
