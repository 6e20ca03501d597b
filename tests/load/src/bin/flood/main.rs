//! `flood`: floods, measured from outside. It starts askloop as a child process
//! (`askloop serve`) against DATABASE_URL, then, while probes from 127.0.0.1 ask a question (a
//! signed intake), run a GraphQL query, read `/readyz`, ping a member's websocket and open a new
//! signed-in one in turn as other clients would, it floods from one other address (`--from`,
//! 127.0.0.2 by default): idle TCP connections that never send a byte, connections that trickle
//! their headers a byte at a time, and anonymous websockets that never sign in, each reopened as
//! soon as it is closed or refused; and one member's websocket sends N `subscribe` messages in one
//! burst. It reports what each flood got (held until closed, refused at once), each probe's
//! latency during the run (the goal: every probe's max under 100 ms from the flood on), and how
//! long the child takes to exit after SIGTERM next to its grace period.
//!
//! With `--target`, it floods an askloop that is already running instead (a deployment, or an
//! older build to compare with): then `--token` (a member's session token or API key),
//! `--niche` and `--secret` (the signing secret) say how to reach it, and `--pid`, if given, is
//! the process to send SIGTERM to.

use std::net::{IpAddr, SocketAddr};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use chrono::Utc;
use clap::Parser;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use askloop::config::Config;
use askloop::domain::signing::{SIGNATURE_HEADER, sign};
use askloop::service::people::accounts::new_token;
use askloop::startup;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    askloop_load::main("flood", run)
}

/// Flood one websocket with N subscribes while probing intake, GraphQL and /readyz from
/// another client, then time the exit after SIGTERM (askloop runs as a child process).
#[derive(Debug, Parser)]
#[command(name = "flood", version)]
struct FloodArgs {
    /// How many `subscribe` messages the flooding socket sends in one burst.
    #[arg(long, default_value_t = 1_000)]
    subscribes: usize,
    /// How many idle TCP connections (never a byte sent) the flooding address keeps trying to
    /// hold open.
    #[arg(long, default_value_t = 1_000)]
    idle: usize,
    /// How many connections trickling their headers (a byte every 500 ms) it keeps trying to
    /// hold open.
    #[arg(long, default_value_t = 200)]
    trickle: usize,
    /// How many anonymous websockets (never signed in) it keeps trying to hold open.
    #[arg(long, default_value_t = 200)]
    anonymous: usize,
    /// The address the floods come from (a loopback address other than the probes' 127.0.0.1
    /// against the askloop this run starts; with `--target`, an address of this machine).
    #[arg(long, default_value = "127.0.0.2")]
    from: IpAddr,
    /// How long a flooding connection waits before it opens again once closed or refused, in
    /// milliseconds.
    #[arg(long, default_value_t = 250)]
    reopen_ms: u64,
    /// How long the probes run, in seconds (the flood starts `--flood-after` seconds in).
    #[arg(long, default_value_t = 15)]
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
async fn run(config: Config, args: FloodArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.subscribes > 0, "--subscribes must be at least 1");
    // Thousands of connections on this side too (and the child inherits the raised limit).
    askloop::net::serve::raise_file_limit();
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
    let socket_url = format!("{}/graphql/ws", target.base.replacen("http", "ws", 1));
    let probes = tokio::spawn(probe(
        Probed {
            client: client.clone(),
            base: target.base.clone(),
            socket_url: socket_url.clone(),
            secret: target.secret.clone(),
            slug: target.slug.clone(),
            token: target.token.clone(),
        },
        until,
        Duration::from_millis(args.every_ms),
    ));
    let flood_at = Duration::from_secs(args.flood_after);
    tokio::time::sleep(flood_at).await;
    let address: SocketAddr = target_address(&target.base).await?;
    let floods = Floods::start(&args, address, &socket_url, until);
    let flooded = flood(
        &socket_url,
        &target.token,
        &target.slug,
        args.subscribes,
        until,
    )
    .await?;
    let probes = probes.await?;
    let floods = floods.finish().await;

