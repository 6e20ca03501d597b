//! Niche knowledge (docs/contract.md#knowledge), on both stores: a verified answer is a current
//! entry, searchable the moment it is verified; a reversed one is retracted (gone from search,
//! still there by id with its status); the reopened question's next verified answer is the next
//! version, naming the one it replaces. The agent's context is never searched. Odd search text
//! answers with results or a 400, never a 500, and an agent searches only the niches it may ask
//! in.

use askloop_tests::answers::answer_input;
use askloop_tests::fixtures::{open_niche, question_body};
use askloop_tests::people::{operator, person};
use askloop_tests::{TestApp, error_code, on_both_backends};
use entity::agents::WebhookScheme;
use serde_json::{Value, json};

use crate::agents::{post_as, register};

const SEARCH_PATH: &str = "/api/v1/internal/knowledge/search";

/// A word only the question's context holds.
const CONTEXT_ONLY: &str = "quixotically";

const KNOWLEDGE: &str = r#"query($slug: String!, $search: String, $status: KnowledgeStatus) {
  knowledge(nicheSlug: $slug, search: $search, status: $status, first: 10) {
    edges { node { id version replaces status title optionLabel answer answeredBy verifiedBy verification endedReason score } }
    pageInfo { hasNextPage }
  }
}"#;

const ENTRY: &str = r#"query($id: ID!) {
  knowledgeEntry(id: $id) {
    entry { id status version endedReason }
    versions { id version status replaces }
  }
}"#;

/// Ask `external_id` in `slug` with a context holding [`CONTEXT_ONLY`]; the question's id.
async fn ask(app: &TestApp, slug: &str, external_id: &str, title: &str) -> i64 {
    let mut body = question_body(slug, external_id);
    body["payload"]["title"] = json!(title);
    body["payload"]["context"] = json!(format!("The agent read this {CONTEXT_ONLY} somewhere."));
    let response = app
        .post_signed("/api/v1/internal/expert-questions", &body.to_string())
        .await;
    assert!(response.status().is_success(), "{}", response.status());
    let body: Value = response.json().await.expect("JSON");
    body["question"]["id"].as_i64().expect("an id")
}

