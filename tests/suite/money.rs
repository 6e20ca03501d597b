//! The money side: budgets that never overspend (also under 50 concurrent intakes), bounties
//! reserved, charged and released, revenue events booked once and split to the unit, and
//! anomaly signals that change nothing else.

use askloop_tests::fixtures::{niche, open_niche, question_body};
use askloop_tests::people::{operator, person};
use askloop_tests::{Backend, TestApp, error_code, on_both_backends};
use entity::budget_entries::{self, BudgetEntryKind};
use entity::niches::NicheStatus;
use entity::{allocations, niches, revenue_events};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};
use serde_json::{Value, json};

const INTAKE: &str = "/api/v1/internal/expert-questions";
const REVENUE: &str = "/api/v1/internal/revenue-events";
const SIGNALS: &str = "/api/v1/internal/anomaly-signals";

/// `slug` takes questions with a monthly budget of `limit` and bounties up to 1000.
async fn budgeted_niche(app: &TestApp, slug: &str, limit: Option<i64>, bounty: i64) -> i64 {
    let created = open_niche(&app.db, slug).await;
    niches::Entity::update_many()
        .col_expr(niches::Column::MonthlyBudgetMinor, Expr::value(limit))
        .col_expr(niches::Column::BountyMinor, Expr::value(bounty))
        .col_expr(niches::Column::MaxBountyMinor, Expr::value(1000_i64))
        .filter(niches::Column::Id.eq(created.id))
        .exec(&app.db)
        .await
        .expect("budget set");
    created.id
}

async fn ask_with_bounty(
    app: &TestApp,
    slug: &str,
    external_id: &str,
    bounty: i64,
) -> (u16, Value) {
    let mut body = question_body(slug, external_id);
    body["payload"]["bountyMinor"] = json!(bounty);
    let response = app.post_signed(INTAKE, &body.to_string()).await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn entries(app: &TestApp, question: i64) -> Vec<(BudgetEntryKind, i64)> {
    budget_entries::Entity::find()
        .filter(budget_entries::Column::QuestionId.eq(question))
        .order_by_asc(budget_entries::Column::Id)
        .all(&app.db)
        .await
        .expect("query")
        .into_iter()
        .map(|e| (e.kind, e.amount_minor))
        .collect()
}

async fn fifty_intakes_against_a_budget_for_ten_store_exactly_ten(app: TestApp) {
    budgeted_niche(&app, "games", Some(1000), 100).await;
    let intakes = (0..50).map(|n| {
        let app = &app;
        async move { ask_with_bounty(app, "games", &format!("q-{n}"), 100).await }
    });
    let results = futures::future::join_all(intakes).await;
    let stored = results.iter().filter(|(s, _)| *s == 201).count();
    let refused: Vec<&Value> = results
        .iter()
        .filter(|(s, _)| *s == 402)
        .map(|(_, b)| b)
        .collect();
    assert_eq!((stored, refused.len()), (10, 40), "{results:?}");
    for body in refused {
        assert_eq!(body["error"], "over budget");
        assert_eq!(body["code"], "OVER_BUDGET");
        assert_eq!(body["remainingMinor"], 0);
        assert!(
            body["resetsAt"]
                .as_str()
                .is_some_and(|t| t.ends_with("T00:00:00Z")),
            "{body}"
        );
    }
    let questions = entity::agent_questions::Entity::find()
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(questions, 10, "a refused intake stores nothing");
    let reserved: i64 = budget_entries::Entity::find()
        .all(&app.db)
        .await
        .expect("query")
        .iter()
        .map(|e| e.amount_minor)
        .sum();
    assert_eq!(reserved, 1000);
    // A redelivery of a stored question is still a 200 duplicate, not a 402.
    let stored_id = results
        .iter()
        .find(|(s, _)| *s == 201)
        .map(|(_, b)| b["question"]["id"].clone())
        .expect("one stored");
    let external = entity::agent_questions::Entity::find_by_id(stored_id.as_i64().unwrap_or(0))
        .one(&app.db)
        .await
        .expect("query")
        .and_then(|q| q.external_id)
        .expect("an external id");
    let (status, again) = ask_with_bounty(&app, "games", &external, 100).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["budget"]["state"], "EXHAUSTED");
    assert_eq!(again["budget"]["remainingMinor"], 0);
}

