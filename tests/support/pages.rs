//! What every dashboard page object does the same way: wait for the status notice, read the
//! page's error, read a secret shown once, choose in a select, and ask whether a secret shows
//! anywhere. The page objects in the suite (`AgentsPage`, `SettingsPage`, …) hold only what is
//! their page's own and call these.

use serde_json::Value;

use crate::browser::{Browser, labelled, role};

impl Browser {
    /// Wait for the page's status message to say `words`.
    pub async fn wait_for_notice(&mut self, words: &str) {
        self.wait_for(&role("status", words), &format!("the notice \"{words}\""))
            .await;
    }

    /// The page's refusal or error (the alert in `main`), once it shows.
    pub async fn page_error(&mut self) -> String {
        let alert = "document.querySelector('main [role=alert]')";
        self.wait_for(alert, "the page's error").await;
        self.text(alert).await
    }

    /// The secret shown once in the field labelled `label`, once it is filled.
    pub async fn shown_once(&mut self, label: &str) -> String {
        let field = labelled(label);
        self.wait_for(
            &format!("{field}.value"),
            &format!("the {label} shown once"),
        )
        .await;
        self.eval(&format!("{field}.value"))
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Whether `secret` is anywhere in the page: its markup, its text or a field's value.
    pub async fn shows(&mut self, secret: &str) -> bool {
        let secret = serde_json::to_string(secret).unwrap_or_default();
        self.eval(&format!(
            "document.documentElement.outerHTML.includes({secret}) \
             || document.body.innerText.includes({secret}) \
             || [...document.querySelectorAll('input, textarea')].some(e => e.value.includes({secret}))"
        ))
        .await
        .as_bool()
        .expect("the page answers whether it shows the secret")
    }

    /// Choose the option whose value is `value` in the select `locator` finds, as picking it does.
    pub async fn choose(&mut self, locator: &str, value: &str) {
        self.wait_for(locator, locator).await;
        let value = serde_json::to_string(value).unwrap_or_default();
        self.eval(&format!(
            "(() => {{ const s = ({locator}); s.value = {value}; \
             s.dispatchEvent(new Event('change', {{ bubbles: true }})); return true; }})()"
        ))
        .await;
    }

    /// The value of the control `locator`.
    pub async fn value(&mut self, locator: &str) -> Value {
        self.eval(&format!("({locator}).value")).await
    }

    /// Whether the checkbox or radio `locator` is ticked.
    pub async fn ticked(&mut self, locator: &str) -> bool {
        self.eval(&format!("({locator}).checked"))
            .await
            .as_bool()
            .unwrap_or(false)
    }
}

/// The first button in `scope` whose name starts with `words`.
pub fn button_starting(scope: &str, words: &str) -> String {
    let words = serde_json::to_string(words).unwrap_or_default();
    format!(
        "[...({scope}).querySelectorAll('button')].find(b => b.textContent.replace(/\\s+/g, ' ').trim().startsWith({words}))"
    )
}
