//! The fan-out benchmark: S subscribers on one askloop instance, R signed questions; for every
//! subscriber and question, the time from the intake's 201 to that subscriber's receipt of the
//! ADDED event (p50/p99), and the server's memory per connection (what the second half of the
//! subscribers added to its resident memory, divided by their number).
//!
//! Subscribers connect `--in-flight` at a time (256, a client pool's bound), or with `--storm`
//! all at the same moment, as dashboards do when an instance restarts or a load balancer fails
//! over (they say they are reconnecting, `?reconnect=1`, as the dashboard does): then it also
//! reports how long until every socket was acknowledged, how long one more signed-in socket
//! opened for the first time 200 ms into the storm waited for its `connection_ack`, how many
//! attempts it took (a failed one is retried after a jittered, growing pause, as the dashboard
//! does), and the kernel's listen-overflow count before and after.
//!
//! It starts the release `askloop` binary as its own process (so its memory can be read from
//! /proc), on a fresh SQLite file unless DATABASE_URL says otherwise:
//!
//! ```sh
//! cargo build --release -p askloop -p askloop-load
//! target/release/fanout --subscribers 1000 --questions 20
//! target/release/fanout --storm --subscribers 10000
//! ```

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use askloop::domain::signing::{SIGNATURE_HEADER, sign};
use clap::Parser;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::sync::Mutex;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

// The allocator the askloop binary runs with, as the other load generators use.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// What each subscriber reads into at a time. The library's default (128 KiB) is zeroed before
/// every read: with 10,000 sockets sharing the server's cores, that zeroing took much of the
/// load generator's time, taken from the server it measures
/// (docs/benchmarks.md#fan-out-and-reconnect-storms). A delivery is about a kilobyte.
const READ_BUFFER: usize = 4 * 1024;

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
    /// How many subscribers may be connecting at once (a client pool's bound).
    #[arg(long, default_value_t = 256, conflicts_with = "storm")]
    in_flight: usize,
    /// A reconnect storm: every subscriber opens its socket at the same moment (what an instance
    /// restart or a load balancer's fail-over does), and one more signed-in socket is opened in
    /// the middle of it and timed to its `connection_ack`.
    #[arg(long)]
    storm: bool,
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

type Receipts = Arc<Mutex<Vec<(usize, Instant)>>>;

/// How to open one subscriber's socket.
#[derive(Clone)]
struct Subscriber {
    url: String,
    token: String,
    receipts: Receipts,
    /// Connection attempts made, retries included.
    attempts: Arc<AtomicUsize>,
}

/// How long one attempt may take to reach `connection_ack` before it is given up and retried.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a subscriber keeps trying.
const GIVE_UP_AFTER: Duration = Duration::from_secs(180);

impl Subscriber {
    /// Open the socket, sign in, subscribe to the queue and keep reading it in a task of its own;
    /// returns how long it took to its `connection_ack`, retries included. A failed
    /// attempt (refused, reset, timed out) is retried after a jittered, growing pause, as the
    /// dashboard does.
    async fn open(self) -> anyhow::Result<Opened> {
        let started = Instant::now();
        let mut failures = 0u32;
        loop {
            self.attempts.fetch_add(1, Ordering::Relaxed);
            match tokio::time::timeout(ATTEMPT_TIMEOUT, self.attempt()).await {
                Ok(Ok((connected, upgraded))) => {
                    return Ok(Opened {
                        connected: connected.saturating_duration_since(started),
                        upgraded: upgraded.saturating_duration_since(started),
                        acknowledged: started.elapsed(),
                    });
                }
                Ok(Err(err)) if started.elapsed() > GIVE_UP_AFTER => return Err(err),
                Err(_) if started.elapsed() > GIVE_UP_AFTER => {
                    anyhow::bail!("no connection_ack within {GIVE_UP_AFTER:?}")
                }
                _ => {}
            }
            failures += 1;
            let ceiling = Duration::from_millis(250u64 << failures.min(6));
            tokio::time::sleep(ceiling.mul_f64(jitter())).await;
        }
    }

