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
//! The dashboard is compiled with cargo for `wasm32-unknown-unknown` and bound with the
//! `wasm-bindgen-cli-support` library pinned to the same version as the `wasm-bindgen` crate, so
//! the two can never drift apart. The bound wasm is then shrunk as `wasm-opt -Oz` would, byte for
//! byte, by `xtask/shrink-wasm.mjs` over the JavaScript API of the npm package `binaryen` (pinned;
//! installed once under `target/tools`, since Debian's older binaryen produces a bundle that
//! breaks at run time), every file in one node process. The browser tests check pages with axe-core, the
//! npm package `axe-core` (pinned, installed the same way; the tests find it under
//! `target/tools`, or at `ASKLOOP_AXE`). A delivery askloop signed with the Standard Webhooks
//! scheme is checked by that scheme's own npm library, `standardwebhooks` (pinned, installed the
//! same way; the tests run it with node from `target/tools`, or from `ASKLOOP_STANDARDWEBHOOKS`).
//! askloop's MCP server is driven by a client other than its own code, the official TypeScript
//! SDK `@modelcontextprotocol/sdk` (pinned, installed the same way; the tests run
//! `tests/mcp-client/check.mjs` with node against it, from `target/tools` or `ASKLOOP_MCP_SDK`).
//! Its websocket is driven the same way by the official `graphql-ws` client (pinned, with the
//! `graphql` it needs; `tests/graphql-ws-client/check.mjs`, from `target/tools` or
//! `ASKLOOP_GRAPHQL_WS`).
//! The committed `openapi.json` is validated as OpenAPI 3.1 by `@apidevtools/swagger-parser`
//! (pinned, installed the same way; from `target/tools` or `ASKLOOP_SWAGGER_PARSER`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, bail};

mod a2a_sdk;
mod bench;
mod fuzz_api;
mod layers;
#[cfg(test)]
mod links;
mod smtpd;

