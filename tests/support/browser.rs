//! A headless Chromium driven over the DevTools protocol (a websocket), with no driver binary:
//! navigate, evaluate JavaScript, wait for the page, set cookies and take screenshots.

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

    /// Wait until `expression` is truthy in the page (up to 15 s); panics with `what` otherwise.
    /// A check that lands while the page is navigating (the app moves between pages with full
    /// loads) counts as "not yet".
    pub async fn wait_for(&mut self, expression: &str, what: &str) {
        for _ in 0..150 {
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
        use base64_decode::decode;
        let shot = self
            .call(
                "Page.captureScreenshot",
                json!({"format": "png", "captureBeyondViewport": true}),
            )
            .await;
        let bytes = decode(shot["data"].as_str().expect("image data"));
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).expect("the screenshot folder");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, bytes).expect("the screenshot is written");
        path
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
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
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

/// Standard base64, decoded without another dependency.
mod base64_decode {
    /// Decode standard base64 (with padding); invalid characters are skipped.
    pub fn decode(text: &str) -> Vec<u8> {
        let value = |c: u8| -> Option<u32> {
            match c {
                b'A'..=b'Z' => Some(u32::from(c - b'A')),
                b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
                b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
                b'+' => Some(62),
                b'/' => Some(63),
                _ => None,
            }
        };
        let digits: Vec<u32> = text.bytes().filter_map(value).collect();
        let mut out = Vec::with_capacity(digits.len() * 3 / 4);
        for chunk in digits.chunks(4) {
            let mut acc = 0u32;
            for (i, d) in chunk.iter().enumerate() {
                acc |= d << (18 - 6 * i);
            }
            let bytes = acc.to_be_bytes();
            out.extend_from_slice(&bytes[1..chunk.len()]);
        }
        out
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn base64_round_trips_known_values() {
            assert_eq!(super::decode("aGVsbG8="), b"hello");
            assert_eq!(super::decode("aGk="), b"hi");
            assert_eq!(super::decode("YWJj"), b"abc");
        }
    }
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
