//! `cargo xtask bench`: every performance figure askloop promises, measured in one run and
//! printed as one table (figure, store, goal, measured, ratio).
//!
//! It builds the release binaries once (`askloop` and the tools of `askloop-load`, `tests/load`),
//! then for SQLite (a fresh file) and PostgreSQL (a fresh
//! database, when one answers at `ASKLOOP_BENCH_POSTGRES`, default
//! `postgres://postgres@127.0.0.1:5432`) runs:
//!
//! - `loadgen -n N -c 32`: intake throughput next to plain driver inserts (the floor);
//! - `loadgen --rate 1000`: open loop, latency from each request's scheduled time;
//! - `contention`: 50 operators answering one question at once, 10 times;
//! - `bench-queue`: the waiting-queue page, first and deep;
//! - `knowledge-search`: an agent's knowledge search over 1,000,000 entries of one niche, and
//!   whether its plan uses the full-text index;
//! - `loadgen --rate 1000 --similar`: open-loop intake asking for similar knowledge, over 10,000
//!   entries;
//! - `fanout`: websocket subscribers (1,000 on both stores, and 10,000 on SQLite).
//!
//! Each tool prints a `bench: {json}` line; this reads those lines and judges them against the
//! goals. `--quick` runs smaller loads (a smoke run, not a measurement).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};
use serde_json::Value;

/// How big the runs are.
struct Sizes {
    intake: u32,
    open_loop: u32,
    rounds: u32,
    queue: u32,
    queue_requests: u32,
    fanout: &'static [u32],
    fanout_questions: u32,
    knowledge: u32,
    knowledge_requests: u32,
    similar_entries: u32,
    similar_requests: u32,
}

const FULL: Sizes = Sizes {
    intake: 5_000,
    open_loop: 10_000,
    rounds: 10,
    queue: 100_000,
    queue_requests: 200,
    fanout: &[1_000, 10_000],
    fanout_questions: 20,
    knowledge: 1_000_000,
    knowledge_requests: 100,
    similar_entries: 10_000,
    similar_requests: 5_000,
};

const QUICK: Sizes = Sizes {
    intake: 500,
    open_loop: 1_000,
    rounds: 2,
    queue: 2_000,
    queue_requests: 20,
    fanout: &[100],
    fanout_questions: 3,
    knowledge: 20_000,
    knowledge_requests: 50,
    similar_entries: 2_000,
    similar_requests: 1_000,
};

/// One line of the table.
struct Row {
    figure: String,
    store: String,
    goal: String,
    measured: String,
    ratio: Option<f64>,
    met: Option<bool>,
}