const WASM_TARGET: &str = "wasm32-unknown-unknown";
const BINARYEN: &str = "binaryen@132.0.0";
/// The accessibility checker the browser tests inject into pages (its `axe.min.js`); the suite's
/// `tests/support/axe.rs` names the same version.
const AXE: &str = "axe-core@4.14.1";
/// The Standard Webhooks library that verifies a real delivery in the suite;
/// `tests/support/standard_webhooks.rs` names the same version.
const STANDARD_WEBHOOKS_PACKAGE: &str = "standardwebhooks@1.1.1";
/// The official MCP TypeScript SDK, the client of askloop's MCP server in the suite's
/// interoperability test; `tests/support/mcp.rs` names the same version.
const MCP_SDK_PACKAGE: &str = "@modelcontextprotocol/sdk@1.32.2";
/// The official graphql-transport-ws client, which the suite's `tests/suite/graphql_ws.rs` drives
/// askloop's websocket with (and names the same version); installed with the `graphql` it needs.
const GRAPHQL_WS_PACKAGE: &str = "graphql-ws@6.4.2";
/// The `graphql` release installed beside graphql-ws (its peer dependency), pinned too.
const GRAPHQL_PACKAGE: &str = "graphql@16.15.0";
/// An OpenAPI validator independent of the code that writes askloop's document; the suite's
/// `tests/suite/openapi.rs` names the same version.
const SWAGGER_PARSER_PACKAGE: &str = "@apidevtools/swagger-parser@13.1.0";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("build-web") => build_web().map(|_| ()),
        Some("run") => run(&args[1..]),
        Some("layers") => layers::run(&workspace_root()),
        Some("test") => {
            let options = test_options(&args[1..]);
            layers::run(&workspace_root())
                .and_then(|()| {
                    ensure_test_packages(options.install_deps, Needs::tests(options.fuzz))
                })
                .and_then(|()| {
                    build_web_beside(binaries(), "building the askloop binary and the examples")
                })
                .and_then(|_| AXE_CORE.install(&target_dir()).map(|_| ()))
                .and_then(|()| STANDARD_WEBHOOKS.install(&target_dir()).map(|_| ()))
                .and_then(|()| MCP_SDK.install(&target_dir()).map(|_| ()))
                .and_then(|()| GRAPHQL_WS.install(&target_dir()).map(|_| ()))
                .and_then(|()| SWAGGER_PARSER.install(&target_dir()).map(|_| ()))
                .and_then(|()| smtpd::install(&target_dir()))
                .and_then(|()| a2a_sdk::install(&target_dir()))
                .and_then(|()| test(&options))
        }
        Some("bench") => bench::run(&workspace_root(), &args[1..]),
        Some("fuzz-api") => fuzz_api::seconds(&args[1..]).and_then(|seconds| {
            ensure_test_packages(false, Needs::FUZZ_ONLY)
                .and_then(|()| build_binaries())
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

/// The wasm target must be there; install it with rustup, and fail loudly if that cannot be done.
fn ensure_wasm_target() -> anyhow::Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output();
    if let Ok(output) = &installed
        && String::from_utf8_lossy(&output.stdout)
            .lines()
            .any(|line| line.trim() == WASM_TARGET)
    {
        return Ok(());
    }
    eprintln!("xtask: installing the {WASM_TARGET} target with rustup");
    let mut add = Command::new("rustup");
    add.args(["target", "add", WASM_TARGET]);
    status(add, "`rustup target add wasm32-unknown-unknown`")
        .context("the dashboard cannot be built without the wasm32-unknown-unknown target")
}

/// Build the dashboard into `web/dist`; returns that folder.
fn build_web() -> anyhow::Result<PathBuf> {
    ensure_wasm_target()?;
    let root = workspace_root();
    let target_dir = target_dir();
    let web_target = target_dir.join("web");
    let mut build = cargo();
    build.args([
        "build",
        "--profile",
        "wasm-release",
        "--package",
        "web",
        "--target",
        WASM_TARGET,
        "--target-dir",
    ]);
    build.arg(&web_target);
    status(build, "building the dashboard")?;

    let wasm = web_target
        .join(WASM_TARGET)
        .join("wasm-release")
        .join("web.wasm");
    let dist = root.join("web").join("dist");
    let pkg = dist.join("pkg");
    std::fs::create_dir_all(&pkg).with_context(|| format!("cannot create {}", pkg.display()))?;

    let bound = pkg.join("web_bg.wasm");
    // Rebuild the bundle when the compiled wasm is not the one bound last time (its size and
    // mtime are stamped next to the output), so a stale bundle can never be served.
    let stamp_file = pkg.join(".source");
    let stamp = source_stamp(&wasm)?;
    let up_to_date = bound.is_file()
        && pkg.join("web.js").is_file()
        && std::fs::read_to_string(&stamp_file).ok().as_deref() == Some(stamp.as_str());
    if !up_to_date {
        bundle(&wasm, &pkg, &target_dir)?;
        std::fs::write(&stamp_file, &stamp).context("cannot write the bind stamp")?;
    }
    for file in ["index.html", "boot.js", "style.css"] {
        let from = root.join("web").join(file);
        std::fs::copy(&from, dist.join(file))
            .with_context(|| format!("cannot copy {}", from.display()))?;
    }
    eprintln!("xtask: dashboard built in {}", dist.display());
    for (file, bytes) in wasm_files(&pkg)? {
        let compressed = gzipped_size(&pkg.join(&file))?;
        eprintln!(
            "xtask:   {file}: {} KiB, {} KiB gzipped",
            bytes / 1024,
            compressed / 1024
        );
        if file == "web_bg.wasm" && compressed > MAIN_WASM_BUDGET {
            bail!(
                "the dashboard's main wasm is {compressed} bytes gzipped, over its budget of \
                 {MAIN_WASM_BUDGET}: move a page behind #[lazy_route] or trim what it compiles in"
            );
        }
    }
    Ok(dist)
}

/// The most the main wasm (what every page load fetches) may weigh gzipped, in bytes; pages
/// behind `#[lazy_route]` are chunks of their own and not counted here.
const MAIN_WASM_BUDGET: u64 = 400_000;

/// How many bytes `file` takes gzipped at the highest level (as a server would send it).
fn gzipped_size(file: &Path) -> anyhow::Result<u64> {
    let output = Command::new("gzip")
        .args(["-9", "-c"])
        .arg(file)
        .output()
        .context("cannot run gzip to weigh the dashboard")?;
    if !output.status.success() {
        bail!("gzip could not read {}", file.display());
    }
    Ok(output.stdout.len() as u64)
}

/// Turn the compiled wasm into what the page loads, in `pkg`:
///
/// 1. split: every `#[lazy_route]` view (and `#[lazy]` function) moves into a chunk of its own,
///    which the page fetches the first time it is needed; what is left is the main module;
/// 2. bind the main module with wasm-bindgen into `web.js` + `web_bg.wasm` (the chunks'
///    loader, `__wasm_split.js`, imports from `web.js`);
/// 3. shrink every wasm file as `wasm-opt -Oz` would (`xtask/shrink-wasm.mjs`).
fn bundle(wasm: &Path, pkg: &Path, target_dir: &Path) -> anyhow::Result<()> {
    // Chunks from an earlier build must not linger next to the new ones.
    for entry in std::fs::read_dir(pkg).with_context(|| format!("cannot list {}", pkg.display()))? {
        let path = entry?.path();
        if path
            .extension()
            // `shrinking`: a file shrink-wasm.mjs was writing when a run was killed.
            .is_some_and(|ext| ext == "wasm" || ext == "js" || ext == "shrinking")
        {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
        }
    }
    let input = std::fs::read(wasm).with_context(|| format!("cannot read {}", wasm.display()))?;
    let main_module = wasm.with_file_name("web_split.wasm");
    let split = wasm_split_cli_support::transform({
        let mut options = wasm_split_cli_support::Options::new(&input);
        options.output_dir = pkg;
        options.main_out_path = &main_module;
        options.main_module = "./web.js";
        options.link_name = "./__wasm_split.js";
        options
    })
    .map_err(|err| anyhow::anyhow!("{err:#}"))
    .context("cannot split the dashboard's lazily loaded pages into chunks")?;

    wasm_bindgen_cli_support::Bindgen::new()
        .input_path(&main_module)
        .out_name("web")
        .web(true)?
        .typescript(false)
        .keep_lld_exports(true)
        .demangle(false)
        .generate(pkg)
        .context("wasm-bindgen could not bind the dashboard")?;

    let mut files = vec![pkg.join("web_bg.wasm")];
    files.extend(split.split_modules.iter().cloned());
    optimise_for_size(&files, target_dir)
}

/// The wasm files of the bundle with their sizes, main module first.
fn wasm_files(pkg: &Path) -> anyhow::Result<Vec<(String, u64)>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(pkg).with_context(|| format!("cannot list {}", pkg.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".wasm") {
            files.push((name, entry.metadata()?.len()));
        }
    }
    files.sort_by_key(|(name, _)| (name != "web_bg.wasm", name.clone()));
    Ok(files)
}

