//! Behind a real reverse proxy every limit is still per person (docs/security.md#behind-a-proxy):
//! nginx, started by the test, forwards to askloop, which trusts it (127.0.0.1) through
//! `ASKLOOP_TRUSTED_PROXIES`. Clients reach nginx from loopback addresses of their own
//! (127.57.x.y, 127.58.x.y: every address of 127.0.0.0/8 is on `lo`), so nginx sees each one's
//! address and appends it to `X-Forwarded-For`, and askloop sees only nginx.
//!
//! Shown here: 300 dashboards through the proxy are all served under the normal per-address cap,
//! which still holds each forwarded client; one forwarded client's sign-in flood leaves another's
//! sign-in alone; a forwarding header sent straight to askloop by a peer it does not trust
//! changes no limit and no recorded address; and without trusted proxies, everyone behind the
//! proxy is the proxy, as before. The websocket tests run on SQLite alone (no store plays a part
//! in admitting connections); the sign-in ones on both.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use askloop::auth::ClientAddress;
use askloop::config::Config;
use askloop_tests::people::{PASSWORD, person};
use askloop_tests::proxy::{Nginx, PROXY_ADDRESS};
use askloop_tests::socket::{GqlSocket, Received};
use askloop_tests::wait;
use askloop_tests::{Backend, TestApp, on_both_backends};
use entity::{audit_log, sessions};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use serde_json::{Value, json};

use crate::sign_in::client_from;

const LOGIN: &str = "mutation($h: String!, $p: String!) { login(handle: $h, password: $p) { token user { handle } } }";
const WRONG: &str = "wrong handle or password";
const ADDRESS_WAIT: &str = "too many failed sign-ins from this address; try again in";

/// Trust nginx, and put back the per-address bounds the harness lifts (it lifts them because
/// every test client is 127.0.0.1; here each client has its own address, so they must hold).
fn behind_nginx(config: &mut Config) {
    let normal = Config::defaults();
    config.trusted_proxies = PROXY_ADDRESS.to_string().parse().expect("a list");
    config.connections.max_per_address = normal.connections.max_per_address;
    config.live.max_anonymous_per_address = normal.live.max_anonymous_per_address;
    config.live.handshakes_per_second = normal.live.handshakes_per_second;
}

/// A small bucket of failed sign-ins per address that does not refill while the test runs.
fn small_sign_in_bucket(config: &mut Config) {
    config.sign_in.address_burst = 5;
    config.sign_in.address_refill = Duration::from_secs(600);
}

/// The client address `last` of this backend's network, one no other test signs in from.
fn address(app: &TestApp, last: u8) -> Ipv4Addr {
    let network = match app.backend {
        Backend::Sqlite => 1,
        Backend::Postgres => 2,
    };
    Ipv4Addr::new(127, 57, network, last)
}

/// Sign in at `base` (askloop, or nginx in front of it) with `client`, sending
/// `X-Forwarded-For: forwarded_for` when given; the response body.
async fn sign_in(
    base: &str,
    client: &reqwest::Client,
    handle: &str,
    password: &str,
    forwarded_for: Option<&str>,
) -> Value {
    let mut request = client
        .post(format!("{base}/graphql"))
        .json(&json!({"query": LOGIN, "variables": {"h": handle, "p": password}}));
    if let Some(claimed) = forwarded_for {
        request = request.header("x-forwarded-for", claimed);
    }
    request
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON")
}

fn message(body: &Value) -> &str {
    body["errors"][0]["message"].as_str().unwrap_or_default()
}

fn signed_in(body: &Value, handle: &str) {
    assert_eq!(body["data"]["login"]["user"]["handle"], handle, "{body}");
}

/// The address `user_id`'s newest session was opened from, and the one its `session.created`
/// audit entry records.
async fn recorded_addresses(app: &TestApp, user_id: i64) -> (Option<String>, Value) {
    let session = sessions::Entity::find()
        .filter(sessions::Column::UserId.eq(user_id))
        .order_by_desc(sessions::Column::Id)
        .one(&app.db)
        .await
        .expect("read")
        .expect("a session");
    let entry = audit_log::Entity::find()
        .filter(audit_log::Column::Action.eq("session.created"))
        .filter(audit_log::Column::SubjectId.eq(session.id.to_string()))
        .one(&app.db)
        .await
        .expect("read")
        .expect("the session's audit entry");
    (
        session.client_address,
        entry.detail["clientAddress"].clone(),
    )
}

/// Where dashboard `n` of the 300 connects from.
fn dashboard(n: usize) -> IpAddr {
    let n = u16::try_from(n).expect("a few hundred");
    IpAddr::V4(Ipv4Addr::new(
        127,
        58,
        u8::try_from(n / 200).expect("small"),
        u8::try_from(n % 200 + 1).expect("small"),
    ))
}

/// A dashboard's socket through nginx from `source`, signed in with `token` on the upgrade.
async fn open_dashboard(
    base: &str,
    source: IpAddr,
    token: &str,
) -> Result<GqlSocket, askloop_tests::socket::Refused> {
    let bearer = format!("Bearer {token}");
    GqlSocket::try_open_from(base, source, &[("authorization", bearer.as_str())]).await
}

