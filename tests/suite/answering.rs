//! Answering without races, declining for free, scoring and review (design §6, §7), through the
//! public API on SQLite and PostgreSQL.

use askloop_tests::fixtures::open_niche;
use askloop_tests::people::{operator, person};
use askloop_tests::{TestApp, error_code, on_both_backends};
use entity::agent_answers;
use entity::agent_questions::{self, QuestionStatus};
use entity::contribution_events::{self, ContributionStatus};
use entity::{contribution_scores, tier_history};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

const ANSWER: &str = r#"mutation($input: AnswerInput!) {
  answerQuestion(input: $input) {
    points contributionStatus notice
    answer { kind optionId body answeredBy }
    question { status }
  }
}"#;

fn answer_input(question: i64, kind: &str, option: Option<&str>, body: Option<&str>) -> Value {
    json!({"input": {"questionId": question.to_string(), "kind": kind, "optionId": option, "body": body}})
}

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
        app.graphql(
            Some(&op.token),
            ANSWER,
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
        app.graphql(Some(&op.token), ANSWER, input.clone()),
        app.graphql(Some(&op.token), ANSWER, input.clone())
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
        .graphql(
            Some(&op.token),
            ANSWER,
            answer_input(question, "ANSWERED", Some("ea"), None),
        )
        .await;
    let result = &body["data"]["answerQuestion"];
    assert_eq!(result["points"], 3, "{body}");
    assert_eq!(result["contributionStatus"], "pending");
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

async fn the_twenty_sixth_answer_is_verified_on_arrival(app: TestApp) {
    open_niche(&app.db, "games").await;
    let op = operator(&app.db, "games", "ana").await;
    let admin = person(&app.db, "root", true).await;
    for i in 0..25 {
        let question = app.ask("games", &format!("trust-{i}")).await;
        let body = app
            .graphql(
                Some(&op.token),
                ANSWER,
                answer_input(question, "ANSWERED", Some("ea"), None),
            )
            .await;
        assert_eq!(
            body["data"]["answerQuestion"]["contributionStatus"], "pending",
            "{body}"
        );
        let id = contributions(&app)
            .await
            .into_iter()
            .find(|c| c.status == ContributionStatus::Pending)
            .expect("a pending contribution")
            .id;
        let verified = app
            .graphql(
                Some(&admin.token),
                "mutation($id: ID!) { verifyContribution(id: $id) { status } }",
                json!({"id": id.to_string()}),
            )
            .await;
        assert_eq!(
            verified["data"]["verifyContribution"]["status"], "verified",
            "{verified}"
        );
    }
    let question = app.ask("games", "trust-25").await;
    let body = app
        .graphql(
            Some(&op.token),
            ANSWER,
            answer_input(question, "ANSWERED", Some("ea"), None),
        )
        .await;
    let result = &body["data"]["answerQuestion"];
    assert_eq!(result["contributionStatus"], "verified", "{body}");
    assert_eq!(result["notice"], "Thanks. That is 3 points.");
    let score = contribution_scores::Entity::find()
        .one(&app.db)
        .await
        .expect("query")
        .expect("a score row");
    assert_eq!(
        (score.score, score.verified_count, score.pending_count),
        (78, 26, 0)
    );
}

async fn declines_are_free_and_keep_the_question_open(app: TestApp) {
    open_niche(&app.db, "games").await;
    let question = app.ask("games", "q-1").await;
    let op = operator(&app.db, "games", "ana").await;
    let body = app
        .graphql(
            Some(&op.token),
            ANSWER,
            answer_input(question, "INSUFFICIENT_CONTEXT", None, None),
        )
        .await;
    let result = &body["data"]["answerQuestion"];
    assert_eq!(result["points"], 0, "{body}");
    assert!(result["contributionStatus"].is_null());
    assert_eq!(result["notice"], "Noted. It stays open for someone else.");
    assert_eq!(result["question"]["status"], "OPEN");
    assert!(contributions(&app).await.is_empty());

    // The same person may still answer while it waits: the decline is replaced, not doubled.
    let body = app
        .graphql(
            Some(&op.token),
            ANSWER,
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

async fn sending_back_for_research_and_research_returning_reopens_it_for_decliners(app: TestApp) {
    open_niche(&app.db, "games").await;
    let question = app.ask("games", "q-r").await;
    let ana = operator(&app.db, "games", "ana").await;
    let awaiting = "{ awaitingMe { edges { node { id status } } } }";
    let before = app.graphql(Some(&ana.token), awaiting, json!({})).await;
    assert_eq!(
        before["data"]["awaitingMe"]["edges"]
            .as_array()
            .map(Vec::len),
        Some(1),
        "{before}"
    );

    let body = app
        .graphql(
            Some(&ana.token),
            ANSWER,
            answer_input(question, "NEEDS_RESEARCH", None, None),
        )
        .await;
    assert_eq!(
        body["data"]["answerQuestion"]["notice"],
        "Sent back to the agent for more research."
    );
    assert_eq!(
        body["data"]["answerQuestion"]["question"]["status"],
        "RESEARCHING"
    );
    let hidden = app.graphql(Some(&ana.token), awaiting, json!({})).await;
    assert_eq!(hidden["data"]["awaitingMe"]["edges"], json!([]), "{hidden}");

    let research = json!({"nicheSlug": "games", "externalId": "q-r", "context": "Steam's store page says 1.0 shipped in May."}).to_string();
    let response = app
        .post_signed("/api/v1/internal/research-results", &research)
        .await;
    assert_eq!(response.status(), 200);
    let back = app.graphql(Some(&ana.token), awaiting, json!({})).await;
    assert_eq!(
        back["data"]["awaitingMe"]["edges"][0]["node"]["status"], "OPEN",
        "{back}"
    );
    let row = agent_questions::Entity::find_by_id(question)
        .one(&app.db)
        .await
        .expect("query")
        .expect("stored");
    assert_eq!(
        row.context.as_deref(),
        Some("Steam's store page says 1.0 shipped in May.")
    );

    // Research for a question that is not waiting for it is a conflict and changes nothing.
    let again = app
        .post_signed("/api/v1/internal/research-results", &research)
        .await;
    assert_eq!(again.status(), 409);
    let unknown = json!({"nicheSlug": "games", "externalId": "nope", "context": "x"}).to_string();
    assert_eq!(
        app.post_signed("/api/v1/internal/research-results", &unknown)
            .await
            .status(),
        404
    );
    let missing = json!({"nicheSlug": "games", "externalId": "q-r"}).to_string();
    assert_eq!(
        app.post_signed("/api/v1/internal/research-results", &missing)
            .await
            .status(),
        400
    );
}

async fn answering_checks_its_rules_in_order(app: TestApp) {
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
        let body = app.graphql(Some(&ana.token), ANSWER, input.clone()).await;
        assert_eq!(error_code(&body), Some(code), "{input} → {body}");
    }
    let unknown_kind = app
        .graphql(
            Some(&ana.token),
            ANSWER,
            answer_input(question, "MAYBE", Some("ea"), None),
        )
        .await;
    assert!(
        unknown_kind["errors"].is_array() && unknown_kind["data"].is_null(),
        "{unknown_kind}"
    );
    assert!(contributions(&app).await.is_empty());

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
        .graphql(
            Some(&ana.token),
            ANSWER,
            answer_input(question, "ANSWERED", Some("ea"), None),
        )
        .await;
    assert_eq!(error_code(&late), Some("CONFLICT"));
    assert_eq!(
        late["errors"][0]["message"],
        "that question is already settled"
    );
}

async fn review_decisions_move_the_score_and_the_tier_history(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let admin = person(&app.db, "root", true).await;
    let adjust = "mutation($p: Int!) { adjustContribution(nicheSlug: \"games\", handle: \"ana\", points: $p, note: \"backfill\") { id status points } }";
    let first = app
        .graphql(Some(&admin.token), adjust, json!({"p": 100}))
        .await;
    assert_eq!(
        first["data"]["adjustContribution"]["status"], "verified",
        "{first}"
    );
    let viewer = "{ viewer { memberships { score shareBps tier { name } nextTier { name } pointsToNextTier } } }";
    let standing = app.graphql(Some(&ana.token), viewer, json!({})).await;
    let membership = &standing["data"]["viewer"]["memberships"][0];
    assert_eq!(membership["score"], 100, "{standing}");
    assert_eq!(membership["tier"]["name"], "Specialist");
    assert_eq!(membership["shareBps"], 3000);
    assert_eq!(membership["nextTier"]["name"], "Expert");
    assert_eq!(membership["pointsToNextTier"], 150);

    let id = first["data"]["adjustContribution"]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let reversed = app
        .graphql(
            Some(&admin.token),
            "mutation($id: ID!) { reverseContribution(id: $id) { status points } }",
            json!({"id": id}),
        )
        .await;
    assert_eq!(
        reversed["data"]["reverseContribution"],
        json!({"status": "reversed", "points": 100}),
        "{reversed}"
    );
    let standing = app.graphql(Some(&ana.token), viewer, json!({})).await;
    assert_eq!(
        standing["data"]["viewer"]["memberships"][0]["score"], 0,
        "{standing}"
    );
    let again = app
        .graphql(
            Some(&admin.token),
            "mutation($id: ID!) { reverseContribution(id: $id) { status } }",
            json!({"id": id}),
        )
        .await;
    assert_eq!(error_code(&again), Some("CONFLICT"));
    let too_many = app
        .graphql(Some(&admin.token), adjust, json!({"p": 501}))
        .await;
    assert_eq!(error_code(&too_many), Some("BAD_USER_INPUT"));

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
    // The reversed row keeps its points.
    let rows = contributions(&app).await;
    assert_eq!(
        (rows[0].points, rows[0].status),
        (100, ContributionStatus::Reversed)
    );
}

on_both_backends!(
    fifty_operators_answering_at_once_produce_one_winner,
    the_same_person_double_submitting_stores_one_row,
    a_new_operators_answer_waits_for_review,
    the_twenty_sixth_answer_is_verified_on_arrival,
    declines_are_free_and_keep_the_question_open,
    sending_back_for_research_and_research_returning_reopens_it_for_decliners,
    answering_checks_its_rules_in_order,
    review_decisions_move_the_score_and_the_tier_history,
);
