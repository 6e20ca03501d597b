//! The verdict travels with the answer: the agent's `expert_answer.created` says which answer,
//! which option (by label) and whether it is verified or pending review; verifying it sends
//! `expert_answer.verified`, rejecting or reversing it `expert_answer.rejected` with the note.

use askloop_tests::fixtures::open_niche;
use askloop_tests::people::{operator, person};
use askloop_tests::{TestApp, on_both_backends};
use serde_json::{Value, json};

async fn told(app: &TestApp, kind: &str) -> Vec<Value> {
    app.events_for_agent(kind).await
}

async fn answer(app: &TestApp, token: &str, question: i64) {
    let body = app
        .graphql(
            Some(token),
            "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: ANSWERED, optionId: \"ea\", body: \"It is the early-access date.\"}) { points } }",
            json!({"id": question.to_string()}),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
}

async fn review(app: &TestApp, token: &str, mutation: &str, note: Option<&str>) {
    app.decide_newest_contribution(token, mutation, note).await;
}

async fn a_pending_answer_reaches_the_agent_as_pending_and_then_its_verdicts(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    let first = app.ask("games", "q-1").await;
    answer(&app, &ana.token, first).await;
    let created = told(&app, "expert_answer.created").await;
    assert_eq!(created.len(), 1);
    assert_eq!(created[0]["review"], "pending");
    assert_eq!(created[0]["optionId"], "ea");
    assert_eq!(created[0]["optionLabel"], "Early access");
    assert_eq!(created[0]["questionId"], first);
    let answer_id = created[0]["answerId"].clone();
    assert!(answer_id.is_i64(), "{}", created[0]);

    // The lookup route and GraphQL show where the answer is in review.
    let looked = app
        .post_signed(
            "/api/v1/internal/expert-questions/lookup",
            &json!({"nicheSlug": "games", "externalIds": ["q-1"]}).to_string(),
        )
        .await;
    assert_eq!(looked.status(), 200);
    let looked: Value = looked.json().await.expect("JSON");
    assert_eq!(
        looked["questions"][0]["answer"]["review"], "pending",
        "{looked}"
    );
    assert_eq!(looked["questions"][0]["answer"]["answerId"], answer_id);

    review(&app, &root.token, "verifyContribution", None).await;
    let graphql = app
        .graphql(
            Some(&root.token),
            "query($id: ID!) { question(id: $id) { answers { review } } }",
            json!({"id": first.to_string()}),
        )
        .await;
    assert_eq!(
        graphql["data"]["question"]["answers"][0]["review"], "VERIFIED",
        "{graphql}"
    );
    assert_eq!(
        told(&app, "expert_answer.verified").await,
        [json!({"questionId": first, "externalId": "q-1", "answerId": answer_id})]
    );
    review(
        &app,
        &root.token,
        "reverseContribution",
        Some("The date moved."),
    )
    .await;

    let second = app.ask("games", "q-2").await;
    answer(&app, &ana.token, second).await;
    review(&app, &root.token, "rejectContribution", Some("A guess.")).await;
    let rejected = told(&app, "expert_answer.rejected").await;
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    assert_eq!(rejected[0]["questionId"], first);
    assert_eq!(rejected[0]["note"], "The date moved.");
    assert_eq!(rejected[0]["previousReview"], "verified");
    assert_eq!(rejected[1]["questionId"], second);
    assert_eq!(rejected[1]["note"], "A guess.");
    assert_eq!(rejected[1]["previousReview"], "pending");
}

on_both_backends!(a_pending_answer_reaches_the_agent_as_pending_and_then_its_verdicts);
