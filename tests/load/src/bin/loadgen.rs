//! `loadgen`: post N signed questions with concurrency C, report throughput and p50/p99,
//! and the same number of plain inserts through the database driver at the same concurrency, one
//! row per transaction, twice: into the live `agent_questions` table with all its indexes
//! (`driver`), and into a bare table of the same columns with no index at all (`bare`, the floor
//! under any web layer). With `--rate R` it runs open loop instead: request i is sent at start + i/R whatever
//! the earlier ones are doing, and its latency counts from that scheduled time, so a stall shows
//! in every request that waited behind it. With `--similar` every question asks for similar
//! knowledge (`"similar": true`), its title and text drawn from the vocabulary of
//! `askloop_load::knowledge_seed`, and the niche first holds `--entries` verified entries of the
//! same words, so each intake also searches them. askloop runs in a process of its own (the
//! release `askloop` binary beside this one, `askloop serve` on a free port) against
//! DATABASE_URL, so the load and the server share neither a runtime nor an allocator.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use chrono::Utc;
use clap::Parser;
use entity::niches::NicheStatus;
use sea_orm::{DatabaseConnection, DbBackend};
use serde_json::json;

use askloop::config::Config;
use askloop::domain::signing::SIGNATURE_HEADER;
use askloop::domain::slug::Slug;
use askloop::service::audit::Actor;
use askloop::service::people::accounts::new_token;
use askloop::service::people::niches::{NewNiche, create_niche};
use askloop::startup;
use askloop_load::knowledge_seed::{self, Rng, Vocabulary};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    askloop_load::main("loadgen", run)
}

/// Post N signed questions with concurrency C and report throughput and latency, next to
/// the same number of plain inserts through the database driver.
#[derive(Debug, Parser)]
#[command(name = "loadgen", version)]
struct LoadgenArgs {
    /// How many questions to post.
    #[arg(long, short = 'n', default_value_t = 2_000)]
    requests: usize,
    /// How many requests in flight at once.
    #[arg(long, short = 'c', default_value_t = 32)]
    concurrency: usize,
    /// Skip the plain driver inserts (both floors).
    #[arg(long)]
    no_baseline: bool,
    /// Open loop: offer this many requests per second (on a schedule) instead of keeping C in
    /// flight; latency counts from each request's scheduled time.
    #[arg(long)]
    rate: Option<u32>,
    /// Ask for similar knowledge with every question (`"similar": true`), the niche first holding
    /// `--entries` verified entries whose words the questions share.
    #[arg(long)]
    similar: bool,
    /// With `--similar`: how many verified entries the niche holds before the run.
    #[arg(long, default_value_t = 10_000)]
    entries: usize,
    /// Pad each question's context to this many bytes (it is 38 bytes otherwise): questions as
    /// large as real agents' research makes them.
    #[arg(long)]
    context_bytes: Option<usize>,
}

/// Every question's context: a short one, or padded to `--context-bytes`.
fn question_context(args: &LoadgenArgs) -> Arc<str> {
    const SHORT: &str = "Source A says 10%; source B says 15%.";
    match args.context_bytes {
        Some(bytes) if bytes > SHORT.len() => {
            let mut context = String::with_capacity(bytes);
            context.push_str(SHORT);
            while context.len() < bytes {
                context.push_str(" More research.");
            }
            context.truncate(bytes);
            context.into()
        }
        _ => SHORT.into(),
    }
}

/// Latency figures for one run.
struct Report {
    label: &'static str,
    count: usize,
    failures: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
    /// With `--similar`: how many answers held at least one similar entry.
    with_similar: usize,
}

impl Report {
    /// Print the figures; `concurrency` is the requests kept in flight, or for the open loop the
    /// rate offered per second.
    fn print(&mut self, backend: &str, concurrency: usize, similar: Option<usize>) {
        self.latencies.sort_unstable();
        let pick = |q: f64| {
            let index = ((self.latencies.len() as f64 - 1.0) * q).round() as usize;
            self.latencies
                .get(index)
                .map_or(0.0, |d| d.as_secs_f64() * 1_000.0)
        };
        let load = if self.label == "open" {
            format!("offered {concurrency}/s")
        } else {
            format!("c={concurrency}")
        };
        println!(
            "{:<7} {:<8} n={:<6} {:<14} {:>9.1} per s   p50 {:>7.2} ms   p99 {:>7.2} ms   failures {}",
            self.label,
            backend,
            self.count,
            load,
            self.count as f64 / self.elapsed.as_secs_f64(),
            pick(0.50),
            pick(0.99),
            self.failures,
        );
        let mut figures = json!({"run": self.label, "store": backend, "count": self.count,
            "concurrency": concurrency, "perSecond": self.count as f64 / self.elapsed.as_secs_f64(),
            "p50Ms": pick(0.50), "p99Ms": pick(0.99),
            "maxMs": self.latencies.last().map_or(0.0, |d| d.as_secs_f64() * 1_000.0),
            "failures": self.failures});
        if let Some(entries) = similar {
            println!(
                "        similar: true over {entries} entries; {} of {} answers held a similar entry",
                self.with_similar, self.count
            );
            figures["similar"] = json!(true);
            figures["entries"] = json!(entries);
            figures["withSimilar"] = json!(self.with_similar);
        }
        println!("bench: {figures}");
    }
}

