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
//!
//! The probes are in `probes`, the floods in `floods`; this file starts the run and reports.

mod floods;
mod probes;

use floods::{Floods, flood};
use probes::{Probed, probe};
use std::net::{IpAddr, SocketAddr};
use std::process::Stdio;
use std::time::{Duration, Instant};

use clap::Parser;

use askloop::config::Config;
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
