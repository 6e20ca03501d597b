//! `answer-path`: whether an answer's cost grows with its author's history and its niche's size.
//! It fills one niche with `--entries` verified knowledge entries, `--history` of them answered
//! by one member (the veteran, whom the niche therefore trusts), and opens an empty niche with a
//! newcomer; then, one round after another, it asks a question in each and times the veteran's
//! answer and the newcomer's (`answerQuestion` over GraphQL, from request to response). It times
//! another agent's intake alone and again while the veteran answers without pause. Last, it
//! records every statement one trusted answer and one reviewed verification run, and prints the
//! database's plan for each, naming any that scans a table that grows. It starts its own askloop
//! on a free port against DATABASE_URL.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;
use clap::Parser;
use sea_orm::{ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, QueryFilter, Statement};
use serde_json::{Value, json};

use askloop::config::Config;
use askloop::db::Db;
use askloop::domain::signing::{SIGNATURE_HEADER, SigningKeys};
use askloop::service::people::accounts::new_token;
use askloop::startup::{self, Application};
use askloop_load::knowledge_seed::{self, Rng, Vocabulary};
use askloop_load::seed;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    askloop_load::main("answer-path", run)
}

/// Time a veteran's answers in a large niche against a newcomer's in an empty one, another
/// agent's intake beside them, and explain every statement of the answer path.
#[derive(Debug, Parser)]
#[command(name = "answer-path", version)]
struct AnswerPathArgs {
    /// How many verified entries the large niche holds in all.
    #[arg(long, default_value_t = 10_000)]
    entries: usize,
    /// How many of them the veteran answered (their judged history).
    #[arg(long, default_value_t = 3_000)]
    history: usize,
    /// How many answers of each person to time.
    #[arg(long, default_value_t = 200)]
    rounds: usize,
    /// How many intakes to time alone, and again beside the veteran's answers.
    #[arg(long, default_value_t = 400)]
    intakes: usize,
}

/// The tables whose rows grow with use: a plan that scans one of them whole grows with it.
const GROWING: &[&str] = &[
    "agent_questions",
    "agent_answers",
    "contribution_events",
    "contribution_scores",
    "knowledge_entries",
    "knowledge_terms",
    "knowledge_reuses",
    "allocations",
    "revenue_events",
    "budget_entries",
    "audit_log",
    "deliveries",
    "niche_members",
    "notifications",
    "users",
];

/// What the server is reached with.
struct Client {
    http: reqwest::Client,
    base: String,
    secret: String,
}

impl Client {
    /// Ask question `external_id` in niche `slug` as the default agent: its id.
    async fn ask(&self, slug: &str, external_id: &str) -> anyhow::Result<i64> {
        let body = serde_json::to_vec(&json!({"payload": {
            "nicheSlug": slug,
            "externalId": external_id,
            "title": "Which membrane for a low-slope roof?",
            "question": "Two suppliers disagree about the waste percentage for this roof.",
            "urgency": "normal",
            "options": [{"id": "a", "label": "Yes"}, {"id": "b", "label": "No"}],
        }}))?;
        let header = askloop::domain::signing::sign(&self.secret, &body, Utc::now().timestamp());
        let response = self
            .http
            .post(format!("{}/api/v1/internal/expert-questions", self.base))
            .header("content-type", "application/json")
            .header(SIGNATURE_HEADER, header)
            .body(body)
            .send()
            .await?;
        let status = response.status();
        let stored: Value = response.json().await?;
        anyhow::ensure!(status.as_u16() == 201, "intake answered {status}: {stored}");
        stored["question"]["id"]
            .as_i64()
            .ok_or_else(|| anyhow::anyhow!("intake returned no id: {stored}"))
    }

    /// Run `query` with `variables` as `token`; the response, which must carry no error.
    async fn graphql(&self, token: &str, query: &str, variables: Value) -> anyhow::Result<Value> {
        let response: Value = self
            .http
            .post(format!("{}/graphql", self.base))
            .bearer_auth(token)
            .json(&json!({"query": query, "variables": variables}))
            .send()
            .await?
            .json()
            .await?;
        anyhow::ensure!(response["errors"].is_null(), "GraphQL: {response}");
        Ok(response)
    }