/// Run the load generator.
async fn run(config: Config, args: LoadgenArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.requests > 0, "--requests must be at least 1");
    anyhow::ensure!(args.concurrency > 0, "--concurrency must be at least 1");
    let secret = new_token("");
    let db = startup::connect_and_migrate(&config).await?;
    // The baseline writes straight through the driver on a pool of its own, as large as the
    // server's (askloop's readers refuse to write, and its writer is one connection).
    let driver_pool =
        askloop::db::serving_connections(&config.database_url, config.db_max_connections);
    let driver_db = sea_orm::Database::connect(
        sea_orm::ConnectOptions::new(config.database_url.clone())
            .max_connections(driver_pool)
            .sqlx_logging(false)
            .to_owned(),
    )
    .await?;
    let backend = match db.get_database_backend() {
        DbBackend::Postgres => "postgres",
        DbBackend::Sqlite => "sqlite",
        _ => "other",
    };
    let run_id = new_token("").chars().take(8).collect::<String>();
    let slug = Slug::parse(&format!("loadgen-{run_id}"))?;
    let niche = create_niche(
        &db,
        NewNiche {
            slug: slug.clone(),
            name: "Load generator".into(),
            status: NicheStatus::Open,
        },
        &Actor::Cli,
        Utc::now(),
    )
    .await?;
    let vocabulary = if args.similar {
        let answerer = knowledge_seed::answerer(&db, slug.as_str()).await?;
        let vocabulary = Vocabulary::default();
        let took = knowledge_seed::entries(
            &db,
            niche.id,
            answerer,
            args.entries,
            &vocabulary,
            &mut Rng::new(1),
        )
        .await?;
        println!(
            "seeded {backend} with {} knowledge entries in {:.1} s",
            args.entries,
            took.as_secs_f64()
        );
        Some(Arc::new(vocabulary))
    } else {
        None
    };
    let similar = args.similar.then_some(args.entries);

    let server = askloop_load::Server::start(&config.database_url, &secret, &[])?;
    let url = format!("{}/api/v1/internal/expert-questions", server.base);

    if let Some(rate) = args.rate {
        let mut open = offer_questions(
            &url,
            &secret,
            slug.as_str(),
            &run_id,
            &args,
            rate,
            vocabulary.clone(),
        )
        .await?;
        open.print(backend, rate as usize, similar);
        return Ok(());
    }
    let mut intake = post_questions(
        &url,
        &secret,
        slug.as_str(),
        &run_id,
        &args,
        vocabulary.clone(),
    )
    .await?;
    intake.print(backend, args.concurrency, similar);
    // The floors are measured with askloop stopped, so the driver has the machine to itself.
    drop(server);
    if !args.no_baseline {
        let mut driver = driver_inserts(&driver_db, &run_id, &args, Floor::Live).await?;
        driver.print(backend, args.concurrency, None);
        create_bare_table(&driver_db).await?;
        let mut bare = driver_inserts(&driver_db, &run_id, &args, Floor::Bare).await?;
        bare.print(backend, args.concurrency, None);
    }
    Ok(())
}

async fn post_questions(
    url: &str,
    secret: &str,
    slug: &str,
    run_id: &str,
    args: &LoadgenArgs,
    vocabulary: Option<Arc<Vocabulary>>,
) -> anyhow::Result<Report> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency)
        .build()?;
    let next = Arc::new(AtomicUsize::new(0));
    let context = question_context(args);
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..args.concurrency {
        let (client, next, url, context) = (
            client.clone(),
            next.clone(),
            url.to_owned(),
            context.clone(),
        );
        let (secret, slug, run_id, total, vocabulary) = (
            secret.to_owned(),
            slug.to_owned(),
            run_id.to_owned(),
            args.requests,
            vocabulary.clone(),
        );
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut failures = 0usize;
            let mut with_similar = 0usize;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let sent = Instant::now();
                let stored = post_one(
                    &client,
                    &url,
                    &secret,
                    (&slug, &run_id, &context),
                    i,
                    vocabulary.as_deref(),
                )
                .await;
                latencies.push(sent.elapsed());
                match stored {
                    None => failures += 1,
                    Some(similar) => with_similar += usize::from(similar > 0),
                }
            }
            (latencies, failures, with_similar)
        }));
    }
    let mut report = Report {
        label: "intake",
        count: args.requests,
        failures: 0,
        elapsed: Duration::ZERO,
        latencies: Vec::with_capacity(args.requests),
        with_similar: 0,
    };
    for worker in workers {
        let (latencies, failures, with_similar) = worker.await?;
        report.latencies.extend(latencies);
        report.failures += failures;
        report.with_similar += with_similar;
    }
    report.elapsed = started.elapsed();
    Ok(report)
}