    println!(
        "flood    one socket sent {} subscribes in one burst: {} answered, then {}",
        flooded.sent,
        flooded.answered,
        flooded
            .closed
            .as_deref()
            .unwrap_or("still open when the run ended")
    );
    floods.print(args.from);
    let mut slowest = 0.0f64;
    for (label, probe) in [
        ("intake", &probes.intake),
        ("graphql", &probes.graphql),
        ("readyz", &probes.ready),
        ("ping", &probes.ping),
        ("connect", &probes.connect),
    ] {
        probe.print(label, flood_at);
        slowest = slowest.max(probe.figures(flood_at).3);
    }
    println!(
        "goal     every probe's max under 100 ms from the flood on: {} (slowest {slowest:.2} ms)",
        if slowest < 100.0 { "met" } else { "missed" }
    );

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
    let seeded = askloop_load::seed::niche_with_operator(&db, "flood", "Flood").await?;
    let (slug, token) = (seeded.niche.slug, seeded.token);
    db.close().await.ok();

    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let secret = new_token("");
    let child = tokio::process::Command::new(askloop_load::askloop_binary()?)
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

/// What the probes reach, as the member and the agent.
struct Probed {
    client: reqwest::Client,
    base: String,
    socket_url: String,
    secret: String,
    slug: String,
    token: String,
}

/// Each probe's answers.
struct Probes {
    intake: Probe,
    graphql: Probe,
    ready: Probe,
    /// A `ping` → `pong` round trip on the member's open websocket.
    ping: Probe,
    /// Opening a new websocket signed in as the member: upgrade, `connection_init`, `ack`.
    connect: Probe,
}

/// Ask, query, check readiness, ping the member's socket and open a new one in turn until
/// `until`.
async fn probe(probed: Probed, until: Instant, every: Duration) -> Probes {
    let Probed {
        client,
        base,
        socket_url,
        secret,
        slug,
        token,
    } = probed;
    let started = Instant::now();
    let mut probes = Probes {
        intake: Probe::new(started),
        graphql: Probe::new(started),
        ready: Probe::new(started),
        ping: Probe::new(started),
        connect: Probe::new(started),
    };
    let Probes {
        intake,
        graphql,
        ready,
        ping,
        connect,
    } = &mut probes;
    let mut member = member_socket(&socket_url, &token).await.ok();
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

        let sent = Instant::now();
        let ponged = match member.as_mut() {
            Some(socket) => pinged(socket).await,
            None => false,
        };
        ping.record(sent, ponged);
        if !ponged {
            // Dropped: the next round pings a new one.
            member = member_socket(&socket_url, &token).await.ok();
        }

        let sent = Instant::now();
        let opened = member_socket(&socket_url, &token).await;
        connect.record(sent, opened.is_ok());
        if let Ok(mut socket) = opened {
            socket.close(None).await.ok();
        }
        tokio::time::sleep(every).await;
    }
    probes
}

type ClientSocket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>;

/// A websocket signed in as the member, acknowledged. It signs in on the upgrade
/// (`Authorization: Bearer`), as a client that can set headers does: a signed-in upgrade never
/// waits behind the bounds on anonymous ones, even from a flooded address.
async fn member_socket(url: &str, token: &str) -> anyhow::Result<ClientSocket> {
    let mut request = url.into_client_request()?;
    request.headers_mut().insert(
        "sec-websocket-protocol",
        HeaderValue::from_static("graphql-transport-ws"),
    );
    request.headers_mut().insert(
        "authorization",
        HeaderValue::from_str(&format!("Bearer {token}"))?,
    );
    let (mut socket, _) = tokio::time::timeout(
        Duration::from_secs(5),
        tokio_tungstenite::connect_async(request),
    )
    .await??;
    socket
        .send(Message::text(
            json!({"type": "connection_init", "payload": {}}).to_string(),
        ))
        .await?;
    let acknowledged = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(Ok(message)) = socket.next().await {
            if let Message::Text(text) = message
                && text.contains("connection_ack")
            {
                return true;
            }
        }
        false
    })
    .await;
    anyhow::ensure!(
        matches!(acknowledged, Ok(true)),
        "the member's socket was not acknowledged"
    );
    Ok(socket)
}

/// One `ping` on `socket`, answered by its `pong` (within 5 s).
async fn pinged(socket: &mut ClientSocket) -> bool {
    if socket
        .send(Message::text(json!({"type": "ping"}).to_string()))
        .await
        .is_err()
    {
        return false;
    }
    let ponged = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(Ok(message)) = socket.next().await {
            if let Message::Text(text) = message
                && text.contains("\"pong\"")
            {
                return true;
            }
        }
        false
    })
    .await;
    matches!(ponged, Ok(true))
}

