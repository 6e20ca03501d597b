//! What one GraphQL query may ask for (docs/contract.md#graphql): nested pages multiply into a
//! node count with its own limit, standard tooling can introspect askloop while introspection
//! keeps bounds of its own, deep and fragment-bombed queries are refused at once, and the
//! dashboard's own operations fit. Every refusal carries its code and no data.

use std::time::{Duration, Instant};

use askloop_tests::people::{operator, person};
use askloop_tests::{Backend, TestApp, error_code, on_both_backends};
use serde_json::{Value, json};

/// The standard introspection query, as graphql-js's `getIntrospectionQuery` writes it.
const INTROSPECTION: &str = include_str!("../fixtures/introspection.graphql");

async fn sqlite_app() -> TestApp {
    TestApp::spawn(Backend::Sqlite)
        .await
        .expect("SQLite is always available")
}

/// `{ niche { questions(first: N) { nodes { … } } } }`, `levels` pages deep, each page's
/// questions reaching the next page through their niche.
fn nested_pages(levels: usize, first: u32) -> String {
    let mut query = String::from("id");
    for _ in 0..levels {
        query = format!("niche {{ questions(first: {first}) {{ nodes {{ {query} }} }} }}");
    }
    // The outermost level starts from the niche by slug rather than a question's.
    let inner = query
        .strip_prefix("niche {")
        .expect("starts at a niche")
        .to_owned();
    format!("{{ niche(slug: \"games\") {{{inner} }}")
}

fn assert_refused(body: &Value, code: &str) {
    assert_eq!(error_code(body), Some(code), "{body}");
    assert!(
        body["data"].is_null(),
        "a refused query returns no data: {body}"
    );
    assert!(
        body["errors"][0]["extensions"]["limit"].is_u64(),
        "the refusal names its limit: {body}"
    );
}

#[tokio::test]
async fn the_standard_introspection_query_is_answered() {
    let app = sqlite_app().await;
    let response = app
        .client
        .post(app.url("/graphql"))
        .json(&json!({ "query": INTROSPECTION, "operationName": "IntrospectionQuery" }))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("JSON");
    assert!(body.get("errors").is_none(), "{body}");
    let schema = &body["data"]["__schema"];
    assert_eq!(schema["queryType"]["name"], "Query", "{body}");
    let types = schema["types"].as_array().expect("types");
    assert!(!types.is_empty());
    // The deep TypeRef nesting reaches real wrapped types: `niches: [Niche!]!`.
    let query = types
        .iter()
        .find(|t| t["name"] == "Query")
        .expect("the Query type");
    let niches = query["fields"]
        .as_array()
        .and_then(|fields| fields.iter().find(|f| f["name"] == "niches"))
        .expect("Query.niches");
    assert_eq!(niches["type"]["kind"], "NON_NULL");
    assert_eq!(niches["type"]["ofType"]["kind"], "LIST");
    assert_eq!(
        niches["type"]["ofType"]["ofType"]["ofType"]["name"],
        "Niche"
    );
}

async fn three_nested_pages_of_a_hundred_are_refused_before_they_run(app: TestApp) {
    open_games_with_questions(&app, 3).await;
    let ana = operator(&app.db, "games", "ana").await;
    let started = Instant::now();
    let body = app
        .graphql(Some(&ana.token), &nested_pages(3, 100), json!({}))
        .await;
    assert_refused(&body, "QUERY_TOO_COMPLEX");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "refused at once"
    );
    // Two levels could still return a hundred pages of a hundred.
    let body = app
        .graphql(Some(&ana.token), &nested_pages(2, 100), json!({}))
        .await;
    assert_refused(&body, "QUERY_TOO_COMPLEX");
    // The page size counts through variables too.
    let body = app
        .graphql(
            Some(&ana.token),
            "query ($n: Int) { niche(slug: \"games\") { questions(first: $n) { nodes { niche { \
             questions(first: $n) { nodes { id } } } } } } }",
            json!({ "n": 100 }),
        )
        .await;
    assert_refused(&body, "QUERY_TOO_COMPLEX");
}

