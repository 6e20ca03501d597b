//! A headless Chromium driven over the DevTools protocol (a websocket), with no driver binary:
//! navigate, evaluate JavaScript, wait for the page, set cookies and take screenshots.
//!
//! Tests find things the way a person does: a control by its label, a button or link by its
//! name, text by what it says ([`labelled`], [`button`], [`link`]); these build JavaScript
//! expressions for [`Browser::click`], [`Browser::fill`] and [`Browser::text`]. Page objects on
//! top of them live with the dashboard's tests.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// A running headless Chromium with one page open.
pub struct Browser {
    child: Child,
    profile: PathBuf,
    page: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
}

/// Where browser tests leave their screenshots (named in the README).
pub fn screenshot_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("artifacts")
        .join("screenshots")
}

impl Browser {
    /// Start Chromium (`CHROMIUM`, else `chromium`) headless with a fresh profile.
    pub async fn start() -> Self {
        let profile =
            std::env::temp_dir().join(format!("askloop-chromium-{}", uuid::Uuid::new_v4()));
        let port = free_port();
        let child = Command::new(std::env::var("CHROMIUM").unwrap_or_else(|_| "chromium".into()))
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--remote-allow-origins=*",
            ])
            .arg(format!("--remote-debugging-port={port}"))
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromium starts (CI installs it; locally: apt-get install chromium)");
        let page_url = page_websocket(port).await;
        let (page, _) = tokio_tungstenite::connect_async(page_url)
            .await
            .expect("the DevTools websocket opens");
        let mut browser = Self {
            child,
            profile,
            page,
            next_id: 0,
        };
        browser.call("Page.enable", json!({})).await;
        browser.call("Runtime.enable", json!({})).await;
        browser
    }

    /// Send a DevTools command and return its result.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        match self.try_call(method, params).await {
            Ok(result) => result,
            Err(error) => panic!("{method} failed: {error}"),
        }
    }

    /// Send a DevTools command: its result, or the browser's error.
    pub async fn try_call(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.page
            .send(Message::Text(
                json!({"id": id, "method": method, "params": params})
                    .to_string()
                    .into(),
            ))
            .await
            .expect("sent to the browser");
        loop {
            let message = tokio::time::timeout(Duration::from_secs(20), self.page.next())
                .await
                .expect("the browser answers")
                .expect("the browser is still there")
                .expect("a websocket message");
            let Message::Text(text) = message else {
                continue;
            };
            let value: Value = serde_json::from_str(&text).expect("JSON");
            if value["id"] == id {
                if value["error"].is_null() {
                    return Ok(value["result"].clone());
                }
                return Err(value["error"].clone());
            }
        }
    }

    /// Set the viewport size.
    pub async fn viewport(&mut self, width: u32, height: u32, mobile: bool) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}),
        )
        .await;
    }

    /// Go to `url`.
    pub async fn goto(&mut self, url: &str) {
        self.call("Page.navigate", json!({ "url": url })).await;
    }

    /// Evaluate `expression` in the page and return its value.
    pub async fn eval(&mut self, expression: &str) -> Value {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
            )
            .await;
        result["result"]["value"].clone()
    }

    /// Run `source` in every document this page loads from now on, before the page's own
    /// scripts (e.g. to watch what the app constructs).
    pub async fn add_init_script(&mut self, source: &str) {
        self.call(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": source }),
        )
        .await;
    }

    /// Reload the current page (a new document, as the browser's reload button makes).
    pub async fn reload(&mut self) {
        self.call("Page.reload", json!({})).await;
    }

    /// Click the element `locator` finds (waiting for it first).
    pub async fn click(&mut self, locator: &str) {
        // As a person would: only once the control is there and enabled (a busy page disables
        // its buttons, and a click on a disabled one does nothing).
        let ready = format!("(() => {{ const el = {locator}; return !!el && !el.disabled; }})()");
        self.wait_for(&ready, locator).await;
        self.eval(&format!("({locator}).click()")).await;
    }

    /// Put `text` into the field `locator` finds, the way typing does, so the app's input
    /// handlers see it (waiting for the field first).
    pub async fn fill(&mut self, locator: &str, text: &str) {
        self.wait_for(locator, locator).await;
        let text = serde_json::to_string(text).unwrap_or_default();
        self.eval(&format!(
            "(() => {{ const el = ({locator}); el.value = {text}; \
             el.dispatchEvent(new Event('input', {{ bubbles: true }})); return true; }})()"
        ))
        .await;
    }

    /// The visible text of what `locator` finds; empty when nothing is found.
    pub async fn text(&mut self, locator: &str) -> String {
        self.eval(&format!(
            "(() => {{ const el = ({locator}); return el ? el.innerText : ''; }})()"
        ))
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
    }

    /// Wait until `expression` is truthy in the page (up to 15 s); panics with `what` otherwise.
    /// A check that lands while the page is navigating (the app moves between pages with full
    /// loads) counts as "not yet".
    pub async fn wait_for(&mut self, expression: &str, what: &str) {
        // A deadline, not a count of tries: on a loaded two-core machine one evaluation can
        // take seconds, and a page that is merely slow is not a failure.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while tokio::time::Instant::now() < deadline {
            let check = self
                .try_call(
                    "Runtime.evaluate",
                    json!({"expression": format!("!!({expression})"), "returnByValue": true}),
                )
                .await;
            match check {
                Ok(result) if result["result"]["value"] == Value::Bool(true) => return,
                Ok(_) => {}
                Err(error) if is_navigation(&error) => {}
                Err(error) => panic!("checking for {what} failed: {error}"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let body = self
            .eval("document.body ? document.body.outerHTML : ''")
            .await;
        panic!("timed out waiting for {what}; the page is:\n{body}");
    }

    /// Save a PNG screenshot as `name`.png in [`screenshot_dir`].
    pub async fn screenshot(&mut self, name: &str) -> PathBuf {
        self.screenshot_into(&screenshot_dir(), name, true).await
    }

    /// Save a PNG screenshot as `name`.png in `dir`: the whole page when `whole_page`, else
    /// what the viewport shows.
    pub async fn screenshot_into(
        &mut self,
        dir: &std::path::Path,
        name: &str,
        whole_page: bool,
    ) -> PathBuf {
        use base64::Engine as _;
        let shot = self
            .call(
                "Page.captureScreenshot",
                json!({"format": "png", "captureBeyondViewport": whole_page}),
            )
            .await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("image data"))
            .expect("the screenshot is base64");
        std::fs::create_dir_all(dir).expect("the screenshot folder");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, bytes).expect("the screenshot is written");
        path
    }

    /// Press Tab once, as a keyboard does (the browser moves focus itself).
    pub async fn press_tab(&mut self) {
        for kind in ["rawKeyDown", "keyUp"] {
            self.call(
                "Input.dispatchKeyEvent",
                json!({"type": kind, "key": "Tab", "code": "Tab", "windowsVirtualKeyCode": 9}),
            )
            .await;
        }
    }
}