/// Cargo's target folder (`CARGO_TARGET_DIR`, else `target`).
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// A file of a pinned npm package, installed into `target/tools/<package>-<version>`.
struct NpmTool {
    /// `name@version`.
    package: &'static str,
    /// The file wanted, under the prefix's `node_modules`.
    file: &'static [&'static str],
    /// What needs it, for the error when npm is missing.
    needed_by: &'static str,
    /// Other packages (`name@version`) installed beside it, into the same folder.
    with: &'static [&'static str],
}

/// binaryen's JavaScript API, which `xtask/shrink-wasm.mjs` drives.
const BINARYEN_JS: NpmTool = NpmTool {
    package: BINARYEN,
    file: &["binaryen", "index.js"],
    needed_by: "the dashboard's size optimiser",
    with: &[],
};

const AXE_CORE: NpmTool = NpmTool {
    package: AXE,
    file: &["axe-core", "axe.min.js"],
    needed_by: "the browser tests' accessibility checks",
    with: &[],
};

const STANDARD_WEBHOOKS: NpmTool = NpmTool {
    package: STANDARD_WEBHOOKS_PACKAGE,
    file: &["standardwebhooks", "package.json"],
    needed_by: "the test that verifies a delivery with the Standard Webhooks library",
    with: &[],
};

