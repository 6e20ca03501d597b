//! Reading the queue: order, pagination, filters, the REST listing and form redirects.

use askloop_tests::fixtures::{open_niche, question_body};
use askloop_tests::people::{Person, operator};
use askloop_tests::{TestApp, error_code, on_both_backends};
use serde_json::{Value, json};

const PAGE: &str = "query($after: String, $first: Int, $status: QueueFilter) { niche(slug: \"games\") { questions(first: $first, after: $after, status: $status) { edges { cursor node { externalId urgency } } pageInfo { hasNextPage endCursor } } } }";

async fn ask_with_urgency(app: &TestApp, external_id: &str, urgency: &str) {
    let mut body = question_body("games", external_id);
    body["payload"]["urgency"] = json!(urgency);
    let response = app
        .post_signed("/api/v1/internal/expert-questions", &body.to_string())
        .await;
    assert_eq!(response.status(), 201);
}

fn ids(body: &Value) -> Vec<String> {
    body["data"]["niche"]["questions"]["edges"]
        .as_array()
        .map(|edges| {
            edges
                .iter()
                .map(|e| {
                    e["node"]["externalId"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn the_waiting_queue_is_most_urgent_first_then_oldest_and_pages_by_cursor(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    for (id, urgency) in [
        ("n1", "normal"),
        ("l1", "low"),
        ("h1", "high"),
        ("n2", "normal"),
        ("h2", "high"),
    ] {
        ask_with_urgency(&app, id, urgency).await;
    }
    let first = app
        .graphql(Some(&ana.token), PAGE, json!({"first": 3}))
        .await;
    assert_eq!(ids(&first), ["h1", "h2", "n1"], "{first}");
    let info = &first["data"]["niche"]["questions"]["pageInfo"];
    assert_eq!(info["hasNextPage"], true);
    let rest = app
        .graphql(
            Some(&ana.token),
            PAGE,
            json!({"first": 3, "after": info["endCursor"]}),
        )
        .await;
    assert_eq!(ids(&rest), ["n2", "l1"], "{rest}");
    assert_eq!(
        rest["data"]["niche"]["questions"]["pageInfo"]["hasNextPage"],
        false
    );

    let settled = app
        .graphql(Some(&ana.token), PAGE, json!({"status": "ANSWERED"}))
        .await;
    assert_eq!(ids(&settled), Vec::<String>::new(), "{settled}");
}

async fn page_sizes_and_cursors_are_checked(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    for (vars, code) in [
        (json!({"first": 101}), "BAD_USER_INPUT"),
        (json!({"first": 0}), "BAD_USER_INPUT"),
        (json!({"after": "not-a-cursor"}), "BAD_USER_INPUT"),
    ] {
        let body = app.graphql(Some(&ana.token), PAGE, vars.clone()).await;
        assert_eq!(error_code(&body), Some(code), "{vars} → {body}");
    }
    let list = app
        .client
        .get(app.url("/api/v1/niches/games/questions?status=sideways"))
        .bearer_auth(&ana.token)
        .send()
        .await
        .expect("sent");
    assert_eq!(list.status(), 400);
}

/// Three questions waiting in `games` (and a niche `roofing` beside it), an operator of `games`,
/// and the first REST page of two.
async fn three_waiting_and_a_first_page(app: &TestApp) -> (Person, Value) {
    open_niche(&app.db, "games").await;
    open_niche(&app.db, "roofing").await;
    let ana = operator(&app.db, "games", "ana").await;
    for i in 0..3 {
        ask_with_urgency(app, &format!("q{i}"), "normal").await;
    }
    let page: Value = app
        .client
        .get(app.url("/api/v1/niches/games/questions?first=2"))
        .bearer_auth(&ana.token)
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON");
    (ana, page)
}

/// POST `body` to the REST answer route of question `id` in `slug` as `ana`.
async fn answer_over_rest(
    app: &TestApp,
    ana: &Person,
    slug: &str,
    id: i64,
    body: Value,
) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/api/v1/niches/{slug}/questions/{id}/answer")))
        .bearer_auth(&ana.token)
        .json(&body)
        .send()
        .await
        .expect("sent")
}

/// The first question on a REST page.
fn first_id(page: &Value) -> i64 {
    page["questions"][0]["id"].as_i64().expect("an id")
}

async fn the_rest_listing_pages_by_cursor(app: TestApp) {
    let (ana, page) = three_waiting_and_a_first_page(&app).await;
    assert_eq!(
        page["questions"].as_array().map(Vec::len),
        Some(2),
        "{page}"
    );
    let next = page["nextCursor"].as_str().expect("a cursor");
    let rest: Value = app
        .client
        .get(app.url(&format!(
            "/api/v1/niches/games/questions?first=2&after={next}"
        )))
        .bearer_auth(&ana.token)
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON");
    assert_eq!(rest["questions"][0]["externalId"], "q2", "{rest}");
    assert!(rest["nextCursor"].is_null());
}

async fn the_rest_answer_route_does_not_find_a_question_of_another_niche(app: TestApp) {
    let (ana, page) = three_waiting_and_a_first_page(&app).await;
    let wrong_niche = answer_over_rest(
        &app,
        &ana,
        "roofing",
        first_id(&page),
        json!({"kind": "answered", "optionId": "ea"}),
    )
    .await;
    assert_eq!(wrong_niche.status(), 404);
}

async fn the_rest_answer_route_refuses_an_unknown_kind(app: TestApp) {
    let (ana, page) = three_waiting_and_a_first_page(&app).await;
    let unknown_kind =
        answer_over_rest(&app, &ana, "games", first_id(&page), json!({"kind": "yes"})).await;
    assert_eq!(unknown_kind.status(), 400);
}

async fn the_rest_answer_route_answers_and_says_what_happens_next(app: TestApp) {
    let (ana, page) = three_waiting_and_a_first_page(&app).await;
    let answered: Value = answer_over_rest(
        &app,
        &ana,
        "games",
        first_id(&page),
        json!({"kind": "answered", "optionId": "ea", "body": "EA is the release"}),
    )
    .await
    .json()
    .await
    .expect("JSON");
    assert_eq!(answered["question"]["status"], "answered", "{answered}");
    assert_eq!(
        answered["notice"],
        "Thanks. It goes to review before it counts."
    );
}

/// A client that shows redirects instead of following them.
fn not_following_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client")
}

async fn a_form_post_never_redirects_off_the_site(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let id = app.ask("games", "form").await;
    let response = not_following_redirects()
        .post(app.url(&format!("/dashboard/questions/{id}/answer")))
        .bearer_auth(&ana.token)
        .form(&[
            ("kind", "answered"),
            ("body", ""),
            ("next", "//evil.example/x"),
        ])
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 303);
    let location = response.headers()["location"]
        .to_str()
        .expect("text")
        .to_owned();
    assert!(
        location.starts_with("/dashboard/niches?error="),
        "{location}"
    );
    assert!(
        location.contains("an+answer+needs+an+option+or+some+words"),
        "{location}"
    );
}

async fn a_form_post_for_a_malformed_id_says_there_is_no_such_question(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let not_an_id = not_following_redirects()
        .post(app.url("/dashboard/questions/abc/dismiss"))
        .bearer_auth(&ana.token)
        .form(&[("next", "/dashboard/niches")])
        .send()
        .await
        .expect("sent");
    let location = not_an_id.headers()["location"]
        .to_str()
        .expect("text")
        .to_owned();
    assert_eq!(location, "/dashboard/niches?error=no+such+question");
}

on_both_backends!(
    the_waiting_queue_is_most_urgent_first_then_oldest_and_pages_by_cursor,
    page_sizes_and_cursors_are_checked,
    the_rest_listing_pages_by_cursor,
    the_rest_answer_route_does_not_find_a_question_of_another_niche,
    the_rest_answer_route_refuses_an_unknown_kind,
    the_rest_answer_route_answers_and_says_what_happens_next,
    a_form_post_never_redirects_off_the_site,
    a_form_post_for_a_malformed_id_says_there_is_no_such_question,
);
