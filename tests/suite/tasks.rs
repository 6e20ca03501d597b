//! Delegated tasks (docs/contract.md#delegated-tasks): a task is reserved at its limit like a
//! bounty, completed with a result and the actual cost, charged that cost with the rest released
//! in the same transaction; the agent hears `task.completed`; review and held money apply as
//! for answers; a cost outside 0..limit, or a task body that does not say what it may cost, is
//! refused and changes nothing.

use std::time::Duration;

use askloop_tests::fixtures::question_body;
use askloop_tests::people::{Person, operator, person};
use askloop_tests::receiver::Receiver;
use askloop_tests::{TestApp, error_code, on_both_backends};
use entity::agent_answers;
use entity::agent_questions::{self, QuestionStatus};
use entity::budget_entries::BudgetEntryKind::{Charge, ChargeReversal, Release, Reserve};
use entity::deliveries;
use entity::revenue_events;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

use crate::money::{budgeted_niche, entries};

const INTAKE: &str = "/api/v1/internal/expert-questions";
const COMPLETE: &str = "mutation($id: ID!, $result: String, $cost: Int) { answerQuestion(input: {questionId: $id, kind: ANSWERED, body: $result, actualCostMinor: $cost}) { notice answer { body actualCostMinor review } question { status kind budgetLimitMinor } } }";
const BUDGET: &str = "query { budget(nicheSlug: \"games\") { spentMinor reservedMinor questionSpendMinor taskSpendMinor exchanges { questionId kind limitMinor reservedMinor actualMinor releasedMinor outstandingMinor } } }";

/// The body of a task `external_id` in `slug` limited to `limit`.
fn task_body(slug: &str, external_id: &str, limit: Value) -> Value {
    let mut body = question_body(slug, external_id);
    let payload = body["payload"].as_object_mut().expect("a payload");
    payload.remove("options");
    payload.insert("kind".into(), json!("task"));
    payload.insert("budgetLimitMinor".into(), limit);
    payload.insert(
        "deliverable".into(),
        json!("The three prices, each with its link."),
    );
    payload.insert(
        "question".into(),
        json!("Check the price of these three roofing underlays."),
    );
    body
}

/// Delegate a task; the status and the body.
async fn delegate(app: &TestApp, external_id: &str, limit: i64) -> (u16, Value) {
    let body = task_body("games", external_id, json!(limit));
    let response = app.post_signed(INTAKE, &body.to_string()).await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// `games` with a budget of 1000 and bounties up to 1000, its operator ana (new, so what she
/// does waits for review), and a task `t-1` limited to 500: ana and the task's id.
pub(crate) async fn a_task(app: &TestApp) -> (Person, i64) {
    budgeted_niche(app, "games", Some(1000), 0).await;
    let ana = operator(&app.db, "games", "ana").await;
    let (status, body) = delegate(app, "t-1", 500).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["budget"]["reservedMinor"], 500, "{body}");
    (ana, body["question"]["id"].as_i64().expect("an id"))
}

async fn complete(
    app: &TestApp,
    who: &Person,
    id: i64,
    result: Option<&str>,
    cost: Value,
) -> Value {
    app.graphql(
        Some(&who.token),
        COMPLETE,
        json!({"id": id.to_string(), "result": result, "cost": cost}),
    )
    .await
}

async fn question(app: &TestApp, id: i64) -> agent_questions::Model {
    agent_questions::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .expect("query")
        .expect("the task")
}

