//! `askloop flood`: the websocket flood, measured from outside. It starts askloop as a child
//! process (`askloop serve`) against DATABASE_URL, then, while probes ask a question, run a
//! GraphQL query and read `/readyz` in turn as another client would, one member's websocket
//! sends N `subscribe` messages in one burst. It reports what the flooding socket got (how many
//! operations answered, how it was closed), each probe's latency during the run, and how long
//! the child takes to exit after SIGTERM next to its grace period.
//!
//! With `--target`, it floods an askloop that is already running instead (a deployment, or an
//! older build to compare with): then `--token` (a member's session token or API key),
//! `--niche` and `--secret` (the signing secret) say how to reach it, and `--pid`, if given, is
//! the process to send SIGTERM to.

use std::process::Stdio;
use std::time::{Duration, Instant};

use chrono::Utc;
use clap::Args;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use crate::config::Config;
use crate::domain::signing::{SIGNATURE_HEADER, sign};
use crate::service::accounts::new_token;
use crate::startup;

/// Arguments of `askloop flood`.
#[derive(Debug, Args)]
pub struct FloodArgs {
    /// How many `subscribe` messages the flooding socket sends in one burst.
    #[arg(long, default_value_t = 1_000)]
    subscribes: usize,
    /// How long the probes run, in seconds (the flood starts `--flood-after` seconds in).
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// The pause between probe rounds, in milliseconds.
    #[arg(long, default_value_t = 20)]
    every_ms: u64,
    /// How long the probes run before the flood starts, in seconds (the server warms up).
    #[arg(long, default_value_t = 1)]
    flood_after: u64,
    /// Flood this running askloop (`http://host:port`) instead of starting one.
    #[arg(long, requires_all = ["token", "niche", "secret"])]
    target: Option<String>,
    /// With `--target`: a member's session token or API key.
    #[arg(long)]
    token: Option<String>,
    /// With `--target`: the niche the member belongs to.
    #[arg(long)]
    niche: Option<String>,
    /// With `--target`: the signing secret the target verifies intake with.
    #[arg(long)]
    secret: Option<String>,
    /// With `--target`: the target's process id, to time its exit after SIGTERM.
    #[arg(long)]
    pid: Option<u32>,
}

/// The askloop under test.
struct Target {
    base: String,
    token: String,
    slug: String,
    secret: String,
    /// The child this run started, if it did.
    child: Option<tokio::process::Child>,
    pid: Option<u32>,
}

/// One probe's answers: when each was asked (after the run started) and how long it took.
struct Probe {
    samples: Vec<(Duration, Duration)>,
    failures: usize,
    started: Instant,
}

impl Probe {
    fn new(started: Instant) -> Self {
        Self {
            samples: Vec::new(),
            failures: 0,
            started,
        }
    }

    fn record(&mut self, sent: Instant, ok: bool) {
        self.samples.push((sent - self.started, sent.elapsed()));
        if !ok {
            self.failures += 1;
        }
    }

    /// p50, p99 and the slowest (with when it was asked) of the answers asked from `from` on.
    fn figures(&self, from: Duration) -> (usize, f64, f64, f64, f64) {
        let mut took: Vec<(Duration, Duration)> = self
            .samples
            .iter()
            .filter(|(at, _)| *at >= from)
            .map(|(at, took)| (*took, *at))
            .collect();
        took.sort_unstable();
        let ms = |d: Duration| d.as_secs_f64() * 1_000.0;
        let pick = |q: f64| {
            let index = ((took.len() as f64 - 1.0) * q).round() as usize;
            took.get(index).map_or(0.0, |(d, _)| ms(*d))
        };
        let (max, at) = took
            .last()
            .map_or((0.0, 0.0), |(d, at)| (ms(*d), at.as_secs_f64()));
        (took.len(), pick(0.50), pick(0.99), max, at)
    }

    /// The whole run, then the answers asked from the flood on (`flood_at` after the start).
    fn print(&self, label: &str, flood_at: Duration) {
        let (n, p50, p99, max, at) = self.figures(Duration::ZERO);
        println!(
            "probe {label:<8} n={n:<5} p50 {p50:>7.2} ms   p99 {p99:>7.2} ms   max {max:>7.2} ms (asked at {at:>5.2} s)   failures {}",
            self.failures
        );
        let (n, p50, p99, max, at) = self.figures(flood_at);
        println!(
            "  from the flood on    n={n:<5} p50 {p50:>7.2} ms   p99 {p99:>7.2} ms   max {max:>7.2} ms (asked at {at:>5.2} s)"
        );
    }
}

