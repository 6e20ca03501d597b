//! An agent withdraws a question it no longer needs (docs/contract.md#withdrawal), on both
//! backends: over the signed route a waiting question is dismissed with `withdrawn_at` set, its
//! bounty released and it leaves the live queue; withdrawing again changes nothing; a person
//! answering it then is refused as a conflict; another agent does not find it; an answered
//! question stays answered; bad input is refused and changes nothing. Over MCP,
//! `withdraw_question` does the same for a question named by an id as text, a delegated task
//! (its limit released) and a question sent back for research. The agent hears of a withdrawal
//! exactly once, as a dismissal that says it was withdrawn.

use askloop_tests::answers::early_access;
use askloop_tests::mcp::{McpClient, agent_with_token};
use askloop_tests::people::{Person, operator};
use askloop_tests::socket::GqlSocket;
use askloop_tests::{TestApp, error_code, on_both_backends};
use entity::agent_questions::{self, QuestionStatus};
use entity::agents::WebhookScheme;
use entity::budget_entries::BudgetEntryKind::{Charge, Release, Reserve};
use entity::{agent_answers, audit_log};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

use crate::agents::{post_as, register};
use crate::money::{ask_with_bounty, budgeted_niche, entries};

const WITHDRAW: &str = "/api/v1/internal/expert-questions/withdraw";
const QUEUE: &str = "subscription($slug: String!) { questionQueue(nicheSlug: $slug) { change question { id status } } }";
const SEND_BACK: &str = "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: NEEDS_RESEARCH}) { notice } }";

