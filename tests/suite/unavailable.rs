//! Each failure said in the terms its client acts on. A database out of reach is temporary:
//! 503 `UNAVAILABLE` with `Retry-After` on REST and MCP, `UNAVAILABLE` with `retryAfterSeconds`
//! (and the header) on GraphQL — never a 500 — and askloop serves again once the database is
//! back. An MCP body that says it is JSON and is not one JSON-RPC message gets the JSON-RPC
//! errors the streamable HTTP transport asks for (400, `-32700` or `-32600`), not a 415.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use askloop_tests::fixtures::{open_niche, question_body};
use askloop_tests::mcp::{McpClient, PROTOCOL_VERSION, agent_with_token};
use askloop_tests::people::operator;
use askloop_tests::wait;
use askloop_tests::{Backend, TestApp, on_both_backends};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// What askloop asks a client to wait while its database is out of reach.
const RETRY_AFTER: &str = "2";

/// The surfaces a client reaches askloop through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Surface {
    /// The signed intake.
    Intake,
    /// A member's REST read.
    MemberRest,
    /// GraphQL over HTTP.
    Graphql,
    /// An MCP tool call.
    Mcp,
}

const SURFACES: [Surface; 4] = [
    Surface::Intake,
    Surface::MemberRest,
    Surface::Graphql,
    Surface::Mcp,
];

/// How one answer read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Outcome {
    /// Served.
    Served,
    /// Refused as temporary, in that surface's terms.
    TryAgain,
}

/// One answer as a client saw it.
#[derive(Debug)]
struct Seen {
    surface: Surface,
    status: u16,
    retry_after: Option<String>,
    body: Value,
}

impl Seen {
    /// How it reads, or `None` for anything a client could not act on (a 500 above all).
    fn outcome(&self) -> Option<Outcome> {
        let temporary = |code: &Value, reason: &Value, wait: &Value| {
            code == "UNAVAILABLE"
                && reason == "TEMPORARILY_UNAVAILABLE"
                && wait.as_u64().map(|w| w.to_string()).as_deref() == Some(RETRY_AFTER)
                && self.retry_after.as_deref() == Some(RETRY_AFTER)
        };
        match self.surface {
            Surface::Graphql => {
                let error = &self.body["errors"][0];
                if self.status == 200 && error.is_null() && !self.body["data"].is_null() {
                    return Some(Outcome::Served);
                }
                let extensions = &error["extensions"];
                (self.status == 200
                    && temporary(
                        &extensions["code"],
                        &extensions["reason"],
                        &extensions["retryAfterSeconds"],
                    ))
                .then_some(Outcome::TryAgain)
            }
            Surface::Intake | Surface::MemberRest | Surface::Mcp => {
                // An MCP call refused before its tool ran has the REST body; one its tool
                // refused answers JSON-RPC, the refusal in the tool error's structured content.
                let refusal = match self.body.get("result") {
                    Some(result) if result["isError"] == true => &result["structuredContent"],
                    Some(_) => return (self.status == 200).then_some(Outcome::Served),
                    None if (200..300).contains(&self.status) => return Some(Outcome::Served),
                    None => &self.body,
                };
                (self.status == 503
                    && temporary(
                        &refusal["code"],
                        &refusal["reason"],
                        &refusal["retryAfterSeconds"],
                    ))
                .then_some(Outcome::TryAgain)
            }
        }
    }
}

/// Clients of every surface, and what they have seen.
struct Load {
    app: Arc<TestApp>,
    operator_token: String,
    mcp: Arc<McpClient>,
    seen: Arc<Mutex<Vec<Seen>>>,
    asked: AtomicUsize,
}

impl Load {
    async fn start(app: TestApp) -> Arc<Self> {
        open_niche(&app.db, "games").await;
        let ana = operator(&app.db, "games", "ana").await;
        let token = agent_with_token(&app, "agent-a", &["games"]).await;
        let mcp = McpClient::new(&app, Some(&token));
        mcp.initialize().await;
        Arc::new(Self {
            app: Arc::new(app),
            operator_token: ana.token,
            mcp: Arc::new(mcp),
            seen: Arc::default(),
            asked: AtomicUsize::new(0),
        })
    }