async fn a_bounty_is_reserved_then_charged_or_released(app: TestApp) {
    budgeted_niche(&app, "games", Some(1000), 0).await;
    let ana = operator(&app.db, "games", "ana").await;
    let (status, first) = ask_with_bounty(&app, "games", "answered", 300).await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(
        first["budget"],
        json!({"limitMinor": 1000, "spentMinor": 0, "reservedMinor": 300, "remainingMinor": 700,
               "state": "AMPLE", "resetsAt": first["budget"]["resetsAt"]})
    );
    let answered = first["question"]["id"].as_i64().expect("an id");
    let (_, second) = ask_with_bounty(&app, "games", "dismissed", 200).await;
    let dismissed = second["question"]["id"].as_i64().expect("an id");
    let (_, third) = ask_with_bounty(&app, "games", "expired", 400).await;
    let expired = third["question"]["id"].as_i64().expect("an id");
    assert_eq!(third["budget"]["state"], "TIGHT");
    // Over the limit by one unit: refused, and it says how much is left.
    let (status, refused) = ask_with_bounty(&app, "games", "too-much", 101).await;
    assert_eq!(status, 402);
    assert_eq!(refused["remainingMinor"], 100);

    let result = app
        .graphql(
            Some(&ana.token),
            "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: ANSWERED, optionId: \"ea\"}) { points } }",
            json!({"id": answered.to_string()}),
        )
        .await;
    assert!(result["errors"].is_null(), "{result}");
    let dismissal = app
        .graphql(
            Some(&ana.token),
            "mutation($id: ID!) { dismissQuestion(id: $id) { status } }",
            json!({"id": dismissed.to_string()}),
        )
        .await;
    assert!(dismissal["errors"].is_null(), "{dismissal}");
    entity::agent_questions::Entity::update_many()
        .col_expr(
            entity::agent_questions::Column::ExpiresAt,
            Expr::value(chrono::Utc::now() - chrono::Duration::seconds(1)),
        )
        .filter(entity::agent_questions::Column::Id.eq(expired))
        .exec(&app.db)
        .await
        .expect("moved");
    askloop::service::expiry::sweep(
        &app.db,
        &askloop::live::ChangeHint::none(),
        100,
        chrono::Utc::now(),
    )
    .await
    .expect("swept");

    use BudgetEntryKind::{Charge, Release, Reserve};
    assert_eq!(
        entries(&app, answered).await,
        vec![(Reserve, 300), (Charge, 300)]
    );
    assert_eq!(
        entries(&app, dismissed).await,
        vec![(Reserve, 200), (Release, 200)]
    );
    assert_eq!(
        entries(&app, expired).await,
        vec![(Reserve, 400), (Release, 400)]
    );

    // The charge became revenue: the answerer's share (Contributor, 20%), the platform the rest.
    let event = revenue_events::Entity::find()
        .filter(revenue_events::Column::QuestionId.eq(answered))
        .one(&app.db)
        .await
        .expect("query")
        .expect("a bounty event");
    assert_eq!(
        (event.source_type.as_str(), event.net_minor),
        ("agent_bounty", 300)
    );
    let parts: Vec<(Option<i64>, i32, i64)> = allocations::Entity::find()
        .filter(allocations::Column::RevenueEventId.eq(event.id))
        .all(&app.db)
        .await
        .expect("query")
        .into_iter()
        .map(|a| (a.user_id, a.share_bps, a.amount_minor))
        .collect();
    assert_eq!(parts, vec![(Some(ana.id), 2000, 60), (None, 8000, 240)]);

    let budget = app
        .graphql(
            Some(&ana.token),
            "{ budget(nicheSlug: \"games\") { limitMinor spentMinor reservedMinor remainingMinor state entries { kind amountMinor } } }",
            json!({}),
        )
        .await;
    assert_eq!(budget["data"]["budget"]["spentMinor"], 300, "{budget}");
    assert_eq!(budget["data"]["budget"]["reservedMinor"], 0);
    assert_eq!(budget["data"]["budget"]["remainingMinor"], 700);
    assert_eq!(budget["data"]["budget"]["state"], "AMPLE");
    assert_eq!(
        budget["data"]["budget"]["entries"].as_array().map(Vec::len),
        Some(6)
    );
    let mine = app
        .graphql(
            Some(&ana.token),
            "{ myRevenue { balances { currency owedMinor inFlightMinor paidMinor } allocations { amountMinor sourceType nicheSlug } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        mine["data"]["myRevenue"]["balances"],
        json!([{"currency": "USD", "owedMinor": 60, "inFlightMinor": 0, "paidMinor": 0}]),
        "{mine}"
    );
    assert_eq!(
        mine["data"]["myRevenue"]["allocations"],
        json!([{"amountMinor": 60, "sourceType": "agent_bounty", "nicheSlug": "games"}])
    );
    // Only members and admins read a niche's budget.
    let stranger = person(&app.db, "eve", false).await;
    let refused = app
        .graphql(
            Some(&stranger.token),
            "{ budget(nicheSlug: \"games\") { spentMinor } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&refused), Some("FORBIDDEN"), "{refused}");
}

async fn revenue_books_once_and_splits_the_net_to_the_unit(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bo = operator(&app.db, "games", "bo").await;
    let event = json!({"nicheSlug": "games", "externalId": "inv-1", "sourceType": "subscription",
        "grossMinor": 10_000, "processingMinor": 290, "networkMinor": 10, "infraMinor": 100,
        "refundMinor": 0, "currency": "usd"});
    let response = app.post_signed(REVENUE, &event.to_string()).await;
    assert_eq!(response.status(), 201);
    let booked: Value = response.json().await.expect("JSON");
    assert_eq!(booked["event"]["netMinor"], 9600);
    assert_eq!(booked["event"]["currency"], "USD");
    let parts: Vec<i64> = booked["allocations"]
        .as_array()
        .expect("allocations")
        .iter()
        .map(|a| a["amountMinor"].as_i64().unwrap_or(-1))
        .collect();
    // Two Contributors at 20% each: 1920 each, the platform 5760.
    assert_eq!(parts, vec![1920, 1920, 5760]);
    assert_eq!(parts.iter().sum::<i64>(), 9600);

    let again = app.post_signed(REVENUE, &event.to_string()).await;
    assert_eq!(again.status(), 200);
    let again: Value = again.json().await.expect("JSON");
    assert_eq!(again["duplicate"], true);
    assert_eq!(again["event"]["id"], booked["event"]["id"]);
    assert_eq!(
        revenue_events::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        1
    );
    assert_eq!(
        allocations::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        3
    );

    // Costs above gross: net 0, never negative; every part 0.
    let costly = json!({"nicheSlug": "games", "externalId": "inv-2", "sourceType": "usage",
        "grossMinor": 100, "refundMinor": 500, "currency": "USD"});
    let response = app.post_signed(REVENUE, &costly.to_string()).await;
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body["event"]["netMinor"], 0, "{body}");

    // Bad input changes nothing.
    let before = revenue_events::Entity::find()
        .count(&app.db)
        .await
        .expect("count");
    for (bad, status) in [
        (
            json!({"nicheSlug": "games", "externalId": "x", "sourceType": "gift", "grossMinor": 1, "currency": "USD"}),
            400,
        ),
        (
            json!({"nicheSlug": "games", "externalId": "x", "sourceType": "usage", "grossMinor": -5, "currency": "USD"}),
            400,
        ),
        (
            json!({"nicheSlug": "nowhere", "externalId": "x", "sourceType": "usage", "grossMinor": 5, "currency": "USD"}),
            404,
        ),
    ] {
        let response = app.post_signed(REVENUE, &bad.to_string()).await;
        assert_eq!(response.status().as_u16(), status, "{bad}");
    }
    let unsigned = app
        .post_with_signature(REVENUE, &event.to_string(), None)
        .await;
    assert_eq!(unsigned.status(), 401);
    assert_eq!(
        revenue_events::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        before
    );

    // The niche's revenue page, and its records kept when the niche is archived.
    let root = person(&app.db, "root", true).await;
    let archived = app
        .graphql(
            Some(&root.token),
            "mutation { updateNiche(slug: \"games\", input: {status: ARCHIVED}) { status } }",
            json!({}),
        )
        .await;
    assert!(archived["errors"].is_null(), "{archived}");
    let page = app
        .graphql(
            Some(&bo.token),
            "{ nicheRevenue(nicheSlug: \"games\") { grossMinor netMinor eventCount shares { handle shareBps } myAllocations { amountMinor } } }",
            json!({}),
        )
        .await;
    let revenue = &page["data"]["nicheRevenue"];
    assert_eq!(revenue["grossMinor"], 10_100, "{page}");
    assert_eq!(revenue["netMinor"], 9600);
    assert_eq!(revenue["eventCount"], 2);
    assert_eq!(
        revenue["shares"],
        json!([{"handle": "ana", "shareBps": 2000}, {"handle": "bo", "shareBps": 2000}])
    );
    assert_eq!(
        revenue["myAllocations"],
        json!([{"amountMinor": 0}, {"amountMinor": 1920}])
    );
    let events = app
        .graphql(
            Some(&root.token),
            "{ revenueEvents { externalId netMinor } }",
            json!({}),
        )
        .await;
    assert_eq!(
        events["data"]["revenueEvents"].as_array().map(Vec::len),
        Some(2)
    );
    let not_admin = app
        .graphql(
            Some(&ana.token),
            "{ revenueEvents { externalId } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&not_admin), Some("FORBIDDEN"));
}

on_both_backends!(
    fifty_intakes_against_a_budget_for_ten_store_exactly_ten,
    a_bounty_is_reserved_then_charged_or_released,
    revenue_books_once_and_splits_the_net_to_the_unit,
);

/// Every row of every table but the signal log, as text, in a stable order.
async fn snapshot(app: &TestApp) -> Vec<String> {
    use sea_orm::{ConnectionTrait, Statement};
    let tables = [
        "users",
        "sessions",
        "api_keys",
        "niches",
        "niche_members",
        "agent_questions",
        "agent_answers",
        "contribution_events",
        "contribution_scores",
        "contribution_tiers",
        "contribution_types",
        "tier_history",
        "audit_log",
        "deliveries",
        "delivery_attempts",
        "budget_entries",
        "revenue_events",
        "allocations",
    ];
    let mut rows = Vec::new();
    for table in tables {
        let sql = format!("SELECT * FROM {table} ORDER BY id");
        let found = app
            .db
            .query_all_raw(Statement::from_string(app.db.get_database_backend(), sql))
            .await
            .expect("a table read");
        rows.push(format!("{table}: {} rows", found.len()));
        for row in found {
            rows.push(format!("{table}: {row:?}"));
        }
    }
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_anomaly_signal_is_logged_once_for_admins_and_changes_nothing_else() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.monitor = askloop::domain::signing::SigningKeys::new(Some("monitor-secret".into()), None);
    })
    .await
    .expect("an app");
    niche(&app.db, "games", NicheStatus::Open).await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    let question = app.ask("games", "q-1").await;
    let signal = json!({"signalId": "sig-1", "subjectType": "question", "subjectId": question.to_string(),
        "kind": "prompt_injection", "severity": "high", "finding": "<script>alert(1)</script> in context"})
    .to_string();
    let signed = |body: &str| {
        askloop::domain::signing::sign(
            "monitor-secret",
            body.as_bytes(),
            chrono::Utc::now().timestamp(),
        )
    };

    let before = snapshot(&app).await;
    let response = app
        .post_with_signature(SIGNALS, &signal, Some(&signed(&signal)))
        .await;
    assert_eq!(response.status(), 201);
    let again = app
        .post_with_signature(SIGNALS, &signal, Some(&signed(&signal)))
        .await;
    assert_eq!(again.status(), 200);
    let again: Value = again.json().await.expect("JSON");
    assert_eq!(again["duplicate"], true);
    // The agent's secret is not the monitor's; no signature at all is refused too.
    assert_eq!(app.post_signed(SIGNALS, &signal).await.status(), 401);
    assert_eq!(
        app.post_with_signature(SIGNALS, &signal, None)
            .await
            .status(),
        401
    );
    for bad in [
        json!({"signalId": "s2", "subjectType": "planet", "subjectId": "1", "kind": "k", "severity": "low", "finding": "f"}),
        json!({"signalId": "s3", "subjectType": "agent", "subjectId": "1", "kind": "k", "severity": "dire", "finding": "f"}),
        json!({"signalId": "s4", "subjectType": "agent", "subjectId": "1", "kind": "k", "severity": "low", "finding": "x".repeat(4001)}),
        json!({"subjectType": "agent", "subjectId": "1", "kind": "k", "severity": "low", "finding": "f"}),
    ] {
        let body = bad.to_string();
        let response = app
            .post_with_signature(SIGNALS, &body, Some(&signed(&body)))
            .await;
        assert_eq!(response.status(), 400, "{bad}");
    }
    let after = snapshot(&app).await;
    assert_eq!(before, after, "a signal changed another table");

    let query = "{ anomalySignals { signalId subjectType subjectId severity finding } }";
    let listed = app.graphql(Some(&root.token), query, json!({})).await;
    assert_eq!(
        listed["data"]["anomalySignals"],
        json!([{"signalId": "sig-1", "subjectType": "question", "subjectId": question.to_string(),
                "severity": "high", "finding": "<script>alert(1)</script> in context"}])
    );
    let refused = app.graphql(Some(&ana.token), query, json!({})).await;
    assert_eq!(error_code(&refused), Some("FORBIDDEN"), "{refused}");

    // Admins can follow them live.
    let mut socket = askloop_tests::socket::GqlSocket::connect(&app.base, Some(&root.token)).await;
    socket
        .subscribe(
            "s",
            "subscription { anomalySignals { signalId severity } }",
            json!({}),
        )
        .await;
    // The subscription starts from the signals already logged: give it time to start, so the
    // next one is new to it.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let next = json!({"signalId": "sig-2", "subjectType": "agent", "subjectId": "agent-7",
        "kind": "spend_spike", "severity": "medium", "finding": "ten questions a second"})
    .to_string();
    let response = app
        .post_with_signature(SIGNALS, &next, Some(&signed(&next)))
        .await;
    assert_eq!(response.status(), 201);
    let live = socket.next_data("s").await;
    assert_eq!(
        live["data"]["anomalySignals"],
        json!({"signalId": "sig-2", "severity": "medium"})
    );
    let mut refused_socket =
        askloop_tests::socket::GqlSocket::connect(&app.base, Some(&ana.token)).await;
    refused_socket
        .subscribe(
            "s",
            "subscription { anomalySignals { signalId } }",
            json!({}),
        )
        .await;
    let refusal = refused_socket.next_data("s").await;
    assert_eq!(
        refusal["errors"][0]["extensions"]["code"], "FORBIDDEN",
        "{refusal}"
    );
}

