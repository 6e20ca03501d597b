//! The GraphQL skeleton: the committed SDL, the niches query, GraphiQL and the limits.

use askloop_tests::fixtures::niche;
use askloop_tests::{TestApp, on_both_backends};
use entity::niches::NicheStatus;
use serde_json::{Value, json};

#[test]
fn the_committed_schema_matches_the_code() {
    let committed = include_str!("../../schema.graphql");
    let current = askloop::graphql::sdl();
    assert!(
        committed == current,
        "schema.graphql is stale: run `cargo run -p askloop -- schema > schema.graphql`"
    );
}

async fn query(app: &TestApp, body: Value) -> Value {
    app.client
        .post(app.url("/graphql"))
        .json(&body)
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON")
}

async fn niches_lists_only_niches_taking_questions(app: TestApp) {
    niche(&app.db, "games", NicheStatus::Open).await;
    niche(&app.db, "roofing", NicheStatus::Operated).await;
    niche(&app.db, "drafty", NicheStatus::Draft).await;
    niche(&app.db, "old", NicheStatus::Archived).await;
    let body = query(&app, json!({"query": "{ niches { slug status } }"})).await;
    assert_eq!(
        body["data"]["niches"],
        json!([{"slug": "games", "status": "OPEN"}, {"slug": "roofing", "status": "OPERATED"}])
    );
}

async fn a_malformed_query_is_an_error_not_a_crash(app: TestApp) {
    let body = query(&app, json!({"query": "{ niches { nope } }"})).await;
    assert!(body["data"].is_null());
    assert!(
        body["errors"][0]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("nope"),
        "{body}"
    );
}

async fn admins_list_every_niche_with_its_members_and_nobody_else_can(app: TestApp) {
    use askloop_tests::error_code;
    use askloop_tests::people::{operator, person};

    niche(&app.db, "games", NicheStatus::Open).await;
    niche(&app.db, "drafty", NicheStatus::Draft).await;
    let ana = operator(&app.db, "games", "ana").await;
    operator(&app.db, "games", "bo").await;
    let root = person(&app.db, "root", true).await;
    let all = "{ allNiches { slug status members { handle role status } } }";
    let listed = app.graphql(Some(&root.token), all, json!({})).await;
    assert_eq!(
        listed["data"]["allNiches"],
        json!([
            {"slug": "drafty", "status": "DRAFT", "members": []},
            {"slug": "games", "status": "OPEN", "members": [
                {"handle": "ana", "role": "OPERATOR", "status": "ACTIVE"},
                {"handle": "bo", "role": "OPERATOR", "status": "ACTIVE"},
            ]},
        ]),
        "{listed}"
    );
    let refused = app.graphql(Some(&ana.token), all, json!({})).await;
    assert_eq!(error_code(&refused), Some("FORBIDDEN"), "{refused}");
    assert!(refused["data"].is_null(), "{refused}");
    let anonymous = app.graphql(None, all, json!({})).await;
    assert_eq!(
        error_code(&anonymous),
        Some("UNAUTHENTICATED"),
        "{anonymous}"
    );
    // A member reads the niche, but not who else is in it.
    let members = app
        .graphql(
            Some(&ana.token),
            "{ niche(slug: \"games\") { slug members { handle } } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&members), Some("FORBIDDEN"), "{members}");
    assert!(!members.to_string().contains("\"bo\""), "{members}");
}

on_both_backends!(
    niches_lists_only_niches_taking_questions,
    a_malformed_query_is_an_error_not_a_crash,
    admins_list_every_niche_with_its_members_and_nobody_else_can,
);

#[tokio::test]
async fn graphiql_is_off_by_default_and_get_graphql_is_a_coded_404() {
    let app = TestApp::spawn(askloop_tests::Backend::Sqlite)
        .await
        .expect("an app");
    let page = app
        .client
        .get(app.url("/graphql"))
        .send()
        .await
        .expect("sent");
    assert_eq!(page.status(), 404);
    let body: serde_json::Value = page.json().await.expect("a JSON error");
    assert_eq!(body["code"], "NOT_FOUND");
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.contains("ASKLOOP_GRAPHIQL=1")),
        "{body}"
    );
}

#[tokio::test]
async fn with_graphiql_on_its_page_is_served_under_its_own_policy() {
    let app = TestApp::spawn_with(askloop_tests::Backend::Sqlite, |config| {
        config.graphiql = true;
    })
    .await
    .expect("an app");
    let page = app
        .client
        .get(app.url("/graphql"))
        .send()
        .await
        .expect("sent");
    assert_eq!(page.status(), 200);
    let policy = page
        .headers()
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .expect("a policy");
    assert_eq!(
        policy,
        askloop::net::security_headers::GRAPHIQL_CONTENT_SECURITY_POLICY
    );
    assert_eq!(page.headers()["x-frame-options"], "DENY");
    assert!(page.text().await.expect("text").contains("graphiql"));
}

#[tokio::test]
async fn queries_deeper_than_the_limit_are_refused() {
    let app = TestApp::spawn(askloop_tests::Backend::Sqlite)
        .await
        .expect("an app");
    // niche, then questions > nodes > niche three times, questions > nodes > id: 13 levels
    // against a limit of 12 (introspection has bounds of its own: query_limits.rs).
    let deep = format!(
        "niche(slug: \"games\") {{ {}questions(first: 1) {{ nodes {{ id }} }}{} }}",
        "questions(first: 1) { nodes { niche { ".repeat(3),
        " } } }".repeat(3)
    );
    let body = query(&app, json!({"query": format!("{{ {deep} }}")})).await;
    let message = body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("nested too deep"), "{body}");
}