/// Withdraw as the default agent with `body`; the status and body.
async fn withdraw(app: &TestApp, body: &Value) -> (u16, Value) {
    let response = app.post_signed(WITHDRAW, &body.to_string()).await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// What `games`'s budget holds reserved, as an operator reads it.
async fn reserved(app: &TestApp, who: &Person) -> Value {
    let body = app
        .graphql(
            Some(&who.token),
            "{ budget(nicheSlug: \"games\") { reservedMinor } }",
            json!({}),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    body["data"]["budget"]["reservedMinor"].clone()
}

async fn question_row(app: &TestApp, id: i64) -> agent_questions::Model {
    agent_questions::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .expect("query")
        .expect("the question")
}

/// The `question.withdrawn` audit rows of question `id`.
async fn withdrawn_audits(app: &TestApp, id: i64) -> Vec<audit_log::Model> {
    audit_log::Entity::find()
        .filter(audit_log::Column::Action.eq("question.withdrawn"))
        .filter(audit_log::Column::SubjectId.eq(id.to_string()))
        .all(&app.db)
        .await
        .expect("query")
}

/// The `expert_question.dismissed` payloads queued for the agent about question `id`.
async fn dismissals(app: &TestApp, id: i64) -> Vec<Value> {
    app.events_for_agent("expert_question.dismissed")
        .await
        .into_iter()
        .filter(|payload| payload["questionId"] == id)
        .collect()
}

async fn answers_to(app: &TestApp, id: i64) -> u64 {
    agent_answers::Entity::find()
        .filter(agent_answers::Column::QuestionId.eq(id))
        .count(&app.db)
        .await
        .expect("count")
}

/// Ask `external_id` in `games` with `bounty` as the default agent; its id.
async fn ask(app: &TestApp, external_id: &str, bounty: i64) -> i64 {
    let (status, asked) = ask_with_bounty(app, "games", external_id, bounty).await;
    assert_eq!(status, 201, "{asked}");
    asked["question"]["id"].as_i64().expect("an id")
}

async fn a_waiting_question_is_withdrawn_its_bounty_released_and_it_leaves_the_queue(app: TestApp) {
    budgeted_niche(&app, "games", Some(1000), 0).await;
    let ana = operator(&app.db, "games", "ana").await;
    assert_eq!(reserved(&app, &ana).await, 0);
    let mut socket = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    socket.subscribe("q", QUEUE, json!({"slug": "games"})).await;
    app.until_subscriptions_served(1).await;

    let id = ask(&app, "q-1", 300).await;
    let added = socket.next_data("q").await;
    assert_eq!(added["data"]["questionQueue"]["change"], "ADDED", "{added}");
    assert_eq!(reserved(&app, &ana).await, 300);

    let (status, withdrawn) = withdraw(
        &app,
        &json!({"questionId": id, "reason": "Found it in the changelog."}),
    )
    .await;
    assert_eq!(status, 200, "{withdrawn}");
    assert_eq!(withdrawn["questionId"], id, "{withdrawn}");
    assert_eq!(withdrawn["externalId"], "q-1", "{withdrawn}");
    assert_eq!(withdrawn["status"], "dismissed", "{withdrawn}");
    assert_eq!(withdrawn["outcome"], "withdrawn", "{withdrawn}");
    assert_eq!(withdrawn["releasedMinor"], 300, "{withdrawn}");
    let withdrawn_at = withdrawn["withdrawnAt"].as_str().expect("withdrawnAt");

    // The subscriber sees it leave, dismissed.
    let removed = socket.next_data("q").await;
    assert_eq!(
        removed["data"]["questionQueue"]["change"], "REMOVED",
        "{removed}"
    );
    assert_eq!(
        removed["data"]["questionQueue"]["question"],
        json!({"id": id.to_string(), "status": "DISMISSED"})
    );

    // The bounty is free again, by one release row; the question says when it was withdrawn.
    assert_eq!(reserved(&app, &ana).await, 0);
    assert_eq!(
        entries(&app, id).await,
        vec![(Reserve, 300), (Release, 300)]
    );
    let row = question_row(&app, id).await;
    assert_eq!(row.status, QuestionStatus::Dismissed);
    assert!(row.withdrawn_at.is_some());
    let read = app
        .graphql(
            Some(&ana.token),
            "query($id: ID!) { question(id: $id) { status withdrawnAt } }",
            json!({"id": id.to_string()}),
        )
        .await;
    assert_eq!(read["data"]["question"]["status"], "DISMISSED", "{read}");
    assert!(
        read["data"]["question"]["withdrawnAt"].is_string(),
        "{read}"
    );
    let audits = withdrawn_audits(&app, id).await;
    assert_eq!(audits.len(), 1, "{audits:?}");
    assert_eq!(
        audits[0].detail["agentReason"],
        "Found it in the changelog."
    );

    // Again, by its external id: nothing more happens, and it says so.
    let (status, again) = withdraw(&app, &json!({"externalId": "q-1", "nicheSlug": "games"})).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["outcome"], "already_withdrawn", "{again}");
    assert_eq!(again["status"], "dismissed", "{again}");
    assert_eq!(again["releasedMinor"], 0, "{again}");
    assert_eq!(again["withdrawnAt"], withdrawn_at, "{again}");
    assert_eq!(
        entries(&app, id).await,
        vec![(Reserve, 300), (Release, 300)]
    );
    assert_eq!(withdrawn_audits(&app, id).await.len(), 1);

    // A person answering it now is refused, through GraphQL and REST, and nothing is written.
    let late = app
        .answer(&ana.token, early_access(id, Some("Early access.")))
        .await;
    assert_eq!(error_code(&late), Some("CONFLICT"), "{late}");
    let rest = app
        .client
        .post(app.url(&format!("/api/v1/niches/games/questions/{id}/answer")))
        .bearer_auth(&ana.token)
        .json(&json!({"kind": "answered", "optionId": "ea"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(rest.status(), 409);
    assert_eq!(answers_to(&app, id).await, 0);
    assert_eq!(
        entries(&app, id).await,
        vec![(Reserve, 300), (Release, 300)]
    );
    assert_eq!(
        question_row(&app, id).await.status,
        QuestionStatus::Dismissed
    );
}

async fn another_agent_finds_nothing_and_an_answered_question_stays_answered(app: TestApp) {
    budgeted_niche(&app, "games", Some(1000), 0).await;
    let ana = operator(&app.db, "games", "ana").await;
    let b = register(&app, "agent-b", &["games"], None, WebhookScheme::Chovy).await;
    let id = ask(&app, "q-1", 300).await;

    // Another agent in the same niche does not find it, by either id.
    for body in [json!({"questionId": id}), json!({"externalId": "q-1"})] {
        let refused = post_as(&app, "agent-b", &b, WITHDRAW, &body).await;
        assert_eq!(refused.status(), 404, "{body}");
    }
    let row = question_row(&app, id).await;
    assert_eq!((row.status, row.withdrawn_at), (QuestionStatus::Open, None));
    assert_eq!(entries(&app, id).await, vec![(Reserve, 300)]);

    // Answered, it stays answered and its bounty charged.
    let answered = app
        .answer(&ana.token, early_access(id, Some("Early access.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    let (status, settled) = withdraw(&app, &json!({"questionId": id.to_string()})).await;
    assert_eq!(status, 200, "{settled}");
    assert_eq!(settled["outcome"], "settled", "{settled}");
    assert_eq!(settled["status"], "answered", "{settled}");
    assert_eq!(settled["releasedMinor"], 0, "{settled}");
    assert!(settled["withdrawnAt"].is_null(), "{settled}");
    let row = question_row(&app, id).await;
    assert_eq!(
        (row.status, row.withdrawn_at),
        (QuestionStatus::Answered, None)
    );
    assert_eq!(entries(&app, id).await, vec![(Reserve, 300), (Charge, 300)]);
    assert!(withdrawn_audits(&app, id).await.is_empty());
    assert!(dismissals(&app, id).await.is_empty());

    // Its time ran out and the expiry sweep has not said so yet: reported as expired, and left
    // for the sweep (which says so to the agent once).
    let late = ask(&app, "q-late", 100).await;
    agent_questions::Entity::update_many()
        .col_expr(
            agent_questions::Column::ExpiresAt,
            sea_orm::sea_query::Expr::value(chrono::Utc::now() - chrono::Duration::seconds(5)),
        )
        .filter(agent_questions::Column::Id.eq(late))
        .exec(&app.db)
        .await
        .expect("backdated");
    let (status, expired) = withdraw(&app, &json!({"questionId": late})).await;
    assert_eq!(status, 200, "{expired}");
    assert_eq!(
        (&expired["outcome"], &expired["status"]),
        (&json!("settled"), &json!("expired")),
        "{expired}"
    );
    assert_eq!(question_row(&app, late).await.withdrawn_at, None);
    assert!(withdrawn_audits(&app, late).await.is_empty());
}

async fn bad_withdrawals_are_refused_saying_why_and_change_nothing(app: TestApp) {
    budgeted_niche(&app, "games", Some(1000), 0).await;
    let id = ask(&app, "q-1", 300).await;
    let too_long = "x".repeat(501);
    for (body, says) in [
        (json!({"questionId": id, "externalId": "q-1"}), "not both"),
        (json!({}), "questionId or externalId"),
        (json!({"reason": "Not needed."}), "questionId or externalId"),
        (
            json!({"questionId": "four"}),
            "questionId must be a whole number",
        ),
        (
            json!({"questionId": 1.5}),
            "questionId must be a whole number",
        ),
        (json!({"questionId": id, "reason": too_long}), "at most 500"),
        (json!({"questionId": id, "why": "Not needed."}), "why"),
    ] {
        let (status, refused) = withdraw(&app, &body).await;
        assert_eq!(status, 400, "{body}: {refused}");
        assert_eq!(refused["code"], "BAD_USER_INPUT", "{body}: {refused}");
        let error = refused["error"].as_str().unwrap_or_default();
        assert!(error.contains(says), "{body}: {refused}");
    }
    let row = question_row(&app, id).await;
    assert_eq!((row.status, row.withdrawn_at), (QuestionStatus::Open, None));
    assert_eq!(entries(&app, id).await, vec![(Reserve, 300)]);
    assert!(withdrawn_audits(&app, id).await.is_empty());
    assert!(dismissals(&app, id).await.is_empty());

    // A reason of exactly 500 characters is not too long.
    let (status, withdrawn) =
        withdraw(&app, &json!({"questionId": id, "reason": "x".repeat(500)})).await;
    assert_eq!(status, 200, "{withdrawn}");
    assert_eq!(withdrawn["outcome"], "withdrawn", "{withdrawn}");
}

/// A budgeted `games` with operator ana, and a ready MCP client for agent-a asking there.
async fn mcp_agent(app: &TestApp) -> (McpClient, Person) {
    budgeted_niche(app, "games", Some(1000), 0).await;
    let ana = operator(&app.db, "games", "ana").await;
    let token = agent_with_token(app, "agent-a", &["games"]).await;
    let client = McpClient::new(app, Some(&token));
    client.initialize().await;
    (client, ana)
}

async fn ask_over_mcp(client: &McpClient, external_id: &str, bounty: i64) -> i64 {
    let asked = client
        .ok(
            "ask_expert",
            json!({
                "niche": "games",
                "title": "Which date?",
                "question": "Early access or 1.0?",
                "options": [{"id": "ea", "label": "Early access"}, {"id": "full", "label": "1.0"}],
                "bountyMinor": bounty,
                "externalId": external_id,
            }),
        )
        .await;
    asked["questionId"].as_i64().expect("an id")
}

async fn withdraw_question_over_mcp_withdraws_open_and_researching_questions(app: TestApp) {
    let (client, ana) = mcp_agent(&app).await;
    let open = ask_over_mcp(&client, "q-1", 200).await;
    let sent_back = ask_over_mcp(&client, "q-2", 100).await;
    let sent = app
        .graphql(
            Some(&ana.token),
            SEND_BACK,
            json!({"id": sent_back.to_string()}),
        )
        .await;
    assert!(sent["errors"].is_null(), "{sent}");
    assert_eq!(
        question_row(&app, sent_back).await.status,
        QuestionStatus::Researching
    );

    let refused = client
        .refused("withdraw_question", json!({"questionId": "four"}))
        .await;
    assert_eq!(refused["code"], "BAD_USER_INPUT", "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("questionId")),
        "{refused}"
    );
    assert_eq!(question_row(&app, open).await.status, QuestionStatus::Open);

    // Named by its id as a string of digits.
    let withdrawn = client
        .ok(
            "withdraw_question",
            json!({"questionId": open.to_string(), "reason": "Not needed."}),
        )
        .await;
    assert_eq!(withdrawn["questionId"], open, "{withdrawn}");
    assert_eq!(withdrawn["outcome"], "withdrawn", "{withdrawn}");
    assert_eq!(withdrawn["status"], "dismissed", "{withdrawn}");
    assert_eq!(withdrawn["releasedMinor"], 200, "{withdrawn}");
    let answer = client.ok("get_answer", json!({"questionId": open})).await;
    assert_eq!(answer["status"], "dismissed", "{answer}");
    assert_eq!(
        entries(&app, open).await,
        vec![(Reserve, 200), (Release, 200)]
    );

    // With the agent for research, it waits too, and may be withdrawn.
    let withdrawn = client
        .ok("withdraw_question", json!({"questionId": sent_back}))
        .await;
    assert_eq!(withdrawn["outcome"], "withdrawn", "{withdrawn}");
    assert_eq!(withdrawn["status"], "dismissed", "{withdrawn}");
    assert_eq!(withdrawn["releasedMinor"], 100, "{withdrawn}");
    let row = question_row(&app, sent_back).await;
    assert_eq!(row.status, QuestionStatus::Dismissed);
    assert!(row.withdrawn_at.is_some());
    assert_eq!(
        entries(&app, sent_back).await,
        vec![(Reserve, 100), (Release, 100)]
    );
}

async fn withdrawing_a_delegated_task_releases_its_limit(app: TestApp) {
    let (client, ana) = mcp_agent(&app).await;
    let delegated = client
        .ok(
            "delegate_task",
            json!({
                "niche": "games",
                "title": "Three prices",
                "task": "Check the price of these three underlays.",
                "deliverable": "Each price with its link.",
                "budgetLimitMinor": 400,
                "externalId": "t-1",
            }),
        )
        .await;
    let id = delegated["questionId"].as_i64().expect("an id");
    assert_eq!(reserved(&app, &ana).await, 400);

    let withdrawn = client
        .ok(
            "withdraw_question",
            json!({"externalId": "t-1", "niche": "games"}),
        )
        .await;
    assert_eq!(withdrawn["questionId"], id, "{withdrawn}");
    assert_eq!(withdrawn["outcome"], "withdrawn", "{withdrawn}");
    assert_eq!(withdrawn["releasedMinor"], 400, "{withdrawn}");
    assert_eq!(reserved(&app, &ana).await, 0);
    assert_eq!(
        entries(&app, id).await,
        vec![(Reserve, 400), (Release, 400)]
    );

    let again = client
        .ok("withdraw_question", json!({"questionId": id}))
        .await;
    assert_eq!(again["outcome"], "already_withdrawn", "{again}");
    assert_eq!(again["releasedMinor"], 0, "{again}");
    assert_eq!(
        entries(&app, id).await,
        vec![(Reserve, 400), (Release, 400)]
    );
    let task = client.ok("get_answer", json!({"externalId": "t-1"})).await;
    assert_eq!(task["status"], "dismissed", "{task}");
}

async fn the_agent_hears_once_that_its_question_was_withdrawn(app: TestApp) {
    budgeted_niche(&app, "games", Some(1000), 0).await;
    let ana = operator(&app.db, "games", "ana").await;
    let withdrawn = ask(&app, "q-1", 0).await;
    let dismissed = ask(&app, "q-2", 0).await;

    for _ in 0..2 {
        let (status, body) = withdraw(
            &app,
            &json!({"externalId": "q-1", "reason": "No longer needed."}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }
    let events = dismissals(&app, withdrawn).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["withdrawn"], true, "{events:?}");
    assert_eq!(events[0]["externalId"], "q-1", "{events:?}");
    assert_eq!(events[0]["reason"], "withdrawn by the agent", "{events:?}");
    assert_eq!(events[0]["agentReason"], "No longer needed.", "{events:?}");
    assert!(events[0]["dismissedBy"].is_null(), "{events:?}");

    // A person's dismissal is not a withdrawal.
    let by_ana = app
        .graphql(
            Some(&ana.token),
            "mutation($id: ID!) { dismissQuestion(id: $id) { status } }",
            json!({"id": dismissed.to_string()}),
        )
        .await;
    assert!(by_ana["errors"].is_null(), "{by_ana}");
    let events = dismissals(&app, dismissed).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_ne!(events[0]["withdrawn"], true, "{events:?}");
    assert_eq!(events[0]["dismissedBy"], "ana", "{events:?}");
    assert!(question_row(&app, dismissed).await.withdrawn_at.is_none());
    let (status, after) = withdraw(&app, &json!({"questionId": dismissed})).await;
    assert_eq!(status, 200, "{after}");
    assert_eq!(after["outcome"], "settled", "{after}");
    assert_eq!(dismissals(&app, dismissed).await.len(), 1);
}

/// Ten withdrawals of one question at once, racing an operator's answer: exactly one of the two
/// kinds of closing wins, the bounty is settled once, and every withdrawal answers 200.
async fn ten_withdrawals_at_once_racing_an_answer_close_the_question_once(app: TestApp) {
    budgeted_niche(&app, "games", Some(1000), 0).await;
    let ana = operator(&app.db, "games", "ana").await;
    let id = ask(&app, "q-race", 300).await;
    let body = json!({"questionId": id});
    let withdrawals = futures::future::join_all((0..10).map(|_| withdraw(&app, &body)));
    let answer = app.answer(&ana.token, early_access(id, Some("Early access.")));
    let (withdrawals, answered) = tokio::join!(withdrawals, answer);
    let outcomes: Vec<String> = withdrawals
        .iter()
        .map(|(status, reply)| {
            assert_eq!(*status, 200, "{reply}");
            reply["outcome"].as_str().expect("an outcome").to_owned()
        })
        .collect();
    let won = outcomes.iter().filter(|o| *o == "withdrawn").count();
    let row = question_row(&app, id).await;
    if answered["errors"].is_null() {
        // The answer came first: no withdrawal took, the bounty is charged once.
        assert_eq!(won, 0, "{outcomes:?}");
        assert_eq!(row.status, QuestionStatus::Answered);
        assert_eq!(entries(&app, id).await, vec![(Reserve, 300), (Charge, 300)]);
    } else {
        assert_eq!(error_code(&answered), Some("CONFLICT"), "{answered}");
        assert_eq!(won, 1, "{outcomes:?}");
        assert_eq!(row.status, QuestionStatus::Dismissed);
        assert_eq!(
            entries(&app, id).await,
            vec![(Reserve, 300), (Release, 300)]
        );
        assert_eq!(withdrawn_audits(&app, id).await.len(), 1);
        assert_eq!(dismissals(&app, id).await.len(), 1);
    }
    assert_eq!(answers_to(&app, id).await, u64::from(won == 0));
}

on_both_backends!(
    ten_withdrawals_at_once_racing_an_answer_close_the_question_once,
    a_waiting_question_is_withdrawn_its_bounty_released_and_it_leaves_the_queue,
    another_agent_finds_nothing_and_an_answered_question_stays_answered,
    bad_withdrawals_are_refused_saying_why_and_change_nothing,
    withdraw_question_over_mcp_withdraws_open_and_researching_questions,
    withdrawing_a_delegated_task_releases_its_limit,
    the_agent_hears_once_that_its_question_was_withdrawn,
);
