//! The suite's real mail server: aiosmtpd (pinned, from PyPI) in a Python venv under
//! `target/tools`, which the mail tests start on a free port with its Maildir handler and read
//! back from disk (`tests/support/smtp.rs` names the same folder).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::fuzz_api::{python, python_with_venv};
use crate::deps::Package;

/// The aiosmtpd release the tests use.
pub const VERSION: &str = "1.4.6";

/// `target/tools/aiosmtpd-<version>`.
pub fn venv(target_dir: &Path) -> PathBuf {
    target_dir.join("tools").join(format!("aiosmtpd-{VERSION}"))
}

fn installed(target_dir: &Path) -> bool {
    Command::new(venv(target_dir).join("bin").join("python"))
        .args([
            "-c",
            &format!("import aiosmtpd, sys; sys.exit(aiosmtpd.__version__ != '{VERSION}')"),
        ])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// What installing it needs from the system, unless it is installed already.
pub fn missing_packages(target_dir: &Path) -> Vec<Package> {
    if installed(target_dir) {
        return Vec::new();
    }
    python_with_venv(
        "the mail tests' SMTP server (aiosmtpd) is installed from PyPI into a Python venv",
    )
}

/// Install it the first time.
pub fn install(target_dir: &Path) -> anyhow::Result<()> {
    if installed(target_dir) {
        return Ok(());
    }
    let venv = venv(target_dir);
    eprintln!(
        "xtask: installing aiosmtpd {VERSION} from PyPI into {}",
        venv.display()
    );
    let mut create = Command::new(python());
    create.args(["-m", "venv", "--clear"]).arg(&venv);
    super::status(create, "creating the mail server's Python venv")?;
    let mut pip = Command::new(venv.join("bin").join("pip"));
    pip.args(["install", "--quiet", "--disable-pip-version-check"])
        .arg(format!("aiosmtpd=={VERSION}"));
    super::status(pip, "`pip install aiosmtpd`")
}