impl Browser {
    /// Press one key (a printable character, or `Enter`/`Escape`), as a keyboard does: the page
    /// hears keydown, a character key also types, then keyup.
    pub async fn press_key(&mut self, key: &str) {
        let (code, vk, text) = match key {
            "Enter" => ("Enter".to_owned(), 13, Some("\r".to_owned())),
            "Escape" => ("Escape".to_owned(), 27, None),
            other => {
                let c = other.chars().next().unwrap_or(' ');
                let code = if c.is_ascii_alphabetic() {
                    format!("Key{}", c.to_ascii_uppercase())
                } else {
                    "Slash".to_owned()
                };
                (
                    code,
                    u32::from(c.to_ascii_uppercase()),
                    Some(other.to_owned()),
                )
            }
        };
        let mut down =
            json!({"type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk});
        if let Some(text) = text {
            down["text"] = json!(text);
        }
        self.call("Input.dispatchKeyEvent", down).await;
        self.call(
            "Input.dispatchKeyEvent",
            json!({"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk}),
        )
        .await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

fn free_port() -> u16 {
    crate::receiver::reserve_port().port()
}

/// The websocket URL of the first page target, once Chromium is listening.
async fn page_websocket(port: u16) -> String {
    for _ in 0..100 {
        if let Ok(response) = reqwest::get(format!("http://127.0.0.1:{port}/json/list")).await
            && let Ok(targets) = response.json::<Vec<Value>>().await
            && let Some(url) = targets
                .iter()
                .find(|t| t["type"] == "page")
                .and_then(|t| t["webSocketDebuggerUrl"].as_str())
        {
            return url.to_owned();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("chromium did not open its DevTools port");
}

/// Whether a DevTools error only means the page was navigating when asked.
fn is_navigation(error: &Value) -> bool {
    let message = error["message"].as_str().unwrap_or_default();
    [
        "navigated or closed",
        "context was destroyed",
        "Cannot find context",
    ]
    .iter()
    .any(|m| message.contains(m))
}

/// JavaScript for the whitespace-normalised text of element `el`.
fn normalised(el: &str) -> String {
    format!("{el}.textContent.replace(/\\s+/g, ' ').trim()")
}

/// A JavaScript expression for the form control whose `<label>` says `label` (the first one in
/// `scope`, a JavaScript expression for an element, or `document`).
pub fn labelled_in(scope: &str, label: &str) -> String {
    let label = serde_json::to_string(label).unwrap_or_default();
    format!(
        "([...({scope}).querySelectorAll('label')].find(l => {} === {label}) || {{}}).control",
        normalised("l")
    )
}

/// The form control labelled `label` on the page.
pub fn labelled(label: &str) -> String {
    labelled_in("document", label)
}

/// A JavaScript expression for the button named `name` (its text, hidden words included) in
/// `scope`.
pub fn button_in(scope: &str, name: &str) -> String {
    let name = serde_json::to_string(name).unwrap_or_default();
    format!(
        "[...({scope}).querySelectorAll('button')].find(b => {} === {name})",
        normalised("b")
    )
}

/// The button named `name` on the page.
pub fn button(name: &str) -> String {
    button_in("document", name)
}

/// A JavaScript expression for the link named `name` in `scope`.
pub fn link_in(scope: &str, name: &str) -> String {
    let name = serde_json::to_string(name).unwrap_or_default();
    format!(
        "[...({scope}).querySelectorAll('a')].find(a => {} === {name})",
        normalised("a")
    )
}

/// The link named `name` on the page.
pub fn link(name: &str) -> String {
    link_in("document", name)
}

/// A JavaScript expression for the first element with ARIA role `role` (explicit, or a heading
/// for `heading`) in `scope` whose text contains `text`.
pub fn role_in(scope: &str, role: &str, text: &str) -> String {
    let selector = match role {
        "heading" => "h1, h2, h3, [role=heading]".to_owned(),
        other => format!("[role={other}]"),
    };
    let selector = serde_json::to_string(&selector).unwrap_or_default();
    let text = serde_json::to_string(text).unwrap_or_default();
    format!(
        "[...({scope}).querySelectorAll({selector})].find(e => {}.includes({text}))",
        normalised("e")
    )
}

/// The first element with role `role` on the page whose text contains `text`.
pub fn role(role: &str, text: &str) -> String {
    role_in("document", role, text)
}
