//! A session rests and wakes as its requests come and go.

use futures_util::StreamExt as _;
use rmcp::model::InitializeRequestParams;
use serde_json::json;

use super::*;
use crate::toolbox::Toolbox;

impl Sessions {
    /// The sessions whose worker is awake.
    fn awake(&self) -> usize {
        self.records
            .lock()
            .map_or(0, |r| r.values().filter(|r| r.worker.is_some()).count())
    }
}

fn message(value: serde_json::Value) -> ClientJsonRpcMessage {
    serde_json::from_value(value).unwrap()
}

/// Reads a stream to its end; whether it carried an answer.
async fn answered(mut stream: impl futures_util::Stream<Item = ServerSseMessage> + Unpin) -> bool {
    let mut answer = false;
    while let Some(event) = stream.next().await {
        answer |= event.message.is_some();
    }
    answer
}

#[tokio::test]
async fn a_session_rests_after_its_handshake_and_between_requests() {
    let server = McpServer::new(Toolbox::new()).with_http(super::super::HttpOptions {
        session_worker_idle: Duration::from_millis(40),
        ..Default::default()
    });
    let sessions = Sessions::start(server, CancellationToken::new());
    let (id, transport) = sessions.create_session().await.unwrap();
    // As rmcp serves the handshake's worker.
    let handler = sessions.server.for_session();
    tokio::spawn(async move {
        if let Ok(running) = ServiceExt::serve(handler, transport).await {
            let _ = running.waiting().await;
        }
    });
    let params = json!({"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}});
    let hello = message(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": params.clone()}));
    sessions.initialize_session(&id, hello).await.unwrap();
    let params: InitializeRequestParams = serde_json::from_value(params).unwrap();
    SessionStore::store(&*sessions, &id, &SessionState::new(params))
        .await
        .unwrap();
    assert!(sessions.has_session(&id).await.unwrap());
    assert_eq!(sessions.awake(), 1);
    sessions
        .accept_message(
            &id,
            message(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
        )
        .await
        .unwrap();
    assert_eq!(sessions.awake(), 0, "rests once the handshake is done");

    for n in 2..5 {
        let ping = message(json!({"jsonrpc": "2.0", "id": n, "method": "ping"}));
        let stream = sessions.create_stream(&id, ping).await.unwrap();
        assert_eq!(sessions.awake(), 1, "woken by a request");
        assert!(answered(stream).await);
        // Awake a while after the request, then resting.
        assert_eq!(sessions.awake(), 1);
        tokio::time::sleep(Duration::from_millis(120)).await;
        assert_eq!(sessions.awake(), 0, "rests when idle");
        assert!(sessions.has_session(&id).await.unwrap(), "and stays open");
    }

    // The stream for notifications keeps it awake while open.
    let listening = sessions.create_standalone_stream(&id).await.unwrap();
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert_eq!(sessions.awake(), 1);
    drop(listening);
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert_eq!(sessions.awake(), 0);

    SessionStore::delete(&*sessions, &id).await.unwrap();
    assert!(!sessions.has_session(&id).await.unwrap());
    assert_eq!(sessions.open(), 0);
}
