//! Migrations on a database that already holds data: the held-money migration
//! (`m20261130_000011`), the budget-balance one (`m20261130_000012`), the agent registry
//! (`m20261130_000013`), agent tokens (`m20261130_000014`), the access settings
//! (`m20261201_000016`: key expiry, where sessions came from), delegated tasks
//! (`m20261201_000017`, refused while a task is stored) and delivery lanes (`m20261202_000018`,
//! refused while a delivery is dropped) and knowledge (`m20261203_000019`, writing the verified
//! answers already stored as entries) and the search scope (`m20261203_000021`, refilling the
//! index) go down and up again on a live askloop's populated database, on both backends; each direction leaves the checks it
//! promises (on SQLite, the edited table definition is what every pooled connection then
//! enforces), and the balance starts from what the ledger sums to.

use askloop_tests::fixtures::open_niche;
use askloop_tests::people::operator;
use askloop_tests::{TestApp, on_both_backends};
use entity::{allocations, budget_entries};
use migration::{Migrator, MigratorTrait};
use sea_orm::{ConnectionTrait, EntityTrait, PaginatorTrait, Statement};
use serde_json::json;

/// Undo `name` and every migration after it, however many have been added since.
async fn down_to_before(app: &TestApp, name: &str) {
    try_down_to_before(app, name).await.expect("down");
}

/// Try to undo `name` and every migration after it.
async fn try_down_to_before(app: &TestApp, name: &str) -> Result<(), sea_orm::DbErr> {
    let all = Migrator::migrations();
    let position = all
        .iter()
        .position(|migration| migration.name() == name)
        .unwrap_or_else(|| panic!("no migration {name}"));
    let steps = u32::try_from(all.len() - position).expect("a few migrations");
    askloop::db::migrate_down(&app.db, steps).await
}

/// Run `sql` on the app's database; whether the database accepted it.
async fn accepts(app: &TestApp, sql: &str) -> bool {
    let db = &app.db;
    db.execute_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .is_ok()
}

async fn the_held_money_migration_goes_down_and_up_on_a_populated_database(app: TestApp) {
    crate::money::budgeted_niche(&app, "games", Some(1000), 0).await;
    let ana = operator(&app.db, "games", "ana").await;
    let (status, _) = crate::money::ask_with_bounty(&app, "games", "with-bounty", 300).await;
    assert_eq!(status, 201);
    let id = app.ask("games", "q-1").await;
    let answered = app
        .graphql(
            Some(&ana.token),
            "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: ANSWERED, optionId: \"ea\"}) { points } }",
            json!({"id": id.to_string()}),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    let revenue = json!({"nicheSlug": "games", "externalId": "inv-1", "sourceType": "usage",
        "grossMinor": 10_000, "currency": "USD"});
    let booked = app
        .post_signed("/api/v1/internal/revenue-events", &revenue.to_string())
        .await;
    assert_eq!(booked.status(), 201);
    let rows = |app: &TestApp| {
        let db = app.db.clone();
        async move {
            (
                allocations::Entity::find().count(&db).await.expect("count"),
                budget_entries::Entity::find()
                    .count(&db)
                    .await
                    .expect("count"),
            )
        }
    };
    let before = rows(&app).await;
    assert!(before.0 > 0 && before.1 > 0, "{before:?}");

    // Down to before the held-money migration: it and every one after it.
    down_to_before(&app, "m20261130_000011_money_waits_for_the_verdict").await;
    assert_eq!(rows_without_claws_back(&app).await, before.0);
    assert!(
        !accepts(&app, "UPDATE allocations SET status = 'held'").await,
        "the old check refuses held"
    );
    assert!(
        !accepts(&app, "UPDATE budget_entries SET kind = 'charge_reversal'").await,
        "the old check refuses charge_reversal"
    );

    askloop::db::migrate(&app.db).await.expect("up again");
    assert_eq!(rows(&app).await, before);
    let games = entity::niches::Entity::find()
        .one(&app.db)
        .await
        .expect("query")
        .expect("the niche");
    assert_eq!(
        games.budget_reserved_minor, 300,
        "the balance starts from the ledger"
    );
    assert!(
        accepts(
            &app,
            "UPDATE allocations SET status = 'held' WHERE user_id IS NOT NULL"
        )
        .await
    );
    assert!(
        !accepts(&app, "UPDATE allocations SET amount_minor = -1").await,
        "only a clawback may be negative"
    );
    assert!(
        !accepts(&app, "UPDATE allocations SET status = 'lost'").await,
        "the new check still refuses unknown states"
    );
}

/// How many allocations there are, read without the column the down migration removed.
async fn rows_without_claws_back(app: &TestApp) -> u64 {
    let db = &app.db;
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT COUNT(*) AS n FROM allocations",
        ))
        .await
        .expect("count")
        .expect("a row");
    u64::try_from(row.try_get::<i64>("", "n").expect("n")).expect("a count")
}

