//! `cargo xtask test [--install-deps] [--no-fuzz] [-- cargo test args]`: the layer check, the
//! system packages and npm tools the tests need, the binaries and the dashboard side by side,
//! then every test of the workspace, one tally over them all, and the API fuzzer after a green
//! run.

use std::process::Command;

use anyhow::{Context, bail};

use crate::deps::{Needs, ensure_test_packages};
use crate::tools::{AXE_CORE, GRAPHQL_WS, MCP_SDK, STANDARD_WEBHOOKS, SWAGGER_PARSER};
use crate::{
    a2a_sdk, build_web, cargo, fuzz_api, layers, smtpd, status, target_dir, workspace_root,
};

/// Run `cargo xtask test` as `options` say.
pub(crate) fn run(options: &TestOptions) -> anyhow::Result<()> {
    layers::run(&workspace_root())?;
    ensure_test_packages(options.install_deps, Needs::tests(options.fuzz))?;
    build_web::beside(binaries(), "building the askloop binary and the examples")?;
    for tool in [
        AXE_CORE,
        STANDARD_WEBHOOKS,
        MCP_SDK,
        GRAPHQL_WS,
        SWAGGER_PARSER,
    ] {
        tool.install(&target_dir())?;
    }
    smtpd::install(&target_dir())?;
    a2a_sdk::install(&target_dir())?;
    test(options)
}

/// What `cargo xtask test` was asked for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TestOptions {
    /// `--install-deps`: apt-get what is missing.
    install_deps: bool,
    /// Unless `--no-fuzz`: fuzz the API after the tests.
    fuzz: bool,
    /// The arguments that go on to `cargo test`.
    cargo_test: Vec<String>,
}

/// `--install-deps` and `--no-fuzz` before any `--`; everything else goes on to `cargo test`.
pub(crate) fn options(args: &[String]) -> TestOptions {
    let ours = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let flag = |name: &str| args[..ours].iter().any(|a| a == name);
    TestOptions {
        install_deps: flag(INSTALL_DEPS),
        fuzz: !flag(NO_FUZZ),
        cargo_test: args
            .iter()
            .enumerate()
            .filter(|(i, a)| *i >= ours || (a.as_str() != INSTALL_DEPS && a.as_str() != NO_FUZZ))
            .map(|(_, a)| a.clone())
            .collect(),
    }
}

pub(crate) const INSTALL_DEPS: &str = "--install-deps";
const NO_FUZZ: &str = "--no-fuzz";

/// PostgreSQL runs the storage tests too: use `TEST_DATABASE_URL` when set, else the local
/// server when one answers on 127.0.0.1:5432, else say that only SQLite will run.
fn test_database_url() -> Option<String> {
    if let Ok(url) = std::env::var("TEST_DATABASE_URL") {
        return Some(url);
    }
    let local = std::net::SocketAddr::from(([127, 0, 0, 1], 5432));
    if std::net::TcpStream::connect_timeout(&local, std::time::Duration::from_secs(1)).is_ok() {
        let url = "postgres://postgres@127.0.0.1:5432/postgres".to_owned();
        eprintln!("xtask: TEST_DATABASE_URL is unset; using the local PostgreSQL at {url}");
        return Some(url);
    }
    eprintln!("xtask: no PostgreSQL found; the PostgreSQL variants of the tests will be skipped");
    None
}

/// Build the `askloop` binary (and the other binaries), and the examples. The suite runs the
/// real binary for its command-line tests and the fuzzer serves it, and the suite runs the agent
/// SDK's example program against a live server (`tests/suite/sdk.rs`); `cargo test` builds
/// only test harnesses (an example too, under `--all-targets`), so build the programs first —
/// over the same packages as the tests, so that features unify the same way and every
/// dependency is compiled once for both.
/// The dashboard's package is among them although it has no binary: the test run compiles its
/// unit tests on the host, and its dependencies turn on features (of `proc-macro2`, say) that
/// every derive macro and so nearly every crate depends on; left out here, the test run would
/// compile the whole dependency tree a second time.
fn binaries() -> Command {
    let mut binary = cargo();
    binary.args(["build", "--workspace", "--bins", "--examples"]);
    binary
}

