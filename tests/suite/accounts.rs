//! Signing in and out, session cookies, the origin rule for cookie writes, API keys, and the
//! slowing down of repeated failed sign-ins.

use askloop_tests::fixtures::open_niche;
use askloop_tests::people::{PASSWORD, operator, person};
use askloop_tests::{Backend, TestApp, error_code, on_both_backends};
use serde_json::{Value, json};

const LOGIN: &str = "mutation($h: String!, $p: String!) { login(handle: $h, password: $p) { token user { handle isAdmin } } }";
const VIEWER: &str = "{ viewer { user { handle } } }";

async fn post_graphql(
    app: &TestApp,
    query: &str,
    variables: Value,
    origin: Option<&str>,
) -> (reqwest::header::HeaderMap, Value) {
    let mut request = app
        .client
        .post(app.url("/graphql"))
        .json(&json!({"query": query, "variables": variables}));
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    let response = request.send().await.expect("sent");
    let headers = response.headers().clone();
    (headers, response.json().await.expect("JSON"))
}

/// ana, signed in through GraphQL by the app's client (which keeps cookies); the response's
/// headers and body.
async fn signed_in_with_a_cookie(app: &TestApp) -> (reqwest::header::HeaderMap, Value) {
    person(&app.db, "ana", false).await;
    post_graphql(app, LOGIN, json!({"h": "Ana", "p": PASSWORD}), None).await
}

async fn signing_in_sets_an_http_only_cookie_that_identifies_the_person(app: TestApp) {
    let (headers, body) = signed_in_with_a_cookie(&app).await;
    assert_eq!(body["data"]["login"]["user"]["handle"], "ana", "{body}");
    let cookie = headers
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("a session cookie");
    assert!(cookie.starts_with("askloop_session=al_sess_"), "{cookie}");
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    // The client kept the cookie: the next request is ana's.
    let (_, me) = post_graphql(&app, VIEWER, json!({}), None).await;
    assert_eq!(me["data"]["viewer"]["user"]["handle"], "ana", "{me}");
}

async fn signing_out_ends_the_session_and_clears_the_cookie(app: TestApp) {
    signed_in_with_a_cookie(&app).await;
    let own = app.base.clone();
    let (headers, out) = post_graphql(&app, "mutation { logout }", json!({}), Some(&own)).await;
    assert_eq!(out["data"]["logout"], true, "{out}");
    assert!(
        headers
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .contains("Max-Age=0")
    );
    let (_, after) = post_graphql(&app, VIEWER, json!({}), None).await;
    assert!(after["data"]["viewer"].is_null(), "{after}");
}

async fn a_wrong_password_or_handle_says_the_same_thing(app: TestApp) {
    person(&app.db, "ana", false).await;
    for (handle, password) in [("ana", "not the password"), ("nobody", PASSWORD)] {
        let (headers, body) =
            post_graphql(&app, LOGIN, json!({"h": handle, "p": password}), None).await;
        assert_eq!(error_code(&body), Some("UNAUTHENTICATED"), "{body}");
        assert_eq!(body["errors"][0]["message"], "wrong handle or password");
        assert!(headers.get("set-cookie").is_none());
    }
}

const DECLINE: &str = "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: INSUFFICIENT_CONTEXT}) { notice } }";

/// An operator of `games`, ana, signed in with the session cookie, and a question there; the
/// variables to decline it.
async fn an_operator_signed_in_with_a_cookie(app: &TestApp) -> Value {
    open_niche(&app.db, "games").await;
    operator(&app.db, "games", "ana").await;
    let question = app.ask("games", "csrf").await;
    let (_, body) = post_graphql(app, LOGIN, json!({"h": "ana", "p": PASSWORD}), None).await;
    assert!(body["errors"].is_null(), "{body}");
    json!({"id": question.to_string()})
}

async fn cookie_writes_from_another_origin_or_none_are_refused(app: TestApp) {
    let vars = an_operator_signed_in_with_a_cookie(&app).await;
    for origin in [Some("http://evil.example"), None] {
        let (_, refused) = post_graphql(&app, DECLINE, vars.clone(), origin).await;
        assert_eq!(
            error_code(&refused),
            Some("FORBIDDEN"),
            "{origin:?}: {refused}"
        );
    }
}

async fn cookie_reads_work_from_anywhere_and_writes_from_our_own_origin(app: TestApp) {
    let vars = an_operator_signed_in_with_a_cookie(&app).await;
    let (_, read) = post_graphql(&app, VIEWER, json!({}), Some("http://evil.example")).await;
    assert_eq!(read["data"]["viewer"]["user"]["handle"], "ana");
    let own = app.base.clone();
    let (_, ok) = post_graphql(&app, DECLINE, vars, Some(&own)).await;
    assert_eq!(
        ok["data"]["answerQuestion"]["notice"], "Noted. It stays open for someone else.",
        "{ok}"
    );
}

async fn signing_in_from_another_sites_page_is_refused(app: TestApp) {
    an_operator_signed_in_with_a_cookie(&app).await;
    let (_, cross) = post_graphql(
        &app,
        LOGIN,
        json!({"h": "ana", "p": PASSWORD}),
        Some("http://evil.example"),
    )
    .await;
    assert_eq!(error_code(&cross), Some("FORBIDDEN"), "{cross}");
}