/// `ping` answered with `pong`: the socket is served.
async fn answers_ping(socket: &mut GqlSocket) {
    socket.send(json!({"type": "ping"})).await;
    match socket.receive(wait::PATIENCE).await {
        Received::Json(message) if message["type"] == "pong" => {}
        other => panic!("no pong: {other:?}"),
    }
}

// The store plays no part in admitting connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_hundred_dashboards_through_the_proxy_are_all_served_under_the_normal_cap() {
    let app = TestApp::spawn_with(Backend::Sqlite, behind_nginx)
        .await
        .expect("an app");
    let cap = app.config().connections.max_per_address;
    assert!(cap < 300, "the normal per-address cap ({cap}) is below 300");
    let nginx = Nginx::in_front_of(&app).await;
    let owner = person(&app.db, "owner", false).await;
    let mut sockets = Vec::new();
    // Fifty at a time, as dashboards opening over a moment would.
    for batch in (0..300).collect::<Vec<usize>>().chunks(50) {
        let opened = futures::future::join_all(batch.iter().map(|&n| {
            let (base, token) = (&nginx.base, &owner.token);
            async move {
                let mut socket = open_dashboard(base, dashboard(n), token)
                    .await
                    .unwrap_or_else(|refused| panic!("dashboard {n} refused: {refused:?}"));
                socket
                    .send(json!({"type": "connection_init", "payload": {}}))
                    .await;
                match socket.receive(wait::PATIENCE).await {
                    Received::Json(message) if message["type"] == "connection_ack" => socket,
                    other => panic!("dashboard {n} not acknowledged: {other:?}"),
                }
            }
        }))
        .await;
        sockets.extend(opened);
    }
    // All 300 are open at once and answer.
    for socket in &mut sockets {
        answers_ping(socket).await;
    }
    assert!(app.connections.open() >= 300, "{}", app.connections.open());
    // Each forwarded client holds its own place; the proxy holds none under its address.
    let proxy = ClientAddress::new(IpAddr::V4(PROXY_ADDRESS));
    assert_eq!(app.connections.held_by(proxy), 0);
    assert_eq!(app.connections.held_by(ClientAddress::new(dashboard(0))), 1);
    assert_eq!(
        app.connections.held_by(ClientAddress::new(dashboard(299))),
        1
    );
    drop(sockets);
    drop(nginx);
}

// The store plays no part in admitting connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_forwarded_client_past_its_cap_is_answered_429_while_another_is_served() {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        behind_nginx(config);
        config.connections.max_per_address = 2;
    })
    .await
    .expect("an app");
    let nginx = Nginx::in_front_of(&app).await;
    let owner = person(&app.db, "owner", false).await;
    let greedy = IpAddr::V4(Ipv4Addr::new(127, 58, 9, 1));
    let other = IpAddr::V4(Ipv4Addr::new(127, 58, 9, 2));
    let first = open_dashboard(&nginx.base, greedy, &owner.token)
        .await
        .expect("a first socket");
    let _second = open_dashboard(&nginx.base, greedy, &owner.token)
        .await
        .expect("a second socket");
    let refused = open_dashboard(&nginx.base, greedy, &owner.token)
        .await
        .err()
        .expect("a third is refused");
    assert_eq!(refused.status, 429, "{refused:?}");
    assert_eq!(refused.retry_after.as_deref(), Some("1"));
    let mut elsewhere = open_dashboard(&nginx.base, other, &owner.token)
        .await
        .expect("another client is served");
    elsewhere
        .send(json!({"type": "connection_init", "payload": {}}))
        .await;
    assert!(matches!(
        elsewhere.receive(wait::PATIENCE).await,
        Received::Json(m) if m["type"] == "connection_ack"
    ));
    // A socket that closes gives its client's place back.
    drop(first);
    let greedy_client = ClientAddress::new(greedy);
    wait::until("the closed socket's place came back", || async {
        app.connections.held_by(greedy_client) == 1
    })
    .await;
    open_dashboard(&nginx.base, greedy, &owner.token)
        .await
        .expect("a place again");
}

async fn a_sign_in_flood_from_one_forwarded_client_leaves_another_forwarded_client_signing_in(
    app: TestApp,
) {
    let nginx = Nginx::in_front_of(&app).await;
    let owner = person(&app.db, "owner", false).await;
    let flooder = client_from(address(&app, 1));
    // The flooder claims a fresh address on every attempt; nginx appends the one it saw, and
    // that is the one askloop counts.
    for i in 0..app.config().sign_in.address_burst {
        let claimed = format!("198.51.100.{i}");
        let body = sign_in(
            &nginx.base,
            &flooder,
            &format!("nobody-{i}"),
            "guess",
            Some(&claimed),
        )
        .await;
        assert_eq!(message(&body), WRONG, "{body}");
    }
    let body = sign_in(
        &nginx.base,
        &flooder,
        "owner",
        PASSWORD,
        Some("198.51.100.200"),
    )
    .await;
    assert!(message(&body).starts_with(ADDRESS_WAIT), "{body}");
    // Another client behind the same proxy is not held back by it.
    let elsewhere = address(&app, 2);
    let body = sign_in(
        &nginx.base,
        &client_from(elsewhere),
        "owner",
        PASSWORD,
        None,
    )
    .await;
    signed_in(&body, "owner");
    let (session, audited) = recorded_addresses(&app, owner.id).await;
    assert_eq!(session, Some(elsewhere.to_string()));
    assert_eq!(audited, json!(elsewhere.to_string()));
    drop(nginx);
}

