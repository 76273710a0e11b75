//! The crash matrix on Restate: seeded agent runs of reads, writes and deletions that wait
//! for a person, each a Restate workflow served by the `restate` example's service process,
//! which is killed with SIGKILL at one of twelve step boundaries (the Restate server is never
//! killed). Restate calls the run again on a fresh service process, which reads the kept steps
//! back. Each run is compared with the same seed run without a kill: the same final answer,
//! no side effect applied twice, no approval asked twice, none lost.
//!
//! Needs the example built (`scripts/test.sh` builds every example first) and the Restate
//! server (`scripts/test.sh` installs the npm package `@restatedev/restate-server` under
//! `target/restate` and sets `TOOLSMITH_REQUIRE_RESTATE=1`).

#[path = "support/matrix.rs"]
mod matrix;

#[path = "../examples/tickets/server.rs"]
#[allow(dead_code)]
mod server;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use server::{RestateServer, Service, free_port, http, http_within};
use toolsmith::serde_json::{self, Value, json};

/// The step boundaries a run's service process is killed at. The first nine are reached
/// inside the service; the last three are the harness's own moments.
const POINTS: [&str; 12] = [
    "model.before",   // the model is being asked
    "model.answered", // it answered; the answer is not kept yet
    "model.after",    // the answer is kept; no call has started
    "requested",      // the next request is built, the model not asked yet
    "tool.before",    // a tool started, before its effect
    "read.inside",    // inside a read
    "tool.inside",    // inside a write, after its effect, before it returned
    "tool.after",     // a call's outcome is kept
    "paused",         // the run stops to wait for a person, before it lists what waits
    "suspended",      // the run waits on its decisions' promises
    "decision.sent",  // a person's decision was just given
    "resumed",        // a second process replays the run's kept steps (its first was killed)
];

/// Seeded runs in the matrix.
const RUNS: u64 = 100;

/// Lanes of seeds run at once.
const LANES: u64 = 2;

/// A killed run: its seed, run id, the point it was to be killed at, and how it went.
type Killed = (u64, String, &'static str, Run);

/// Drives the given script numbers (each seeds the model's script) one after another on a
/// Restate server and a service of their own: the number's run without a kill, then its runs
/// killed at the points [`matrix::attempts`] gives, until one is killed.
fn run_lane(
    bin: &Path,
    binary: &Path,
    dir: &Path,
    seeds: &[u64],
) -> (Vec<(u64, Run)>, Vec<Killed>) {
    let restate = RestateServer::start(binary).expect("restate-server starts");
    let port = free_port().expect("a free port");
    {
        // The service is registered once; every process after it listens on the same port.
        let first = Service::start(bin, port, dir, None).expect("the service starts");
        restate
            .register(&format!("http://127.0.0.1:{port}"))
            .expect("registered");
        first.kill().expect("the service is killed");
    }
    let mut baselines = Vec::new();
    let mut crashed = Vec::new();
    for &seed in seeds {
        let base = drive(
            bin,
            &restate,
            port,
            dir,
            &format!("base-{seed}"),
            seed,
            None,
        );
        assert_eq!(base.kills, 0);
        baselines.push((seed, base));
        for (attempt, point, n) in matrix::attempts(seed, &POINTS) {
            let id = format!("crash-{seed}-{attempt}");
            let run = drive(bin, &restate, port, dir, &id, seed, Some((point, n)));
            let killed = run.kills > 0;
            crashed.push((seed, id, point, run));
            if killed {
                break;
            }
        }
    }
    (baselines, crashed)
}

fn example() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.parent()?.join("examples").join("restate");
    path.exists().then_some(path)
}

/// How one run went.
#[derive(Debug, Default)]
struct Run {
    answer: String,
    kills: usize,
    killed_at: Option<String>,
    /// Every call path the run listed as waiting for a person.
    shown: BTreeSet<String>,
    /// Every call path a person decided on.
    decided: BTreeSet<String>,
    /// Decisions the run took a second time for a call already decided.
    asked_twice: usize,
    processes: usize,
}

