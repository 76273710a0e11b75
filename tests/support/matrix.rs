//! What both crash matrices share: the ledger of effects a run applied, a seeded person's
//! verdicts, and the table of results with the checks that fail the matrix.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

/// A person's seeded verdict on the call at `path`: `true` to approve.
pub fn approves(seed: u64, path: &str) -> bool {
    let h = path
        .bytes()
        .fold(seed, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    h % 3 != 0
}

/// The kill points the runs of script number `seed` try, in order, each as (attempt, point,
/// which time the run reaches it): the number's own place in `points`, first at the 1st, 2nd
/// or 3rd time the run reaches it and then at the 1st, then the next point the same way. A
/// run that never reaches its point is not killed, so its driver moves on to the next attempt
/// until one kills it; the runs that were not killed are checked all the same.
pub fn attempts<'p>(
    seed: u64,
    points: &'p [&'p str],
) -> impl Iterator<Item = (usize, &'p str, u64)> {
    let first = usize::try_from(seed % points.len() as u64).unwrap_or(0);
    let nth = 1 + (seed / points.len() as u64) % 3;
    (0..points.len() * 2).map(move |attempt| {
        let point = points[(first + attempt / 2) % points.len()];
        (attempt, point, if attempt % 2 == 0 { nth } else { 1 })
    })
}

/// The effects applied for each run, as (effect, how many times).
pub fn effects(dir: &Path) -> BTreeMap<String, BTreeMap<String, usize>> {
    let mut by_run: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for entry in std::fs::read_dir(dir)
        .expect("the ledger")
        .map_while(Result::ok)
    {
        if !entry.file_name().to_string_lossy().starts_with("effect-") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).expect("an effect");
        let (run, effect) = text.trim_end().split_once('\t').expect("run\teffect");
        *by_run
            .entry(run.to_owned())
            .or_default()
            .entry(effect.to_owned())
            .or_default() += 1;
    }
    by_run
}

/// How the runs killed at one point went.
#[derive(Default)]
pub struct Row {
    pub runs: usize,
    pub killed: usize,
    pub duplicated: usize,
    pub asked_twice: usize,
    pub lost: usize,
    pub same_answer: usize,
}

/// Prints the table (a row per kill point and one for all), fails the matrix on any
/// duplicated effect, approval asked twice or lost, other answer, or a point killed at fewer
/// than 3 times; the row for all.
pub fn report(rows: &BTreeMap<&str, Row>, points: &[&str]) -> Row {
    println!(
        "| kill point | runs | killed there | duplicated effects | approvals asked twice | pending approvals lost | same answer as uninterrupted |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut total = Row::default();
    for (point, row) in rows {
        println!(
            "| `{point}` | {} | {} | {} | {} | {} | {} |",
            row.runs, row.killed, row.duplicated, row.asked_twice, row.lost, row.same_answer
        );
        total.runs += row.runs;
        total.killed += row.killed;
        total.duplicated += row.duplicated;
        total.asked_twice += row.asked_twice;
        total.lost += row.lost;
        total.same_answer += row.same_answer;
    }
    println!(
        "| all | {} | {} | {} | {} | {} | {} |",
        total.runs,
        total.killed,
        total.duplicated,
        total.asked_twice,
        total.lost,
        total.same_answer
    );
    assert_eq!(total.duplicated, 0, "a side effect was applied twice");
    assert_eq!(total.asked_twice, 0, "an approval was asked twice");
    assert_eq!(total.lost, 0, "a pending approval was lost");
    assert_eq!(total.same_answer, total.runs, "a run answered otherwise");
    for point in points {
        assert!(
            rows.get(point).is_some_and(|row| row.killed >= 3),
            "no run was killed at `{point}`"
        );
    }
    total
}