/// [`binaries`], built (for the fuzzer alone).
pub(crate) fn build_binaries() -> anyhow::Result<()> {
    status(binaries(), "building the askloop binary and the examples")
}

/// `cargo test` over the workspace: its output echoed, each failure's panic repeated at the end,
/// one tally; then the fuzzer, if asked for and the tests passed.
fn test(options: &TestOptions) -> anyhow::Result<()> {
    let args = &options.cargo_test;
    let mut tests = cargo();
    if let Some(url) = test_database_url() {
        tests.env("TEST_DATABASE_URL", url);
    }
    // The dashboard's own unit tests (pure functions: formats, decoding, the reconnection
    // pause) run on the host with the rest.
    tests.args(["test", "--workspace", "--all-targets"]);
    tests.args(args.iter().skip_while(|a| a.as_str() == "--"));
    if std::env::var_os("RUST_TEST_THREADS").is_none() {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        tests.env("RUST_TEST_THREADS", test_threads(cores).to_string());
    }
    tests.stdout(std::process::Stdio::piped());
    let mut child = tests.spawn().context("cannot start the tests")?;
    let (mut passed, mut failed) = (0u64, 0u64);
    let mut failures = Failures::default();
    if let Some(stdout) = child.stdout.take() {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines() {
            let line = line.context("reading the test output")?;
            println!("{line}");
            failures.read(&line);
            if let Some(rest) = line.strip_prefix("test result: ") {
                passed += count_before(rest, " passed");
                failed += count_before(rest, " failed");
            }
        }
    }
    let exit = child.wait().context("waiting for the tests")?;
    let tally = format!("tests: {passed} passed, {failed} failed");
    if !exit.success() {
        // Each failure's panic again, last: a backtrace can push it out of a log's tail.
        print!("{}", failures.summary());
        println!("{tally}");
        bail!("the tests failed ({exit})");
    }
    // The fuzzer only after a green suite; its summary comes before the closing line.
    let fuzzed = if options.fuzz {
        fuzz_api::run(fuzz_api::DEFAULT_SECONDS)
    } else {
        eprintln!("xtask: {NO_FUZZ}: the API is not fuzzed");
        Ok(())
    };
    // One closing line over every test binary, so a reader need not add them up.
    println!("{tally}");
    fuzzed
}

/// How many tests run at once on `cores` processors (unless `RUST_TEST_THREADS` says): three a
/// core, at most [`MOST_TEST_THREADS`]. The suite's tests mostly wait — for their servers, the
/// browser, PostgreSQL — so one a core (the test harness's default) left the machine mostly idle
/// and the suite twice as slow (docs/development.md#how-long-things-take).
fn test_threads(cores: usize) -> usize {
    (3 * cores).clamp(1, MOST_TEST_THREADS)
}

/// The most tests at once: each of the suite's servers holds connections to the one PostgreSQL
/// the tests share (`tests/support/app.rs`), which takes 100 by default.
const MOST_TEST_THREADS: usize = 6;

/// What each failed test printed before its backtrace, gathered from the test output.
#[derive(Default)]
struct Failures {
    /// Each failed test's name and the first lines of what it printed.
    seen: Vec<(String, Vec<String>)>,
    /// Whether lines now belong to the last failure (until its backtrace or the next one).
    reading: bool,
}

impl Failures {
    /// The most lines, and characters a line, kept of one failure.
    const LINES: usize = 8;
    const CHARS: usize = 400;

    fn read(&mut self, line: &str) {
        if let Some(name) = line
            .strip_prefix("---- ")
            .and_then(|rest| rest.strip_suffix(" stdout ----"))
        {
            self.seen.push((name.to_owned(), Vec::new()));
            self.reading = true;
            return;
        }
        if line.starts_with("stack backtrace:")
            || line.starts_with("failures:")
            || line.starts_with("note: run with `RUST_BACKTRACE")
        {
            self.reading = false;
            return;
        }
        if let Some((_, lines)) = self.seen.last_mut().filter(|_| self.reading)
            && lines.len() < Self::LINES
            && !line.trim().is_empty()
        {
            lines.push(line.chars().take(Self::CHARS).collect());
        }
    }