async fn a_task_completed_below_its_limit_is_charged_its_cost_and_releases_the_rest(app: TestApp) {
    let (ana, id) = a_task(&app).await;
    let stored = question(&app, id).await;
    assert_eq!(stored.kind, agent_questions::ExchangeKind::Task);
    assert_eq!(stored.bounty_minor, 500, "the limit is what is reserved");
    assert_eq!(
        stored.deliverable.as_deref(),
        Some("The three prices, each with its link.")
    );

    let done = complete(&app, &ana, id, Some("£12, £15 and £19."), json!(120)).await;
    assert!(done["errors"].is_null(), "{done}");
    let done = &done["data"]["answerQuestion"];
    assert_eq!(done["answer"]["actualCostMinor"], 120);
    assert_eq!(done["answer"]["body"], "£12, £15 and £19.");
    assert_eq!(done["answer"]["review"], "PENDING");
    assert_eq!(done["question"]["status"], "ANSWERED");
    assert_eq!(done["question"]["kind"], "TASK");
    assert_eq!(done["question"]["budgetLimitMinor"], 500);

    // Reserved at the limit; charged the actual cost; the rest released: reserved = charged +
    // released.
    assert_eq!(
        entries(&app, id).await,
        vec![(Reserve, 500), (Charge, 120), (Release, 380)]
    );
    // The charge is revenue of its own source, held from ana until her work is verified.
    let event = revenue_events::Entity::find()
        .filter(revenue_events::Column::QuestionId.eq(id))
        .one(&app.db)
        .await
        .expect("query")
        .expect("a revenue event");
    assert_eq!(
        (event.source_type.as_str(), event.gross_minor),
        ("agent_task", 120)
    );

    let budget = app.graphql(Some(&ana.token), BUDGET, json!({})).await;
    assert!(budget["errors"].is_null(), "{budget}");
    let budget = &budget["data"]["budget"];
    assert_eq!(
        (
            &budget["spentMinor"],
            &budget["reservedMinor"],
            &budget["taskSpendMinor"],
            &budget["questionSpendMinor"]
        ),
        (&json!(120), &json!(0), &json!(120), &json!(0)),
        "{budget}"
    );
    assert_eq!(
        budget["exchanges"],
        json!([{"questionId": id.to_string(), "kind": "TASK", "limitMinor": 500,
                "reservedMinor": 500, "actualMinor": 120, "releasedMinor": 380,
                "outstandingMinor": 0}])
    );

    // The agent's lookup shows the result and what it cost.
    let lookup = app
        .post_signed(
            "/api/v1/internal/expert-questions/lookup",
            &json!({"nicheSlug": "games", "externalIds": ["t-1"]}).to_string(),
        )
        .await;
    assert_eq!(lookup.status(), 200);
    let lookup: Value = lookup.json().await.expect("JSON");
    let found = &lookup["questions"][0];
    assert_eq!(found["kind"], "task", "{lookup}");
    assert_eq!(found["budgetLimitMinor"], 500, "{lookup}");
    assert_eq!(found["answer"]["body"], "£12, £15 and £19.", "{lookup}");
    assert_eq!(found["answer"]["actualCostMinor"], 120, "{lookup}");
    assert_eq!(found["answer"]["review"], "pending", "{lookup}");
}

async fn a_cost_outside_the_limit_or_a_completion_without_a_result_is_refused_and_changes_nothing(
    app: TestApp,
) {
    let (ana, id) = a_task(&app).await;
    let too_long = "r".repeat(20_001);
    for (result, cost, problem) in [
        (
            Some("done"),
            json!(501),
            "between 0 and the task's limit of 500",
        ),
        (
            Some("done"),
            json!(-1),
            "between 0 and the task's limit of 500",
        ),
        (Some("done"), Value::Null, "needs actualCostMinor"),
        (None, json!(100), "needs its result"),
        (Some(too_long.as_str()), json!(100), "at most 20000"),
    ] {
        let refused = complete(&app, &ana, id, result, cost.clone()).await;
        assert_eq!(error_code(&refused), Some("BAD_USER_INPUT"), "{refused}");
        assert!(
            refused.to_string().contains(problem),
            "{problem}: {refused}"
        );
    }
    // The member REST route refuses the same way, with a 400.
    let rest = app
        .client
        .post(app.url(&format!("/api/v1/niches/games/questions/{id}/answer")))
        .bearer_auth(&ana.token)
        .json(&json!({"kind": "answered", "body": "done", "actualCostMinor": 900}))
        .send()
        .await
        .expect("sent");
    assert_eq!(rest.status(), 400);
    // A cost on a question's answer is refused too.
    let asked = app.ask("games", "q-1").await;
    let on_question = app
        .graphql(
            Some(&ana.token),
            "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: ANSWERED, optionId: \"ea\", actualCostMinor: 5}) { notice } }",
            json!({"id": asked.to_string()}),
        )
        .await;
    assert_eq!(
        error_code(&on_question),
        Some("BAD_USER_INPUT"),
        "{on_question}"
    );
    // Nothing changed: the task waits with its limit reserved, no answer, no revenue.
    assert_eq!(question(&app, id).await.status, QuestionStatus::Open);
    assert_eq!(entries(&app, id).await, vec![(Reserve, 500)]);
    let answers = agent_answers::Entity::find()
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(answers, 0);
    let events = revenue_events::Entity::find()
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(events, 0);
}

async fn a_task_body_that_does_not_say_what_it_may_cost_is_refused_and_stores_nothing(
    app: TestApp,
) {
    budgeted_niche(&app, "games", Some(1000), 0).await;
    let mut bodies = vec![
        task_body("games", "t-1", Value::Null),
        task_body("games", "t-2", json!(0)),
        task_body("games", "t-3", json!(1001)),
        task_body("games", "t-4", json!("500")),
    ];
    let mut with_bounty = task_body("games", "t-5", json!(100));
    with_bounty["payload"]["bountyMinor"] = json!(100);
    bodies.push(with_bounty);
    let mut question_with_limit = question_body("games", "q-6");
    question_with_limit["payload"]["budgetLimitMinor"] = json!(100);
    bodies.push(question_with_limit);
    for body in bodies {
        let response = app.post_signed(INTAKE, &body.to_string()).await;
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        assert_eq!(status, 400, "{body}: {text}");
    }
    let stored = agent_questions::Entity::find()
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(stored, 0);
    let (status, over) = delegate(&app, "t-7", 1001).await;
    assert_eq!(status, 400);
    assert!(
        over["error"]
            .as_str()
            .is_some_and(|e| e.contains("budgetLimitMinor 1001 is above")),
        "{over}"
    );
}

