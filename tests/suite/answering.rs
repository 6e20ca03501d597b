//! Answering without races, declining for free, scoring and review (docs/contract.md#answering, #scoring-and-review), through the
//! public API on SQLite and PostgreSQL.

use askloop_tests::answers::answer_input;
use askloop_tests::fixtures::open_niche;
use askloop_tests::people::{Person, operator, person};
use askloop_tests::{TestApp, error_code, on_both_backends};
use entity::agent_answers;
use entity::agent_questions::{self, QuestionStatus};
use entity::contribution_events::{self, ContributionStatus};
use entity::{contribution_scores, tier_history};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

async fn contributions(app: &TestApp) -> Vec<contribution_events::Model> {
    contribution_events::Entity::find()
        .all(&app.db)
        .await
        .expect("query")
}

async fn fifty_operators_answering_at_once_produce_one_winner(app: TestApp) {
    open_niche(&app.db, "games").await;
    let question = app.ask("games", "race").await;
    let mut operators = Vec::new();
    for i in 0..50 {
        operators.push(operator(&app.db, "games", &format!("op{i}")).await);
    }
    let sends = operators.iter().map(|op| {
        app.answer(
            &op.token,
            answer_input(
                question,
                "ANSWERED",
                Some("ea"),
                Some("Early access is the release"),
            ),
        )
    });
    let results = futures::future::join_all(sends).await;
    let won: Vec<&Value> = results.iter().filter(|r| r["errors"].is_null()).collect();
    let conflicts = results
        .iter()
        .filter(|r| error_code(r) == Some("CONFLICT"))
        .count();
    assert_eq!(won.len(), 1, "{results:?}");
    assert_eq!(conflicts, 49, "{results:?}");
    assert_eq!(
        won[0]["data"]["answerQuestion"]["question"]["status"],
        "ANSWERED"
    );

    let answered = agent_answers::Entity::find()
        .filter(agent_answers::Column::Kind.eq(agent_answers::AnswerKind::Answered))
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(answered, 1);
    assert_eq!(contributions(&app).await.len(), 1);
    let row = agent_questions::Entity::find_by_id(question)
        .one(&app.db)
        .await
        .expect("query")
        .expect("stored");
    assert_eq!(row.status, QuestionStatus::Answered);
}

async fn the_same_person_double_submitting_stores_one_row(app: TestApp) {
    open_niche(&app.db, "games").await;
    let question = app.ask("games", "double").await;
    let op = operator(&app.db, "games", "ana").await;
    let input = answer_input(question, "ANSWERED", Some("full"), None);
    let (a, b) = futures::join!(
        app.answer(&op.token, input.clone()),
        app.answer(&op.token, input.clone())
    );
    let oks = [&a, &b].iter().filter(|r| r["errors"].is_null()).count();
    assert_eq!(oks, 1, "{a} {b}");
    assert_eq!(
        agent_answers::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        1
    );
    assert_eq!(contributions(&app).await.len(), 1);
}

async fn a_new_operators_answer_waits_for_review(app: TestApp) {
    open_niche(&app.db, "games").await;
    let question = app.ask("games", "q-1").await;
    let op = operator(&app.db, "games", "ana").await;
    let body = app
        .answer(
            &op.token,
            answer_input(question, "ANSWERED", Some("ea"), None),
        )
        .await;
    let result = &body["data"]["answerQuestion"];
    assert_eq!(result["points"], 3, "{body}");
    assert_eq!(result["contributionStatus"], "PENDING");
    assert_eq!(
        result["notice"],
        "Thanks. It goes to review before it counts."
    );
    assert_eq!(result["answer"]["answeredBy"], "ana");
    let score = contribution_scores::Entity::find()
        .one(&app.db)
        .await
        .expect("query")
        .expect("a score row");
    assert_eq!((score.score, score.pending_count), (0, 1));
}