/// Post question `i` of the run to niche `slug`, with `context`, signed: `None` unless it was stored (201), else
/// how many similar entries the answer held. With a vocabulary the question's title and text are
/// drawn from it (the same for the same `i`) and it asks for similar entries.
async fn post_one(
    client: &reqwest::Client,
    url: &str,
    secret: &str,
    (slug, run_id, context): (&str, &str, &str),
    i: usize,
    vocabulary: Option<&Vocabulary>,
) -> Option<usize> {
    let mut payload = json!({
        "nicheSlug": slug,
        "externalId": format!("{run_id}-{i}"),
        "title": format!("Load question {i}"),
        "question": "Which of the two sources is right?",
        "context": context,
        "urgency": "normal",
        "options": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}],
    });
    if let Some(vocabulary) = vocabulary {
        let mut rng = Rng::new(0x5EED_0000 + i as u64);
        payload["title"] = json!(vocabulary.title(&mut rng));
        payload["question"] = json!(vocabulary.question(&mut rng));
        payload["similar"] = json!(true);
    }
    let body = serde_json::to_vec(&json!({ "payload": payload })).unwrap_or_default();
    let header = askloop::domain::signing::sign(secret, &body, Utc::now().timestamp());
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header(SIGNATURE_HEADER, header)
        .body(body)
        .send()
        .await;
    let response = response.ok().filter(|r| r.status().as_u16() == 201)?;
    if vocabulary.is_none() {
        return Some(0);
    }
    let answer: serde_json::Value = response.json().await.ok()?;
    Some(answer["similar"].as_array().map_or(0, Vec::len))
}

/// Open loop: request i is sent at `start + i / rate`, each in its own task, and its latency
/// counts from that scheduled time.
async fn offer_questions(
    url: &str,
    secret: &str,
    slug: &str,
    run_id: &str,
    args: &LoadgenArgs,
    rate: u32,
    vocabulary: Option<Arc<Vocabulary>>,
) -> anyhow::Result<Report> {
    anyhow::ensure!(rate > 0, "--rate must be at least 1");
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()?;
    let period = Duration::from_secs_f64(1.0 / f64::from(rate));
    let context = question_context(args);
    let started = tokio::time::Instant::now();
    let mut sent = tokio::task::JoinSet::new();
    for i in 0..args.requests {
        let scheduled = started + period.mul_f64(i as f64);
        tokio::time::sleep_until(scheduled).await;
        let (client, url, secret, slug, run_id, vocabulary, context) = (
            client.clone(),
            url.to_owned(),
            secret.to_owned(),
            slug.to_owned(),
            run_id.to_owned(),
            vocabulary.clone(),
            context.clone(),
        );
        sent.spawn(async move {
            let stored = post_one(
                &client,
                &url,
                &secret,
                (&slug, &run_id, &context),
                i,
                vocabulary.as_deref(),
            )
            .await;
            (scheduled.elapsed(), stored)
        });
    }
    let mut report = Report {
        label: "open",
        count: args.requests,
        failures: 0,
        elapsed: Duration::ZERO,
        latencies: Vec::with_capacity(args.requests),
        with_similar: 0,
    };
    while let Some(done) = sent.join_next().await {
        let (latency, stored) = done?;
        report.latencies.push(latency);
        match stored {
            None => report.failures += 1,
            Some(similar) => report.with_similar += usize::from(similar > 0),
        }
    }
    report.elapsed = started.elapsed();
    Ok(report)
}