on_both_backends!(three_nested_pages_of_a_hundred_are_refused_before_they_run);

async fn one_page_of_a_hundred_is_answered(app: TestApp) {
    open_games_with_questions(&app, 3).await;
    let ana = operator(&app.db, "games", "ana").await;
    let body = app
        .graphql(
            Some(&ana.token),
            "{ niche(slug: \"games\") { questions(first: 100) { nodes { id title niche { slug } \
             answers { kind } timeline { action } } } } }",
            json!({}),
        )
        .await;
    assert!(body.get("errors").is_none(), "{body}");
    let nodes = body["data"]["niche"]["questions"]["nodes"]
        .as_array()
        .expect("nodes");
    assert_eq!(nodes.len(), 3, "{body}");
    // Small pages may still nest.
    let body = app
        .graphql(Some(&ana.token), &nested_pages(3, 5), json!({}))
        .await;
    assert!(body.get("errors").is_none(), "{body}");
}

on_both_backends!(one_page_of_a_hundred_is_answered);

async fn open_games_with_questions(app: &TestApp, count: usize) {
    askloop_tests::fixtures::open_niche(&app.db, "games").await;
    for n in 0..count {
        app.ask("games", &format!("q-{n}")).await;
    }
}

#[tokio::test]
async fn a_page_size_over_the_largest_is_refused_as_input() {
    let app = sqlite_app().await;
    open_games_with_questions(&app, 1).await;
    let ana = operator(&app.db, "games", "ana").await;
    let body = app
        .graphql(
            Some(&ana.token),
            "{ niche(slug: \"games\") { questions(first: 101) { nodes { id } } } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&body), Some("BAD_USER_INPUT"), "{body}");
}

#[tokio::test]
async fn the_node_limit_follows_the_configuration() {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| config.graphql_max_nodes = 50)
        .await
        .expect("SQLite is always available");
    open_games_with_questions(&app, 1).await;
    let ana = operator(&app.db, "games", "ana").await;
    let page = |first: u32| {
        format!("{{ niche(slug: \"games\") {{ questions(first: {first}) {{ nodes {{ id }} }} }} }}")
    };
    // 1 (niche) + 1 + 10 × (nodes 1 + id 1) = 22.
    let body = app.graphql(Some(&ana.token), &page(10), json!({})).await;
    assert!(body.get("errors").is_none(), "{body}");
    // 1 + 1 + 30 × 2 = 62.
    let body = app.graphql(Some(&ana.token), &page(30), json!({})).await;
    assert_refused(&body, "QUERY_TOO_COMPLEX");
    assert_eq!(body["errors"][0]["extensions"]["limit"], 50, "{body}");
}

#[tokio::test]
async fn a_query_nested_too_deep_outside_introspection_is_still_refused() {
    let app = sqlite_app().await;
    // niche > questions > nodes, four times over, and id: 13 levels against 12.
    let body = app.graphql(None, &nested_pages(4, 1), json!({})).await;
    assert_refused(&body, "QUERY_TOO_DEEP");
    // Introspection beside a deep query does not lift the limit.
    let body = app
        .graphql(
            None,
            &nested_pages(4, 1).replacen('{', "{ __schema { queryType { name } } ", 1),
            json!({}),
        )
        .await;
    assert_refused(&body, "QUERY_TOO_DEEP");
}

#[tokio::test]
async fn introspection_keeps_bounds_of_its_own() {
    let app = sqlite_app().await;
    // Two levels past the standard query's nine ofType.
    let deeper = format!(
        "{{ __schema {{ types {{ fields {{ args {{ type {{ {}name{} }} }} }} }} }} }}",
        "ofType { ".repeat(11),
        " }".repeat(11)
    );
    let body = app.graphql(None, &deeper, json!({})).await;
    assert_refused(&body, "QUERY_TOO_DEEP");
    // A fourth nested list multiplies the answer by the schema's size once more.
    let wide = "{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }";
    let body = app.graphql(None, wide, json!({})).await;
    assert_refused(&body, "QUERY_TOO_DEEP");
    // A single type is fine.
    let body = app
        .graphql(
            None,
            "{ __type(name: \"Niche\") { name fields { name type { kind ofType { name } } } } }",
            json!({}),
        )
        .await;
    assert_eq!(body["data"]["__type"]["name"], "Niche", "{body}");
}