/// The address `base` (http://host:port) is served on.
async fn target_address(base: &str) -> anyhow::Result<SocketAddr> {
    let authority = base
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .split('/')
        .next()
        .unwrap_or_default();
    let authority = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    tokio::net::lookup_host(&authority)
        .await?
        .next()
        .ok_or_else(|| anyhow::anyhow!("{authority} resolves to no address"))
}

/// What one kind of flooding connection got, over every time it was opened.
#[derive(Debug, Default)]
struct Tally {
    /// Opened and held until the server closed it (or the run ended).
    held: AtomicUsize,
    /// Refused at once: 429 or 503.
    refused: AtomicUsize,
    /// Could not connect at all.
    failed: AtomicUsize,
    /// Closed by the server after being held.
    closed: AtomicUsize,
}

impl Tally {
    fn line(&self, what: &str, count: usize, from: IpAddr) {
        println!(
            "flood    {count} {what} from {from}: held {} times (closed by the server {}), refused at once {}, connect failed {}",
            self.held.load(Ordering::Relaxed),
            self.closed.load(Ordering::Relaxed),
            self.refused.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        );
    }
}

/// The floods from one address, running until the run ends.
struct Floods {
    tasks: tokio::task::JoinSet<()>,
    idle: (usize, Arc<Tally>),
    trickle: (usize, Arc<Tally>),
    anonymous: (usize, Arc<Tally>),
    /// How the anonymous websockets were closed: code and count.
    closes: Arc<std::sync::Mutex<std::collections::BTreeMap<String, usize>>>,
}

impl Floods {
    fn start(args: &FloodArgs, target: SocketAddr, socket_url: &str, until: Instant) -> Self {
        let mut floods = Self {
            tasks: tokio::task::JoinSet::new(),
            idle: (args.idle, Arc::default()),
            trickle: (args.trickle, Arc::default()),
            anonymous: (args.anonymous, Arc::default()),
            closes: Arc::default(),
        };
        let reopen = Duration::from_millis(args.reopen_ms);
        let from = args.from;
        // Started in turn, so that each kind gets its share of what the address may hold.
        for n in 0..args.idle.max(args.trickle).max(args.anonymous) {
            if n < args.idle {
                let tally = floods.idle.1.clone();
                floods.tasks.spawn(again_and_again(until, reopen, move || {
                    hold_idle(from, target, until, tally.clone())
                }));
            }
            if n < args.trickle {
                let tally = floods.trickle.1.clone();
                floods.tasks.spawn(again_and_again(until, reopen, move || {
                    hold_trickling(from, target, until, tally.clone())
                }));
            }
            if n < args.anonymous {
                let tally = floods.anonymous.1.clone();
                let closes = floods.closes.clone();
                let url = socket_url.to_owned();
                floods.tasks.spawn(again_and_again(until, reopen, move || {
                    hold_anonymous(
                        from,
                        target,
                        url.clone(),
                        until,
                        tally.clone(),
                        closes.clone(),
                    )
                }));
            }
        }
        floods
    }

    async fn finish(mut self) -> Self {
        while self.tasks.join_next().await.is_some() {}
        self
    }

    fn print(&self, from: IpAddr) {
        self.idle.1.line("idle connections", self.idle.0, from);
        self.trickle
            .1
            .line("header-trickling connections", self.trickle.0, from);
        self.anonymous
            .1
            .line("anonymous websockets", self.anonymous.0, from);
        let closes = self.closes.lock().map(|c| c.clone()).unwrap_or_default();
        if !closes.is_empty() {
            let said: Vec<String> = closes
                .iter()
                .map(|(code, n)| format!("{code} ×{n}"))
                .collect();
            println!(
                "         the anonymous websockets held were closed with {}",
                said.join(", ")
            );
        }
    }
}

/// Run `open` again and again (pausing `reopen` after each) until `until`.
async fn again_and_again<F, Fut>(until: Instant, reopen: Duration, open: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    while Instant::now() < until {
        open().await;
        tokio::time::sleep(reopen).await;
    }
}