/// The same rows inserted with plain parameterised INSERTs straight through sqlx.
async fn driver_inserts(
    db: &DatabaseConnection,
    run_id: &str,
    args: &LoadgenArgs,
    floor: Floor,
) -> anyhow::Result<Report> {
    let niche_id: i64 = {
        use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
        entity::niches::Entity::find()
            .filter(entity::niches::Column::Slug.eq(format!("loadgen-{run_id}")))
            .one(db)
            .await?
            .map(|n| n.id)
            .ok_or_else(|| anyhow::anyhow!("the load generator's niche vanished"))?
    };
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..args.concurrency {
        let (db, next, run_id, total) =
            (db.clone(), next.clone(), run_id.to_owned(), args.requests);
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut failures = 0usize;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let sent = Instant::now();
                let ok = plain_insert(&db, floor, niche_id, &format!("{run_id}-driver-{i}")).await;
                latencies.push(sent.elapsed());
                if ok.is_err() {
                    failures += 1;
                }
            }
            (latencies, failures)
        }));
    }
    let mut report = Report {
        label: match floor {
            Floor::Live => "driver",
            Floor::Bare => "bare",
        },
        count: args.requests,
        failures: 0,
        elapsed: Duration::ZERO,
        latencies: Vec::with_capacity(args.requests),
        with_similar: 0,
    };
    for worker in workers {
        let (latencies, failures) = worker.await?;
        report.latencies.extend(latencies);
        report.failures += failures;
    }
    report.elapsed = started.elapsed();
    Ok(report)
}

/// Which table the plain inserts go to.
#[derive(Debug, Clone, Copy)]
enum Floor {
    /// `agent_questions`, with every index askloop keeps on it.
    Live,
    /// [`BARE_TABLE`]: the same columns, no index, no key, no constraint.
    Bare,
}

/// The table of the bare floor.
const BARE_TABLE: &str = "loadgen_bare_floor";

/// Create (afresh) the bare floor's table: `agent_questions`' columns as the plain inserts fill
/// them, and nothing else — no primary key, no index, no constraint.
async fn create_bare_table(db: &DatabaseConnection) -> anyhow::Result<()> {
    let json = match db.get_database_backend() {
        DbBackend::Postgres => "json",
        _ => "text",
    };
    let timestamp = match db.get_database_backend() {
        DbBackend::Postgres => "timestamptz",
        _ => "text",
    };
    let statements = [
        format!("DROP TABLE IF EXISTS {BARE_TABLE}"),
        format!(
            "CREATE TABLE {BARE_TABLE} (niche_id bigint, external_id text, title text, \
             question text, context text, options {json}, urgency text, related_resource_ids \
             {json}, status text, bounty_minor bigint, expires_at {timestamp}, created_at \
             {timestamp}, updated_at {timestamp})"
        ),
    ];
    for sql in statements {
        match db.get_database_backend() {
            DbBackend::Postgres => {
                sea_orm::sqlx::query(sea_orm::sqlx::AssertSqlSafe(sql))
                    .execute(db.get_postgres_connection_pool())
                    .await?;
            }
            _ => {
                sea_orm::sqlx::query(sea_orm::sqlx::AssertSqlSafe(sql))
                    .execute(db.get_sqlite_connection_pool())
                    .await?;
            }
        }
    }
    Ok(())
}

async fn plain_insert(
    db: &DatabaseConnection,
    floor: Floor,
    niche_id: i64,
    external_id: &str,
) -> anyhow::Result<()> {
    let table = match floor {
        Floor::Live => "agent_questions",
        Floor::Bare => BARE_TABLE,
    };
    let now = Utc::now();
    let expires = now + chrono::Duration::days(7);
    let options = r#"[{"id":"a","label":"A"},{"id":"b","label":"B"}]"#;
    match db.get_database_backend() {
        DbBackend::Postgres => {
            sea_orm::sqlx::query(sea_orm::sqlx::AssertSqlSafe(format!(
                "INSERT INTO {table} (niche_id, external_id, title, question, context, options, \
                 urgency, related_resource_ids, status, bounty_minor, expires_at, created_at, updated_at) \
                 VALUES ($1, $2, 'Load question', 'Which?', 'Source A', $3::json, 'normal', '[]'::json, 'open', 0, $4, $5, $5)",
            )))
            .bind(niche_id)
            .bind(external_id)
            .bind(options)
            .bind(expires)
            .bind(now)
            .execute(db.get_postgres_connection_pool())
            .await?;
        }
        _ => {
            sea_orm::sqlx::query(sea_orm::sqlx::AssertSqlSafe(format!(
                "INSERT INTO {table} (niche_id, external_id, title, question, context, options, \
                 urgency, related_resource_ids, status, bounty_minor, expires_at, created_at, updated_at) \
                 VALUES (?, ?, 'Load question', 'Which?', 'Source A', ?, 'normal', '[]', 'open', 0, ?, ?, ?)",
            )))
            .bind(niche_id)
            .bind(external_id)
            .bind(options)
            .bind(expires)
            .bind(now)
            .bind(now)
            .execute(db.get_sqlite_connection_pool())
            .await?;
        }
    }
    Ok(())
}