on_both_backends!(the_held_money_migration_goes_down_and_up_on_a_populated_database);

async fn the_agents_migration_goes_down_and_up_on_a_populated_database(app: TestApp) {
    use askloop::service::agents::registry::{self, Endpoint, NewAgent};

    open_niche(&app.db, "games").await;
    let registered = registry::create(
        &app.db,
        None,
        NewAgent {
            slug: askloop::domain::agents::AgentSlug::parse("agent-a").expect("a slug"),
            name: "Agent A".into(),
            niches: vec!["games".into()],
            endpoint: Endpoint {
                url: None,
                scheme: entity::agents::WebhookScheme::Chovy,
                events: Vec::new(),
            },
        },
        &askloop::service::audit::Actor::Cli,
        chrono::Utc::now(),
    )
    .await
    .expect("registered");
    assert!(!registered.secret.is_empty());
    let by_default = app.ask("games", "q-default").await;

    // Down to before the agents migration: it and every one after it.
    down_to_before(&app, "m20261130_000013_agents").await;
    assert!(
        !accepts(&app, "SELECT id FROM agents").await,
        "the table is gone"
    );
    assert!(!accepts(&app, "SELECT registered_agent_id FROM agent_questions").await);
    assert!(!accepts(&app, "SELECT agent_id FROM deliveries").await);
    assert!(
        accepts(&app, "SELECT id FROM agent_questions").await,
        "questions stay"
    );

    askloop::db::migrate(&app.db).await.expect("up again");
    let question = entity::agent_questions::Entity::find_by_id(by_default)
        .one(&app.db)
        .await
        .expect("query")
        .expect("the question survived");
    assert_eq!(
        question.registered_agent_id, None,
        "an older question is the default agent's"
    );
    assert!(
        !accepts(&app, "INSERT INTO agents (slug, name, status, secret_current, scheme, event_types, created_at, updated_at) VALUES ('x1', 'X', 'paused', 's', 'chovy', '[]', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')").await,
        "the status check is back"
    );
    assert!(
        accepts(&app, "INSERT INTO agents (slug, name, status, secret_current, scheme, event_types, created_at, updated_at) VALUES ('x1', 'X', 'active', 's', 'standard', '[]', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')").await
    );
    assert!(
        !accepts(&app, "INSERT INTO agents (slug, name, status, secret_current, scheme, event_types, created_at, updated_at) VALUES ('x1', 'X', 'active', 's', 'chovy', '[]', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')").await,
        "slugs are unique"
    );
}

on_both_backends!(the_agents_migration_goes_down_and_up_on_a_populated_database);

