//! One address flooding sign-in slows down only itself: its wrong guesses, whatever the handles,
//! take at most one argon2 check at a time and wait their turn behind other addresses, so the
//! owner signing in elsewhere stays fast; and past its bucket of failures, an address is refused
//! before any password is checked, while another address signs in as usual.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use askloop::service::people::passwords::{self, Lane, Share};
use askloop_tests::people::{PASSWORD, person};
use askloop_tests::{Backend, TestApp, error_code, on_both_backends};
use entity::sessions;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};

use crate::sign_in::{client_from, message, sign_in};

const LOGIN: &str = "mutation($h: String!, $p: String!) { login(handle: $h, password: $p) { token user { handle } } }";
const WRONG: &str = "wrong handle or password";
const ADDRESS_WAIT: &str = "too many failed sign-ins from this address; try again in";

/// The password permits are one pool per process, shared by every test app in it: these tests
/// look at its lanes and hold it whole, so they take turns, and sign in from addresses no other
/// test uses (127.0.<backend>.x, one network per backend).
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The address `last` of this backend's network.
fn address(app: &TestApp, last: u8) -> Ipv4Addr {
    let network = match app.backend {
        Backend::Sqlite => 41,
        Backend::Postgres => 42,
    };
    Ipv4Addr::new(127, 0, network, last)
}

/// The wrong guesses the flood keeps in flight at once.
const FLOOD_SIZE: usize = 200;

/// The bound a real sign-in is held to during the flood. A sign-in on a quiet machine is one
/// argon2 check and then the session's write, tens of milliseconds, and the flood's one check at
/// a time competes with it for the cores; the bound leaves room for a loaded machine, and is
/// taken as the best of up to ten sign-ins, each measured while the flood is seen queued for
/// its checks.
const OWNER_BOUND: Duration = Duration::from_millis(100);

/// [`OWNER_BOUND`]; or, on a machine so busy that a sign-in with no flood at all (the best of
/// `quiet`) already takes more than half of it, twice that: the flood may cost the owner no
/// more than the machine's own slowness does. Before the permits were shared, the flood cost
/// the owner seconds, far past either.
fn bound_on_this_machine(quiet: &[Duration]) -> Duration {
    let quiet_best = quiet.iter().min().copied().unwrap_or_default();
    OWNER_BOUND.max(quiet_best * 2)
}

fn lane_of(ip: Ipv4Addr) -> Lane {
    Lane::Address(IpAddr::V4(ip))
}

/// How many of `ip`'s password checks are queued or running.
fn checks_in_flight(ip: Ipv4Addr) -> usize {
    let permits = passwords::permits();
    permits.waiting(lane_of(ip)) + permits.running(lane_of(ip))
}

/// Wait until `fact` holds, looking every few milliseconds; fails after `patience`.
async fn until(what: &str, patience: Duration, fact: impl Fn() -> bool) {
    askloop_tests::wait::until_some(what, patience, || async { fact().then_some(()) }).await;
}

async fn sessions_of(app: &TestApp, user_id: i64) -> u64 {
    sessions::Entity::find()
        .filter(sessions::Column::UserId.eq(user_id))
        .count(&app.db)
        .await
        .expect("counted")
}

/// With a bucket wide enough for the whole flood, every one of its 200 guesses reaches argon2:
/// this is the sharing of the permits alone, the worst case the bucket would otherwise cut short.
fn whole_flood_is_checked(config: &mut askloop::config::Config) {
    config.sign_in.address_burst = 10_000;
}