#[tokio::test]
async fn without_a_monitor_secret_the_signal_route_is_unavailable() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    let body = json!({"signalId": "s", "subjectType": "agent", "subjectId": "1", "kind": "k", "severity": "low", "finding": "f"}).to_string();
    let response = app
        .post_with_signature(SIGNALS, &body, Some(&app.signature(&body)))
        .await;
    assert_eq!(response.status(), 503);
}

#[tokio::test]
async fn admins_set_a_niche_budget_and_others_cannot() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    let set = "mutation($limit: Int, $bounty: Int!, $max: Int!) { setNicheBudget(nicheSlug: \"games\", monthlyBudgetMinor: $limit, bountyMinor: $bounty, maxBountyMinor: $max) { limitMinor bountyMinor maxBountyMinor state } }";
    let done = app
        .graphql(
            Some(&root.token),
            set,
            json!({"limit": 5000, "bounty": 100, "max": 500}),
        )
        .await;
    assert_eq!(
        done["data"]["setNicheBudget"],
        json!({"limitMinor": 5000, "bountyMinor": 100, "maxBountyMinor": 500, "state": "AMPLE"}),
        "{done}"
    );
    for (vars, code) in [
        (
            json!({"limit": -1, "bounty": 0, "max": 0}),
            "BAD_USER_INPUT",
        ),
        (
            json!({"limit": 10, "bounty": 600, "max": 500}),
            "BAD_USER_INPUT",
        ),
    ] {
        let refused = app.graphql(Some(&root.token), set, vars).await;
        assert_eq!(error_code(&refused), Some(code), "{refused}");
    }
    let refused = app
        .graphql(
            Some(&ana.token),
            set,
            json!({"limit": 1, "bounty": 0, "max": 0}),
        )
        .await;
    assert_eq!(error_code(&refused), Some("FORBIDDEN"));
    let stored = niches::Entity::find()
        .one(&app.db)
        .await
        .expect("query")
        .expect("the niche");
    assert_eq!(
        (
            stored.monthly_budget_minor,
            stored.bounty_minor,
            stored.max_bounty_minor
        ),
        (Some(5000), 100, 500)
    );
}

