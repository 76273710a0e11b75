//! Rate limits: per tool and per named upstream, a call over its limit waits for its turn
//! through the retry policy and otherwise fails `rate_limited` with `retry_after_ms`; with
//! Redis the limit holds for every process sharing it, and an unreachable Redis refuses calls
//! (retryably) instead of letting them through unlimited.

#[path = "support/redis.rs"]
mod redis_server;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use toolsmith::policy::{CircuitPolicy, RateLimit, RetryPolicy, ToolPolicy};
use toolsmith::{ErrorCode, ToolContext, Toolbox, tool};

static SPELLED: AtomicUsize = AtomicUsize::new(0);

/// Looks a word up in the dictionary service. Read-only. Not for translations.
#[tool(effect = "read")]
async fn look_up(
    /// The word.
    #[arg(length(min = 1, max = 40))]
    word: String,
) -> String {
    format!("{word}: a word")
}

/// Spells a word out. Read-only. Not for sentences.
#[tool(effect = "read")]
async fn spell(
    /// The word.
    #[arg(length(min = 1, max = 40))]
    word: String,
) -> String {
    SPELLED.fetch_add(1, Ordering::SeqCst);
    word.chars().map(String::from).collect::<Vec<_>>().join("-")
}

/// Says where the dictionary service is. Read-only. Not for words.
#[tool(effect = "read", inline)]
fn service_status() -> String {
    "up".to_owned()
}

fn limited(limit: RateLimit, attempts: u32) -> ToolPolicy {
    ToolPolicy {
        rate_limit: Some(limit),
        max_attempts: Some(attempts),
        ..Default::default()
    }
}

/// Whether one call of `look_up` goes through.
async fn admitted(toolbox: &Toolbox) -> bool {
    let arguments = json!({"word": "a"});
    toolbox
        .call("look_up", arguments, &ToolContext::new())
        .await
        .is_success()
}

/// Calls `look_up` `n` times at once; the outcomes' error codes (`None`: success).
async fn burst(toolbox: &Toolbox, n: usize) -> Vec<Option<ErrorCode>> {
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..n {
        let toolbox = toolbox.clone();
        calls.spawn(async move {
            let arguments = json!({"word": format!("w{i}")});
            let outcome = toolbox
                .call("look_up", arguments, &ToolContext::new())
                .await;
            outcome.error().map(|e| e.code())
        });
    }
    calls.join_all().await
}

#[tokio::test(start_paused = true)]
async fn a_call_over_the_limit_fails_rate_limited_with_its_wait() {
    let toolbox = Toolbox::new().with(LookUp).with_tool_policy(
        "look_up",
        limited(RateLimit::per_second(5).with_burst(2), 1),
    );
    let ctx = ToolContext::new();
    for _ in 0..2 {
        assert!(admitted(&toolbox).await);
    }
    let refused = toolbox.call("look_up", json!({"word": "a"}), &ctx).await;
    let err = refused
        .error()
        .expect("the third call at once is over the burst");
    assert_eq!(err.code(), ErrorCode::RateLimited);
    assert!(err.is_retryable());
    let wait = err.retry_after_ms().unwrap();
    assert!((1..=200).contains(&wait), "{wait}");
    assert!(err.message().contains("rate limit"), "{}", err.message());
    // After the wait, a call goes again.
    tokio::time::sleep(Duration::from_millis(wait)).await;
    assert!(admitted(&toolbox).await);
}

#[tokio::test(start_paused = true)]
async fn the_retry_policy_waits_for_the_turn() {
    let toolbox = Toolbox::new()
        .with(LookUp)
        .with_defaults(toolsmith::policy::Defaults {
            retry: RetryPolicy {
                jitter: false,
                ..Default::default()
            },
            ..toolsmith::policy::Defaults::default()
        })
        .with_tool_policy("look_up", limited(RateLimit::per_second(10), 3));
    let started = tokio::time::Instant::now();
    let outcomes = burst(&toolbox, 3).await;
    // One at once, the others each wait for their turn (100 ms apart) within 3 attempts.
    assert!(outcomes.iter().all(Option::is_none), "{outcomes:?}");
    assert!(started.elapsed() >= Duration::from_millis(200));
}

