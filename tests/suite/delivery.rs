//! Answers reach the agent: the signed outbox against a real receiver that is down, failing,
//! hanging or fine; a worker killed mid-send; two instances sharing 1,000 deliveries; expiry end
//! to end; the agent's lookup (with its long wait); and the admin's view and redelivery.

use askloop_tests::answers::early_access;
use std::time::Duration;

use askloop::config::Config;
use askloop_tests::fixtures::{open_niche, question_body};
use askloop_tests::people::{Person, operator, person};
use askloop_tests::receiver::{Receiver, Reply, reserve_port};
use askloop_tests::socket::GqlSocket;
use askloop_tests::wait;
use askloop_tests::{Backend, SECRET, TestApp, error_code, on_both_backends};
use entity::deliveries::{self, DeliveryStatus};
use entity::delivery_attempts;
use entity::{agent_questions, audit_log};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);

/// Fast retry timings, so a test sees several attempts in well under a second.
fn quick(config: &mut Config, webhook: Option<&str>) {
    config.webhook_url = webhook.map(str::to_owned);
    config.delivery.timeout = Duration::from_millis(500);
    config.delivery.lease = Duration::from_secs(2);
    config.delivery.retry_base = Duration::from_millis(50);
    config.delivery.poll = Duration::from_millis(50);
    config.delivery.sweep_every = Duration::from_millis(100);
}

async fn spawn_delivering(backend: Backend, webhook: &str) -> Option<TestApp> {
    TestApp::spawn_with(backend, |c| quick(c, Some(webhook))).await
}

