//! What a connection must do to keep its place: sign in on a websocket, keep its address within
//! its bounds, send its headers in time and not sit silent. Strangers are played from 127.0.0.2
//! (every loopback address reaches the server), the people they must not lock out from
//! 127.0.0.1 or with a credential. Most of these are transport tests, where the store plays no
//! part: they run on SQLite alone, and say so; the one that signs people in runs on both.

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use askloop_tests::fixtures::open_niche;
use askloop_tests::people::operator;
use askloop_tests::socket::{GqlSocket, Received, connect_from};
use askloop_tests::wait;
use askloop_tests::{Backend, TestApp, on_both_backends};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Where the strangers connect from.
const STRANGER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
/// Where the people connect from.
const HOME: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));

const QUEUE: &str =
    "subscription ($slug: String!) { questionQueue(nicheSlug: $slug) { change question { id } } }";

/// How long any of these waits for the server to do what it must before the test gives up: far
/// beyond every timeout configured below, so a loaded machine cannot fail them.
const PATIENCE: Duration = Duration::from_secs(20);

/// Read `stream` until the server closes it (or resets it), for [`PATIENCE`] at most: what it
/// sent, and how long after `since` it closed; `None` if it stayed open.
async fn closed_by_the_server(
    stream: &mut TcpStream,
    since: Instant,
) -> Option<(Duration, String)> {
    let mut heard = Vec::new();
    let mut buffer = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buffer)).await {
            Err(_) => return None,
            Ok(Ok(0) | Err(_)) => {
                return Some((
                    since.elapsed(),
                    String::from_utf8_lossy(&heard).into_owned(),
                ));
            }
            Ok(Ok(n)) => heard.extend_from_slice(&buffer[..n]),
        }
    }
}

/// Wait until the app holds `count` connections open (the accept loop has taken them).
async fn until_open(app: &TestApp, count: usize) {
    wait::until_ok(PATIENCE, || async {
        let open = app.connections.open();
        if open == count {
            Ok(())
        } else {
            Err(format!("{open} connections open, not {count}"))
        }
    })
    .await;
}

/// A plain `GET path` on `stream`, kept alive; the response's head and body.
async fn get(stream: &mut TcpStream, path: &str) -> String {
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nhost: askloop\r\n\r\n").as_bytes())
        .await
        .expect("sent");
    let mut heard = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(PATIENCE, stream.read(&mut buffer))
            .await
            .expect("an answer in time")
            .expect("read");
        assert!(
            n > 0,
            "closed before answering: {}",
            String::from_utf8_lossy(&heard)
        );
        heard.extend_from_slice(&buffer[..n]);
        let text = String::from_utf8_lossy(&heard).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|line| {
                    line.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(str::to_owned)
                })
                .and_then(|n| n.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if body.len() >= length {
                return text;
            }
        }
    }
}

// The store plays no part: nothing is looked up for a socket with no credential.
#[tokio::test]
async fn an_unauthenticated_connection_init_is_closed_with_4403() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    let mut socket = GqlSocket::open(&app.base).await;
    socket
        .send(json!({"type": "connection_init", "payload": {}}))
        .await;
    match socket.receive(PATIENCE).await {
        Received::Closed(code) => assert_eq!(code, Some(4403)),
        other => panic!("expected 4403, got {other:?}"),
    }
}

async fn a_per_address_socket_cap_leaves_a_signed_in_operator_connected_while_200_anonymous_attempts_are_refused(
    app: TestApp,
) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bo = operator(&app.db, "games", "bo").await;
    let mut anas = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    anas.subscribe("q", QUEUE, json!({"slug": "games"})).await;

    // The stranger's address fills its share of anonymous sockets, then tries 200 more.
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(
            GqlSocket::try_open_from(&app.base, STRANGER, &[])
                .await
                .expect("within the address's share"),
        );
    }
    for attempt in 0..200 {
        match GqlSocket::try_open_from(&app.base, STRANGER, &[]).await {
            Err(refused) => {
                assert_eq!(refused.status, 429, "attempt {attempt}");
                assert_eq!(
                    refused.retry_after.as_deref(),
                    Some("1"),
                    "attempt {attempt}"
                );
            }
            Ok(_) => panic!("anonymous attempt {attempt} past the cap was upgraded"),
        }
    }

    // An operator on that very address, signed in on the upgrade, is let in and acknowledged.
    let bearer = format!("Bearer {}", bo.token);
    let mut bos = GqlSocket::connect_from(
        &app.base,
        STRANGER,
        &[("authorization", bearer.as_str())],
        None,
    )
    .await;
    bos.subscribe("q", QUEUE, json!({"slug": "games"})).await;
    app.until_subscriptions_served(2).await;

    // And both still hear the queue.
    let id = app.ask("games", "through-the-flood").await;
    for socket in [&mut anas, &mut bos] {
        let heard = socket.next_data("q").await;
        assert_eq!(
            heard["data"]["questionQueue"]["question"]["id"],
            id.to_string(),
            "{heard}"
        );
    }
    drop(held);
}