#[tokio::test(start_paused = true)]
async fn a_steady_limit_admits_its_rate_and_no_more() {
    let toolbox = Toolbox::new()
        .with(LookUp)
        .with_tool_policy("look_up", limited(RateLimit::per_second(20), 1));
    let ctx = ToolContext::new();
    let mut admitted = 0;
    // 10 s of calls every 10 ms: 1,000 offered at 100/s against a limit of 20/s.
    for _ in 0..1_000 {
        if toolbox
            .call("look_up", json!({"word": "a"}), &ctx)
            .await
            .is_success()
        {
            admitted += 1;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!((200..=201).contains(&admitted), "{admitted}");
}

#[tokio::test(start_paused = true)]
async fn tools_that_name_one_upstream_share_its_limit() {
    let upstream = ToolPolicy {
        upstream: Some("dictionary".into()),
        max_attempts: Some(1),
        ..Default::default()
    };
    let toolbox = Toolbox::new()
        .with(LookUp)
        .with(ServiceStatus)
        .with_defaults(toolsmith::policy::Defaults {
            upstream_limits: std::collections::HashMap::from([(
                "dictionary".to_owned(),
                RateLimit::per_second(1).with_burst(2),
            )]),
            ..toolsmith::policy::Defaults::default()
        })
        .with_tool_policy("look_up", upstream.clone())
        .with_tool_policy("service_status", upstream);
    let ctx = ToolContext::new();
    assert!(admitted(&toolbox).await);
    assert!(
        toolbox
            .call("service_status", json!({}), &ctx)
            .await
            .is_success()
    );
    let third = toolbox.call("service_status", json!({}), &ctx).await;
    let err = third.error().expect("the upstream's burst is spent");
    assert_eq!(err.code(), ErrorCode::RateLimited);
    assert!(
        err.message().contains("the upstream `dictionary`"),
        "{}",
        err.message()
    );
}

#[tokio::test(start_paused = true)]
async fn being_held_back_does_not_open_the_circuit() {
    let toolbox = Toolbox::new()
        .with(LookUp)
        .with_defaults(toolsmith::policy::Defaults {
            circuit: CircuitPolicy {
                failures: 2,
                ..Default::default()
            },
            ..toolsmith::policy::Defaults::default()
        })
        .with_tool_policy("look_up", limited(RateLimit::per_second(1), 1));
    let outcomes = burst(&toolbox, 6).await;
    assert_eq!(outcomes.iter().filter(|o| o.is_none()).count(), 1);
    assert!(
        outcomes
            .iter()
            .flatten()
            .all(|c| *c == ErrorCode::RateLimited),
        "{outcomes:?}"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(admitted(&toolbox).await);
}

mod redis {
    use super::*;
    use toolsmith::state::RedisStore;

    fn replica(url: &str, limit: RateLimit) -> Toolbox {
        Toolbox::new()
            .with(LookUp)
            .with_state(
                toolsmith::state::State::memory().with_rate_limits(RedisStore::open(url).unwrap()),
            )
            .with_tool_policy("look_up", limited(limit, 1))
    }

    #[tokio::test]
    async fn a_limit_in_redis_holds_across_toolboxes() {
        let Some(server) = redis_server::RedisServer::start() else {
            return;
        };
        // Three toolboxes (as three processes would) share one limit of a burst of 5 and
        // one call a minute after: 60 calls at once across them admit 5.
        let limit = RateLimit::per_minute(1).with_burst(5);
        let replicas: Vec<Toolbox> = (0..3).map(|_| replica(&server.url, limit)).collect();
        let mut all = tokio::task::JoinSet::new();
        for toolbox in replicas {
            all.spawn(async move { burst(&toolbox, 20).await });
        }
        let outcomes: Vec<Option<ErrorCode>> = all.join_all().await.into_iter().flatten().collect();
        assert_eq!(
            outcomes.iter().filter(|o| o.is_none()).count(),
            5,
            "{outcomes:?}"
        );
        assert!(
            outcomes
                .iter()
                .flatten()
                .all(|c| *c == ErrorCode::RateLimited)
        );
    }

    #[tokio::test]
    async fn redis_unreachable_refuses_calls_retryably() {
        let Some(server) = redis_server::RedisServer::start() else {
            return;
        };
        let url = server.url.clone();
        drop(server);
        let toolbox = Toolbox::new()
            .with(Spell)
            .with_state(
                toolsmith::state::State::memory().with_rate_limits(RedisStore::open(&url).unwrap()),
            )
            .with_tool_policy("spell", limited(RateLimit::per_second(100), 3));
        let ctx = ToolContext::new();
        let outcome = toolbox.call("spell", json!({"word": "lost"}), &ctx).await;
        let err = outcome.error().expect("no limit, no call");
        assert_eq!(err.code(), ErrorCode::UpstreamError);
        assert!(err.is_retryable());
        assert!(err.retry_after_ms().is_some());
        assert!(!err.message().contains("127.0.0.1"), "{}", err.message());
        assert_eq!(SPELLED.load(Ordering::SeqCst), 0, "the tool never ran");
    }
}
