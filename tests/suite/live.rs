//! Live queue over real websockets: ADDED on intake, REMOVED on answer, the same permission rules
//! as queries, members cut off when suspended, the protocol's timeouts and refusals, and changes
//! crossing from one askloop instance to another through PostgreSQL.

use std::time::Duration;

use askloop_tests::fixtures::open_niche;
use askloop_tests::people::{operator, person};
use askloop_tests::socket::{GqlSocket, Received};
use askloop_tests::{Backend, TestApp, on_both_backends};
use serde_json::json;

const QUEUE: &str = "subscription($slug: String!) { questionQueue(nicheSlug: $slug) { change question { id title status } } }";
const AWAITING: &str = "subscription { awaitingMe { change question { id title } } }";
const ANSWER: &str = "mutation($id: ID!, $kind: AnswerKind!) { answerQuestion(input: {questionId: $id, kind: $kind, optionId: \"ea\"}) { notice } }";

async fn a_subscriber_sees_a_question_arrive_and_leave(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bo = operator(&app.db, "games", "bo").await;
    let mut socket = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    socket.subscribe("q", QUEUE, json!({"slug": "games"})).await;
    // Let the subscription register before the intake.
    tokio::time::sleep(Duration::from_millis(200)).await;

    let id = app.ask("games", "live-1").await;
    let added = socket.next_data("q").await;
    assert_eq!(added["data"]["questionQueue"]["change"], "ADDED", "{added}");
    assert_eq!(
        added["data"]["questionQueue"]["question"]["id"],
        id.to_string()
    );
    assert_eq!(
        added["data"]["questionQueue"]["question"]["title"],
        "Which date?"
    );

    let answered = app
        .graphql(
            Some(&bo.token),
            ANSWER,
            json!({"id": id.to_string(), "kind": "ANSWERED"}),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    let removed = socket.next_data("q").await;
    assert_eq!(
        removed["data"]["questionQueue"]["change"], "REMOVED",
        "{removed}"
    );
    assert_eq!(
        removed["data"]["questionQueue"]["question"]["status"],
        "ANSWERED"
    );
}

async fn awaiting_me_drops_what_i_declined(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let mut socket = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    socket.subscribe("a", AWAITING, json!({})).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let id = app.ask("games", "mine").await;
    let added = socket.next_data("a").await;
    assert_eq!(added["data"]["awaitingMe"]["change"], "ADDED", "{added}");
    let declined = app
        .graphql(
            Some(&ana.token),
            ANSWER,
            json!({"id": id.to_string(), "kind": "INSUFFICIENT_CONTEXT"}),
        )
        .await;
    assert!(declined["errors"].is_null(), "{declined}");
    let removed = socket.next_data("a").await;
    assert_eq!(
        removed["data"]["awaitingMe"]["change"], "REMOVED",
        "{removed}"
    );
}

async fn a_non_member_cannot_subscribe(app: TestApp) {
    open_niche(&app.db, "games").await;
    let stranger = person(&app.db, "stranger", false).await;
    let mut socket = GqlSocket::connect(&app.base, Some(&stranger.token)).await;
    socket.subscribe("q", QUEUE, json!({"slug": "games"})).await;
    let refused = socket.next_data("q").await;
    assert_eq!(
        refused["errors"][0]["extensions"]["code"], "FORBIDDEN",
        "{refused}"
    );
    assert!(refused["data"].is_null());
    match socket.receive(Duration::from_secs(5)).await {
        Received::Json(message) => assert_eq!(message["type"], "complete", "{message}"),
        other => panic!("expected complete, got {other:?}"),
    }
    let mut anonymous = GqlSocket::connect(&app.base, None).await;
    anonymous
        .subscribe("q", QUEUE, json!({"slug": "games"}))
        .await;
    let refused = anonymous.next_data("q").await;
    assert_eq!(
        refused["errors"][0]["extensions"]["code"], "UNAUTHENTICATED",
        "{refused}"
    );
    match anonymous.receive(Duration::from_secs(5)).await {
        Received::Json(message) => assert_eq!(message["type"], "complete", "{message}"),
        other => panic!("expected complete, got {other:?}"),
    }
    // Nothing of a later question reaches either of them.
    app.ask("games", "secret").await;
    for socket in [&mut socket, &mut anonymous] {
        match socket.receive(Duration::from_millis(700)).await {
            Received::Nothing => {}
            other => panic!("a non-member received {other:?}"),
        }
    }
}

async fn a_member_suspended_mid_subscription_stops_receiving(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let admin = person(&app.db, "root", true).await;
    let mut socket = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    socket.subscribe("q", QUEUE, json!({"slug": "games"})).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    app.ask("games", "before").await;
    assert_eq!(
        socket.next_data("q").await["data"]["questionQueue"]["change"],
        "ADDED"
    );

    let suspended = app
        .graphql(
            Some(&admin.token),
            "mutation { suspendMember(nicheSlug: \"games\", handle: \"ana\") { status } }",
            json!({}),
        )
        .await;
    assert_eq!(
        suspended["data"]["suspendMember"]["status"], "suspended",
        "{suspended}"
    );
    let cut = socket.next_data("q").await;
    assert_eq!(cut["errors"][0]["extensions"]["code"], "FORBIDDEN", "{cut}");
    match socket.receive(Duration::from_secs(5)).await {
        Received::Json(message) => assert_eq!(message["type"], "complete", "{message}"),
        other => panic!("expected complete, got {other:?}"),
    }
    app.ask("games", "after").await;
    match socket.receive(Duration::from_millis(700)).await {
        Received::Nothing => {}
        other => panic!("a suspended member received {other:?}"),
    }
}

on_both_backends!(
    a_subscriber_sees_a_question_arrive_and_leave,
    awaiting_me_drops_what_i_declined,
    a_non_member_cannot_subscribe,
    a_member_suspended_mid_subscription_stops_receiving,
);

#[tokio::test]
async fn a_connection_that_never_initialises_is_closed_with_4408() {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        config.live.init_timeout = Duration::from_millis(300);
    })
    .await
    .expect("an app");
    let mut socket = GqlSocket::open(&app.base).await;
    match socket.receive(Duration::from_secs(5)).await {
        Received::Closed(code) => assert_eq!(code, Some(4408)),
        other => panic!("expected a close, got {other:?}"),
    }
}

#[tokio::test]
async fn subscribing_before_the_acknowledgement_is_refused() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    let mut socket = GqlSocket::open(&app.base).await;
    socket.subscribe("q", QUEUE, json!({"slug": "games"})).await;
    match socket.receive(Duration::from_secs(5)).await {
        Received::Closed(code) => assert_eq!(code, Some(4401)),
        other => panic!("expected a close, got {other:?}"),
    }
}

#[tokio::test]
async fn a_bad_token_in_connection_init_is_refused() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    let mut socket = GqlSocket::open(&app.base).await;
    socket
        .send(json!({"type": "connection_init", "payload": {"token": "al_key_nope"}}))
        .await;
    match socket.receive(Duration::from_secs(5)).await {
        Received::Closed(code) => assert_eq!(code, Some(4403)),
        other => panic!("expected a close, got {other:?}"),
    }
}
