//! The client against a scripted stand-in for askloop on a local port: what it sends (signed,
//! named, the same body on every retry), what it makes of each answer, and how a wait ends.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::*;
use crate::webhook::Verifier;

const SECRET: &str = "whsec_test";

/// One scripted answer: a status, extra headers, a body.
type Reply = (u16, Vec<(&'static str, String)>, String);

/// Whether an error is the one a case expects.
type Expect = fn(&Error) -> bool;

fn reply(status: u16, body: Value) -> Reply {
    (status, Vec::new(), body.to_string())
}

/// A request as the stand-in received it.
#[derive(Debug, Clone)]
struct Received {
    path: String,
    headers: HeaderMap,
    body: String,
}

impl Received {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }
}

#[derive(Clone, Default)]
struct Script {
    replies: Arc<Mutex<VecDeque<Reply>>>,
    received: Arc<Mutex<Vec<Received>>>,
}

/// The stand-in: answers each request with the next reply of its script.
struct Fake {
    base: String,
    script: Script,
}

impl Fake {
    async fn start(replies: Vec<Reply>) -> Self {
        let script = Script::default();
        script.replies.lock().expect("the script").extend(replies);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let base = format!("http://{}", listener.local_addr().expect("an address"));
        let app = Router::new().fallback(answer).with_state(script.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { base, script }
    }

    fn client(&self) -> Client {
        Client::new(format!("{}/", self.base), SECRET).retry_policy(RetryPolicy {
            attempts: 4,
            base: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
        })
    }

    fn received(&self) -> Vec<Received> {
        self.script.received.lock().expect("received").clone()
    }
}

async fn answer(
    State(script): State<Script>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    script.received.lock().expect("received").push(Received {
        path: uri.path().to_owned(),
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let next = script.replies.lock().expect("the script").pop_front();
    let Some((status, headers, body)) = next else {
        return (StatusCode::IM_A_TEAPOT, "the script ran out").into_response();
    };
    let mut response = (
        StatusCode::from_u16(status).expect("a status"),
        [("content-type", "application/json")],
        body,
    )
        .into_response();
    for (name, value) in headers {
        response
            .headers_mut()
            .insert(name, value.parse().expect("a header value"));
    }
    response
}

fn budget() -> Value {
    json!({"limitMinor": null, "spentMinor": 0, "reservedMinor": 300, "remainingMinor": null,
           "state": "AMPLE", "resetsAt": "2026-12-01T00:00:00Z"})
}

fn stored(duplicate: bool) -> Reply {
    reply(
        if duplicate { 200 } else { 201 },
        json!({"stored": true, "duplicate": duplicate,
               "question": {"id": 7, "status": "open", "expiresAt": "2030-01-01T00:00:00Z"},
               "budget": budget()}),
    )
}

fn question_entry(status: &str, expires_at: DateTime<Utc>) -> Value {
    let answered = status == "answered";
    json!({"externalId": "q-1", "found": true, "id": 7, "status": status,
           "expiresAt": expires_at, "answeredAt": if answered { json!("2026-11-29T10:00:00Z") } else { Value::Null },
           "answer": if answered {
               json!({"answerId": 12, "optionId": "ea", "body": "Ship early access.",
                      "answeredBy": "ana", "createdAt": "2026-11-29T10:00:00Z", "review": "pending"})
           } else { Value::Null }})
}

fn looked_up(status: &str) -> Reply {
    reply(
        200,
        json!({"questions": [question_entry(status, Utc::now() + chrono::Duration::days(1))]}),
    )
}

fn refusal(status: u16, code: &str, message: &str) -> Reply {
    reply(status, json!({"error": message, "code": code}))
}

fn question() -> Question {
    Question::new("games", "Which date?", "Early access or 1.0?").external_id("q-1")
}

#[tokio::test]
async fn every_request_is_signed_over_the_exact_body_and_names_the_agent_when_one_is_set() {
    let fake = Fake::start(vec![stored(false), stored(true)]).await;
    fake.client()
        .agent("research-bot")
        .ask(&question())
        .await
        .expect("asked");
    fake.client().ask(&question()).await.expect("asked again");
    let received = fake.received();
    assert_eq!(received.len(), 2);
    for request in &received {
        assert_eq!(request.path, INTAKE_PATH);
        assert_eq!(request.headers["content-type"], "application/json");
        let headers: Vec<(String, String)> = request
            .headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_owned()))
            .collect();
        assert_eq!(
            Verifier::chovy(SECRET).verify_signature_at(
                &headers,
                request.body.as_bytes(),
                Utc::now().timestamp()
            ),
            Ok(()),
            "signed with the secret over the bytes sent"
        );
    }
    assert_eq!(received[0].headers["x-askloop-agent"], "research-bot");
    assert!(
        received[1].headers.get("x-askloop-agent").is_none(),
        "the default agent names no agent"
    );
}

#[tokio::test]
async fn ask_reads_what_the_intake_answered() {
    let fake = Fake::start(vec![stored(false)]).await;
    let asked = fake.client().ask(&question()).await.expect("asked");
    assert_eq!(asked.id, 7);
    assert_eq!(
        (asked.niche.as_str(), asked.external_id.as_str()),
        ("games", "q-1")
    );
    assert!(!asked.duplicate);
    assert_eq!(asked.status, Status::Open);
    assert_eq!(asked.expires_at.to_rfc3339(), "2030-01-01T00:00:00+00:00");
    assert_eq!(asked.budget.reserved_minor, 300);
    assert_eq!(asked.budget.remaining_minor, None);
    assert_eq!(asked.budget.state, crate::BudgetState::Ample);
    assert_eq!(fake.received()[0].json()["externalId"], "q-1");
}

#[tokio::test]
async fn ask_retries_a_5xx_and_a_429_with_the_same_body_so_it_stays_one_question() {
    let fake = Fake::start(vec![
        refusal(502, "INTERNAL", "internal error"),
        (429, vec![("retry-after", "0".to_owned())], String::new()),
        stored(true),
    ])
    .await;
    let asked = fake
        .client()
        .ask(&question())
        .await
        .expect("asked in the end");
    assert!(asked.duplicate, "the lost first attempt had stored it");
    let received = fake.received();
    assert_eq!(received.len(), 3);
    assert!(received.iter().all(|r| r.body == received[0].body));
}

/// What askloop answers while its database is out of reach, asking to wait `seconds`.
fn out_of_reach(seconds: u64) -> Reply {
    (
        503,
        vec![("retry-after", seconds.to_string())],
        json!({"error": "askloop cannot reach its database just now; try again in a moment",
               "code": "UNAVAILABLE", "reason": "TEMPORARILY_UNAVAILABLE",
               "retryAfterSeconds": seconds})
        .to_string(),
    )
}

#[tokio::test]
async fn ask_retries_while_askloops_database_is_out_of_reach_and_keeps_one_question() {
    let fake = Fake::start(vec![out_of_reach(0), out_of_reach(0), stored(false)]).await;
    let asked = fake
        .client()
        .ask(&question())
        .await
        .expect("asked once askloop could reach its database");
    assert!(!asked.duplicate);
    let received = fake.received();
    assert_eq!(received.len(), 3);
    assert!(received.iter().all(|r| r.body == received[0].body));

    // For as long as it lasts: the last error says it was temporary, and how long to wait.
    let fake = Fake::start(vec![out_of_reach(0); 4]).await;
    let failed = fake.client().ask(&question()).await;
    assert!(
        matches!(failed, Err(Error::TemporarilyUnavailable { retry_after: Some(d), .. }) if d.is_zero()),
        "{failed:?}"
    );
    assert_eq!(fake.received().len(), 4);
}

#[tokio::test]
async fn a_transient_failure_that_lasts_ends_with_the_last_error_after_every_attempt() {
    let fake = Fake::start(vec![reply(503, json!("busy")); 4]).await;
    let failed = fake.client().ask(&question()).await;
    assert!(
        matches!(failed, Err(Error::Server { status: 503, .. })),
        "{failed:?}"
    );
    assert_eq!(fake.received().len(), 4);
    let fake = Fake::start(vec![reply(503, json!("busy"))]).await;
    let once = fake
        .client()
        .retry_policy(RetryPolicy::none())
        .ask(&question())
        .await;
    assert!(matches!(once, Err(Error::Server { .. })));
    assert_eq!(fake.received().len(), 1);
}

#[tokio::test]
async fn ask_never_retries_a_refusal() {
    let over_budget = reply(
        402,
        json!({"error": "over budget", "code": "OVER_BUDGET", "remainingMinor": 100,
               "resetsAt": "2026-12-01T00:00:00Z"}),
    );
    let taken = reply(
        409,
        json!({"error": "taken", "code": "CONFLICT", "reason": "EXTERNAL_ID_TAKEN"}),
    );
    let cases: Vec<(Reply, Expect)> = vec![
        (
            refusal(400, "BAD_USER_INPUT", "title is required"),
            |e| matches!(e, Error::BadInput { message } if message == "title is required"),
        ),
        (refusal(401, "UNAUTHENTICATED", "bad signature"), |e| {
            matches!(e, Error::Unauthenticated { .. })
        }),
        (
            refusal(403, "FORBIDDEN", "this agent may not ask in 'games'"),
            |e| matches!(e, Error::Forbidden { .. }),
        ),
        (refusal(404, "NOT_FOUND", "no niche 'games'"), |e| {
            matches!(e, Error::NotFound { .. })
        }),
        (
            taken,
            |e| matches!(e, Error::Conflict { reason: Some(r), .. } if r == "EXTERNAL_ID_TAKEN"),
        ),
        (over_budget, |e| {
            matches!(
                e,
                Error::OverBudget {
                    remaining_minor: Some(100),
                    resets_at: Some(_)
                }
            )
        }),
        (
            refusal(503, "UNAVAILABLE", "no signing secret is configured"),
            |e| matches!(e, Error::Unavailable { .. }),
        ),
    ];
    for (refused, expected) in cases {
        let status = refused.0;
        let fake = Fake::start(vec![refused]).await;
        let outcome = fake.client().ask(&question()).await;
        let err = outcome.expect_err("refused");
        assert!(expected(&err), "{status}: {err:?}");
        assert_eq!(fake.received().len(), 1, "{status} is not retried");
    }
}

#[tokio::test]
async fn an_unreachable_askloop_is_a_transport_error_and_transient() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a port")
        .local_addr()
        .expect("an address");
    // The listener is dropped: nothing answers on that port now.
    let client = Client::new(format!("http://{port}"), SECRET).retry_policy(RetryPolicy {
        attempts: 2,
        base: Duration::from_millis(1),
        max_delay: Duration::from_millis(1),
    });
    let failed = client.ask(&question()).await.expect_err("unreachable");
    assert!(matches!(failed, Error::Transport(_)), "{failed:?}");
    assert!(failed.is_transient());
}

#[tokio::test]
async fn a_success_whose_body_is_not_askloops_is_an_invalid_response() {
    let fake = Fake::start(vec![(200, Vec::new(), "not json".to_owned())]).await;
    let failed = fake.client().ask(&question()).await;
    assert!(
        matches!(failed, Err(Error::InvalidResponse(_))),
        "{failed:?}"
    );
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let fake = Fake::start(vec![(
        307,
        vec![("location", "http://127.0.0.1:9/elsewhere".to_owned())],
        String::new(),
    )])
    .await;
    let failed = fake.client().ask(&question()).await;
    assert!(
        matches!(failed, Err(Error::Unexpected { status: 307, .. })),
        "{failed:?}"
    );
    assert_eq!(fake.received().len(), 1);
}

#[tokio::test]
async fn lookup_sends_the_niche_and_ids_and_reads_found_and_missing_questions() {
    let answered = question_entry("answered", Utc::now());
    let fake = Fake::start(vec![reply(
        200,
        json!({"questions": [answered, {"externalId": "q-9", "found": false}]}),
    )])
    .await;
    let found = fake
        .client()
        .lookup("games", &["q-1", "q-9"], None)
        .await
        .expect("looked up");
    assert_eq!(found.len(), 2);
    let first = found[0].question.as_ref().expect("q-1 is found");
    assert_eq!(first.status, Status::Answered);
    let answer = first.answer.as_ref().expect("its answer");
    assert_eq!(answer.body.as_deref(), Some("Ship early access."));
    assert_eq!(answer.option_id.as_deref(), Some("ea"));
    assert_eq!(answer.review, crate::Review::Pending);
    assert_eq!(found[1].external_id, "q-9");
    assert!(found[1].question.is_none());
    let sent = fake.received()[0].clone();
    assert_eq!(sent.path, LOOKUP_PATH);
    assert_eq!(
        sent.json(),
        json!({"nicheSlug": "games", "externalIds": ["q-1", "q-9"]})
    );
}

#[tokio::test]
async fn a_found_question_the_crate_cannot_read_is_an_invalid_response() {
    let fake = Fake::start(vec![reply(
        200,
        json!({"questions": [{"externalId": "q-1", "found": true, "id": "seven"}]}),
    )])
    .await;
    let failed = fake.client().lookup("games", &["q-1"], None).await;
    assert!(
        matches!(failed, Err(Error::InvalidResponse(ref m)) if m.contains("q-1")),
        "{failed:?}"
    );
}

#[tokio::test]
async fn wait_for_answer_long_polls_until_the_question_is_answered() {
    let fake = Fake::start(vec![looked_up("open"), looked_up("answered")]).await;
    let settled = fake
        .client()
        .wait_for_answer("games", "q-1", Duration::from_secs(600))
        .await
        .expect("answered");
    assert_eq!(settled.status, Status::Answered);
    let answer = settled.answer.expect("the answer");
    assert_eq!(answer.answered_by, "ana");
    assert_eq!(answer.review, crate::Review::Pending);
    let received = fake.received();
    assert_eq!(received.len(), 2);
    for request in &received {
        let body = request.json();
        assert_eq!(body["nicheSlug"], "games");
        assert_eq!(body["externalIds"], json!(["q-1"]));
        assert_eq!(body["waitSeconds"], 55, "at most 55 s per request");
    }
}

#[tokio::test]
async fn wait_for_answer_returns_a_question_dismissed_expired_or_sent_back_for_research() {
    for status in ["dismissed", "expired", "researching"] {
        let fake = Fake::start(vec![looked_up(status)]).await;
        let ended = fake
            .client()
            .wait_for_answer("games", "q-1", Duration::from_secs(600))
            .await
            .expect("no longer open");
        assert_ne!(ended.status, Status::Open, "{status}");
        assert!(ended.answer.is_none());
        assert_eq!(fake.received().len(), 1);
    }
}

#[tokio::test]
async fn wait_for_answer_for_a_question_the_agent_does_not_have_is_not_found() {
    let fake = Fake::start(vec![reply(
        200,
        json!({"questions": [{"externalId": "q-1", "found": false}]}),
    )])
    .await;
    let failed = fake
        .client()
        .wait_for_answer("games", "q-1", Duration::from_secs(600))
        .await;
    assert!(matches!(failed, Err(Error::NotFound { .. })), "{failed:?}");
}

#[tokio::test]
async fn wait_for_answer_ends_when_the_callers_time_is_up() {
    let fake = Fake::start(vec![looked_up("open")]).await;
    let failed = fake
        .client()
        .wait_for_answer("games", "q-1", Duration::ZERO)
        .await;
    let Err(Error::TimedOut { last }) = failed else {
        panic!("not timed out: {failed:?}");
    };
    assert_eq!(last.status, Status::Open);
    assert!(
        fake.received()[0].json().get("waitSeconds").is_none(),
        "no time left: a plain read"
    );
}

#[tokio::test]
async fn wait_for_answer_stops_at_the_questions_expiry() {
    let long_ago = Utc::now() - chrono::Duration::minutes(5);
    let fake = Fake::start(vec![reply(
        200,
        json!({"questions": [question_entry("open", long_ago)]}),
    )])
    .await;
    let failed = fake
        .client()
        .wait_for_answer("games", "q-1", Duration::from_secs(3600))
        .await;
    let Err(Error::PastExpiry { last }) = failed else {
        panic!("not past its expiry: {failed:?}");
    };
    assert_eq!(last.expires_at, long_ago);
    assert_eq!(fake.received().len(), 1);
}

#[tokio::test]
async fn wait_for_answer_retries_transient_failures_but_not_a_refusal() {
    let fake = Fake::start(vec![
        refusal(500, "INTERNAL", "internal error"),
        (429, vec![("retry-after", "0".to_owned())], String::new()),
        looked_up("answered"),
    ])
    .await;
    let settled = fake
        .client()
        .wait_for_answer("games", "q-1", Duration::from_secs(600))
        .await
        .expect("answered after the failures");
    assert_eq!(settled.status, Status::Answered);
    assert_eq!(fake.received().len(), 3);

    let fake = Fake::start(vec![refusal(401, "UNAUTHENTICATED", "bad signature")]).await;
    let refused = fake
        .client()
        .wait_for_answer("games", "q-1", Duration::from_secs(600))
        .await;
    assert!(
        matches!(refused, Err(Error::Unauthenticated { .. })),
        "{refused:?}"
    );
    assert_eq!(fake.received().len(), 1);
}

#[tokio::test]
async fn wait_for_answer_gives_up_on_transient_failures_once_the_time_is_up() {
    let fake = Fake::start(vec![reply(502, json!("down")); 10_000]).await;
    let failed = fake
        .client()
        .wait_for_answer("games", "q-1", Duration::from_millis(200))
        .await;
    assert!(
        matches!(failed, Err(Error::Server { status: 502, .. })),
        "{failed:?}"
    );
}

#[tokio::test]
async fn add_research_sends_the_findings_and_reads_the_question_open_again() {
    let fake = Fake::start(vec![
        reply(200, json!({"question": {"id": 7, "status": "open"}})),
        reply(
            409,
            json!({"error": "not waiting", "code": "CONFLICT", "reason": "NOT_AWAITING_RESEARCH"}),
        ),
    ])
    .await;
    let client = fake.client();
    let added = client
        .add_research("games", "q-1", "The store page says May.")
        .await
        .expect("added");
    assert_eq!(added.id, 7);
    assert_eq!(added.status, Status::Open);
    let sent = fake.received()[0].clone();
    assert_eq!(sent.path, RESEARCH_PATH);
    assert_eq!(
        sent.json(),
        json!({"nicheSlug": "games", "externalId": "q-1", "context": "The store page says May."})
    );
    let settled = client.add_research("games", "q-1", "more").await;
    assert!(
        matches!(settled, Err(Error::Conflict { reason: Some(ref r), .. }) if r == "NOT_AWAITING_RESEARCH"),
        "{settled:?}"
    );
}

#[tokio::test]
async fn add_research_is_resent_after_a_429_but_not_after_a_failure_that_may_have_applied_it() {
    let open_again = reply(200, json!({"question": {"id": 7, "status": "open"}}));
    let fake = Fake::start(vec![
        (429, vec![("retry-after", "0".to_owned())], String::new()),
        open_again,
    ])
    .await;
    fake.client()
        .add_research("games", "q-1", "findings")
        .await
        .expect("added after the 429");
    assert_eq!(fake.received().len(), 2);

    let fake = Fake::start(vec![refusal(502, "INTERNAL", "bad gateway")]).await;
    let failed = fake.client().add_research("games", "q-1", "findings").await;
    assert!(
        matches!(failed, Err(Error::Server { status: 502, .. })),
        "{failed:?}"
    );
    assert_eq!(
        fake.received().len(),
        1,
        "findings that may have been appended are not sent again"
    );

    // A database that went away mid-request may have taken the findings before it did.
    let fake = Fake::start(vec![out_of_reach(0)]).await;
    let failed = fake.client().add_research("games", "q-1", "findings").await;
    assert!(
        matches!(failed, Err(Error::TemporarilyUnavailable { .. })),
        "{failed:?}"
    );
    assert_eq!(fake.received().len(), 1);
}

#[test]
fn a_long_poll_waits_at_most_55_seconds_and_never_past_the_deadline_or_the_expiry() {
    let now = Instant::now();
    let clock = Utc::now();
    let hour = Duration::from_secs(3600);
    assert_eq!(next_wait(now + hour, None, now, clock), LOOKUP_MAX_WAIT);
    assert_eq!(
        next_wait(now + Duration::from_millis(2500), None, now, clock),
        Duration::from_secs(3),
        "rounded up to whole seconds"
    );
    assert_eq!(next_wait(now, None, now, clock), Duration::ZERO);
    // Expiring in 10 s: the wait reaches to the end of the grace, not beyond.
    let soon = clock + chrono::Duration::seconds(-50);
    assert_eq!(
        next_wait(now + hour, Some(soon), now, clock),
        Duration::from_secs(10)
    );
    let long_ago = clock - chrono::Duration::minutes(5);
    assert_eq!(
        next_wait(now + hour, Some(long_ago), now, clock),
        Duration::ZERO
    );
    assert!(past_expiry(long_ago, clock));
    assert!(!past_expiry(soon, clock));
}

#[test]
fn a_retry_pauses_between_half_and_all_of_the_backoff_and_a_longer_retry_after_wins() {
    let policy = RetryPolicy {
        attempts: 5,
        base: Duration::from_millis(100),
        max_delay: Duration::from_millis(300),
    };
    for _ in 0..50 {
        let first = policy.delay(1, None);
        assert!((Duration::from_millis(50)..=Duration::from_millis(100)).contains(&first));
        let capped = policy.delay(10, None);
        assert!((Duration::from_millis(150)..=Duration::from_millis(300)).contains(&capped));
    }
    assert_eq!(
        policy.delay(1, Some(Duration::from_secs(2))),
        Duration::from_secs(2)
    );
    assert_eq!(
        policy.delay(1, Some(Duration::from_secs(3600))),
        RETRY_AFTER_CAP
    );
}

#[test]
fn retry_after_is_seconds_or_an_http_date() {
    let now = DateTime::parse_from_rfc3339("2026-11-29T12:00:00Z")
        .expect("a time")
        .with_timezone(&Utc);
    assert_eq!(
        parse_retry_after(" 30 ", now),
        Some(Duration::from_secs(30))
    );
    assert_eq!(
        parse_retry_after("Sun, 29 Nov 2026 12:01:00 GMT", now),
        Some(Duration::from_secs(60))
    );
    assert_eq!(
        parse_retry_after("Sun, 29 Nov 2026 11:00:00 GMT", now),
        Some(Duration::ZERO)
    );
    assert_eq!(parse_retry_after("soon", now), None);
}

#[test]
fn a_client_never_shows_its_secret() {
    let shown = format!(
        "{:?}",
        Client::new("http://askloop.example", "whsec_secret")
    );
    assert!(!shown.contains("whsec_secret"), "{shown}");
    assert!(shown.contains("askloop.example"));
}
