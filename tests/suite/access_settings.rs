//! A person managing their own access: their API keys (with an optional expiry, refused once it
//! passes, last use recorded) and their sign-in sessions (where and when, end one, sign out
//! everywhere else), and open subscriptions ending as soon as the key or session they were
//! opened with is revoked or ended.

use askloop_tests::answers::{LOGIN, sign_in};
use std::time::Duration;

use askloop_tests::fixtures::open_niche;
use askloop_tests::people::{PASSWORD, Person, operator, person};
use askloop_tests::socket::{GqlSocket, Received};
use askloop_tests::{TestApp, error_code, on_both_backends};
use chrono::Utc;
use entity::{api_keys, sessions};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

const VIEWER: &str = "{ viewer { user { handle } } }";
const CREATE_KEY: &str = "mutation($name: String!, $at: DateTime) { createApiKey(name: $name, expiresAt: $at) { token key { id name prefix createdAt lastUsedAt expiresAt } } }";
const MY_KEYS: &str = "{ myApiKeys { id name prefix createdAt lastUsedAt expiresAt } }";
const MY_SESSIONS: &str =
    "{ mySessions { id createdAt lastSeenAt expiresAt userAgent clientAddress current } }";
const END_SESSION: &str = "mutation($id: ID!) { endSession(id: $id) }";
const SIGN_OUT_OTHERS: &str = "mutation { signOutOtherSessions }";
const REVOKE: &str = "mutation($id: ID!) { revokeApiKey(id: $id) }";
const QUEUE: &str =
    "subscription($slug: String!) { questionQueue(nicheSlug: $slug) { change question { id } } }";

/// A key `name` made by `owner` expiring at `at` (if any): its token and id.
async fn a_key(app: &TestApp, owner: &Person, name: &str, at: Option<String>) -> (String, String) {
    let created = app
        .graphql(
            Some(&owner.token),
            CREATE_KEY,
            json!({"name": name, "at": at}),
        )
        .await;
    assert!(created["errors"].is_null(), "{created}");
    let created = &created["data"]["createApiKey"];
    (
        created["token"].as_str().expect("a token").to_owned(),
        created["key"]["id"].as_str().expect("an id").to_owned(),
    )
}

/// Whether `token` still works: its viewer's handle, or the error code.
async fn who(app: &TestApp, token: &str) -> Result<String, String> {
    let me = app.graphql(Some(token), VIEWER, json!({})).await;
    match me["data"]["viewer"]["user"]["handle"].as_str() {
        Some(handle) => Ok(handle.to_owned()),
        None => Err(error_code(&me).unwrap_or("none").to_owned()),
    }
}

/// The status of a REST read made with `token`.
async fn rest_status(app: &TestApp, token: &str) -> u16 {
    app.client
        .get(app.url("/api/v1/niches/games/questions"))
        .bearer_auth(token)
        .send()
        .await
        .expect("sent")
        .status()
        .as_u16()
}

async fn my_api_keys_lists_my_unrevoked_keys_with_their_use_and_expiry(app: TestApp) {
    let ana = person(&app.db, "ana", false).await;
    let bo = person(&app.db, "bo", false).await;
    let expiry = (Utc::now() + chrono::Duration::days(30)).to_rfc3339();
    let (ci, _) = a_key(&app, &ana, "ci", Some(expiry.clone())).await;
    let (_, old_id) = a_key(&app, &ana, "old", None).await;
    a_key(&app, &bo, "bo's", None).await;
    let revoked = app
        .graphql(Some(&ana.token), REVOKE, json!({"id": old_id}))
        .await;
    assert_eq!(revoked["data"]["revokeApiKey"], true, "{revoked}");
    assert_eq!(who(&app, &ci).await, Ok("ana".into()));

    let keys = app.graphql(Some(&ana.token), MY_KEYS, json!({})).await;
    let keys = keys["data"]["myApiKeys"]
        .as_array()
        .unwrap_or_else(|| panic!("a list: {keys}"));
    assert_eq!(keys.len(), 1, "only ana's unrevoked key: {keys:?}");
    assert_eq!(keys[0]["name"], "ci");
    assert!(ci.starts_with(keys[0]["prefix"].as_str().expect("a prefix")));
    assert!(
        !keys[0].to_string().contains(&ci),
        "the key is never listed"
    );
    let expires = chrono::DateTime::parse_from_rfc3339(keys[0]["expiresAt"].as_str().expect("set"))
        .expect("a time");
    let asked = chrono::DateTime::parse_from_rfc3339(&expiry).expect("a time");
    assert!(
        (expires - asked).num_seconds().abs() < 1,
        "{expires} vs {asked}"
    );
    assert!(
        keys[0]["lastUsedAt"].is_string(),
        "using the key recorded it: {keys:?}"
    );
}

