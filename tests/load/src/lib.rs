//! askloop's measuring tools, outside the server: what the binaries under `src/bin` share — how a
//! tool starts (its arguments, askloop's `Config` from the environment, a runtime), where the
//! `askloop` binary it runs as a child process is, and the niche, operators and knowledge entries it seeds.
//!
//! Each tool prints its figures as one `bench: {json}` line per run for `cargo xtask bench`
//! (docs/benchmarks.md).

use std::future::Future;
use std::path::PathBuf;
use std::process::ExitCode;

use askloop::config::Config;

pub mod knowledge_seed;
pub mod seed;

/// Parse the tool's arguments, build askloop's `Config` from the environment and run `tool` on a
/// fresh runtime; any failure becomes a message on stderr and exit code 1 (2 for bad settings).
pub fn main<A, F>(name: &str, tool: impl FnOnce(Config, A) -> F) -> ExitCode
where
    A: clap::Parser,
    F: Future<Output = anyhow::Result<()>>,
{
    let args = A::parse();
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(err) => {
            eprintln!("{name}: {err}");
            return ExitCode::from(2);
        }
    };
    let _logs = askloop::telemetry::init(config.log_format);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("{name}: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(tool(config, args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{name}: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The `askloop` binary built beside this tool (`target/<profile>/askloop`): the server a tool
/// runs as a child process, so it measures the binary people run, signals and all.
pub fn askloop_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let binary = exe
        .parent()
        .map(|dir| dir.join("askloop"))
        .ok_or_else(|| anyhow::anyhow!("{} has no directory", exe.display()))?;
    anyhow::ensure!(
        binary.is_file(),
        "{} is not built: build it with the tools (`cargo build -p askloop -p askloop-load`, \
         with --release to measure)",
        binary.display()
    );
    Ok(binary)
}
