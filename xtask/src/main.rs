//! askloop's build helper, so the README's two commands work on a fresh machine:
//!
//! - `cargo xtask run [-- serve args]`: build the dashboard and the server, then serve.
//! - `cargo xtask test [--install-deps] [-- cargo test args]`: build the dashboard, then run
//!   every test. The browser tests need Chromium and the dashboard's optimiser needs npm; when
//!   either is missing the command stops before building anything and names them, and with
//!   `--install-deps` (what CI passes) it installs them with apt-get instead.
//!   After the tests it fuzzes the API from outside (`fuzz-api`); `--no-fuzz` skips that.
//! - `cargo xtask build-web`: only the dashboard, into `web/dist`.
//! - `cargo xtask layers`: the layer check of `api/src` (see `layers.rs`); `test` runs it first.
//! - `cargo xtask fuzz-api [--max-time SECONDS]`: schemathesis against `/graphql` of a freshly
//!   seeded askloop, as a member and as an admin (see `fuzz_api.rs`).
//! - `cargo xtask bench [--quick]`: every performance figure in one table (see `bench.rs`).
//!
//! Each command is a module of its own (`build_web.rs`, `run.rs`, `test.rs`, `layers.rs`,
//! `fuzz_api.rs`, `bench.rs`); what several share — the pinned npm tools (`tools.rs`), the
//! system packages (`deps.rs`) and the cargo they start (here) — is beside them.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, bail};

mod a2a_sdk;
mod bench;
mod build_web;
mod deps;
mod fuzz_api;
mod layers;
#[cfg(test)]
mod links;
mod run;
mod smtpd;
mod test;
mod tools;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("build-web") => build_web::build().map(|_| ()),
        Some("run") => run::run(&args[1..]),
        Some("layers") => layers::run(&workspace_root()),
        Some("test") => test::run(&test::options(&args[1..])),
        Some("bench") => bench::run(&workspace_root(), &args[1..]),
        Some("fuzz-api") => fuzz_api::seconds(&args[1..]).and_then(|seconds| {
            deps::ensure_test_packages(false, deps::Needs::FUZZ_ONLY)
                .and_then(|()| test::build_binaries())
                .and_then(|()| fuzz_api::run(seconds))
        }),
        _ => {
            eprintln!(
                "usage: cargo xtask <build-web | layers | run [-- serve args] | test [--install-deps] \
                 [--no-fuzz] [-- cargo test args] | fuzz-api [--max-time SECONDS] | bench [--quick]>"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn cargo() -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command.current_dir(workspace_root());
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(is_cargo_run_variable) {
            command.env_remove(name);
        }
    }
    command
}

/// Whether `name` is one of the variables `cargo run` sets for the program it runs (this one):
/// the package's name, version and folder. Build scripts that watch them (`ring`'s does) would
/// see them change between `cargo build` and `cargo xtask test`, and run again with everything
/// that depends on them; so the cargo that xtask starts does not inherit them.
fn is_cargo_run_variable(name: &str) -> bool {
    [
        "CARGO_PKG_",
        "CARGO_MANIFEST_",
        "CARGO_CRATE_",
        "CARGO_BIN_",
    ]
    .iter()
    .any(|prefix| name.starts_with(prefix))
        || name == "CARGO_PRIMARY_PACKAGE"
}

fn status(mut command: Command, what: &str) -> anyhow::Result<()> {
    let status = command
        .status()
        .with_context(|| format!("cannot start {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// Cargo's target folder (`CARGO_TARGET_DIR`, else `target`).
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

#[cfg(test)]
mod tests {
    use super::is_cargo_run_variable;

    #[test]
    fn the_cargo_xtask_starts_inherits_no_variables_of_xtasks_own_package() {
        for name in [
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
            "CARGO_MANIFEST_DIR",
            "CARGO_MANIFEST_PATH",
            "CARGO_CRATE_NAME",
            "CARGO_BIN_NAME",
            "CARGO_PRIMARY_PACKAGE",
        ] {
            assert!(is_cargo_run_variable(name), "{name} is dropped");
        }
        for name in [
            "CARGO",
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_TERM_COLOR",
            "CARGO_BUILD_JOBS",
        ] {
            assert!(!is_cargo_run_variable(name), "{name} is kept");
        }
    }
}