async fn payouts_gather_what_is_owed_once_and_settle_or_fail(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    let other_admin = person(&app.db, "root2", true).await;
    let book = |external: &'static str| {
        let app = &app;
        async move {
            let event = json!({"nicheSlug": "games", "externalId": external, "sourceType": "usage",
                "grossMinor": 10_000, "currency": "USD"});
            let response = app.post_signed(REVENUE, &event.to_string()).await;
            assert_eq!(response.status(), 201);
        }
    };
    book("inv-1").await;
    let schedule =
        "mutation($handle: String!) { schedulePayout(handle: $handle) { id amountMinor status } }";
    let address = "mutation($a: String!) { setPayoutAddress(address: $a) { address verified } }";
    let verify =
        "mutation($a: String!) { verifyPayoutAddress(handle: \"ana\", address: $a) { verified } }";
    let balance = "{ myRevenue { balances { currency owedMinor inFlightMinor paidMinor } payouts { status amountMinor } payoutAccount { verified } } }";

    let refused = app
        .graphql(Some(&root.token), schedule, json!({"handle": "ana"}))
        .await;
    assert_eq!(
        error_code(&refused),
        Some("CONFLICT"),
        "no address yet: {refused}"
    );
    let empty = app
        .graphql(Some(&ana.token), address, json!({"a": "  "}))
        .await;
    assert_eq!(error_code(&empty), Some("BAD_USER_INPUT"));
    let saved = app
        .graphql(Some(&ana.token), address, json!({"a": "IBAN DE00 1234"}))
        .await;
    assert_eq!(
        saved["data"]["setPayoutAddress"]["verified"], false,
        "{saved}"
    );
    let refused = app
        .graphql(Some(&root.token), schedule, json!({"handle": "ana"}))
        .await;
    assert_eq!(
        error_code(&refused),
        Some("CONFLICT"),
        "not verified: {refused}"
    );
    let not_admin = app
        .graphql(Some(&ana.token), verify, json!({"a": "IBAN DE00 1234"}))
        .await;
    assert_eq!(error_code(&not_admin), Some("FORBIDDEN"));
    let verified = app
        .graphql(Some(&root.token), verify, json!({"a": "IBAN DE00 1234"}))
        .await;
    assert_eq!(
        verified["data"]["verifyPayoutAddress"]["verified"], true,
        "{verified}"
    );
    // Changing the address clears the verification.
    let changed = app
        .graphql(Some(&ana.token), address, json!({"a": "IBAN DE99 9999"}))
        .await;
    assert_eq!(changed["data"]["setPayoutAddress"]["verified"], false);
    let refused = app
        .graphql(Some(&root.token), schedule, json!({"handle": "ana"}))
        .await;
    assert_eq!(error_code(&refused), Some("CONFLICT"));
    // The admin checked the old address: verifying it now verifies nothing.
    let stale = app
        .graphql(Some(&root.token), verify, json!({"a": "IBAN DE00 1234"}))
        .await;
    assert_eq!(error_code(&stale), Some("CONFLICT"), "{stale}");
    let listed = app
        .graphql(
            Some(&root.token),
            "{ payoutAccounts { handle address verified } }",
            json!({}),
        )
        .await;
    assert_eq!(
        listed["data"]["payoutAccounts"],
        json!([{"handle": "ana", "address": "IBAN DE99 9999", "verified": false}])
    );
    app.graphql(Some(&root.token), verify, json!({"a": "IBAN DE99 9999"}))
        .await;

    // Two admins at once: one payout.
    let (one, two) = tokio::join!(
        app.graphql(Some(&root.token), schedule, json!({"handle": "ana"})),
        app.graphql(Some(&other_admin.token), schedule, json!({"handle": "ana"})),
    );
    let made: Vec<&Value> = [&one, &two]
        .into_iter()
        .filter(|r| r["errors"].is_null())
        .collect();
    assert_eq!(made.len(), 1, "{one} {two}");
    let loser = if one["errors"].is_null() { &two } else { &one };
    assert_eq!(error_code(loser), Some("CONFLICT"), "{loser}");
    assert_eq!(made[0]["data"]["schedulePayout"]["amountMinor"], 2000);
    let first_payout = made[0]["data"]["schedulePayout"]["id"].clone();
    let mine = app.graphql(Some(&ana.token), balance, json!({})).await;
    assert_eq!(
        mine["data"]["myRevenue"]["balances"][0]["owedMinor"], 0,
        "{mine}"
    );
    assert_eq!(
        mine["data"]["myRevenue"]["balances"][0]["inFlightMinor"],
        2000
    );

    let paid = "mutation($id: ID!, $r: String!) { markPayoutPaid(id: $id, externalReference: $r) { status externalReference } }";
    let failed =
        "mutation($id: ID!, $why: String!) { markPayoutFailed(id: $id, reason: $why) { status } }";
    let done = app
        .graphql(
            Some(&root.token),
            paid,
            json!({"id": first_payout, "r": "wire-1"}),
        )
        .await;
    assert_eq!(done["data"]["markPayoutPaid"]["status"], "paid", "{done}");
    let twice = app
        .graphql(
            Some(&root.token),
            paid,
            json!({"id": first_payout, "r": "wire-9"}),
        )
        .await;
    assert_eq!(error_code(&twice), Some("CONFLICT"));

    // A failed payout leaves its money owed again.
    book("inv-2").await;
    let second = app
        .graphql(Some(&root.token), schedule, json!({"handle": "ana"}))
        .await;
    let second_id = second["data"]["schedulePayout"]["id"].clone();
    let no_reason = app
        .graphql(
            Some(&root.token),
            failed,
            json!({"id": second_id, "why": ""}),
        )
        .await;
    assert_eq!(error_code(&no_reason), Some("BAD_USER_INPUT"));
    let bounced = app
        .graphql(
            Some(&root.token),
            failed,
            json!({"id": second_id, "why": "account closed"}),
        )
        .await;
    assert_eq!(
        bounced["data"]["markPayoutFailed"]["status"], "failed",
        "{bounced}"
    );
    let mine = app.graphql(Some(&ana.token), balance, json!({})).await;
    assert_eq!(
        mine["data"]["myRevenue"]["balances"][0]["owedMinor"], 2000,
        "{mine}"
    );
    assert_eq!(mine["data"]["myRevenue"]["balances"][0]["inFlightMinor"], 0);
    assert_eq!(mine["data"]["myRevenue"]["balances"][0]["paidMinor"], 2000);
    let third = app
        .graphql(Some(&root.token), schedule, json!({"handle": "ana"}))
        .await;
    let third_id = third["data"]["schedulePayout"]["id"].clone();
    let reused = app
        .graphql(
            Some(&root.token),
            paid,
            json!({"id": third_id, "r": "wire-1"}),
        )
        .await;
    assert_eq!(
        error_code(&reused),
        Some("CONFLICT"),
        "a reference is unique: {reused}"
    );
    let settled = app
        .graphql(
            Some(&root.token),
            paid,
            json!({"id": third_id, "r": "wire-2"}),
        )
        .await;
    assert!(settled["errors"].is_null(), "{settled}");
    for (id, code) in [
        (json!("x"), "BAD_USER_INPUT"),
        (json!("99999"), "NOT_FOUND"),
    ] {
        let refused = app
            .graphql(Some(&root.token), paid, json!({"id": id, "r": "w"}))
            .await;
        assert_eq!(error_code(&refused), Some(code));
    }
    let mine = app.graphql(Some(&ana.token), balance, json!({})).await;
    assert_eq!(
        mine["data"]["myRevenue"]["balances"][0]["paidMinor"], 4000,
        "{mine}"
    );
    assert_eq!(
        mine["data"]["myRevenue"]["payouts"],
        json!([{"status": "paid", "amountMinor": 2000}, {"status": "failed", "amountMinor": 2000},
               {"status": "paid", "amountMinor": 2000}])
    );
    let audited = entity::audit_log::Entity::find()
        .filter(entity::audit_log::Column::SubjectType.eq("payout"))
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(audited, 6, "3 schedules, 2 paid, 1 failed");
    let verifications = entity::audit_log::Entity::find()
        .filter(entity::audit_log::Column::Action.eq("payout_account.verified"))
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(verifications, 2, "the stale verification recorded nothing");
}

