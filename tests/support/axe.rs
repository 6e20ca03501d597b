//! Accessibility checks with axe-core (the npm package, pinned in `xtask`, which installs it
//! under `target/tools` before the tests run): its script is injected into the page a
//! [`Browser`] shows, and its findings at the serious and critical levels are what a test may not
//! leave behind.

use std::path::PathBuf;

use serde_json::Value;

use crate::browser::Browser;

/// The axe-core release `cargo xtask test` installs (its `AXE` names the same one).
const AXE_VERSION: &str = "4.14.1";

/// Where `axe.min.js` is: `ASKLOOP_AXE`, else under the target folder's `tools`, next to the
/// test binary.
pub fn axe_script() -> PathBuf {
    if let Some(path) = std::env::var_os("ASKLOOP_AXE") {
        return PathBuf::from(path);
    }
    crate::app::tools_folder(&format!("axe-core-{AXE_VERSION}"))
        .join("node_modules")
        .join("axe-core")
        .join("axe.min.js")
}

/// One rule axe found broken, with the elements that break it.
#[derive(Debug)]
pub struct Finding {
    /// The rule (`color-contrast`, `label`, …).
    pub rule: String,
    /// `serious` or `critical`.
    pub impact: String,
    /// What the rule asks for.
    pub help: String,
    /// CSS selectors of the elements that fail it.
    pub targets: Vec<String>,
}

/// axe-core's serious and critical findings on the page `browser` shows now.
pub async fn serious_findings(browser: &mut Browser) -> Vec<Finding> {
    let script = axe_script();
    let source = std::fs::read_to_string(&script).unwrap_or_else(|err| {
        panic!(
            "axe-core is not installed at {} ({err}): run the tests with `cargo xtask test`, \
             which installs it, or set ASKLOOP_AXE to an axe.min.js",
            script.display()
        )
    });
    if browser.eval("typeof window.axe").await != "object" {
        browser.eval(&source).await;
    }
    let found = browser
        .eval(
            "axe.run(document, { resultTypes: ['violations'] }).then(r => r.violations \
             .filter(v => v.impact === 'serious' || v.impact === 'critical') \
             .map(v => ({ rule: v.id, impact: v.impact, help: v.help, \
                          targets: v.nodes.map(n => n.target.join(' ')) })))",
        )
        .await;
    let Value::Array(found) = found else {
        panic!("axe-core did not run on the page: {found}");
    };
    found
        .into_iter()
        .map(|v| Finding {
            rule: v["rule"].as_str().unwrap_or_default().to_owned(),
            impact: v["impact"].as_str().unwrap_or_default().to_owned(),
            help: v["help"].as_str().unwrap_or_default().to_owned(),
            targets: v["targets"]
                .as_array()
                .map(|t| {
                    t.iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect()
}