async fn an_api_key_works_as_a_bearer_until_revoked(app: TestApp) {
    let ana = person(&app.db, "ana", false).await;
    let created = app
        .graphql(
            Some(&ana.token),
            "mutation { createApiKey(name: \"ci\") { token key { id prefix } } }",
            json!({}),
        )
        .await;
    let key = created["data"]["createApiKey"]["token"]
        .as_str()
        .expect("a key")
        .to_owned();
    let id = created["data"]["createApiKey"]["key"]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    assert!(
        key.starts_with(
            created["data"]["createApiKey"]["key"]["prefix"]
                .as_str()
                .expect("prefix")
        )
    );
    let me = app.graphql(Some(&key), VIEWER, json!({})).await;
    assert_eq!(me["data"]["viewer"]["user"]["handle"], "ana", "{me}");
    let revoked = app
        .graphql(
            Some(&key),
            "mutation($id: ID!) { revokeApiKey(id: $id) }",
            json!({"id": id}),
        )
        .await;
    assert_eq!(revoked["data"]["revokeApiKey"], true, "{revoked}");
    let after = app.graphql(Some(&key), VIEWER, json!({})).await;
    assert_eq!(error_code(&after), Some("UNAUTHENTICATED"), "{after}");
}

async fn a_bearer_that_does_not_resolve_is_refused_not_anonymous(app: TestApp) {
    let garbage = app.graphql(Some("al_key_nope"), VIEWER, json!({})).await;
    assert_eq!(error_code(&garbage), Some("UNAUTHENTICATED"));
    let rest = app
        .client
        .get(app.url("/api/v1/niches/games/questions"))
        .bearer_auth("al_sess_nope")
        .send()
        .await
        .expect("sent");
    assert_eq!(rest.status(), 401);
}

async fn a_session_token_works_as_a_bearer_until_logout(app: TestApp) {
    person(&app.db, "ana", false).await;
    let login = app
        .graphql(None, LOGIN, json!({"h": "ana", "p": PASSWORD}))
        .await;
    let token = login["data"]["login"]["token"]
        .as_str()
        .expect("a token")
        .to_owned();
    let me = app.graphql(Some(&token), VIEWER, json!({})).await;
    assert_eq!(me["data"]["viewer"]["user"]["handle"], "ana", "{me}");
    let out = app
        .graphql(Some(&token), "mutation { logout }", json!({}))
        .await;
    assert_eq!(out["data"]["logout"], true, "{out}");
    let after = app.graphql(Some(&token), VIEWER, json!({})).await;
    assert_eq!(error_code(&after), Some("UNAUTHENTICATED"), "{after}");
}

on_both_backends!(
    a_session_token_works_as_a_bearer_until_logout,
    signing_in_sets_an_http_only_cookie_that_identifies_the_person,
    signing_out_ends_the_session_and_clears_the_cookie,
    a_wrong_password_or_handle_says_the_same_thing,
    cookie_writes_from_another_origin_or_none_are_refused,
    cookie_reads_work_from_anywhere_and_writes_from_our_own_origin,
    signing_in_from_another_sites_page_is_refused,
    an_api_key_works_as_a_bearer_until_revoked,
    a_bearer_that_does_not_resolve_is_refused_not_anonymous,
);

#[tokio::test]
async fn repeated_failed_sign_ins_are_slowed_down() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    person(&app.db, "ana", false).await;
    for _ in 0..5 {
        let (_, body) = post_graphql(&app, LOGIN, json!({"h": "ana", "p": "guess"}), None).await;
        assert_eq!(body["errors"][0]["message"], "wrong handle or password");
    }
    // Now even the right password has to wait.
    let (_, body) = post_graphql(&app, LOGIN, json!({"h": "ana", "p": PASSWORD}), None).await;
    let message = body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("too many failed sign-ins; try again in"),
        "{body}"
    );
    assert_eq!(error_code(&body), Some("UNAUTHENTICATED"));
}

#[tokio::test]
async fn an_expired_session_cookie_is_anonymous() {
    use askloop::service::people::accounts::{new_token, token_hash};
    use entity::sessions;
    use sea_orm::{ActiveModelTrait, ActiveValue::Set, NotSet};

    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    let ana = person(&app.db, "ana", false).await;
    let stale = new_token("al_sess_");
    sessions::ActiveModel {
        id: NotSet,
        user_id: Set(ana.id),
        token_hash: Set(token_hash(&stale)),
        created_at: Set(chrono::Utc::now() - chrono::Duration::days(20)),
        expires_at: Set(chrono::Utc::now() - chrono::Duration::days(6)),
        last_seen_at: Set(chrono::Utc::now() - chrono::Duration::days(6)),
        user_agent: NotSet,
        client_address: NotSet,
    }
    .insert(&app.db)
    .await
    .expect("a stale session");
    let me: Value = app
        .client
        .post(app.url("/graphql"))
        .header("cookie", format!("askloop_session={stale}"))
        .json(&json!({"query": VIEWER}))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON");
    assert!(me["data"]["viewer"].is_null(), "{me}");
}

#[tokio::test]
async fn a_cookie_form_post_goes_through_from_our_origin_only() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let question = app.ask("games", "form-origin").await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client");
    let post = |origin: Option<String>| {
        let mut request = client
            .post(app.url(&format!("/dashboard/questions/{question}/answer")))
            .header("cookie", format!("askloop_session={}", ana.token))
            .form(&[
                ("kind", "insufficient_context"),
                ("next", "/dashboard/niches"),
            ]);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    let cross = post(Some("http://evil.example".into()))
        .await
        .expect("sent");
    let location = cross.headers()["location"]
        .to_str()
        .expect("text")
        .to_owned();
    assert!(location.contains("error=cross-site"), "{location}");
    let own = post(Some(app.base.clone())).await.expect("sent");
    let location = own.headers()["location"].to_str().expect("text").to_owned();
    assert!(location.contains("notice=Noted"), "{location}");
}
