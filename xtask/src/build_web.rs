//! `cargo xtask build-web`: the dashboard, compiled for `wasm32-unknown-unknown` in a target
//! folder of its own (`target/web`) and bundled into `web/dist`.
//!
//! The wasm is split into the main module and a chunk for each lazily loaded page, bound with the
//! `wasm-bindgen-cli-support` library pinned to the same version as the `wasm-bindgen` crate (so
//! the two can never drift apart), and shrunk as `wasm-opt -Oz` would, byte for byte, by
//! `xtask/shrink-wasm.mjs` over binaryen's JavaScript API (`tools.rs`), every file in one node
//! process. `cargo xtask run` and `cargo xtask test` build it beside the server's build.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::tools::BINARYEN_JS;
use crate::{cargo, status, target_dir, workspace_root};

const WASM_TARGET: &str = "wasm32-unknown-unknown";

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
pub(crate) fn build() -> anyhow::Result<PathBuf> {
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
pub(crate) fn beside(mut other: Command, what: &str) -> anyhow::Result<()> {
    let mut running = other
        .spawn()
        .with_context(|| format!("cannot start {what}"))?;
    let web = build();
    let other = running
        .wait()
        .with_context(|| format!("waiting for {what}"))?;
    web?;
    if !other.success() {
        bail!("{what} failed ({other})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use super::{optimise_for_size, shrink_with};
    use crate::tools::BINARYEN_JS;
    use crate::{target_dir, workspace_root};

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
