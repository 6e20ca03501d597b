//! Intake commits in groups: a process killed after writing a batch and before its
//! commit has acknowledged none of it, the agents' retries then store each question once; and
//! every intake acknowledged before a `kill -9` is in the database afterwards.

use std::collections::HashSet;
use std::process::Command;
use std::sync::Arc;

use askloop::db::Db;
use askloop::domain::signing::{SIGNATURE_HEADER, sign};
use askloop_tests::fixtures::{open_niche, question_body};
use askloop_tests::served::Served;
use askloop_tests::{Backend, SECRET, TestDatabase, test_config};
use entity::agent_questions;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use tokio::sync::Mutex;

/// `askloop serve` on `url`; with `abort_before_commit`, it aborts after writing its first
/// intake batch and before committing it.
fn serve(url: &str, abort_before_commit: bool) -> Served {
    let env: &[(&str, &str)] = if abort_before_commit {
        &[("ASKLOOP_TEST_ABORT_BEFORE_COMMIT", "1")]
    } else {
        &[]
    };
    Served::start(url, env)
}

/// A client whose requests give up after 30 s: a request to an askloop that died under it
/// gets no answer (`None`, never acknowledged) instead of waiting for ever.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .expect("a client")
}

/// Ask `external_id` in `games`: the status, or `None` when no answer came back.
async fn ask(client: &reqwest::Client, base: &str, external_id: &str) -> Option<u16> {
    let body = question_body("games", external_id).to_string();
    client
        .post(format!("{base}/api/v1/internal/expert-questions"))
        .header("content-type", "application/json")
        .header(
            SIGNATURE_HEADER,
            sign(SECRET, body.as_bytes(), chrono::Utc::now().timestamp()),
        )
        .body(body)
        .send()
        .await
        .ok()
        .map(|response| response.status().as_u16())
}

async fn stored(db: &Db, prefix: &str) -> HashSet<String> {
    agent_questions::Entity::find()
        .filter(agent_questions::Column::ExternalId.starts_with(prefix))
        .all(db)
        .await
        .expect("questions read")
        .into_iter()
        .filter_map(|q| q.external_id)
        .collect()
}

async fn a_database_with_games(backend: Backend) -> Option<(TestDatabase, Db)> {
    // PostgreSQL only when TEST_DATABASE_URL names a server (as under `cargo xtask test`).
    let database = TestDatabase::create(backend).await?;
    askloop::startup::connect_and_migrate(&test_config(&database.url))
        .await
        .expect("migrated")
        .close()
        .await
        .expect("closed");
    // The harness's own handle: it sets the niche up with a plain insert.
    let db = askloop::db::connect_for_tests(&database.url, None)
        .await
        .expect("connected");
    open_niche(&db, "games").await;
    Some((database, db))
}

async fn a_batch_killed_before_its_commit_acknowledged_nothing(backend: Backend) {
    let Some((database, db)) = a_database_with_games(backend).await else {
        return;
    };
    let mut aborting = serve(&database.url, true);
    let base = aborting.base.clone();
    let client = client();
    let ids: Vec<String> = (0..40).map(|n| format!("gc-{n}")).collect();
    let answers = futures::future::join_all(ids.iter().map(|id| ask(&client, &base, id))).await;
    let acknowledged: Vec<_> = answers
        .iter()
        .zip(&ids)
        .filter(|(status, _)| status.is_some_and(|s| (200..300).contains(&s)))
        .collect();
    assert!(
        acknowledged.is_empty(),
        "acknowledged before the commit: {acknowledged:?}"
    );
    let exit = tokio::task::spawn_blocking(move || aborting.child.wait())
        .await
        .expect("joined")
        .expect("askloop exits");
    assert!(!exit.success(), "askloop aborted before the commit: {exit}");
    assert!(
        stored(&db, "gc-").await.is_empty(),
        "a batch that never committed left rows behind"
    );

    // The agents retry against a healthy askloop: each question is stored exactly once.
    let healthy = serve(&database.url, false);
    let base = healthy.base.clone();
    let answers = futures::future::join_all(ids.iter().map(|id| ask(&client, &base, id))).await;
    assert!(answers.iter().all(|s| *s == Some(201)), "{answers:?}");
    let again = futures::future::join_all(ids.iter().map(|id| ask(&client, &base, id))).await;
    assert!(again.iter().all(|s| *s == Some(200)), "{again:?}");
    assert_eq!(stored(&db, "gc-").await.len(), ids.len());
}