const MCP_SDK: NpmTool = NpmTool {
    package: MCP_SDK_PACKAGE,
    file: &["@modelcontextprotocol", "sdk", "package.json"],
    needed_by: "the test that drives askloop's MCP server with the official TypeScript SDK",
    with: &[],
};

const GRAPHQL_WS: NpmTool = NpmTool {
    package: GRAPHQL_WS_PACKAGE,
    file: &["graphql-ws", "package.json"],
    needed_by: "the test that drives askloop's websocket with the official graphql-ws client",
    with: &[GRAPHQL_PACKAGE],
};

const SWAGGER_PARSER: NpmTool = NpmTool {
    package: SWAGGER_PARSER_PACKAGE,
    file: &["@apidevtools", "swagger-parser", "package.json"],
    needed_by: "the test that validates openapi.json as OpenAPI 3.1",
    with: &[],
};

impl NpmTool {
    /// The npm prefix it is installed under: `name-version`, a scope's `@` and `/` dropped
    /// (`@modelcontextprotocol/sdk@1.32.2` → `modelcontextprotocol-sdk-1.32.2`).
    fn prefix(&self, target_dir: &Path) -> PathBuf {
        target_dir.join("tools").join(
            self.package
                .trim_start_matches('@')
                .replace(['@', '/'], "-"),
        )
    }

    /// Where the file is once installed.
    fn path(&self, target_dir: &Path) -> PathBuf {
        self.file.iter().fold(
            self.prefix(target_dir).join("node_modules"),
            |path, part| path.join(part),
        )
    }

    /// The file, installed from npm the first time it is needed.
    fn install(&self, target_dir: &Path) -> anyhow::Result<PathBuf> {
        let tools = self.prefix(target_dir);
        let file = self.path(target_dir);
        if file.is_file() {
            return Ok(file);
        }
        eprintln!(
            "xtask: installing {} from npm into {}",
            self.package,
            tools.display()
        );
        std::fs::create_dir_all(&tools)
            .with_context(|| format!("cannot create {}", tools.display()))?;
        let mut install = Command::new("npm");
        install
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&tools)
            .arg(self.package)
            .args(self.with);
        status(install, &format!("`npm install {}`", self.package))
            .with_context(|| format!("{} needs npm (Debian package `npm`)", self.needed_by))?;
        Ok(file)
    }
}

/// Shrink `files` in place, each as `wasm-opt -Oz` would, in one node process
/// (`xtask/shrink-wasm.mjs`, beside this crate). A file it cannot shrink stops it with an error
/// naming that file; binaryen's warnings (it does not know every custom name section rustc
/// writes) are not repeated when all went well.
fn optimise_for_size(files: &[PathBuf], target_dir: &Path) -> anyhow::Result<()> {
    shrink_with("node", files, target_dir)
}

/// [`optimise_for_size`] with the node binary named (the tests name one that is not there).
fn shrink_with(node: &str, files: &[PathBuf], target_dir: &Path) -> anyhow::Result<()> {
    let binaryen = BINARYEN_JS.install(target_dir)?;
    let output = Command::new(node)
        .arg(workspace_root().join("xtask").join("shrink-wasm.mjs"))
        .arg(binaryen)
        .args(files)
        .output()
        .map_err(|err| {
            if err.kind() == std::io::ErrorKind::NotFound {
                anyhow::anyhow!(
                    "the dashboard's size optimiser runs on node, which is not installed \
                     (Debian package `nodejs`; npm brings it)"
                )
            } else {
                anyhow::Error::new(err).context("cannot start node for the size optimiser")
            }
        })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let why: Vec<&str> = stderr
            .lines()
            .filter(|line| line.starts_with("shrink-wasm:"))
            .collect();
        let why = if why.is_empty() {
            stderr.trim().to_owned()
        } else {
            why.join("; ")
        };
        bail!(
            "shrinking the dashboard's wasm failed ({}): {why}",
            output.status
        );
    }
    Ok(())
}

/// What identifies a compiled wasm: its size and modification time.
fn source_stamp(wasm: &Path) -> anyhow::Result<String> {
    let meta = std::fs::metadata(wasm)
        .with_context(|| format!("the compiled dashboard is missing at {}", wasm.display()))?;
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Ok(format!("{} {modified}", meta.len()))
}

