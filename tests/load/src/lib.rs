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
    let _logs = askloop::telemetry::init(config.log_format, &config.log_filter);
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

/// askloop serving in a process of its own (`askloop serve` on a free port of 127.0.0.1), so a
/// tool's load and the server do not share a runtime or an allocator; killed when dropped.
pub struct Server {
    child: std::process::Child,
    /// Where it serves: `http://127.0.0.1:<port>`.
    pub base: String,
}

impl Server {
    /// Start the `askloop` binary built beside this tool on `database_url` (already migrated or
    /// not), signing agents' requests with `secret`, with `env` set as well; returns once it says
    /// where it serves. Every client of a tool connects from 127.0.0.1, so the cap on
    /// connections from one address is lifted.
    pub fn start(database_url: &str, secret: &str, env: &[(&str, &str)]) -> anyhow::Result<Self> {
        use std::io::{BufRead, BufReader};
        use std::process::{Command, Stdio};
        let mut command = Command::new(askloop_binary()?);
        command
            .arg("serve")
            .env("DATABASE_URL", database_url)
            .env("CHOVY_SIGNING_SECRET", secret)
            .env("ASKLOOP_BIND", "127.0.0.1:0")
            .env("ASKLOOP_MAX_CONNECTIONS_PER_ADDRESS", "1000000")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("askloop's output cannot be read"))?;
        let mut lines = BufReader::new(stdout).lines();
        let base = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|l| l.strip_prefix("askloop is serving on ").map(str::to_owned));
        let Some(base) = base else {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!("askloop did not start");
        };
        // Whatever it prints later is read and dropped, so it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Ok(Self { child, base })
    }

    /// The server's process id (its memory is read from /proc).
    pub fn id(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