async fn the_agent_tokens_migration_goes_down_and_up_on_a_populated_database(app: TestApp) {
    open_niche(&app.db, "games").await;
    let token = askloop_tests::mcp::agent_with_token(&app, "agent-a", &["games"]).await;
    assert!(accepts(&app, "SELECT token_hash FROM agent_tokens").await);

    down_to_before(&app, "m20261130_000014_agent_tokens").await;
    assert!(
        !accepts(&app, "SELECT id FROM agent_tokens").await,
        "the table is gone"
    );
    assert!(
        accepts(&app, "SELECT slug FROM agents").await,
        "the agents stay"
    );

    askloop::db::migrate(&app.db).await.expect("up again");
    // The tokens went with their table: the old one no longer resolves.
    assert_eq!(
        askloop::service::agents::agent_tokens::resolve(&app.db, &token)
            .await
            .expect("resolve"),
        None
    );
    let agent = askloop::service::agents::registry::find(&app.db, "agent-a")
        .await
        .expect("agent-a");
    let insert = |hash: &str, agent_id: i64| {
        format!(
            "INSERT INTO agent_tokens (agent_id, prefix, token_hash, created_at) \
             VALUES ({agent_id}, 'al_agent_x', '{hash}', '2026-01-01T00:00:00Z')"
        )
    };
    assert!(accepts(&app, &insert("h1", agent.id)).await);
    assert!(
        !accepts(&app, &insert("h1", agent.id)).await,
        "token hashes are unique"
    );
    assert!(
        !accepts(&app, &insert("h2", agent.id + 1000)).await,
        "a token belongs to an agent that exists"
    );
}

on_both_backends!(the_agent_tokens_migration_goes_down_and_up_on_a_populated_database);

async fn the_reaching_operators_migration_goes_down_and_up_on_a_populated_database(app: TestApp) {
    open_niche(&app.db, "games").await;
    let before = app.ask("games", "q-before").await;
    assert!(accepts(&app, "SELECT escalate_at FROM agent_questions").await);

    down_to_before(&app, "m20261201_000015_reaching_operators").await;
    for gone in [
        "SELECT id FROM notifications",
        "SELECT id FROM escalations",
        "SELECT id FROM operator_webhooks",
        "SELECT escalate_at FROM agent_questions",
        "SELECT escalate_high_secs FROM niches",
        "SELECT webhook_id FROM deliveries",
    ] {
        assert!(!accepts(&app, gone).await, "{gone} still answers");
    }
    askloop::db::migrate(&app.db).await.expect("up again");
    let question = entity::agent_questions::Entity::find_by_id(before)
        .one(&app.db)
        .await
        .expect("query")
        .expect("the question survived");
    assert_eq!((question.escalate_at, question.escalation_step), (None, 0));
    let niche = entity::niches::Entity::find()
        .one(&app.db)
        .await
        .expect("query")
        .expect("the niche");
    assert_eq!(
        niche.escalate_high_secs,
        Some(900),
        "the default fills existing niches"
    );
    assert!(
        !accepts(&app, "UPDATE agent_questions SET escalation_step = 3").await,
        "the step check is back"
    );
}

on_both_backends!(the_reaching_operators_migration_goes_down_and_up_on_a_populated_database);

async fn the_access_settings_migration_goes_down_and_up_on_a_populated_database(app: TestApp) {
    let ana = askloop_tests::people::person(&app.db, "ana", false).await;
    let created = app
        .graphql(
            Some(&ana.token),
            "mutation($at: DateTime) { createApiKey(name: \"ci\", expiresAt: $at) { token } }",
            json!({"at": (chrono::Utc::now() + chrono::Duration::days(30)).to_rfc3339()}),
        )
        .await;
    assert!(created["errors"].is_null(), "{created}");
    assert!(accepts(&app, "SELECT expires_at FROM api_keys").await);
    assert!(accepts(&app, "SELECT user_agent, client_address FROM sessions").await);

    down_to_before(&app, "m20261201_000016_access_settings").await;
    assert!(!accepts(&app, "SELECT expires_at FROM api_keys").await);
    assert!(!accepts(&app, "SELECT user_agent FROM sessions").await);
    assert!(!accepts(&app, "SELECT client_address FROM sessions").await);
    assert!(
        accepts(&app, "SELECT token_hash FROM sessions").await,
        "sessions stay"
    );

    askloop::db::migrate(&app.db).await.expect("up again");
    let keys = entity::api_keys::Entity::find()
        .all(&app.db)
        .await
        .expect("query");
    assert_eq!(keys.len(), 1, "the key survived");
    assert_eq!(keys[0].expires_at, None, "an older key never expires");
    let sessions = entity::sessions::Entity::find()
        .all(&app.db)
        .await
        .expect("query");
    assert_eq!(sessions.len(), 1, "the session survived");
    assert_eq!(sessions[0].user_agent, None);
}

