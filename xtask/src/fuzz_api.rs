//! `cargo xtask fuzz-api`: askloop's GraphQL API fuzzed from outside, as a client sees it.
//!
//! A fresh askloop (the debug binary `cargo xtask test` builds) is served on a free loopback
//! port over a new SQLite file, seeded through its own command line: the niches `games` (open)
//! and `drafty` (draft), the people `member` (an operator of games) and `root` (an admin), an API
//! key for each, and three questions asked through the signed intake. schemathesis (pinned, from
//! PyPI, into a venv under `target/tools`) loads the schema by the standard introspection query
//! and sends generated queries and mutations to `/graphql`, for a fixed time, first with the
//! member's key and then with the admin's. Every response must pass `askloop_error_door`
//! (`xtask/fuzz-api/askloop_checks.py`): no 5xx, a JSON object, every error with
//! `extensions.code` and none `INTERNAL`; and the server must log no error and no panic. A
//! summary is printed per role; any failure prints schemathesis's report (with a `curl` to
//! reproduce each) and the command fails.
//!
//! `revokeApiKey` is left out: it would revoke the very key the run authenticates with, and the
//! rest of the run would be refused at the door.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::deps::{Package, runs};
use crate::{target_dir, workspace_root};

/// The schemathesis release the runs use.
const SCHEMATHESIS_VERSION: &str = "4.32.5";
/// How long each role is fuzzed by default, in seconds (two roles: two of these).
pub const DEFAULT_SECONDS: u64 = 60;
/// The signing secret the seeded server and its questions share.
const SECRET: &str = "fuzz-api-signing-secret";
/// The password of the seeded people (their API keys are what the runs use).
const PASSWORD: &str = "fuzz-api-password-1";

/// `--max-time SECONDS` (per role), else [`DEFAULT_SECONDS`].
pub fn seconds(args: &[String]) -> anyhow::Result<u64> {
    match args {
        [] => Ok(DEFAULT_SECONDS),
        [flag, value] if flag == "--max-time" => value
            .parse::<u64>()
            .ok()
            .filter(|s| *s > 0)
            .with_context(|| format!("--max-time takes a positive number of seconds, not {value}")),
        _ => bail!("usage: cargo xtask fuzz-api [--max-time SECONDS]"),
    }
}

pub fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

fn venv(target_dir: &Path) -> PathBuf {
    target_dir
        .join("tools")
        .join(format!("schemathesis-{SCHEMATHESIS_VERSION}"))
}

fn st_path(target_dir: &Path) -> PathBuf {
    venv(target_dir).join("bin").join("st")
}

/// What the fuzzer needs from the system: Python 3 with `venv` (Debian splits it out), unless
/// the venv is installed already.
pub fn missing_packages(target_dir: &Path) -> Vec<Package> {
    if st_path(target_dir).is_file() {
        return Vec::new();
    }
    python_with_venv("the API fuzzer (schemathesis) is installed from PyPI into a Python venv")
}

/// Python 3 and its `venv` module, when missing, for `why`.
pub fn python_with_venv(why: &'static str) -> Vec<Package> {
    if !runs(&python()) {
        return vec![
            Package {
                name: "python3",
                why,
            },
            Package {
                name: "python3-venv",
                why,
            },
        ];
    }
    let has_venv = Command::new(python())
        .args(["-c", "import ensurepip, venv"])
        .output()
        .is_ok_and(|o| o.status.success());
    if has_venv {
        Vec::new()
    } else {
        vec![Package {
            name: "python3-venv",
            why,
        }]
    }
}

/// `st`, installed into its venv the first time.
fn schemathesis(target_dir: &Path) -> anyhow::Result<PathBuf> {
    let st = st_path(target_dir);
    let installed = Command::new(&st)
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(SCHEMATHESIS_VERSION));
    if installed {
        return Ok(st);
    }
    let venv = venv(target_dir);
    eprintln!(
        "xtask: installing schemathesis {SCHEMATHESIS_VERSION} from PyPI into {}",
        venv.display()
    );
    let mut create = Command::new(python());
    create.args(["-m", "venv", "--clear"]).arg(&venv);
    super::status(create, "creating the fuzzer's Python venv")?;
    let mut install = Command::new(venv.join("bin").join("pip"));
    install
        .args(["install", "--quiet", "--disable-pip-version-check"])
        .arg(format!("schemathesis=={SCHEMATHESIS_VERSION}"));
    super::status(install, "`pip install schemathesis`")?;
    Ok(st)
}

/// The askloop binary `build_binaries` leaves in the target folder.
fn askloop_binary(target_dir: &Path) -> anyhow::Result<PathBuf> {
    let binary = target_dir.join("debug").join("askloop");
    if !binary.is_file() {
        bail!("{} is not built", binary.display());
    }
    Ok(binary)
}

