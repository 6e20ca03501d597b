//! `askloop serve` as a process of its own (for a second instance, or one to kill): started on a
//! database with the test secret and a free port, its base URL read from what it prints, and
//! killed when dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use crate::{SECRET, askloop_binary};

/// A running `askloop serve`.
pub struct Served {
    /// The process.
    pub child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
}

impl Served {
    /// Start `askloop serve` on `database_url`, with `env` added to its environment.
    pub fn start(database_url: &str, env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(askloop_binary());
        command.arg("serve");
        Self::run(command, database_url, env)
    }

    /// Start `askloop serve` on `database_url` with its soft open-file limit lowered to `soft`
    /// (by the shell that starts it), as a service manager's default would leave it.
    pub fn start_with_soft_file_limit(database_url: &str, soft: u64) -> Self {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!("ulimit -Sn {soft} && exec \"$0\" serve"))
            .arg(askloop_binary());
        Self::run(command, database_url, &[])
    }

    fn run(mut command: Command, database_url: &str, env: &[(&str, &str)]) -> Self {
        command
            .env("DATABASE_URL", database_url)
            .env("ASKLOOP_BIND", "127.0.0.1:0")
            .env("CHOVY_SIGNING_SECRET", SECRET)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("askloop starts");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let base = stdout
            .lines()
            .map_while(Result::ok)
            .find_map(|line| {
                line.strip_prefix("askloop is serving on ")
                    .map(str::to_owned)
            })
            .expect("askloop says where it serves");
        Self { child, base }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