on_both_backends! {
    config: |config| config.live.max_anonymous_per_address = 4;
    a_per_address_socket_cap_leaves_a_signed_in_operator_connected_while_200_anonymous_attempts_are_refused,
}

// The store plays no part: the rate is counted before anything is looked up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_upgrades_past_their_address_rate_are_refused_with_a_retry_after() {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        config.live.handshakes_per_second = 2;
    })
    .await
    .expect("an app");
    let started = Instant::now();
    let (mut upgraded, mut refused) = (Vec::new(), 0);
    for _ in 0..12 {
        match GqlSocket::try_open_from(&app.base, STRANGER, &[]).await {
            Ok(socket) => upgraded.push(socket),
            Err(refusal) => {
                assert_eq!(refusal.status, 429);
                assert_eq!(refusal.retry_after.as_deref(), Some("1"));
                refused += 1;
            }
        }
    }
    // A burst of two, then two a second: however slowly this machine ran the attempts.
    let allowed = 2 + (2.0 * started.elapsed().as_secs_f64()).ceil() as usize;
    assert!(
        upgraded.len() <= allowed,
        "{} upgraded, at most {allowed} allowed",
        upgraded.len()
    );
    assert!(refused > 0, "none of 12 attempts was refused");
    // Another address has its own rate.
    GqlSocket::try_open_from(&app.base, HOME, &[])
        .await
        .expect("another address is upgraded");
}

async fn anonymous_sockets_take_no_place_under_the_instance_wide_socket_cap(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bo = operator(&app.db, "games", "bo").await;
    let mut strangers = Vec::new();
    for _ in 0..3 {
        strangers.push(
            GqlSocket::try_open_from(&app.base, STRANGER, &[])
                .await
                .expect("upgraded"),
        );
    }
    // One signed-in socket fits, whatever the strangers hold…
    let _anas = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    // …and the cap still holds for signed-in ones: the next is told to come back later.
    let mut bos = GqlSocket::open(&app.base).await;
    bos.send(json!({"type": "connection_init", "payload": {"token": bo.token}}))
        .await;
    match bos.receive(PATIENCE).await {
        Received::Closed(code) => assert_eq!(code, Some(1013)),
        other => panic!("expected 1013, got {other:?}"),
    }
    drop(strangers);
}

on_both_backends! {
    config: |config| config.live.max_sockets = 1;
    anonymous_sockets_take_no_place_under_the_instance_wide_socket_cap,
}

// The store plays no part in how connections are read and closed.
#[tokio::test]
async fn a_connection_that_trickles_its_headers_is_closed_within_the_header_timeout() {
    let header_timeout = Duration::from_millis(500);
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        config.connections.header_timeout = header_timeout;
        config.connections.idle_timeout = Duration::from_secs(60);
    })
    .await
    .expect("an app");
    let stream = connect_from(&app.base, STRANGER).await;
    let (mut reading, mut writing) = stream.into_split();
    let started = Instant::now();
    // One byte every 50 ms: never idle, never done.
    let trickle = tokio::spawn(async move {
        let mut sent = 0usize;
        let head = b"GET /healthz HTTP/1.1\r\nhost: askloop\r\n";
        let endless = head.iter().copied().chain(std::iter::repeat(b'x'));
        writing.write_all(b"GET ").await.ok();
        for byte in endless.skip(4) {
            if writing.write_all(&[byte]).await.is_err() {
                break;
            }
            sent += 1;
            // Time is the fact under test: a client that sends a byte every 50 ms is never idle
            // yet never done, and the header deadline must end it anyway.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        sent
    });
    let mut buffer = [0u8; 1024];
    let closed = tokio::time::timeout(PATIENCE, async {
        loop {
            match reading.read(&mut buffer).await {
                Ok(0) | Err(_) => break started.elapsed(),
                Ok(_) => {}
            }
        }
    })
    .await
    .expect("the trickling connection was closed");
    assert!(
        closed >= header_timeout,
        "closed after {closed:?}, before the header timeout"
    );
    let sent = tokio::time::timeout(PATIENCE, trickle)
        .await
        .expect("the trickle ends once closed")
        .expect("the trickle ran");
    assert!(sent > 1, "the peer was still sending: {sent} bytes");
}