/// Run the benchmark; `args` are what follows `cargo xtask bench`.
pub fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let quick = args.iter().any(|a| a == "--quick");
    if let Some(unknown) = args.iter().find(|a| *a != "--quick") {
        bail!("unknown argument {unknown:?} (cargo xtask bench [--quick])");
    }
    let sizes = if quick { &QUICK } else { &FULL };
    let started = Instant::now();
    let mut build = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    build.current_dir(root).args([
        "build",
        "--release",
        "-p",
        "askloop",
        "-p",
        "askloop-load",
        "--bins",
    ]);
    crate::status(build, "the release build")?;
    let release = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), std::path::PathBuf::from)
        .join("release");
    let scratch = std::env::temp_dir().join(format!("askloop-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;

    let mut stores = vec![("sqlite".to_owned(), None)];
    match postgres_base() {
        Some(base) => stores.push(("postgres".to_owned(), Some(base))),
        None => eprintln!("bench: PostgreSQL does not answer; measuring SQLite only"),
    }
    let mut rows = Vec::new();
    for (store, postgres) in &stores {
        let mut run_number = 0;
        // A fresh database for every tool, so no run measures another's leftovers.
        let mut fresh = |name: &str| -> anyhow::Result<String> {
            run_number += 1;
            match postgres {
                None => Ok(format!(
                    "sqlite://{}?mode=rwc",
                    scratch.join(format!("{name}-{run_number}.db")).display()
                )),
                Some(base) => fresh_postgres(base, &format!("askloop_bench_{name}_{run_number}")),
            }
        };
        // A tool of askloop-load, named by the first argument, on database `url`.
        let tool = |url: &str, args: &[String]| -> anyhow::Result<Vec<Value>> {
            let mut command = Command::new(release.join(&args[0]));
            command.args(&args[1..]).env("DATABASE_URL", url);
            figures(command, &args[0])
        };
        let n = |v: u32| v.to_string();

        let closed = tool(
            &fresh("intake")?,
            &[
                "loadgen".into(),
                "-n".into(),
                n(sizes.intake),
                "-c".into(),
                "32".into(),
            ],
        )?;
        let intake = find(&closed, "intake")?;
        let driver = find(&closed, "driver")?;
        let (ours, floor) = (number(intake, "perSecond"), number(driver, "perSecond"));
        rows.push(Row {
            figure: "intake throughput, c=32 (vs driver floor)".into(),
            store: store.clone(),
            goal: "≥ 0.5× floor".into(),
            measured: format!("{ours:.0}/s vs {floor:.0}/s"),
            ratio: Some(ours / floor),
            met: Some(ours >= 0.5 * floor && number(intake, "failures") == 0.0),
        });
        rows.push(Row {
            figure: "intake p50 / p99, c=32".into(),
            store: store.clone(),
            goal: "—".into(),
            measured: format!(
                "{:.1} / {:.1} ms",
                number(intake, "p50Ms"),
                number(intake, "p99Ms")
            ),
            ratio: None,
            met: None,
        });

        let open = tool(
            &fresh("open")?,
            &[
                "loadgen".into(),
                "--rate".into(),
                "1000".into(),
                "-n".into(),
                n(sizes.open_loop),
                "--no-baseline".into(),
            ],
        )?;
        let open = find(&open, "open")?;
        let p99 = number(open, "p99Ms");
        rows.push(Row {
            figure: "intake p99, open loop at 1,000/s".into(),
            store: store.clone(),
            goal: "≤ 20 ms".into(),
            measured: format!(
                "{p99:.1} ms (max {:.1}, {} failed)",
                number(open, "maxMs"),
                number(open, "failures")
            ),
            ratio: None,
            met: Some(p99 <= 20.0 && number(open, "failures") == 0.0),
        });

        let contention = tool(
            &fresh("contention")?,
            &[
                "contention".into(),
                "--operators".into(),
                "50".into(),
                "--rounds".into(),
                n(sizes.rounds),
            ],
        )?;
        let contention = find(&contention, "contention")?;
        let p99 = number(contention, "p99Ms");
        rows.push(Row {
            figure: "50 answers at once: p99 of all, one winner".into(),
            store: store.clone(),
            goal: "≤ 50 ms".into(),
            measured: format!(
                "{p99:.1} ms (max {:.1}; {} bad rounds)",
                number(contention, "maxMs"),
                number(contention, "badRounds")
            ),
            ratio: None,
            met: Some(p99 <= 50.0 && number(contention, "badRounds") == 0.0),
        });

        let queue = tool(
            &fresh("queue")?,
            &[
                "bench-queue".into(),
                "-q".into(),
                n(sizes.queue),
                "-n".into(),
                n(sizes.queue_requests),
            ],
        )?;
        for (run, label) in [("queue-first", "first"), ("queue-deep", "deep")] {
            let page = find(&queue, run)?;
            let uses_index = page["usesIndex"].as_bool().unwrap_or(false);
            rows.push(Row {
                figure: format!("queue {label} page, {} waiting-or-not", sizes.queue),
                store: store.clone(),
                goal: "index, no sort".into(),
                measured: format!(
                    "p99 {:.1} ms, {}",
                    number(page, "p99Ms"),
                    if uses_index { "index" } else { "NO INDEX" }
                ),
                ratio: None,
                met: Some(uses_index),
            });
        }

        let search = tool(
            &fresh("knowledge")?,
            &[
                "knowledge-search".into(),
                "-n".into(),
                n(sizes.knowledge),
                "-r".into(),
                n(sizes.knowledge_requests),
            ],
        )?;
        let search = find(&search, "knowledge-search")?;
        let p99 = number(search, "p99Ms");
        let uses_index = search["usesIndex"].as_bool().unwrap_or(false);
        rows.push(Row {
            figure: format!(
                "knowledge search p99, {} entries",
                thousands(sizes.knowledge)
            ),
            store: store.clone(),
            goal: "≤ 20 ms, full-text index".into(),
            measured: format!(
                "{p99:.1} ms (max {:.1}), {}",
                number(search, "maxMs"),
                if uses_index { "index" } else { "NO INDEX" }
            ),
            ratio: None,
            met: Some(p99 <= 20.0 && uses_index),
        });

        let similar = tool(
            &fresh("similar")?,
            &[
                "loadgen".into(),
                "--rate".into(),
                "1000".into(),
                "-n".into(),
                n(sizes.similar_requests),
                "--no-baseline".into(),
                "--similar".into(),
                "--entries".into(),
                n(sizes.similar_entries),
            ],
        )?;
        let similar = find(&similar, "open")?;
        let p99 = number(similar, "p99Ms");
        rows.push(Row {
            figure: "intake with similar: true, open loop at 1,000/s".into(),
            store: store.clone(),
            goal: "≤ 25 ms".into(),
            measured: format!(
                "{p99:.1} ms (max {:.1}, {} failed; {} entries)",
                number(similar, "maxMs"),
                number(similar, "failures"),
                number(similar, "entries")
            ),
            ratio: None,
            met: Some(p99 <= 25.0 && number(similar, "failures") == 0.0),
        });

        for &subscribers in sizes.fanout {
            if subscribers > 1_000 && store != "sqlite" {
                continue;
            }
            let mut command = Command::new(release.join("fanout"));
            command
                .args([
                    "--subscribers",
                    &n(subscribers),
                    "--questions",
                    &n(sizes.fanout_questions),
                ])
                .env("DATABASE_URL", fresh("fanout")?);
            let fanout = figures(command, "fanout")?;
            let fanout = find(&fanout, "fanout")?;
            let p99 = number(fanout, "p99Ms");
            let goal = if subscribers > 1_000 { 250.0 } else { 50.0 };
            let all = number(fanout, "received") == number(fanout, "expected");
            rows.push(Row {
                figure: format!("fan-out to {subscribers}: 201 → receipt p99"),
                store: store.clone(),
                goal: format!("≤ {goal:.0} ms, all received"),
                measured: format!(
                    "{p99:.1} ms ({} of {})",
                    number(fanout, "received"),
                    number(fanout, "expected")
                ),
                ratio: None,
                met: Some(p99 <= goal && all),
            });
            let kib = number(fanout, "kibPerSubscriber");
            rows.push(Row {
                figure: format!("server memory per subscriber ({subscribers})"),
                store: store.clone(),
                goal: "≤ 16 KiB".into(),
                measured: format!("{kib:.1} KiB"),
                ratio: None,
                met: Some(kib <= 16.0),
            });
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    print_table(&rows);
    println!(
        "\n{} in {:.0} s on {} ({} cores){}",
        if quick { "quick run" } else { "measured" },
        started.elapsed().as_secs_f64(),
        machine(),
        std::thread::available_parallelism().map_or(0, usize::from),
        if quick {
            ": sizes too small to judge the goals"
        } else {
            ""
        }
    );
    Ok(())
}

/// Run `command`, echo what it prints, and return its `bench:` lines.
fn figures(mut command: Command, what: &str) -> anyhow::Result<Vec<Value>> {
    let output = command
        .output()
        .with_context(|| format!("cannot start {what}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    for line in stdout.lines().filter(|l| !l.starts_with("bench: ")) {
        println!("  {line}");
    }
    if !output.status.success() {
        bail!(
            "{what} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("bench: "))
        .map(|json| serde_json::from_str(json).with_context(|| format!("{what} printed {json}")))
        .collect()
}

fn find<'a>(figures: &'a [Value], run: &str) -> anyhow::Result<&'a Value> {
    figures
        .iter()
        .find(|f| f["run"] == run)
        .with_context(|| format!("no '{run}' figures were printed"))
}

fn number(figures: &Value, key: &str) -> f64 {
    figures[key].as_f64().unwrap_or(f64::NAN)
}

/// The PostgreSQL server to measure on, if one answers.
fn postgres_base() -> Option<String> {
    let base = std::env::var("ASKLOOP_BENCH_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into());
    let answers = Command::new("psql")
        .args([&format!("{base}/postgres"), "-Atqc", "SELECT 1"])
        .output()
        .is_ok_and(|o| o.status.success());
    answers.then_some(base)
}

/// Drop and create database `name` on `base`; its URL.
fn fresh_postgres(base: &str, name: &str) -> anyhow::Result<String> {
    for sql in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        let mut psql = Command::new("psql");
        psql.args([&format!("{base}/postgres"), "-Atqc", &sql])
            .env("PGOPTIONS", "--client-min-messages=warning");
        crate::status(psql, "psql")?;
    }
    Ok(format!("{base}/{name}"))
}

/// `n` with commas between its thousands: 1,000,000.
fn thousands(n: u32) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "an unknown CPU".into());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("MemTotal"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<u64>().ok())
        })
        .map_or_else(String::new, |kib| {
            format!(", {} GiB", kib.div_ceil(1024 * 1024))
        });
    format!("{cpu}{memory}")
}

fn print_table(rows: &[Row]) {
    println!("\n| figure | store | goal | measured | ratio | met |");
    println!("|---|---|---|---|---|---|");
    for row in rows {
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            row.figure,
            row.store,
            row.goal,
            row.measured,
            row.ratio.map_or_else(|| "—".into(), |r| format!("{r:.2}×")),
            match row.met {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "—",
            }
        );
    }
}