/// The environment every askloop process of the run gets: only what the run sets (and PATH),
/// so nothing from the caller's environment (a webhook URL, another database) leaks in.
fn askloop(binary: &Path, database_url: &str) -> Command {
    let mut command = Command::new(binary);
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("DATABASE_URL", database_url)
        .env("CHOVY_SIGNING_SECRET", SECRET)
        .env("ASKLOOP_PASSWORD", PASSWORD)
        .env("ASKLOOP_BIND", "127.0.0.1:0")
        .env("ASKLOOP_LOG_FORMAT", "json")
        .env("RUST_LOG", "warn");
    command
}

/// Run an askloop command to its end; its standard output.
fn seed(mut command: Command, what: &str) -> anyhow::Result<String> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run askloop to {what}"))?;
    if !output.status.success() {
        bail!(
            "askloop could not {what}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// The running server; stopped (and waited for) when dropped.
struct Server {
    child: Child,
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Serve askloop, logging to `log`, and wait until it says where it listens.
fn serve(mut command: Command, log: &Path) -> anyhow::Result<Server> {
    let log_file =
        std::fs::File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
    let mut child = command
        .arg("serve")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log_file)
        .spawn()
        .context("cannot start askloop")?;
    let stdout = child.stdout.take().context("askloop's standard output")?;
    let (tx, rx) = mpsc::channel();
    // Reads every line until askloop exits, so its output never blocks it.
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(base) = line.strip_prefix("askloop is serving on ") {
                let _ = tx.send(base.trim().to_owned());
            }
        }
    });
    let mut server = Server {
        child,
        base: String::new(),
    };
    server.base = rx.recv_timeout(Duration::from_secs(60)).with_context(|| {
        format!(
            "askloop did not start within 60 s; its log: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        )
    })?;
    Ok(server)
}

/// What one role's run came to, from schemathesis's JSON report.
struct Outcome {
    operations: u64,
    test_cases: u64,
    failures: u64,
    errors: u64,
    seconds: f64,
    seed: String,
    passed: bool,
}

fn outcome(report: &Path, exit_ok: bool) -> anyhow::Result<Outcome> {
    let text = std::fs::read_to_string(report)
        .with_context(|| format!("schemathesis wrote no report at {}", report.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text).context("reading the report")?;
    let number = |pointer: &str| json.pointer(pointer).and_then(|v| v.as_u64()).unwrap_or(0);
    let count = |pointer: &str| {
        json.pointer(pointer)
            .and_then(|v| v.as_array())
            .map_or(0, |a| a.len() as u64)
    };
    let failures = number("/test_cases/with_failures").max(count("/failures"));
    let errors = number("/test_cases/errored").max(count("/errors"));
    Ok(Outcome {
        operations: number("/operations/tested"),
        test_cases: number("/test_cases/generated"),
        failures,
        errors,
        seconds: json
            .pointer("/running_time")
            .and_then(|v| v.as_f64())
            .unwrap_or(0.0),
        seed: seed_of(&text),
        passed: exit_ok && failures == 0 && errors == 0,
    })
}

/// The run's seed as the report writes it: a 128-bit number, too wide for a JSON number read as
/// `u64`, so it is taken from the text.
fn seed_of(report: &str) -> String {
    report
        .split_once("\"seed\":")
        .map(|(_, rest)| {
            rest.trim_start()
                .chars()
                .take_while(char::is_ascii_digit)
                .collect()
        })
        .unwrap_or_default()
}

/// The server log's errors and panics (it logs JSON lines at `warn` and above).
fn logged_faults(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains("\"level\":\"ERROR\"") || line.contains("panicked"))
        .map(str::to_owned)
        .collect()
}

