//! Reads that meet no row answer with their documented empty result, on both backends: no
//! consensus for an unknown question or one with no answers yet, no lookup reading for an
//! unknown agent, and nothing similar to an unknown question or to one whose niche has no
//! knowledge.

use askloop::service::agents::registry;
use askloop::service::knowledge;
use askloop::service::questions::consensus;
use askloop_tests::fixtures::open_niche;
use askloop_tests::{TestApp, on_both_backends};
use entity::agents::WebhookScheme;

use crate::agents::register;

/// An id no row has (ids start at 1 and these databases are fresh).
const NO_SUCH_ID: i64 = 987_654_321;

async fn an_unknown_question_has_no_consensus(app: TestApp) {
    let consensus = consensus::consensus_of_question(&app.db, NO_SUCH_ID)
        .await
        .expect("an unknown question is no error");
    assert!(consensus.is_none(), "{consensus:?}");
}

async fn a_question_without_answers_has_no_consensus(app: TestApp) {
    open_niche(&app.db, "games").await;
    let question = app.ask("games", "no-answers-yet").await;
    let consensus = consensus::consensus_of_question(&app.db, question)
        .await
        .expect("a question without answers is no error");
    assert!(consensus.is_none(), "{consensus:?}");
}

async fn an_unknown_agent_does_not_read_by_lookup(app: TestApp) {
    let reads = registry::reads_by_lookup(&app.db, NO_SUCH_ID)
        .await
        .expect("an unknown agent is no error");
    assert!(!reads);
}

async fn an_agent_without_a_webhook_reads_by_lookup_and_one_with_a_webhook_does_not(app: TestApp) {
    open_niche(&app.db, "games").await;
    register(&app, "lookup-agent", &["games"], None, WebhookScheme::Chovy).await;
    let hooked_url = Some("https://agent.example/hook");
    register(
        &app,
        "hook-agent",
        &["games"],
        hooked_url,
        WebhookScheme::Chovy,
    )
    .await;
    let reader = registry::find(&app.db, "lookup-agent")
        .await
        .expect("found");
    let hooked = registry::find(&app.db, "hook-agent").await.expect("found");
    assert!(
        registry::reads_by_lookup(&app.db, reader.id)
            .await
            .expect("read")
    );
    assert!(
        !registry::reads_by_lookup(&app.db, hooked.id)
            .await
            .expect("read")
    );
}

async fn nothing_is_similar_to_an_unknown_question(app: TestApp) {
    let similar = knowledge::similar_to_question(&app.db, NO_SUCH_ID)
        .await
        .expect("an unknown question is no error");
    assert!(similar.is_empty());
}

async fn nothing_is_similar_to_a_question_in_a_niche_without_knowledge(app: TestApp) {
    open_niche(&app.db, "games").await;
    let question = app.ask("games", "first-of-its-kind").await;
    let similar = knowledge::similar_to_question(&app.db, question)
        .await
        .expect("a niche without knowledge is no error");
    assert!(similar.is_empty());
}

on_both_backends!(
    an_unknown_question_has_no_consensus,
    a_question_without_answers_has_no_consensus,
    an_unknown_agent_does_not_read_by_lookup,
    an_agent_without_a_webhook_reads_by_lookup_and_one_with_a_webhook_does_not,
    nothing_is_similar_to_an_unknown_question,
    nothing_is_similar_to_a_question_in_a_niche_without_knowledge,
);