    /// Answer `question` as `token`: how long it took.
    async fn answer(&self, token: &str, question: i64) -> anyhow::Result<Duration> {
        let started = Instant::now();
        self.graphql(
            token,
            "mutation($input: AnswerInput!) { answerQuestion(input: $input) { points } }",
            json!({"input": {"questionId": question.to_string(), "kind": "ANSWERED",
                "optionId": "a", "body": "Yes: the 10 % figure is for this slope.",
                "confidence": 90}}),
        )
        .await?;
        Ok(started.elapsed())
    }
}

/// `latencies` sorted: the value at quantile `q`, in milliseconds.
fn quantile(latencies: &mut [Duration], q: f64) -> f64 {
    latencies.sort_unstable();
    if latencies.is_empty() {
        return 0.0;
    }
    let at = ((latencies.len() as f64 - 1.0) * q).round() as usize;
    latencies[at].as_secs_f64() * 1000.0
}

/// Run the answer path benchmark.
async fn run(mut config: Config, args: AnswerPathArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.history <= args.entries,
        "--history cannot exceed --entries"
    );
    anyhow::ensure!(args.rounds > 0, "--rounds must be at least 1");
    anyhow::ensure!(args.intakes > 0, "--intakes must be at least 1");
    let secret = new_token("");
    config.signing = SigningKeys::new(Some(secret.clone()), None);
    config.bind = "127.0.0.1:0".parse()?;
    let mut db = startup::connect_and_migrate(&config).await?;
    let backend = match db.get_database_backend() {
        DbBackend::Postgres => "postgres",
        _ => "sqlite",
    };
    // Every statement run while `recording` is on, with its values.
    let recording = Arc::new(AtomicBool::new(false));
    let recorded: Arc<Mutex<Vec<Statement>>> = Arc::default();
    {
        let (recording, recorded) = (recording.clone(), recorded.clone());
        db.on_each_statement(move |statement| {
            if recording.load(Ordering::Relaxed)
                && let Ok(mut all) = recorded.lock()
            {
                all.push(statement.clone());
            }
        });
    }

    let large = seed::niche_with_operator(&db, "apath", "Answer path, large").await?;
    let veteran = entity::users::Entity::find()
        .filter(entity::users::Column::Handle.eq(large.niche.slug.as_str()))
        .one(&db)
        .await?
        .ok_or_else(|| anyhow::anyhow!("the veteran is missing"))?
        .id;
    let vocabulary = Vocabulary::default();
    let mut rng = Rng::new(1);
    let started = Instant::now();
    knowledge_seed::entries(
        &db,
        large.niche.id,
        veteran,
        args.history,
        &vocabulary,
        &mut rng,
    )
    .await?;
    let others = knowledge_seed::answerer(&db, &format!("{}-others", large.niche.slug)).await?;
    knowledge_seed::entries(
        &db,
        large.niche.id,
        others,
        args.entries - args.history,
        &vocabulary,
        &mut rng,
    )
    .await?;
    println!(
        "filled {backend}: {} entries, {} of them the veteran's, in {:.1} s",
        args.entries,
        args.history,
        started.elapsed().as_secs_f64()
    );
    if db.get_database_backend() == DbBackend::Postgres {
        // What autovacuum does soon after a bulk load, done now: without it the planner has no
        // statistics for the seeded rows and the visibility map is unset, so index-only scans
        // read the table too — a state a running niche is never in.
        let url = std::env::var("DATABASE_URL")?;
        let maintenance = sea_orm::Database::connect(url.as_str()).await?;
        maintenance
            .execute_unprepared("VACUUM (ANALYZE) contribution_events, agent_answers, agent_questions, knowledge_entries")
            .await?;
        maintenance.close().await?;
    }
    let empty = seed::niche_with_operator(&db, "apath-new", "Answer path, empty").await?;
    let intake = seed::niche_with_operator(&db, "apath-intake", "Answer path, intake").await?;
    let admin = seed::signed_in_admin(&db, &format!("{}-admin", large.niche.slug)).await?;

    let app = Application::build_with(config, db.clone()).await?;
    let client = Arc::new(Client {
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()?,
        base: format!("http://{}", app.local_addr()),
        secret,
    });
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until(async {
        let _ = stop_rx.await;
    }));
    let (large_slug, empty_slug, intake_slug) = (
        large.niche.slug.clone(),
        empty.niche.slug.clone(),
        intake.niche.slug.clone(),
    );

    // Warm up both paths, then alternate: the veteran's answer and the newcomer's.
    let mut veteran_times = Vec::with_capacity(args.rounds);
    let mut newcomer_times = Vec::with_capacity(args.rounds);
    for round in 0..args.rounds + 10 {
        let question = client.ask(&large_slug, &format!("v-{round}")).await?;
        let veteran_took = client.answer(&large.token, question).await?;
        let question = client.ask(&empty_slug, &format!("n-{round}")).await?;
        let newcomer_took = client.answer(&empty.token, question).await?;
        if round >= 10 {
            veteran_times.push(veteran_took);
            newcomer_times.push(newcomer_took);
        }
    }
    let veteran_p50 = quantile(&mut veteran_times, 0.5);
    let newcomer_p50 = quantile(&mut newcomer_times, 0.5);
    println!(
        "answer   {backend:<8} veteran ({} judged, niche of {}) p50 {veteran_p50:.2} ms p99 {:.2} ms; newcomer (empty niche) p50 {newcomer_p50:.2} ms p99 {:.2} ms: {:.2}x",
        args.history,
        args.entries,
        quantile(&mut veteran_times, 0.99),
        quantile(&mut newcomer_times, 0.99),
        veteran_p50 / newcomer_p50.max(f64::EPSILON),
    );

    // Another agent's intake, alone and beside the veteran answering without pause.
    let mut alone = Vec::with_capacity(args.intakes);
    for i in 0..args.intakes {
        let started = Instant::now();
        client.ask(&intake_slug, &format!("alone-{i}")).await?;
        alone.push(started.elapsed());
    }
    let answering = Arc::new(AtomicBool::new(true));
    let busy = {
        let (client, answering, slug, token) = (
            client.clone(),
            answering.clone(),
            large_slug.clone(),
            large.token.clone(),
        );
        tokio::spawn(async move {
            let mut answered = 0usize;
            while answering.load(Ordering::Relaxed) {
                let question = client.ask(&slug, &format!("busy-{answered}")).await?;
                client.answer(&token, question).await?;
                answered += 1;
            }
            anyhow::Ok(answered)
        })
    };
    let mut beside = Vec::with_capacity(args.intakes);
    for i in 0..args.intakes {
        let started = Instant::now();
        client.ask(&intake_slug, &format!("beside-{i}")).await?;
        beside.push(started.elapsed());
    }
    answering.store(false, Ordering::Relaxed);
    let answered_beside = busy.await??;
    let (alone_p99, beside_p99) = (quantile(&mut alone, 0.99), quantile(&mut beside, 0.99));
    println!(
        "intake   {backend:<8} p50 {:.2} ms p99 {alone_p99:.2} ms alone; p50 {:.2} ms p99 {beside_p99:.2} ms beside the veteran's {answered_beside} answers",
        quantile(&mut alone, 0.5),
        quantile(&mut beside, 0.5),
    );

    // Every statement of one trusted answer, and of one answer verified by review.
    let trusted = client.ask(&large_slug, "recorded-trusted").await?;
    let pending = client.ask(&empty_slug, "recorded-pending").await?;
    recording.store(true, Ordering::Relaxed);
    client.answer(&large.token, trusted).await?;
    client.answer(&empty.token, pending).await?;
    let contribution = entity::agent_answers::Entity::find()
        .filter(entity::agent_answers::Column::QuestionId.eq(pending))
        .one(&db)
        .await?
        .and_then(|a| a.contribution_event_id)
        .ok_or_else(|| anyhow::anyhow!("the pending answer has no contribution"))?;
    client
        .graphql(
            &admin,
            "mutation($id: ID!) { verifyContribution(id: $id) { status } }",
            json!({"id": contribution.to_string()}),
        )
        .await?;
    recording.store(false, Ordering::Relaxed);
    let statements = recorded.lock().map(|s| s.clone()).unwrap_or_default();
    let (explained, growing) = explain_all(&db, &statements).await?;
    println!(
        "plans    {backend:<8} {explained} distinct statements explained; {} scan a growing table whole",
        growing.len()
    );
    for (sql, plan) in &growing {
        println!(
            "  scans: {sql}\n    plan: {}",
            plan.replace('\n', "\n          ")
        );
    }
    println!(
        "bench: {}",
        json!({"run": "answer-path", "store": backend, "entries": args.entries,
            "history": args.history, "rounds": args.rounds,
            "veteranP50Ms": veteran_p50, "newcomerP50Ms": newcomer_p50,
            "ratio": veteran_p50 / newcomer_p50.max(f64::EPSILON),
            "intakeAloneP99Ms": alone_p99, "intakeBesideP99Ms": beside_p99,
            "statementsExplained": explained, "growingScans": growing.len()})
    );
    let _ = stop_tx.send(());
    server.await??;
    Ok(())
}