on_both_backends!(the_access_settings_migration_goes_down_and_up_on_a_populated_database);

async fn the_delegated_tasks_migration_goes_down_only_without_tasks_and_up_again(app: TestApp) {
    let (_ana, task) = crate::tasks::a_task(&app).await;
    let question = app.ask("games", "q-before").await;
    let columns = "SELECT kind, deliverable FROM agent_questions";
    assert!(accepts(&app, columns).await);

    // A stored task keeps the migration in place: nothing is undone.
    let refused = try_down_to_before(&app, "m20261201_000017_delegated_tasks").await;
    let message = refused
        .expect_err("down refused while a task is stored")
        .to_string();
    assert!(
        message.contains("1 delegated task(s) are stored"),
        "{message}"
    );
    assert!(accepts(&app, columns).await, "the columns stay");
    assert!(accepts(&app, "SELECT actual_cost_minor FROM agent_answers").await);
    // The migrations after it went down before it refused; back up, to read with today's rows.
    askloop::db::migrate(&app.db).await.expect("up again");
    assert_eq!(
        entity::agent_questions::Entity::find_by_id(task)
            .one(&app.db)
            .await
            .expect("query")
            .expect("the task")
            .kind,
        entity::agent_questions::ExchangeKind::Task
    );

    // Without tasks it goes down and up, and the questions stay questions.
    assert!(accepts(&app, "UPDATE agent_questions SET kind = 'question'").await);
    down_to_before(&app, "m20261201_000017_delegated_tasks").await;
    assert!(!accepts(&app, "SELECT kind FROM agent_questions").await);
    assert!(!accepts(&app, "SELECT deliverable FROM agent_questions").await);
    assert!(!accepts(&app, "SELECT actual_cost_minor FROM agent_answers").await);
    askloop::db::migrate(&app.db).await.expect("up again");
    let stored = entity::agent_questions::Entity::find_by_id(question)
        .one(&app.db)
        .await
        .expect("query")
        .expect("the question survived");
    assert_eq!(stored.kind, entity::agent_questions::ExchangeKind::Question);
    assert_eq!(stored.deliverable, None);
    assert!(
        !accepts(&app, "UPDATE agent_questions SET kind = 'chore'").await,
        "the kind check is back"
    );
}

on_both_backends!(the_delegated_tasks_migration_goes_down_only_without_tasks_and_up_again);

async fn the_delivery_lanes_migration_goes_down_only_without_dropped_deliveries_and_up_again(
    app: TestApp,
) {
    use askloop::service::agents::outbox::{self, EventType, NewEvent};
    let niche = open_niche(&app.db, "games").await;
    let txn = app.db.begin_write().await.expect("begin");
    let delivery = outbox::enqueue(
        &txn,
        NewEvent {
            event: EventType::QuestionExpired,
            niche_id: niche.id,
            question_id: None,
            user_id: None,
            payload: json!({}),
        },
        chrono::Utc::now(),
    )
    .await
    .expect("enqueued")
    .expect("a delivery");
    txn.commit().await.expect("committed");
    let columns = "SELECT dropped_reason, single_attempt FROM deliveries";
    assert!(accepts(&app, columns).await);
    assert!(
        accepts(
            &app,
            "UPDATE deliveries SET status = 'dropped', dropped_reason = 'gone'"
        )
        .await
    );

    // A dropped delivery keeps the migration in place: nothing is undone.
    let refused = try_down_to_before(&app, "m20261202_000018_delivery_lanes").await;
    let message = refused
        .expect_err("down refused while a delivery is dropped")
        .to_string();
    assert!(message.contains("1 dropped deliveries"), "{message}");
    assert!(accepts(&app, columns).await, "the columns stay");

    // Without one it goes down and up, and the delivery stays.
    assert!(accepts(&app, "UPDATE deliveries SET status = 'exhausted'").await);
    down_to_before(&app, "m20261202_000018_delivery_lanes").await;
    assert!(!accepts(&app, "SELECT dropped_reason FROM deliveries").await);
    assert!(!accepts(&app, "SELECT single_attempt FROM deliveries").await);
    assert!(
        !accepts(&app, "UPDATE deliveries SET status = 'dropped'").await,
        "the status check is the old one"
    );
    askloop::db::migrate(&app.db).await.expect("up again");
    let stored = entity::deliveries::Entity::find_by_id(delivery.id)
        .one(&app.db)
        .await
        .expect("query")
        .expect("the delivery survived");
    assert_eq!(stored.status, entity::deliveries::DeliveryStatus::Exhausted);
    assert_eq!(
        (stored.dropped_reason, stored.single_attempt),
        (None, false)
    );
    assert!(
        !accepts(&app, "UPDATE deliveries SET status = 'lost'").await,
        "the status check is back"
    );
    assert!(accepts(&app, "UPDATE deliveries SET status = 'dropped'").await);
}