    /// One request on `surface`, recorded.
    async fn once(&self, surface: Surface) {
        let app = &self.app;
        let response = match surface {
            Surface::Intake => {
                let n = self.asked.fetch_add(1, Ordering::Relaxed);
                let body = question_body("games", &format!("load-{n}")).to_string();
                app.post_signed("/api/v1/internal/expert-questions", &body)
                    .await
            }
            Surface::MemberRest => app
                .client
                .get(app.url("/api/v1/niches/games/questions"))
                .bearer_auth(&self.operator_token)
                .send()
                .await
                .expect("sent"),
            Surface::Graphql => app
                .client
                .post(app.url("/graphql"))
                .bearer_auth(&self.operator_token)
                .json(&json!({"query": "{ viewer { user { handle } } niche(slug: \"games\") { questions(first: 5) { edges { node { id } } } } }"}))
                .send()
                .await
                .expect("sent"),
            Surface::Mcp => {
                self.mcp
                    .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "list_questions", "arguments": {"first": 5}}}))
                    .await
            }
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let text = response.text().await.unwrap_or_default();
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        self.seen.lock().expect("seen").push(Seen {
            surface,
            status,
            retry_after,
            body,
        });
    }

    /// How many answers of each surface read as `outcome`.
    fn count(&self, outcome: Outcome) -> HashMap<Surface, usize> {
        let mut counts = HashMap::new();
        for seen in self.seen.lock().expect("seen").iter() {
            if seen.outcome() == Some(outcome) {
                *counts.entry(seen.surface).or_insert(0) += 1;
            }
        }
        counts
    }

    /// Keep two clients of every surface busy until `stop` is set.
    fn run(self: &Arc<Self>, stop: &Arc<AtomicBool>) -> JoinSet<()> {
        let mut clients = JoinSet::new();
        for surface in SURFACES.into_iter().chain(SURFACES) {
            let (load, stop) = (self.clone(), stop.clone());
            clients.spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    load.once(surface).await;
                }
            });
        }
        clients
    }

    /// Wait until every surface has had at least `at_least` answers that read as `outcome`.
    async fn until_each(&self, outcome: Outcome, at_least: usize, patience: Duration) {
        wait::until_ok(patience, || async move {
            let counts = self.count(outcome);
            if SURFACES
                .iter()
                .all(|s| counts.get(s).copied().unwrap_or(0) >= at_least)
            {
                Ok(())
            } else {
                Err(format!(
                    "not every surface answered {outcome:?} {at_least} times: {counts:?}; {:?}",
                    self.unreadable()
                ))
            }
        })
        .await;
    }

    /// Every answer a client could not act on.
    fn unreadable(&self) -> Vec<String> {
        self.seen
            .lock()
            .expect("seen")
            .iter()
            .filter(|seen| seen.outcome().is_none())
            .map(|seen| format!("{seen:?}"))
            .collect()
    }
}

/// The database goes away under load by its pool being closed: every request from then on gets
/// no connection, as when the server is gone and the pool gives up on it. (The PostgreSQL test
/// below stops the server's connections for real.)
async fn with_the_pool_closed_under_load_every_surface_says_try_again_and_none_says_500(
    app: TestApp,
) {
    let load = Load::start(app).await;
    let stop = Arc::new(AtomicBool::new(false));
    let clients = load.run(&stop);
    load.until_each(Outcome::Served, 2, Duration::from_secs(60))
        .await;

    load.app.close_the_apps_database().await;
    load.until_each(Outcome::TryAgain, 3, Duration::from_secs(60))
        .await;
    stop.store(true, Ordering::Relaxed);
    clients.join_all().await;

    assert_eq!(
        load.unreadable(),
        Vec::<String>::new(),
        "answers that are neither served nor temporary"
    );
    // Readiness says the same.
    let ready = load
        .app
        .client
        .get(load.app.url("/readyz"))
        .send()
        .await
        .expect("sent");
    assert_eq!(ready.status(), 503);
}