async fn every_intake_acknowledged_before_a_kill_9_is_in_the_database(backend: Backend) {
    let Some((database, db)) = a_database_with_games(backend).await else {
        return;
    };
    let mut served = serve(&database.url, false);
    let base = served.base.clone();
    let client = client();
    let acknowledged = Arc::new(Mutex::new(HashSet::new()));
    // 32 agents asking as fast as they are answered, until askloop is killed under them.
    let agents: Vec<_> = (0..32)
        .map(|agent| {
            let (client, base, acknowledged) = (client.clone(), base.clone(), acknowledged.clone());
            tokio::spawn(async move {
                for n in 0.. {
                    let id = format!("kill-{agent}-{n}");
                    match ask(&client, &base, &id).await {
                        Some(201) => {
                            acknowledged.lock().await.insert(id);
                        }
                        Some(status) => panic!("intake answered {status}"),
                        None => return,
                    }
                }
            })
        })
        .collect();
    askloop_tests::wait::until("300 intakes acknowledged", || async {
        acknowledged.lock().await.len() >= 300
    })
    .await;
    let killed = Command::new("kill")
        .args(["-KILL", &served.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let _ = served.child.wait();
    for agent in agents {
        agent.await.expect("an agent ends when askloop is gone");
    }
    let acknowledged = acknowledged.lock().await.clone();
    let stored = stored(&db, "kill-").await;
    let lost: Vec<_> = acknowledged.difference(&stored).collect();
    assert!(lost.is_empty(), "acknowledged, then lost: {lost:?}");
    // What was stored and never acknowledged (batches committed as the process died) is an
    // agent's retry away from its 200; at most one per agent.
    assert!(
        stored.len() - acknowledged.len() <= 32,
        "{} stored, {} acknowledged",
        stored.len(),
        acknowledged.len()
    );
    assert!(
        agent_questions::Entity::find()
            .count(&db)
            .await
            .expect("counted")
            >= 300,
        "the run stored what it acknowledged"
    );
}

macro_rules! on_sqlite_and_postgres {
    ($($name:ident),+ $(,)?) => {
        mod each_store {
            use super::*;
            $(
                mod $name {
                    use super::*;

                    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                    async fn sqlite() {
                        super::super::$name(Backend::Sqlite).await;
                    }

                    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                    async fn postgres() {
                        super::super::$name(Backend::Postgres).await;
                    }
                }
            )+
        }
    };
}

/// Intakes written together each get the answer they would get alone: the niche they name is
/// read and checked inside the batch's transaction (no such niche, an archived one), by slug or
/// by id, and of several copies of one external id in the same batch exactly one is stored.
async fn every_intake_of_a_mixed_batch_gets_its_own_answer(backend: Backend) {
    use askloop::domain::intake::parse_new_question;
    use askloop::error::{Conflict, ServiceError};
    use askloop::service::agents::registry::Asker;
    use askloop::service::questions::intake::receive_question;
    use askloop_tests::fixtures::niche;
    use entity::niches::NicheStatus;

    let Some((_database, db)) = a_database_with_games(backend).await else {
        return;
    };
    niche(&db, "old", NicheStatus::Archived).await;
    let games = entity::niches::Entity::find()
        .filter(entity::niches::Column::Slug.eq("games"))
        .one(&db)
        .await
        .expect("read")
        .expect("games");
    // The same niche named by its id (and an id nobody has), in the same batches as slugs.
    let by_id = |niche_id: i64, external_id: String| {
        let mut body = question_body("games", &external_id);
        let payload = body["payload"].as_object_mut().expect("a payload");
        payload.remove("nicheSlug");
        payload.insert("nicheId".into(), niche_id.into());
        body
    };
    let now = chrono::Utc::now();
    let bodies = (0..10)
        .map(|i| question_body("nowhere", &format!("lost-{i}")))
        .chain((0..10).map(|i| question_body("old", &format!("late-{i}"))))
        .chain((0..10).map(|_| question_body("games", "mixed-same")))
        .chain((0..10).map(|i| question_body("games", &format!("mixed-{i}"))))
        .chain((0..10).map(|i| by_id(games.id, format!("mixed-id-{i}"))))
        .chain((0..5).map(|i| by_id(games.id + 1000, format!("lost-id-{i}"))));
    let asks = bodies.map(|body| {
        let db = db.clone();
        tokio::spawn(async move {
            let new = parse_new_question(&body).expect("a valid question");
            let hint = askloop::live::ChangeHint::none();
            receive_question(&db, &hint, &Asker::Default, new, now).await
        })
    });
    let outcomes: Vec<_> = futures::future::join_all(asks.collect::<Vec<_>>())
        .await
        .into_iter()
        .map(|joined| joined.expect("the intake ran"))
        .collect();

    for outcome in &outcomes[..10] {
        assert!(
            matches!(outcome, Err(ServiceError::NotFound(message)) if message.contains("'nowhere'")),
            "an unknown niche is refused: {outcome:?}"
        );
    }
    for outcome in &outcomes[10..20] {
        assert!(
            matches!(
                outcome,
                Err(ServiceError::Conflict(Conflict::NicheClosed {
                    state: "archived",
                    ..
                }))
            ),
            "an archived niche is refused: {outcome:?}"
        );
    }
    let same: Vec<_> = outcomes[20..30]
        .iter()
        .map(|outcome| outcome.as_ref().expect("the same question, stored once"))
        .collect();
    assert_eq!(
        same.iter().filter(|o| !o.duplicate).count(),
        1,
        "one copy stored, the others are duplicates: {same:?}"
    );
    assert!(
        same.iter().all(|o| o.question_id == same[0].question_id),
        "every copy names the one question"
    );
    for outcome in &outcomes[30..50] {
        let outcome = outcome.as_ref().expect("a new question stored");
        assert!(!outcome.duplicate);
        assert_eq!(outcome.niche_id, games.id, "in the niche it named");
    }
    for outcome in &outcomes[50..] {
        assert!(
            matches!(outcome, Err(ServiceError::NotFound(_))),
            "an unknown niche id is refused: {outcome:?}"
        );
    }
    let stored = stored(&db, "mixed-").await;
    assert_eq!(
        stored.len(),
        21,
        "twenty distinct questions and one of the copies"
    );
    let elsewhere = agent_questions::Entity::find()
        .filter(
            agent_questions::Column::ExternalId.is_in((0..10).flat_map(|i| {
                [
                    format!("lost-{i}"),
                    format!("late-{i}"),
                    format!("lost-id-{i}"),
                ]
            })),
        )
        .count(&db)
        .await
        .expect("counted");
    assert_eq!(elsewhere, 0, "nothing refused was stored");
}

/// A batch with nothing to reserve and no one to tell leaves the rows a batch with bounties to
/// reserve leaves: each new question exactly one `question.created` row — its actor, its id and
/// niche, its external id, bounty and kind, the question's own time — appended in the questions'
/// order; and a question asked again afterwards is the one stored.
async fn every_new_question_of_a_batch_has_one_audit_row_in_order(backend: Backend) {
    use askloop::domain::intake::parse_new_question;
    use askloop::service::agents::registry::Asker;
    use askloop::service::questions::intake::receive_question;
    use askloop_tests::fixtures::niche;
    use entity::audit_log;
    use entity::niches::NicheStatus;
    use sea_orm::{ActiveModelTrait, ActiveValue::Set, IntoActiveModel, QueryOrder};

    let Some((_database, db)) = a_database_with_games(backend).await else {
        return;
    };
    let mut paid = niche(&db, "paid", NicheStatus::Open)
        .await
        .into_active_model();
    paid.max_bounty_minor = Set(100);
    paid.update(&db)
        .await
        .expect("paid niche's bounties allowed");

    // To the microsecond, as both stores keep times.
    let start = chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 6);
    let body = |i: i64| {
        let (slug, external_id) = if i < 20 {
            ("games", format!("plain-{i}"))
        } else {
            ("paid", format!("paid-{i}"))
        };
        let mut body = question_body(slug, &external_id);
        let payload = body["payload"].as_object_mut().expect("a payload");
        if i % 2 == 0 {
            payload.insert("agentId".into(), "scout".into());
        }
        if slug == "paid" {
            payload.insert("bountyMinor".into(), 25.into());
        }
        body
    };
    let ask = |i: i64| {
        let db = db.clone();
        let new = parse_new_question(&body(i)).expect("a valid question");
        // Each intake its own time, so the audit row's time is seen to be its question's.
        let now = start + chrono::Duration::milliseconds(i);
        async move {
            let hint = askloop::live::ChangeHint::none();
            receive_question(&db, &hint, &Asker::Default, new, now).await
        }
    };
    // Those without bounties together first, then those with bounties.
    let mut ids = Vec::new();
    for asked in [0..20, 20..30] {
        let outcomes = futures::future::join_all(asked.map(|i| tokio::spawn(ask(i)))).await;
        for outcome in outcomes {
            let outcome = outcome.expect("the intake ran").expect("stored");
            assert!(!outcome.duplicate, "{outcome:?}");
            ids.push(outcome.question_id);
        }
    }
    let again = ask(3).await.expect("asked again");
    assert!(again.duplicate, "the question stored before: {again:?}");
    assert_eq!(again.question_id, ids[3]);

    let questions = agent_questions::Entity::find()
        .filter(agent_questions::Column::Id.is_in(ids.clone()))
        .order_by_asc(agent_questions::Column::Id)
        .all(&db)
        .await
        .expect("questions read");
    assert_eq!(questions.len(), 30, "every question stored once");
    let rows = audit_log::Entity::find()
        .filter(audit_log::Column::Action.eq("question.created"))
        .order_by_asc(audit_log::Column::Id)
        .all(&db)
        .await
        .expect("audit read");
    assert_eq!(rows.len(), 30, "one row a question, none for the repeat");
    let subjects: Vec<String> = rows.iter().map(|row| row.subject_id.clone()).collect();
    let in_order: Vec<String> = questions.iter().map(|q| q.id.to_string()).collect();
    assert_eq!(subjects, in_order, "appended in the questions' order");
    for (row, question) in rows.iter().zip(&questions) {
        let external_id = question.external_id.clone().expect("an external id");
        let i: i64 = external_id
            .rsplit('-')
            .next()
            .and_then(|n| n.parse().ok())
            .expect("numbered");
        let actor = if i % 2 == 0 { "agent:scout" } else { "agent" };
        assert_eq!(row.actor, actor, "{external_id}");
        assert_eq!(row.subject_type, "question");
        assert_eq!(row.niche_id, Some(question.niche_id));
        assert_eq!(row.created_at, question.created_at, "{external_id}");
        assert_eq!(
            row.created_at,
            start + chrono::Duration::milliseconds(i),
            "the intake's own time"
        );
        assert_eq!(
            row.detail,
            serde_json::json!({
                "externalId": external_id,
                "bountyMinor": if i < 20 { 0 } else { 25 },
                "kind": "question",
            })
        );
    }
    let reserved = audit_log::Entity::find()
        .filter(audit_log::Column::Action.eq("budget.reserved"))
        .count(&db)
        .await
        .expect("counted");
    assert_eq!(reserved, 10, "each bounty reserved once");
}

/// A niche changed between two batches is seen by the next, which reads its niches inside its
/// own transaction: archived, it refuses; opened again, it takes questions; given a default
/// bounty, the bounty is reserved; given a webhook, its operator hears of the question; given a
/// reader to mail, the reader is to be mailed.
async fn a_niche_changed_between_batches_is_seen_by_the_next(backend: Backend) {
    use askloop::domain::intake::parse_new_question;
    use askloop::error::{Conflict, ServiceError};
    use askloop::service::agents::registry::Asker;
    use askloop::service::questions::intake::{IntakeOutcome, receive_question};
    use askloop_tests::people::person;
    use entity::niches::{self, NicheStatus};
    use entity::{deliveries, notifications, operator_webhooks};
    use sea_orm::{ActiveModelTrait, ActiveValue::Set, IntoActiveModel, NotSet};

    let Some((_database, db)) = a_database_with_games(backend).await else {
        return;
    };
    let ask = |external_id: &str| {
        let db = db.clone();
        let new = parse_new_question(&question_body("games", external_id)).expect("valid");
        async move {
            let hint = askloop::live::ChangeHint::none();
            receive_question(&db, &hint, &Asker::Default, new, chrono::Utc::now()).await
        }
    };
    let stored = |outcome: Result<IntakeOutcome, ServiceError>| {
        let outcome = outcome.expect("stored");
        assert!(!outcome.duplicate, "{outcome:?}");
        outcome.question_id
    };
    async fn games(db: &Db) -> niches::ActiveModel {
        niches::Entity::find()
            .filter(niches::Column::Slug.eq("games"))
            .one(db)
            .await
            .expect("read")
            .expect("games")
            .into_active_model()
    }
    async fn set_status(db: &Db, status: NicheStatus) {
        let mut niche = games(db).await;
        niche.status = Set(status);
        niche.update(db).await.expect("status set");
    }
    stored(ask("seen-1").await);

    set_status(&db, NicheStatus::Archived).await;
    let refused = ask("seen-2").await;
    assert!(
        matches!(
            refused,
            Err(ServiceError::Conflict(Conflict::NicheClosed {
                state: "archived",
                ..
            }))
        ),
        "archived since the last batch: {refused:?}"
    );
    set_status(&db, NicheStatus::Open).await;
    stored(ask("seen-3").await);

    let mut niche = games(&db).await;
    niche.bounty_minor = Set(40);
    niche.max_bounty_minor = Set(100);
    niche.monthly_budget_minor = Set(Some(10_000));
    niche.update(&db).await.expect("a default bounty");
    let paid = ask("seen-4").await.expect("stored with its bounty");
    assert_eq!(paid.budget.reserved, 40, "the bounty is reserved: {paid:?}");
    let question = agent_questions::Entity::find_by_id(paid.question_id)
        .one(&db)
        .await
        .expect("read")
        .expect("the question");
    assert_eq!(question.bounty_minor, 40, "the niche's new default");
    let mut niche = games(&db).await;
    niche.bounty_minor = Set(0);
    niche.update(&db).await.expect("no bounty again");
    stored(ask("seen-5").await);

    // A webhook is no change to the niche's row: the batch asks whether the niche has one.
    let admin = person(&db, "root", true).await;
    let games_id = *games(&db).await.id.as_ref();
    operator_webhooks::ActiveModel {
        id: NotSet,
        user_id: Set(admin.id),
        niche_id: Set(games_id),
        url: Set("https://hooks.example.com/askloop".into()),
        secret: Set("whsec_test".into()),
        created_at: Set(chrono::Utc::now()),
        revoked_at: Set(None),
    }
    .insert(&db)
    .await
    .expect("a webhook");
    let heard = stored(ask("seen-6").await);
    let events = deliveries::Entity::find()
        .filter(deliveries::Column::QuestionId.eq(heard))
        .count(&db)
        .await
        .expect("deliveries read");
    assert_eq!(events, 1, "the webhook's event for the new question");

    // Nor is someone of the niche becoming mailable: a reader added after the last read.
    operator_webhooks::Entity::update_many()
        .col_expr(
            operator_webhooks::Column::RevokedAt,
            sea_orm::sea_query::Expr::value(chrono::Utc::now()),
        )
        .exec(&db)
        .await
        .expect("the webhook removed");
    stored(ask("seen-7").await);
    let reader = askloop_tests::people::operator(&db, "games", "ann").await;
    askloop_tests::people::verified_address(&db, &reader).await;
    let mailed = stored(ask("seen-8").await);
    let planned = notifications::Entity::find()
        .filter(notifications::Column::QuestionId.eq(mailed))
        .filter(notifications::Column::UserId.eq(reader.id))
        .count(&db)
        .await
        .expect("notifications read");
    assert_eq!(planned, 1, "the new reader is to be mailed of the question");
}

/// Large questions are stored whole, each once, however many arrive together: on PostgreSQL a
/// batch of them is inserted in several statements, each within `INSERT_BYTES`
/// (docs/architecture.md#intake-group-commit).
async fn a_batch_of_large_questions_stores_each_whole_and_once(backend: Backend) {
    use askloop::domain::intake::parse_new_question;
    use askloop::service::agents::registry::Asker;
    use askloop::service::questions::intake::receive_question;

    let Some((_database, db)) = a_database_with_games(backend).await else {
        return;
    };
    let context = |i: usize| format!("{i:04} {}", "research notes ".repeat(140));
    let now = chrono::Utc::now();
    let asks = (0..40).map(|i| {
        let db = db.clone();
        let mut body = question_body("games", &format!("large-{i}"));
        body["payload"]["context"] = context(i).into();
        tokio::spawn(async move {
            let new = parse_new_question(&body).expect("a valid question");
            let hint = askloop::live::ChangeHint::none();
            receive_question(&db, &hint, &Asker::Default, new, now).await
        })
    });
    let outcomes = futures::future::join_all(asks.collect::<Vec<_>>()).await;
    let mut ids = HashSet::new();
    for outcome in outcomes {
        let outcome = outcome.expect("the intake ran").expect("stored");
        assert!(!outcome.duplicate, "{outcome:?}");
        ids.insert(outcome.question_id);
    }
    assert_eq!(ids.len(), 40, "forty questions, each its own");
    let questions = agent_questions::Entity::find()
        .filter(agent_questions::Column::ExternalId.starts_with("large-"))
        .all(&db)
        .await
        .expect("questions read");
    assert_eq!(questions.len(), 40, "each stored once");
    for question in questions {
        let i: usize = question
            .external_id
            .as_deref()
            .and_then(|id| id.strip_prefix("large-"))
            .and_then(|n| n.parse().ok())
            .expect("numbered");
        assert!(ids.contains(&question.id));
        assert_eq!(question.context.as_deref(), Some(context(i).as_str()));
    }
}

on_sqlite_and_postgres!(
    a_niche_changed_between_batches_is_seen_by_the_next,
    every_new_question_of_a_batch_has_one_audit_row_in_order,
    a_batch_of_large_questions_stores_each_whole_and_once,
    a_batch_killed_before_its_commit_acknowledged_nothing,
    every_intake_acknowledged_before_a_kill_9_is_in_the_database,
    every_intake_of_a_mixed_batch_gets_its_own_answer,
);
