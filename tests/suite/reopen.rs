//! Reopening a question takes its turn (docs/architecture.md#writes): an admin who
//! rejects the winning answer reopens the question inside the question's turn and clears the
//! note its settlement left, so a writer queued behind that settlement answers the reopened
//! question at once instead of being refused with a stale 409.

use askloop::error::Conflict;
use askloop::service::questions::answering;
use askloop_tests::fixtures::open_niche;
use askloop_tests::people::{Person, operator, person};
use askloop_tests::{TestApp, on_both_backends};
use entity::agent_questions::{self, QuestionStatus};
use entity::contribution_events;
use sea_orm::{EntityTrait, QueryOrder};
use serde_json::{Value, json};

/// `who` answers `question` with its first option.
async fn answer(app: &TestApp, who: &Person, question: i64) -> Value {
    app.graphql(
        Some(&who.token),
        "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: ANSWERED, \
         optionId: \"ea\", body: \"The early-access date.\"}) { answer { id } points } }",
        json!({"id": question.to_string()}),
    )
    .await
}

/// Wait until `n` writers hold or wait for `question`'s turn in this process.
async fn until_queued(app: &TestApp, question: i64, n: usize) {
    let turns = answering::question_turns(&app.db);
    while turns.queued(question) < n {
        tokio::task::yield_now().await;
    }
}

on_both_backends!(a_reopened_question_is_answered_at_once_by_a_writer_queued_behind_its_settlement);

async fn a_reopened_question_is_answered_at_once_by_a_writer_queued_behind_its_settlement(
    app: TestApp,
) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bob = operator(&app.db, "games", "bob").await;
    let root = person(&app.db, "root", true).await;
    let question = app.ask("games", "q-1").await;
    // Ana's answer wins; she is new, so it waits for review.
    let won = answer(&app, &ana, question).await;
    assert!(won["errors"].is_null(), "{won}");
    let contribution = contribution_events::Entity::find()
        .order_by_desc(contribution_events::Column::Id)
        .one(&app.db)
        .await
        .expect("read")
        .expect("ana's contribution");

    // The turn of a writer settling the question, held here as the winner holds it until it
    // has committed: the note it leaves refuses the writers queued behind it.
    let turns = answering::question_turns(&app.db);
    let mut settling = turns.take(question).await;
    settling.leave(Conflict::QuestionSettled);

    let reject = app.graphql(
        Some(&root.token),
        "mutation($id: ID!) { rejectContribution(id: $id, note: \"A guess.\") { status } }",
        json!({"id": contribution.id.to_string()}),
    );
    // Bob asks once the review waits for the question's turn, so he queues behind it.
    let bobs = async {
        until_queued(&app, question, 2).await;
        answer(&app, &bob, question).await
    };
    // The settling writer is done once both wait behind it.
    let settled = async {
        until_queued(&app, question, 3).await;
        drop(settling);
    };
    let (rejected, bobs, ()) = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        tokio::join!(reject, bobs, settled)
    })
    .await
    .expect("the review queues for the question's turn, and Bob behind it");

    assert!(rejected["errors"].is_null(), "{rejected}");
    assert_eq!(
        rejected["data"]["rejectContribution"]["status"],
        json!("REJECTED")
    );
    // Not refused from the old note: the question is open again when Bob's turn comes.
    assert!(bobs["errors"].is_null(), "{bobs}");
    let bobs_answer = bobs["data"]["answerQuestion"]["answer"]["id"]
        .as_str()
        .expect("Bob's answer")
        .to_owned();
    let row = agent_questions::Entity::find_by_id(question)
        .one(&app.db)
        .await
        .expect("read")
        .expect("the question");
    assert_eq!(row.status, QuestionStatus::Answered);
    assert_eq!(row.research_round, 1, "answered in its reopened round");
    let newest = entity::agent_answers::Entity::find()
        .order_by_desc(entity::agent_answers::Column::Id)
        .one(&app.db)
        .await
        .expect("read")
        .expect("an answer");
    assert_eq!(newest.user_id, bob.id);
    assert_eq!(newest.id.to_string(), bobs_answer);
    // Nobody holds or waits for the turn any more.
    assert_eq!(turns.queued(question), 0);
}
