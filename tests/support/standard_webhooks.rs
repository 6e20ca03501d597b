//! Verifying a delivery with the Standard Webhooks scheme's own library: the npm package
//! `standardwebhooks` (pinned in `xtask`, which installs it under `target/tools` before the tests
//! run), run by node on a delivery exactly as askloop sent it.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::receiver::Received;

/// The release `cargo xtask test` installs (its `STANDARD_WEBHOOKS_PACKAGE` names the same one).
const VERSION: &str = "1.1.1";

/// The folder holding `node_modules/standardwebhooks`: `ASKLOOP_STANDARDWEBHOOKS`, else under the
/// target folder's `tools`, next to the test binary.
pub fn library_prefix() -> PathBuf {
    crate::app::npm_tool(
        "ASKLOOP_STANDARDWEBHOOKS",
        &format!("standardwebhooks-{VERSION}"),
    )
}

/// The library's verdict on a received delivery, checked with `secret` (`whsec_…`): `Ok` with
/// the envelope id it parsed, or `Err` with its message. The body goes to node byte for byte on
/// stdin; the headers and secret through the environment.
pub fn verify_with_library(
    secret: &str,
    received: &Received,
    body: &str,
) -> Result<String, String> {
    let prefix = library_prefix();
    assert!(
        prefix
            .join("node_modules")
            .join("standardwebhooks")
            .is_dir(),
        "standardwebhooks is not installed under {}: run the tests with `cargo xtask test`, \
         which installs it, or set ASKLOOP_STANDARDWEBHOOKS to a folder holding its node_modules",
        prefix.display()
    );
    let script = r#"
const { Webhook } = require("standardwebhooks");
const chunks = [];
process.stdin.on("data", (c) => chunks.push(c));
process.stdin.on("end", () => {
  const body = Buffer.concat(chunks).toString("utf8");
  try {
    const parsed = new Webhook(process.env.WH_SECRET).verify(body, {
      "webhook-id": process.env.WH_ID,
      "webhook-timestamp": process.env.WH_TIMESTAMP,
      "webhook-signature": process.env.WH_SIGNATURE,
    });
    process.stdout.write(String(parsed.id));
  } catch (err) {
    process.stdout.write(String(err && err.message));
    process.exit(1);
  }
});
"#;
    let header = |name: &str| received.header(name).unwrap_or_default().to_owned();
    let mut child = Command::new("node")
        .arg("-e")
        .arg(script)
        .env("NODE_PATH", prefix.join("node_modules"))
        .env("WH_SECRET", secret)
        .env("WH_ID", header("webhook-id"))
        .env("WH_TIMESTAMP", header("webhook-timestamp"))
        .env("WH_SIGNATURE", header("webhook-signature"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node runs (it comes with npm)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(body.as_bytes())
        .expect("the body is written");
    let output = child.wait_with_output().expect("node finishes");
    let said = String::from_utf8_lossy(&output.stdout).into_owned();
    match output.status.code() {
        Some(0) => Ok(said),
        Some(1) => Err(said),
        other => panic!(
            "node failed to run the check ({other:?}): {}",
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}