async fn thirty_tasks_at_once_against_a_budget_for_ten_limits_store_ten(app: TestApp) {
    budgeted_niche(&app, "games", Some(1000), 0).await;
    let results = futures::future::join_all((0..30).map(|n| {
        let app = &app;
        async move { delegate(app, &format!("t-{n}"), 100).await }
    }))
    .await;
    let stored = results.iter().filter(|(s, _)| *s == 201).count();
    let refused = results.iter().filter(|(s, _)| *s == 402).count();
    assert_eq!((stored, refused), (10, 20), "{results:?}");
    let tasks = agent_questions::Entity::find()
        .filter(agent_questions::Column::Kind.eq(agent_questions::ExchangeKind::Task))
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(tasks, 10, "a refused task stores nothing");
}

async fn a_rejected_completion_gives_the_cost_back_and_reserves_the_limit_again(app: TestApp) {
    let (ana, id) = a_task(&app).await;
    let root = person(&app.db, "root", true).await;
    let bob = operator(&app.db, "games", "bob").await;
    let done = complete(&app, &ana, id, Some("guessed"), json!(200)).await;
    assert!(done["errors"].is_null(), "{done}");
    app.decide_newest_contribution(&root.token, "rejectContribution", Some("no links"))
        .await;
    assert_eq!(question(&app, id).await.status, QuestionStatus::Open);
    assert_eq!(
        entries(&app, id).await,
        vec![
            (Reserve, 500),
            (Charge, 200),
            (Release, 300),
            (ChargeReversal, 200),
            (Reserve, 500)
        ]
    );
    // Someone else completes it for less; the agent pays that, once.
    let again = complete(&app, &bob, id, Some("£12, £15, £19 with links"), json!(50)).await;
    assert!(again["errors"].is_null(), "{again}");
    let ledger = entries(&app, id).await;
    assert_eq!(ledger[5..], [(Charge, 50), (Release, 450)]);
    let budget = app.graphql(Some(&bob.token), BUDGET, json!({})).await;
    assert_eq!(budget["data"]["budget"]["spentMinor"], 50, "{budget}");
    assert_eq!(budget["data"]["budget"]["reservedMinor"], 0, "{budget}");
    assert_eq!(budget["data"]["budget"]["exchanges"][0]["actualMinor"], 50);
    assert_eq!(
        budget["data"]["budget"]["exchanges"][0]["reservedMinor"],
        1000
    );
    assert_eq!(
        budget["data"]["budget"]["exchanges"][0]["releasedMinor"],
        750
    );
}

async fn a_completed_task_reaches_the_agent_signed_with_its_cost(app: TestApp) {
    let receiver = Receiver::start_for(&app, Vec::new()).await;
    let (ana, id) = a_task(&app).await;
    let done = complete(&app, &ana, id, Some("£12, £15 and £19."), json!(120)).await;
    assert!(done["errors"].is_null(), "{done}");
    let envelope = askloop_tests::wait::until_ok(Duration::from_secs(20), || async {
        receiver
            .received()
            .into_iter()
            .find(|r| r.envelope["type"] == "task.completed")
            .ok_or(format!(
                "no task.completed: {:?}",
                deliveries::Entity::find().all(&app.db).await
            ))
    })
    .await;
    assert!(envelope.verified, "signed: {}", envelope.signature);
    let payload = &envelope.envelope["payload"];
    assert_eq!(payload["questionId"], json!(id));
    assert_eq!(payload["externalId"], "t-1");
    assert_eq!(payload["result"], "£12, £15 and £19.");
    assert_eq!(payload["actualCostMinor"], 120);
    assert_eq!(payload["budgetLimitMinor"], 500);
    assert_eq!(payload["completedBy"], "ana");
    assert_eq!(payload["review"], "pending");
    assert!(payload["answerId"].as_i64().is_some(), "{payload}");
}

