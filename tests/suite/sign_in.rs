//! Signing in cannot be worked around or turned against anyone: a handle counts as one however
//! it is typed, a stranger's failures from elsewhere never lock the owner out, a burst of guesses
//! gets no more checks than the free allowance, an overlong handle is refused before it costs
//! anything, and one request signs in once at most.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use askloop::net::login_throttle::LoginThrottle;
use askloop_tests::people::{PASSWORD, person};
use askloop_tests::socket::{GqlSocket, Received};
use askloop_tests::{TestApp, error_code, on_both_backends};
use entity::sessions;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

const LOGIN: &str = "mutation($h: String!, $p: String!) { login(handle: $h, password: $p) { token user { handle } } }";
const WRONG: &str = "wrong handle or password";
const WAIT: &str = "too many failed sign-ins; try again in";

/// A client whose connections come from `ip` (any of 127.0.0.0/8 reaches the test server).
pub(crate) fn client_from(ip: Ipv4Addr) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(IpAddr::V4(ip))
        .build()
        .expect("a client")
}

/// Sign in with `client`; the response's headers and body.
pub(crate) async fn sign_in(
    app: &TestApp,
    client: &reqwest::Client,
    handle: &str,
    password: &str,
) -> (reqwest::header::HeaderMap, Value) {
    let response = client
        .post(app.url("/graphql"))
        .json(&json!({"query": LOGIN, "variables": {"h": handle, "p": password}}))
        .send()
        .await
        .expect("sent");
    let headers = response.headers().clone();
    (headers, response.json().await.expect("JSON"))
}

pub(crate) fn message(body: &Value) -> &str {
    body["errors"][0]["message"].as_str().unwrap_or_default()
}

async fn sessions_of(app: &TestApp, user_id: i64) -> u64 {
    sessions::Entity::find()
        .filter(sessions::Column::UserId.eq(user_id))
        .count(&app.db)
        .await
        .expect("counted")
}

async fn every_way_of_typing_a_handle_shares_one_count(app: TestApp) {
    person(&app.db, "operator", false).await;
    let client = client_from(Ipv4Addr::LOCALHOST);
    // Typed any of these ways, the handle is the operator's.
    let (_, body) = sign_in(&app, &client, "\u{3000}OPERATOR ", PASSWORD).await;
    assert_eq!(
        body["data"]["login"]["user"]["handle"], "operator",
        "{body}"
    );

    for typed in [
        " operator",
        "operator ",
        "\toperator",
        "\u{3000}operator",
        "OPERATOR",
    ] {
        let (_, body) = sign_in(&app, &client, typed, "a wrong guess").await;
        assert_eq!(message(&body), WRONG, "{typed:?}: {body}");
    }
    // Five failures, however typed, are five for the one handle: the right password waits,
    // padded or not.
    for typed in [" operator", "operator", "Operator\u{3000}"] {
        let (headers, body) = sign_in(&app, &client, typed, PASSWORD).await;
        assert!(message(&body).starts_with(WAIT), "{typed:?}: {body}");
        assert_eq!(error_code(&body), Some("UNAUTHENTICATED"));
        assert!(headers.get("set-cookie").is_none());
    }
    assert_eq!(app.login_throttle.len(), 1);
}

async fn a_strangers_failures_do_not_lock_the_owner_out_of_their_own_address(app: TestApp) {
    person(&app.db, "ana", false).await;
    let stranger = client_from(Ipv4Addr::new(127, 0, 0, 2));
    let owner = client_from(Ipv4Addr::LOCALHOST);
    let mut refused = 0;
    for _ in 0..12 {
        let (_, body) = sign_in(&app, &stranger, "ana", "a wrong guess").await;
        if message(&body).starts_with(WAIT) {
            refused += 1;
        }
    }
    assert!(refused > 0, "the stranger was never held back");
    // The stranger waits even with the right password…
    let (_, body) = sign_in(&app, &stranger, "ana", PASSWORD).await;
    assert!(message(&body).starts_with(WAIT), "{body}");
    // …and ana, from her own address, signs in at once.
    let (headers, body) = sign_in(&app, &owner, "ana", PASSWORD).await;
    assert_eq!(body["data"]["login"]["user"]["handle"], "ana", "{body}");
    assert!(headers.get("set-cookie").is_some());
}

/// The hold after the free allowance held for as long as holds go: however slow the machine,
/// it cannot run out while the test runs (the default first hold is a second).
fn holds_long(config: &mut askloop::config::Config) {
    config.sign_in.first_hold = LoginThrottle::LONGEST_WAIT;
}

on_both_backends! {
    config: holds_long;
    a_burst_of_wrong_guesses_gets_only_the_free_allowance_checked,
}

