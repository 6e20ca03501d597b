//! Review that sees (docs/contract.md#graphql): a review item carries the question it answers,
//! the answer with its option's label, the answerer's record in the niche and how long the
//! answer took; a question carries its budget entries, and its deliveries for admins only. Who
//! may read a question is the same rule wherever it is reached.

use askloop_tests::fixtures::open_niche;
use askloop_tests::people::{Person, operator, person};
use askloop_tests::{TestApp, error_code, on_both_backends};
use chrono::{Duration, Utc};
use entity::agent_questions;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};

/// How long before its answer the question under review arrived.
pub const ARRIVED_BEFORE: Duration = Duration::minutes(90);

/// A niche with a bounty, an admin, and `ana`, whose answers have been verified, rejected and
/// reversed once each before the answer now under review; `ben` declined the same question.
pub struct ReviewScene {
    /// The admin.
    pub root: Person,
    /// The answerer.
    pub ana: Person,
    /// Another member, who declined.
    pub ben: Person,
    /// The question whose answer awaits review.
    pub question: i64,
    /// The contribution awaiting review.
    pub contribution: String,
}

/// `person` acts on question `id`.
pub async fn act(app: &TestApp, person: &Person, id: i64, input: Value) -> Value {
    let mut input = input;
    input["questionId"] = json!(id.to_string());
    let body = app.answer(&person.token, input).await;
    assert!(body["errors"].is_null(), "{body}");
    body
}

/// `root` decides on contribution `id` with `mutation` (`verifyContribution`, …).
async fn decide(app: &TestApp, root: &Person, id: &str, mutation: &str) {
    let body = app
        .graphql(
            Some(&root.token),
            &format!(
                "mutation($id: ID!) {{ {mutation}(id: $id, note: \"checked\") {{ status }} }}"
            ),
            json!({ "id": id }),
        )
        .await;
    assert!(body["errors"].is_null(), "{mutation}: {body}");
}

async fn newest_contribution(app: &TestApp, root: &Person) -> String {
    let body = app
        .graphql(
            Some(&root.token),
            "{ reviewQueue(first: 1) { id } }",
            json!({}),
        )
        .await;
    body["data"]["reviewQueue"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("a contribution awaits review: {body}"))
        .to_owned()
}

/// Build the [`ReviewScene`] on `app`.
pub async fn review_scene(app: &TestApp) -> ReviewScene {
    open_niche(&app.db, "games").await;
    app.db
        .execute_unprepared("UPDATE niches SET bounty_minor = 250, max_bounty_minor = 1000")
        .await
        .expect("a bounty");
    let root = person(&app.db, "root", true).await;
    let ana = operator(&app.db, "games", "ana").await;
    let ben = operator(&app.db, "games", "ben").await;
    let choose_full = json!({"kind": "ANSWERED", "optionId": "full"});
    for (external_id, decisions) in [
        ("earlier-rejected", &["rejectContribution"][..]),
        ("earlier-verified", &["verifyContribution"][..]),
        (
            "earlier-reversed",
            &["verifyContribution", "reverseContribution"][..],
        ),
    ] {
        let id = app.ask("games", external_id).await;
        act(app, &ana, id, choose_full.clone()).await;
        let contribution = newest_contribution(app, &root).await;
        for decision in decisions {
            decide(app, &root, &contribution, decision).await;
        }
    }
    let question = app.ask("games", "under-review").await;
    agent_questions::Entity::update_many()
        .col_expr(
            agent_questions::Column::CreatedAt,
            Expr::value(Utc::now() - ARRIVED_BEFORE),
        )
        .filter(agent_questions::Column::Id.eq(question))
        .exec(&app.db)
        .await
        .expect("the question arrived earlier");
    act(
        app,
        &ben,
        question,
        json!({"kind": "INSUFFICIENT_CONTEXT", "body": "Which store's date?"}),
    )
    .await;
    act(
        app,
        &ana,
        question,
        json!({"kind": "ANSWERED", "optionId": "full", "body": "The 1.0 date is the release."}),
    )
    .await;
    let contribution = newest_contribution(app, &root).await;
    ReviewScene {
        root,
        ana,
        ben,
        question,
        contribution,
    }
}