/// A question in `games` answered by an operator; its id.
async fn answered_question(app: &TestApp) -> i64 {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let id = app.ask("games", "q-1").await;
    let answered = app
        .answer(&ana.token, early_access(id, Some("The 1.0 date.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    id
}

async fn the_delivery(app: &TestApp) -> deliveries::Model {
    deliveries::Entity::find()
        .one(&app.db)
        .await
        .expect("query")
        .expect("a delivery row")
}

async fn attempts(app: &TestApp, delivery_id: i64) -> Vec<delivery_attempts::Model> {
    delivery_attempts::Entity::find()
        .filter(delivery_attempts::Column::DeliveryId.eq(delivery_id))
        .order_by_asc(delivery_attempts::Column::Id)
        .all(&app.db)
        .await
        .expect("query")
}

pub(crate) async fn wait_for_status(app: &TestApp, status: DeliveryStatus) -> deliveries::Model {
    let wanted = &status;
    wait::until_some(
        &format!("the delivery to be {status:?}"),
        WAIT,
        || async move {
            let delivery = the_delivery(app).await;
            (delivery.status == *wanted).then_some(delivery)
        },
    )
    .await
}

fn timestamp_of(signature: &str) -> &str {
    signature
        .split(',')
        .find_map(|part| part.strip_prefix("t="))
        .unwrap_or_default()
}

/// Deliver quickly to an agent on a free port that is down until a test starts a [`Receiver`]
/// there with [`Receiver::start_for`].
fn delivering_to_an_agent_not_yet_up(config: &mut Config) {
    quick(config, Some(&Receiver::url_for(reserve_port())));
}

/// An answered question whose delivery failed at least three times while the agent was down,
/// then went through once the agent came up: its question id, the agent, and the delivery.
async fn delivered_after_the_agent_came_up(app: &TestApp) -> (i64, Receiver, deliveries::Model) {
    let question = answered_question(app).await;
    wait::until("three attempts recorded", || async move {
        attempts(app, the_delivery(app).await.id).await.len() >= 3
    })
    .await;
    let receiver = Receiver::start_for(app, Vec::new()).await;
    let delivery = wait_for_status(app, DeliveryStatus::Delivered).await;
    (question, receiver, delivery)
}

async fn an_answer_reaches_the_agent_once_it_comes_up_as_one_signed_envelope(app: TestApp) {
    let (question, receiver, delivery) = delivered_after_the_agent_came_up(&app).await;
    let received = receiver.received();
    assert_eq!(received.len(), 1, "delivered once: {received:?}");
    let envelope = &received[0].envelope;
    assert!(received[0].verified, "{}", received[0].signature);
    assert_eq!(envelope["id"], json!(delivery.envelope_id));
    assert_eq!(envelope["type"], "expert_answer.created");
    assert_eq!(envelope["version"], 1);
    assert_eq!(envelope["producer"], "askloop");
    assert_eq!(envelope["payload"]["questionId"], json!(question));
    assert_eq!(envelope["payload"]["externalId"], "q-1");
    assert_eq!(envelope["payload"]["optionId"], "ea");
    assert_eq!(envelope["payload"]["answer"], "The 1.0 date.");
    assert_eq!(envelope["payload"]["answeredBy"], "ana");
}

async fn every_attempt_while_the_agent_is_down_is_recorded_as_a_retry(app: TestApp) {
    let (_, _receiver, delivery) = delivered_after_the_agent_came_up(&app).await;
    let log = attempts(&app, delivery.id).await;
    assert!(log.len() >= 4, "{log:?}");
    let (failed, last) = log.split_at(log.len() - 1);
    assert!(failed.iter().all(|a| {
        a.status_code.is_none()
            && a.outcome == "retry"
            && a.error
                .as_deref()
                .is_some_and(|e| e.contains("could not reach"))
    }));
    assert_eq!(last[0].status_code, Some(200));
    assert_eq!(last[0].outcome, "delivered");
    assert_eq!(delivery.attempts, i64::try_from(log.len()).unwrap_or(0));
}

async fn a_delivered_envelope_is_not_sent_again(app: TestApp) {
    let (_, receiver, _) = delivered_after_the_agent_came_up(&app).await;
    // Time is the fact: an envelope not sent again is an absence, watched over many worker polls
    // (the retry base is 50 ms); askloop has no event to wait for instead.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.received().len(), 1);
}

on_both_backends! {
    config: delivering_to_an_agent_not_yet_up;
    an_answer_reaches_the_agent_once_it_comes_up_as_one_signed_envelope,
    every_attempt_while_the_agent_is_down_is_recorded_as_a_retry,
    a_delivered_envelope_is_not_sent_again,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_500_is_retried_once_honouring_retry_after_and_signed_afresh() {
    let receiver = Receiver::start(vec![Reply::Status(500, Some(1))]).await;
    let app = spawn_delivering(Backend::Sqlite, &receiver.url)
        .await
        .expect("an app");
    answered_question(&app).await;
    let delivery = wait_for_status(&app, DeliveryStatus::Delivered).await;
    let received = receiver.received();
    assert_eq!(received.len(), 2, "one retry");
    assert_eq!(received[0].envelope["id"], received[1].envelope["id"]);
    assert_eq!(received[0].body, received[1].body, "the same envelope");
    assert!(received.iter().all(|r| r.verified));
    // Retry-After: 1 outweighs the 50 ms backoff, so the retry is signed at a later second.
    let (first, second) = (
        timestamp_of(&received[0].signature)
            .parse::<i64>()
            .unwrap_or(0),
        timestamp_of(&received[1].signature)
            .parse::<i64>()
            .unwrap_or(0),
    );
    assert!(second > first, "{first} then {second}");
    let log = attempts(&app, delivery.id).await;
    assert_eq!(
        log.iter()
            .map(|a| (a.status_code, a.outcome.as_str()))
            .collect::<Vec<_>>(),
        vec![(Some(500), "retry"), (Some(200), "delivered")]
    );
    assert_eq!(log[0].error.as_deref(), Some("HTTP 500"));
    assert!((log[1].attempted_at - log[0].attempted_at) >= chrono::Duration::milliseconds(1000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_redirect_is_a_failed_attempt_and_the_envelope_goes_nowhere_else() {
    let elsewhere = Receiver::start(vec![]).await;
    let receiver = Receiver::start(vec![Reply::Redirect(307, elsewhere.addr())]).await;
    let app = spawn_delivering(Backend::Sqlite, &receiver.url)
        .await
        .expect("an app");
    answered_question(&app).await;
    let delivery = wait_for_status(&app, DeliveryStatus::Delivered).await;
    let log = attempts(&app, delivery.id).await;
    assert_eq!(
        log.iter()
            .map(|a| (a.status_code, a.outcome.as_str()))
            .collect::<Vec<_>>(),
        vec![(Some(307), "retry"), (Some(200), "delivered")]
    );
    let error = log[0].error.as_deref().unwrap_or_default();
    assert!(
        error.contains("307") && error.contains(&elsewhere.url) && error.contains("not followed"),
        "{error}"
    );
    assert_eq!(
        receiver.received().len(),
        2,
        "the retry came back to the agent"
    );
    assert!(
        elsewhere.received().is_empty(),
        "the signed envelope was sent to the redirect's host"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hanging_agent_times_out_and_the_retry_follows() {
    let receiver = Receiver::start(vec![Reply::Hang]).await;
    let app = spawn_delivering(Backend::Sqlite, &receiver.url)
        .await
        .expect("an app");
    answered_question(&app).await;
    let delivery = wait_for_status(&app, DeliveryStatus::Delivered).await;
    let received = receiver.received();
    assert_eq!(received.len(), 2);
    assert_eq!(received[0].envelope["id"], received[1].envelope["id"]);
    let log = attempts(&app, delivery.id).await;
    assert_eq!(log.len(), 2);
    assert_eq!(log[0].status_code, None);
    assert!(
        log[0]
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("no answer within")),
        "{log:?}"
    );
    assert!(log[0].duration_ms >= 500, "{log:?}");
    assert_eq!(log[1].status_code, Some(200));
}

/// `askloop serve` as its own process, delivering to `webhook`.
fn serve_process(database_url: &str, webhook: &str) -> std::process::Child {
    std::process::Command::new(askloop_tests::askloop_binary())
        .arg("serve")
        .env("DATABASE_URL", database_url)
        .env("ASKLOOP_BIND", "127.0.0.1:0")
        .env("CHOVY_SIGNING_SECRET", SECRET)
        .env("CHOVY_WEBHOOK_URL", webhook)
        .env("ASKLOOP_DELIVERY_TIMEOUT_MS", "3000")
        .env("ASKLOOP_DELIVERY_LEASE_MS", "4000")
        .env("ASKLOOP_DELIVERY_POLL_MS", "50")
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("askloop starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killed_mid_send_the_delivery_goes_out_again_with_the_same_envelope_id() {
    // The in-process app takes the answer (and sends nothing: it has no webhook URL).
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    answered_question(&app).await;
    let receiver = Receiver::start(vec![Reply::Hang]).await;

    let mut first = serve_process(&app.database_url, &receiver.url);
    receiver
        .wait_until(WAIT, "the first attempt", |r| r.len() == 1)
        .await;
    // Claimed and in flight: kill it before it can record anything.
    first.kill().expect("killed");
    let _ = first.wait();
    let claimed = the_delivery(&app).await;
    assert_eq!(claimed.status, DeliveryStatus::Pending);
    assert!(claimed.claim_token.is_some(), "{claimed:?}");
    assert!(attempts(&app, claimed.id).await.is_empty());

    let mut second = serve_process(&app.database_url, &receiver.url);
    let delivered = wait_for_status(&app, DeliveryStatus::Delivered).await;
    let _ = second.kill();
    let _ = second.wait();
    let received = receiver.received();
    assert_eq!(received.len(), 2, "sent again, not lost");
    assert_eq!(received[0].envelope["id"], json!(delivered.envelope_id));
    assert_eq!(received[1].envelope["id"], json!(delivered.envelope_id));
    assert!(received.iter().all(|r| r.verified));
    let log = attempts(&app, delivered.id).await;
    assert_eq!(
        log.len(),
        1,
        "only the finished attempt is recorded: {log:?}"
    );
    assert_eq!(log[0].outcome, "delivered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_share_a_thousand_deliveries_without_sending_any_twice() {
    use askloop::service::agents::outbox::{self, EventType, NewEvent};

    let Some(app) = TestApp::spawn(Backend::Postgres).await else {
        return eprintln!("skipped: TEST_DATABASE_URL is not set");
    };
    let niche = open_niche(&app.db, "games").await;
    let now = chrono::Utc::now();
    let txn = app.db.begin_write().await.expect("begin");
    for n in 0..1000 {
        outbox::enqueue(
            &txn,
            NewEvent {
                event: EventType::QuestionExpired,
                niche_id: niche.id,
                question_id: None,
                user_id: None,
                payload: json!({ "n": n }),
            },
            now,
        )
        .await
        .expect("enqueued");
    }
    txn.commit().await.expect("committed");
    let receiver = Receiver::start(Vec::new()).await;
    let one = app
        .another_instance_with(|c| quick(c, Some(&receiver.url)))
        .await;
    let two = app
        .another_instance_with(|c| quick(c, Some(&receiver.url)))
        .await;
    receiver
        .wait_until(Duration::from_secs(120), "1,000 envelopes", |r| {
            r.len() >= 1000
        })
        .await;
    // Count once nothing is left in flight: every delivery is recorded as delivered.
    app.until_every_delivery_delivered().await;
    let counts = receiver.counts();
    assert_eq!(counts.len(), 1000);
    assert!(
        counts.values().all(|&n| n == 1),
        "an envelope arrived twice"
    );
    assert!(receiver.overlaps().is_empty(), "{:?}", receiver.overlaps());
    assert!(receiver.received().iter().all(|r| r.verified));
    let delivered = deliveries::Entity::find()
        .filter(deliveries::Column::Status.eq(DeliveryStatus::Delivered))
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(delivered, 1000);
    assert_eq!(
        delivery_attempts::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        1000
    );
    one.stop().await;
    two.stop().await;
}

/// A question in `games` that waits 60 s at most; its id and the intake's answer.
async fn a_short_question(app: &TestApp) -> (i64, Value) {
    let mut body = question_body("games", "short");
    body["payload"]["expiresInSeconds"] = json!(60);
    let response = app
        .post_signed("/api/v1/internal/expert-questions", &body.to_string())
        .await;
    assert_eq!(response.status(), 201);
    let created: Value = response.json().await.expect("JSON");
    let id = created["question"]["id"].as_i64().expect("an id");
    (id, created)
}

/// A minute is long for a test: move the question's time into the past instead of waiting.
async fn move_past_its_time(app: &TestApp, id: i64) {
    agent_questions::Entity::update_many()
        .col_expr(
            agent_questions::Column::ExpiresAt,
            sea_orm::sea_query::Expr::value(chrono::Utc::now() - chrono::Duration::seconds(1)),
        )
        .filter(agent_questions::Column::Id.eq(id))
        .exec(&app.db)
        .await
        .expect("moved");
}

/// How many audit rows record an expiry.
async fn expiries_audited(app: &TestApp) -> u64 {
    audit_log::Entity::find()
        .filter(audit_log::Column::Action.eq("question.expired"))
        .count(&app.db)
        .await
        .expect("count")
}

/// A short question in `games` that the sweeper has expired, with an operator of `games`.
async fn an_expired_question(app: &TestApp) -> (i64, Person) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let (id, _) = a_short_question(app).await;
    move_past_its_time(app, id).await;
    wait::until("the question to be expired", || async move {
        expiries_audited(app).await > 0
    })
    .await;
    (id, ana)
}

async fn a_question_waits_the_seconds_the_agent_asked_for(app: TestApp) {
    open_niche(&app.db, "games").await;
    let (_, created) = a_short_question(&app).await;
    let expires_at = chrono::DateTime::parse_from_rfc3339(
        created["question"]["expiresAt"]
            .as_str()
            .unwrap_or_default(),
    )
    .expect("expiresAt");
    let lifetime = expires_at.with_timezone(&chrono::Utc) - chrono::Utc::now();
    assert!((55..=60).contains(&lifetime.num_seconds()), "{lifetime}");
}

async fn a_question_past_its_time_leaves_the_queue_as_expired(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let (id, _) = a_short_question(&app).await;
    let mut socket = GqlSocket::connect(&app.base, Some(&ana.token)).await;
    socket
        .subscribe(
            "q",
            "subscription { questionQueue(nicheSlug: \"games\") { change question { id status } } }",
            json!({}),
        )
        .await;
    app.until_subscriptions_served(1).await;
    move_past_its_time(&app, id).await;
    // The question's own arrival may still be on its way to the subscriber: skip past it.
    let mut removed = socket.next_data("q").await;
    if removed["data"]["questionQueue"]["change"] == "ADDED" {
        removed = socket.next_data("q").await;
    }
    assert_eq!(
        removed["data"]["questionQueue"]["change"], "REMOVED",
        "{removed}"
    );
    assert_eq!(
        removed["data"]["questionQueue"]["question"]["status"],
        "EXPIRED"
    );
}

async fn a_question_past_its_time_is_expired_and_audited_once(app: TestApp) {
    let (id, _) = an_expired_question(&app).await;
    let question = agent_questions::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .expect("query")
        .expect("the question");
    assert_eq!(
        question.status,
        entity::agent_questions::QuestionStatus::Expired
    );
    // Several sweeps later, still once. Time is the fact: an absence, watched over several
    // sweeps; askloop exposes no count of sweeps to wait for instead.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(expiries_audited(&app).await, 1);
}

async fn the_agent_is_told_once_that_its_question_expired(app: TestApp) {
    let receiver = Receiver::start_for(&app, Vec::new()).await;
    let (id, _) = an_expired_question(&app).await;
    receiver
        .wait_until(WAIT, "the expiry event", |r| !r.is_empty())
        .await;
    let envelope = &receiver.received()[0].envelope;
    assert_eq!(envelope["type"], "expert_question.expired");
    assert_eq!(envelope["payload"]["externalId"], "short");
    assert_eq!(envelope["payload"]["questionId"], json!(id));
    // Expired once, told once: every delivery is recorded as delivered, so none is in flight.
    app.until_every_delivery_delivered().await;
    assert_eq!(receiver.received().len(), 1);
}

async fn an_expired_question_cannot_be_answered(app: TestApp) {
    let (id, ana) = an_expired_question(&app).await;
    let late = app
        .answer(&ana.token, early_access(id, Some("The 1.0 date.")))
        .await;
    assert_eq!(error_code(&late), Some("CONFLICT"), "{late}");
    assert!(late.to_string().contains("expired"), "{late}");
    let rest = app
        .client
        .post(app.url(&format!("/api/v1/niches/games/questions/{id}/answer")))
        .bearer_auth(&ana.token)
        .json(&json!({"kind": "answered", "optionId": "ea"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(rest.status(), 409);
}

on_both_backends! {
    config: delivering_to_an_agent_not_yet_up;
    a_question_waits_the_seconds_the_agent_asked_for,
    a_question_past_its_time_leaves_the_queue_as_expired,
    a_question_past_its_time_is_expired_and_audited_once,
    the_agent_is_told_once_that_its_question_expired,
    an_expired_question_cannot_be_answered,
}

const LOOKUP: &str = "/api/v1/internal/expert-questions/lookup";

async fn lookup(app: &TestApp, body: Value) -> (u16, Value) {
    let response = app.post_signed(LOOKUP, &body.to_string()).await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A question `q-1` in `games` and an operator of `games` who can answer it.
async fn a_question_and_its_answerer(app: &TestApp) -> (i64, Person) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let id = app.ask("games", "q-1").await;
    (id, ana)
}

async fn the_agent_reads_its_questions_in_the_order_it_asked(app: TestApp) {
    let (id, _) = a_question_and_its_answerer(&app).await;
    let (status, read) = lookup(
        &app,
        json!({"nicheSlug": "games", "externalIds": ["q-1", "nope"]}),
    )
    .await;
    assert_eq!(status, 200, "{read}");
    assert_eq!(read["questions"][0]["found"], true);
    assert_eq!(read["questions"][0]["id"], json!(id));
    assert_eq!(read["questions"][0]["status"], "open");
    assert_eq!(read["questions"][0]["answer"], Value::Null);
    assert_eq!(
        read["questions"][1],
        json!({"externalId": "nope", "found": false})
    );
}

async fn a_waiting_lookup_is_held_until_the_question_is_answered(app: TestApp) {
    let (id, ana) = a_question_and_its_answerer(&app).await;
    let listening = app.live.listeners();
    let waiting = {
        let (base, body) = (
            app.base.clone(),
            json!({"nicheSlug": "games", "externalIds": ["q-1"], "waitSeconds": 30}).to_string(),
        );
        let signature = app.signature(&body);
        tokio::spawn(async move {
            reqwest::Client::new()
                .post(format!("{base}{LOOKUP}"))
                .header("content-type", "application/json")
                .header(askloop::domain::signing::SIGNATURE_HEADER, signature)
                .body(body)
                .send()
                .await
                .expect("sent")
                .json::<Value>()
                .await
                .expect("JSON")
        })
    };
    // The lookup listens for a change before the question changes.
    wait::until("the lookup to wait for a change", || async {
        app.live.listeners() > listening
    })
    .await;
    assert!(
        !waiting.is_finished(),
        "the lookup returned before anything changed"
    );
    let answered = app
        .answer(&ana.token, early_access(id, Some("The 1.0 date.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    let read = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the lookup returns once the question changes")
        .expect("the task");
    assert_eq!(read["questions"][0]["status"], "answered", "{read}");
    assert_eq!(read["questions"][0]["answer"]["optionId"], "ea");
    assert_eq!(read["questions"][0]["answer"]["body"], "The 1.0 date.");
    assert_eq!(read["questions"][0]["answer"]["answeredBy"], "ana");
}

async fn a_waiting_lookup_of_a_settled_question_answers_at_once(app: TestApp) {
    let (id, ana) = a_question_and_its_answerer(&app).await;
    let answered = app
        .answer(&ana.token, early_access(id, Some("The 1.0 date.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    let (_, at_once) = lookup(
        &app,
        json!({"nicheSlug": "games", "externalIds": ["q-1"], "waitSeconds": 30}),
    )
    .await;
    assert_eq!(at_once["questions"][0]["status"], "answered");
}

async fn a_waiting_lookup_with_no_change_ends_on_time(app: TestApp) {
    a_question_and_its_answerer(&app).await;
    app.ask("games", "q-2").await;
    let (status, quiet) = lookup(
        &app,
        json!({"nicheSlug": "games", "externalIds": ["q-2"], "waitSeconds": 1}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(quiet["questions"][0]["status"], "open");
}

on_both_backends!(
    the_agent_reads_its_questions_in_the_order_it_asked,
    a_waiting_lookup_is_held_until_the_question_is_answered,
    a_waiting_lookup_of_a_settled_question_answers_at_once,
    a_waiting_lookup_with_no_change_ends_on_time,
);

#[tokio::test]
async fn a_bad_lookup_is_refused_and_changes_nothing() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let unsigned = app
        .post_with_signature(
            LOOKUP,
            &json!({"nicheSlug": "games", "externalIds": ["a"]}).to_string(),
            None,
        )
        .await;
    assert_eq!(unsigned.status(), 401);
    let (status, body) = lookup(&app, json!({"nicheSlug": "nowhere", "externalIds": ["a"]})).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (404, Some("NOT_FOUND")),
        "{body}"
    );
    for bad in [
        json!({"nicheSlug": "games", "externalIds": ["a"], "waitSeconds": 56}),
        json!({"nicheSlug": "games", "externalIds": []}),
        json!({"nicheSlug": "games"}),
    ] {
        let (status, body) = lookup(&app, bad.clone()).await;
        assert_eq!(status, 400, "{bad}: {body}");
    }
}

const DELIVERIES: &str = "query($status: DeliveryStatus, $event: String) { deliveries(status: $status, event: $event) { id envelopeId eventType status attemptCount lastStatusCode lastError attempts { statusCode outcome error durationMs } } }";
pub(crate) const REDELIVER: &str =
    "mutation($id: ID!) { redeliver(id: $id) { status envelopeId } }";

/// A delivery the agent answered 503 until its retry window ran out, an admin, and an
/// operator of its niche.
struct Exhausted {
    app: TestApp,
    receiver: Receiver,
    delivery: deliveries::Model,
    root: Person,
    operator: Person,
}

async fn an_exhausted_delivery() -> Exhausted {
    let receiver = Receiver::start(vec![Reply::Status(503, None); 200]).await;
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        quick(c, Some(&receiver.url));
        c.delivery.retry_window = Duration::from_millis(400);
    })
    .await
    .expect("an app");
    answered_question(&app).await;
    let delivery = wait_for_status(&app, DeliveryStatus::Exhausted).await;
    let root = person(&app.db, "root", true).await;
    let operator = operator(&app.db, "games", "bo").await;
    Exhausted {
        app,
        receiver,
        delivery,
        root,
        operator,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn admins_list_an_exhausted_delivery_with_every_attempt() {
    let Exhausted {
        app,
        delivery,
        root,
        ..
    } = an_exhausted_delivery().await;
    let listed = app
        .graphql(
            Some(&root.token),
            DELIVERIES,
            json!({"status": "EXHAUSTED"}),
        )
        .await;
    let rows = listed["data"]["deliveries"].as_array().expect("a list");
    assert_eq!(rows.len(), 1, "{listed}");
    assert_eq!(rows[0]["envelopeId"], json!(delivery.envelope_id));
    assert_eq!(rows[0]["lastStatusCode"], 503);
    let tries = rows[0]["attempts"].as_array().expect("attempts");
    assert!(tries.len() >= 2, "{listed}");
    assert_eq!(
        tries.last().map(|a| a["outcome"].clone()),
        Some(json!("EXHAUSTED"))
    );
    assert_eq!(rows[0]["attemptCount"], json!(tries.len()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_delivery_list_filters_by_event_and_refuses_an_unknown_one() {
    let Exhausted { app, root, .. } = an_exhausted_delivery().await;
    let by_event = app
        .graphql(
            Some(&root.token),
            DELIVERIES,
            json!({"event": "expert_question.expired"}),
        )
        .await;
    assert_eq!(by_event["data"]["deliveries"], json!([]), "{by_event}");
    let bad_event = app
        .graphql(Some(&root.token), DELIVERIES, json!({"event": "nope"}))
        .await;
    assert_eq!(
        error_code(&bad_event),
        Some("BAD_USER_INPUT"),
        "{bad_event}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn operators_cannot_list_deliveries() {
    let Exhausted { app, operator, .. } = an_exhausted_delivery().await;
    let not_admin = app
        .graphql(Some(&operator.token), DELIVERIES, json!({}))
        .await;
    assert_eq!(error_code(&not_admin), Some("FORBIDDEN"), "{not_admin}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redeliver_refuses_a_malformed_or_unknown_id() {
    let Exhausted { app, root, .. } = an_exhausted_delivery().await;
    for (id, code) in [("x", "BAD_USER_INPUT"), ("999999", "NOT_FOUND")] {
        let refused = app
            .graphql(Some(&root.token), REDELIVER, json!({"id": id}))
            .await;
        assert_eq!(error_code(&refused), Some(code), "{refused}");
    }
    assert_eq!(the_delivery(&app).await.status, DeliveryStatus::Exhausted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn operators_cannot_redeliver() {
    let Exhausted {
        app,
        delivery,
        operator,
        ..
    } = an_exhausted_delivery().await;
    let refused = app
        .graphql(
            Some(&operator.token),
            REDELIVER,
            json!({"id": delivery.id.to_string()}),
        )
        .await;
    assert_eq!(error_code(&refused), Some("FORBIDDEN"), "{refused}");
    assert_eq!(the_delivery(&app).await.status, DeliveryStatus::Exhausted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_admin_redelivers_an_exhausted_delivery_under_the_same_envelope_id() {
    let Exhausted {
        app,
        receiver,
        delivery: exhausted,
        root,
        ..
    } = an_exhausted_delivery().await;
    let before = receiver.received().len();
    receiver.set_script(Vec::new());
    let again = app
        .graphql(
            Some(&root.token),
            REDELIVER,
            json!({"id": exhausted.id.to_string()}),
        )
        .await;
    assert_eq!(again["data"]["redeliver"]["status"], "PENDING", "{again}");
    let delivered = wait_for_status(&app, DeliveryStatus::Delivered).await;
    assert_eq!(delivered.envelope_id, exhausted.envelope_id);
    let received = receiver.received();
    assert_eq!(received.len(), before + 1);
    assert!(
        received
            .iter()
            .all(|r| r.envelope["id"] == json!(exhausted.envelope_id))
    );
    let audited = audit_log::Entity::find()
        .filter(audit_log::Column::Action.eq("delivery.redelivered"))
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(audited, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_readme_openssl_recipe_verifies_an_outbound_envelope() {
    let receiver = Receiver::start(Vec::new()).await;
    let app = spawn_delivering(Backend::Sqlite, &receiver.url)
        .await
        .expect("an app");
    answered_question(&app).await;
    receiver
        .wait_until(WAIT, "the envelope", |r| !r.is_empty())
        .await;
    let received = &receiver.received()[0];
    let t = timestamp_of(&received.signature).to_owned();
    let v1 = received
        .signature
        .split(',')
        .find_map(|p| p.strip_prefix("v1="))
        .unwrap_or_default()
        .to_owned();
    // Exactly the README's line, run by a shell.
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"printf '%s.%s' "$T" "$BODY" | openssl dgst -sha256 -hmac "$SECRET" | sed 's/.*= *//'"#)
        .env("T", &t)
        .env("BODY", &received.body)
        .env("SECRET", SECRET)
        .output()
        .expect("openssl runs");
    assert!(output.status.success());
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), v1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn shutting_down_answers_a_waiting_lookup_instead_of_dropping_it() {
    let mut app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    app.ask("games", "q-1").await;
    let body = json!({"nicheSlug": "games", "externalIds": ["q-1"], "waitSeconds": 55}).to_string();
    let request = reqwest::Client::new()
        .post(app.url(LOOKUP))
        .header("content-type", "application/json")
        .header(
            askloop::domain::signing::SIGNATURE_HEADER,
            app.signature(&body),
        )
        .body(body);
    let listening = app.live.listeners();
    let waiting = tokio::spawn(async move { request.send().await });
    // The lookup is waiting inside askloop before it pauses.
    wait::until("the lookup to wait for a change", || async {
        app.live.listeners() > listening
    })
    .await;
    assert!(!waiting.is_finished());
    app.pause().await;
    let response = waiting
        .await
        .expect("the task")
        .expect("an answer, not a dropped connection");
    assert_eq!(response.status(), 200);
    let read: Value = response.json().await.expect("JSON");
    assert_eq!(read["questions"][0]["status"], "open");
}

#[tokio::test]
async fn a_delivery_being_sent_cannot_be_redelivered_under_its_sender() {
    use askloop::service::agents::outbox;
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    answered_question(&app).await;
    let root = person(&app.db, "root", true).await;
    let now = chrono::Utc::now();
    let request = outbox::ClaimRequest {
        class: outbox::Class::Agents,
        limit: 8,
        per_endpoint: 8,
        skip: Vec::new(),
        probing: Vec::new(),
        lease: Duration::from_secs(30),
        default_has_url: true,
    };
    let claimed = outbox::claim_due(&app.db, &request, now)
        .await
        .expect("claimed");
    assert_eq!(claimed.len(), 1);
    let refused = app
        .graphql(
            Some(&root.token),
            "mutation($id: ID!) { redeliver(id: $id) { status } }",
            json!({"id": claimed[0].delivery.id.to_string()}),
        )
        .await;
    assert_eq!(error_code(&refused), Some("CONFLICT"), "{refused}");
    assert_eq!(
        the_delivery(&app).await.claim_token.as_deref(),
        Some(claimed[0].token.as_str()),
        "the sender keeps its claim"
    );
}