/// The trust rule (docs/contract.md#weighing-answers): after 22 verified answers and no
/// rejection, the Wilson lower bound (1 / (1 + 1.96²/22) = 0.8513) reaches the default 0.85.
async fn the_answer_after_twenty_two_clean_ones_is_verified_on_arrival(app: TestApp) {
    open_niche(&app.db, "games").await;
    let op = operator(&app.db, "games", "ana").await;
    let admin = person(&app.db, "root", true).await;
    for i in 0..22 {
        let question = app.ask("games", &format!("trust-{i}")).await;
        let body = app
            .answer(
                &op.token,
                answer_input(question, "ANSWERED", Some("ea"), None),
            )
            .await;
        assert_eq!(
            body["data"]["answerQuestion"]["contributionStatus"], "PENDING",
            "{body}"
        );
        let id = contributions(&app)
            .await
            .into_iter()
            .find(|c| c.status == ContributionStatus::Pending)
            .expect("a pending contribution")
            .id;
        let verified = app.verify(&admin.token, &id.to_string()).await;
        assert_eq!(
            verified["data"]["verifyContribution"]["status"], "VERIFIED",
            "{verified}"
        );
    }
    let question = app.ask("games", "trust-22").await;
    let body = app
        .answer(
            &op.token,
            answer_input(question, "ANSWERED", Some("ea"), None),
        )
        .await;
    let result = &body["data"]["answerQuestion"];
    assert_eq!(result["contributionStatus"], "VERIFIED", "{body}");
    assert_eq!(result["notice"], "Thanks. That is 3 points.");
    let score = contribution_scores::Entity::find()
        .one(&app.db)
        .await
        .expect("query")
        .expect("a score row");
    assert_eq!(
        (score.score, score.verified_count, score.pending_count),
        (69, 23, 0)
    );
}

/// A question `q-1` in `games` and an operator, ana, who declined it as lacking context.
async fn declined_for_lack_of_context(app: &TestApp) -> (i64, Value, Person) {
    open_niche(&app.db, "games").await;
    let question = app.ask("games", "q-1").await;
    let op = operator(&app.db, "games", "ana").await;
    let body = app
        .answer(
            &op.token,
            answer_input(question, "INSUFFICIENT_CONTEXT", None, None),
        )
        .await;
    (question, body, op)
}

async fn a_decline_is_free_and_keeps_the_question_open(app: TestApp) {
    let (_, body, _) = declined_for_lack_of_context(&app).await;
    let result = &body["data"]["answerQuestion"];
    assert_eq!(result["points"], 0, "{body}");
    assert!(result["contributionStatus"].is_null());
    assert_eq!(result["notice"], "Noted. It stays open for someone else.");
    assert_eq!(result["question"]["status"], "OPEN");
    assert!(contributions(&app).await.is_empty());
}

async fn a_decline_is_replaced_not_doubled_when_the_same_person_answers(app: TestApp) {
    let (question, _, op) = declined_for_lack_of_context(&app).await;
    let body = app
        .answer(
            &op.token,
            answer_input(question, "ANSWERED", None, Some("It is 1.0")),
        )
        .await;
    assert_eq!(
        body["data"]["answerQuestion"]["question"]["status"], "ANSWERED",
        "{body}"
    );
    assert_eq!(
        agent_answers::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        1
    );
}

const AWAITING: &str = "{ awaitingMe { edges { node { id status } } } }";
const RESEARCH_RESULTS: &str = "/api/v1/internal/research-results";

/// What the agent sends back for `q-r`.
fn research_for_q_r() -> String {
    json!({"nicheSlug": "games", "externalId": "q-r", "context": "Steam's store page says 1.0 shipped in May."}).to_string()
}

/// A question `q-r` in `games` that ana saw awaiting her and sent back for research; the
/// question and what answering it said.
async fn sent_back_for_research(app: &TestApp) -> (i64, Person, Value) {
    open_niche(&app.db, "games").await;
    let question = app.ask("games", "q-r").await;
    let ana = operator(&app.db, "games", "ana").await;
    let before = app.graphql(Some(&ana.token), AWAITING, json!({})).await;
    assert_eq!(
        before["data"]["awaitingMe"]["edges"]
            .as_array()
            .map(Vec::len),
        Some(1),
        "{before}"
    );
    let body = app
        .answer(
            &ana.token,
            answer_input(question, "NEEDS_RESEARCH", None, None),
        )
        .await;
    (question, ana, body)
}