on_both_backends!(payouts_gather_what_is_owed_once_and_settle_or_fail);

async fn a_niche_with_money_records_cannot_be_deleted_and_archiving_keeps_them(app: TestApp) {
    use sea_orm::ModelTrait;
    // No members, no questions: only the money points at the niche.
    let games = open_niche(&app.db, "games").await;
    let event = json!({"nicheSlug": "games", "externalId": "inv-1", "sourceType": "usage",
        "grossMinor": 500, "currency": "USD"});
    assert_eq!(
        app.post_signed(REVENUE, &event.to_string()).await.status(),
        201
    );
    // The database refuses to delete a niche that money points at.
    let deleted = games.clone().delete(&app.db).await;
    assert!(deleted.is_err(), "a niche with revenue was deleted");
    assert_eq!(
        revenue_events::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        1
    );
    assert_eq!(
        allocations::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        1
    );
    // Archived, it takes no more questions, and its money stays.
    niches::Entity::update_many()
        .col_expr(niches::Column::Status, Expr::value(NicheStatus::Archived))
        .filter(niches::Column::Id.eq(games.id))
        .exec(&app.db)
        .await
        .expect("archived");
    let (status, _) = ask_with_bounty(&app, "games", "late", 0).await;
    assert_eq!(status, 409);
    let root = person(&app.db, "root", true).await;
    let page = app
        .graphql(
            Some(&root.token),
            "{ nicheRevenue(nicheSlug: \"games\") { netMinor eventCount } }",
            json!({}),
        )
        .await;
    assert_eq!(
        page["data"]["nicheRevenue"],
        json!({"netMinor": 500, "eventCount": 1}),
        "{page}"
    );
}

