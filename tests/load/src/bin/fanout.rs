//! The fan-out benchmark: S subscribers on one askloop instance, R signed questions; for every
//! subscriber and question, the time from the intake's 201 to that subscriber's receipt of the
//! ADDED event (p50/p99), and the server's memory per connection (what the second half of the
//! subscribers added to its resident memory, divided by their number).
//!
//! It starts the release `askloop` binary as its own process (so its memory can be read from
//! /proc), on a fresh SQLite file unless DATABASE_URL says otherwise:
//!
//! ```sh
//! cargo build --release -p askloop -p askloop-load
//! target/release/fanout --subscribers 1000 --questions 20
//! ```

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use askloop::domain::signing::{SIGNATURE_HEADER, sign};
use clap::Parser;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::Mutex;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

const SECRET: &str = "fanout-bench-secret";

/// What the dashboard's queue subscribes to (`web/graphql/queue.graphql`), with the agent's
/// external id added so a receipt can be matched to its question.
const CARD_SUBSCRIPTION: &str = "subscription QueueChanges($slug: String!) { questionQueue(nicheSlug: $slug) { change question { ...QuestionCard externalId } } } fragment QuestionCard on Question { id title question context urgency status createdAt expiresAt bountyMinor kind budgetLimitMinor deliverable researchRound escalationStep options { id label } }";