/// [`sent_back_for_research`], then the agent's research came back.
async fn research_came_back(app: &TestApp) -> (i64, Person) {
    let (question, ana, _) = sent_back_for_research(app).await;
    let response = app.post_signed(RESEARCH_RESULTS, &research_for_q_r()).await;
    assert_eq!(response.status(), 200);
    (question, ana)
}

async fn sending_back_for_research_takes_the_question_from_the_one_who_sent_it(app: TestApp) {
    let (_, ana, body) = sent_back_for_research(&app).await;
    assert_eq!(
        body["data"]["answerQuestion"]["notice"],
        "Sent back to the agent for more research."
    );
    assert_eq!(
        body["data"]["answerQuestion"]["question"]["status"],
        "RESEARCHING"
    );
    let hidden = app.graphql(Some(&ana.token), AWAITING, json!({})).await;
    assert_eq!(hidden["data"]["awaitingMe"]["edges"], json!([]), "{hidden}");
}

async fn research_coming_back_reopens_the_question_with_its_new_context(app: TestApp) {
    let (question, ana) = research_came_back(&app).await;
    let back = app.graphql(Some(&ana.token), AWAITING, json!({})).await;
    assert_eq!(
        back["data"]["awaitingMe"]["edges"][0]["node"]["status"], "OPEN",
        "{back}"
    );
    let row = agent_questions::Entity::find_by_id(question)
        .one(&app.db)
        .await
        .expect("query")
        .expect("stored");
    let context = row.context.unwrap_or_default();
    // The context it came with, then the findings under a dated heading.
    assert!(
        context.starts_with("Steam lists both an early-access date and a 1.0 date.\n\nResearch, "),
        "{context}"
    );
    assert!(
        context.ends_with(" UTC:\nSteam's store page says 1.0 shipped in May."),
        "{context}"
    );
    assert_eq!(row.research_round, 1);
}