on_both_backends!(a_niche_with_money_records_cannot_be_deleted_and_archiving_keeps_them);

async fn settling_a_payout_twice_at_once_settles_it_once(app: TestApp) {
    use askloop::service::payouts;
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    let now = chrono::Utc::now();
    for (n, currency) in [(1, "USD"), (2, "EUR")] {
        let event = json!({"nicheSlug": "games", "externalId": format!("inv-{n}"), "sourceType": "usage",
            "grossMinor": 10_000, "currency": currency});
        assert_eq!(
            app.post_signed(REVENUE, &event.to_string()).await.status(),
            201
        );
    }
    // Money in two currencies is never added up: one balance each.
    let mine = app
        .graphql(
            Some(&ana.token),
            "{ myRevenue { balances { currency owedMinor } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        mine["data"]["myRevenue"]["balances"],
        json!([{"currency": "EUR", "owedMinor": 2000}, {"currency": "USD", "owedMinor": 2000}])
    );
    payouts::set_address(&app.db, &ana.viewer(), "acct", now)
        .await
        .expect("saved");
    payouts::verify_address(&app.db, Some(&root.viewer()), "ana", "acct", now)
        .await
        .expect("verified");
    let payout = payouts::schedule(&app.db, Some(&root.viewer()), "ana", "usd", now)
        .await
        .expect("scheduled");
    assert_eq!(
        (payout.amount_minor, payout.currency.as_str()),
        (2000, "USD")
    );
    let admin = root.viewer();
    let (paid, failed) = tokio::join!(
        payouts::mark_paid(&app.db, Some(&admin), payout.id, "wire-1", now),
        payouts::mark_failed(&app.db, Some(&admin), payout.id, "bounced", now),
    );
    assert!(
        paid.is_ok() != failed.is_ok(),
        "exactly one settles: {paid:?} {failed:?}"
    );
    let statuses: Vec<_> = allocations::Entity::find()
        .filter(allocations::Column::UserId.eq(ana.id))
        .all(&app.db)
        .await
        .expect("query")
        .into_iter()
        .filter(|a| a.amount_minor == 2000)
        .map(|a| (a.status, a.payout_id))
        .collect();
    use entity::allocations::AllocationStatus::{Accrued, Paid};
    if paid.is_ok() {
        assert!(statuses.contains(&(Paid, Some(payout.id))), "{statuses:?}");
    } else {
        assert!(!statuses.iter().any(|(s, _)| *s == Paid), "{statuses:?}");
        assert_eq!(statuses, vec![(Accrued, None), (Accrued, None)]);
    }
}

