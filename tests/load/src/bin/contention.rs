//! `contention`: N operators answer one question at the same instant. Each operator has
//! its own HTTP connection, opened and used once before the round; then all N wait on a barrier
//! and send `answerQuestion` together. Exactly one must win and the others get `CONFLICT`; the
//! figures are the latencies of all N responses over every round after the uncounted warm-up
//! rounds, one more than the server's write connections (their slowest response is printed
//! apart). It starts `askloop serve` as a child
//! process on a free port against DATABASE_URL, so the load generator never shares the server's
//! runtime.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use clap::Parser;
use sea_orm::DbBackend;
use serde_json::{Value, json};
use tokio::sync::Barrier;

use askloop::config::Config;
use askloop::domain::signing::{SIGNATURE_HEADER, SigningKeys, sign};
use askloop::service::people::accounts::new_token;
use askloop::startup;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    askloop_load::main("contention", run)
}

/// N operators answer one question at the same instant, for R questions: one must win,
/// the rest get CONFLICT; prints the latencies of all responses.
#[derive(Debug, Parser)]
#[command(name = "contention", version)]
struct ContentionArgs {
    /// How many operators answer each question at once.
    #[arg(long, default_value_t = 50)]
    operators: usize,
    /// How many questions (rounds) are counted.
    #[arg(long, default_value_t = 10)]
    rounds: usize,
    /// How many rounds before them warm the server up and are not counted. By default one more
    /// than the server's write connections, so every connection an answer can land on has run
    /// the answer's statements once before a counted round.
    #[arg(long)]
    warm_up: Option<usize>,
}

const ANSWER: &str = "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: ANSWERED, optionId: \"a\"}) { points } }";

/// How one operator's answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Won,
    Conflict,
    Failed,
}

/// Run the contention benchmark.
async fn run(mut config: Config, args: ContentionArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.operators >= 2, "--operators must be at least 2");
    anyhow::ensure!(args.rounds >= 1, "--rounds must be at least 1");
    let warm_up_rounds = args.warm_up.unwrap_or_else(|| {
        askloop::db::serving_writers(&config.database_url, config.db_max_connections) as usize + 1
    });
    anyhow::ensure!(warm_up_rounds >= 1, "--warm-up must be at least 1");
    let secret = new_token("");
    config.signing = SigningKeys::new(Some(secret.clone()), None);
    config.bind = "127.0.0.1:0".parse()?;
    let db = startup::connect_and_migrate(&config).await?;
    let backend = match db.get_database_backend() {
        DbBackend::Postgres => "postgres",
        _ => "sqlite",
    };
    let seeded = askloop_load::seed::niche_with_operator(&db, "contend", "Contention").await?;
    let slug = seeded.niche.slug.clone();
    let mut tokens = vec![seeded.token];
    for n in 1..args.operators {
        tokens.push(
            askloop_load::seed::signed_in_operator(&db, &slug, &format!("{slug}-{n}")).await?,
        );
    }

    // The server runs as its own process, as it does in production: in this one, the load
    // generator's tasks would queue on the server's own workers, in front of the very
    // transaction every response waits for.
    let mut server = serve_apart(&config, &secret)?;
    let base = server.base.clone();

    // One client (one connection) per operator, warmed so the round measures answering only.
    let mut clients = Vec::with_capacity(tokens.len());
    for _ in &tokens {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(1)
            .build()?;
        client.get(format!("{base}/readyz")).send().await?;
        clients.push(client);
    }
    let asker = reqwest::Client::new();

    let mut latencies = Vec::with_capacity(args.operators * args.rounds);
    let mut bad_rounds = 0;
    // The first rounds warm up and are not counted: the first time a pooled connection runs
    // the answer's statements it prepares them and its server process loads the tables' catalog
    // entries, which a server that has been answering has done once per connection. Each round
    // takes the next writer of the pool's queue, so it takes as many rounds as there are
    // writers (PostgreSQL's ten by default, where one round warmed one of them) before every
    // connection a counted round may land on is warm.
    let mut warm_up = Duration::ZERO;
    for round in 0..warm_up_rounds + args.rounds {
        let question = ask(&asker, &base, &secret, &slug, round).await?;
        let barrier = Arc::new(Barrier::new(tokens.len()));
        let mut answering = Vec::with_capacity(tokens.len());
        for (client, token) in clients.iter().zip(&tokens) {
            let (client, token, barrier) = (client.clone(), token.clone(), barrier.clone());
            let url = format!("{base}/graphql");
            answering.push(tokio::spawn(async move {
                barrier.wait().await;
                let sent = Instant::now();
                let outcome = answer(&client, &url, &token, question).await;
                (sent.elapsed(), outcome)
            }));
        }
        let mut outcomes = Vec::with_capacity(tokens.len());
        for task in answering {
            let (latency, outcome) = task.await?;
            if round < warm_up_rounds {
                warm_up = warm_up.max(latency);
            } else {
                latencies.push(latency);
            }
            outcomes.push(outcome);
        }
        let won = outcomes.iter().filter(|o| **o == Outcome::Won).count();
        let conflicts = outcomes.iter().filter(|o| **o == Outcome::Conflict).count();
        if won != 1 || conflicts != tokens.len() - 1 {
            bad_rounds += 1;
            eprintln!(
                "round {round}: {won} won, {conflicts} conflicts, {} failed",
                tokens.len() - won - conflicts
            );
        }
    }
    latencies.sort_unstable();
    let ms = |d: Duration| d.as_secs_f64() * 1_000.0;
    let pick = |q: f64| {
        latencies
            .get(((latencies.len() - 1) as f64 * q).round() as usize)
            .map_or(0.0, |d| ms(*d))
    };
    let max = latencies.last().map_or(0.0, |d| ms(*d));
    println!(
        "contention {backend:<8} {} operators × {} rounds (after {warm_up_rounds} warm-up rounds, slowest {:.2} ms): one winner in {} of {} rounds; all responses p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        args.operators,
        args.rounds,
        ms(warm_up),
        warm_up_rounds + args.rounds - bad_rounds,
        warm_up_rounds + args.rounds,
        pick(0.5),
        pick(0.99),
        max
    );
    println!(
        "bench: {}",
        json!({"run": "contention", "store": backend, "operators": args.operators,
            "rounds": args.rounds, "warmUpRounds": warm_up_rounds, "badRounds": bad_rounds, "p50Ms": pick(0.5),
            "p99Ms": pick(0.99), "maxMs": max, "warmUpMaxMs": ms(warm_up)})
    );
    server.stop();
    anyhow::ensure!(
        bad_rounds == 0,
        "{bad_rounds} rounds did not have exactly one winner"
    );
    Ok(())
}