async fn research_for_a_settled_question_is_a_conflict(app: TestApp) {
    let (question, ana) = research_came_back(&app).await;
    let answered = app
        .answer(
            &ana.token,
            answer_input(question, "ANSWERED", Some("ea"), None),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    let before = agent_questions::Entity::find_by_id(question)
        .one(&app.db)
        .await
        .expect("query")
        .expect("stored");
    let again = app.post_signed(RESEARCH_RESULTS, &research_for_q_r()).await;
    assert_eq!(again.status(), 409);
    let body: Value = again.json().await.expect("JSON");
    assert_eq!(body["reason"], "NOT_AWAITING_RESEARCH", "{body}");
    let row = agent_questions::Entity::find_by_id(question)
        .one(&app.db)
        .await
        .expect("query")
        .expect("stored");
    assert_eq!(row, before, "unchanged");
}

async fn research_for_an_unknown_question_or_without_context_is_refused(app: TestApp) {
    research_came_back(&app).await;
    let unknown = json!({"nicheSlug": "games", "externalId": "nope", "context": "x"}).to_string();
    assert_eq!(
        app.post_signed(RESEARCH_RESULTS, &unknown).await.status(),
        404
    );
    let missing = json!({"nicheSlug": "games", "externalId": "q-r"}).to_string();
    assert_eq!(
        app.post_signed(RESEARCH_RESULTS, &missing).await.status(),
        400
    );
}

async fn answering_refuses_an_unknown_question_a_bad_option_or_a_bad_body(app: TestApp) {
    open_niche(&app.db, "games").await;
    let question = app.ask("games", "q-1").await;
    let ana = operator(&app.db, "games", "ana").await;
    let cases = [
        (
            answer_input(999_999, "ANSWERED", Some("ea"), None),
            "NOT_FOUND",
        ),
        (
            answer_input(question, "ANSWERED", None, None),
            "BAD_USER_INPUT",
        ),
        (
            answer_input(question, "ANSWERED", Some("nope"), None),
            "BAD_USER_INPUT",
        ),
        (
            answer_input(question, "ANSWERED", None, Some(&"x".repeat(8_001))),
            "BAD_USER_INPUT",
        ),
    ];
    for (input, code) in cases {
        let body = app.answer(&ana.token, input.clone()).await;
        assert_eq!(error_code(&body), Some(code), "{input} → {body}");
    }
    let unknown_kind = app
        .answer(
            &ana.token,
            answer_input(question, "MAYBE", Some("ea"), None),
        )
        .await;
    assert!(
        unknown_kind["errors"].is_array() && unknown_kind["data"].is_null(),
        "{unknown_kind}"
    );
    assert!(contributions(&app).await.is_empty());
}

async fn a_dismissed_question_cannot_be_answered(app: TestApp) {
    open_niche(&app.db, "games").await;
    let question = app.ask("games", "q-1").await;
    let ana = operator(&app.db, "games", "ana").await;
    let dismissed = app
        .graphql(
            Some(&ana.token),
            "mutation($id: ID!) { dismissQuestion(id: $id) { status } }",
            json!({"id": question.to_string()}),
        )
        .await;
    assert_eq!(
        dismissed["data"]["dismissQuestion"]["status"], "DISMISSED",
        "{dismissed}"
    );
    let late = app
        .answer(
            &ana.token,
            answer_input(question, "ANSWERED", Some("ea"), None),
        )
        .await;
    assert_eq!(error_code(&late), Some("CONFLICT"));
    assert_eq!(
        late["errors"][0]["message"],
        "that question is already settled"
    );
}

const ADJUST: &str = "mutation($p: Int!) { adjustContribution(nicheSlug: \"games\", handle: \"ana\", points: $p, note: \"backfill\") { id status points } }";
const STANDING: &str = "{ viewer { memberships { score shareBps tier { name } nextTier { name } pointsToNextTier } } }";
const REVERSE: &str = "mutation($id: ID!) { reverseContribution(id: $id, note: \"a backfill in error\") { status points } }";

/// ana, an operator of `games`, given 100 points by an admin; the admin's answer.
async fn given_a_hundred_points(app: &TestApp) -> (Person, Person, Value) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let admin = person(&app.db, "root", true).await;
    let first = app
        .graphql(Some(&admin.token), ADJUST, json!({"p": 100}))
        .await;
    (ana, admin, first)
}

/// [`given_a_hundred_points`], then those points reversed; the reversal's answer and the
/// contribution's id.
async fn a_hundred_points_reversed(app: &TestApp) -> (Person, Person, Value, String) {
    let (ana, admin, first) = given_a_hundred_points(app).await;
    let id = first["data"]["adjustContribution"]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let reversed = app
        .graphql(Some(&admin.token), REVERSE, json!({"id": id}))
        .await;
    (ana, admin, reversed, id)
}

async fn an_admins_adjustment_counts_at_once_and_moves_the_tier(app: TestApp) {
    let (ana, _, first) = given_a_hundred_points(&app).await;
    assert_eq!(
        first["data"]["adjustContribution"]["status"], "VERIFIED",
        "{first}"
    );
    let standing = app.graphql(Some(&ana.token), STANDING, json!({})).await;
    let membership = &standing["data"]["viewer"]["memberships"][0];
    assert_eq!(membership["score"], 100, "{standing}");
    assert_eq!(membership["tier"]["name"], "Specialist");
    assert_eq!(membership["shareBps"], 3000);
    assert_eq!(membership["nextTier"]["name"], "Expert");
    assert_eq!(membership["pointsToNextTier"], 150);
}

async fn a_reversal_takes_the_points_off_the_score_and_keeps_the_row(app: TestApp) {
    let (ana, _, reversed, _) = a_hundred_points_reversed(&app).await;
    assert_eq!(
        reversed["data"]["reverseContribution"],
        json!({"status": "REVERSED", "points": 100}),
        "{reversed}"
    );
    let standing = app.graphql(Some(&ana.token), STANDING, json!({})).await;
    assert_eq!(
        standing["data"]["viewer"]["memberships"][0]["score"], 0,
        "{standing}"
    );
    // The reversed row keeps its points.
    let rows = contributions(&app).await;
    assert_eq!(
        (rows[0].points, rows[0].status),
        (100, ContributionStatus::Reversed)
    );
}

