//! Shared fan-out over real websockets: one resolution per (event, class, selection) handed to
//! everyone in the class, never to a subscriber who may not see the event, and never across the
//! admin / member line.

use std::time::Duration;

use askloop_tests::fixtures::open_niche;
use askloop_tests::people::{operator, person};
use askloop_tests::socket::{GqlSocket, Received};
use askloop_tests::{TestApp, on_both_backends};
use serde_json::{Value, json};

/// The same selection under both subscriptions, so every subscriber below shares one print.
const CARD: &str =
    "change question { id title question urgency status options { id label } niche { slug } }";

fn queue(slug: &str) -> String {
    format!("subscription {{ questionQueue(nicheSlug: \"{slug}\") {{ {CARD} }} }}")
}

fn awaiting() -> String {
    format!("subscription {{ awaitingMe {{ {CARD} }} }}")
}

/// Nothing more arrives on `socket` for a moment.
async fn hears_nothing(socket: &mut GqlSocket, who: &str) {
    match socket.receive(Duration::from_millis(700)).await {
        Received::Nothing => {}
        other => panic!("{who} heard {other:?}"),
    }
}

async fn a_shared_payload_reaches_only_subscribers_who_may_see_it(app: TestApp) {
    open_niche(&app.db, "games").await;
    open_niche(&app.db, "roofing").await;
    let ana = operator(&app.db, "games", "ana").await;
    let cy = operator(&app.db, "games", "cy").await;
    // A member of another niche, subscribed with the very same selection: same print, same
    // class, and still never given a games question.
    let bo = operator(&app.db, "roofing", "bo").await;
    let stranger = person(&app.db, "stranger", false).await;

    let mut sockets = Vec::new();
    for person in [&ana, &cy] {
        let mut socket = GqlSocket::connect(&app.base, Some(&person.token)).await;
        socket.subscribe("q", &queue("games"), json!({})).await;
        socket.subscribe("a", &awaiting(), json!({})).await;
        sockets.push(socket);
    }
    let mut bos = GqlSocket::connect(&app.base, Some(&bo.token)).await;
    bos.subscribe("a", &awaiting(), json!({})).await;
    let mut strangers = GqlSocket::connect(&app.base, Some(&stranger.token)).await;
    strangers.subscribe("a", &awaiting(), json!({})).await;
    app.until_subscriptions_served(6).await;

    let games_question = app.ask("games", "shared-1").await;
    for socket in &mut sockets {
        let mut heard = Vec::new();
        for _ in 0..2 {
            match socket.receive(Duration::from_secs(10)).await {
                Received::Json(message) if message["type"] == "next" => heard.push(message),
                other => panic!("expected next, got {other:?}"),
            }
        }
        heard.sort_by_key(|m| m["id"].as_str().map(str::to_owned));
        for (message, root) in heard.iter().zip(["awaitingMe", "questionQueue"]) {
            let change = &message["payload"]["data"][root];
            assert_eq!(change["change"], "ADDED", "{message}");
            assert_eq!(change["question"]["id"], games_question.to_string());
            assert_eq!(change["question"]["niche"]["slug"], "games");
            assert_eq!(change["question"]["title"], "Which date?");
            assert!(message["payload"]["errors"].is_null(), "{message}");
        }
    }
    hears_nothing(&mut bos, "a roofing operator").await;
    hears_nothing(&mut strangers, "a person in no niche").await;

    let roofing_question = app.ask("roofing", "shared-2").await;
    let heard = bos.next_data("a").await;
    assert_eq!(
        heard["data"]["awaitingMe"]["question"]["id"],
        roofing_question.to_string(),
        "{heard}"
    );
    for socket in &mut sockets {
        hears_nothing(socket, "a games operator").await;
    }
    hears_nothing(&mut strangers, "a person in no niche").await;

    // Two events, one resolution each: the games one went to four subscriptions, the roofing
    // one to one.
    assert_eq!(app.gauge("askloop_live_payloads_resolved_total").await, 2);
    assert_eq!(app.gauge("askloop_live_payloads_shared_total").await, 5);
}

