//! MCP over HTTP as a client speaks it, written out by hand so the tests see the wire: JSON-RPC
//! 2.0 POSTed to `/mcp` with a bearer token (`initialize`, then `notifications/initialized`,
//! then `tools/list` or `tools/call`), answered as JSON or as a server-sent event stream. Also
//! where agents and their tokens are made for a test, and where the official TypeScript SDK the
//! interoperability test runs is installed.

use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};

use askloop::domain::agents::AgentSlug;
use askloop::service::agents::agent_tokens;
use askloop::service::agents::registry::{self, Endpoint, NewAgent};
use askloop::service::audit::Actor;
use entity::agents::WebhookScheme;
use serde_json::{Value, json};

use crate::TestApp;

/// The protocol version the tests ask for.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// The release of `@modelcontextprotocol/sdk` `cargo xtask test` installs (its
/// `MCP_SDK_PACKAGE` names the same one).
pub const SDK_VERSION: &str = "1.32.2";

/// Register `slug` for `niches` (no endpoint) and issue it an agent token; the token.
pub async fn agent_with_token(app: &TestApp, slug: &str, niches: &[&str]) -> String {
    registry::create(
        &app.db,
        app.config().data_key.as_ref(),
        NewAgent {
            slug: AgentSlug::parse(slug).expect("a slug"),
            name: format!("Agent {slug}"),
            niches: niches.iter().map(|n| (*n).to_owned()).collect(),
            endpoint: Endpoint {
                url: None,
                scheme: WebhookScheme::Chovy,
                events: Vec::new(),
            },
        },
        &Actor::Cli,
        chrono::Utc::now(),
    )
    .await
    .expect("the agent is registered");
    token_for(app, slug).await
}

/// A new agent token for the registered agent `slug`.
pub async fn token_for(app: &TestApp, slug: &str) -> String {
    agent_tokens::issue(&app.db, slug, &Actor::Cli, chrono::Utc::now())
        .await
        .expect("a token is issued")
        .token
}

/// A client of askloop's MCP server holding one bearer token (or none).
pub struct McpClient {
    http: reqwest::Client,
    url: String,
    token: Option<String>,
    next_id: AtomicI64,
}

impl McpClient {
    /// A client of `app`'s `/mcp` sending `token` as its bearer.
    pub fn new(app: &TestApp, token: Option<&str>) -> Self {
        Self {
            http: reqwest::Client::new(),
            url: app.url("/mcp"),
            token: token.map(str::to_owned),
            next_id: AtomicI64::new(1),
        }
    }

    /// POST one JSON-RPC message as the streamable HTTP transport does.
    pub async fn post(&self, message: &Value) -> reqwest::Response {
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(message.to_string());
        if message["method"] != "initialize" {
            request = request.header("mcp-protocol-version", PROTOCOL_VERSION);
        }
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        request.send().await.expect("the request is sent")
    }

    /// Send the request `method` with `params` and return the JSON-RPC response to it (with its
    /// `result` or its `error`); panics unless the HTTP status is 200.
    pub async fn request(&self, method: &str, params: Value) -> Value {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let response = self
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let status = response.status();
        let is_stream = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let text = response.text().await.expect("a body");
        assert_eq!(status, 200, "{method}: {text}");
        let messages: Vec<Value> = if is_stream {
            text.lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .filter_map(|data| serde_json::from_str(data.trim()).ok())
                .collect()
        } else {
            vec![serde_json::from_str(&text).expect("a JSON-RPC message")]
        };
        messages
            .into_iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("{method}: no response with id {id} in {text}"))
    }

    /// The handshake: `initialize`, then `notifications/initialized`; the initialize result.
    pub async fn initialize(&self) -> Value {
        let response = self
            .request(
                "initialize",
                json!({
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "askloop-tests", "version": "0"},
                }),
            )
            .await;
        let initialized = self
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(initialized.status(), 202, "notifications/initialized");
        response["result"].clone()
    }

    /// Call the tool `name`: the JSON-RPC response's `result` (`{content, structuredContent,
    /// isError?}`); panics on a JSON-RPC error.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Value {
        let response = self
            .request("tools/call", json!({"name": name, "arguments": arguments}))
            .await;
        assert!(response["error"].is_null(), "{name}: {response}");
        response["result"].clone()
    }

    /// Call the tool `name`, which must succeed; its structured result.
    pub async fn ok(&self, name: &str, arguments: Value) -> Value {
        let result = self.call_tool(name, arguments).await;
        assert_ne!(result["isError"], true, "{name}: {result}");
        result["structuredContent"].clone()
    }

    /// Call the tool `name`, which must fail as a tool error; the error body `{error, code,
    /// reason?}`.
    pub async fn refused(&self, name: &str, arguments: Value) -> Value {
        let result = self.call_tool(name, arguments).await;
        assert_eq!(result["isError"], true, "{name}: {result}");
        result["structuredContent"].clone()
    }
}

/// The folder holding `node_modules/@modelcontextprotocol/sdk`: `ASKLOOP_MCP_SDK`, else under
/// the target folder's `tools`, next to the test binary.
pub fn sdk_prefix() -> PathBuf {
    crate::app::npm_tool(
        "ASKLOOP_MCP_SDK",
        &format!("modelcontextprotocol-sdk-{SDK_VERSION}"),
    )
}

/// The node script that drives askloop with the official TypeScript SDK.
pub fn sdk_check_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("mcp-client")
        .join("check.mjs")
}