on_both_backends!(
    the_delivery_lanes_migration_goes_down_only_without_dropped_deliveries_and_up_again
);

async fn the_knowledge_migration_goes_down_and_up_writing_todays_verified_answers(app: TestApp) {
    use askloop_tests::answers::early_access;
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = askloop_tests::people::person(&app.db, "root", true).await;
    let question = app.ask("games", "q-before").await;
    let answered = app
        .answer(
            &ana.token,
            early_access(question, Some("Storefronts show it first.")),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    app.decide_newest_contribution(&root.token, "verifyContribution", None)
        .await;
    // A pending answer to another question is not knowledge, before or after.
    let pending = app.ask("games", "q-pending").await;
    let bob = operator(&app.db, "games", "bob").await;
    let answered = app
        .answer(
            &bob.token,
            early_access(pending, Some("Storefronts, pending.")),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");

    down_to_before(&app, "m20261203_000019_knowledge").await;
    assert!(!accepts(&app, "SELECT id FROM knowledge_entries").await);
    assert!(!accepts(&app, "SELECT similarity_threshold_bps FROM niches").await);
    askloop::db::migrate(&app.db).await.expect("up again");

    let entries = entity::knowledge_entries::Entity::find()
        .all(&app.db)
        .await
        .expect("read");
    assert_eq!(entries.len(), 1, "{entries:?}");
    let entry = &entries[0];
    assert_eq!(entry.question_id, question);
    assert_eq!(entry.version, 1);
    assert_eq!(
        entry.status,
        entity::knowledge_entries::KnowledgeStatus::Current
    );
    assert_eq!(entry.option_label.as_deref(), Some("Early access"));
    assert_eq!(
        entry.verification,
        entity::knowledge_entries::Verification::Review
    );
    assert_eq!(entry.verified_by, Some(root.id));
    // Written into the index too: the running app finds it by a word of its answer.
    let found = app
        .graphql(
            Some(&ana.token),
            "{ knowledge(nicheSlug: \"games\", search: \"storefronts\") { edges { node { id } } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        found["data"]["knowledge"]["edges"].as_array().map(Vec::len),
        Some(1),
        "{found}"
    );
    assert!(
        !accepts(&app, "UPDATE knowledge_entries SET status = 'forgotten'").await,
        "the status check holds"
    );
    // A retraction's notice to the agent keeps the migration in place: Bob's answer, verified
    // (an entry) and then reversed (retracted, and the agent told).
    app.decide_newest_contribution(&root.token, "verifyContribution", None)
        .await;
    app.decide_newest_contribution(&root.token, "reverseContribution", Some("wrong"))
        .await;
    let refused = try_down_to_before(&app, "m20261203_000019_knowledge")
        .await
        .expect_err("refused while a knowledge event is stored")
        .to_string();
    assert!(
        refused.contains("1 knowledge event(s) are stored"),
        "{refused}"
    );
    assert!(
        accepts(&app, "SELECT id FROM knowledge_entries").await,
        "nothing undone"
    );
}

on_both_backends!(the_knowledge_migration_goes_down_and_up_writing_todays_verified_answers);

async fn the_reuse_migration_goes_down_and_up_and_is_kept_while_a_reuse_is_stored(app: TestApp) {
    use askloop_tests::answers::early_access;
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = askloop_tests::people::person(&app.db, "root", true).await;
    let question = app.ask("games", "q-known").await;
    let answered = app
        .answer(
            &ana.token,
            early_access(question, Some("Storefronts first.")),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    app.decide_newest_contribution(&root.token, "verifyContribution", None)
        .await;

    down_to_before(&app, "m20261203_000020_knowledge_reuse").await;
    assert!(!accepts(&app, "SELECT id FROM knowledge_reuses").await);
    assert!(!accepts(&app, "SELECT reuse_price_minor FROM niches").await);
    assert!(!accepts(&app, "SELECT knowledge_entry_id FROM agent_answers").await);
    askloop::db::migrate(&app.db).await.expect("up again");
    assert!(accepts(&app, "SELECT reuse_price_minor FROM niches").await);

    let entry = entity::knowledge_entries::Entity::find()
        .one(&app.db)
        .await
        .expect("read")
        .expect("the entry");
    let body = json!({"entryId": entry.id, "externalId": "r-1"}).to_string();
    let reused = app
        .post_signed("/api/v1/internal/knowledge/reuse", &body)
        .await;
    assert_eq!(reused.status(), 201);
    let refused = try_down_to_before(&app, "m20261203_000020_knowledge_reuse")
        .await
        .expect_err("refused while a reuse is stored")
        .to_string();
    assert!(refused.contains("1 knowledge reuse(s)"), "{refused}");
    assert!(
        accepts(&app, "SELECT id FROM knowledge_reuses").await,
        "nothing undone"
    );
}

on_both_backends!(the_reuse_migration_goes_down_and_up_and_is_kept_while_a_reuse_is_stored);

async fn the_search_scope_migration_rebuilds_the_index_with_each_entrys_niche_and_status(
    app: TestApp,
) {
    use askloop_tests::answers::early_access;
    open_niche(&app.db, "games").await;
    open_niche(&app.db, "roofing").await;
    let root = askloop_tests::people::person(&app.db, "root", true).await;
    let ana = operator(&app.db, "games", "ana").await;
    let cy = operator(&app.db, "roofing", "cy").await;
    // One entry in each niche holding "storefronts", and a retracted one in games.
    for (token, niche, external, words) in [
        (&ana.token, "games", "q-games", "Storefronts show it first."),
        (
            &cy.token,
            "roofing",
            "q-roofing",
            "Storefronts of roofers too.",
        ),
        (&ana.token, "games", "q-gone", "Storefronts, said wrongly."),
    ] {
        let question = app.ask(niche, external).await;
        let answered = app.answer(token, early_access(question, Some(words))).await;
        assert!(answered["errors"].is_null(), "{answered}");
        app.decide_newest_contribution(&root.token, "verifyContribution", None)
            .await;
    }
    app.decide_newest_contribution(&root.token, "reverseContribution", Some("wrong"))
        .await;

    down_to_before(&app, "m20261203_000021_search_scope").await;
    askloop::db::migrate(&app.db).await.expect("up again");

    let search = |status: &'static str| {
        let app = &app;
        let token = ana.token.clone();
        async move {
            let found = app
                .graphql(
                    Some(&token),
                    &format!(
                        "{{ knowledge(nicheSlug: \"games\", search: \"storefronts\", \
                         status: {status}) {{ edges {{ node {{ answer status }} }} }} }}"
                    ),
                    json!({}),
                )
                .await;
            found["data"]["knowledge"]["edges"]
                .as_array()
                .unwrap_or_else(|| panic!("{found}"))
                .iter()
                .map(|edge| edge["node"]["answer"].as_str().unwrap_or("").to_owned())
                .collect::<Vec<_>>()
        }
    };
    // The refilled index finds games' current entry only (not roofing's), and its retracted one
    // by status.
    assert_eq!(search("CURRENT").await, ["Storefronts show it first."]);
    assert_eq!(search("RETRACTED").await, ["Storefronts, said wrongly."]);
}

on_both_backends!(the_search_scope_migration_rebuilds_the_index_with_each_entrys_niche_and_status);

/// The knowledge index's storage options on PostgreSQL (`pg_class.reloptions`), or none.
async fn search_index_options(app: &TestApp) -> Vec<String> {
    let db = &app.db;
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT coalesce(array_to_string(reloptions, ','), '') AS options FROM pg_class \
             WHERE relname = 'knowledge_entries_search'",
        ))
        .await
        .expect("read")
        .expect("the index");
    let options: String = row.try_get("", "options").expect("options");
    options
        .split(',')
        .filter(|o| !o.is_empty())
        .map(str::to_owned)
        .collect()
}