// The store plays no part in how connections are read and closed.
#[tokio::test]
async fn a_connection_that_says_nothing_is_closed_after_the_idle_timeout() {
    let idle_timeout = Duration::from_millis(300);
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        config.connections.idle_timeout = idle_timeout;
        config.connections.header_timeout = Duration::from_secs(60);
    })
    .await
    .expect("an app");
    let started = Instant::now();
    let mut stream = connect_from(&app.base, STRANGER).await;
    let (after, heard) = closed_by_the_server(&mut stream, started)
        .await
        .expect("the silent connection was closed");
    assert!(after >= idle_timeout, "closed after {after:?}");
    assert_eq!(
        heard, "",
        "nothing is said to a connection that said nothing"
    );
    until_open(&app, 0).await;
}

// The store plays no part in how connections are read and closed.
#[tokio::test]
async fn a_kept_alive_connection_is_closed_after_the_idle_timeout() {
    let idle_timeout = Duration::from_millis(300);
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        config.connections.idle_timeout = idle_timeout;
        config.connections.header_timeout = Duration::from_secs(60);
    })
    .await
    .expect("an app");
    let mut stream = connect_from(&app.base, STRANGER).await;
    let answer = get(&mut stream, "/healthz").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let answered = Instant::now();
    // Still open for a second request well within the timeout…
    let again = get(&mut stream, "/healthz").await;
    assert!(again.starts_with("HTTP/1.1 200"), "{again}");
    // …then closed once it has been quiet for it.
    let (after, heard) = closed_by_the_server(&mut stream, answered)
        .await
        .expect("the kept-alive connection was closed");
    assert!(after >= idle_timeout, "closed after {after:?}");
    assert_eq!(heard, "");
}

// The store plays no part: the long poll's wait is what is measured against the idle timeout.
#[tokio::test]
async fn a_request_in_flight_outlasts_the_idle_timeout() {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        config.connections.idle_timeout = Duration::from_millis(200);
    })
    .await
    .expect("an app");
    open_niche(&app.db, "games").await;
    app.ask("games", "q-1").await;
    // A long poll that waits a whole second with nothing to say, five idle timeouts long.
    let body = json!({"nicheSlug": "games", "externalIds": ["q-1"], "waitSeconds": 1}).to_string();
    let response = app
        .post_signed("/api/v1/internal/expert-questions/lookup", &body)
        .await;
    assert_eq!(response.status(), 200);
    let read: serde_json::Value = response.json().await.expect("JSON");
    assert_eq!(read["questions"][0]["status"], "open", "{read}");
}

// The store plays no part in admitting connections.
#[tokio::test]
async fn connections_past_the_per_address_cap_are_answered_429_while_another_address_is_served() {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        config.connections.max_per_address = 3;
        config.connections.idle_timeout = Duration::from_secs(60);
        config.connections.header_timeout = Duration::from_secs(60);
    })
    .await
    .expect("an app");
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(connect_from(&app.base, STRANGER).await);
    }
    until_open(&app, 3).await;
    let started = Instant::now();
    let mut fourth = connect_from(&app.base, STRANGER).await;
    let (_, heard) = closed_by_the_server(&mut fourth, started)
        .await
        .expect("the fourth is closed at once");
    assert!(heard.starts_with("HTTP/1.1 429"), "{heard}");
    assert!(heard.contains("retry-after: 1"), "{heard}");
    assert_eq!(app.connections.open(), 3, "the refused one holds no place");
    let ready = reqwest::get(app.url("/readyz")).await.expect("answered");
    assert_eq!(ready.status(), 200, "another address is served");
    drop(held);
}

