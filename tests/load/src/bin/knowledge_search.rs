//! `knowledge-search`: how fast an agent's knowledge search is answered as a niche's knowledge
//! grows. It fills one niche with N verified entries (`askloop_load::knowledge_seed`: bulk
//! INSERTs of made-up text with real text's word frequencies), then times R signed
//! `POST /api/v1/internal/knowledge/search` requests, one at a time, each a query of three to
//! eight words from the same vocabulary, and prints the database's plan for the search
//! statement. It starts its own askloop on a free port against DATABASE_URL.

use std::time::{Duration, Instant};

use chrono::Utc;
use clap::Parser;
use entity::knowledge_entries::KnowledgeStatus;
use entity::niches::NicheStatus;
use sea_orm::{ConnectionTrait, DbBackend, Statement};
use serde_json::json;

use askloop::config::Config;
use askloop::db::Db;
use askloop::domain::knowledge;
use askloop::domain::signing::{SIGNATURE_HEADER, SigningKeys};
use askloop::domain::slug::Slug;
use askloop::service::audit::Actor;
use askloop::service::people::accounts::new_token;
use askloop::service::people::niches::{NewNiche, create_niche};
use askloop::startup::{self, Application};
use askloop_load::knowledge_seed::{self, Rng, Vocabulary};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    askloop_load::main("knowledge-search", run)
}

/// Fill a niche with N knowledge entries and time an agent's search of them, printing the
/// database's plan for the search.
#[derive(Debug, Parser)]
#[command(name = "knowledge-search", version)]
struct KnowledgeSearchArgs {
    /// How many verified entries the niche holds.
    #[arg(long, short = 'n', default_value_t = 1_000_000)]
    entries: usize,
    /// How many searches to time.
    #[arg(long, short = 'r', default_value_t = 2_000)]
    requests: usize,
    /// How many results each search asks for (an agent's default is 5).
    #[arg(long, default_value_t = 5)]
    first: u64,
    /// Stop timing after a search that takes longer than this many seconds (it counts at this
    /// latency); the figures are then of the searches made so far.
    #[arg(long, default_value_t = 30)]
    give_up_after: u64,
}

/// Run the knowledge search benchmark.
async fn run(mut config: Config, args: KnowledgeSearchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.entries > 0, "--entries must be at least 1");
    anyhow::ensure!(args.requests > 0, "--requests must be at least 1");
    let secret = new_token("");
    config.signing = SigningKeys::new(Some(secret.clone()), None);
    config.bind = "127.0.0.1:0".parse()?;
    let db = startup::connect_and_migrate(&config).await?;
    let backend = match db.get_database_backend() {
        DbBackend::Postgres => "postgres",
        _ => "sqlite",
    };
    let run_id: String = new_token("").chars().take(8).collect();
    let slug = format!("kbench-{run_id}");
    let niche = create_niche(
        &db,
        NewNiche {
            slug: Slug::parse(&slug)?,
            name: "Knowledge benchmark".into(),
            status: NicheStatus::Open,
        },
        &Actor::Cli,
        Utc::now(),
    )
    .await?;
    let answerer = knowledge_seed::answerer(&db, &slug).await?;
    let vocabulary = Vocabulary::default();
    let mut rng = Rng::new(1);
    let filling =
        knowledge_seed::entries(&db, niche.id, answerer, args.entries, &vocabulary, &mut rng)
            .await?;
    println!(
        "filled {backend} with {} knowledge entries in {:.1} s",
        args.entries,
        filling.as_secs_f64()
    );

    let app = Application::build_with(config, db.clone()).await?;
    let url = format!(
        "http://{}/api/v1/internal/knowledge/search",
        app.local_addr()
    );
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until(async {
        let _ = stop_rx.await;
    }));
    let give_up = Duration::from_secs(args.give_up_after.max(1));
    let client = reqwest::Client::builder().timeout(give_up).build()?;
    let mut queries = Rng::new(2);
    let mut latencies = Vec::with_capacity(args.requests);
    let mut results = 0usize;
    let mut empty = 0usize;
    let mut gave_up = false;
    for _ in 0..args.requests {
        let body = serde_json::to_vec(&json!({
            "nicheSlug": slug,
            "query": vocabulary.query(&mut queries),
            "first": args.first,
        }))?;
        let header = askloop::domain::signing::sign(&secret, &body, Utc::now().timestamp());
        let started = Instant::now();
        let response = client
            .post(&url)
            .header("content-type", "application/json")
            .header(SIGNATURE_HEADER, header)
            .body(body)
            .send()
            .await;
        let response = match response {
            Err(err) if err.is_timeout() => {
                latencies.push(give_up);
                gave_up = true;
                break;
            }
            other => other?,
        };
        let status = response.status();
        let answer: serde_json::Value = response.json().await?;
        latencies.push(started.elapsed());
        anyhow::ensure!(status.as_u16() == 200, "search answered {status}: {answer}");
        let found = answer["results"].as_array().map_or(0, Vec::len);
        results += found;
        if found == 0 {
            empty += 1;
        }
    }
    latencies.sort_unstable();
    let pick =
        |q: f64| -> Duration { latencies[((latencies.len() as f64 - 1.0) * q).round() as usize] };
    let max = latencies.last().copied().unwrap_or_default();
    let requests = latencies.len();
    if gave_up {
        println!(
            "gave up after search {requests} of {}: it took over {} s",
            args.requests,
            give_up.as_secs()
        );
    }
    println!(
        "search   {backend:<8} entries={:<8} requests={:<5} p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms  ({} results, {} searches found none)",
        args.entries,
        requests,
        pick(0.5).as_secs_f64() * 1000.0,
        pick(0.99).as_secs_f64() * 1000.0,
        max.as_secs_f64() * 1000.0,
        results,
        empty,
    );
    let sample = vocabulary.query(&mut Rng::new(2));
    let (plan, matching) = explain_search(&db, niche.id, &sample, args.first).await?;
    println!("  query: {sample:?} ({matching} entries hold one of its words)");
    println!("  plan: {}", plan.replace('\n', "\n        "));
    let uses_index = match db.get_database_backend() {
        DbBackend::Postgres => {
            plan.contains("Bitmap Index Scan on knowledge_entries_search")
                || plan.contains("Index Scan using knowledge_entries_search")
        }
        _ => plan.contains("knowledge_search VIRTUAL TABLE INDEX"),
    };
    println!(
        "bench: {}",
        json!({"run": "knowledge-search", "store": backend, "entries": args.entries,
            "requests": requests, "gaveUp": gave_up, "first": args.first,
            "seedSeconds": filling.as_secs_f64(),
            "p50Ms": pick(0.5).as_secs_f64() * 1000.0, "p99Ms": pick(0.99).as_secs_f64() * 1000.0,
            "maxMs": max.as_secs_f64() * 1000.0,
            "meanResults": results as f64 / requests as f64, "emptySearches": empty,
            "sampleMatches": matching, "usesIndex": uses_index})
    );
    if gave_up {
        // The search given up on still runs in the server; it is not waited for.
        server.abort();
        return Ok(());
    }
    let _ = stop_tx.send(());
    server.await??;
    Ok(())
}

