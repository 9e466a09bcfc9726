//! Crash tests with real processes: a worker (`src/bin/crash_worker.rs`) drives runs over a
//! SQLite file and logs every model call and handler; the test `kill -9`s it at chosen or
//! random instants, starts a new worker, and checks that every run finishes (manual calls
//! after a recovery answer), that nothing the journal had acknowledged ran again, and that the
//! database is sound.
#![allow(clippy::unwrap_used)]

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

const WORKER: &str = env!("CARGO_BIN_EXE_crash_worker");

struct Dir {
    _tmp: tempfile::TempDir,
    db: PathBuf,
    log: PathBuf,
}

fn dir() -> Dir {
    let tmp = tempfile::tempdir().unwrap();
    Dir {
        db: tmp.path().join("runs.db"),
        log: tmp.path().join("calls.log"),
        _tmp: tmp,
    }
}

fn spawn(d: &Dir, runs: usize, workers: usize, settle: bool, model_ms: u64, tool_ms: u64) -> Child {
    let mut cmd = Command::new(WORKER);
    cmd.arg(&d.db)
        .arg(&d.log)
        .arg(runs.to_string())
        .arg(workers.to_string())
        .env("CRASH_MODEL_MS", model_ms.to_string())
        .env("CRASH_TOOL_MS", tool_ms.to_string());
    if settle {
        cmd.arg("--settle");
    }
    cmd.spawn().unwrap()
}

/// Log lines as (pid, the rest).
fn lines(log: &Path) -> Vec<(u32, String)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (pid, rest) = l.split_once(' ')?;
            Some((pid.parse().ok()?, rest.to_owned()))
        })
        .collect()
}