// The store plays no part in admitting connections (/readyz reads it, on either).
#[tokio::test]
async fn the_reserve_serves_health_checks_and_credentials_but_not_strangers() {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        config.connections.max_connections = Some(4);
        config.connections.reserved = Some(2);
        config.connections.idle_timeout = Duration::from_secs(60);
        config.connections.header_timeout = Duration::from_secs(60);
    })
    .await
    .expect("an app");
    // Strangers take the open part of the cap…
    let mut held = Vec::new();
    for _ in 0..2 {
        held.push(connect_from(&app.base, STRANGER).await);
    }
    until_open(&app, 2).await;
    // …so the next connections are in the reserve: a stranger's page is refused there, a
    // health check and a signed intake are served.
    let mut reserved = connect_from(&app.base, STRANGER).await;
    until_open(&app, 3).await;
    let page = get(&mut reserved, "/").await;
    assert!(page.starts_with("HTTP/1.1 503"), "{page}");
    assert!(
        page.to_ascii_lowercase().contains("retry-after: 1"),
        "{page}"
    );
    let mut checked = connect_from(&app.base, HOME).await;
    let ready = get(&mut checked, "/readyz").await;
    assert!(ready.starts_with("HTTP/1.1 200"), "{ready}");
    open_niche(&app.db, "games").await;
    let id = app.ask("games", "in-the-reserve").await;
    assert!(id > 0);
    // Past the whole cap, nobody is.
    until_open(&app, 4).await;
    let started = Instant::now();
    let mut past = connect_from(&app.base, HOME).await;
    let (_, heard) = closed_by_the_server(&mut past, started)
        .await
        .expect("closed at once");
    assert!(heard.starts_with("HTTP/1.1 503"), "{heard}");
    drop((held, checked));
}

// The store plays no part: this is the process's own limit.
#[tokio::test]
async fn askloop_serve_raises_its_open_file_limit_to_the_hard_limit() {
    let (_, hard) = rlimit_of_self();
    if hard <= 512 {
        eprintln!("skipped: the hard open-file limit here ({hard}) leaves nothing to raise");
        return;
    }
    let database = askloop_tests::TestDatabase::create(Backend::Sqlite)
        .await
        .expect("a database");
    let url = database.url.clone();
    let served = tokio::task::spawn_blocking(move || {
        askloop_tests::served::Served::start_with_soft_file_limit(&url, 512)
    })
    .await
    .expect("started");
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", served.child.id()))
        .expect("the process's limits");
    let open_files = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .expect("an open-file line");
    let numbers: Vec<u64> = open_files
        .split_whitespace()
        .filter_map(|word| word.parse().ok())
        .collect();
    assert_eq!(numbers, vec![hard, hard], "{open_files}");
}

/// This process's soft and hard open-file limits, as /proc says.
fn rlimit_of_self() -> (u64, u64) {
    let limits = std::fs::read_to_string("/proc/self/limits").expect("limits");
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .expect("an open-file line");
    let numbers: Vec<u64> = line
        .split_whitespace()
        .filter_map(|word| word.parse().ok())
        .collect();
    (numbers[0], numbers[1])
}

// askloop serves HTTP/1.1 only: the connection builder also understands HTTP/2, and a client
// that opens with HTTP/2's preface is answered 505 on every request, and nothing is routed.
#[tokio::test]
async fn a_request_over_http2_is_answered_505() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    let stream = connect_from(&app.base, STRANGER).await;
    let (mut client, connection) = h2::client::handshake(stream)
        .await
        .expect("the HTTP/2 handshake");
    tokio::spawn(connection);
    for path in ["/healthz", "/graphql"] {
        let request = http::Request::get(format!("{}{path}", app.base))
            .body(())
            .expect("a request");
        let (response, _) = client.send_request(request, true).expect("sent");
        let response = response.await.expect("an answer");
        assert_eq!(
            response.status(),
            http::StatusCode::HTTP_VERSION_NOT_SUPPORTED,
            "{path}"
        );
    }
}