async fn admins_and_members_never_share_a_payload(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    // The same selection, asking for the question's deliveries: admins only.
    let query = "subscription { questionQueue(nicheSlug: \"games\") { change question { id deliveries { eventType } } } }";
    let mut member = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    member.subscribe("q", query, json!({})).await;
    let mut admin = GqlSocket::connect(&app.base, Some(&root.token)).await;
    admin.subscribe("q", query, json!({})).await;
    app.until_subscriptions_served(2).await;

    let id = app.ask("games", "classes-1").await;
    let seen_by_admin: Value = admin.next_data("q").await;
    assert!(seen_by_admin["errors"].is_null(), "{seen_by_admin}");
    assert_eq!(
        seen_by_admin["data"]["questionQueue"]["question"]["id"],
        id.to_string()
    );
    assert!(
        seen_by_admin["data"]["questionQueue"]["question"]["deliveries"].is_array(),
        "{seen_by_admin}"
    );
    let seen_by_member = member.next_data("q").await;
    assert_eq!(
        seen_by_member["errors"][0]["extensions"]["code"], "FORBIDDEN",
        "{seen_by_member}"
    );
    assert!(
        seen_by_member["data"]["questionQueue"]["question"]["deliveries"].is_null(),
        "{seen_by_member}"
    );
    // The member's resolution raised an error, so it was not kept for sharing; the admin's was.
    assert_eq!(app.gauge("askloop_live_payloads_resolved_total").await, 1);
}

/// A gauge from `/metrics`.
async fn served(app: &TestApp) -> u64 {
    app.gauge("askloop_live_subscriptions_served").await
}

/// The next message on `socket`, which must be of `kind` for operation `id`.
async fn expect(socket: &mut GqlSocket, kind: &str, id: &str) -> Value {
    match socket.receive(Duration::from_secs(10)).await {
        Received::Json(message) if message["type"] == kind && message["id"] == id => message,
        other => panic!("expected {kind} for {id}, got {other:?}"),
    }
}

/// A shareable queue subscription is handed over to its socket once started: it delivers as
/// before, stops on the client's `complete` (answered with `complete`), its id can be used
/// again, and the socket closing gives everything back.
async fn a_served_subscription_stops_on_complete_and_its_id_starts_again(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let mut socket = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    socket.subscribe("q", &queue("games"), json!({})).await;
    app.until_subscriptions_served(1).await;
    assert_eq!(
        served(&app).await,
        1,
        "the shareable subscription is served"
    );

    let first = app.ask("games", "served-1").await;
    let heard = expect(&mut socket, "next", "q").await;
    assert_eq!(
        heard["payload"]["data"]["questionQueue"]["question"]["id"],
        first.to_string(),
        "{heard}"
    );
    assert!(heard["payload"]["errors"].is_null(), "{heard}");

    socket.send(json!({"id": "q", "type": "complete"})).await;
    expect(&mut socket, "complete", "q").await;
    assert_eq!(served(&app).await, 0);
    app.ask("games", "served-2").await;
    hears_nothing(&mut socket, "a completed subscription").await;

    socket.subscribe("q", &queue("games"), json!({})).await;
    app.until_subscriptions_served(1).await;
    let third = app.ask("games", "served-3").await;
    let heard = expect(&mut socket, "next", "q").await;
    assert_eq!(
        heard["payload"]["data"]["questionQueue"]["question"]["id"],
        third.to_string(),
        "{heard}"
    );
    assert_eq!(served(&app).await, 1);

    drop(socket);
    // A closed socket serves nothing.
    app.until_exactly_subscriptions_served(0).await;
}