    /// One attempt: when its TCP connection was established, and when its upgrade was answered
    /// (101).
    async fn attempt(&self) -> anyhow::Result<(Instant, Instant)> {
        // Signed in on the upgrade, as a client that can set headers does: the bounds on
        // anonymous upgrades from one address never apply to it.
        let mut request = self.url.clone().into_client_request()?;
        request
            .headers_mut()
            .insert("sec-websocket-protocol", "graphql-transport-ws".parse()?);
        request
            .headers_mut()
            .insert("authorization", format!("Bearer {}", self.token).parse()?);
        let address = self
            .url
            .strip_prefix("ws://")
            .and_then(|rest| rest.split('/').next())
            .ok_or_else(|| anyhow::anyhow!("{} is not a ws:// URL", self.url))?;
        let tcp = tokio::net::TcpStream::connect(address).await?;
        let connected = Instant::now();
        let config = WebSocketConfig::default().read_buffer_size(READ_BUFFER);
        let (mut ws, _) =
            tokio_tungstenite::client_async_with_config(request, tcp, Some(config)).await?;
        let upgraded = Instant::now();
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
        // Read up to the acknowledgement here, then hand the socket to a reader of its own.
        loop {
            let message = ws
                .next()
                .await
                .ok_or_else(|| anyhow::anyhow!("closed before connection_ack"))??;
            if let Message::Text(text) = &message
                && serde_json::from_str::<Value>(text).is_ok_and(|v| v["type"] == "connection_ack")
            {
                break;
            }
            if let Message::Close(frame) = message {
                anyhow::bail!("closed before connection_ack: {frame:?}");
            }
        }
        let receipts = self.receipts.clone();
        tokio::spawn(async move {
            while let Some(Ok(message)) = ws.next().await {
                // The receipt is when the whole message has arrived; reading which question it
                // carries is this tool's own work, not the server's.
                let at = Instant::now();
                let Message::Text(text) = message else {
                    continue;
                };
                if let Some(n) = question_number(&text) {
                    receipts
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .push((n, at));
                }
            }
        });
        Ok((connected, upgraded))
    }
}

/// The number in the external id (`fan-N`) of the question a `next` message carries. Read
/// through borrowed types, which skip the card's other fields without building them: ten
/// thousand subscribers in this process each read every message, on the same cores as the
/// server being measured, and a whole `Value` tree per message cost several times as much.
fn question_number(text: &str) -> Option<usize> {
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(rename = "type", borrow)]
        kind: &'a str,
        #[serde(borrow)]
        payload: Option<Payload<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Payload<'a> {
        #[serde(borrow)]
        data: Option<Data<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Data<'a> {
        #[serde(rename = "questionQueue", borrow)]
        queue: Option<Change<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Change<'a> {
        #[serde(borrow)]
        question: Option<Card<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Card<'a> {
        #[serde(rename = "externalId", borrow)]
        external_id: Option<std::borrow::Cow<'a, str>>,
    }
    let message: Message<'_> = serde_json::from_str(text).ok()?;
    if message.kind != "next" {
        return None;
    }
    message
        .payload?
        .data?
        .queue?
        .question?
        .external_id?
        .strip_prefix("fan-")?
        .parse()
        .ok()
}

/// How long a socket took to open, retries included.
#[derive(Debug, Clone, Copy)]
struct Opened {
    /// To the TCP connection (the server's system accepted it).
    connected: Duration,
    /// To the upgrade's answer (101).
    upgraded: Duration,
    /// To `connection_ack`.
    acknowledged: Duration,
}

/// A number in [0, 1) that differs between calls (the clock's nanoseconds, mixed).
fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mixed = u64::from(nanos).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
    mixed as f64 / (1u64 << 53) as f64
}

/// Let the last subscriptions register with the hub, and the allocator settle, before reading
/// the server's memory.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(500)).await;
}

