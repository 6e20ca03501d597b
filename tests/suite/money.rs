//! The money side: budgets that never overspend (also under 50 concurrent intakes), bounties
//! reserved, charged and released, revenue events booked once and split to the unit, and
//! anomaly signals that change nothing else.

use askloop_tests::fixtures::{niche, open_niche, question_body};
use askloop_tests::people::{Person, operator, person};
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
pub(crate) async fn budgeted_niche(
    app: &TestApp,
    slug: &str,
    limit: Option<i64>,
    bounty: i64,
) -> i64 {
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

pub(crate) async fn ask_with_bounty(
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

pub(crate) async fn entries(app: &TestApp, question: i64) -> Vec<(BudgetEntryKind, i64)> {
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

/// Three questions in `games` (a monthly budget of 1000) with bounties of 300, 200 and 400,
/// still open, and an operator of `games`.
struct Bounties {
    ana: Person,
    answered: i64,
    dismissed: i64,
    expired: i64,
    /// The intake's answer for the first one.
    first: Value,
    /// The intake's answer for the third one.
    third: Value,
}

async fn three_bounties(app: &TestApp) -> Bounties {
    budgeted_niche(app, "games", Some(1000), 0).await;
    let ana = operator(&app.db, "games", "ana").await;
    let (status, first) = ask_with_bounty(app, "games", "answered", 300).await;
    assert_eq!(status, 201, "{first}");
    let answered = first["question"]["id"].as_i64().expect("an id");
    let (_, second) = ask_with_bounty(app, "games", "dismissed", 200).await;
    let dismissed = second["question"]["id"].as_i64().expect("an id");
    let (_, third) = ask_with_bounty(app, "games", "expired", 400).await;
    let expired = third["question"]["id"].as_i64().expect("an id");
    Bounties {
        ana,
        answered,
        dismissed,
        expired,
        first,
        third,
    }
}

/// [`three_bounties`], then the first answered, the second dismissed and the third expired.
async fn three_settled_bounties(app: &TestApp) -> Bounties {
    let bounties = three_bounties(app).await;
    let result = app
        .graphql(
            Some(&bounties.ana.token),
            "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: ANSWERED, optionId: \"ea\"}) { points } }",
            json!({"id": bounties.answered.to_string()}),
        )
        .await;
    assert!(result["errors"].is_null(), "{result}");
    let dismissal = app
        .graphql(
            Some(&bounties.ana.token),
            "mutation($id: ID!) { dismissQuestion(id: $id) { status } }",
            json!({"id": bounties.dismissed.to_string()}),
        )
        .await;
    assert!(dismissal["errors"].is_null(), "{dismissal}");
    entity::agent_questions::Entity::update_many()
        .col_expr(
            entity::agent_questions::Column::ExpiresAt,
            Expr::value(chrono::Utc::now() - chrono::Duration::seconds(1)),
        )
        .filter(entity::agent_questions::Column::Id.eq(bounties.expired))
        .exec(&app.db)
        .await
        .expect("moved");
    askloop::service::questions::expiry::sweep(
        &app.db,
        &askloop::live::ChangeHint::none(),
        100,
        chrono::Utc::now(),
    )
    .await
    .expect("swept");
    bounties
}

async fn intake_reserves_a_bounty_and_reports_what_is_left(app: TestApp) {
    let Bounties { first, third, .. } = three_bounties(&app).await;
    assert_eq!(
        first["budget"],
        json!({"limitMinor": 1000, "spentMinor": 0, "reservedMinor": 300, "remainingMinor": 700,
               "state": "AMPLE", "resetsAt": first["budget"]["resetsAt"]})
    );
    assert_eq!(third["budget"]["state"], "TIGHT");
}

async fn a_bounty_over_what_is_left_by_one_unit_is_refused(app: TestApp) {
    three_bounties(&app).await;
    let (status, refused) = ask_with_bounty(&app, "games", "too-much", 101).await;
    assert_eq!(status, 402);
    assert_eq!(refused["remainingMinor"], 100);
}

async fn answering_charges_a_bounty_and_dismissing_or_expiring_releases_it(app: TestApp) {
    let Bounties {
        answered,
        dismissed,
        expired,
        ..
    } = three_settled_bounties(&app).await;
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
}

async fn a_charged_bounty_is_revenue_split_between_the_answerer_and_the_platform(app: TestApp) {
    let Bounties { ana, answered, .. } = three_settled_bounties(&app).await;
    // The answerer's share (Contributor, 20%), the platform the rest.
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
}

async fn the_budget_shows_the_charge_spent_and_nothing_left_reserved(app: TestApp) {
    let Bounties { ana, .. } = three_settled_bounties(&app).await;
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
}

async fn the_answerer_is_owed_their_share_of_a_bounty_once_it_is_verified(app: TestApp) {
    let Bounties { ana, .. } = three_settled_bounties(&app).await;
    let query = "{ myRevenue { balances { currency heldMinor owedMinor inFlightMinor paidMinor } allocations { amountMinor sourceType nicheSlug status } } }";
    let mine = app.graphql(Some(&ana.token), query, json!({})).await;
    // A new operator's answer is pending review: her part is held, not owed.
    assert_eq!(
        mine["data"]["myRevenue"]["balances"],
        json!([{"currency": "USD", "heldMinor": 60, "owedMinor": 0, "inFlightMinor": 0, "paidMinor": 0}]),
        "{mine}"
    );
    assert_eq!(
        mine["data"]["myRevenue"]["allocations"],
        json!([{"amountMinor": 60, "sourceType": "agent_bounty", "nicheSlug": "games", "status": "HELD"}])
    );
    let root = person(&app.db, "root", true).await;
    let pending = entity::contribution_events::Entity::find()
        .one(&app.db)
        .await
        .expect("query")
        .expect("her contribution");
    let verified = app.verify(&root.token, &pending.id.to_string()).await;
    assert!(verified["errors"].is_null(), "{verified}");
    let mine = app.graphql(Some(&ana.token), query, json!({})).await;
    assert_eq!(
        mine["data"]["myRevenue"]["balances"],
        json!([{"currency": "USD", "heldMinor": 0, "owedMinor": 60, "inFlightMinor": 0, "paidMinor": 0}]),
        "{mine}"
    );
}

async fn only_members_and_admins_read_a_niche_budget(app: TestApp) {
    three_settled_bounties(&app).await;
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

/// A subscription in `games` worth 10,000 gross and 9,600 net.
fn a_subscription() -> Value {
    json!({"nicheSlug": "games", "externalId": "inv-1", "sourceType": "subscription",
        "grossMinor": 10_000, "processingMinor": 290, "networkMinor": 10, "infraMinor": 100,
        "refundMinor": 0, "currency": "usd"})
}

/// Two operators of `games` and [`a_subscription`] booked; what the revenue route answered.
async fn a_subscription_booked_for_two_operators(app: &TestApp) -> (Person, Person, Value) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bo = operator(&app.db, "games", "bo").await;
    let response = app
        .post_signed(REVENUE, &a_subscription().to_string())
        .await;
    assert_eq!(response.status(), 201);
    let booked: Value = response.json().await.expect("JSON");
    (ana, bo, booked)
}

/// Book usage whose costs exceed its gross; what the revenue route answered.
async fn book_usage_costing_more_than_it_made(app: &TestApp) -> Value {
    let costly = json!({"nicheSlug": "games", "externalId": "inv-2", "sourceType": "usage",
        "grossMinor": 100, "refundMinor": 500, "currency": "USD"});
    let response = app.post_signed(REVENUE, &costly.to_string()).await;
    response.json().await.expect("JSON")
}

async fn revenue_splits_the_net_to_the_unit(app: TestApp) {
    let (_, _, booked) = a_subscription_booked_for_two_operators(&app).await;
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
}

async fn the_same_revenue_event_again_is_a_duplicate_that_books_nothing(app: TestApp) {
    let (_, _, booked) = a_subscription_booked_for_two_operators(&app).await;
    let again = app
        .post_signed(REVENUE, &a_subscription().to_string())
        .await;
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
}

async fn costs_above_gross_book_a_net_of_zero_never_less(app: TestApp) {
    a_subscription_booked_for_two_operators(&app).await;
    let body = book_usage_costing_more_than_it_made(&app).await;
    assert_eq!(body["event"]["netMinor"], 0, "{body}");
}

async fn a_bad_or_unsigned_revenue_event_books_nothing(app: TestApp) {
    a_subscription_booked_for_two_operators(&app).await;
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
        .post_with_signature(REVENUE, &a_subscription().to_string(), None)
        .await;
    assert_eq!(unsigned.status(), 401);
    assert_eq!(
        revenue_events::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        before
    );
}

/// Amounts that could overflow a sum are refused at the edge: two events of 9·10^18 minor units
/// are both a 400 naming the field and book nothing, and a niche whose total is near the most
/// askloop keeps refuses the event that would pass it — while its revenue page still answers.
async fn revenue_that_could_overflow_a_sum_is_refused_with_a_400(app: TestApp) {
    let (_, bo, _) = a_subscription_booked_for_two_operators(&app).await;
    for n in 0..2 {
        let huge = json!({"nicheSlug": "games", "externalId": format!("huge-{n}"),
            "sourceType": "usage", "grossMinor": 9_000_000_000_000_000_000_i64, "currency": "USD"});
        let response = app.post_signed(REVENUE, &huge.to_string()).await;
        assert_eq!(response.status(), 400);
        let body: Value = response.json().await.expect("JSON");
        assert!(
            body["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("grossMinor is above the largest amount")),
            "{body}"
        );
    }
    let costly = json!({"nicheSlug": "games", "externalId": "costly", "sourceType": "usage",
        "grossMinor": 1, "refundMinor": 2_000_000_000_000_000_i64, "currency": "USD"});
    assert_eq!(
        app.post_signed(REVENUE, &costly.to_string()).await.status(),
        400,
        "every cost is capped too"
    );
    assert_eq!(
        revenue_events::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        1
    );

    // Bring the niche's total to just under the most it may hold, as years of events would.
    revenue_events::Entity::update_many()
        .col_expr(
            revenue_events::Column::GrossMinor,
            Expr::value(askloop::domain::ledger::MAX_NICHE_GROSS_MINOR - 10),
        )
        .exec(&app.db)
        .await
        .expect("total raised");
    let past = json!({"nicheSlug": "games", "externalId": "past", "sourceType": "usage",
        "grossMinor": 11, "currency": "USD"});
    let response = app.post_signed(REVENUE, &past.to_string()).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.expect("JSON");
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.contains("past the largest revenue total")),
        "{body}"
    );
    let fits = json!({"nicheSlug": "games", "externalId": "fits", "sourceType": "usage",
        "grossMinor": 10, "currency": "USD"});
    assert_eq!(
        app.post_signed(REVENUE, &fits.to_string()).await.status(),
        201
    );
    // A redelivery of a booked event is still a duplicate, not a refusal.
    assert_eq!(
        app.post_signed(REVENUE, &fits.to_string()).await.status(),
        200
    );

    let page = app
        .graphql(
            Some(&bo.token),
            "{ nicheRevenue(nicheSlug: \"games\") { grossMinor eventCount } }",
            json!({}),
        )
        .await;
    assert!(page["errors"].is_null(), "{page}");
    assert_eq!(
        page["data"]["nicheRevenue"]["grossMinor"],
        askloop::domain::ledger::MAX_NICHE_GROSS_MINOR
    );
    assert_eq!(page["data"]["nicheRevenue"]["eventCount"], 2);
}

async fn an_archived_niche_keeps_its_revenue_page(app: TestApp) {
    let (_, bo, _) = a_subscription_booked_for_two_operators(&app).await;
    book_usage_costing_more_than_it_made(&app).await;
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
}

async fn only_admins_list_revenue_events(app: TestApp) {
    let (ana, _, _) = a_subscription_booked_for_two_operators(&app).await;
    book_usage_costing_more_than_it_made(&app).await;
    let root = person(&app.db, "root", true).await;
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

/// A question without an external id is named by its signed request: the same bytes under the
/// same header, sent three times (a replay inside the signature's window), store one question
/// and reserve one bounty; the same body signed at another time is a new question.
async fn a_replayed_request_without_an_external_id_stores_and_reserves_once(app: TestApp) {
    budgeted_niche(&app, "games", Some(1000), 100).await;
    let mut body = question_body("games", "unused");
    body["payload"]
        .as_object_mut()
        .expect("a payload")
        .remove("externalId");
    body["payload"]["bountyMinor"] = json!(100);
    let body = body.to_string();
    let now = chrono::Utc::now().timestamp();
    let header = askloop::domain::signing::sign(askloop_tests::SECRET, body.as_bytes(), now);
    let mut answers = Vec::new();
    for _ in 0..3 {
        let response = app.post_with_signature(INTAKE, &body, Some(&header)).await;
        let status = response.status().as_u16();
        answers.push((status, response.json::<Value>().await.expect("JSON")));
    }
    let statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
    assert_eq!(statuses, [201, 200, 200]);
    let id = answers[0].1["question"]["id"].as_i64().expect("an id");
    for (_, answer) in &answers[1..] {
        assert_eq!(answer["duplicate"], true);
        assert_eq!(answer["question"]["id"].as_i64(), Some(id));
    }
    assert_eq!(entries(&app, id).await, [(BudgetEntryKind::Reserve, 100)]);
    let stored = entity::agent_questions::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .expect("query")
        .expect("stored");
    let digest = askloop::domain::signing::request_digest(now, body.as_bytes());
    assert_eq!(stored.external_id, Some(format!("signed:{digest}")));

    let later = askloop::domain::signing::sign(askloop_tests::SECRET, body.as_bytes(), now - 1);
    let again = app.post_with_signature(INTAKE, &body, Some(&later)).await;
    assert_eq!(again.status(), 201, "signed anew, it is a new question");
    let questions = entity::agent_questions::Entity::find()
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(questions, 2);
}

/// A question without a bounty, answered, still leaves one ledger row: a charge of 0, so the cost
/// ledger counts every exchange.
async fn a_free_exchange_leaves_a_zero_charge_in_the_ledger(app: TestApp) {
    budgeted_niche(&app, "games", Some(1000), 0).await;
    let ana = operator(&app.db, "games", "ana").await;
    let (status, body) = ask_with_bounty(&app, "games", "free", 0).await;
    assert_eq!(status, 201, "{body}");
    let id = body["question"]["id"].as_i64().expect("an id");
    assert_eq!(
        entries(&app, id).await,
        [],
        "nothing is reserved for a free question"
    );
    let answered = app
        .graphql(
            Some(&ana.token),
            "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: ANSWERED, optionId: \"ea\"}) { points } }",
            json!({"id": id.to_string()}),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    assert_eq!(entries(&app, id).await, [(BudgetEntryKind::Charge, 0)]);
}

on_both_backends!(
    fifty_intakes_against_a_budget_for_ten_store_exactly_ten,
    a_free_exchange_leaves_a_zero_charge_in_the_ledger,
    a_replayed_request_without_an_external_id_stores_and_reserves_once,
    intake_reserves_a_bounty_and_reports_what_is_left,
    a_bounty_over_what_is_left_by_one_unit_is_refused,
    answering_charges_a_bounty_and_dismissing_or_expiring_releases_it,
    a_charged_bounty_is_revenue_split_between_the_answerer_and_the_platform,
    the_budget_shows_the_charge_spent_and_nothing_left_reserved,
    the_answerer_is_owed_their_share_of_a_bounty_once_it_is_verified,
    only_members_and_admins_read_a_niche_budget,
    revenue_splits_the_net_to_the_unit,
    the_same_revenue_event_again_is_a_duplicate_that_books_nothing,
    costs_above_gross_book_a_net_of_zero_never_less,
    a_bad_or_unsigned_revenue_event_books_nothing,
    revenue_that_could_overflow_a_sum_is_refused_with_a_400,
    an_archived_niche_keeps_its_revenue_page,
    only_admins_list_revenue_events,
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

const MONITOR_SECRET: &str = "monitor-secret";
const SIGNAL_LOG: &str = "{ anomalySignals { signalId subjectType subjectId severity finding } }";

/// A signature made with the monitor's secret, not the agent's.
fn monitor_signature(body: &str) -> String {
    askloop::domain::signing::sign(
        MONITOR_SECRET,
        body.as_bytes(),
        chrono::Utc::now().timestamp(),
    )
}

/// An app with a monitor secret, an operator and an admin of `games`, and one question there.
struct Monitored {
    app: TestApp,
    ana: Person,
    root: Person,
    question: i64,
}

async fn a_monitored_app() -> Monitored {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.monitor = askloop::domain::signing::SigningKeys::new(Some(MONITOR_SECRET.into()), None);
    })
    .await
    .expect("an app");
    niche(&app.db, "games", NicheStatus::Open).await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    let question = app.ask("games", "q-1").await;
    Monitored {
        app,
        ana,
        root,
        question,
    }
}

/// A high-severity finding about `question`, with markup in it.
fn a_signal_about(question: i64) -> String {
    json!({"signalId": "sig-1", "subjectType": "question", "subjectId": question.to_string(),
        "kind": "prompt_injection", "severity": "high", "finding": "<script>alert(1)</script> in context"})
    .to_string()
}

/// POST `body` to the signal route signed by the monitor.
async fn post_signal(app: &TestApp, body: &str) -> reqwest::Response {
    app.post_with_signature(SIGNALS, body, Some(&monitor_signature(body)))
        .await
}

/// Everything the signal route is sent in these tests: a signal, the same again, one with the
/// agent's signature, one with none, and malformed ones; asserts each answer.
async fn send_every_kind_of_signal(app: &TestApp, question: i64) {
    let signal = a_signal_about(question);
    assert_eq!(post_signal(app, &signal).await.status(), 201);
    let again = post_signal(app, &signal).await;
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
        let response = post_signal(app, &bad.to_string()).await;
        assert_eq!(response.status(), 400, "{bad}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_anomaly_signal_is_logged_once_and_refused_with_a_wrong_signature_or_bad_fields() {
    let Monitored { app, question, .. } = a_monitored_app().await;
    send_every_kind_of_signal(&app, question).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_anomaly_signal_changes_no_other_table() {
    let Monitored { app, question, .. } = a_monitored_app().await;
    let before = snapshot(&app).await;
    send_every_kind_of_signal(&app, question).await;
    let after = snapshot(&app).await;
    assert_eq!(before, after, "a signal changed another table");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn only_admins_read_the_signal_log() {
    let Monitored {
        app,
        ana,
        root,
        question,
    } = a_monitored_app().await;
    send_every_kind_of_signal(&app, question).await;
    let listed = app.graphql(Some(&root.token), SIGNAL_LOG, json!({})).await;
    assert_eq!(
        listed["data"]["anomalySignals"],
        json!([{"signalId": "sig-1", "subjectType": "QUESTION", "subjectId": question.to_string(),
                "severity": "HIGH", "finding": "<script>alert(1)</script> in context"}])
    );
    let refused = app.graphql(Some(&ana.token), SIGNAL_LOG, json!({})).await;
    assert_eq!(error_code(&refused), Some("FORBIDDEN"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn admins_follow_new_anomaly_signals_live() {
    let Monitored {
        app,
        root,
        question,
        ..
    } = a_monitored_app().await;
    assert_eq!(
        post_signal(&app, &a_signal_about(question)).await.status(),
        201
    );
    let served = app.gauge(askloop_tests::wait::SUBSCRIPTIONS_SERVED).await;
    let mut socket = askloop_tests::socket::GqlSocket::connect(&app.base, Some(&root.token)).await;
    socket
        .subscribe(
            "s",
            "subscription { anomalySignals { signalId severity } }",
            json!({}),
        )
        .await;
    // The subscription starts from the signals already logged: wait until it is registered, so
    // the next one is new to it.
    app.until_subscriptions_served(served + 1).await;
    let next = json!({"signalId": "sig-2", "subjectType": "agent", "subjectId": "agent-7",
        "kind": "spend_spike", "severity": "medium", "finding": "ten questions a second"})
    .to_string();
    assert_eq!(post_signal(&app, &next).await.status(), 201);
    let live = socket.next_data("s").await;
    assert_eq!(
        live["data"]["anomalySignals"],
        json!({"signalId": "sig-2", "severity": "MEDIUM"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn operators_cannot_follow_anomaly_signals() {
    let Monitored { app, ana, .. } = a_monitored_app().await;
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

const SET_BUDGET: &str = "mutation($limit: Int, $bounty: Int!, $max: Int!) { setNicheBudget(nicheSlug: \"games\", monthlyBudgetMinor: $limit, bountyMinor: $bounty, maxBountyMinor: $max) { limitMinor bountyMinor maxBountyMinor state } }";

/// An app with `games` open, an operator of it and an admin.
async fn a_niche_an_operator_and_an_admin() -> (TestApp, Person, Person) {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    (app, ana, root)
}

/// `games`'s stored limit, bounty and largest bounty.
async fn stored_budget(app: &TestApp) -> (Option<i64>, i64, i64) {
    let stored = niches::Entity::find()
        .one(&app.db)
        .await
        .expect("query")
        .expect("the niche");
    (
        stored.monthly_budget_minor,
        stored.bounty_minor,
        stored.max_bounty_minor,
    )
}

/// `admin` sets `games`'s budget to 5,000 with bounties of 100 up to 500; the answer.
async fn set_the_budget(app: &TestApp, admin: &Person) -> Value {
    app.graphql(
        Some(&admin.token),
        SET_BUDGET,
        json!({"limit": 5000, "bounty": 100, "max": 500}),
    )
    .await
}

#[tokio::test]
async fn an_admin_sets_a_niche_budget() {
    let (app, _, root) = a_niche_an_operator_and_an_admin().await;
    let done = set_the_budget(&app, &root).await;
    assert_eq!(
        done["data"]["setNicheBudget"],
        json!({"limitMinor": 5000, "bountyMinor": 100, "maxBountyMinor": 500, "state": "AMPLE"}),
        "{done}"
    );
    assert_eq!(stored_budget(&app).await, (Some(5000), 100, 500));
}

#[tokio::test]
async fn a_negative_budget_or_a_bounty_over_its_maximum_is_refused() {
    let (app, _, root) = a_niche_an_operator_and_an_admin().await;
    set_the_budget(&app, &root).await;
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
        let refused = app.graphql(Some(&root.token), SET_BUDGET, vars).await;
        assert_eq!(error_code(&refused), Some(code), "{refused}");
    }
    assert_eq!(stored_budget(&app).await, (Some(5000), 100, 500));
}

#[tokio::test]
async fn operators_cannot_set_a_niche_budget() {
    let (app, ana, root) = a_niche_an_operator_and_an_admin().await;
    set_the_budget(&app, &root).await;
    let refused = app
        .graphql(
            Some(&ana.token),
            SET_BUDGET,
            json!({"limit": 1, "bounty": 0, "max": 0}),
        )
        .await;
    assert_eq!(error_code(&refused), Some("FORBIDDEN"));
    assert_eq!(stored_budget(&app).await, (Some(5000), 100, 500));
}

pub(crate) const SCHEDULE: &str =
    "mutation($handle: String!) { schedulePayout(handle: $handle) { id amountMinor status } }";
pub(crate) const SET_ADDRESS: &str =
    "mutation($a: String!) { setPayoutAddress(address: $a) { address verified } }";
const VERIFY_ANA: &str =
    "mutation($a: String!) { verifyPayoutAddress(handle: \"ana\", address: $a) { verified } }";
pub(crate) const BALANCE: &str = "{ myRevenue { balances { currency owedMinor inFlightMinor paidMinor } payouts { status amountMinor } payoutAccount { verified } } }";
const MARK_PAID: &str = "mutation($id: ID!, $r: String!) { markPayoutPaid(id: $id, externalReference: $r) { status externalReference } }";
const MARK_FAILED: &str =
    "mutation($id: ID!, $why: String!) { markPayoutFailed(id: $id, reason: $why) { status } }";

/// An operator of `games` owed 2,000 (her share of one usage event) and two admins.
struct Payroll {
    ana: Person,
    root: Person,
    other_admin: Person,
}

/// Book 10,000 of usage in `games` as `external`.
pub(crate) async fn book_usage(app: &TestApp, external: &str) {
    let event = json!({"nicheSlug": "games", "externalId": external, "sourceType": "usage",
        "grossMinor": 10_000, "currency": "USD"});
    let response = app.post_signed(REVENUE, &event.to_string()).await;
    assert_eq!(response.status(), 201);
}

async fn an_operator_owed_money(app: &TestApp) -> Payroll {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    let other_admin = person(&app.db, "root2", true).await;
    book_usage(app, "inv-1").await;
    Payroll {
        ana,
        root,
        other_admin,
    }
}

/// [`an_operator_owed_money`] whose payout address an admin has verified.
async fn a_payee_with_a_verified_address(app: &TestApp) -> Payroll {
    let payroll = an_operator_owed_money(app).await;
    let saved = app
        .graphql(
            Some(&payroll.ana.token),
            SET_ADDRESS,
            json!({"a": "IBAN DE99 9999"}),
        )
        .await;
    assert!(saved["errors"].is_null(), "{saved}");
    let verified = app
        .graphql(
            Some(&payroll.root.token),
            VERIFY_ANA,
            json!({"a": "IBAN DE99 9999"}),
        )
        .await;
    assert_eq!(
        verified["data"]["verifyPayoutAddress"]["verified"], true,
        "{verified}"
    );
    payroll
}

/// How many audit rows are about payouts: refused steps must add none.
async fn payout_audit_rows(app: &TestApp) -> u64 {
    entity::audit_log::Entity::find()
        .filter(entity::audit_log::Column::SubjectType.eq("payout"))
        .count(&app.db)
        .await
        .expect("count")
}

/// Schedule a payout to ana as `admin`; its id.
pub(crate) async fn schedule_payout(app: &TestApp, admin: &Person) -> Value {
    let scheduled = app
        .graphql(Some(&admin.token), SCHEDULE, json!({"handle": "ana"}))
        .await;
    assert!(scheduled["errors"].is_null(), "{scheduled}");
    scheduled["data"]["schedulePayout"]["id"].clone()
}

/// Mark payout `id` paid with reference `reference`; the whole answer.
pub(crate) async fn mark_paid(app: &TestApp, admin: &Person, id: &Value, reference: &str) -> Value {
    app.graphql(
        Some(&admin.token),
        MARK_PAID,
        json!({"id": id, "r": reference}),
    )
    .await
}

/// [`a_payee_with_a_verified_address`] whose first payout was paid as `wire-1`, then who was
/// owed again from a second usage event, and whose second payout failed.
async fn a_payout_paid_and_one_failed(app: &TestApp) -> Payroll {
    let payroll = a_payee_with_a_verified_address(app).await;
    let first = schedule_payout(app, &payroll.root).await;
    let done = mark_paid(app, &payroll.root, &first, "wire-1").await;
    assert_eq!(done["data"]["markPayoutPaid"]["status"], "PAID", "{done}");
    book_usage(app, "inv-2").await;
    let second = schedule_payout(app, &payroll.root).await;
    let bounced = app
        .graphql(
            Some(&payroll.root.token),
            MARK_FAILED,
            json!({"id": second, "why": "account closed"}),
        )
        .await;
    assert_eq!(
        bounced["data"]["markPayoutFailed"]["status"], "FAILED",
        "{bounced}"
    );
    payroll
}

/// [`a_payout_paid_and_one_failed`], then what was owed again paid as `wire-2`.
async fn two_payouts_paid_and_one_failed(app: &TestApp) -> Payroll {
    let payroll = a_payout_paid_and_one_failed(app).await;
    let third = schedule_payout(app, &payroll.root).await;
    let settled = mark_paid(app, &payroll.root, &third, "wire-2").await;
    assert!(settled["errors"].is_null(), "{settled}");
    payroll
}

async fn a_payout_needs_an_address_an_admin_verified(app: TestApp) {
    let Payroll { ana, root, .. } = an_operator_owed_money(&app).await;
    let refused = app
        .graphql(Some(&root.token), SCHEDULE, json!({"handle": "ana"}))
        .await;
    assert_eq!(
        error_code(&refused),
        Some("CONFLICT"),
        "no address yet: {refused}"
    );
    let empty = app
        .graphql(Some(&ana.token), SET_ADDRESS, json!({"a": "  "}))
        .await;
    assert_eq!(error_code(&empty), Some("BAD_USER_INPUT"));
    let saved = app
        .graphql(
            Some(&ana.token),
            SET_ADDRESS,
            json!({"a": "IBAN DE00 1234"}),
        )
        .await;
    assert_eq!(
        saved["data"]["setPayoutAddress"]["verified"], false,
        "{saved}"
    );
    let refused = app
        .graphql(Some(&root.token), SCHEDULE, json!({"handle": "ana"}))
        .await;
    assert_eq!(
        error_code(&refused),
        Some("CONFLICT"),
        "not verified: {refused}"
    );
    let not_admin = app
        .graphql(Some(&ana.token), VERIFY_ANA, json!({"a": "IBAN DE00 1234"}))
        .await;
    assert_eq!(error_code(&not_admin), Some("FORBIDDEN"));
    let verified = app
        .graphql(
            Some(&root.token),
            VERIFY_ANA,
            json!({"a": "IBAN DE00 1234"}),
        )
        .await;
    assert_eq!(
        verified["data"]["verifyPayoutAddress"]["verified"], true,
        "{verified}"
    );
}

async fn changing_the_payout_address_clears_its_verification(app: TestApp) {
    let Payroll { ana, root, .. } = an_operator_owed_money(&app).await;
    app.graphql(
        Some(&ana.token),
        SET_ADDRESS,
        json!({"a": "IBAN DE00 1234"}),
    )
    .await;
    let verified = app
        .graphql(
            Some(&root.token),
            VERIFY_ANA,
            json!({"a": "IBAN DE00 1234"}),
        )
        .await;
    assert_eq!(
        verified["data"]["verifyPayoutAddress"]["verified"], true,
        "{verified}"
    );
    let changed = app
        .graphql(
            Some(&ana.token),
            SET_ADDRESS,
            json!({"a": "IBAN DE99 9999"}),
        )
        .await;
    assert_eq!(changed["data"]["setPayoutAddress"]["verified"], false);
    let refused = app
        .graphql(Some(&root.token), SCHEDULE, json!({"handle": "ana"}))
        .await;
    assert_eq!(error_code(&refused), Some("CONFLICT"));
    // The admin checked the old address: verifying it now verifies nothing.
    let stale = app
        .graphql(
            Some(&root.token),
            VERIFY_ANA,
            json!({"a": "IBAN DE00 1234"}),
        )
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
    app.graphql(
        Some(&root.token),
        VERIFY_ANA,
        json!({"a": "IBAN DE99 9999"}),
    )
    .await;
    let verifications = entity::audit_log::Entity::find()
        .filter(entity::audit_log::Column::Action.eq("payout_account.verified"))
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(verifications, 2, "the stale verification recorded nothing");
}

async fn two_admins_scheduling_at_once_make_one_payout_of_everything_owed(app: TestApp) {
    let Payroll {
        ana,
        root,
        other_admin,
    } = a_payee_with_a_verified_address(&app).await;
    let (one, two) = tokio::join!(
        app.graphql(Some(&root.token), SCHEDULE, json!({"handle": "ana"})),
        app.graphql(Some(&other_admin.token), SCHEDULE, json!({"handle": "ana"})),
    );
    let made: Vec<&Value> = [&one, &two]
        .into_iter()
        .filter(|r| r["errors"].is_null())
        .collect();
    assert_eq!(made.len(), 1, "{one} {two}");
    let loser = if one["errors"].is_null() { &two } else { &one };
    assert_eq!(error_code(loser), Some("CONFLICT"), "{loser}");
    assert_eq!(made[0]["data"]["schedulePayout"]["amountMinor"], 2000);
    let mine = app.graphql(Some(&ana.token), BALANCE, json!({})).await;
    assert_eq!(
        mine["data"]["myRevenue"]["balances"][0]["owedMinor"], 0,
        "{mine}"
    );
    assert_eq!(
        mine["data"]["myRevenue"]["balances"][0]["inFlightMinor"],
        2000
    );
    assert_eq!(
        payout_audit_rows(&app).await,
        1,
        "the refused schedule recorded nothing"
    );
}

async fn a_payout_is_marked_paid_once(app: TestApp) {
    let Payroll { root, .. } = a_payee_with_a_verified_address(&app).await;
    let payout = schedule_payout(&app, &root).await;
    let done = mark_paid(&app, &root, &payout, "wire-1").await;
    assert_eq!(done["data"]["markPayoutPaid"]["status"], "PAID", "{done}");
    let twice = mark_paid(&app, &root, &payout, "wire-9").await;
    assert_eq!(error_code(&twice), Some("CONFLICT"));
    assert_eq!(payout_audit_rows(&app).await, 2, "scheduled and paid");
}

async fn a_failed_payout_needs_a_reason_and_leaves_its_money_owed_again(app: TestApp) {
    let Payroll { ana, root, .. } = a_payee_with_a_verified_address(&app).await;
    let first = schedule_payout(&app, &root).await;
    mark_paid(&app, &root, &first, "wire-1").await;
    book_usage(&app, "inv-2").await;
    let second = schedule_payout(&app, &root).await;
    let no_reason = app
        .graphql(
            Some(&root.token),
            MARK_FAILED,
            json!({"id": second, "why": ""}),
        )
        .await;
    assert_eq!(error_code(&no_reason), Some("BAD_USER_INPUT"));
    let bounced = app
        .graphql(
            Some(&root.token),
            MARK_FAILED,
            json!({"id": second, "why": "account closed"}),
        )
        .await;
    assert_eq!(
        bounced["data"]["markPayoutFailed"]["status"], "FAILED",
        "{bounced}"
    );
    let mine = app.graphql(Some(&ana.token), BALANCE, json!({})).await;
    assert_eq!(
        mine["data"]["myRevenue"]["balances"][0]["owedMinor"], 2000,
        "{mine}"
    );
    assert_eq!(mine["data"]["myRevenue"]["balances"][0]["inFlightMinor"], 0);
    assert_eq!(mine["data"]["myRevenue"]["balances"][0]["paidMinor"], 2000);
    assert_eq!(
        payout_audit_rows(&app).await,
        4,
        "two schedules, one paid, one failed"
    );
}

async fn a_payout_reference_is_used_once(app: TestApp) {
    let Payroll { root, .. } = a_payout_paid_and_one_failed(&app).await;
    let third = schedule_payout(&app, &root).await;
    let reused = mark_paid(&app, &root, &third, "wire-1").await;
    assert_eq!(
        error_code(&reused),
        Some("CONFLICT"),
        "a reference is unique: {reused}"
    );
    let settled = mark_paid(&app, &root, &third, "wire-2").await;
    assert!(settled["errors"].is_null(), "{settled}");
    assert_eq!(
        payout_audit_rows(&app).await,
        6,
        "3 schedules, 2 paid, 1 failed"
    );
}

async fn marking_a_payout_paid_refuses_a_malformed_or_unknown_id(app: TestApp) {
    let Payroll { root, .. } = a_payee_with_a_verified_address(&app).await;
    for (id, code) in [
        (json!("x"), "BAD_USER_INPUT"),
        (json!("99999"), "NOT_FOUND"),
    ] {
        let refused = mark_paid(&app, &root, &id, "w").await;
        assert_eq!(error_code(&refused), Some(code));
    }
    assert_eq!(payout_audit_rows(&app).await, 0);
}

async fn the_payee_sees_every_payout_and_everything_paid(app: TestApp) {
    let Payroll { ana, .. } = two_payouts_paid_and_one_failed(&app).await;
    let mine = app.graphql(Some(&ana.token), BALANCE, json!({})).await;
    assert_eq!(
        mine["data"]["myRevenue"]["balances"][0]["paidMinor"], 4000,
        "{mine}"
    );
    assert_eq!(
        mine["data"]["myRevenue"]["payouts"],
        json!([{"status": "PAID", "amountMinor": 2000}, {"status": "FAILED", "amountMinor": 2000},
               {"status": "PAID", "amountMinor": 2000}])
    );
}

async fn every_payout_step_is_audited(app: TestApp) {
    two_payouts_paid_and_one_failed(&app).await;
    assert_eq!(
        payout_audit_rows(&app).await,
        6,
        "3 schedules, 2 paid, 1 failed"
    );
}

on_both_backends!(
    a_payout_needs_an_address_an_admin_verified,
    changing_the_payout_address_clears_its_verification,
    two_admins_scheduling_at_once_make_one_payout_of_everything_owed,
    a_payout_is_marked_paid_once,
    a_failed_payout_needs_a_reason_and_leaves_its_money_owed_again,
    a_payout_reference_is_used_once,
    marking_a_payout_paid_refuses_a_malformed_or_unknown_id,
    the_payee_sees_every_payout_and_everything_paid,
    every_payout_step_is_audited,
);

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

/// An operator of `games` owed money in two currencies (2,000 USD and 2,000 EUR), and an admin.
async fn owed_in_two_currencies(app: &TestApp) -> (Person, Person) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    for (n, currency) in [(1, "USD"), (2, "EUR")] {
        let event = json!({"nicheSlug": "games", "externalId": format!("inv-{n}"), "sourceType": "usage",
            "grossMinor": 10_000, "currency": currency});
        assert_eq!(
            app.post_signed(REVENUE, &event.to_string()).await.status(),
            201
        );
    }
    (ana, root)
}

async fn money_in_two_currencies_is_never_added_up(app: TestApp) {
    let (ana, _) = owed_in_two_currencies(&app).await;
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
}

async fn settling_a_payout_twice_at_once_settles_it_once(app: TestApp) {
    use askloop::service::money::payouts;
    let (ana, root) = owed_in_two_currencies(&app).await;
    let now = chrono::Utc::now();
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
    use askloop::service::money::budget;
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
    let txn = app.db.begin_write().await.expect("begin");
    let reserved = budget::try_reserve(&txn, niche_id, question, 800, october)
        .await
        .expect("reserved");
    txn.commit().await.expect("committed");
    assert!(reserved);
    let early = budget::budget_of(&app.db, &niche, november)
        .await
        .expect("budget");
    assert_eq!(
        (early.spent, early.reserved, early.remaining()),
        (0, 800, Some(200))
    );
    // Charged in November: it counts as November's spending, and is no longer reserved.
    let txn = app.db.begin_write().await.expect("begin");
    budget::settle(&txn, niche_id, question, BudgetEntryKind::Charge, november)
        .await
        .expect("charged");
    txn.commit().await.expect("committed");
    let after = budget::budget_of(&app.db, &niche, november)
        .await
        .expect("budget");
    assert_eq!(
        (after.spent, after.reserved, after.remaining()),
        (800, 0, Some(200))
    );
    // A second settlement of the same question books nothing.
    let txn = app.db.begin_write().await.expect("begin");
    let again = budget::settle(&txn, niche_id, question, BudgetEntryKind::Release, november)
        .await
        .expect("no-op");
    txn.commit().await.expect("committed");
    assert_eq!(again, None);
}

on_both_backends!(
    money_in_two_currencies_is_never_added_up,
    settling_a_payout_twice_at_once_settles_it_once,
    a_reservation_from_last_month_still_counts_until_it_settles,
);

#[tokio::test]
async fn admin_money_views_refuse_operators_and_anonymous_callers() {
    let (app, ana, _) = a_niche_an_operator_and_an_admin().await;
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
}

#[tokio::test]
async fn a_niches_revenue_is_refused_to_outsiders_and_my_revenue_to_anonymous_callers() {
    let (app, _, _) = a_niche_an_operator_and_an_admin().await;
    let eve = person(&app.db, "eve", false).await;
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
}

#[tokio::test]
async fn a_payout_address_longer_than_200_characters_is_refused() {
    let (app, ana, _) = a_niche_an_operator_and_an_admin().await;
    let too_long = app
        .graphql(
            Some(&ana.token),
            "mutation($a: String!) { setPayoutAddress(address: $a) { verified } }",
            json!({"a": "x".repeat(201)}),
        )
        .await;
    assert_eq!(error_code(&too_long), Some("BAD_USER_INPUT"), "{too_long}");
}

#[tokio::test]
async fn a_payout_to_nobody_or_to_someone_without_an_address_is_refused() {
    let (app, _, root) = a_niche_an_operator_and_an_admin().await;
    person(&app.db, "eve", false).await;
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