/// What stays with the library: a selection that is not shareable, and an operation with more
/// than one root field. Both deliver; `complete` ends them.
async fn unshareable_and_multi_root_subscriptions_stay_with_the_library(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let mut socket = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    // A niche's question list depends on who asks: never shared.
    let personal = "subscription { questionQueue(nicheSlug: \"games\") { change question { id niche { slug questions(first: 5) { nodes { id } } } } } }";
    socket.subscribe("p", personal, json!({})).await;
    let both = format!(
        "subscription {{ q: questionQueue(nicheSlug: \"games\") {{ {CARD} }} a: awaitingMe {{ {CARD} }} }}"
    );
    socket.subscribe("b", &both, json!({})).await;
    app.until_subscriptions_served(3).await;
    // Served by the library, and counted all the same: one for `p`, one per root field of `b`.
    assert_eq!(served(&app).await, 3, "every live stream is counted");

    let id = app.ask("games", "library-1").await;
    let mut heard = Vec::new();
    for _ in 0..3 {
        match socket.receive(Duration::from_secs(10)).await {
            Received::Json(message) if message["type"] == "next" => heard.push(message),
            other => panic!("expected next, got {other:?}"),
        }
    }
    let personal_seen = heard.iter().find(|m| m["id"] == "p").expect("p heard");
    assert_eq!(
        personal_seen["payload"]["data"]["questionQueue"]["question"]["id"],
        id.to_string(),
        "{personal_seen}"
    );
    let roots: Vec<&str> = heard
        .iter()
        .filter(|m| m["id"] == "b")
        .filter_map(|m| m["payload"]["data"].as_object())
        .flat_map(|data| data.keys().map(String::as_str))
        .collect();
    assert!(
        roots.contains(&"q") && roots.contains(&"a"),
        "both root fields deliver under one id: {heard:?}"
    );

    socket.send(json!({"id": "b", "type": "complete"})).await;
    expect(&mut socket, "complete", "b").await;
    socket.send(json!({"id": "p", "type": "complete"})).await;
    expect(&mut socket, "complete", "p").await;
    app.ask("games", "library-2").await;
    hears_nothing(&mut socket, "completed subscriptions").await;
}

/// A client cannot forge the socket's hand-over tag: whatever it writes under the tag's key is
/// replaced (on the socket) or dropped (over HTTP), and its subscription is served as its own.
async fn a_forged_hand_over_tag_changes_nothing(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let mut socket = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    for (id, extensions) in [
        (
            "forged",
            json!({"askloopOperation": "00000000000000000000000000000000:other"}),
        ),
        ("number", json!({"askloopOperation": 7})),
        ("null", Value::Null),
    ] {
        socket
            .send(json!({"id": id, "type": "subscribe", "payload": {
                "query": queue("games"), "variables": {}, "extensions": extensions}}))
            .await;
    }
    app.until_subscriptions_served(3).await;
    assert_eq!(served(&app).await, 3, "each is served under its own id");
    let question = app.ask("games", "forged-1").await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let message = match socket.receive(Duration::from_secs(10)).await {
            Received::Json(message) if message["type"] == "next" => message,
            other => panic!("expected next, got {other:?}"),
        };
        assert_eq!(
            message["payload"]["data"]["questionQueue"]["question"]["id"],
            question.to_string(),
            "{message}"
        );
        ids.push(message["id"].as_str().unwrap_or_default().to_owned());
    }
    ids.sort();
    assert_eq!(ids, ["forged", "null", "number"]);
    hears_nothing(&mut socket, "a socket with three subscriptions").await;

    // Over HTTP the key is dropped too: a query with it is answered as any other.
    let answered: Value = reqwest::Client::new()
        .post(app.url("/graphql"))
        .bearer_auth(&ana.token)
        .json(
            &json!({"query": "{ viewer { user { handle } } }", "extensions": {
            "askloopOperation": "00000000000000000000000000000000:x"}}),
        )
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("a JSON body");
    assert_eq!(
        answered["data"]["viewer"]["user"]["handle"], "ana",
        "{answered}"
    );
}

on_both_backends!(
    a_shared_payload_reaches_only_subscribers_who_may_see_it,
    admins_and_members_never_share_a_payload,
    a_served_subscription_stops_on_complete_and_its_id_starts_again,
    unshareable_and_multi_root_subscriptions_stay_with_the_library,
    a_forged_hand_over_tag_changes_nothing,
);
