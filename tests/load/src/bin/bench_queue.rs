//! `bench-queue`: how fast the waiting-queue page is served as the queue grows. It fills
//! a niche with N waiting questions, then times GraphQL requests for the first page and for a
//! page deep in the queue, and prints the database's plan for the page query.

use std::time::{Duration, Instant};

use chrono::Utc;
use clap::Parser;
use entity::agent_questions::{self, QuestionStatus, Urgency};
use sea_orm::{ActiveValue::Set, DbBackend, EntityTrait, NotSet};
use serde_json::json;

use askloop::config::Config;
use askloop::service::questions::queue::{self, Cursor};
use askloop::startup::{self, Application};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    askloop_load::main("bench-queue", run)
}

/// Fill a niche with N waiting questions and time the waiting-queue page (first and deep),
/// printing the database's plan for it.
#[derive(Debug, Parser)]
#[command(name = "bench-queue", version)]
struct BenchQueueArgs {
    /// How many waiting questions the niche holds.
    #[arg(long, short = 'q', default_value_t = 1_000)]
    questions: usize,
    /// How many page requests to time, for each of the two pages.
    #[arg(long, short = 'n', default_value_t = 300)]
    requests: usize,
}

const PAGE: &str = "query($after: String) { niche(slug: $slug) { questions(first: 20, after: $after) { edges { cursor node { id title urgency status createdAt } } pageInfo { hasNextPage endCursor } } } }";

/// Run the queue benchmark.
async fn run(mut config: Config, args: BenchQueueArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.questions >= 40, "--questions must be at least 40");
    anyhow::ensure!(args.requests > 0, "--requests must be at least 1");
    config.bind = "127.0.0.1:0".parse()?;
    let db = startup::connect_and_migrate(&config).await?;
    let backend = match db.get_database_backend() {
        DbBackend::Postgres => "postgres",
        _ => "sqlite",
    };
    let seeded = askloop_load::seed::niche_with_operator(&db, "bench", "Queue benchmark").await?;
    let (niche, token) = (seeded.niche, seeded.token);
    let slug = niche.slug.clone();
    let now = Utc::now();

    let filling = Instant::now();
    let urgencies = [
        Urgency::High,
        Urgency::Normal,
        Urgency::Normal,
        Urgency::Low,
    ];
    let mut inserted = 0;
    while inserted < args.questions {
        let batch = (args.questions - inserted).min(500);
        let rows = (inserted..inserted + batch).map(|i| {
            let urgency = urgencies[i % urgencies.len()];
            agent_questions::ActiveModel {
                id: NotSet,
                niche_id: Set(niche.id),
                external_id: Set(Some(format!("bench-{i}"))),
                agent_id: Set(None),
                registered_agent_id: Set(None),
                title: Set(format!("Benchmark question {i}")),
                question: Set("Which of the two sources is right?".into()),
                context: Set(Some("Source A says 10%; source B says 15%.".into())),
                options: Set(json!([{"id": "a", "label": "A"}, {"id": "b", "label": "B"}])),
                urgency: Set(urgency),
                urgency_rank: Set(match urgency {
                    Urgency::High => 0,
                    Urgency::Normal => 1,
                    Urgency::Low => 2,
                }),
                related_resource_ids: Set(json!([])),
                status: Set(if i % 10 == 0 {
                    QuestionStatus::Answered
                } else {
                    QuestionStatus::Open
                }),
                bounty_minor: Set(0),
                research_round: Set(0),
                needs_context_round: Set(None),
                expires_at: Set(now + chrono::Duration::days(7)),
                created_at: Set(now),
                answered_at: Set(None),
                updated_at: Set(now),
                escalate_at: Set(None),
                escalation_step: Set(0),
                kind: Set(agent_questions::ExchangeKind::Question),
                deliverable: Set(None),
                answers_wanted: Set(1),
                agreement_bps: Set(6000),
                answers_in: Set(0),
                withdrawn_at: Set(None),
            }
        });
        let txn = db.begin_write().await?;
        agent_questions::Entity::insert_many(rows)
            .exec_without_returning(&txn)
            .await?;
        txn.commit().await?;
        inserted += batch;
    }
    println!(
        "filled {backend} with {} questions ({} waiting) in {:.1} s",
        args.questions,
        args.questions - args.questions.div_ceil(10),
        filling.elapsed().as_secs_f64()
    );
    if db.get_database_backend() == DbBackend::Postgres {
        use sea_orm::ConnectionTrait;
        let txn = db.begin_write().await?;
        txn.execute_unprepared("ANALYZE agent_questions").await?;
        txn.commit().await?;
    }

    let app = Application::build_with(config, db.clone()).await?;
    let url = format!("http://{}/graphql", app.local_addr());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until(async {
        let _ = stop_rx.await;
    }));
    let client = reqwest::Client::new();
    let query = PAGE.replace("$slug", &format!("\"{slug}\""));
    // A cursor in the middle of the queue: normal urgency, half way through the ids.
    let deep = Cursor {
        rank: 1,
        id: niche_first_id(&db, niche.id).await? + (args.questions / 2) as i64,
    };
    for (label, after) in [("first page", None), ("deep page", Some(deep))] {
        let mut latencies = Vec::with_capacity(args.requests);
        for _ in 0..args.requests {
            let started = Instant::now();
            let response = client
                .post(&url)
                .bearer_auth(&token)
                .json(
                    &json!({ "query": query, "variables": { "after": after.map(Cursor::encode) } }),
                )
                .send()
                .await?;
            let body: serde_json::Value = response.json().await?;
            latencies.push(started.elapsed());
            let edges = body["data"]["niche"]["questions"]["edges"]
                .as_array()
                .map_or(0, Vec::len);
            anyhow::ensure!(edges == 20, "expected a page of 20, got {body}");
        }
        latencies.sort_unstable();
        let pick = |q: f64| -> Duration {
            latencies[((latencies.len() as f64 - 1.0) * q).round() as usize]
        };
        println!(
            "{label:<10} {backend:<8} questions={:<7} requests={:<5} p50 {:>6.2} ms  p99 {:>6.2} ms",
            args.questions,
            args.requests,
            pick(0.5).as_secs_f64() * 1000.0,
            pick(0.99).as_secs_f64() * 1000.0,
        );
        let plan = queue::explain_waiting_page(&db, niche.id, after).await?;
        println!("  plan: {}", plan.replace('\n', "\n        "));
        println!(
            "bench: {}",
            json!({"run": if after.is_none() { "queue-first" } else { "queue-deep" },
                "store": backend, "questions": args.questions, "requests": args.requests,
                "p50Ms": pick(0.5).as_secs_f64() * 1000.0, "p99Ms": pick(0.99).as_secs_f64() * 1000.0,
                "usesIndex": plan.contains("agent_questions_waiting_idx")})
        );
    }
    let _ = stop_tx.send(());
    server.await??;
    Ok(())
}

async fn niche_first_id(db: &askloop::db::Db, niche_id: i64) -> anyhow::Result<i64> {
    use sea_orm::{ColumnTrait, QueryFilter, QueryOrder};
    Ok(agent_questions::Entity::find()
        .filter(agent_questions::Column::NicheId.eq(niche_id))
        .order_by_asc(agent_questions::Column::Id)
        .one(db)
        .await?
        .map_or(0, |q| q.id))
}
