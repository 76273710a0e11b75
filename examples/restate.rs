//! The agent loop on Restate: each run a Restate workflow whose model requests and tool
//! calls are durable steps and whose decisions are durable promises. The service process is
//! killed (SIGKILL) while its run waits for a person; a second process takes over, the
//! person decides through Restate's ingress, and the run finishes.
//!
//! ```sh
//! cargo run --example restate --features restate
//! ```
//!
//! It starts a Restate server of its own on 127.0.0.1 (free ports) and stops it at the end:
//! the npm package `@restatedev/restate-server` (`scripts/test.sh` installs it under
//! `target/restate`; or set `TOOLSMITH_RESTATE_SERVER` to its binary). The same binary is
//! the service the Restate crash matrix (tests/restate_crash.rs) kills at every step
//! boundary:
//!
//! ```sh
//! restate serve <port> <dir> [<point>:<n>]
//! ```
//!
//! A service prints `READY` when it listens and `KILLME <point>` when it reaches the `n`th
//! `<point>`, and waits there to be killed. The tools' effects land in `<dir>`, one file per
//! idempotency key, as in the `durable` example.

mod tickets;

#[path = "tickets/server.rs"]
mod server;
mod telemetry;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use server::{RestateServer, Service, http};
use tickets::{AddNote, DeleteTicket, LEDGER, LookupTicket, SeededModel, point};
use toolsmith::agent::{Agent, AgentEvent};
use toolsmith::policy::Approvals;
use toolsmith::restate::{AgentWorkflow, sdk};
use toolsmith::serde_json::{self, Value, json};
use toolsmith::state::State;
use toolsmith::{Dialect, Toolbox};

/// The key every process seals runs and signs decisions with (a real deployment reads it
/// from a secret store).
const KEY: &str = "the restate example's key: 32 bytes or more of secret";

/// The agent every service process builds alike.
fn agent(dir: &Path) -> Result<Agent, String> {
    let audit = toolsmith::audit::JsonLinesSink::create(dir.join("audit.jsonl"))
        .map_err(|e| e.to_string())?;
    let toolbox = Toolbox::new()
        .with(LookupTicket)
        .with(AddNote)
        .with(DeleteTicket)
        .with_approver(Approvals::new())
        .with_audit(audit)
        .with_state(State::memory().with_key(KEY));
    Ok(Agent::new(
        toolbox,
        Dialect::Anthropic { strict: false },
        SeededModel::from_prompt(),
    )
    .with_events(|event| match event {
        AgentEvent::ModelRequested { .. } => {
            point("requested");
            point("resumed");
        }
        AgentEvent::ModelAnswered { .. } => point("model.after"),
        AgentEvent::ToolFinished { .. } => point("tool.after"),
        AgentEvent::Paused(_) => point("paused"),
        _ => {}
    }))
}

/// One service process: the workflow on 127.0.0.1:`port`.
async fn serve(args: &[String]) -> Result<(), String> {
    let [port, dir, rest @ ..] = args else {
        return Err("usage: restate serve <port> <dir> [<point>:<n>]".into());
    };
    if let [kill] = rest {
        tickets::kill_at(kill)?;
    }
    let dir = PathBuf::from(dir);
    let _ = LEDGER.set(dir.clone());
    let endpoint = sdk::endpoint::Endpoint::builder()
        .bind(AgentWorkflow::new(agent(&dir)?))
        .build();
    let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}"))
        .await
        .map_err(|e| e.to_string())?;
    println!("READY");
    // Until Ctrl-C (SIGINT): a process stopped so ends as when it is done.
    tokio::select! {
        () = sdk::http_server::HttpServer::new(endpoint).serve(listener) => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(())
}

/// Polls `what` until it is not `None`, for up to 30 s.
fn wait_for<T>(mut what: impl FnMut() -> Option<T>) -> Result<T, String> {
    for _ in 0..600 {
        if let Some(found) = what() {
            return Ok(found);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Err("timed out".into())
}

/// The demo.
fn demo() -> Result<(), String> {
    let binary = RestateServer::binary().ok_or(
        "this example needs restate-server: `npm install --prefix target/restate @restatedev/restate-server`, or set TOOLSMITH_RESTATE_SERVER",
    )?;
    let restate = RestateServer::start(&binary)?;
    let dir = std::env::temp_dir().join(format!("toolsmith-restate-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let result = (|| {
        let port = server::free_port()?;
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        println!(
            "process 1 serves the workflow; it is killed (SIGKILL) when its run waits for a person"
        );
        let first = Service::start(&exe, port, &dir, Some("paused:1"))?;
        restate.register(&format!("http://127.0.0.1:{port}"))?;
        let run = format!("{}/ToolsmithAgent/run-demo", restate.ingress);
        let request = json!({"prompt": "Tidy up the tickets, seed 0", "principal": "ada"});
        http(
            "POST",
            &format!("{run}/run/send"),
            Some(&request.to_string()),
        )?;
        for line in first.lines.iter() {
            if line.starts_with("KILLME") {
                println!("  {line}");
                break;
            }
        }
        first.kill()?;
        println!(
            "process 2 takes over: Restate calls the run again, and it reads its kept steps back"
        );
        let second = Service::start(&exe, port, &dir, None)?;
        let result = finish(&restate, &run, &dir);
        second.stop()?;
        result
    })();
    drop(restate);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Decides what the run waits on, and reads its outcome, audit and effects.
fn finish(restate: &RestateServer, run: &str, dir: &Path) -> Result<(), String> {
    let pending = wait_for(|| {
        let (_, body) = http("POST", &format!("{run}/pending"), None).ok()?;
        let pending: Vec<Value> = serde_json::from_str(&body).ok()?;
        (!pending.is_empty()).then_some(pending)
    })?;
    for call in &pending {
        println!("  waits: {} {}", call["tool"], call["arguments"]);
        let decision = json!({
            "token": call["token"], "approve": true,
            "approver": "lin@example.com", "reason": "checked with the customer",
        });
        let (status, body) = http(
            "POST",
            &format!("{run}/decide"),
            Some(&decision.to_string()),
        )?;
        println!("  decided: {status} {body}");
    }
    let output = wait_for(|| {
        let url = format!(
            "{}/restate/workflow/ToolsmithAgent/run-demo/output",
            restate.ingress
        );
        match http("GET", &url, None).ok()? {
            (200, body) => Some(body),
            _ => None,
        }
    })?;
    println!("the run's outcome: {output}");
    tickets::report(dir)
}

fn main() -> ExitCode {
    let _telemetry = telemetry::export();
    let args: Vec<String> = std::env::args().skip(1).collect();
    tickets::exit(match args.split_first() {
        Some((first, rest)) if first == "serve" => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
            .and_then(|rt| rt.block_on(serve(rest))),
        _ => demo(),
    })
}