async fn a_contribution_is_reversed_once(app: TestApp) {
    let (_, admin, _, id) = a_hundred_points_reversed(&app).await;
    let again = app
        .graphql(
            Some(&admin.token),
            "mutation($id: ID!) { reverseContribution(id: $id, note: \"again\") { status } }",
            json!({"id": id}),
        )
        .await;
    assert_eq!(error_code(&again), Some("CONFLICT"));
}

async fn an_adjustment_over_five_hundred_points_is_refused(app: TestApp) {
    let (_, admin, _) = given_a_hundred_points(&app).await;
    let too_many = app
        .graphql(Some(&admin.token), ADJUST, json!({"p": 501}))
        .await;
    assert_eq!(error_code(&too_many), Some("BAD_USER_INPUT"));
}

async fn the_tier_history_records_the_rise_and_the_fall(app: TestApp) {
    a_hundred_points_reversed(&app).await;
    let history: Vec<(Option<i64>, i64)> = tier_history::Entity::find()
        .all(&app.db)
        .await
        .expect("query")
        .into_iter()
        .map(|h| (h.from_tier_id, h.score))
        .collect();
    assert_eq!(history.len(), 2, "{history:?}");
    assert_eq!(history[0], (None, 100));
    assert_eq!(history[1].1, 0);
}

async fn a_dismissal_refuses_a_bad_reason_and_changes_nothing(app: TestApp) {
    open_niche(&app.db, "games").await;
    let question = app.ask("games", "q-1").await;
    let ana = operator(&app.db, "games", "ana").await;
    let dismiss =
        "mutation($id: ID!, $why: String) { dismissQuestion(id: $id, reason: $why) { status } }";
    for why in ["x".repeat(501), "nul\u{0}inside".to_owned()] {
        let refused = app
            .graphql(
                Some(&ana.token),
                dismiss,
                json!({"id": question.to_string(), "why": why}),
            )
            .await;
        assert_eq!(error_code(&refused), Some("BAD_USER_INPUT"), "{refused}");
    }
    let row = agent_questions::Entity::find_by_id(question)
        .one(&app.db)
        .await
        .expect("query")
        .expect("stored");
    assert_eq!(row.status, QuestionStatus::Open);
    let done = app
        .graphql(
            Some(&ana.token),
            dismiss,
            json!({"id": question.to_string(), "why": "  "}),
        )
        .await;
    assert_eq!(
        done["data"]["dismissQuestion"]["status"], "DISMISSED",
        "{done}"
    );
    let told = app.events_for_agent("expert_question.dismissed").await;
    assert_eq!(told.len(), 1, "the agent is told once: {told:?}");
    assert_eq!(told[0]["reason"], Value::Null, "a blank reason is none");
}

on_both_backends!(
    fifty_operators_answering_at_once_produce_one_winner,
    the_same_person_double_submitting_stores_one_row,
    a_new_operators_answer_waits_for_review,
    the_answer_after_twenty_two_clean_ones_is_verified_on_arrival,
    a_decline_is_free_and_keeps_the_question_open,
    a_decline_is_replaced_not_doubled_when_the_same_person_answers,
    sending_back_for_research_takes_the_question_from_the_one_who_sent_it,
    research_coming_back_reopens_the_question_with_its_new_context,
    research_for_a_settled_question_is_a_conflict,
    a_dismissal_refuses_a_bad_reason_and_changes_nothing,
    research_for_an_unknown_question_or_without_context_is_refused,
    answering_refuses_an_unknown_question_a_bad_option_or_a_bad_body,
    a_dismissed_question_cannot_be_answered,
    an_admins_adjustment_counts_at_once_and_moves_the_tier,
    a_reversal_takes_the_points_off_the_score_and_keeps_the_row,
    a_contribution_is_reversed_once,
    an_adjustment_over_five_hundred_points_is_refused,
    the_tier_history_records_the_rise_and_the_fall,
);