async fn a_burst_of_wrong_guesses_gets_only_the_free_allowance_checked(app: TestApp) {
    person(&app.db, "ana", false).await;
    let client = client_from(Ipv4Addr::LOCALHOST);
    let answers = futures::future::join_all((0..20).map(|i| {
        sign_in(
            &app,
            &client,
            "ana",
            if i % 2 == 0 { "guess" } else { "other" },
        )
    }))
    .await;
    let checked = answers.iter().filter(|(_, b)| message(b) == WRONG).count();
    let held_back = answers
        .iter()
        .filter(|(_, b)| message(b).starts_with(WAIT))
        .count();
    assert_eq!(
        (checked, held_back),
        (
            LoginThrottle::FREE_FAILURES as usize,
            20 - LoginThrottle::FREE_FAILURES as usize
        ),
        "{answers:?}"
    );
    let (_, body) = sign_in(&app, &client, "ana", PASSWORD).await;
    assert!(message(&body).starts_with(WAIT), "{body}");
}

async fn an_overlong_handle_is_refused_before_it_is_counted(app: TestApp) {
    person(&app.db, "ana", false).await;
    let client = client_from(Ipv4Addr::LOCALHOST);
    for i in 0..50 {
        let handle = format!("{i}{}", "x".repeat(10 * 1024));
        let (_, body) = sign_in(&app, &client, &handle, "a wrong guess").await;
        assert_eq!(error_code(&body), Some("BAD_USER_INPUT"), "{body}");
    }
    let (_, body) = sign_in(&app, &client, &"a".repeat(41), "a wrong guess").await;
    assert_eq!(error_code(&body), Some("BAD_USER_INPUT"), "{body}");
    assert!(
        app.login_throttle.is_empty(),
        "a refused handle was counted"
    );
    let (_, body) = sign_in(&app, &client, "ana", PASSWORD).await;
    assert_eq!(body["data"]["login"]["user"]["handle"], "ana", "{body}");
}

async fn two_logins_in_one_request_are_refused_and_open_no_session(app: TestApp) {
    let ana = person(&app.db, "ana", false).await;
    let before = sessions_of(&app, ana.id).await;
    let client = client_from(Ipv4Addr::LOCALHOST);
    let aliased = "mutation($p: String!) { \
                   a: login(handle: \"ana\", password: $p) { token } \
                   b: login(handle: \"ana\", password: \"guess\") { token } }";
    let by_fragment = "mutation($p: String!) { ...L ...L } \
                       fragment L on Mutation { login(handle: \"ana\", password: $p) { token } }";
    for query in [aliased, by_fragment] {
        // More often than the free allowance: had any password been checked, the throttle
        // would hold the next sign-in back.
        for _ in 0..(LoginThrottle::FREE_FAILURES + 2) {
            let response = client
                .post(app.url("/graphql"))
                .json(&json!({"query": query, "variables": {"p": PASSWORD}}))
                .send()
                .await
                .expect("sent");
            assert!(response.headers().get("set-cookie").is_none());
            let body: Value = response.json().await.expect("JSON");
            assert_eq!(error_code(&body), Some("BAD_USER_INPUT"), "{body}");
            assert!(body["data"].is_null(), "{body}");
        }
    }
    assert_eq!(
        sessions_of(&app, ana.id).await,
        before,
        "a session was opened"
    );
    assert!(app.login_throttle.is_empty(), "a password was checked");

    // The websocket refuses it too (a socket must be signed in to be acknowledged at all).
    let mut socket = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    socket
        .send(json!({"id": "twice", "type": "subscribe",
                     "payload": {"query": aliased, "variables": {"p": PASSWORD}}}))
        .await;
    match socket.receive(Duration::from_secs(10)).await {
        Received::Json(message) => {
            assert!(message.to_string().contains("BAD_USER_INPUT"), "{message}");
            assert!(!message.to_string().contains("al_sess_"), "{message}");
        }
        other => panic!("no answer to two logins over the socket: {other:?}"),
    }
    assert_eq!(
        sessions_of(&app, ana.id).await,
        before,
        "a session was opened"
    );

    // One login per request still signs in.
    let (_, body) = sign_in(&app, &client, "ana", PASSWORD).await;
    assert!(body["data"]["login"]["token"].is_string(), "{body}");
}

on_both_backends!(
    every_way_of_typing_a_handle_shares_one_count,
    a_strangers_failures_do_not_lock_the_owner_out_of_their_own_address,
    an_overlong_handle_is_refused_before_it_is_counted,
    two_logins_in_one_request_are_refused_and_open_no_session,
);
