//! `askloop flood`: the websocket flood, measured from outside. It starts askloop as a child
//! process (`askloop serve`) against DATABASE_URL, then, while probes ask a question, run a
//! GraphQL query and read `/readyz` in turn as another client would, one member's websocket
//! sends N `subscribe` messages in one burst. It reports what the flooding socket got (how many
//! operations answered, how it was closed), each probe's latency during the run, and how long
//! the child takes to exit after SIGTERM next to its grace period.

use std::process::Stdio;
use std::time::{Duration, Instant};

use chrono::Utc;
use clap::Args;
use entity::niche_members::MemberRole;
use entity::niches::NicheStatus;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use crate::config::Config;
use crate::domain::handle::Handle;
use crate::domain::signing::{SIGNATURE_HEADER, sign};
use crate::domain::slug::Slug;
use crate::live::ChangeHint;
use crate::service::accounts::{self, NewUser, new_token};
use crate::service::audit::Actor;
use crate::service::niches::{NewNiche, create_niche};
use crate::service::sessions;
use crate::startup;

/// Arguments of `askloop flood`.
#[derive(Debug, Args)]
pub struct FloodArgs {
    /// How many `subscribe` messages the flooding socket sends in one burst.
    #[arg(long, default_value_t = 1_000)]
    subscribes: usize,
    /// How long the probes run, in seconds (the flood starts after the first second).
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// The pause between probe rounds, in milliseconds.
    #[arg(long, default_value_t = 20)]
    every_ms: u64,
}

/// One probe's latencies.
#[derive(Default)]
struct Probe {
    latencies: Vec<Duration>,
    failures: usize,
}

impl Probe {
    fn record(&mut self, took: Duration, ok: bool) {
        self.latencies.push(took);
        if !ok {
            self.failures += 1;
        }
    }

    fn print(&mut self, label: &str) {
        self.latencies.sort_unstable();
        let pick = |q: f64| {
            let index = ((self.latencies.len() as f64 - 1.0) * q).round() as usize;
            self.latencies
                .get(index)
                .map_or(0.0, |d| d.as_secs_f64() * 1_000.0)
        };
        let max = self
            .latencies
            .last()
            .map_or(0.0, |d| d.as_secs_f64() * 1_000.0);
        println!(
            "probe {label:<8} n={:<5} p50 {:>7.2} ms   p99 {:>7.2} ms   max {:>7.2} ms   failures {}",
            self.latencies.len(),
            pick(0.50),
            pick(0.99),
            max,
            self.failures
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
    let db = startup::connect_and_migrate(&config).await?;
    let run_id: String = new_token("").chars().take(8).collect();
    let slug = format!("flood-{run_id}");
    let now = Utc::now();
    create_niche(
        &db,
        NewNiche {
            slug: Slug::parse(&slug)?,
            name: "Flood".into(),
            status: NicheStatus::Open,
        },
        &Actor::Cli,
        now,
    )
    .await?;
    let handle = format!("flood-{run_id}");
    let password = new_token("");
    accounts::create_user(
        &db,
        NewUser {
            handle: handle.clone(),
            email: format!("{handle}@askloop.invalid"),
            password: password.clone(),
            admin: false,
        },
        &Actor::Cli,
        now,
    )
    .await?;
    accounts::add_member(
        &db,
        &ChangeHint::none(),
        &slug,
        &handle,
        MemberRole::Operator,
        &Actor::Cli,
        now,
    )
    .await?;
    let token = sessions::login(&db, &Handle::parse(&handle)?, &password, now)
        .await?
        .token;
    db.close().await.ok();

    // The server under test is its own process, so SIGTERM reaches it as it would in production.
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let secret = new_token("");
    let mut child = tokio::process::Command::new(std::env::current_exe()?)
        .arg("serve")
        .env("DATABASE_URL", &config.database_url)
        .env("ASKLOOP_BIND", format!("127.0.0.1:{port}"))
        .env("CHOVY_SIGNING_SECRET", &secret)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let started = Instant::now();
    loop {
        let ready = client.get(format!("{base}/readyz")).send().await;
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
        base.clone(),
        secret,
        slug.clone(),
        token.clone(),
        until,
        Duration::from_millis(args.every_ms),
    ));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let flooded = flood(port, &token, &slug, args.subscribes, until).await?;
    let (mut intake, mut graphql, mut ready) = probes.await?;

    println!(
        "flood    one socket sent {} subscribes in one burst: {} answered, then {}",
        flooded.sent,
        flooded.answered,
        flooded
            .closed
            .as_deref()
            .unwrap_or("still open when the run ended")
    );
    intake.print("intake");
    graphql.print("graphql");
    ready.print("readyz");

    let pid = child
        .id()
        .ok_or_else(|| anyhow::anyhow!("askloop exited early"))?;
    let sigterm = Instant::now();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()?;
    anyhow::ensure!(killed.success(), "kill -TERM {pid} failed");
    let grace = config.shutdown_grace;
    let exited = tokio::time::timeout(grace + Duration::from_secs(10), child.wait()).await;
    match exited {
        Ok(status) => println!(
            "sigterm  exited in {:.0} ms ({}); the grace period is {} ms",
            sigterm.elapsed().as_secs_f64() * 1_000.0,
            status?,
            grace.as_millis()
        ),
        Err(_) => {
            child.kill().await.ok();
            anyhow::bail!("askloop was still running {grace:?} + 10 s after SIGTERM");
        }
    }
    Ok(())
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
    let (mut intake, mut graphql, mut ready) =
        (Probe::default(), Probe::default(), Probe::default());
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
        intake.record(
            sent.elapsed(),
            matches!(&asked, Ok(r) if r.status().as_u16() == 201),
        );

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
        graphql.record(sent.elapsed(), ok);

        let sent = Instant::now();
        let checked = client.get(format!("{base}/readyz")).send().await;
        ready.record(
            sent.elapsed(),
            matches!(&checked, Ok(r) if r.status().is_success()),
        );
        tokio::time::sleep(every).await;
    }
    (intake, graphql, ready)
}

/// One member's socket: `connection_init`, then `count` subscribes in one burst, then read what
/// comes back until the socket closes or the run ends.
async fn flood(
    port: u16,
    token: &str,
    slug: &str,
    count: usize,
    until: Instant,
) -> anyhow::Result<FloodOutcome> {
    let mut request = format!("ws://127.0.0.1:{port}/graphql/ws").into_client_request()?;
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