/// `askloop serve` in a child process on the same database, on a free port.
struct Apart {
    child: std::process::Child,
    base: String,
}

impl Apart {
    /// Stop the server (SIGTERM, so it finishes as it would in production) and wait for it.
    fn stop(&mut self) {
        let pid = self.child.id().to_string();
        let signalled = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .is_ok_and(|status| status.success());
        if !signalled {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

impl Drop for Apart {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn serve_apart(config: &Config, secret: &str) -> anyhow::Result<Apart> {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(askloop_load::askloop_binary()?)
        .arg("serve")
        .env("DATABASE_URL", &config.database_url)
        .env("CHOVY_SIGNING_SECRET", secret)
        .env("ASKLOOP_BIND", "127.0.0.1:0")
        // Every operator of this run connects from 127.0.0.1: one address, however many there are.
        .env("ASKLOOP_MAX_CONNECTIONS_PER_ADDRESS", "1000000")
        .env(
            "RUST_LOG",
            std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stdout from askloop serve"))?;
    let mut lines = BufReader::new(stdout).lines();
    let base = lines.by_ref().map_while(Result::ok).find_map(|line| {
        line.strip_prefix("askloop is serving on ")
            .map(str::to_owned)
    });
    // The rest of its output is drained, so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines.by_ref() {});
    match base {
        Some(base) => Ok(Apart { child, base }),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!("askloop serve did not start")
        }
    }
}

/// Post a signed question; its id.
async fn ask(
    client: &reqwest::Client,
    base: &str,
    secret: &str,
    slug: &str,
    round: usize,
) -> anyhow::Result<i64> {
    let body = serde_json::to_vec(&json!({"payload": {
        "nicheSlug": slug,
        "externalId": format!("contend-{round}"),
        "title": format!("Contended question {round}"),
        "question": "Which one is right?",
        "options": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}],
    }}))?;
    let response = client
        .post(format!("{base}/api/v1/internal/expert-questions"))
        .header("content-type", "application/json")
        .header(
            SIGNATURE_HEADER,
            sign(secret, &body, Utc::now().timestamp()),
        )
        .body(body)
        .send()
        .await?;
    anyhow::ensure!(
        response.status().as_u16() == 201,
        "intake answered {}",
        response.status()
    );
    let stored: Value = response.json().await?;
    stored["question"]["id"]
        .as_i64()
        .ok_or_else(|| anyhow::anyhow!("intake gave no question id: {stored}"))
}

async fn answer(client: &reqwest::Client, url: &str, token: &str, question: i64) -> Outcome {
    let sent = client
        .post(url)
        .bearer_auth(token)
        .json(&json!({"query": ANSWER, "variables": {"id": question.to_string()}}))
        .send()
        .await;
    let Ok(response) = sent else {
        return Outcome::Failed;
    };
    let Ok(body) = response.json::<Value>().await else {
        return Outcome::Failed;
    };
    if body["errors"].is_null() && !body["data"]["answerQuestion"].is_null() {
        Outcome::Won
    } else if body["errors"][0]["extensions"]["code"] == "CONFLICT" {
        Outcome::Conflict
    } else {
        Outcome::Failed
    }
}