/// Build the dashboard while `other` (a cargo build of the server side) runs beside it: askloop
/// reads the dashboard from `web/dist` when it serves, so neither build waits for the other, and
/// the second core, idle while the server's biggest crate is compiled alone, builds the wasm.
/// The wasm is built in a target folder of its own (`target/web`), so the two cargo processes
/// never wait for each other's lock.
fn build_web_beside(mut other: Command, what: &str) -> anyhow::Result<()> {
    let mut running = other
        .spawn()
        .with_context(|| format!("cannot start {what}"))?;
    let web = build_web();
    let other = running
        .wait()
        .with_context(|| format!("waiting for {what}"))?;
    web?;
    if !other.success() {
        bail!("{what} failed ({other})");
    }
    Ok(())
}

fn run(args: &[String]) -> anyhow::Result<()> {
    let mut server = cargo();
    server.args(["build", "--release", "--package", "askloop", "--bins"]);
    build_web_beside(server, "building askloop")?;
    let mut serve = cargo();
    serve.args(["run", "--release", "--package", "askloop", "--", "serve"]);
    serve.args(args.iter().filter(|a| a.as_str() != "--"));
    status(serve, "askloop")
}

/// What `cargo xtask test` was asked for.
#[derive(Debug, PartialEq, Eq)]
struct TestOptions {
    /// `--install-deps`: apt-get what is missing.
    install_deps: bool,
    /// Unless `--no-fuzz`: fuzz the API after the tests.
    fuzz: bool,
    /// The arguments that go on to `cargo test`.
    cargo_test: Vec<String>,
}