    fn summary(&self) -> String {
        let mut out = String::new();
        for (name, lines) in &self.seen {
            out.push_str(&format!("failed: {name}\n"));
            for line in lines {
                out.push_str(&format!("    {line}\n"));
            }
        }
        out
    }
}

/// The number just before `label` in a `test result:` line (`ok. 12 passed; 0 failed; …`).
fn count_before(line: &str, label: &str) -> u64 {
    line.split(';')
        .find_map(|part| part.trim().strip_suffix(label.trim()))
        .and_then(|n| n.trim().rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::{
        Failures, MOST_TEST_THREADS, TestOptions, count_before, options as test_options,
        test_threads,
    };

    #[test]
    fn each_failures_panic_is_repeated_without_its_backtrace() {
        let mut failures = Failures::default();
        let long = "x".repeat(1_000);
        for line in [
            "test a::b ... ok",
            "failures:",
            "",
            "---- pages::menu stdout ----",
            "thread 'pages::menu' panicked at tests/suite/pages.rs:12:5:",
            "timed out waiting for the menu; the page is:",
            long.as_str(),
            "stack backtrace:",
            "   0: std::panicking::begin_panic",
            "---- money::sum stdout ----",
            "thread 'money::sum' panicked at tests/suite/money.rs:3:1:",
            "assertion `left == right` failed",
            "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
            "",
            "failures:",
            "    pages::menu",
            "    money::sum",
        ] {
            failures.read(line);
        }
        let summary = failures.summary();
        let clipped = "x".repeat(400);
        assert_eq!(
            summary,
            format!(
                "failed: pages::menu\n    thread 'pages::menu' panicked at tests/suite/pages.rs:12:5:\n    timed out waiting for the menu; the page is:\n    {clipped}\n\
                 failed: money::sum\n    thread 'money::sum' panicked at tests/suite/money.rs:3:1:\n    assertion `left == right` failed\n"
            )
        );
        assert_eq!(
            Failures::default().summary(),
            "",
            "nothing failed, nothing said"
        );
    }

    #[test]
    fn tests_run_three_a_core_up_to_the_most_the_shared_database_allows() {
        assert_eq!(test_threads(1), 3);
        assert_eq!(test_threads(2), MOST_TEST_THREADS);
        assert_eq!(test_threads(64), MOST_TEST_THREADS);
        assert_eq!(test_threads(0), 1, "at least one");
    }

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| (*a).to_owned()).collect()
    }

    fn options(install_deps: bool, fuzz: bool, cargo_test: &[&str]) -> TestOptions {
        TestOptions {
            install_deps,
            fuzz,
            cargo_test: strings(cargo_test),
        }
    }

    #[test]
    fn our_flags_are_ours_and_everything_else_goes_to_cargo_test() {
        assert_eq!(test_options(&[]), options(false, true, &[]));
        assert_eq!(
            test_options(&strings(&["--install-deps"])),
            options(true, true, &[])
        );
        assert_eq!(
            test_options(&strings(&["--install-deps", "--no-fuzz", "--", "delivery"])),
            options(true, false, &["--", "delivery"])
        );
        // After `--` it belongs to cargo test, even when it looks like ours.
        assert_eq!(
            test_options(&strings(&["--", "--install-deps", "--no-fuzz"])),
            options(false, true, &["--", "--install-deps", "--no-fuzz"])
        );
        assert_eq!(
            test_options(&strings(&["delivery"])),
            options(false, true, &["delivery"])
        );
    }

    #[test]
    fn test_result_lines_are_counted() {
        let line =
            "ok. 101 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1s";
        assert_eq!(count_before(line, " passed"), 101);
        assert_eq!(count_before(line, " failed"), 2);
        assert_eq!(count_before("FAILED. 0 passed; 7 failed;", " failed"), 7);
        assert_eq!(count_before("garbage", " passed"), 0);
    }
}
