//! The official A2A Python SDK (`a2a-sdk`, pinned, from PyPI) in a venv under `target/tools`: the
//! client `tests/a2a-client/check.py` drives askloop's A2A server with in the suite
//! (`tests/suite/a2a.rs` names the same folder and version).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::fuzz_api::{python, python_with_venv};
use crate::deps::Package;

/// The a2a-sdk release the tests use (it speaks A2A 1.0).
pub const VERSION: &str = "1.3.0";

/// `target/tools/a2a-sdk-<version>`.
pub fn venv(target_dir: &Path) -> PathBuf {
    target_dir.join("tools").join(format!("a2a-sdk-{VERSION}"))
}

fn installed(target_dir: &Path) -> bool {
    Command::new(venv(target_dir).join("bin").join("python"))
        .args([
            "-c",
            &format!(
                "import sys; from importlib.metadata import version; \
                 import a2a.client, httpx; sys.exit(version('a2a-sdk') != '{VERSION}')"
            ),
        ])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// What installing it needs from the system, unless it is installed already.
pub fn missing_packages(target_dir: &Path) -> Vec<Package> {
    if installed(target_dir) {
        return Vec::new();
    }
    python_with_venv("the A2A test's client (a2a-sdk) is installed from PyPI into a Python venv")
}

/// Install it the first time.
pub fn install(target_dir: &Path) -> anyhow::Result<()> {
    if installed(target_dir) {
        return Ok(());
    }
    let venv = venv(target_dir);
    eprintln!(
        "xtask: installing a2a-sdk {VERSION} from PyPI into {}",
        venv.display()
    );
    let mut create = Command::new(python());
    create.args(["-m", "venv", "--clear"]).arg(&venv);
    super::status(create, "creating the A2A client's Python venv")?;
    let mut pip = Command::new(venv.join("bin").join("pip"));
    pip.args(["install", "--quiet", "--disable-pip-version-check"])
        .arg(format!("a2a-sdk=={VERSION}"));
    super::status(pip, "`pip install a2a-sdk`")
}