async fn a_reservation_from_last_month_still_counts_until_it_settles(app: TestApp) {
    use askloop::service::budget;
    use chrono::TimeZone;
    let niche_id = budgeted_niche(&app, "games", Some(1000), 0).await;
    let niche = niches::Entity::find_by_id(niche_id)
        .one(&app.db)
        .await
        .expect("query")
        .expect("the niche");
    let october = chrono::Utc
        .with_ymd_and_hms(2026, 10, 30, 12, 0, 0)
        .single()
        .expect("a time");
    let november = chrono::Utc
        .with_ymd_and_hms(2026, 11, 2, 12, 0, 0)
        .single()
        .expect("a time");
    let (_, asked) = ask_with_bounty(&app, "games", "old", 0).await;
    let question = asked["question"]["id"].as_i64().expect("an id");
    budget::reserve(&app.db, niche_id, question, 800, october)
        .await
        .expect("reserved");
    let early = budget::budget_of(&app.db, &niche, november)
        .await
        .expect("budget");
    assert_eq!(
        (early.spent, early.reserved, early.remaining()),
        (0, 800, Some(200))
    );
    // Charged in November: it counts as November's spending, and is no longer reserved.
    budget::settle(&app.db, question, BudgetEntryKind::Charge, november)
        .await
        .expect("charged");
    let after = budget::budget_of(&app.db, &niche, november)
        .await
        .expect("budget");
    assert_eq!(
        (after.spent, after.reserved, after.remaining()),
        (800, 0, Some(200))
    );
    // A second settlement of the same question books nothing.
    let again = budget::settle(&app.db, question, BudgetEntryKind::Release, november)
        .await
        .expect("no-op");
    assert_eq!(again, None);
}