/// A TCP connection to `target` from `from`.
async fn connect_from(from: IpAddr, target: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = match target {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.bind(SocketAddr::new(from, 0))?;
    tokio::time::timeout(Duration::from_secs(5), socket.connect(target))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out"))?
}

/// Whether what the server said refuses the connection (429 or 503).
fn refusal(heard: &[u8]) -> bool {
    heard.starts_with(b"HTTP/1.1 429") || heard.starts_with(b"HTTP/1.1 503")
}

/// Open a connection and send nothing, until the server closes it or the run ends.
async fn hold_idle(from: IpAddr, target: SocketAddr, until: Instant, tally: Arc<Tally>) {
    let Ok(mut stream) = connect_from(from, target).await else {
        tally.failed.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let mut heard = [0u8; 64];
    match tokio::time::timeout_at(until.into(), stream.read(&mut heard)).await {
        Ok(Ok(n)) if refusal(&heard[..n]) => {
            tally.refused.fetch_add(1, Ordering::Relaxed);
        }
        Ok(_) => {
            tally.held.fetch_add(1, Ordering::Relaxed);
            tally.closed.fetch_add(1, Ordering::Relaxed);
        }
        Err(_) => {
            tally.held.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Open a connection and send a request's head a byte every 500 ms, never finishing it, until
/// the server closes it or the run ends.
async fn hold_trickling(from: IpAddr, target: SocketAddr, until: Instant, tally: Arc<Tally>) {
    let Ok(stream) = connect_from(from, target).await else {
        tally.failed.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let (mut reading, mut writing) = stream.into_split();
    let trickle = async move {
        let head = b"GET /readyz HTTP/1.1\r\nhost: askloop\r\nx-slow: ";
        for byte in head.iter().copied().chain(std::iter::repeat(b'x')) {
            if writing.write_all(&[byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    };
    let mut heard = [0u8; 64];
    let answer = async { reading.read(&mut heard).await };
    tokio::select! {
        () = trickle => {
            tally.held.fetch_add(1, Ordering::Relaxed);
            tally.closed.fetch_add(1, Ordering::Relaxed);
        }
        read = answer => match read {
            Ok(n) if refusal(&heard[..n]) => {
                tally.refused.fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                tally.held.fetch_add(1, Ordering::Relaxed);
                tally.closed.fetch_add(1, Ordering::Relaxed);
            }
        },
        () = tokio::time::sleep_until(until.into()) => {
            tally.held.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Open a websocket without a credential and never sign in, until the server closes it or the
/// run ends.
async fn hold_anonymous(
    from: IpAddr,
    target: SocketAddr,
    url: String,
    until: Instant,
    tally: Arc<Tally>,
    closes: Arc<std::sync::Mutex<std::collections::BTreeMap<String, usize>>>,
) {
    let Ok(stream) = connect_from(from, target).await else {
        tally.failed.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let Ok(mut request) = url.into_client_request() else {
        return;
    };
    request.headers_mut().insert(
        "sec-websocket-protocol",
        HeaderValue::from_static("graphql-transport-ws"),
    );
    let upgraded = tokio::time::timeout_at(
        until.into(),
        tokio_tungstenite::client_async(request, tokio_tungstenite::MaybeTlsStream::Plain(stream)),
    )
    .await;
    let mut socket = match upgraded {
        Ok(Ok((socket, _))) => socket,
        Ok(Err(tokio_tungstenite::tungstenite::Error::Http(_))) => {
            tally.refused.fetch_add(1, Ordering::Relaxed);
            return;
        }
        Ok(Err(_)) => {
            tally.failed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        Err(_) => return,
    };
    tally.held.fetch_add(1, Ordering::Relaxed);
    let closed = tokio::time::timeout_at(until.into(), async {
        while let Some(message) = socket.next().await {
            match message {
                Ok(Message::Close(frame)) => {
                    return frame.map_or_else(
                        || "no code".to_owned(),
                        |frame| u16::from(frame.code).to_string(),
                    );
                }
                Ok(_) => {}
                Err(_) => return "a reset".to_owned(),
            }
        }
        "an end".to_owned()
    })
    .await;
    if let Ok(code) = closed {
        tally.closed.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut closes) = closes.lock() {
            *closes.entry(code).or_default() += 1;
        }
    }
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
