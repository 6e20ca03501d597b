//! The GraphQL error door: every error a client receives carries `extensions.code` — the
//! library's refusals (parse, validation, depth, complexity, batch, a subscription over HTTP)
//! included — and a fault inside askloop is `INTERNAL` with none of the driver's words.

use askloop_tests::fixtures::{niche, open_niche};
use askloop_tests::people::person;
use askloop_tests::{Backend, TestApp, error_code, on_both_backends};
use entity::niches::NicheStatus;
use sea_orm::ConnectionTrait;
use serde_json::{Value, json};

async fn post_raw(app: &TestApp, body: &str) -> (u16, Value) {
    let response = app
        .client
        .post(app.url("/graphql"))
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .expect("sent");
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON body"))
}

async fn sqlite_app() -> TestApp {
    TestApp::spawn(Backend::Sqlite)
        .await
        .expect("SQLite is always available")
}

async fn a_database_fault_inside_a_resolver_is_internal_and_names_nothing(app: TestApp) {
    let root = person(&app.db, "root", true).await;
    let drop = match app.backend {
        Backend::Postgres => "DROP TABLE payout_accounts CASCADE",
        Backend::Sqlite => "DROP TABLE payout_accounts",
    };
    app.db.execute_unprepared(drop).await.expect("dropped");
    let body = app
        .graphql(
            Some(&root.token),
            "{ payoutAccounts { address } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&body), Some("INTERNAL"), "{body}");
    assert_eq!(body["errors"][0]["message"], "internal error", "{body}");
    let text = body.to_string().to_lowercase();
    for leak in ["payout_accounts", "table", "relation", "sql", "database"] {
        assert!(!text.contains(leak), "the client was told '{leak}': {body}");
    }
}

on_both_backends!(a_database_fault_inside_a_resolver_is_internal_and_names_nothing);

#[tokio::test]
async fn a_query_that_does_not_parse_is_refused_with_a_code() {
    let app = sqlite_app().await;
    let body = app.graphql(None, "{ niches { slug ", json!({})).await;
    assert_eq!(error_code(&body), Some("GRAPHQL_PARSE_FAILED"), "{body}");
}

#[tokio::test]
async fn a_declared_variable_given_no_value_is_the_callers_input_not_internal() {
    let app = sqlite_app().await;
    open_niche(&app.db, "games").await;
    let body = app
        .graphql(
            None,
            "query($slug: String!) { niche(slug: $slug) { name } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&body), Some("BAD_USER_INPUT"), "{body}");
    let message = body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("slug"), "{body}");
}

#[tokio::test]
async fn a_field_the_schema_lacks_is_refused_with_a_code() {
    let app = sqlite_app().await;
    let body = app.graphql(None, "{ niches { nope } }", json!({})).await;
    assert_eq!(
        error_code(&body),
        Some("GRAPHQL_VALIDATION_FAILED"),
        "{body}"
    );
    assert!(body["data"].is_null(), "{body}");
}

#[tokio::test]
async fn a_query_nested_past_the_limit_is_refused_with_a_code() {
    let app = sqlite_app().await;
    // niche, then questions > nodes > niche three times, questions > nodes > id: 13 levels
    // against a limit of 12 (introspection has its own; tests/suite/query_limits.rs).
    let deep = format!(
        "{{ niche(slug: \"games\") {{ {}questions(first: 1) {{ nodes {{ id }} }}{} }} }}",
        "questions(first: 1) { nodes { niche { ".repeat(3),
        " } } }".repeat(3)
    );
    let body = app.graphql(None, &deep, json!({})).await;
    assert_eq!(error_code(&body), Some("QUERY_TOO_DEEP"), "{body}");
}

#[tokio::test]
async fn a_query_costing_past_the_limit_is_refused_with_a_code() {
    let app = sqlite_app().await;
    let fields: String = (0..1100)
        .map(|i| format!("n{i}: niches {{ slug }} "))
        .collect();
    let body = app
        .graphql(None, &format!("{{ {fields} }}"), json!({}))
        .await;
    assert_eq!(error_code(&body), Some("QUERY_TOO_COMPLEX"), "{body}");
}

#[tokio::test]
async fn a_batch_is_refused_as_a_graphql_error_with_a_code_and_reason() {
    let app = sqlite_app().await;
    let (status, body) = post_raw(
        &app,
        r#"[{"query":"{ niches { slug } }"},{"query":"{ niches { slug } }"}]"#,
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(error_code(&body), Some("BAD_REQUEST"), "{body}");
    assert_eq!(
        body["errors"][0]["extensions"]["reason"], "BATCH_UNSUPPORTED",
        "{body}"
    );
}

#[tokio::test]
async fn a_body_that_is_not_a_graphql_request_is_refused_with_a_code() {
    let app = sqlite_app().await;
    let (status, body) = post_raw(&app, "this is not JSON").await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(error_code(&body), Some("BAD_REQUEST"), "{body}");
}

#[tokio::test]
async fn a_variable_of_the_wrong_type_is_the_callers_input() {
    let app = sqlite_app().await;
    open_niche(&app.db, "games").await;
    let body = app
        .graphql(
            None,
            "query ($slug: String!) { niche(slug: $slug) { slug } }",
            json!({ "slug": 42 }),
        )
        .await;
    let code = error_code(&body);
    assert!(
        matches!(code, Some("BAD_USER_INPUT" | "GRAPHQL_VALIDATION_FAILED")),
        "{body}"
    );
}

#[tokio::test]
async fn a_conflict_names_its_reason_on_graphql_and_rest() {
    let app = sqlite_app().await;
    niche(&app.db, "games", NicheStatus::Open).await;
    niche(&app.db, "drafty", NicheStatus::Draft).await;
    let root = person(&app.db, "root", true).await;
    let again = app
        .graphql(
            Some(&root.token),
            "mutation { createNiche(input: {slug: \"games\", name: \"Games\"}) { slug } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&again), Some("CONFLICT"), "{again}");
    assert_eq!(
        again["errors"][0]["extensions"]["reason"], "NICHE_SLUG_TAKEN",
        "{again}"
    );

    let body = askloop_tests::fixtures::question_body("drafty", "q-1").to_string();
    let refused = app
        .post_signed("/api/v1/internal/expert-questions", &body)
        .await;
    assert_eq!(refused.status(), 409);
    let refused: Value = refused.json().await.expect("JSON");
    assert_eq!(refused["code"], "CONFLICT", "{refused}");
    assert_eq!(refused["reason"], "NICHE_CLOSED", "{refused}");
}

#[test]
fn every_conflict_reason_is_documented() {
    let contract = include_str!("../../docs/contract.md");
    for reason in askloop::error::Conflict::REASONS {
        assert!(
            contract.contains(&format!("`{reason}`")),
            "docs/contract.md does not list the reason {reason}"
        );
    }
    for reason in askloop::error::RATE_LIMIT_REASONS {
        assert!(
            contract.contains(&format!("`{reason}`")),
            "docs/contract.md does not list the reason {reason}"
        );
    }
    for code in [
        "RATE_LIMITED",
        "GRAPHQL_PARSE_FAILED",
        "GRAPHQL_VALIDATION_FAILED",
        "QUERY_TOO_DEEP",
        "QUERY_TOO_COMPLEX",
        "BAD_REQUEST",
        "BATCH_UNSUPPORTED",
        "SUBSCRIPTION_NEEDS_WEBSOCKET",
    ] {
        assert!(
            contract.contains(&format!("`{code}`")),
            "docs/contract.md does not list {code}"
        );
    }
}