async fn a_keys_last_use_is_written_at_most_once_a_minute(app: TestApp) {
    let ana = person(&app.db, "ana", false).await;
    let (key, id) = a_key(&app, &ana, "ci", None).await;
    let last_used = |app: &TestApp| {
        let db = app.db.clone();
        let id: i64 = id.parse().expect("an id");
        async move {
            api_keys::Entity::find_by_id(id)
                .one(&db)
                .await
                .expect("query")
                .expect("the key")
                .last_used_at
        }
    };
    assert_eq!(last_used(&app).await, None, "never used yet");
    assert_eq!(who(&app, &key).await, Ok("ana".into()));
    let first = last_used(&app).await.expect("recorded on first use");
    assert_eq!(who(&app, &key).await, Ok("ana".into()));
    assert_eq!(
        last_used(&app).await,
        Some(first),
        "a second use within the minute writes nothing"
    );
    // A minute later (moved back in the database), the next use records it again.
    let earlier = first - chrono::Duration::minutes(2);
    api_keys::Entity::update_many()
        .col_expr(api_keys::Column::LastUsedAt, Expr::value(Some(earlier)))
        .exec(&app.db)
        .await
        .expect("moved back");
    assert_eq!(who(&app, &key).await, Ok("ana".into()));
    assert!(last_used(&app).await.expect("recorded") > first);
}

async fn an_expiry_in_the_past_or_too_far_ahead_is_refused_and_nothing_is_made(app: TestApp) {
    let ana = person(&app.db, "ana", false).await;
    for (at, says) in [
        (Utc::now() - chrono::Duration::minutes(1), "in the future"),
        (Utc::now() + chrono::Duration::days(6 * 366), "five years"),
    ] {
        let refused = app
            .graphql(
                Some(&ana.token),
                CREATE_KEY,
                json!({"name": "ci", "at": at.to_rfc3339()}),
            )
            .await;
        assert_eq!(error_code(&refused), Some("BAD_USER_INPUT"), "{refused}");
        let message = refused["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{message}");
    }
    assert_eq!(
        api_keys::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        0
    );
}