async fn a_forwarded_for_sent_straight_by_an_untrusted_peer_changes_no_limit_and_no_address(
    app: TestApp,
) {
    let owner = person(&app.db, "owner", false).await;
    let direct = address(&app, 3);
    let client = client_from(direct);
    // The address recorded is the peer's, not the one claimed.
    let body = sign_in(&app.base, &client, "owner", PASSWORD, Some("203.0.113.9")).await;
    signed_in(&body, "owner");
    let (session, audited) = recorded_addresses(&app, owner.id).await;
    assert_eq!(session, Some(direct.to_string()));
    assert_eq!(audited, json!(direct.to_string()));
    // Claiming a fresh address on every attempt does not refill the peer's bucket.
    for i in 0..app.config().sign_in.address_burst {
        let claimed = format!("203.0.113.{i}");
        let body = sign_in(
            &app.base,
            &client,
            &format!("nobody-{i}"),
            "guess",
            Some(&claimed),
        )
        .await;
        assert_eq!(message(&body), WRONG, "{body}");
    }
    let body = sign_in(&app.base, &client, "owner", PASSWORD, Some("203.0.113.250")).await;
    assert!(message(&body).starts_with(ADDRESS_WAIT), "{body}");
    // Nor does it multiply the anonymous sockets an address may hold, whichever header claims.
    let source = IpAddr::V4(address(&app, 4));
    let max = app.config().live.max_anonymous_per_address;
    let mut held = Vec::new();
    for i in 0..max {
        let claimed = format!("203.0.113.{i}");
        held.push(
            GqlSocket::try_open_from(&app.base, source, &[("x-forwarded-for", &claimed)])
                .await
                .unwrap_or_else(|refused| panic!("socket {i} refused: {refused:?}")),
        );
    }
    for header in [
        ("x-forwarded-for", "203.0.113.99"),
        ("forwarded", "for=203.0.113.98"),
    ] {
        let refused = GqlSocket::try_open_from(&app.base, source, &[header])
            .await
            .err()
            .expect("past the address's bound");
        assert_eq!(refused.status, 429, "{header:?}: {refused:?}");
    }
}

async fn without_trusted_proxies_every_client_behind_the_proxy_is_the_proxy(app: TestApp) {
    assert!(app.config().trusted_proxies.is_empty());
    let nginx = Nginx::in_front_of(&app).await;
    let owner = person(&app.db, "owner", false).await;
    let (one, another) = (address(&app, 5), address(&app, 6));
    // Through the proxy, the proxy's address is recorded.
    let body = sign_in(&nginx.base, &client_from(one), "owner", PASSWORD, None).await;
    signed_in(&body, "owner");
    let (session, audited) = recorded_addresses(&app, owner.id).await;
    assert_eq!(session, Some(PROXY_ADDRESS.to_string()));
    assert_eq!(audited, json!(PROXY_ADDRESS.to_string()));
    // Straight to askloop, a forwarding header is ignored.
    let direct = address(&app, 7);
    let body = sign_in(
        &app.base,
        &client_from(direct),
        "owner",
        PASSWORD,
        Some("203.0.113.9"),
    )
    .await;
    signed_in(&body, "owner");
    assert_eq!(
        recorded_addresses(&app, owner.id).await.0,
        Some(direct.to_string())
    );
    // One client's flood through the proxy spends the proxy's bucket: everyone behind it is
    // refused with it.
    let flooder = client_from(another);
    for i in 0..app.config().sign_in.address_burst {
        let body = sign_in(&nginx.base, &flooder, &format!("nobody-{i}"), "guess", None).await;
        assert_eq!(message(&body), WRONG, "{body}");
    }
    let body = sign_in(&nginx.base, &client_from(one), "owner", PASSWORD, None).await;
    assert!(message(&body).starts_with(ADDRESS_WAIT), "{body}");
    drop(nginx);
}

on_both_backends! {
    config: |config| {
        behind_nginx(config);
        small_sign_in_bucket(config);
    };
    a_sign_in_flood_from_one_forwarded_client_leaves_another_forwarded_client_signing_in,
    a_forwarded_for_sent_straight_by_an_untrusted_peer_changes_no_limit_and_no_address,
}

on_both_backends! {
    config: small_sign_in_bucket;
    without_trusted_proxies_every_client_behind_the_proxy_is_the_proxy,
}