/// The kernel's count of connections dropped because a listen queue was full
/// (`TcpExt: ListenOverflows` in /proc/net/netstat, what `nstat -az TcpExtListenOverflows` shows).
fn listen_overflows() -> Option<u64> {
    let netstat = std::fs::read_to_string("/proc/net/netstat").ok()?;
    let mut lines = netstat.lines().filter(|l| l.starts_with("TcpExt:"));
    let (names, values) = (lines.next()?, lines.next()?);
    let at = names
        .split_whitespace()
        .position(|name| name == "ListenOverflows")?;
    values.split_whitespace().nth(at)?.parse().ok()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let FanoutArgs {
        subscribers,
        questions,
        in_flight,
        storm,
    } = FanoutArgs::parse();
    anyhow::ensure!(subscribers > 0, "--subscribers must be at least 1");
    let mut storm_figures: Option<(Duration, Duration)> = None;
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
    let max_websockets = (subscribers + 16).max(10_000).to_string();
    let server = askloop_load::Server::start(
        &database_url,
        SECRET,
        &[
            // Room for every subscriber (and the storm's probe) past the default of 10,000.
            ("ASKLOOP_MAX_WEBSOCKETS", &max_websockets),
            // As for the set-up commands: freed pages go back at once.
            ("MIMALLOC_PURGE_DELAY", "0"),
        ],
    )?;
    let base = server.base.clone();
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
    let receipts: Receipts = Arc::new(Mutex::new(Vec::new()));
    let subscriber = Subscriber {
        url: format!("{}/graphql/ws", base.replacen("http", "ws", 1)),
        token,
        receipts: receipts.clone(),
        attempts: Arc::new(AtomicUsize::new(0)),
    };
    let overflows_before = listen_overflows();
    let started = Instant::now();
    let (connected_rss, per_connection_kib, base_rss) = if storm {
        // Every socket at once; the memory per subscriber is then what all of them added to the
        // idle server.
        // The storm's sockets come back as the dashboard does after a drop, saying so; the
        // probe below is opened for the first time.
        let reconnecting = Subscriber {
            url: format!("{}?reconnect=1", subscriber.url),
            ..subscriber.clone()
        };
        let mut opening = tokio::task::JoinSet::new();
        for _ in 0..subscribers {
            let reconnecting = reconnecting.clone();
            opening.spawn(async move { reconnecting.open().await.map(|_| ()) });
        }
        // One more operator opens the dashboard while the storm is at its height: from a thread
        // and runtime of its own, as from another machine, so what it waits for is the server,
        // not this process's ten thousand other tasks.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let (probed, probe) = tokio::sync::oneshot::channel::<anyhow::Result<Opened>>();
        {
            let subscriber = subscriber.clone();
            std::thread::spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(err) => {
                        let _ = probed.send(Err(err.into()));
                        return;
                    }
                };
                runtime.block_on(async {
                    let _ = probed.send(subscriber.open().await);
                    // Its reader runs on this runtime: keep it until the process ends.
                    std::future::pending::<()>().await;
                });
            });
        }
        while let Some(opened) = opening.join_next().await {
            opened??;
        }
        let all_acknowledged = started.elapsed();
        let probe = probe.await??;
        println!(
            "storm: {subscribers} sockets acknowledged {:.2} s after they were opened at once \
             ({} connection attempts); a socket opened 200 ms into the storm was connected in \
             {:.0} ms, upgraded in {:.0} ms and acknowledged in {:.0} ms",
            all_acknowledged.as_secs_f64(),
            subscriber.attempts.load(Ordering::Relaxed),
            probe.connected.as_secs_f64() * 1_000.0,
            probe.upgraded.as_secs_f64() * 1_000.0,
            probe.acknowledged.as_secs_f64() * 1_000.0
        );
        storm_figures = Some((all_acknowledged, probe.acknowledged));
        settle().await;
        let connected_rss = rss_kib(server.id());
        let added = connected_rss.saturating_sub(idle_rss);
        (
            connected_rss,
            added as f64 / (subscribers + 1) as f64,
            idle_rss,
        )
    } else {
        // The memory per subscriber is what the second half of them added: the first half's
        // reading is the baseline, taken once the server has settled with subscribers on it. A
        // reading before any subscriber holds start-up memory the allocator has yet to give back.
        let half = subscribers / 2;
        let slots = Arc::new(tokio::sync::Semaphore::new(in_flight.max(1)));
        let mut half_rss = None;
        for (from, to) in [(0, half), (half, subscribers)] {
            let mut opening = tokio::task::JoinSet::new();
            for _ in from..to {
                let slot = slots.clone().acquire_owned().await?;
                let subscriber = subscriber.clone();
                opening.spawn(async move {
                    let opened = subscriber.open().await.map(|_| ());
                    drop(slot);
                    opened
                });
            }
            while let Some(opened) = opening.join_next().await {
                opened??;
            }
            if to == half && half > 0 {
                settle().await;
                half_rss = Some(rss_kib(server.id()));
            }
        }
        settle().await;
        let connected_rss = rss_kib(server.id());
        let (base_rss, added) = match half_rss {
            Some(rss) => (rss, subscribers - half),
            None => (idle_rss, subscribers),
        };
        let per = connected_rss.saturating_sub(base_rss) as f64 / added as f64;
        (connected_rss, per, base_rss)
    };
    let overflows_after = listen_overflows();
    println!(
        "{subscribers} subscribers connected in {:.1} s ({} at a time); server RSS {} KiB idle, \
         {} KiB as the baseline, {} KiB with all ({:.1} KiB per connection); listen overflows \
         counted by the kernel: {} before, {} after",
        started.elapsed().as_secs_f64(),
        if storm {
            "all".to_owned()
        } else {
            in_flight.to_string()
        },
        idle_rss,
        base_rss,
        connected_rss,
        per_connection_kib,
        overflows_before.map_or_else(|| "?".into(), |n| n.to_string()),
        overflows_after.map_or_else(|| "?".into(), |n| n.to_string()),
    );

    // The storm's probe subscribed too.
    let sockets = subscribers + usize::from(storm);
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
    let receipts = receipts
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
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
        sockets * questions,
        pick(0.5),
        pick(0.99),
        latencies.last().copied().unwrap_or(f64::NAN)
    );
    println!(
        "bench: {}",
        json!({"run": "fanout", "store": if database_url.starts_with("postgres") { "postgres" } else { "sqlite" },
            "subscribers": subscribers, "questions": questions,
            "received": latencies.len(), "expected": sockets * questions,
            "p50Ms": pick(0.5), "p99Ms": pick(0.99),
            "maxMs": latencies.last().copied().unwrap_or(f64::NAN),
            "kibPerSubscriber": per_connection_kib,
            "storm": storm, "inFlight": if storm { subscribers } else { in_flight },
            "subscribedS": storm_figures.map(|(all, _)| all.as_secs_f64()),
            "probeAckMs": storm_figures.map(|(_, probe)| probe.as_secs_f64() * 1_000.0),
            "connectAttempts": subscriber.attempts.load(Ordering::Relaxed),
            "listenOverflows": overflows_after.zip(overflows_before).map(|(a, b)| a.saturating_sub(b))})
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::question_number;

    #[test]
    fn a_next_message_gives_its_questions_number_and_nothing_else_does() {
        let card = r#"{"id":"q","type":"next","payload":{"data":{"questionQueue":{"change":"ADDED","question":{"id":"7","title":"a \"quoted\" title","options":[{"id":"a","label":"A"}],"externalId":"fan-12"}}}}}"#;
        assert_eq!(question_number(card), Some(12));
        // An escaped id is still read.
        let escaped = r#"{"type":"next","payload":{"data":{"questionQueue":{"question":{"externalId":"fan-\u0033"}}}}}"#;
        assert_eq!(question_number(escaped), Some(3));
        for other in [
            r#"{"type":"connection_ack"}"#,
            r#"{"type":"ping","payload":{}}"#,
            r#"{"id":"q","type":"complete"}"#,
            r#"{"id":"q","type":"error","payload":[{"message":"no"}]}"#,
            r#"{"type":"next","payload":{"data":null,"errors":[{"message":"no"}]}}"#,
            r#"{"type":"next","payload":{"data":{"questionQueue":{"question":{"externalId":"other-1"}}}}}"#,
            r#"{"type":"next","payload":{"data":{"questionQueue":{"question":{"externalId":"fan-x"}}}}}"#,
            r#"{"type":"next""#,
            "",
        ] {
            assert_eq!(question_number(other), None, "{other}");
        }
    }
}
