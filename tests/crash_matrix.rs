//! The crash matrix: seeded agent runs of reads, writes and deletions that wait for a person,
//! each run in real child processes (the `durable` example's worker) with checkpoints and
//! idempotency keys in Redis, and killed with SIGKILL at one of twelve step boundaries. The
//! run is then resumed in a fresh process, as often as it takes, and compared with the same
//! seed run without a kill: the same final answer, no side effect applied twice, no approval
//! asked twice, none lost.
//!
//! The same matrix runs again with programs: the model writes each turn's calls as one
//! program for the sandbox's `run_code` (feature `sandbox`), whose calls pause the run when
//! they wait for a person and are kept in the program's journal, with one more kill point
//! after each call a program makes, before the journal keeps it.
//!
//! Needs the example built (`scripts/test.sh` builds every example first) and `redis-server`.

#[path = "support/matrix.rs"]
mod matrix;

#[path = "support/redis.rs"]
mod redis_server;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use redis_server::RedisServer;

/// The step boundaries a worker can be killed at.
const POINTS: [&str; 12] = [
    "model.before",      // the model is being asked
    "model.after",       // it answered; the answer is not kept yet
    "checkpoint.before", // a checkpoint is being saved
    "checkpoint.after",  // it was saved; the next step has not started
    "tool.before",       // a tool started, before its effect
    "read.inside",       // inside a read
    "tool.inside",       // inside a write, after its effect, before it returned
    "tool.after",        // a tool returned; its result is not kept yet
    "paused",            // the run waits for a person
    "decision.before",   // a person's decision is being recorded
    "decision.after",    // it was recorded
    "resume.loaded",     // a resumed run was loaded, before it goes on
];

/// Seeded runs in the matrix.
const RUNS: u64 = 120;

/// The step boundaries of a run whose calls a program makes: the same, and after each call a
/// program makes, before the program's journal keeps it.
const PROGRAM_POINTS: [&str; 13] = [
    "model.before",
    "model.after",
    "checkpoint.before",
    "checkpoint.after",
    "tool.before",
    "read.inside",
    "tool.inside",
    "program.call",
    "tool.after",
    "paused",
    "decision.before",
    "decision.after",
    "resume.loaded",
];

/// Seeded programs in the programs' matrix.
const PROGRAM_RUNS: u64 = 100;

fn example() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.parent()?.join("examples").join("durable");
    path.exists().then_some(path)
}

/// How one run went.
#[derive(Debug, Default)]
struct Run {
    answer: String,
    killed_at: Option<String>,
    /// Every call path a person decided on, in order.
    decided: Vec<String>,
    /// Pending calls shown again after a person decided on them.
    asked_twice: usize,
    processes: usize,
}

/// A person's seeded verdict on `path`.
fn verdict(seed: u64, path: &str) -> &'static str {
    if matrix::approves(seed, path) {
        "approve"
    } else {
        "deny"
    }
}

/// Which matrix: the model's own calls, or programs'.
#[derive(Clone, Copy)]
struct Flavor {
    programs: bool,
}

/// Runs one worker to its end or its kill; its last meaningful line.
fn worker(
    bin: &Path,
    flavor: Flavor,
    args: &[&str],
    kill: &mut Option<String>,
    run: &mut Run,
) -> String {
    run.processes += 1;
    let mut args: Vec<&str> = args.to_vec();
    if let Some(kill) = kill.as_deref() {
        args.push(kill);
    }
    let mut command = Command::new(bin);
    if flavor.programs {
        command.env("TOOLSMITH_CRASH_PROGRAMS", "1");
    }
    let mut child = command
        .arg("worker")
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the worker starts");
    let stdout = child.stdout.take().expect("its stdout");
    let mut last = String::new();
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        if let Some(point) = line.strip_prefix("KILLME ") {
            // SIGKILL, from outside, at the step boundary.
            child.kill().expect("the worker is killed");
            run.killed_at = Some(point.to_owned());
            *kill = None;
            let _ = child.wait();
            return if last.starts_with("PAUSED") {
                last
            } else {
                "KILLED".into()
            };
        }
        last = line;
    }
    let _ = child.wait();
    last
}

/// Drives run `run_id` of `seed` to its answer: runs it, decides what waits, resumes after a
/// pause or a kill.
fn drive(
    (bin, flavor): (&Path, Flavor),
    redis: &str,
    dir: &str,
    run_id: &str,
    seed: u64,
    kill: Option<String>,
) -> Run {
    let mut kill = kill;
    let mut run = Run::default();
    let seed_s = seed.to_string();
    let mut started = false;
    let mut to_decide: Vec<String> = Vec::new();
    for _ in 0..60 {
        if let Some(path) = to_decide.first().cloned() {
            let said = worker(
                bin,
                flavor,
                &[
                    "decide",
                    redis,
                    dir,
                    run_id,
                    &seed_s,
                    &path,
                    verdict(seed, &path),
                ],
                &mut kill,
                &mut run,
            );
            match said.as_str() {
                "DECIDED" => {
                    run.decided.push(path);
                    to_decide.remove(0);
                }
                "KILLED" => {}
                other => panic!("run {run_id}: the decision ended with `{other}`"),
            }
            continue;
        }
        let mode = if started { "resume" } else { "run" };
        let said = worker(
            bin,
            flavor,
            &[mode, redis, dir, run_id, &seed_s],
            &mut kill,
            &mut run,
        );
        if said != "KILLED" || started || run.killed_at.is_some() {
            started = true;
        }
        if let Some(text) = said.strip_prefix("ANSWER ") {
            run.answer = text.to_owned();
            return run;
        }
        if let Some(paths) = said.strip_prefix("PAUSED ") {
            for path in paths.split(' ') {
                if run.decided.iter().any(|d| d == path) {
                    run.asked_twice += 1;
                } else if !to_decide.iter().any(|d| d == path) {
                    to_decide.push(path.to_owned());
                }
            }
            continue;
        }
        assert!(
            said == "KILLED",
            "run {run_id}: the worker ended with `{said}`"
        );
    }
    panic!("run {run_id} did not finish in 60 processes");
}