/// A tool call whose database goes away while it waits: its answer is still the tool error the
/// agent reads (`UNAVAILABLE`), and the HTTP response says it is temporary (503, `Retry-After`)
/// so the client's transport tries again.
async fn an_mcp_call_whose_database_goes_away_while_it_waits_is_a_temporary_503(app: TestApp) {
    open_niche(&app.db, "games").await;
    let token = agent_with_token(&app, "agent-a", &["games"]).await;
    let client = Arc::new(McpClient::new(&app, Some(&token)));
    client.initialize().await;
    let asked = client
        .ok(
            "ask_expert",
            json!({"niche": "games", "title": "Which date?", "question": "Early access or 1.0?",
                   "externalId": "q-1"}),
        )
        .await;
    let id = asked["questionId"].as_i64().expect("an id");

    let listening = app.live.listeners();
    let waiting = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .post(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                    "params": {"name": "get_answer",
                               "arguments": {"questionId": id, "waitSeconds": 30}}}))
                .await
        })
    };
    // The call is past its token and waiting for the question to change.
    wait::until_some(
        "get_answer to start waiting",
        Duration::from_secs(30),
        || async { (app.live.listeners() > listening).then_some(()) },
    )
    .await;
    app.close_the_apps_database().await;
    // Stopping the hub ends the wait at once; the call then reads the question again.
    app.live.stop();
    let response = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("get_answer returned")
        .expect("the call ran");
    assert_eq!(response.status(), 503);
    assert_eq!(
        response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some(RETRY_AFTER)
    );
    let body: Value = response.json().await.expect("a JSON-RPC response");
    assert_eq!(body["id"], 7, "{body}");
    assert_eq!(body["result"]["isError"], true, "{body}");
    let refusal = &body["result"]["structuredContent"];
    assert_eq!(refusal["code"], "UNAVAILABLE", "{body}");
    assert_eq!(refusal["reason"], "TEMPORARILY_UNAVAILABLE", "{body}");
}

/// POST `body` to `/mcp` as `content_type`, with `token` (if any).
async fn post_raw(
    app: &TestApp,
    token: Option<&str>,
    content_type: &str,
    body: &str,
) -> reqwest::Response {
    let mut request = app
        .client
        .post(app.url("/mcp"))
        .header("content-type", content_type)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL_VERSION)
        .body(body.to_owned());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.expect("sent")
}

/// The JSON-RPC error a refusal carries, once its status is 400.
async fn jsonrpc_error(response: reqwest::Response) -> Value {
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.expect("a JSON-RPC error response");
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert!(body["id"].is_null(), "{body}");
    body["error"].clone()
}