const REVIEW_QUEUE: &str = r#"{ reviewQueue(first: 10) {
  id
  secondsToAnswer
  contributor { handle verifiedCount rejectedCount pendingCount reversedCount score tier { name } }
  answer { optionId optionLabel body answeredBy review }
  question { id title context options { id label } answers { kind answeredBy body optionLabel contributionId } }
} }"#;

async fn a_review_item_shows_the_question_the_chosen_option_the_words_and_the_record(app: TestApp) {
    let scene = review_scene(&app).await;
    let body = app
        .graphql(Some(&scene.root.token), REVIEW_QUEUE, json!({}))
        .await;
    assert!(body["errors"].is_null(), "{body}");
    let items = body["data"]["reviewQueue"].as_array().expect("a list");
    assert_eq!(items.len(), 1, "only the answer under review waits: {body}");
    let item = &items[0];
    assert_eq!(item["id"], json!(scene.contribution));

    let question = &item["question"];
    assert_eq!(question["id"], json!(scene.question.to_string()));
    assert_eq!(question["title"], "Which date?");
    assert_eq!(
        question["context"],
        "Steam lists both an early-access date and a 1.0 date."
    );
    assert_eq!(
        question["options"],
        json!([{"id": "ea", "label": "Early access"}, {"id": "full", "label": "1.0"}])
    );
    // The other member's decline is on the question, with its words.
    assert_eq!(
        question["answers"],
        json!([
            {"kind": "INSUFFICIENT_CONTEXT", "answeredBy": "ben", "body": "Which store's date?",
             "optionLabel": null, "contributionId": null},
            {"kind": "ANSWERED", "answeredBy": "ana", "body": "The 1.0 date is the release.",
             "optionLabel": "1.0", "contributionId": scene.contribution},
        ])
    );

    assert_eq!(
        item["answer"],
        json!({"optionId": "full", "optionLabel": "1.0", "body": "The 1.0 date is the release.",
               "answeredBy": "ana", "review": "PENDING"})
    );

    let record = &item["contributor"];
    assert_eq!(record["handle"], "ana");
    assert_eq!(record["verifiedCount"], 1, "{record}");
    assert_eq!(record["rejectedCount"], 1, "{record}");
    assert_eq!(record["pendingCount"], 1, "{record}");
    assert_eq!(record["reversedCount"], 1, "{record}");
    let tiers = app
        .graphql(None, "{ tiers { name minScore } }", json!({}))
        .await;
    let lowest = &tiers["data"]["tiers"][0];
    assert!(
        record["score"].as_i64().expect("a score")
            < tiers["data"]["tiers"][1]["minScore"]
                .as_i64()
                .expect("a second tier"),
        "{record} {tiers}"
    );
    assert_eq!(record["tier"]["name"], lowest["name"], "{record} {tiers}");

    // From the question's arrival to the answer: ninety minutes and the test's own seconds.
    let seconds = item["secondsToAnswer"].as_i64().expect("seconds");
    let floor = ARRIVED_BEFORE.num_seconds();
    assert!(
        (floor..floor + 120).contains(&seconds),
        "{seconds} s from arrival to answer"
    );
}

async fn only_admins_read_the_review_queue_and_another_persons_record(app: TestApp) {
    let scene = review_scene(&app).await;
    let refused = app
        .graphql(Some(&scene.ana.token), REVIEW_QUEUE, json!({}))
        .await;
    assert_eq!(error_code(&refused), Some("FORBIDDEN"), "{refused}");
    assert!(refused["data"].is_null(), "{refused}");
    // Ana's own contributions show her own record, and the questions she answered.
    let own = app
        .graphql(
            Some(&scene.ana.token),
            "{ myContributions(first: 1) { contributor { handle pendingCount } question { id } answer { optionLabel } } }",
            json!({}),
        )
        .await;
    assert!(own["errors"].is_null(), "{own}");
    let mine = &own["data"]["myContributions"][0];
    assert_eq!(
        mine["contributor"],
        json!({"handle": "ana", "pendingCount": 1})
    );
    assert_eq!(mine["question"]["id"], json!(scene.question.to_string()));
    assert_eq!(mine["answer"]["optionLabel"], "1.0");
}