/// Fuzz `/graphql` for `seconds` per role; fails on any failed check or logged fault.
pub fn run(seconds: u64) -> anyhow::Result<()> {
    let started = Instant::now();
    let target_dir = target_dir();
    let st = schemathesis(&target_dir)?;
    let binary = askloop_binary(&target_dir)?;
    let config = workspace_root().join("xtask").join("fuzz-api");
    let dir = target_dir
        .join("fuzz-api")
        .join(format!("run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Absolute, since schemathesis runs inside it.
    let dir = std::fs::canonicalize(&dir)?;
    let database_url = format!("sqlite://{}?mode=rwc", dir.join("askloop.db").display());
    let run = |args: &[&str], what: &str| {
        let mut command = askloop(&binary, &database_url);
        command.args(args);
        seed(command, what)
    };

    run(&["migrate"], "migrate")?;
    run(
        &["niche", "create", "--slug", "games", "--name", "Games"],
        "create a niche",
    )?;
    run(
        &[
            "niche", "create", "--slug", "drafty", "--name", "Drafty", "--status", "draft",
        ],
        "create a draft niche",
    )?;
    run(
        &[
            "user",
            "create",
            "--handle",
            "member",
            "--email",
            "member@askloop.invalid",
        ],
        "create the member",
    )?;
    run(
        &[
            "user",
            "create",
            "--handle",
            "root",
            "--email",
            "root@askloop.invalid",
            "--admin",
        ],
        "create the admin",
    )?;
    run(
        &["member", "add", "--niche", "games", "--user", "member"],
        "add the member",
    )?;
    let member_key = run(
        &["apikey", "create", "--user", "member", "--name", "fuzz"],
        "issue the member's key",
    )?;
    let admin_key = run(
        &["apikey", "create", "--user", "root", "--name", "fuzz"],
        "issue the admin's key",
    )?;

    let log = dir.join("server.log");
    let server = serve(askloop(&binary, &database_url), &log)?;
    for n in 1..=3 {
        run(
            &[
                "ask",
                "--url",
                &server.base,
                "--niche",
                "games",
                "--title",
                &format!("Fuzz question {n}"),
                "--question",
                "Which one, and why?",
                "--option",
                "a=The first",
                "--option",
                "b=The second",
                "--external-id",
                &format!("fuzz-{n}"),
            ],
            "ask a question",
        )?;
    }
    eprintln!(
        "xtask: fuzzing {}/graphql with schemathesis {SCHEMATHESIS_VERSION}, {seconds} s as a \
         member, then {seconds} s as an admin",
        server.base
    );

    let mut failed = Vec::new();
    for (role, key) in [("member", &member_key), ("admin", &admin_key)] {
        let report = dir.join(format!("{role}.json"));
        let output = dir.join(format!("{role}.log"));
        let output_file = std::fs::File::create(&output)
            .with_context(|| format!("cannot create {}", output.display()))?;
        let exit = Command::new(&st)
            // Its cache (`.schemathesis/`) goes with the run's files, not into the work tree.
            .current_dir(&dir)
            .env("SCHEMATHESIS_HOOKS", config.join("askloop_checks.py"))
            .env("NO_COLOR", "1")
            .arg("--config-file")
            .arg(config.join("schemathesis.toml"))
            .arg("--no-color")
            .arg("run")
            .arg(format!("{}/graphql", server.base))
            .args(["--header", &format!("Authorization: Bearer {key}")])
            .args(["--checks", "askloop_error_door"])
            .args(["--max-time", &seconds.to_string()])
            .args(["--exclude-name", "Mutation.revokeApiKey"])
            .args(["--wait-for-schema", "30"])
            .args(["--report", "json", "--report-json-path"])
            .arg(&report)
            .stdin(Stdio::null())
            .stdout(output_file.try_clone()?)
            .stderr(output_file)
            .status()
            .context("cannot start schemathesis")?;
        let result = outcome(&report, exit.success());
        let Ok(result) = result else {
            println!("{}", std::fs::read_to_string(&output).unwrap_or_default());
            return result.map(|_| ());
        };
        println!(
            "fuzz-api: {role}: {} operations, {} test cases, each checked by askloop_error_door \
             (no 5xx; every error coded; none INTERNAL): {} failed, {} errored, in {:.1} s \
             (seed {})",
            result.operations,
            result.test_cases,
            result.failures,
            result.errors,
            result.seconds,
            result.seed
        );
        if !result.passed {
            println!("{}", std::fs::read_to_string(&output).unwrap_or_default());
            failed.push(role);
        }
    }
    drop(server);

    let faults = logged_faults(&log);
    if !faults.is_empty() {
        println!(
            "fuzz-api: askloop logged {} error(s) or panic(s):\n{}",
            faults.len(),
            faults.join("\n")
        );
        failed.push("server log");
    }
    if !failed.is_empty() {
        bail!(
            "the API fuzzer found failures ({}); its files are in {}",
            failed.join(", "),
            dir.display()
        );
    }
    println!(
        "fuzz-api: passed in {:.0} s (both roles, set-up included)",
        started.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn max_time_is_a_positive_number_of_seconds() {
        assert_eq!(seconds(&[]).unwrap(), DEFAULT_SECONDS);
        assert_eq!(seconds(&strings(&["--max-time", "5"])).unwrap(), 5);
        assert!(seconds(&strings(&["--max-time", "0"])).is_err());
        assert!(seconds(&strings(&["--max-time"])).is_err());
        assert!(seconds(&strings(&["--fast"])).is_err());
    }

    #[test]
    fn the_report_is_read_into_a_verdict() {
        let dir = std::env::temp_dir().join(format!("xtask-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let report = dir.join("report.json");
        std::fs::write(
            &report,
            r#"{"seed": 200421847211683284536557504174151818982, "running_time": 1.5,
                "operations": {"tested": 39},
                "test_cases": {"generated": 100, "with_failures": 0, "errored": 0},
                "failures": [], "errors": []}"#,
        )
        .unwrap();
        let ok = outcome(&report, true).unwrap();
        assert!(ok.passed);
        assert_eq!(
            (ok.operations, ok.test_cases, ok.seed.as_str()),
            (39, 100, "200421847211683284536557504174151818982")
        );
        assert!(!outcome(&report, false).unwrap().passed);
        std::fs::write(
            &report,
            r#"{"test_cases": {"generated": 3, "with_failures": 1}, "failures": [{}]}"#,
        )
        .unwrap();
        let failed = outcome(&report, false).unwrap();
        assert_eq!(failed.failures, 1);
        assert!(!failed.passed);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