async fn an_expired_key_is_refused_like_a_revoked_one(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let soon = (Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let (expiring, _) = a_key(&app, &ana, "expiring", Some(soon)).await;
    let (revoked, revoked_id) = a_key(&app, &ana, "revoked", None).await;
    assert_eq!(who(&app, &expiring).await, Ok("ana".into()));
    assert_eq!(rest_status(&app, &expiring).await, 200);
    // Its hour passes.
    api_keys::Entity::update_many()
        .col_expr(
            api_keys::Column::ExpiresAt,
            Expr::value(Some(Utc::now() - chrono::Duration::seconds(1))),
        )
        .filter(api_keys::Column::Name.eq("expiring"))
        .exec(&app.db)
        .await
        .expect("expired");
    app.graphql(Some(&ana.token), REVOKE, json!({"id": revoked_id}))
        .await;

    let as_expired = app.graphql(Some(&expiring), VIEWER, json!({})).await;
    let as_revoked = app.graphql(Some(&revoked), VIEWER, json!({})).await;
    assert_eq!(
        error_code(&as_expired),
        Some("UNAUTHENTICATED"),
        "{as_expired}"
    );
    assert_eq!(as_expired, as_revoked, "the same answer");
    assert_eq!(rest_status(&app, &expiring).await, 401);
    assert_eq!(rest_status(&app, &revoked).await, 401);
    // A socket cannot be opened with it either.
    let mut socket = GqlSocket::open(&app.base).await;
    socket
        .send(json!({"type": "connection_init", "payload": {"token": expiring}}))
        .await;
    match socket.receive(Duration::from_secs(5)).await {
        Received::Closed(code) => assert_eq!(code, Some(4403)),
        other => panic!("expected a close, got {other:?}"),
    }
}

async fn my_sessions_says_where_and_when_and_which_is_this_one(app: TestApp) {
    person(&app.db, "ana", false).await;
    let bo = person(&app.db, "bo", false).await;
    let laptop = sign_in(&app, "ana", "Laptop browser/1.0").await;
    let phone = sign_in(
        &app,
        "ana",
        &format!("Phone browser/2.0 {}", "x".repeat(500)),
    )
    .await;
    sign_in(&app, "bo", "Bo's browser").await;

    let listed = app.graphql(Some(&phone), MY_SESSIONS, json!({})).await;
    let listed = listed["data"]["mySessions"]
        .as_array()
        .unwrap_or_else(|| panic!("a list: {listed}"));
    // The fixture's session and the two sign-ins; none of bo's.
    assert_eq!(listed.len(), 3, "{listed:?}");
    let current: Vec<&Value> = listed.iter().filter(|s| s["current"] == true).collect();
    assert_eq!(current.len(), 1, "{listed:?}");
    let agent = current[0]["userAgent"].as_str().expect("the user agent");
    assert!(agent.starts_with("Phone browser/2.0"), "{agent}");
    assert!(agent.chars().count() <= 200, "kept short: {}", agent.len());
    assert_eq!(current[0]["clientAddress"], "127.0.0.1");
    assert!(
        listed
            .iter()
            .any(|s| s["userAgent"] == "Laptop browser/1.0" && s["current"] == false),
        "{listed:?}"
    );
    assert!(!json!(listed).to_string().contains("Bo's"), "{listed:?}");
    // Asked with the laptop's token, the laptop is this one.
    let from_laptop = app.graphql(Some(&laptop), MY_SESSIONS, json!({})).await;
    let this_one = from_laptop["data"]["mySessions"]
        .as_array()
        .expect("a list")
        .iter()
        .find(|s| s["current"] == true)
        .cloned()
        .expect("one is current");
    assert_eq!(this_one["userAgent"], "Laptop browser/1.0");
    // Nobody signed in is told so.
    let anonymous = app.graphql(None, MY_SESSIONS, json!({})).await;
    assert_eq!(
        error_code(&anonymous),
        Some("UNAUTHENTICATED"),
        "{anonymous}"
    );
    let anonymous = app.graphql(None, MY_KEYS, json!({})).await;
    assert_eq!(
        error_code(&anonymous),
        Some("UNAUTHENTICATED"),
        "{anonymous}"
    );
    assert_eq!(who(&app, &bo.token).await, Ok("bo".into()));
}

async fn ending_someone_elses_session_is_not_found_and_changes_nothing(app: TestApp) {
    let ana = person(&app.db, "ana", false).await;
    let bo = person(&app.db, "bo", false).await;
    let bos = sessions::Entity::find()
        .filter(sessions::Column::UserId.eq(bo.id))
        .one(&app.db)
        .await
        .expect("query")
        .expect("bo's session");
    for id in [bos.id.to_string(), "999999".into(), "not-a-number".into()] {
        let refused = app
            .graphql(Some(&ana.token), END_SESSION, json!({"id": id}))
            .await;
        assert_eq!(error_code(&refused), Some("NOT_FOUND"), "{id}: {refused}");
    }
    assert_eq!(who(&app, &bo.token).await, Ok("bo".into()));
    assert_eq!(who(&app, &ana.token).await, Ok("ana".into()));
    assert_eq!(
        sessions::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        2
    );
}

async fn ending_one_of_my_sessions_stops_it_and_audits_it(app: TestApp) {
    person(&app.db, "ana", false).await;
    let laptop = sign_in(&app, "ana", "Laptop").await;
    let phone = sign_in(&app, "ana", "Phone").await;
    let listed = app.graphql(Some(&laptop), MY_SESSIONS, json!({})).await;
    let phone_id = listed["data"]["mySessions"]
        .as_array()
        .expect("a list")
        .iter()
        .find(|s| s["userAgent"] == "Phone")
        .and_then(|s| s["id"].as_str())
        .expect("the phone's session")
        .to_owned();
    let ended = app
        .graphql(Some(&laptop), END_SESSION, json!({"id": phone_id}))
        .await;
    assert_eq!(ended["data"]["endSession"], true, "{ended}");
    assert_eq!(who(&app, &phone).await, Err("UNAUTHENTICATED".into()));
    assert_eq!(who(&app, &laptop).await, Ok("ana".into()));
    let audited = entity::audit_log::Entity::find()
        .filter(entity::audit_log::Column::Action.eq("session.ended"))
        .filter(entity::audit_log::Column::SubjectId.eq(phone_id.clone()))
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(audited, 1);
    // Ended already: not found.
    let again = app
        .graphql(Some(&laptop), END_SESSION, json!({"id": phone_id}))
        .await;
    assert_eq!(error_code(&again), Some("NOT_FOUND"), "{again}");
}

async fn signing_out_everywhere_else_keeps_this_session_only(app: TestApp) {
    let ana = person(&app.db, "ana", false).await;
    let bo = person(&app.db, "bo", false).await;
    let laptop = sign_in(&app, "ana", "Laptop").await;
    let phone = sign_in(&app, "ana", "Phone").await;
    let out = app.graphql(Some(&laptop), SIGN_OUT_OTHERS, json!({})).await;
    assert_eq!(out["data"]["signOutOtherSessions"], 2, "{out}");
    assert_eq!(who(&app, &laptop).await, Ok("ana".into()));
    assert_eq!(who(&app, &phone).await, Err("UNAUTHENTICATED".into()));
    assert_eq!(who(&app, &ana.token).await, Err("UNAUTHENTICATED".into()));
    assert_eq!(who(&app, &bo.token).await, Ok("bo".into()), "bo's stay");
    let listed = app.graphql(Some(&laptop), MY_SESSIONS, json!({})).await;
    assert_eq!(
        listed["data"]["mySessions"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
    let again = app.graphql(Some(&laptop), SIGN_OUT_OTHERS, json!({})).await;
    assert_eq!(again["data"]["signOutOtherSessions"], 0, "{again}");
}

async fn session_writes_with_a_cookie_from_another_site_are_refused(app: TestApp) {
    person(&app.db, "ana", false).await;
    let laptop = sign_in(&app, "ana", "Laptop").await;
    let phone = sign_in(&app, "ana", "Phone").await;
    for (query, variables) in [
        (SIGN_OUT_OTHERS, json!({})),
        (END_SESSION, json!({"id": "1"})),
    ] {
        let refused: Value = reqwest::Client::new()
            .post(app.url("/graphql"))
            .header("cookie", format!("askloop_session={laptop}"))
            .header("origin", "http://evil.example")
            .json(&json!({"query": query, "variables": variables}))
            .send()
            .await
            .expect("sent")
            .json()
            .await
            .expect("JSON");
        assert_eq!(error_code(&refused), Some("FORBIDDEN"), "{refused}");
    }
    assert_eq!(who(&app, &phone).await, Ok("ana".into()));
    assert_eq!(
        sessions::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        3
    );
}

/// ana (an operator of `games`) and bo, each subscribed to its queue on a socket of their own:
/// ana's opened with `token`.
async fn subscribed(app: &TestApp, ana_token: &str, bo: &Person) -> (GqlSocket, GqlSocket) {
    let mut anas = GqlSocket::connect(&app.base, Some(ana_token)).await;
    anas.subscribe("q", QUEUE, json!({"slug": "games"})).await;
    let mut bos = GqlSocket::connect(&app.base, Some(&bo.token)).await;
    bos.subscribe("q", QUEUE, json!({"slug": "games"})).await;
    app.until_subscriptions_served(2).await;
    (anas, bos)
}

/// The socket closes with 4403 within a few seconds (the periodic check is a minute away).
async fn closes_with_4403_promptly(socket: &mut GqlSocket) {
    match socket.receive(Duration::from_secs(5)).await {
        Received::Closed(code) => assert_eq!(code, Some(4403)),
        other => panic!("expected a 4403 close, got {other:?}"),
    }
}

async fn a_subscription_opened_with_a_key_ends_as_soon_as_the_key_is_revoked(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bo = operator(&app.db, "games", "bo").await;
    let (key, id) = a_key(&app, &ana, "live", None).await;
    let (mut anas, mut bos) = subscribed(&app, &key, &bo).await;
    let revoked = app
        .graphql(Some(&ana.token), REVOKE, json!({"id": id}))
        .await;
    assert_eq!(revoked["data"]["revokeApiKey"], true, "{revoked}");
    closes_with_4403_promptly(&mut anas).await;
    // Someone else's subscription goes on.
    let question = app.ask("games", "after").await;
    let added = bos.next_data("q").await;
    assert_eq!(
        added["data"]["questionQueue"]["question"]["id"],
        question.to_string()
    );
}

async fn a_subscription_ends_as_soon_as_its_session_is_ended_or_signed_out_elsewhere(app: TestApp) {
    open_niche(&app.db, "games").await;
    operator(&app.db, "games", "ana").await;
    let bo = operator(&app.db, "games", "bo").await;
    let laptop = sign_in(&app, "ana", "Laptop").await;
    let phone = sign_in(&app, "ana", "Phone").await;
    let tablet = sign_in(&app, "ana", "Tablet").await;
    let (mut on_phone, _bos) = subscribed(&app, &phone, &bo).await;
    let mut on_tablet = GqlSocket::connect(&app.base, Some(&tablet)).await;
    on_tablet
        .subscribe("q", QUEUE, json!({"slug": "games"}))
        .await;
    let listed = app.graphql(Some(&laptop), MY_SESSIONS, json!({})).await;
    let phone_id = listed["data"]["mySessions"]
        .as_array()
        .expect("a list")
        .iter()
        .find(|s| s["userAgent"] == "Phone")
        .and_then(|s| s["id"].as_str())
        .expect("the phone's session")
        .to_owned();
    let ended = app
        .graphql(Some(&laptop), END_SESSION, json!({"id": phone_id}))
        .await;
    assert_eq!(ended["data"]["endSession"], true, "{ended}");
    closes_with_4403_promptly(&mut on_phone).await;
    let out = app.graphql(Some(&laptop), SIGN_OUT_OTHERS, json!({})).await;
    assert!(out["errors"].is_null(), "{out}");
    closes_with_4403_promptly(&mut on_tablet).await;
    // Signing out ends the socket opened with that session too.
    let mut on_laptop = GqlSocket::connect(&app.base, Some(&laptop)).await;
    on_laptop
        .subscribe("q", QUEUE, json!({"slug": "games"}))
        .await;
    // Only bo's and the laptop's are left: the phone's and the tablet's were closed.
    app.until_exactly_subscriptions_served(2).await;
    let out = app
        .graphql(Some(&laptop), "mutation { logout }", json!({}))
        .await;
    assert_eq!(out["data"]["logout"], true, "{out}");
    closes_with_4403_promptly(&mut on_laptop).await;
}

async fn signing_out_everywhere_else_with_an_api_key_ends_every_session_but_not_the_key(
    app: TestApp,
) {
    let ana = person(&app.db, "ana", false).await;
    let laptop = sign_in(&app, "ana", "Laptop").await;
    let (key, _) = a_key(&app, &ana, "ci", None).await;
    let out = app.graphql(Some(&key), SIGN_OUT_OTHERS, json!({})).await;
    assert_eq!(out["data"]["signOutOtherSessions"], 2, "{out}");
    assert_eq!(who(&app, &laptop).await, Err("UNAUTHENTICATED".into()));
    assert_eq!(who(&app, &ana.token).await, Err("UNAUTHENTICATED".into()));
    assert_eq!(who(&app, &key).await, Ok("ana".into()));
    let listed = app.graphql(Some(&key), MY_SESSIONS, json!({})).await;
    assert_eq!(listed["data"]["mySessions"], json!([]), "{listed}");
}

/// Session and key writes that read before they write, many at once on one person: every one
/// is answered (none fails inside), and what is left is exactly what they said.
async fn session_and_key_writes_at_once_are_all_answered(app: TestApp) {
    let ana = person(&app.db, "ana", false).await;
    let laptop = sign_in(&app, "ana", "Laptop").await;
    let mut others = Vec::new();
    for n in 0..6 {
        others.push(sign_in(&app, "ana", &format!("Phone {n}")).await);
    }
    let listed = app.graphql(Some(&laptop), MY_SESSIONS, json!({})).await;
    let ids: Vec<String> = listed["data"]["mySessions"]
        .as_array()
        .expect("a list")
        .iter()
        .filter(|s| {
            s["userAgent"]
                .as_str()
                .is_some_and(|ua| ua.starts_with("Phone"))
        })
        .filter_map(|s| s["id"].as_str().map(str::to_owned))
        .take(3)
        .collect();
    let (_, key_id) = a_key(&app, &ana, "ci", None).await;
    let mut writes = Vec::new();
    for id in &ids {
        writes.push((Some(laptop.clone()), END_SESSION, json!({ "id": id })));
    }
    writes.push((Some(laptop.clone()), REVOKE, json!({ "id": key_id })));
    for _ in 0..3 {
        writes.push((
            Some(laptop.clone()),
            CREATE_KEY,
            json!({"name": "more", "at": null}),
        ));
        writes.push((None, LOGIN, json!({"h": "ana", "p": PASSWORD})));
    }
    let answers = futures::future::join_all(
        writes
            .iter()
            .map(|(token, query, vars)| app.graphql(token.as_deref(), query, vars.clone())),
    )
    .await;
    for answer in &answers {
        assert!(answer["errors"].is_null(), "{answer}");
    }
    // Of the first session, the laptop and six phones, three phones ended; three sign-ins added.
    let listed = app.graphql(Some(&laptop), MY_SESSIONS, json!({})).await;
    assert_eq!(
        listed["data"]["mySessions"].as_array().map(Vec::len),
        Some(8 - 3 + 3),
        "{listed}"
    );
    let keys = app.graphql(Some(&laptop), MY_KEYS, json!({})).await;
    assert_eq!(
        keys["data"]["myApiKeys"].as_array().map(Vec::len),
        Some(3),
        "{keys}"
    );
}

on_both_backends!(
    session_and_key_writes_at_once_are_all_answered,
    my_api_keys_lists_my_unrevoked_keys_with_their_use_and_expiry,
    a_keys_last_use_is_written_at_most_once_a_minute,
    an_expiry_in_the_past_or_too_far_ahead_is_refused_and_nothing_is_made,
    an_expired_key_is_refused_like_a_revoked_one,
    my_sessions_says_where_and_when_and_which_is_this_one,
    ending_someone_elses_session_is_not_found_and_changes_nothing,
    ending_one_of_my_sessions_stops_it_and_audits_it,
    signing_out_everywhere_else_keeps_this_session_only,
    signing_out_everywhere_else_with_an_api_key_ends_every_session_but_not_the_key,
    session_writes_with_a_cookie_from_another_site_are_refused,
    a_subscription_opened_with_a_key_ends_as_soon_as_the_key_is_revoked,
    a_subscription_ends_as_soon_as_its_session_is_ended_or_signed_out_elsewhere,
);