/// What the flooding socket saw.
#[derive(Debug, Default)]
struct FloodOutcome {
    sent: usize,
    answered: usize,
    closed: Option<String>,
}

/// Run the flood.
pub async fn run(config: Config, args: FloodArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.subscribes > 0, "--subscribes must be at least 1");
    anyhow::ensure!(args.seconds >= 2, "--seconds must be at least 2");
    anyhow::ensure!(
        args.flood_after < args.seconds,
        "--flood-after must be shorter than --seconds"
    );
    let mut target = match &args.target {
        Some(url) => given_target(url, &args)?,
        None => start_target(&config).await?,
    };
    let client = reqwest::Client::new();
    let started = Instant::now();
    loop {
        let ready = client.get(format!("{}/readyz", target.base)).send().await;
        if matches!(&ready, Ok(r) if r.status().is_success()) {
            break;
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(30),
            "askloop did not become ready"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let until = Instant::now() + Duration::from_secs(args.seconds);
    let probes = tokio::spawn(probe(
        client.clone(),
        target.base.clone(),
        target.secret.clone(),
        target.slug.clone(),
        target.token.clone(),
        until,
        Duration::from_millis(args.every_ms),
    ));
    let flood_at = Duration::from_secs(args.flood_after);
    tokio::time::sleep(flood_at).await;
    let socket_url = format!("{}/graphql/ws", target.base.replacen("http", "ws", 1));
    let flooded = flood(
        &socket_url,
        &target.token,
        &target.slug,
        args.subscribes,
        until,
    )
    .await?;
    let (intake, graphql, ready) = probes.await?;

    println!(
        "flood    one socket sent {} subscribes in one burst: {} answered, then {}",
        flooded.sent,
        flooded.answered,
        flooded
            .closed
            .as_deref()
            .unwrap_or("still open when the run ended")
    );
    intake.print("intake", flood_at);
    graphql.print("graphql", flood_at);
    ready.print("readyz", flood_at);

    let Some(pid) = target.pid else {
        return Ok(());
    };
    let sigterm = Instant::now();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()?;
    anyhow::ensure!(killed.success(), "kill -TERM {pid} failed");
    let grace = config.shutdown_grace;
    let waited = grace + Duration::from_secs(10);
    let exited = match target.child.as_mut() {
        Some(child) => tokio::time::timeout(waited, child.wait())
            .await
            .map(|status| status.map(|s| s.to_string())),
        None => {
            tokio::time::timeout(waited, async {
                // Not our child: watch for its process to go.
                while std::path::Path::new(&format!("/proc/{pid}")).exists() {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Ok("gone".to_owned())
            })
            .await
        }
    };
    match exited {
        Ok(status) => println!(
            "sigterm  exited in {:.0} ms ({}); the grace period is {} ms",
            sigterm.elapsed().as_secs_f64() * 1_000.0,
            status?,
            grace.as_millis()
        ),
        Err(_) => {
            if let Some(child) = target.child.as_mut() {
                child.kill().await.ok();
            }
            println!(
                "sigterm  still running {} s after SIGTERM",
                waited.as_secs()
            );
            anyhow::bail!("askloop was still running {grace:?} + 10 s after SIGTERM");
        }
    }
    Ok(())
}

/// An askloop that is already running, as `--target` and its companions describe it.
fn given_target(url: &str, args: &FloodArgs) -> anyhow::Result<Target> {
    let base = url.trim_end_matches('/').to_owned();
    anyhow::ensure!(
        base.starts_with("http://") || base.starts_with("https://"),
        "--target must be an http:// or https:// address"
    );
    Ok(Target {
        base,
        token: args.token.clone().unwrap_or_default(),
        slug: args.niche.clone().unwrap_or_default(),
        secret: args.secret.clone().unwrap_or_default(),
        child: None,
        pid: args.pid,
    })
}

/// A fresh niche and member on DATABASE_URL, and askloop serving it as a child process, so
/// SIGTERM reaches it as it would in production.
async fn start_target(config: &Config) -> anyhow::Result<Target> {
    let db = startup::connect_and_migrate(config).await?;
    let seeded = super::seed::niche_with_operator(&db, "flood", "Flood").await?;
    let (slug, token) = (seeded.niche.slug, seeded.token);
    db.close().await.ok();

    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let secret = new_token("");
    let child = tokio::process::Command::new(std::env::current_exe()?)
        .arg("serve")
        .env("DATABASE_URL", &config.database_url)
        .env("ASKLOOP_BIND", format!("127.0.0.1:{port}"))
        .env("CHOVY_SIGNING_SECRET", &secret)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id();
    Ok(Target {
        base: format!("http://127.0.0.1:{port}"),
        token,
        slug,
        secret,
        child: Some(child),
        pid,
    })
}

/// Ask, query and check readiness in turn until `until`.
async fn probe(
    client: reqwest::Client,
    base: String,
    secret: String,
    slug: String,
    token: String,
    until: Instant,
    every: Duration,
) -> (Probe, Probe, Probe) {
    let started = Instant::now();
    let (mut intake, mut graphql, mut ready) = (
        Probe::new(started),
        Probe::new(started),
        Probe::new(started),
    );
    let mut round = 0usize;
    while Instant::now() < until {
        round += 1;
        let body = json!({"payload": {
            "nicheSlug": slug,
            "externalId": format!("probe-{round}"),
            "title": format!("Probe {round}"),
            "question": "Still answering?",
        }})
        .to_string();
        let header = sign(&secret, body.as_bytes(), Utc::now().timestamp());
        let sent = Instant::now();
        let asked = client
            .post(format!("{base}/api/v1/internal/expert-questions"))
            .header("content-type", "application/json")
            .header(SIGNATURE_HEADER, header)
            .body(body)
            .send()
            .await;
        intake.record(sent, matches!(&asked, Ok(r) if r.status().as_u16() == 201));

        let sent = Instant::now();
        let queried = client
            .post(format!("{base}/graphql"))
            .bearer_auth(&token)
            .json(&json!({"query": "{ niches { slug } }"}))
            .send()
            .await;
        let ok = match queried {
            Ok(r) if r.status().is_success() => {
                r.json::<Value>().await.is_ok_and(|v| v["errors"].is_null())
            }
            _ => false,
        };
        graphql.record(sent, ok);

        let sent = Instant::now();
        let checked = client.get(format!("{base}/readyz")).send().await;
        ready.record(sent, matches!(&checked, Ok(r) if r.status().is_success()));
        tokio::time::sleep(every).await;
    }
    (intake, graphql, ready)
}

/// One member's socket: `connection_init`, then `count` subscribes in one burst, then read what
/// comes back until the socket closes or the run ends.
async fn flood(
    url: &str,
    token: &str,
    slug: &str,
    count: usize,
    until: Instant,
) -> anyhow::Result<FloodOutcome> {
    let mut request = url.into_client_request()?;
    request.headers_mut().insert(
        "sec-websocket-protocol",
        HeaderValue::from_static("graphql-transport-ws"),
    );
    let (socket, _) = tokio_tungstenite::connect_async(request).await?;
    let (mut write, mut read) = socket.split();
    write
        .send(Message::text(
            json!({"type": "connection_init", "payload": {"token": token}}).to_string(),
        ))
        .await?;
    loop {
        match read.next().await {
            Some(Ok(Message::Text(text))) if text.contains("connection_ack") => break,
            Some(Ok(_)) => {}
            other => anyhow::bail!("the socket was not acknowledged: {other:?}"),
        }
    }
    let mut outcome = FloodOutcome::default();
    let query = "subscription ($slug: String!) { questionQueue(nicheSlug: $slug) { change } }";
    for id in 0..count {
        let message = json!({"id": id.to_string(), "type": "subscribe",
            "payload": {"query": query, "variables": {"slug": slug}}});
        // `feed` queues without flushing: the whole burst leaves together.
        if write
            .feed(Message::text(message.to_string()))
            .await
            .is_err()
        {
            break;
        }
        outcome.sent += 1;
    }
    write.flush().await.ok();
    let mut answered = std::collections::HashSet::new();
    while let Ok(next) = tokio::time::timeout_at(until.into(), read.next()).await {
        match next {
            Some(Ok(Message::Text(text))) => {
                if let Ok(message) = serde_json::from_str::<Value>(&text)
                    && let Some(id) = message["id"].as_str()
                {
                    answered.insert(id.to_owned());
                }
            }
            Some(Ok(Message::Close(frame))) => {
                outcome.closed = Some(match frame {
                    Some(frame) => {
                        format!("closed with {} ({})", u16::from(frame.code), frame.reason)
                    }
                    None => "closed without a code".into(),
                });
                break;
            }
            Some(Ok(_)) => {}
            Some(Err(err)) => {
                outcome.closed = Some(format!("ended: {err}"));
                break;
            }
            None => {
                outcome.closed = Some("ended".into());
                break;
            }
        }
    }
    outcome.answered = answered.len();
    Ok(outcome)
}