/// Waits (bounded) until the log shows what `until` looks for.
fn wait_for(log: &Path, what: &str, until: impl Fn(&[(u32, String)]) -> bool) {
    for _ in 0..30_000 {
        if until(&lines(log)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("the worker never reached: {what}");
}

fn kill(mut child: Child) -> u32 {
    let pid = child.id();
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    pid
}

fn settle(d: &Dir, runs: usize, workers: usize) {
    let status = spawn(d, runs, workers, true, 0, 0).wait().unwrap();
    assert!(status.success(), "the settling worker failed: {status}");
}

/// What the journal acknowledged: model turns as `model begin <run> <turn>` and finished calls
/// as `<call id>`.
struct Journaled {
    turns: HashSet<String>,
    calls: HashSet<String>,
}

fn journaled(db: &Path) -> Journaled {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut turns = HashSet::new();
    let mut stmt = conn
        .prepare("SELECT r.input, s.turn FROM steps s JOIN runs r ON r.id = s.run_id WHERE s.kind = 'turn'")
        .unwrap();
    for row in stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .unwrap()
    {
        let (run, turn) = row.unwrap();
        turns.insert(format!("model begin {run} {turn}"));
    }
    let mut calls = HashSet::new();
    let mut stmt = conn
        .prepare("SELECT json_extract(body, '$.result.call_id') FROM steps WHERE kind = 'finished'")
        .unwrap();
    for row in stmt.query_map([], |r| r.get::<_, String>(0)).unwrap() {
        calls.insert(row.unwrap());
    }
    Journaled { turns, calls }
}

/// Nothing `before` acknowledged was begun by a worker other than `killed` ones.
fn assert_not_redone(log: &Path, before: &Journaled, dead: &HashSet<u32>) {
    for (pid, line) in lines(log) {
        if dead.contains(&pid) {
            continue;
        }
        assert!(
            !before.turns.contains(&line),
            "a journaled model turn ran again: {line}"
        );
        if let Some(call) = line
            .strip_prefix("tool begin safe_step ")
            .or_else(|| line.strip_prefix("tool begin manual_step "))
        {
            assert!(
                !before.calls.contains(call),
                "a finished call ran again: {line}"
            );
        }
    }
}

fn assert_settled(d: &Dir, runs: usize) {
    let conn = rusqlite::Connection::open(&d.db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let states: Vec<(String, i64)> = conn
        .prepare("SELECT state, COUNT(*) FROM runs GROUP BY state")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(states, [("completed".to_owned(), runs as i64)]);
    let log = lines(&d.log);
    // A manual handler never runs twice: its interruption was answered by a person.
    let mut manual: HashMap<&str, usize> = HashMap::new();
    // No process begins the same model turn twice.
    let mut per_process: HashMap<(u32, &str), usize> = HashMap::new();
    for (pid, line) in &log {
        if let Some(call) = line.strip_prefix("tool begin manual_step ") {
            *manual.entry(call).or_default() += 1;
        }
        if line.starts_with("model begin") {
            *per_process.entry((*pid, line)).or_default() += 1;
        }
    }
    assert!(manual.values().all(|n| *n == 1), "{manual:?}");
    // A manual step whose handler never began was killed between its `started` commit and the
    // handler's first line: a person was asked and said it took effect.
    let asked: HashSet<&str> = log
        .iter()
        .filter_map(|(_, l)| l.strip_prefix("recovery run "))
        .collect();
    for i in 0..runs {
        let began = manual.contains_key(format!("r{i}-2").as_str());
        let id = (i + 1).to_string();
        assert!(
            began || asked.contains(id.as_str()),
            "run r{i}'s manual step neither ran nor was asked about"
        );
    }
    assert!(per_process.values().all(|n| *n == 1));
}

fn has(line: &'static str) -> impl Fn(&[(u32, String)]) -> bool {
    move |l| l.iter().any(|(_, x)| x == line)
}

#[test]
fn killed_during_a_model_call_the_turn_is_asked_again_and_the_run_completes() {
    let d = dir();
    let child = spawn(&d, 1, 1, false, 60_000, 0);
    wait_for(&d.log, "model call of turn 1", has("model begin r0 1"));
    let dead = HashSet::from([kill(child)]);
    let before = journaled(&d.db);
    assert!(before.turns.is_empty());
    settle(&d, 1, 1);
    assert_not_redone(&d.log, &before, &dead);
    assert_settled(&d, 1);
    let begins = lines(&d.log)
        .iter()
        .filter(|(_, l)| l == "model begin r0 1")
        .count();
    assert_eq!(begins, 2, "unjournaled, so asked once more");
}

#[test]
fn killed_during_a_safe_tool_it_runs_again_without_a_question() {
    let d = dir();
    let child = spawn(&d, 1, 1, false, 0, 60_000);
    wait_for(&d.log, "the safe step", has("tool begin safe_step r0-1"));
    let dead = HashSet::from([kill(child)]);
    let before = journaled(&d.db);
    assert!(before.turns.contains("model begin r0 1"));
    settle(&d, 1, 1);
    assert_not_redone(&d.log, &before, &dead);
    assert_settled(&d, 1);
    let log = lines(&d.log);
    assert_eq!(
        log.iter()
            .filter(|(_, l)| l == "tool begin safe_step r0-1")
            .count(),
        2
    );
    assert!(!log.iter().any(|(_, l)| l.starts_with("recovery")));
}

#[test]
fn killed_during_a_manual_tool_the_run_waits_for_a_person_and_never_reruns_it() {
    let d = dir();
    let mut child = Command::new(WORKER);
    child
        .arg(&d.db)
        .arg(&d.log)
        .args(["1", "1"])
        .env("CRASH_MANUAL_MS", "60000");
    let child = child.spawn().unwrap();
    wait_for(
        &d.log,
        "the manual step",
        has("tool begin manual_step r0-2"),
    );
    let dead = HashSet::from([kill(child)]);
    let before = journaled(&d.db);
    assert!(before.calls.contains("r0-1") && !before.calls.contains("r0-2"));
    settle(&d, 1, 1);
    assert_not_redone(&d.log, &before, &dead);
    assert_settled(&d, 1);
    // The settling worker found the run waiting on a recovery question and answered it.
    assert!(lines(&d.log).iter().any(|(_, l)| l == "recovery run 1"));
}

#[test]
fn killed_right_after_a_step_is_journaled_nothing_acknowledged_is_redone() {
    let d = dir();
    let child = spawn(&d, 1, 1, false, 0, 0);
    // Synchronise on the journal row itself, not on time.
    let conn = loop {
        if let Ok(c) = rusqlite::Connection::open(&d.db) {
            break c;
        }
    };
    let mut n = 0;
    while n == 0 {
        std::thread::sleep(Duration::from_millis(1));
        n = conn
            .query_row(
                "SELECT COUNT(*) FROM steps WHERE kind = 'finished'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap_or(0);
    }
    drop(conn);
    let dead = HashSet::from([kill(child)]);
    let before = journaled(&d.db);
    assert!(before.calls.contains("r0-1"));
    settle(&d, 1, 1);
    assert_not_redone(&d.log, &before, &dead);
    assert_settled(&d, 1);
}

#[test]
fn killed_with_two_hundred_runs_in_flight_every_run_completes() {
    let d = dir();
    let child = spawn(&d, 200, 8, false, 3, 3);
    wait_for(&d.log, "300 model calls", |l| {
        l.iter()
            .filter(|(_, x)| x.starts_with("model begin"))
            .count()
            >= 300
    });
    let dead = HashSet::from([kill(child)]);
    let before = journaled(&d.db);
    settle(&d, 200, 8);
    assert_not_redone(&d.log, &before, &dead);
    assert_settled(&d, 200);
}

#[test]
fn killed_at_random_instants_again_and_again_nothing_is_lost_or_redone() {
    let d = dir();
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
        | 1;
    let mut dead = HashSet::new();
    for round in 0..6 {
        let child = spawn(&d, 40, 4, false, 2, 2);
        let pid = child.id();
        wait_for(&d.log, "the worker started its runs", |l| {
            l.iter().any(|(p, x)| *p == pid && x == "started")
        });
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        std::thread::sleep(Duration::from_millis(u64::from(seed % 120)));
        dead.insert(kill(child));
        let before = journaled(&d.db);
        // The next round's worker (or the settling one) must not redo what this one journaled.
        let next_from = lines(&d.log).len();
        if round == 5 {
            settle(&d, 40, 4);
        } else {
            let child = spawn(&d, 40, 4, false, 2, 2);
            let pid = child.id();
            wait_for(&d.log, "the next worker started", |l| {
                l.iter().any(|(p, x)| *p == pid && x == "started")
            });
            dead.insert(kill(child));
        }
        let later: Vec<_> = lines(&d.log).split_off(next_from);
        for (_, line) in later {
            assert!(
                !before.turns.contains(&line),
                "round {round}: {line} ran again"
            );
            if let Some(call) = line
                .strip_prefix("tool begin safe_step ")
                .or_else(|| line.strip_prefix("tool begin manual_step "))
            {
                assert!(
                    !before.calls.contains(call),
                    "round {round}: {line} ran again"
                );
            }
        }
    }
    assert_settled(&d, 40);
}