async fn entries_written_before_the_pending_list_migration_are_found_after_it(app: TestApp) {
    use askloop_tests::answers::early_access;
    open_niche(&app.db, "games").await;
    let root = askloop_tests::people::person(&app.db, "root", true).await;
    let ana = operator(&app.db, "games", "ana").await;
    let postgres = app.db.get_database_backend() == sea_orm::DbBackend::Postgres;
    if postgres {
        assert_eq!(search_index_options(&app).await, ["fastupdate=off"]);
    }
    // Only that migration is undone and redone, by its own steps, so what is written between
    // is written by today's askloop.
    let pending_list = Migrator::migrations()
        .into_iter()
        .find(|m| m.name() == "m20261204_000022_search_without_pending_list")
        .expect("the migration");
    let manager = migration::SchemaManager::new(app.db.reads());
    pending_list.down(&manager).await.expect("down");
    if postgres {
        assert!(search_index_options(&app).await.is_empty(), "GIN's default");
    }
    // Written while the index keeps a pending list, so its words wait there on PostgreSQL.
    let question = app.ask("games", "q-pending").await;
    let answered = app
        .answer(
            &ana.token,
            early_access(question, Some("Wishlists decide it.")),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    app.decide_newest_contribution(&root.token, "verifyContribution", None)
        .await;
    pending_list.up(&manager).await.expect("up again");
    if postgres {
        assert_eq!(search_index_options(&app).await, ["fastupdate=off"]);
    }
    let found = app
        .graphql(
            Some(&ana.token),
            "{ knowledge(nicheSlug: \"games\", search: \"wishlists\") { edges { node { answer } } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        found["data"]["knowledge"]["edges"][0]["node"]["answer"], "Wishlists decide it.",
        "{found}"
    );
}

on_both_backends!(entries_written_before_the_pending_list_migration_are_found_after_it);

async fn a_database_migrated_by_a_newer_build_is_refused_by_name_and_left_alone(app: TestApp) {
    let future = "m29991231_000999_from_a_newer_build";
    let insert =
        format!("INSERT INTO seaql_migrations (version, applied_at) VALUES ('{future}', 0)");
    assert!(accepts(&app, &insert).await);
    let refused = askloop::db::migrate(&app.db)
        .await
        .expect_err("a schema this build does not know");
    assert!(refused.to_string().contains(future), "{refused}");
    let err = askloop::db::migrate_down(&app.db, 1)
        .await
        .expect_err("nor rolled back");
    assert!(err.to_string().contains(future), "{err}");
    // Nothing was undone: the newest migration's tables are all still there.
    assert!(accepts(&app, "SELECT count(*) FROM a2a_push_configs").await);
    assert!(
        accepts(
            &app,
            &format!("DELETE FROM seaql_migrations WHERE version = '{future}'")
        )
        .await
    );
    let applied = Migrator::get_applied_migrations(app.db.reads())
        .await
        .expect("known again");
    assert_eq!(applied.len(), Migrator::migrations().len());
    askloop::db::migrate(&app.db).await.expect("nothing to do");
}
on_both_backends!(a_database_migrated_by_a_newer_build_is_refused_by_name_and_left_alone);