async fn a_suspended_member_no_longer_reads_a_question_through_their_contributions(app: TestApp) {
    let scene = review_scene(&app).await;
    let suspended = app
        .graphql(
            Some(&scene.root.token),
            "mutation { suspendMember(nicheSlug: \"games\", handle: \"ana\") { status } }",
            json!({}),
        )
        .await;
    assert!(suspended["errors"].is_null(), "{suspended}");
    let body = app
        .graphql(
            Some(&scene.ana.token),
            "{ myContributions(first: 1) { points question { context } } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&body), Some("FORBIDDEN"), "{body}");
    let mine = &body["data"]["myContributions"][0];
    assert!(mine["question"].is_null(), "{body}");
    assert_eq!(mine["points"].as_i64().map(|p| p > 0), Some(true), "{body}");
}

const BUDGET_AND_DELIVERIES: &str = r#"query($id: ID!) {
  question(id: $id) { id budgetEntries { kind amountMinor questionId } deliveries { eventType status attempts { outcome } } }
}"#;

const BUDGET_ONLY: &str = r#"query($id: ID!) {
  question(id: $id) { id budgetEntries { kind amountMinor questionId } }
}"#;

async fn a_question_shows_its_budget_entries_and_only_admins_its_deliveries(app: TestApp) {
    let scene = review_scene(&app).await;
    let id = json!({"id": scene.question.to_string()});

    // A member reads the budget entries, oldest first: the bounty reserved, then charged.
    let member = app
        .graphql(Some(&scene.ben.token), BUDGET_ONLY, id.clone())
        .await;
    assert!(member["errors"].is_null(), "{member}");
    let entries = member["data"]["question"]["budgetEntries"]
        .as_array()
        .expect("a list");
    assert_eq!(
        entries.first(),
        Some(
            &json!({"kind": "RESERVE", "amountMinor": 250, "questionId": scene.question.to_string()})
        ),
        "{member}"
    );
    assert!(
        entries
            .iter()
            .any(|e| e["kind"] == "CHARGE" && e["amountMinor"] == 250),
        "the answer charged the bounty: {member}"
    );

    // Asking for the deliveries as a member is refused on that field: no delivery is shown.
    let refused = app
        .graphql(Some(&scene.ben.token), BUDGET_AND_DELIVERIES, id.clone())
        .await;
    assert_eq!(error_code(&refused), Some("FORBIDDEN"), "{refused}");
    assert_eq!(
        refused["errors"][0]["path"],
        json!(["question", "deliveries"]),
        "{refused}"
    );
    assert!(
        refused["data"]["question"]["deliveries"].is_null(),
        "{refused}"
    );

    // An admin reads them: the answer was written for the agent (no webhook: not yet tried).
    let admin = app
        .graphql(Some(&scene.root.token), BUDGET_AND_DELIVERIES, id)
        .await;
    assert!(admin["errors"].is_null(), "{admin}");
    let deliveries = admin["data"]["question"]["deliveries"]
        .as_array()
        .expect("a list");
    assert!(
        deliveries
            .iter()
            .any(|d| d["eventType"] == "expert_answer.created" && d["status"] == "PENDING"),
        "{admin}"
    );
    assert_eq!(
        admin["data"]["question"]["budgetEntries"],
        member["data"]["question"]["budgetEntries"]
    );
}

async fn a_stranger_cannot_read_the_question_or_its_ledger(app: TestApp) {
    let scene = review_scene(&app).await;
    open_niche(&app.db, "roofing").await;
    let stranger = operator(&app.db, "roofing", "cara").await;
    let id = json!({"id": scene.question.to_string()});
    let refused = app
        .graphql(Some(&stranger.token), BUDGET_ONLY, id.clone())
        .await;
    assert_eq!(error_code(&refused), Some("FORBIDDEN"), "{refused}");
    assert!(refused["data"].is_null(), "{refused}");
    let signed_out = app.graphql(None, BUDGET_ONLY, id).await;
    assert_eq!(
        error_code(&signed_out),
        Some("UNAUTHENTICATED"),
        "{signed_out}"
    );
    let unknown = app
        .graphql(
            Some(&scene.root.token),
            BUDGET_ONLY,
            json!({"id": "999999"}),
        )
        .await;
    assert_eq!(error_code(&unknown), Some("NOT_FOUND"), "{unknown}");
}

on_both_backends!(
    a_review_item_shows_the_question_the_chosen_option_the_words_and_the_record,
    only_admins_read_the_review_queue_and_another_persons_record,
    a_suspended_member_no_longer_reads_a_question_through_their_contributions,
    a_question_shows_its_budget_entries_and_only_admins_its_deliveries,
    a_stranger_cannot_read_the_question_or_its_ledger,
);