/// Where a run is killed: the spec of each service process in turn (`<point>:<n>`), and a
/// moment of the harness's own.
fn kills_for(point: &str, n: u64) -> (Vec<String>, Option<&'static str>) {
    match point {
        "suspended" => (Vec::new(), Some("suspended")),
        "decision.sent" => (Vec::new(), Some("decision.sent")),
        "resumed" => (vec!["model.after:1".into(), "resumed:1".into()], None),
        point => (vec![format!("{point}:{n}")], None),
    }
}

/// Drives run `run_id` of `seed` to its answer, deciding what waits and replacing the service
/// process whenever it is killed.
fn drive(
    bin: &Path,
    restate: &RestateServer,
    port: u16,
    dir: &Path,
    run_id: &str,
    seed: u64,
    kill: Option<(&str, u64)>,
) -> Run {
    let (mut specs, mut harness_kill) = kill.map_or((Vec::new(), None), |(p, n)| kills_for(p, n));
    specs.reverse();
    let mut run = Run::default();
    let mut service =
        Service::start(bin, port, dir, specs.pop().as_deref()).expect("the service starts");
    run.processes += 1;
    let base = format!("{}/ToolsmithAgent/{run_id}", restate.ingress);
    let request =
        json!({"prompt": format!("Tidy up the tickets, seed {seed}"), "principal": "ada"});
    let (status, body) = http(
        "POST",
        &format!("{base}/run/send"),
        Some(&request.to_string()),
    )
    .expect("started");
    assert!((200..300).contains(&status), "{run_id}: {status} {body}");
    let output = format!(
        "{}/restate/workflow/ToolsmithAgent/{run_id}/output",
        restate.ingress
    );
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(120) {
        let mut killed = None;
        while let Ok(line) = service.lines.try_recv() {
            if let Some(point) = line.strip_prefix("KILLME ") {
                killed = Some(point.to_owned());
            }
        }
        if let Some(point) = killed {
            service.kill().expect("the service is killed");
            run.kills += 1;
            run.killed_at = Some(point);
            service =
                Service::start(bin, port, dir, specs.pop().as_deref()).expect("the service starts");
            run.processes += 1;
            continue;
        }
        // A service waiting to be killed answers nothing: ask briefly, and look again.
        let brief = Duration::from_millis(500);
        if let Ok((200, body)) = http_within("GET", &output, None, brief) {
            let outcome: Value = serde_json::from_str(&body).expect("the run's outcome");
            run.answer = outcome["answer"].as_str().unwrap_or_default().to_owned();
            service.kill().expect("the service is killed");
            return run;
        }
        let Ok((_, body)) = http_within("POST", &format!("{base}/pending"), None, brief) else {
            continue;
        };
        let pending: Vec<Value> = serde_json::from_str(&body).unwrap_or_default();
        if !pending.is_empty() && harness_kill == Some("suspended") {
            harness_kill = None;
            service.kill().expect("the service is killed");
            run.kills += 1;
            run.killed_at = Some("suspended".into());
            service = Service::start(bin, port, dir, None).expect("the service starts");
            run.processes += 1;
            continue;
        }
        for call in &pending {
            let path = call["path"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("/");
            run.shown.insert(path.clone());
            let approve = matrix::approves(seed, &path);
            let decision = json!({
                "token": call["token"], "approve": approve, "approver": "lin@example.com",
                "reason": if approve { "checked" } else { "the ticket is evidence in an open case" },
            });
            let Ok((status, body)) = http_within(
                "POST",
                &format!("{base}/decide"),
                Some(&decision.to_string()),
                brief,
            ) else {
                continue;
            };
            match status {
                200..=299 if run.decided.contains(&path) => run.asked_twice += 1,
                200..=299 => {
                    run.decided.insert(path);
                }
                // Decided already: by this harness, in a request whose answer came after
                // the brief wait (the run lists the call until it reads the decision).
                409 => {
                    run.decided.insert(path);
                }
                other => panic!("{run_id}: a decision was refused: {other} {body}"),
            }
            if harness_kill == Some("decision.sent") {
                harness_kill = None;
                service.kill().expect("the service is killed");
                run.kills += 1;
                run.killed_at = Some("decision.sent".into());
                service = Service::start(bin, port, dir, None).expect("the service starts");
                run.processes += 1;
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    service.kill().expect("the service is killed");
    panic!("run {run_id} did not finish in 120 s");
}

#[test]
fn runs_on_restate_killed_at_every_step_boundary_finish_as_if_never_killed() {
    let required = std::env::var_os("TOOLSMITH_REQUIRE_RESTATE").is_some();
    let (Some(bin), Some(binary)) = (example(), RestateServer::binary()) else {
        assert!(
            !required,
            "the restate example or restate-server is missing"
        );
        eprintln!(
            "the restate example or restate-server is missing: skipping (scripts/test.sh installs both)"
        );
        return;
    };
    let dir = std::env::temp_dir().join(format!("toolsmith-restate-crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a ledger directory");
    // Seeds in lanes at once, each with a Restate server and a service of its own: the
    // processes mostly wait on each other, so two lanes take about half the time.
    let mut baselines: BTreeMap<u64, Run> = BTreeMap::new();
    let mut crashed: Vec<Killed> = Vec::new();
    std::thread::scope(|scope| {
        let lanes: Vec<_> = (0..LANES)
            .map(|lane| {
                let seeds: Vec<u64> = (1..=RUNS).filter(|s| s % LANES == lane).collect();
                let (bin, binary, dir) = (&bin, &binary, &dir);
                scope.spawn(move || run_lane(bin, binary, dir, &seeds))
            })
            .collect();
        for lane in lanes {
            let (base, crash) = lane.join().expect("a lane of the matrix");
            baselines.extend(base);
            crashed.extend(crash);
        }
    });
    let applied = matrix::effects(&dir);
    let empty = BTreeMap::new();
    let mut rows: BTreeMap<&str, matrix::Row> = BTreeMap::new();
    for (seed, id, point, run) in &crashed {
        let base = &baselines[seed];
        let row = rows.entry(point).or_default();
        row.runs += 1;
        row.killed += usize::from(run.kills > 0);
        let mine = applied.get(id.as_str()).unwrap_or(&empty);
        let theirs = applied.get(&format!("base-{seed}")).unwrap_or(&empty);
        row.duplicated += mine
            .iter()
            .map(|(effect, n)| n.saturating_sub(*theirs.get(effect).unwrap_or(&0)))
            .sum::<usize>();
        assert_eq!(
            mine.keys().collect::<Vec<_>>(),
            theirs.keys().collect::<Vec<_>>(),
            "{id}, killed at {point}: other effects than the uninterrupted run's"
        );
        row.asked_twice += run.asked_twice;
        // A pending approval is lost when the uninterrupted run waited for a person on a
        // call this run never listed: a decision's answer that came too late for the harness
        // is no loss, since the call was listed and the run went on only with its decision.
        row.lost += base.shown.difference(&run.shown).count();
        row.same_answer += usize::from(run.answer == base.answer);
        if run.answer != base.answer {
            eprintln!(
                "{id}, killed at {point}: answered {:?}, uninterrupted {:?}",
                run.answer, base.answer
            );
        }
    }
    let total = matrix::report(&rows, &POINTS);
    let processes: usize = crashed.iter().map(|(.., r)| r.processes).sum();
    let kills: usize = crashed.iter().map(|(.., r)| r.kills).sum();
    println!(
        "{} runs of {RUNS} seeds, {} killed ({kills} kills), in {processes} service processes",
        crashed.len(),
        total.killed
    );
    assert!(total.killed >= 90, "only {} runs were killed", total.killed);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The calls run `run_id` waits on, once it waits on any (up to 30 s).
fn pending_of(restate: &RestateServer, run_id: &str) -> Vec<Value> {
    for _ in 0..600 {
        let url = format!("{}/ToolsmithAgent/{run_id}/pending", restate.ingress);
        if let Ok((200, body)) = http("POST", &url, None) {
            let pending: Vec<Value> = serde_json::from_str(&body).unwrap_or_default();
            if !pending.is_empty() {
                return pending;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("run {run_id} did not wait for a person");
}

#[test]
fn decisions_on_restate_need_this_runs_token_for_a_call_that_waits() {
    let required = std::env::var_os("TOOLSMITH_REQUIRE_RESTATE").is_some();
    let (Some(bin), Some(binary)) = (example(), RestateServer::binary()) else {
        assert!(
            !required,
            "the restate example or restate-server is missing"
        );
        return;
    };
    let restate = RestateServer::start(&binary).expect("restate-server starts");
    let dir = std::env::temp_dir().join(format!("toolsmith-restate-gate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a ledger directory");
    let port = free_port().expect("a free port");
    let service = Service::start(&bin, port, &dir, None).expect("the service starts");
    restate
        .register(&format!("http://127.0.0.1:{port}"))
        .expect("registered");
    for run_id in ["gate-1", "gate-2"] {
        let request = json!({"prompt": "Tidy up the tickets, seed 0", "principal": "ada"});
        let url = format!("{}/ToolsmithAgent/{run_id}/run/send", restate.ingress);
        let (status, _) = http("POST", &url, Some(&request.to_string())).expect("started");
        assert!((200..300).contains(&status));
    }
    let mine = pending_of(&restate, "gate-1");
    let theirs = pending_of(&restate, "gate-2");
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0]["tool"], "delete_ticket");
    let token = mine[0]["token"].as_str().expect("a token").to_owned();
    let decide = |run_id: &str, token: &str, approve: bool| {
        let decision = json!({"token": token, "approve": approve,
            "approver": "lin@example.com", "reason": "ticket 7 is evidence in an open case"});
        let url = format!("{}/ToolsmithAgent/{run_id}/decide", restate.ingress);
        http("POST", &url, Some(&decision.to_string())).expect("an answer")
    };
    // A token changed anywhere is refused, and so is one of another run's calls.
    let mut altered = token.clone().into_bytes();
    let last = altered.len() - 1;
    altered[last] = if altered[last] == b'0' { b'1' } else { b'0' };
    let altered = String::from_utf8(altered).expect("hex");
    assert_eq!(decide("gate-1", &altered, true).0, 403);
    assert_eq!(decide("gate-1", "not a token", true).0, 403);
    let other = theirs[0]["token"].as_str().expect("a token");
    assert_eq!(decide("gate-1", other, true).0, 403);
    // The call's own token decides it, once.
    assert_eq!(decide("gate-1", &token, false).0, 200);
    assert_eq!(decide("gate-1", &token, true).0, 409);
    assert_eq!(decide("gate-2", other, true).0, 200);
    let output = |run_id: &str| {
        for _ in 0..600 {
            let url = format!(
                "{}/restate/workflow/ToolsmithAgent/{run_id}/output",
                restate.ingress
            );
            if let Ok((200, body)) = http("GET", &url, None) {
                let outcome: Value = serde_json::from_str(&body).expect("an outcome");
                return outcome["answer"].as_str().unwrap_or_default().to_owned();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("run {run_id} did not finish");
    };
    let denied = output("gate-1");
    let approved = output("gate-2");
    assert!(approved.ends_with("done: deleted 7"), "{approved}");
    assert!(!denied.contains("deleted 7"), "{denied}");
    // The denial, with who decided and why, is in the call's audit record.
    let audit = std::fs::read_to_string(dir.join("audit.jsonl")).expect("the audit");
    let record = audit
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|r| r["run_id"] == "gate-1" && r["approval"].is_object())
        .expect("the denied call's record");
    assert_eq!(
        record["approval"],
        json!({"decision": "denied", "approver": "lin@example.com",
            "reason": "ticket 7 is evidence in an open case"})
    );
    service.kill().expect("the service is killed");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[should_panic(expected = "state key")]
fn a_workflow_needs_a_state_key_every_process_shares() {
    use toolsmith::agent::{Agent, ScriptedModel};
    let agent = Agent::new(
        toolsmith::Toolbox::new(),
        toolsmith::Dialect::Anthropic { strict: false },
        ScriptedModel::default(),
    );
    let _ = toolsmith::restate::AgentWorkflow::new(agent);
}