/// How many rows a table must hold before PostgreSQL's scanning it whole counts against a plan.
const LARGE: i64 = 5_000;

/// How many rows `table` holds.
async fn rows_in(db: &Db, table: &str) -> anyhow::Result<i64> {
    let backend = db.get_database_backend();
    let row = db
        .reads()
        .query_one_raw(Statement::from_string(
            backend,
            format!("SELECT COUNT(*) AS n FROM {table}"),
        ))
        .await?;
    Ok(row.map_or(Ok(0), |row| row.try_get::<i64>("", "n"))?)
}

/// Explain each distinct statement of `statements` (with the values it first ran with): how
/// many were explained, and the ones whose plan scans a [`GROWING`] table whole, with the plan.
async fn explain_all(
    db: &Db,
    statements: &[Statement],
) -> anyhow::Result<(usize, Vec<(String, String)>)> {
    let backend = db.get_database_backend();
    let mut seen = HashSet::new();
    let mut growing = Vec::new();
    for statement in statements {
        let sql = statement.sql.trim();
        let head = sql
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase();
        if !matches!(
            head.as_str(),
            "SELECT" | "INSERT" | "UPDATE" | "DELETE" | "WITH"
        ) || !seen.insert(sql.to_owned())
        {
            continue;
        }
        // SQLite's plan for an INSERT lists the scans its foreign keys would make of the tables
        // that reference the new row, which it runs only while a deferred foreign-key violation
        // is outstanding (never on these paths): they are not the statement's cost.
        if backend == DbBackend::Sqlite && head == "INSERT" {
            continue;
        }
        let explain = match backend {
            DbBackend::Postgres => format!("EXPLAIN {sql}"),
            _ => format!("EXPLAIN QUERY PLAN {sql}"),
        };
        let values = statement
            .values
            .as_ref()
            .map(|v| v.0.clone())
            .unwrap_or_default();
        let rows = db
            .reads()
            .query_all_raw(Statement::from_sql_and_values(backend, explain, values))
            .await?;
        let plan: Vec<String> = rows
            .iter()
            .map(|row| match backend {
                DbBackend::Sqlite => row.try_get::<String>("", "detail").unwrap_or_default(),
                _ => row.try_get::<String>("", "QUERY PLAN").unwrap_or_default(),
            })
            .collect();
        let mut scans_whole = false;
        let mut scanned_large = false;
        for table in GROWING {
            let scanned = plan.iter().any(|line| {
                let line = line.trim();
                match backend {
                    DbBackend::Postgres => line.contains(&format!("Seq Scan on {table} ")),
                    _ => {
                        line == format!("SCAN {table}")
                            || line.starts_with(&format!("SCAN {table} "))
                    }
                }
            });
            // PostgreSQL's planner rightly scans a table of a few hundred rows rather than
            // read its index: that is a table still small here (the live feed's audit rows,
            // say), not a plan that grows with it. A scan counts once the table is large.
            scanned_large |=
                scanned && (backend == DbBackend::Sqlite || rows_in(db, table).await? >= LARGE);
        }
        scans_whole |= scanned_large;
        if scans_whole {
            growing.push((sql.to_owned(), plan.join("\n")));
        }
    }
    Ok((seen.len(), growing))
}