/// The entries `token` finds in `slug` for `search` of `status` (current when `None`).
async fn found(
    app: &TestApp,
    token: &str,
    slug: &str,
    search: Option<&str>,
    status: Option<&str>,
) -> Vec<Value> {
    let body = app
        .graphql(
            Some(token),
            KNOWLEDGE,
            json!({"slug": slug, "search": search, "status": status}),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    body["data"]["knowledge"]["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|edge| edge["node"].clone())
        .collect()
}

on_both_backends!(
    a_verified_answer_is_knowledge_at_once_a_reversal_retracts_it_and_the_next_answer_is_the_next_version,
    odd_searches_answer_or_refuse_and_agents_search_only_their_niches,
);

async fn a_verified_answer_is_knowledge_at_once_a_reversal_retracts_it_and_the_next_answer_is_the_next_version(
    app: TestApp,
) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bob = operator(&app.db, "games", "bob").await;
    let root = person(&app.db, "root", true).await;
    let question = ask(&app, "games", "q-1", "Which release date counts?").await;

    let answered = app
        .answer(
            &ana.token,
            answer_input(
                question,
                "ANSWERED",
                Some("ea"),
                Some("Count the early-access date: storefronts show it first."),
            ),
        )
        .await;
    assert_eq!(
        answered["data"]["answerQuestion"]["contributionStatus"], "PENDING",
        "{answered}"
    );
    // Pending review, it is nobody's knowledge yet.
    assert!(
        found(&app, &ana.token, "games", Some("storefronts"), None)
            .await
            .is_empty()
    );

    app.decide_newest_contribution(&root.token, "verifyContribution", None)
        .await;
    let hits = found(&app, &bob.token, "games", Some("storefronts"), None).await;
    assert_eq!(hits.len(), 1, "{hits:?}");
    let first = &hits[0];
    assert_eq!(first["status"], "CURRENT");
    assert_eq!(first["version"], 1);
    assert!(first["replaces"].is_null());
    assert_eq!(first["title"], "Which release date counts?");
    assert_eq!(first["optionLabel"], "Early access");
    assert_eq!(first["answeredBy"], "ana");
    assert_eq!(first["verifiedBy"], "root");
    assert_eq!(first["verification"], "REVIEW");
    assert!(first["score"].as_f64().expect("a score") > 0.0, "{first}");
    // The stemmed form and the option's label find it too; the context never does.
    assert_eq!(
        found(&app, &bob.token, "games", Some("storefront"), None)
            .await
            .len(),
        1
    );
    assert_eq!(
        found(&app, &bob.token, "games", Some("\"early access\""), None)
            .await
            .len(),
        1
    );
    assert!(
        found(&app, &bob.token, "games", Some("storefronts -early"), None)
            .await
            .is_empty()
    );
    assert!(
        found(&app, &bob.token, "games", Some(CONTEXT_ONLY), None)
            .await
            .is_empty()
    );
    // Without a search, the niche's current entries are listed.
    assert_eq!(found(&app, &bob.token, "games", None, None).await.len(), 1);
    let first_id = first["id"].as_str().expect("an id").to_owned();

    // Reversed: retracted, out of every current search, still readable by id with its reason.
    app.decide_newest_contribution(
        &root.token,
        "reverseContribution",
        Some("the 1.0 date counts"),
    )
    .await;
    assert!(
        found(&app, &bob.token, "games", Some("storefronts"), None)
            .await
            .is_empty()
    );
    let retracted = found(
        &app,
        &bob.token,
        "games",
        Some("storefronts"),
        Some("RETRACTED"),
    )
    .await;
    assert_eq!(retracted.len(), 1, "{retracted:?}");
    assert_eq!(retracted[0]["endedReason"], "the 1.0 date counts");
    let by_id = app
        .graphql(Some(&bob.token), ENTRY, json!({"id": first_id}))
        .await;
    assert_eq!(
        by_id["data"]["knowledgeEntry"]["entry"]["status"], "RETRACTED",
        "{by_id}"
    );

    // The reopened question's next verified answer is version 2, replacing the retracted one.
    let again = app
        .answer(
            &bob.token,
            answer_input(
                question,
                "ANSWERED",
                Some("full"),
                Some("The 1.0 launch is the date."),
            ),
        )
        .await;
    assert!(again["errors"].is_null(), "{again}");
    app.decide_newest_contribution(&root.token, "verifyContribution", None)
        .await;
    let now = found(&app, &ana.token, "games", Some("launch"), None).await;
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now[0]["version"], 2);
    assert_eq!(now[0]["replaces"], first_id.as_str());
    assert_eq!(now[0]["answeredBy"], "bob");
    let second_id = now[0]["id"].as_str().expect("an id").to_owned();
    let lines = app
        .graphql(Some(&ana.token), ENTRY, json!({"id": second_id}))
        .await;
    let versions = lines["data"]["knowledgeEntry"]["versions"]
        .as_array()
        .unwrap_or_else(|| panic!("versions: {lines}"));
    let statuses: Vec<(i64, &str)> = versions
        .iter()
        .map(|v| {
            (
                v["version"].as_i64().unwrap_or(0),
                v["status"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(statuses, [(1, "RETRACTED"), (2, "CURRENT")]);

    // Someone outside the niche reads none of it.
    let eve = person(&app.db, "eve", false).await;
    let refused = app
        .graphql(Some(&eve.token), KNOWLEDGE, json!({"slug": "games"}))
        .await;
    assert_eq!(error_code(&refused), Some("FORBIDDEN"), "{refused}");
    let hidden = app
        .graphql(Some(&eve.token), ENTRY, json!({"id": second_id}))
        .await;
    assert_eq!(error_code(&hidden), Some("NOT_FOUND"), "{hidden}");
}

async fn odd_searches_answer_or_refuse_and_agents_search_only_their_niches(app: TestApp) {
    open_niche(&app.db, "games").await;
    open_niche(&app.db, "roofing").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    let roofer = operator(&app.db, "roofing", "rita").await;
    let question = ask(&app, "games", "q-1", "Which release date counts?").await;
    let answered = app
        .answer(
            &ana.token,
            answer_input(
                question,
                "ANSWERED",
                Some("ea"),
                Some("Storefronts show early access."),
            ),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    app.decide_newest_contribution(&root.token, "verifyContribution", None)
        .await;
    let roof = ask(&app, "roofing", "r-1", "Flashing for a chimney?").await;
    let answered = app
        .answer(
            &roofer.token,
            answer_input(
                roof,
                "ANSWERED",
                Some("ea"),
                Some("Step flashing, storefronts aside."),
            ),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    app.decide_newest_contribution(&root.token, "verifyContribution", None)
        .await;

    let long = "storefronts ".repeat(500);
    for odd in [
        "\"",
        "-",
        "(",
        ")",
        "*",
        "NEAR(",
        "a:b",
        "'",
        "\\",
        "or",
        "-storefronts",
        long.as_str(),
    ] {
        let body = app
            .graphql(
                Some(&ana.token),
                KNOWLEDGE,
                json!({"slug": "games", "search": odd}),
            )
            .await;
        let code = error_code(&body);
        assert!(
            code.is_none() || code == Some("BAD_USER_INPUT"),
            "{odd:?}: {body}"
        );
    }
    // A NUL is refused at the edge; 5,000 characters is over the limit.
    for refused in ["store\0fronts", long.as_str()] {
        let body = app
            .graphql(
                Some(&ana.token),
                KNOWLEDGE,
                json!({"slug": "games", "search": refused}),
            )
            .await;
        assert_eq!(error_code(&body), Some("BAD_USER_INPUT"), "{body}");
    }

    // A registered agent of games only: it finds games' entry by any word, never roofing's.
    let secret = register(&app, "scout", &["games"], None, WebhookScheme::Chovy).await;
    let search = |niche: &str, query: &str| json!({"nicheSlug": niche, "query": query});
    let games = post_as(
        &app,
        "scout",
        &secret,
        SEARCH_PATH,
        &search("games", "which storefronts chimney"),
    )
    .await;
    assert_eq!(games.status(), 200);
    let games: Value = games.json().await.expect("JSON");
    let results = games["results"].as_array().expect("results");
    assert_eq!(results.len(), 1, "{games}");
    assert_eq!(results[0]["title"], "Which release date counts?");
    assert_eq!(results[0]["version"], 1);
    assert_eq!(results[0]["optionLabel"], "Early access");
    assert!(results[0]["entryId"].as_i64().is_some(), "{games}");
    let context = post_as(
        &app,
        "scout",
        &secret,
        SEARCH_PATH,
        &search("games", CONTEXT_ONLY),
    )
    .await;
    let context: Value = context.json().await.expect("JSON");
    assert_eq!(context["results"], json!([]), "{context}");
    let other = post_as(
        &app,
        "scout",
        &secret,
        SEARCH_PATH,
        &search("roofing", "chimney"),
    )
    .await;
    assert_eq!(other.status(), 403);
    let other: Value = other.json().await.expect("JSON");
    assert_eq!(other["code"], "FORBIDDEN", "{other}");
    for (body, status) in [
        (json!({"nicheSlug": "games"}), 400),
        (
            json!({"nicheSlug": "games", "query": "x", "first": 21}),
            400,
        ),
        (
            json!({"nicheSlug": "games", "query": "x".repeat(1001)}),
            400,
        ),
        (json!({"nicheSlug": "nowhere", "query": "x"}), 404),
        (json!({"nicheSlug": "games", "query": "\" ( - *"}), 200),
    ] {
        let response = post_as(&app, "scout", &secret, SEARCH_PATH, &body).await;
        assert_eq!(response.status().as_u16(), status, "{body}");
    }
}
