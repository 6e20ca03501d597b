//! askloop's websocket as the official graphql-transport-ws client speaks it: the npm package
//! `graphql-ws` (pinned in xtask, installed with the tests) over Node's own WebSocket, sending
//! keep-alive pings throughout. It is told of a refused subscription with the error's code,
//! hears the change a new question makes, and stops its subscription so the server serves
//! none; an unexpected close fails its script.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use askloop_tests::app::npm_tool;
use askloop_tests::fixtures::open_niche;
use askloop_tests::people::operator;
use askloop_tests::{Backend, TestApp};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The release `cargo xtask test` installs (its `GRAPHQL_WS_PACKAGE` names the same one).
const VERSION: &str = "6.4.2";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_official_graphql_ws_client_is_refused_with_a_code_hears_a_change_and_stops() {
    let prefix = npm_tool("ASKLOOP_GRAPHQL_WS", &format!("graphql-ws-{VERSION}"));
    assert!(
        prefix.join("node_modules").join("graphql-ws").is_dir(),
        "graphql-ws is not installed under {}: run the tests with `cargo xtask test`, which \
         installs it, or set ASKLOOP_GRAPHQL_WS to a folder holding its node_modules",
        prefix.display()
    );
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("graphql-ws-client")
        .join("check.mjs");
    let mut child = tokio::process::Command::new("node")
        .arg("--experimental-websocket")
        .arg(script)
        .env("GRAPHQL_WS_PREFIX", &prefix)
        .env(
            "ASKLOOP_WS_URL",
            format!(
                "{}/graphql/ws",
                app.url("").trim_end_matches('/').replacen("http", "ws", 1)
            ),
        )
        .env("ASKLOOP_TOKEN", &ana.token)
        .env("ASKLOOP_NICHE", "games")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs (it comes with npm)");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut printed: Vec<String> = Vec::new();
    let conversation = async {
        while let Some(line) = lines.next_line().await.expect("a line") {
            printed.push(line.clone());
            let (step, json) = line.split_once(' ').unwrap_or((line.as_str(), "{}"));
            let value: Value = serde_json::from_str(json).expect("each step prints JSON");
            match step {
                "error" => {
                    let code = &value[0]["extensions"]["code"];
                    assert_eq!(code, "GRAPHQL_VALIDATION_FAILED", "{value}");
                }
                // The client has sent its subscribe: once the server serves it, a question.
                "subscribed" => {
                    app.until_subscriptions_served(1).await;
                    app.ask("games", "q-1").await;
                }
                "next" => {
                    let question = &value["data"]["questionQueue"]["question"];
                    assert_eq!(question["title"], "Which date?", "{value}");
                    // The client completed its subscription: the server stops serving it.
                    app.until_exactly_subscriptions_served(0).await;
                    stdin.write_all(b"stop\n").await.expect("written");
                    stdin.flush().await.expect("flushed");
                }
                "done" => break,
                other => panic!("an unknown step {other}: {line}"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), conversation)
        .await
        .unwrap_or_else(|_| panic!("the script did not finish; it printed {printed:#?}"));
    let output = child.wait_with_output().await.expect("node finishes");
    assert_eq!(
        output.status.code(),
        Some(0),
        "the client's checks failed: {}\n{printed:#?}",
        String::from_utf8_lossy(&output.stderr)
    );
    let steps: Vec<&str> = printed
        .iter()
        .map(|l| l.split(' ').next().unwrap_or(""))
        .collect();
    assert_eq!(steps, ["error", "subscribed", "next", "done"]);
}