/// The database's plan for an agent's search of `text`, and how many entries match it: the
/// statement is the one `service::knowledge::search` runs (`search_statement`), explained.
async fn explain_search(
    db: &Db,
    niche_id: i64,
    text: &str,
    first: u64,
) -> anyhow::Result<(String, i64)> {
    let backend = db.get_database_backend();
    // The likes query as the service narrows it to the niche's rarer words.
    let (looking, matches) = askloop::service::knowledge::narrowed(
        db.reads(),
        niche_id,
        askloop::service::knowledge::Looking::Like(knowledge::content_words(text)),
    )
    .await?;
    let askloop::service::knowledge::Looking::Like(words) = &looking else {
        anyhow::bail!("a likes query stays one");
    };
    let words = words.clone();
    let statement = askloop::service::knowledge::search_statement(
        backend,
        niche_id,
        &looking,
        KnowledgeStatus::Current,
        knowledge::walks_newest_first(matches),
        (first, 0),
    );
    let (low, high) = knowledge::search_rowids(niche_id, KnowledgeStatus::Current);
    // How many of the niche's current entries match, counted by the index alone.
    let (explain, count, values) = match backend {
        DbBackend::Postgres => (
            format!("EXPLAIN {}", statement.sql),
            "SELECT COUNT(*) AS n FROM knowledge_entries \
             WHERE search @@ to_tsquery('askloop_search'::regconfig, $1) \
             AND niche_id = $2 AND status = 'current'",
            vec![knowledge::tsquery_any(&words).into(), niche_id.into()],
        ),
        _ => (
            format!("EXPLAIN QUERY PLAN {}", statement.sql),
            "SELECT COUNT(*) AS n FROM knowledge_search \
             WHERE knowledge_search MATCH ? AND rowid BETWEEN ? AND ?",
            vec![knowledge::fts5_any(&words).into(), low.into(), high.into()],
        ),
    };
    let rows = db
        .query_all_raw(Statement::from_sql_and_values(
            backend,
            explain,
            statement.values.map(|v| v.0).unwrap_or_default(),
        ))
        .await?;
    let mut plan = Vec::new();
    for row in rows {
        let line = match backend {
            DbBackend::Sqlite => row.try_get::<String>("", "detail"),
            _ => row.try_get::<String>("", "QUERY PLAN"),
        };
        plan.push(line.unwrap_or_default());
    }
    let matching = db
        .query_one_raw(Statement::from_sql_and_values(backend, count, values))
        .await?
        .map_or(Ok(0), |row| row.try_get::<i64>("", "n"))?;
    Ok((plan.join("\n"), matching))
}
