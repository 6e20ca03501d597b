//! The system packages the tests and the fuzzer need (Chromium, npm, Python with `venv`): named
//! when missing before anything is built, or installed with apt-get under `--install-deps`.

use std::process::Command;

use anyhow::bail;

use crate::test::INSTALL_DEPS;
use crate::tools::{AXE_CORE, BINARYEN_JS, GRAPHQL_WS, MCP_SDK, STANDARD_WEBHOOKS, SWAGGER_PARSER};
use crate::{a2a_sdk, fuzz_api, smtpd, status, target_dir};

/// A Debian package the tests need, and why.
pub(crate) struct Package {
    /// The Debian package's name.
    pub(crate) name: &'static str,
    /// What needs it, said when it is missing.
    pub(crate) why: &'static str,
}

/// Which system packages a command needs.
#[derive(Clone, Copy)]
pub(crate) struct Needs {
    /// The test suite's: Chromium, npm and nginx.
    suite: bool,
    /// The API fuzzer's: Python with `venv`.
    fuzz: bool,
}

impl Needs {
    /// The fuzzer alone (`cargo xtask fuzz-api`).
    pub(crate) const FUZZ_ONLY: Needs = Needs {
        suite: false,
        fuzz: true,
    };

    /// The suite's, and the fuzzer's unless `--no-fuzz`.
    pub(crate) fn tests(fuzz: bool) -> Needs {
        Needs { suite: true, fuzz }
    }
}

/// What a command needs from the system and does not have. The suite: Chromium for the browser
/// tests (the binary in `CHROMIUM`, else `chromium`) and npm for installing the dashboard's size
/// optimiser (binaryen), unless that is installed under `target/tools` already. The fuzzer: Python with
/// its `venv` module, unless its venv is there already.
fn missing_test_packages(needs: Needs) -> Vec<Package> {
    let mut missing = Vec::new();
    if needs.fuzz {
        missing.extend(fuzz_api::missing_packages(&target_dir()));
    }
    if !needs.suite {
        return missing;
    }
    for package in smtpd::missing_packages(&target_dir())
        .into_iter()
        .chain(a2a_sdk::missing_packages(&target_dir()))
    {
        if !missing.iter().any(|p: &Package| p.name == package.name) {
            missing.push(package);
        }
    }
    if !runs(&chromium()) {
        missing.push(Package {
            name: "chromium",
            why: "the browser tests drive it over the DevTools protocol",
        });
    }
    if !nginx_runs() {
        missing.push(Package {
            name: "nginx",
            why: "the proxy tests (tests/suite/behind_proxy.rs) run askloop behind a real nginx",
        });
    }
    let installed = [
        BINARYEN_JS,
        AXE_CORE,
        STANDARD_WEBHOOKS,
        MCP_SDK,
        GRAPHQL_WS,
        SWAGGER_PARSER,
    ]
    .iter()
    .all(|tool| tool.path(&target_dir()).is_file());
    if !installed && !runs("npm") {
        missing.push(Package {
            name: "npm",
            why: "it installs the dashboard's size optimiser, binaryen, the browser tests' \
                  accessibility checker, axe-core, the Standard Webhooks library the \
                  delivery tests verify with, the MCP TypeScript SDK the MCP test \
                  drives askloop with, the graphql-ws client the websocket test drives \
                  askloop with, and the OpenAPI validator",
        });
    }
    missing
}

fn chromium() -> String {
    std::env::var("CHROMIUM").unwrap_or_else(|_| "chromium".into())
}

/// Whether nginx starts (`nginx -v`): the binary in `NGINX`, else Debian's `/usr/sbin/nginx`,
/// which is not on every `PATH`, else `nginx` (as the suite's `tests/support/proxy.rs` looks).
fn nginx_runs() -> bool {
    let binary = std::env::var("NGINX").unwrap_or_else(|_| {
        if std::path::Path::new("/usr/sbin/nginx").is_file() {
            "/usr/sbin/nginx".into()
        } else {
            "nginx".into()
        }
    });
    Command::new(binary)
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether `program --version` starts and succeeds.
pub(crate) fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Stop early, naming what is missing, unless `install` says to apt-get it.
pub(crate) fn ensure_test_packages(install: bool, needs: Needs) -> anyhow::Result<()> {
    let missing = missing_test_packages(needs);
    if missing.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = missing.iter().map(|p| p.name).collect();
    if !install {
        let reasons: Vec<String> = missing
            .iter()
            .map(|p| format!("  {}: {}", p.name, p.why))
            .collect();
        bail!(
            "the tests need system packages that are missing:\n{}\ninstall them \
             (`apt-get install {}`), or run `cargo xtask test {INSTALL_DEPS}` to have apt-get \
             install them (set CHROMIUM to use another browser binary, NGINX another nginx)",
            reasons.join("\n"),
            names.join(" ")
        );
    }
    eprintln!("xtask: installing {} with apt-get", names.join(", "));
    let mut update = Command::new("apt-get");
    update.arg("update");
    status(update, "`apt-get update`")?;
    let mut install = Command::new("apt-get");
    install.args(["install", "-y", "--no-install-recommends"]);
    install.args(&names);
    status(install, &format!("`apt-get install {}`", names.join(" ")))?;
    let still: Vec<&str> = missing_test_packages(needs)
        .iter()
        .map(|p| p.name)
        .collect();
    if !still.is_empty() {
        bail!(
            "apt-get installed {} but {} still does not run",
            names.join(" "),
            still.join(" and ")
        );
    }
    Ok(())
}