/// S websocket subscribers on one askloop, R signed questions: the time from each intake's 201 to
/// each subscriber's receipt (p50/p99), and the server's memory per subscriber.
#[derive(Debug, Parser)]
#[command(name = "fanout", version)]
struct FanoutArgs {
    /// How many websocket subscribers.
    #[arg(long, default_value_t = 1000)]
    subscribers: usize,
    /// How many signed questions are posted once they all subscribed.
    #[arg(long, default_value_t = 20)]
    questions: usize,
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn askloop(binary: &Path, database_url: &str, args: &[&str], extra: &[(&str, &str)]) -> Command {
    let mut command = Command::new(binary);
    command
        .args(args)
        .env("DATABASE_URL", database_url)
        .env("CHOVY_SIGNING_SECRET", SECRET)
        .env("RUST_LOG", "warn")
        // The allocator gives freed pages back at once rather than a moment later, so the
        // resident memory read between the two halves of the subscribers is what they hold,
        // not what start-up left behind.
        .env("MIMALLOC_PURGE_DELAY", "0");
    for (key, value) in extra {
        command.env(key, value);
    }
    command
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let FanoutArgs {
        subscribers,
        questions,
    } = FanoutArgs::parse();
    let binary = askloop_load::askloop_binary()?;
    let dir = std::env::temp_dir().join(format!("askloop-fanout-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let database_url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| format!("sqlite://{}?mode=rwc", dir.join("fanout.db").display()));

    // Set up a niche and an operator with the CLI.
    let setup: [&[&str]; 3] = [
        &["niche", "create", "--slug", "fanout", "--name", "Fan-out"],
        &[
            "user",
            "create",
            "--handle",
            "watcher",
            "--email",
            "watcher@askloop.invalid",
        ],
        &["member", "add", "--niche", "fanout", "--user", "watcher"],
    ];
    for args in setup {
        let status = askloop(
            &binary,
            &database_url,
            args,
            &[("ASKLOOP_PASSWORD", "fan-out bench password")],
        )
        .stdout(Stdio::null())
        .status()?;
        anyhow::ensure!(status.success(), "setup step {args:?} failed");
    }
    // Every subscriber connects from 127.0.0.1: one address, however many there are.
    let mut server = askloop(
        &binary,
        &database_url,
        &["serve"],
        &[
            ("ASKLOOP_BIND", "127.0.0.1:0"),
            ("ASKLOOP_MAX_CONNECTIONS_PER_ADDRESS", "1000000"),
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit())
    .spawn()?;
    let stdout = BufReader::new(server.stdout.take().expect("stdout"));
    let base = stdout
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("askloop is serving on ").map(str::to_owned))
        .ok_or_else(|| anyhow::anyhow!("askloop did not start"))?;
    let client = reqwest::Client::new();
    let login: Value = client
        .post(format!("{base}/graphql"))
        .json(&json!({"query": "mutation { login(handle: \"watcher\", password: \"fan-out bench password\") { token } }"}))
        .send()
        .await?
        .json()
        .await?;
    let token = login["data"]["login"]["token"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("login failed: {login}"))?
        .to_owned();

    let idle_rss = rss_kib(server.id());
    let receipts: Arc<Mutex<Vec<(usize, Instant)>>> = Arc::new(Mutex::new(Vec::new()));
    let ws_url = format!("{}/graphql/ws", base.replacen("http", "ws", 1));
    let started = Instant::now();
    let mut ready = Vec::with_capacity(subscribers);
    // The memory per subscriber is what the second half of them added: the first half's reading
    // is the baseline, taken once the server has settled with subscribers on it. A reading
    // before any subscriber holds start-up memory the allocator has yet to give back.
    let half = subscribers / 2;
    let mut half_rss = None;
    for i in 0..subscribers {
        if i == half && half > 0 {
            for ack in ready.drain(..) {
                let ack: tokio::sync::oneshot::Receiver<()> = ack;
                ack.await?;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            half_rss = Some(rss_kib(server.id()));
        }
        // Signed in on the upgrade, as a client that can set headers does: the bounds on
        // anonymous upgrades from one address never apply to it.
        let mut request = ws_url.clone().into_client_request()?;
        request
            .headers_mut()
            .insert("sec-websocket-protocol", "graphql-transport-ws".parse()?);
        request
            .headers_mut()
            .insert("authorization", format!("Bearer {token}").parse()?);
        let (mut ws, _) = tokio_tungstenite::connect_async(request).await?;
        ws.send(Message::Text(
            json!({"type": "connection_init", "payload": {}})
                .to_string()
                .into(),
        ))
        .await?;
        ws.send(Message::Text(
            json!({"id": "q", "type": "subscribe", "payload": {"query": CARD_SUBSCRIPTION, "variables": {"slug": "fanout"}}})
                .to_string()
                .into(),
        ))
        .await?;
        let receipts = receipts.clone();
        let (ack_tx, ack_rx) = tokio::sync::oneshot::channel::<()>();
        ready.push(ack_rx);
        tokio::spawn(async move {
            let mut ack = Some(ack_tx);
            while let Some(Ok(message)) = ws.next().await {
                let Message::Text(text) = message else {
                    continue;
                };
                let Ok(value) = serde_json::from_str::<Value>(&text) else {
                    continue;
                };
                match value["type"].as_str() {
                    Some("connection_ack") => {
                        if let Some(ack) = ack.take() {
                            let _ = ack.send(());
                        }
                    }
                    Some("next") => {
                        let at = Instant::now();
                        let external =
                            value["payload"]["data"]["questionQueue"]["question"]["externalId"]
                                .as_str()
                                .and_then(|id| id.strip_prefix("fan-"))
                                .and_then(|n| n.parse::<usize>().ok());
                        if let Some(n) = external {
                            receipts.lock().await.push((n, at));
                        }
                    }
                    _ => {}
                }
            }
        });
    }
    for ack in ready {
        ack.await?;
    }
    // Give the last subscriptions a moment to register with the hub.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let connected_rss = rss_kib(server.id());
    let (base_rss, added) = match half_rss {
        Some(rss) => (rss, subscribers - half),
        None => (idle_rss, subscribers),
    };
    let per_connection_kib = (connected_rss.saturating_sub(base_rss)) as f64 / added as f64;
    println!(
        "{subscribers} subscribers connected in {:.1} s; server RSS {} KiB idle, {} KiB with {half}, {} KiB with all ({:.1} KiB per connection)",
        started.elapsed().as_secs_f64(),
        idle_rss,
        base_rss,
        connected_rss,
        per_connection_kib
    );

    let mut sent_at = Vec::with_capacity(questions);
    for n in 0..questions {
        let body = json!({"payload": {"nicheSlug": "fanout", "externalId": format!("fan-{n}"), "title": format!("Fan-out {n}"), "question": "Which one?"}}).to_string();
        let header = sign(SECRET, body.as_bytes(), chrono::Utc::now().timestamp());
        let response = client
            .post(format!("{base}/api/v1/internal/expert-questions"))
            .header("content-type", "application/json")
            .header(SIGNATURE_HEADER, header)
            .body(body)
            .send()
            .await?;
        let at = Instant::now();
        anyhow::ensure!(
            response.status().as_u16() == 201,
            "intake answered {}",
            response.status()
        );
        sent_at.push(at);
        // Spread the questions out so each round is measured on its own.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let receipts = receipts.lock().await;
    let mut latencies: Vec<f64> = receipts
        .iter()
        .filter_map(|(n, at)| {
            sent_at
                .get(*n)
                .map(|sent| at.saturating_duration_since(*sent).as_secs_f64() * 1000.0)
        })
        .collect();
    latencies.sort_by(f64::total_cmp);
    let pick = |q: f64| {
        latencies
            .get(((latencies.len().max(1) - 1) as f64 * q).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    println!(
        "{} of {} deliveries received; 201 → receipt p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        latencies.len(),
        subscribers * questions,
        pick(0.5),
        pick(0.99),
        latencies.last().copied().unwrap_or(f64::NAN)
    );
    println!(
        "bench: {}",
        json!({"run": "fanout", "store": if database_url.starts_with("postgres") { "postgres" } else { "sqlite" },
            "subscribers": subscribers, "questions": questions,
            "received": latencies.len(), "expected": subscribers * questions,
            "p50Ms": pick(0.5), "p99Ms": pick(0.99),
            "maxMs": latencies.last().copied().unwrap_or(f64::NAN),
            "kibPerSubscriber": per_connection_kib})
    );
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
