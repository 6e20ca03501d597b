//! Declines speak: when a round's "not enough context" declines reach the niche's threshold (3,
//! or every active operator when there are fewer), the agent is told once per round with
//! `expert_question.needs_context`; research sent for a question that is still open is appended
//! to its context and brings it back to those who had declined.

use askloop_tests::answers::answer_input;
use askloop_tests::fixtures::open_niche;
use askloop_tests::people::{Person, operator};
use askloop_tests::{TestApp, on_both_backends};
use entity::agent_questions;
use sea_orm::EntityTrait;
use serde_json::{Value, json};

const AWAITING: &str = "{ awaitingMe { edges { node { id } } } }";
const RESEARCH: &str = "/api/v1/internal/research-results";

async fn decline(app: &TestApp, who: &Person, question: i64) {
    let body = app
        .answer(
            &who.token,
            answer_input(question, "INSUFFICIENT_CONTEXT", None, None),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
}

/// The payloads of the `needs_context` events queued for the agent, oldest first.
async fn told(app: &TestApp) -> Vec<Value> {
    app.events_for_agent("expert_question.needs_context").await
}

async fn operators(app: &TestApp, count: usize) -> Vec<Person> {
    let mut people = Vec::new();
    for i in 0..count {
        people.push(operator(&app.db, "games", &format!("op{i}")).await);
    }
    people
}

async fn the_third_decline_of_a_round_tells_the_agent_once(app: TestApp) {
    open_niche(&app.db, "games").await;
    let people = operators(&app, 5).await;
    let question = app.ask("games", "q-1").await;
    decline(&app, &people[0], question).await;
    decline(&app, &people[1], question).await;
    assert_eq!(told(&app).await, Vec::<Value>::new(), "two are not enough");
    decline(&app, &people[2], question).await;
    decline(&app, &people[3], question).await;
    // The same person declining again counts once.
    decline(&app, &people[0], question).await;
    assert_eq!(
        told(&app).await,
        [json!({"questionId": question, "externalId": "q-1", "round": 0, "declines": 3})]
    );

    // Research for the open question starts a new round; its declines tell the agent again.
    let research =
        json!({"nicheSlug": "games", "externalId": "q-1", "context": "The publisher says July."});
    let back = app.post_signed(RESEARCH, &research.to_string()).await;
    assert_eq!(back.status(), 200);
    for who in &people[..3] {
        decline(&app, who, question).await;
    }
    let events = told(&app).await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[1]["round"], 1);
}

async fn with_fewer_operators_than_the_threshold_all_of_them_declining_tells_the_agent(
    app: TestApp,
) {
    open_niche(&app.db, "games").await;
    let people = operators(&app, 2).await;
    let question = app.ask("games", "q-1").await;
    decline(&app, &people[0], question).await;
    assert!(told(&app).await.is_empty());
    decline(&app, &people[1], question).await;
    assert_eq!(told(&app).await.len(), 1);
    assert_eq!(told(&app).await[0]["declines"], 2);
}

async fn declines_arriving_together_tell_the_agent_once(app: TestApp) {
    open_niche(&app.db, "games").await;
    let people = operators(&app, 8).await;
    let question = app.ask("games", "q-1").await;
    futures::future::join_all(people.iter().map(|who| decline(&app, who, question))).await;
    let events = told(&app).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["round"], 0);
}

async fn research_for_an_open_question_is_appended_and_brings_it_back_to_decliners(app: TestApp) {
    open_niche(&app.db, "games").await;
    let people = operators(&app, 1).await;
    let question = app.ask("games", "q-1").await;
    decline(&app, &people[0], question).await;
    let hidden = app
        .graphql(Some(&people[0].token), AWAITING, json!({}))
        .await;
    assert_eq!(hidden["data"]["awaitingMe"]["edges"], json!([]), "{hidden}");

    let research =
        json!({"nicheSlug": "games", "externalId": "q-1", "context": "The publisher says July."});
    let back = app.post_signed(RESEARCH, &research.to_string()).await;
    assert_eq!(back.status(), 200);
    let again = app
        .graphql(Some(&people[0].token), AWAITING, json!({}))
        .await;
    assert_eq!(
        again["data"]["awaitingMe"]["edges"][0]["node"]["id"],
        question.to_string(),
        "{again}"
    );
    let row = agent_questions::Entity::find_by_id(question)
        .one(&app.db)
        .await
        .expect("query")
        .expect("stored");
    let context = row.context.clone().unwrap_or_default();
    assert!(
        context.starts_with("Steam lists both an early-access date and a 1.0 date.\n\nResearch, "),
        "{context}"
    );
    assert!(
        context.ends_with(" UTC:\nThe publisher says July."),
        "{context}"
    );
    assert_eq!(row.research_round, 1);

    // Findings that would take the context past its cap are refused; nothing earlier is cut.
    let long = json!({"nicheSlug": "games", "externalId": "q-1", "context": "x".repeat(19_990)});
    let refused = app.post_signed(RESEARCH, &long.to_string()).await;
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.expect("JSON");
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.contains("would pass 20000 characters")),
        "{body}"
    );
    let unchanged = agent_questions::Entity::find_by_id(question)
        .one(&app.db)
        .await
        .expect("query")
        .expect("stored");
    assert_eq!(unchanged, row);
}

on_both_backends!(
    the_third_decline_of_a_round_tells_the_agent_once,
    with_fewer_operators_than_the_threshold_all_of_them_declining_tells_the_agent,
    declines_arriving_together_tell_the_agent_once,
    research_for_an_open_question_is_appended_and_brings_it_back_to_decliners,
);
