//! `POST /api/v1/internal/expert-questions`: every status code, on SQLite and PostgreSQL.

use askloop::domain::signing::sign;
use askloop_tests::fixtures::{niche, open_niche, question_body};
use askloop_tests::{Backend, TestApp, on_both_backends};
use entity::agent_questions::{self, QuestionStatus};
use entity::niches::NicheStatus;
use sea_orm::{ActiveModelTrait, ActiveValue::Set, EntityTrait, PaginatorTrait};
use serde_json::{Value, json};

const INTAKE: &str = "/api/v1/internal/expert-questions";

async fn stored_questions(app: &TestApp) -> u64 {
    agent_questions::Entity::find()
        .count(&app.db)
        .await
        .expect("count questions")
}

async fn json_of(response: reqwest::Response) -> Value {
    response.json().await.expect("a JSON body")
}

async fn intake_stores_a_new_question(app: TestApp) {
    open_niche(&app.db, "games").await;
    let response = app
        .post_signed(INTAKE, &question_body("games", "q-1").to_string())
        .await;
    assert_eq!(response.status(), 201);
    let body = json_of(response).await;
    assert_eq!(body["stored"], true);
    assert_eq!(body["duplicate"], false);
    assert_eq!(body["question"]["status"], "open");
    let id = body["question"]["id"].as_i64().expect("an id");
    let row = agent_questions::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .expect("query")
        .expect("the question is stored");
    assert_eq!(row.external_id.as_deref(), Some("q-1"));
    assert_eq!(row.title, "Which date?");
    assert_eq!(row.status, QuestionStatus::Open);
    assert_eq!(row.urgency, agent_questions::Urgency::High);
    assert_eq!(row.options[1], json!({"id": "full", "label": "1.0"}));
    assert!(row.expires_at > row.created_at);
}

async fn intake_answers_a_redelivery_with_the_current_status(app: TestApp) {
    open_niche(&app.db, "games").await;
    let body = question_body("games", "q-1").to_string();
    let first = json_of(app.post_signed(INTAKE, &body).await).await;
    let id = first["question"]["id"].as_i64().expect("an id");

    let again = app.post_signed(INTAKE, &body).await;
    assert_eq!(again.status(), 200);
    let again = json_of(again).await;
    assert_eq!(again["duplicate"], true);
    assert_eq!(again["stored"], true);
    assert_eq!(again["question"]["id"].as_i64(), Some(id));
    assert_eq!(again["question"]["status"], "open");

    // Once the question has moved on, a redelivery reports where it is now.
    let row = agent_questions::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .expect("query")
        .expect("stored");
    let mut row: agent_questions::ActiveModel = row.into();
    row.status = Set(QuestionStatus::Researching);
    row.update(&app.db).await.expect("update");
    let later = json_of(app.post_signed(INTAKE, &body).await).await;
    assert_eq!(later["question"]["status"], "researching");
    assert_eq!(stored_questions(&app).await, 1);
}

async fn intake_refuses_unsigned_and_badly_signed_requests(app: TestApp) {
    open_niche(&app.db, "games").await;
    let body = question_body("games", "q-1").to_string();
    let now = chrono::Utc::now().timestamp();
    let cases: [(Option<String>, &str); 5] = [
        (None, "no signature"),
        (Some("garbage".into()), "malformed signature"),
        (
            Some(sign("some-other-secret", body.as_bytes(), now)),
            "bad signature",
        ),
        (
            Some(sign(askloop_tests::SECRET, body.as_bytes(), now - 301)),
            "signature expired",
        ),
        (
            Some(sign(askloop_tests::SECRET, b"{}", now)),
            "bad signature",
        ),
    ];
    for (signature, reason) in cases {
        let response = app
            .post_with_signature(INTAKE, &body, signature.as_deref())
            .await;
        assert_eq!(response.status(), 401, "{reason}");
        assert_eq!(json_of(response).await["error"], reason);
    }
    assert_eq!(stored_questions(&app).await, 0);
}

async fn intake_refuses_a_signed_body_that_is_not_json(app: TestApp) {
    open_niche(&app.db, "games").await;
    let response = app.post_signed(INTAKE, "nicheSlug=games&title=x").await;
    assert_eq!(response.status(), 400);
    let body = json_of(response).await;
    assert_eq!(body["code"], "BAD_USER_INPUT");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .starts_with("the body is not valid JSON")
    );
    assert_eq!(stored_questions(&app).await, 0);
}

async fn intake_refuses_a_question_without_title_or_question(app: TestApp) {
    open_niche(&app.db, "games").await;
    for field in ["title", "question"] {
        let mut body = question_body("games", "q-1");
        body["payload"]
            .as_object_mut()
            .expect("an object")
            .remove(field);
        let response = app.post_signed(INTAKE, &body.to_string()).await;
        assert_eq!(response.status(), 400);
        assert_eq!(
            json_of(response).await["error"],
            format!("{field} is required")
        );
    }
    assert_eq!(stored_questions(&app).await, 0);
}

async fn intake_refuses_an_unknown_niche(app: TestApp) {
    let response = app
        .post_signed(INTAKE, &question_body("nowhere", "q-1").to_string())
        .await;
    assert_eq!(response.status(), 404);
    assert_eq!(json_of(response).await["error"], "no niche 'nowhere'");
}