/// A killed run: its seed, run id, the point it was to be killed at, and how it went.
type Killed = (u64, String, &'static str, Run);

/// Drives the given script numbers (each seeds the model's script) one after another: the
/// number's run without a kill, then its runs killed at the points [`matrix::attempts`]
/// gives, until one is killed.
fn lane(
    worker: (&Path, Flavor),
    points: &'static [&'static str],
    url: &str,
    dir: &str,
    seeds: &[u64],
) -> (Vec<(u64, Run)>, Vec<Killed>) {
    let mut baselines = Vec::new();
    let mut crashed = Vec::new();
    for &seed in seeds {
        let base = drive(worker, url, dir, &format!("base-{seed}"), seed, None);
        assert!(base.killed_at.is_none());
        assert_eq!(base.asked_twice, 0);
        baselines.push((seed, base));
        for (attempt, point, n) in matrix::attempts(seed, points) {
            let id = format!("crash-{seed}-{attempt}");
            let run = drive(worker, url, dir, &id, seed, Some(format!("{point}:{n}")));
            let killed = run.killed_at.is_some();
            crashed.push((seed, id, point, run));
            if killed {
                break;
            }
        }
    }
    (baselines, crashed)
}

#[test]
fn runs_killed_at_every_step_boundary_finish_as_if_never_killed() {
    matrix_of(Flavor { programs: false }, &POINTS, RUNS);
}

/// Programs' calls through the sandbox: the same matrix, one more kill point. Needs the
/// example built with the `sandbox` feature (`scripts/test.sh` builds it with every feature).
#[cfg(feature = "sandbox")]
#[test]
fn programs_killed_at_every_step_boundary_finish_as_if_never_killed() {
    matrix_of(Flavor { programs: true }, &PROGRAM_POINTS, PROGRAM_RUNS);
}

/// Runs `runs` seeds of `flavor`, each also killed at one of `points`, and checks them
/// against their uninterrupted runs.
fn matrix_of(flavor: Flavor, points: &'static [&'static str], runs: u64) {
    let Some(bin) = example() else {
        eprintln!("the durable example is not built: skipping (scripts/test.sh builds it)");
        return;
    };
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!(
        "toolsmith-crash-{}-{}",
        std::process::id(),
        if flavor.programs { "programs" } else { "calls" }
    ));
    std::fs::create_dir_all(&dir).expect("a ledger directory");
    let dir_s = dir.display().to_string();
    let mut rows: BTreeMap<&str, matrix::Row> = BTreeMap::new();
    // Seeds in four lanes at once: the workers mostly wait (on Redis, on a dead process's
    // lease), so the matrix takes a quarter of the time on two cores.
    let lanes: Vec<Vec<u64>> = (0..4)
        .map(|lane| (1..=runs).filter(|s| s % 4 == lane).collect())
        .collect();
    let (url, bin) = (&redis.url, &bin);
    let dir_s = &dir_s;
    let mut baselines: BTreeMap<u64, Run> = BTreeMap::new();
    let mut crashed = Vec::new();
    std::thread::scope(|scope| {
        let lanes: Vec<_> = lanes
            .iter()
            .map(|seeds| scope.spawn(move || lane((bin, flavor), points, url, dir_s, seeds)))
            .collect();
        for lane in lanes {
            let (base, crash) = lane.join().expect("a lane of the matrix");
            baselines.extend(base);
            crashed.extend(crash);
        }
    });
    let applied = matrix::effects(&dir);
    let empty = BTreeMap::new();
    for (seed, id, point, run) in &crashed {
        let seed = *seed;
        let base = &baselines[&seed];
        let row = rows.entry(point).or_default();
        row.runs += 1;
        row.killed += usize::from(run.killed_at.is_some());
        let mine = applied.get(id.as_str()).unwrap_or(&empty);
        let theirs = applied.get(&format!("base-{seed}")).unwrap_or(&empty);
        row.duplicated += mine.values().map(|n| n - 1).sum::<usize>();
        assert_eq!(
            mine.keys().collect::<Vec<_>>(),
            theirs.keys().collect::<Vec<_>>(),
            "{id}, killed at {point}: other effects than the uninterrupted run's"
        );
        row.asked_twice += run.asked_twice;
        let asked: BTreeSet<&String> = run.decided.iter().collect();
        let expected: BTreeSet<&String> = base.decided.iter().collect();
        row.lost += expected.difference(&asked).count();
        row.same_answer += usize::from(run.answer == base.answer);
        if run.answer != base.answer {
            eprintln!(
                "{id}, killed at {point}: answered {:?}, uninterrupted {:?}",
                run.answer, base.answer
            );
        }
    }
    let total = matrix::report(&rows, points);
    let processes: usize = crashed.iter().map(|(.., r)| r.processes).sum();
    println!(
        "{} runs of {runs} seeds, {} killed, in {processes} worker processes",
        crashed.len(),
        total.killed
    );
    assert!(
        total.killed as u64 * 6 >= runs * 5,
        "only {} runs of {runs} were killed",
        total.killed
    );
    assert!(total.killed as u64 <= runs, "one kill per seed");
    let _ = std::fs::remove_dir_all(&dir);
}