async fn an_mcp_body_that_is_not_json_rpc_gets_a_json_rpc_error_not_a_415(app: TestApp) {
    open_niche(&app.db, "games").await;
    let token = agent_with_token(&app, "agent-a", &["games"]).await;

    for not_json in [
        "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ",
        "not json",
        "",
        "\u{0}",
    ] {
        let error =
            jsonrpc_error(post_raw(&app, Some(&token), "application/json", not_json).await).await;
        assert_eq!(error["code"], -32700, "{not_json:?}: {error}");
        assert!(
            error["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("Parse error")),
            "{error}"
        );
    }
    // JSON, but not one message: a batch, a message without a method, a bare value.
    for not_a_message in [
        r#"[{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]"#,
        r#"{"jsonrpc": "2.0", "id": 1}"#,
        "42",
    ] {
        let error = jsonrpc_error(
            post_raw(
                &app,
                Some(&token),
                "application/json; charset=utf-8",
                not_a_message,
            )
            .await,
        )
        .await;
        assert_eq!(error["code"], -32600, "{not_a_message}: {error}");
    }
    // The token is still checked first: no message is read for a stranger.
    let stranger = post_raw(&app, None, "application/json", "not json").await;
    assert_eq!(stranger.status(), 401);
    // Another content type is the SDK's to refuse, as before.
    let plain = post_raw(&app, Some(&token), "text/plain", "{}").await;
    assert_eq!(plain.status(), 415);
    // And a message still reaches its tool.
    let client = McpClient::new(&app, Some(&token));
    client.initialize().await;
    let listed = client.ok("list_questions", json!({})).await;
    assert!(listed["questions"].is_array(), "{listed}");
}

on_both_backends!(
    with_the_pool_closed_under_load_every_surface_says_try_again_and_none_says_500,
    an_mcp_call_whose_database_goes_away_while_it_waits_is_a_temporary_503,
    an_mcp_body_that_is_not_json_rpc_gets_a_json_rpc_error_not_a_415,
);

/// A TCP relay between askloop and PostgreSQL that the test can cut: stopped, it drops every
/// connection it relays and refuses new ones, as a server that went down does; started again
/// on the same port, it relays as before.
struct Relay {
    port: u16,
    upstream: String,
    running: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Relay {
    async fn start(upstream: String) -> Arc<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let port = listener.local_addr().expect("an address").port();
        let relay = Arc::new(Self {
            port,
            upstream,
            running: Mutex::new(None),
        });
        relay.serve(listener);
        relay
    }

    fn serve(&self, listener: TcpListener) {
        let upstream = self.upstream.clone();
        let task = tokio::spawn(async move {
            // The connections live in this set: aborting the task drops them all.
            let mut connections = JoinSet::new();
            while let Ok((mut client, _)) = listener.accept().await {
                let upstream = upstream.clone();
                connections.spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
            }
        });
        *self.running.lock().expect("the relay") = Some(task);
    }

    /// Cut every connection and refuse new ones.
    async fn stop(&self) {
        let task = self.running.lock().expect("the relay").take();
        if let Some(task) = task {
            task.abort();
            let _ = task.await;
        }
    }

    /// Relay again, on the same port.
    async fn resume(&self) {
        let listener = TcpListener::bind(("127.0.0.1", self.port))
            .await
            .expect("the same port again");
        self.serve(listener);
    }
}

/// `url` with its host and port replaced by the relay's.
fn through(url: &str, port: u16) -> (String, String) {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (credentials, rest) = rest.rsplit_once('@').map_or(("", rest), |(c, r)| (c, r));
    let (host_port, path) = rest.split_once('/').map_or((rest, ""), |(h, p)| (h, p));
    let host_port = if host_port.contains(':') {
        host_port.to_owned()
    } else {
        format!("{host_port}:5432")
    };
    let at = if credentials.is_empty() { "" } else { "@" };
    (
        format!("{scheme}://{credentials}{at}127.0.0.1:{port}/{path}"),
        host_port,
    )
}

/// PostgreSQL going away under load, for real: its connections are cut mid-use and new ones
/// refused (the test relays askloop's connections and stops the relay; the shared server itself
/// keeps running for the other tests). Every surface answers 503 / `UNAVAILABLE` with
/// `Retry-After`, nothing answers 500, and askloop serves again once PostgreSQL is back. (A
/// request that finds no connection waits for the pool's 10 s acquire timeout first.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgresql_stopped_under_load_answers_503_with_retry_after_and_recovers() {
    let Some(owner) = TestApp::spawn(Backend::Postgres).await else {
        eprintln!("skipped: TEST_DATABASE_URL is not set");
        return;
    };
    // That app owns the database; the one under test reaches the same database through the
    // relay.
    let (_, upstream) = through(&owner.database_url, 0);
    let relay = Relay::start(upstream).await;
    let (relayed, _) = through(&owner.database_url, relay.port);
    let under_test = owner
        .another_instance_with(|config| config.database_url = relayed)
        .await;

    let load = Load::start(under_test).await;
    let stop = Arc::new(AtomicBool::new(false));
    let clients = load.run(&stop);
    load.until_each(Outcome::Served, 2, Duration::from_secs(60))
        .await;

    relay.stop().await;
    load.until_each(Outcome::TryAgain, 1, Duration::from_secs(60))
        .await;
    let served_while_down = load.count(Outcome::Served);

    relay.resume().await;
    wait::until_ok(Duration::from_secs(60), || async {
        let served = load.count(Outcome::Served);
        if SURFACES.iter().all(|s| {
            served.get(s).copied().unwrap_or(0) > served_while_down.get(s).copied().unwrap_or(0)
        }) {
            Ok(())
        } else {
            Err(format!(
                "askloop did not serve again once PostgreSQL was back: {served:?}"
            ))
        }
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    clients.join_all().await;
    assert_eq!(
        load.unreadable(),
        Vec::<String>::new(),
        "answers that are neither served nor temporary"
    );
    // The app under test goes first: the owner drops the database.
    drop(load);
    drop(owner);
}