async fn intake_refuses_draft_and_archived_niches(app: TestApp) {
    niche(&app.db, "drafty", NicheStatus::Draft).await;
    niche(&app.db, "old", NicheStatus::Archived).await;
    for slug in ["drafty", "old"] {
        let response = app
            .post_signed(INTAKE, &question_body(slug, "q-1").to_string())
            .await;
        assert_eq!(response.status(), 409, "{slug}");
        assert_eq!(json_of(response).await["code"], "CONFLICT");
    }
    assert_eq!(stored_questions(&app).await, 0);
}

async fn intake_refuses_bodies_over_256_kib(app: TestApp) {
    open_niche(&app.db, "games").await;
    let mut body = question_body("games", "big");
    body["payload"]["context"] = json!("x".repeat(256 * 1024));
    let response = app.post_signed(INTAKE, &body.to_string()).await;
    assert_eq!(response.status(), 413);
    assert_eq!(stored_questions(&app).await, 0);
}

async fn intake_caps_fields_in_characters(app: TestApp) {
    open_niche(&app.db, "games").await;
    let mut body = question_body("games", "long");
    body["payload"]["title"] = json!("é".repeat(400));
    body["payload"]["question"] = json!("🦀".repeat(9_000));
    body["payload"]["context"] = json!("ß".repeat(25_000));
    body["payload"]["urgency"] = json!("yesterday");
    body["payload"]["options"] = json!(
        (0..20)
            .map(|i| json!({"id": format!("o{i}"), "label": "x"}))
            .collect::<Vec<_>>()
    );
    let response = app.post_signed(INTAKE, &body.to_string()).await;
    assert_eq!(response.status(), 201);
    let id = json_of(response).await["question"]["id"]
        .as_i64()
        .expect("an id");
    let row = agent_questions::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .expect("query")
        .expect("stored");
    assert_eq!(row.title.chars().count(), 300);
    assert_eq!(row.question.chars().count(), 8_000);
    assert_eq!(row.context.map(|c| c.chars().count()), Some(20_000));
    assert_eq!(row.urgency, agent_questions::Urgency::Normal);
    assert_eq!(row.options.as_array().map(Vec::len), Some(12));
}

async fn identical_deliveries_at_once_store_one_question(app: TestApp) {
    open_niche(&app.db, "games").await;
    let body = question_body("games", "same").to_string();
    let sends = (0..100).map(|_| app.post_signed(INTAKE, &body));
    let statuses: Vec<u16> = futures::future::join_all(sends)
        .await
        .into_iter()
        .map(|r| r.status().as_u16())
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        99,
        "{statuses:?}"
    );
    assert_eq!(stored_questions(&app).await, 1);
}

async fn different_deliveries_at_once_store_them_all(app: TestApp) {
    open_niche(&app.db, "games").await;
    let bodies: Vec<String> = (0..100)
        .map(|i| question_body("games", &format!("q-{i}")).to_string())
        .collect();
    let sends = bodies.iter().map(|body| app.post_signed(INTAKE, body));
    let statuses: Vec<u16> = futures::future::join_all(sends)
        .await
        .into_iter()
        .map(|r| r.status().as_u16())
        .collect();
    assert!(statuses.iter().all(|s| *s == 201), "{statuses:?}");
    assert_eq!(stored_questions(&app).await, 100);
}

on_both_backends!(
    intake_stores_a_new_question,
    intake_answers_a_redelivery_with_the_current_status,
    intake_refuses_unsigned_and_badly_signed_requests,
    intake_refuses_a_signed_body_that_is_not_json,
    intake_refuses_a_question_without_title_or_question,
    intake_refuses_an_unknown_niche,
    intake_refuses_draft_and_archived_niches,
    intake_refuses_bodies_over_256_kib,
    intake_caps_fields_in_characters,
    identical_deliveries_at_once_store_one_question,
    different_deliveries_at_once_store_them_all,
);

#[tokio::test]
async fn intake_without_a_configured_secret_is_unavailable() {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        config.signing = askloop::domain::signing::SigningKeys::default();
    })
    .await
    .expect("an app");
    open_niche(&app.db, "games").await;
    let body = question_body("games", "q-1").to_string();
    let response = app.post_signed(INTAKE, &body).await;
    assert_eq!(response.status(), 503);
    assert_eq!(
        json_of(response).await["error"],
        "no signing secret is configured"
    );
    assert_eq!(stored_questions(&app).await, 0);
}

#[tokio::test]
async fn intake_accepts_the_previous_secret_while_rotating() {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        config.signing = askloop::domain::signing::SigningKeys::new(
            Some("the-new-secret".into()),
            Some(askloop_tests::SECRET.into()),
        );
    })
    .await
    .expect("an app");
    open_niche(&app.db, "games").await;
    // `post_signed` signs with the test secret, which is now the previous one.
    let response = app
        .post_signed(INTAKE, &question_body("games", "q-1").to_string())
        .await;
    assert_eq!(response.status(), 201);
    let body = question_body("games", "q-2").to_string();
    let with_new = sign(
        "the-new-secret",
        body.as_bytes(),
        chrono::Utc::now().timestamp(),
    );
    let response = app
        .post_with_signature(INTAKE, &body, Some(&with_new))
        .await;
    assert_eq!(response.status(), 201);
}