/// `--install-deps` and `--no-fuzz` before any `--`; everything else goes on to `cargo test`.
fn test_options(args: &[String]) -> TestOptions {
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

const INSTALL_DEPS: &str = "--install-deps";
const NO_FUZZ: &str = "--no-fuzz";

/// A Debian package the tests need, and why.
struct Package {
    name: &'static str,
    why: &'static str,
}

/// Which system packages a command needs.
#[derive(Clone, Copy)]
struct Needs {
    /// The test suite's: Chromium, npm and nginx.
    suite: bool,
    /// The API fuzzer's: Python with `venv`.
    fuzz: bool,
}

impl Needs {
    const FUZZ_ONLY: Needs = Needs {
        suite: false,
        fuzz: true,
    };

    fn tests(fuzz: bool) -> Needs {
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
        if Path::new("/usr/sbin/nginx").is_file() {
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
fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Stop early, naming what is missing, unless `install` says to apt-get it.
fn ensure_test_packages(install: bool, needs: Needs) -> anyhow::Result<()> {
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

fn build_binaries() -> anyhow::Result<()> {
    status(binaries(), "building the askloop binary and the examples")
}

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
/// browser, PostgreSQL — so one a core (the test harness's default) left this 2-core machine 30 %
/// busy, and the suite took 664 s; six at once kept it 96 % busy and took 291 s.
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
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use super::{
        BINARYEN_JS, Failures, MCP_SDK, MOST_TEST_THREADS, STANDARD_WEBHOOKS, SWAGGER_PARSER,
        TestOptions, count_before, is_cargo_run_variable, optimise_for_size, shrink_with,
        target_dir, test_options, test_threads, workspace_root,
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

    #[test]
    fn an_npm_tool_is_installed_in_a_folder_named_after_its_package() {
        let target = Path::new("/target");
        assert_eq!(
            STANDARD_WEBHOOKS.prefix(target),
            Path::new("/target/tools/standardwebhooks-1.1.1")
        );
        assert_eq!(
            MCP_SDK.prefix(target),
            Path::new("/target/tools/modelcontextprotocol-sdk-1.32.2")
        );
        assert_eq!(
            SWAGGER_PARSER.prefix(target),
            Path::new("/target/tools/apidevtools-swagger-parser-13.1.0")
        );
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

    /// A folder of its own under the target folder for one test, emptied first.
    fn scratch(name: &str) -> PathBuf {
        let dir = target_dir()
            .join("xtask-tests")
            .join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A lazily loaded page's chunk as `wasm-split` leaves it, before shrinking.
    fn fixture() -> PathBuf {
        workspace_root().join("xtask/fixtures/unshrunk-chunk.wasm")
    }

    /// A copy of `file` named `name` in `dir`.
    fn copy_of(file: &Path, dir: &Path, name: &str) -> PathBuf {
        let copy = dir.join(name);
        std::fs::copy(file, &copy).unwrap();
        copy
    }

    /// binaryen's package, installed once for all the tests that shrink (two npm installs into
    /// one folder at once would trip over each other).
    fn binaryen() -> PathBuf {
        static INSTALLED: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
        INSTALLED
            .get_or_init(|| BINARYEN_JS.install(&target_dir()).unwrap())
            .clone()
    }

    /// The fixture is a lazily loaded page's chunk as `wasm-split` leaves it, before shrinking;
    /// it is one where leaving out wasm-opt's Stack IR passes shows (a dozen bytes more).
    #[test]
    fn shrinking_gives_what_wasm_opt_gives_byte_for_byte() {
        let wasm_opt = binaryen().parent().unwrap().join("bin").join("wasm-opt");
        let fixture = fixture();
        let original = std::fs::read(&fixture).unwrap();
        let dir = scratch("shrink");
        let ours = copy_of(&fixture, &dir, "ours.wasm");
        let theirs = dir.join("theirs.wasm");
        let ran = Command::new(&wasm_opt)
            .arg("-Oz")
            .arg(&fixture)
            .arg("-o")
            .arg(&theirs)
            .status()
            .unwrap();
        assert!(ran.success(), "wasm-opt failed: {ran}");

        optimise_for_size(std::slice::from_ref(&ours), &target_dir()).unwrap();

        let ours = std::fs::read(&ours).unwrap();
        let theirs = std::fs::read(&theirs).unwrap();
        assert!(
            ours.len() < original.len(),
            "shrunk to {} bytes from {}",
            ours.len(),
            original.len()
        );
        assert!(
            ours == theirs,
            "{} bytes where wasm-opt -Oz gives {}",
            ours.len(),
            theirs.len()
        );
        assert!(
            !dir.join("ours.wasm.shrinking").exists(),
            "nothing is left beside it"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_file_that_is_not_wasm_is_an_error_naming_it_and_is_left_as_it_was() {
        binaryen();
        let dir = scratch("shrink-bad");
        let fixture = fixture();
        let good = copy_of(&fixture, &dir, "good.wasm");
        let bad = dir.join("bad.wasm");
        std::fs::write(&bad, b"\0asm but not really a module").unwrap();

        let err = optimise_for_size(&[good.clone(), bad.clone()], &target_dir()).unwrap_err();

        let err = format!("{err:#}");
        assert!(
            err.contains("shrinking the dashboard's wasm failed") && err.contains("bad.wasm"),
            "the error names the step and the file: {err}"
        );
        assert!(!err.contains("good.wasm"), "and only that file: {err}");
        assert_eq!(
            std::fs::read(&bad).unwrap(),
            b"\0asm but not really a module",
            "the file is left as it was"
        );
        assert!(!dir.join("bad.wasm.shrinking").exists());
        // The file before it was shrunk: binaryen itself ran, and stopped at the bad one.
        let shrunk = std::fs::metadata(&good).unwrap().len();
        let before = std::fs::metadata(&fixture).unwrap().len();
        assert!(shrunk < before, "{shrunk} bytes from {before}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn without_node_the_error_says_what_to_install_and_nothing_changes() {
        binaryen();
        let dir = scratch("shrink-no-node");
        let fixture = fixture();
        let file = copy_of(&fixture, &dir, "chunk.wasm");

        let err = shrink_with(
            "askloop-no-such-node",
            std::slice::from_ref(&file),
            &target_dir(),
        )
        .unwrap_err();

        let err = format!("{err:#}");
        assert!(err.contains("nodejs"), "names the package: {err}");
        assert_eq!(
            std::fs::read(&file).unwrap(),
            std::fs::read(&fixture).unwrap()
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