async fn a_real_sign_in_from_elsewhere_stays_fast_while_one_address_floods(app: TestApp) {
    let _turn = ONE_AT_A_TIME.lock().await;
    let (flood_from, owner_from) = (address(&app, 1), address(&app, 2));
    person(&app.db, "owner", false).await;
    let owner = client_from(owner_from);
    // One sign-in first, so the owner's connection is open before the flood starts.
    let mut quiet = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        let (_, body) = sign_in(&app, &owner, "owner", PASSWORD).await;
        quiet.push(started.elapsed());
        assert_eq!(body["data"]["login"]["user"]["handle"], "owner", "{body}");
    }

    let flood = client_from(flood_from);
    let answered = Arc::new(AtomicUsize::new(0));
    let guesses = (0..FLOOD_SIZE).map(|i| {
        let (app_url, flood, answered) = (app.url("/graphql"), flood.clone(), answered.clone());
        let handle = format!("guess-{i}-{:08x}", rand::random::<u32>());
        tokio::spawn(async move {
            let body: serde_json::Value = flood
                .post(app_url)
                .json(&serde_json::json!({"query": LOGIN, "variables": {"h": handle, "p": "a wrong guess"}}))
                .send()
                .await
                .expect("sent")
                .json()
                .await
                .expect("JSON");
            answered.fetch_add(1, Ordering::SeqCst);
            body
        })
    });
    let guesses: Vec<_> = guesses.collect();
    // The flood is in flight: most of it queued for its checks, none of it answered yet.
    until(
        "the flood queued for its password checks",
        Duration::from_secs(30),
        || checks_in_flight(flood_from) >= FLOOD_SIZE / 2,
    )
    .await;

    // Up to ten sign-ins, until one is within the bound: the best of them counts, so a moment
    // the machine spent elsewhere does not decide.
    let mut took = Vec::new();
    while took.len() < 10 && took.iter().all(|t| *t >= bound_on_this_machine(&quiet)) {
        let started = Instant::now();
        let (_, body) = sign_in(&app, &owner, "owner", PASSWORD).await;
        let elapsed = started.elapsed();
        assert_eq!(body["data"]["login"]["user"]["handle"], "owner", "{body}");
        // Measured during the flood: it still had checks waiting when this one was done.
        assert!(
            checks_in_flight(flood_from) > 0 && answered.load(Ordering::SeqCst) < FLOOD_SIZE,
            "the flood was over before the owner's sign-in was measured"
        );
        took.push(elapsed);
    }
    let best = took.iter().min().copied().unwrap_or_default();
    assert!(
        best < bound_on_this_machine(&quiet),
        "the owner's sign-ins took {took:?} while one address flooded ({quiet:?} before it)"
    );

    // The guesses answered are checked and refused as wrong: real work, not turned away. The
    // flood then hangs up, and its checks still waiting leave the queue with it.
    until("a guess was answered", Duration::from_secs(60), || {
        answered.load(Ordering::SeqCst) > 0
    })
    .await;
    for guess in &guesses {
        guess.abort();
    }
    for guess in guesses {
        if let Ok(body) = guess.await {
            assert_eq!(message(&body), WRONG, "{body}");
        }
    }
    until(
        "the flood's waiting checks left with it",
        Duration::from_secs(60),
        || checks_in_flight(flood_from) == 0,
    )
    .await;
}

async fn an_address_past_its_bucket_is_refused_unchecked_while_another_signs_in(app: TestApp) {
    let _turn = ONE_AT_A_TIME.lock().await;
    let (refused_from, elsewhere_from) = (address(&app, 3), address(&app, 4));
    let owner = person(&app.db, "owner", false).await;
    let burst = app.config().sign_in.address_burst;
    let stranger = client_from(refused_from);
    for i in 0..burst {
        let (_, body) = sign_in(&app, &stranger, &format!("nobody-{i}"), "guess").await;
        assert_eq!(message(&body), WRONG, "{body}");
    }
    let counted = app.login_throttle.len();
    let sessions_before = sessions_of(&app, owner.id).await;

    // Hold every password permit of the process: from now on no password can be checked
    // anywhere until they are given back, so whatever is answered meanwhile was answered
    // without a check.
    let permits = passwords::permits();
    let mut held = Vec::new();
    for _ in 0..permits.size() {
        held.push(permits.acquire(Share::local()).await.expect("a permit"));
    }
    let refusals = futures::future::join_all((0..20).map(|i| {
        let stranger = &stranger;
        let app = &app;
        async move {
            // New handles, and the owner's own handle with the right password: all refused.
            if i == 0 {
                sign_in(app, stranger, "owner", PASSWORD).await
            } else {
                sign_in(app, stranger, &format!("fresh-{i}"), "guess").await
            }
        }
    }));
    let refusals = tokio::time::timeout(Duration::from_secs(20), refusals)
        .await
        .expect("the refusals waited for a password check");
    for (headers, body) in &refusals {
        assert!(message(body).starts_with(ADDRESS_WAIT), "{body}");
        assert_eq!(error_code(body), Some("UNAUTHENTICATED"), "{body}");
        assert!(headers.get("set-cookie").is_none());
    }
    assert_eq!(
        checks_in_flight(refused_from),
        0,
        "a refused attempt queued"
    );
    assert_eq!(
        app.login_throttle.len(),
        counted,
        "a refused attempt was counted"
    );

    // Another address is not held back: its sign-in waits only for the permits, and once they
    // are free it signs in.
    let elsewhere = client_from(elsewhere_from);
    let signing_in = {
        let url = app.url("/graphql");
        tokio::spawn(async move {
            elsewhere
                .post(url)
                .json(&serde_json::json!({"query": LOGIN, "variables": {"h": "owner", "p": PASSWORD}}))
                .send()
                .await
                .expect("sent")
                .json::<serde_json::Value>()
                .await
                .expect("JSON")
        })
    };
    until(
        "the other address's check queued",
        Duration::from_secs(20),
        || permits.waiting(lane_of(elsewhere_from)) == 1,
    )
    .await;
    drop(held);
    let body = signing_in.await.expect("the sign-in ran");
    assert_eq!(body["data"]["login"]["user"]["handle"], "owner", "{body}");
    assert_eq!(sessions_of(&app, owner.id).await, sessions_before + 1);
}

on_both_backends! {
    config: whole_flood_is_checked;
    a_real_sign_in_from_elsewhere_stays_fast_while_one_address_floods,
}

on_both_backends! {
    config: |config| {
        config.sign_in.address_burst = 5;
        // No refill while the test runs.
        config.sign_in.address_refill = Duration::from_secs(600);
    };
    an_address_past_its_bucket_is_refused_unchecked_while_another_signs_in,
}