/// The dashboard's form route completes a task too; a cost that is not a whole number comes back
/// as the form's error and changes nothing.
async fn a_task_is_completed_from_the_plain_form_and_a_cost_that_is_no_number_is_refused(
    app: TestApp,
) {
    let (ana, id) = a_task(&app).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client");
    let post = |cost: &'static str| {
        client
            .post(app.url(&format!("/dashboard/questions/{id}/answer")))
            .bearer_auth(&ana.token)
            .form(&[
                ("kind", "answered"),
                ("body", "£12, £15 and £19."),
                ("actual_cost_minor", cost),
                ("next", "/dashboard/niches/games/questions"),
            ])
            .send()
    };
    for (cost, error) in [
        ("1.20", "actualCostMinor+must+be+a+whole+number"),
        ("501", "between+0+and+the+task%27s+limit+of+500"),
    ] {
        let refused = post(cost).await.expect("sent");
        assert_eq!(refused.status(), 303);
        let location = refused.headers()["location"].to_str().expect("text");
        assert!(location.contains("error="), "{location}");
        assert!(location.contains(error), "{location}");
    }
    assert_eq!(entries(&app, id).await, vec![(Reserve, 500)]);
    let done = post("75").await.expect("sent");
    let location = done.headers()["location"].to_str().expect("text");
    assert!(location.contains("notice="), "{location}");
    assert_eq!(
        entries(&app, id).await,
        vec![(Reserve, 500), (Charge, 75), (Release, 425)]
    );
}

/// Two people completing one task at the same instant: one completion stands, the other is told
/// `CONFLICT`, and the task is charged once, at the winner's cost. The winner's result is the
/// longest allowed (20,000 characters) and hostile (markup, a bidirectional override, tabs and
/// line breaks): it is stored and returned exactly as written.
async fn two_people_completing_one_task_at_once_charge_it_once_and_keep_the_result_verbatim(
    app: TestApp,
) {
    let (ana, id) = a_task(&app).await;
    let bo = operator(&app.db, "games", "bo").await;
    // Each result is 20,000 characters, the most allowed, ending in whose it is.
    let result = |whose: &str| {
        let mut text = String::from("<script>alert(1)</script>\u{202E}gnp.exe\t\r\n");
        while text.chars().count() < 20_000 - whose.chars().count() {
            text.push('é');
        }
        text + whose
    };
    let (ana_result, bo_result) = (result("ana"), result("bo"));
    let ana_done = complete(&app, &ana, id, Some(&ana_result), json!(120));
    let bo_done = complete(&app, &bo, id, Some(&bo_result), json!(300));
    let (ana_done, bo_done) = tokio::join!(ana_done, bo_done);
    let won: Vec<&Value> = [&ana_done, &bo_done]
        .into_iter()
        .filter(|r| r["errors"].is_null())
        .collect();
    let lost: Vec<&Value> = [&ana_done, &bo_done]
        .into_iter()
        .filter(|r| error_code(r) == Some("CONFLICT"))
        .collect();
    assert_eq!((won.len(), lost.len()), (1, 1), "{ana_done} / {bo_done}");
    let cost = won[0]["data"]["answerQuestion"]["answer"]["actualCostMinor"]
        .as_i64()
        .expect("the winner's cost");
    assert_eq!(
        entries(&app, id).await,
        vec![(Reserve, 500), (Charge, cost), (Release, 500 - cost)]
    );
    let answers = agent_answers::Entity::find()
        .filter(agent_answers::Column::QuestionId.eq(id))
        .all(&app.db)
        .await
        .expect("answers");
    assert_eq!(answers.len(), 1, "one completion is stored");
    let winners_result = if cost == 120 { &ana_result } else { &bo_result };
    assert_eq!(winners_result.chars().count(), 20_000);
    assert_eq!(answers[0].body.as_deref(), Some(winners_result.as_str()));
    assert_eq!(
        won[0]["data"]["answerQuestion"]["answer"]["body"],
        json!(winners_result)
    );
}

/// Deliver to an agent quickly, at the address its test starts a receiver on.
fn delivering(config: &mut askloop::config::Config) {
    config.webhook_url = Some(Receiver::url_for(askloop_tests::receiver::reserve_port()));
    config.delivery.retry_base = Duration::from_millis(50);
    config.delivery.poll = Duration::from_millis(50);
    config.delivery.sweep_every = Duration::from_millis(100);
}

on_both_backends!(
    a_task_completed_below_its_limit_is_charged_its_cost_and_releases_the_rest,
    a_cost_outside_the_limit_or_a_completion_without_a_result_is_refused_and_changes_nothing,
    a_task_body_that_does_not_say_what_it_may_cost_is_refused_and_stores_nothing,
    thirty_tasks_at_once_against_a_budget_for_ten_limits_store_ten,
    a_rejected_completion_gives_the_cost_back_and_reserves_the_limit_again,
    a_task_is_completed_from_the_plain_form_and_a_cost_that_is_no_number_is_refused,
    two_people_completing_one_task_at_once_charge_it_once_and_keep_the_result_verbatim,
);

on_both_backends! {
    config: delivering;
    a_completed_task_reaches_the_agent_signed_with_its_cost,
}