on_both_backends!(
    settling_a_payout_twice_at_once_settles_it_once,
    a_reservation_from_last_month_still_counts_until_it_settles,
);

#[tokio::test]
async fn money_views_keep_to_their_readers_and_refuse_bad_input() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let eve = person(&app.db, "eve", false).await;
    let root = person(&app.db, "root", true).await;
    for query in [
        "{ payoutAccounts { handle } }",
        "{ payouts { id } }",
        "{ auditLog { action } }",
        "{ revenueEvents { id } }",
        "{ anomalySignals { signalId } }",
    ] {
        let refused = app.graphql(Some(&ana.token), query, json!({})).await;
        assert_eq!(
            error_code(&refused),
            Some("FORBIDDEN"),
            "{query}: {refused}"
        );
        let anonymous = app.graphql(None, query, json!({})).await;
        assert_eq!(error_code(&anonymous), Some("UNAUTHENTICATED"), "{query}");
    }
    let outsider = app
        .graphql(
            Some(&eve.token),
            "{ nicheRevenue(nicheSlug: \"games\") { netMinor } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&outsider), Some("FORBIDDEN"), "{outsider}");
    let anonymous = app
        .graphql(None, "{ myRevenue { balances { currency } } }", json!({}))
        .await;
    assert_eq!(error_code(&anonymous), Some("UNAUTHENTICATED"));
    let too_long = app
        .graphql(
            Some(&ana.token),
            "mutation($a: String!) { setPayoutAddress(address: $a) { verified } }",
            json!({"a": "x".repeat(201)}),
        )
        .await;
    assert_eq!(error_code(&too_long), Some("BAD_USER_INPUT"), "{too_long}");
    let nobody = app
        .graphql(
            Some(&root.token),
            "mutation { schedulePayout(handle: \"nobody\") { id } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&nobody), Some("NOT_FOUND"), "{nobody}");
    let no_account = app
        .graphql(
            Some(&root.token),
            "mutation { verifyPayoutAddress(handle: \"eve\", address: \"x\") { verified } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&no_account), Some("CONFLICT"), "{no_account}");
}