#[tokio::test]
async fn a_fragment_bomb_is_refused_at_once() {
    let app = sqlite_app().await;
    // Each fragment spreads the one before twice: 2^30 selections from 31 short lines.
    let mut query = String::from("query { ...F30 } fragment F0 on Query { tiers { name } }");
    for i in 1..=30 {
        query.push_str(&format!(
            " fragment F{i} on Query {{ ...F{p} ...F{p} }}",
            p = i - 1
        ));
    }
    let started = Instant::now();
    let body = app.graphql(None, &query, json!({})).await;
    assert_refused(&body, "QUERY_TOO_COMPLEX");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    // So is a long chain of fragments, each spreading the next (measured without recursing
    // through all of it).
    let mut chain = String::from("query { ...C0 }");
    for i in 0..20_000 {
        chain.push_str(&format!(" fragment C{i} on Query {{ ...C{} }}", i + 1));
    }
    chain.push_str(" fragment C20000 on Query { tiers { name } }");
    let body = app.graphql(None, &chain, json!({})).await;
    assert_refused(&body, "QUERY_TOO_DEEP");
    // The server is still answering.
    let body = app.graphql(None, "{ tiers { name } }", json!({})).await;
    assert!(body.get("errors").is_none(), "{body}");
}

/// Every query the dashboard sends, from its `.graphql` files, fits every limit (as an admin,
/// who may read them all, on a database with one waiting question and one knowledge entry), with
/// the largest variables the dashboard passes (a re-read of the queue asks for up to 100).
#[tokio::test]
async fn every_dashboard_query_fits_the_limits() {
    let app = sqlite_app().await;
    askloop_tests::fixtures::open_niche(&app.db, "games").await;
    let root = person(&app.db, "root", true).await;
    let question = app.ask("games", "q-1").await;
    let hook = app
        .graphql(
            Some(&root.token),
            "mutation { registerOperatorWebhook(nicheSlug: \"games\", url: \"https://example.com/hook\") { webhook { id } } }",
            json!({}),
        )
        .await;
    let webhook_id = hook["data"]["registerOperatorWebhook"]["webhook"]["id"].clone();
    assert!(webhook_id.is_string(), "{hook}");
    // A second question, answered and verified, so the knowledge has an entry to read.
    let ana = operator(&app.db, "games", "ana").await;
    let known = app.ask("games", "q-2").await;
    let answered = app
        .answer(
            &ana.token,
            askloop_tests::answers::early_access(known, Some("Count the early-access date.")),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    app.decide_newest_contribution(&root.token, "verifyContribution", None)
        .await;
    let knowledge = app
        .graphql(
            Some(&root.token),
            "{ knowledge(nicheSlug: \"games\") { nodes { id } } }",
            json!({}),
        )
        .await;
    let entry_id = knowledge["data"]["knowledge"]["nodes"][0]["id"].clone();
    assert!(entry_id.is_string(), "{knowledge}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../web/graphql");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("web/graphql") {
        let path = entry.expect("an entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("graphql") {
            continue;
        }
        let document = std::fs::read_to_string(&path).expect("readable");
        let queries = document
            .lines()
            .filter_map(|line| line.strip_prefix("query "))
            .filter_map(|rest| rest.split([' ', '(', '{']).next())
            .map(str::to_owned);
        for name in queries {
            let response = app
                .client
                .post(app.url("/graphql"))
                .bearer_auth(&root.token)
                .json(&json!({
                    "query": document,
                    "operationName": name,
                    "variables": {
                        "slug": "games",
                        "first": 100,
                        // Each list's cursor as askloop gives it out.
                        "after": match name.as_str() {
                            "QueueMore" => "tn0.0",
                            "MyActivity" => "a0",
                            _ => "q0.0",
                        },
                        "sort": "NEWEST",
                        "id": question.to_string(),
                        "webhookId": webhook_id,
                        "entryId": entry_id,
                    },
                }))
                .send()
                .await
                .expect("sent");
            let body: Value = response.json().await.expect("JSON");
            assert!(
                body.get("errors").is_none(),
                "{name} in {}: {body}",
                path.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} dashboard queries found");
}

/// Found while probing what the API fuzzer does not send (it sends queries and mutations only): a
/// subscription sent over `POST /graphql` came back `INTERNAL`, logged as a fault inside askloop.
#[tokio::test]
async fn a_subscription_sent_over_http_is_pointed_to_the_websocket() {
    let app = sqlite_app().await;
    askloop_tests::fixtures::open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let body = app
        .graphql(
            Some(&ana.token),
            "subscription { questionQueue(nicheSlug: \"games\") { change } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&body), Some("BAD_REQUEST"), "{body}");
    assert_eq!(
        body["errors"][0]["extensions"]["reason"], "SUBSCRIPTION_NEEDS_WEBSOCKET",
        "{body}"
    );
    assert!(
        body["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("/graphql/ws")),
        "{body}"
    );
}

/// A refused credential is about the request, not a place in the query: it names no location
/// (it used to name line 0, column 0, which no query has).
#[tokio::test]
async fn a_refused_token_names_no_place_in_the_query() {
    let app = sqlite_app().await;
    let body = app
        .graphql(
            Some("al_key_not_a_real_one"),
            "{ tiers { name } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&body), Some("UNAUTHENTICATED"), "{body}");
    assert!(body["errors"][0].get("locations").is_none(), "{body}");
}

/// A document of several named operations runs the one named, measured and validated alone:
/// another operation's `$first` does not break it, and the one run is still measured (a named
/// operation over the limits is refused even when a small one sits beside it).
#[tokio::test]
async fn only_the_named_operation_of_a_document_is_measured_and_run() {
    let app = sqlite_app().await;
    open_games_with_questions(&app, 2).await;
    let ana = operator(&app.db, "games", "ana").await;
    let document = format!(
        "query Page($first: Int!) {{ niche(slug: \"games\") {{ questions(first: $first) {{ nodes {{ id }} }} }} }}\n\
         query Niches {{ niches {{ slug }} }}\n\
         query Heavy {}",
        nested_pages(3, 100)
    );
    let post = |operation: &'static str, variables: serde_json::Value| {
        app.client
            .post(app.url("/graphql"))
            .bearer_auth(&ana.token)
            .json(&json!({"query": document, "operationName": operation, "variables": variables}))
            .send()
    };
    let niches: serde_json::Value = post("Niches", json!({}))
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON");
    assert!(niches.get("errors").is_none(), "{niches}");
    assert_eq!(niches["data"]["niches"][0]["slug"], "games");
    let page: serde_json::Value = post("Page", json!({"first": 1}))
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON");
    assert_eq!(
        page["data"]["niche"]["questions"]["nodes"]
            .as_array()
            .map(Vec::len),
        Some(1),
        "{page}"
    );
    let heavy: serde_json::Value = post("Heavy", json!({}))
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON");
    assert_eq!(error_code(&heavy), Some("QUERY_TOO_COMPLEX"), "{heavy}");
    let unknown: serde_json::Value = post("Missing", json!({}))
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON");
    // A name the document lacks cuts nothing: the whole document is measured (and refused
    // here, for its heavy operation), and nothing runs.
    assert!(unknown["errors"][0]["message"].is_string(), "{unknown}");
    assert!(unknown["data"].is_null(), "{unknown}");
}
