//! Verifying deliveries in both schemes, reading envelopes, and dropping redeliveries.

use std::convert::Infallible;
use std::future::Future;

use serde_json::{Value, json};

use super::*;
use crate::Review;
use crate::signing::sign;

const NOW: i64 = 1_700_000_000;
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const PREVIOUS: &str = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

/// An envelope as askloop writes it.
fn envelope(id: &str) -> String {
    json!({
        "id": id, "type": "expert_answer.created", "version": 1,
        "occurredAt": "2026-11-29T10:00:00.000Z", "producer": "askloop",
        "nicheId": 1, "userId": 2,
        "payload": {"questionId": 7, "externalId": "q-1", "answerId": 12,
                    "answer": "Ship early access.", "optionId": "ea",
                    "optionLabel": "Early access", "answeredBy": "ana", "review": "pending"},
    })
    .to_string()
}

fn chovy_headers(header: &str) -> Vec<(String, String)> {
    vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        ("x-chovy-signature".to_owned(), header.to_owned()),
    ]
}

/// One Standard Webhooks signature entry, as askloop makes it.
fn standard_entry(secret: &str, id: &str, timestamp: i64, body: &str) -> String {
    let mut mac = hmac_sha256(&standard_key(secret));
    mac.update(format!("{id}.{timestamp}.{body}").as_bytes());
    format!("v1,{}", BASE64.encode(mac.finalize().into_bytes()))
}

fn standard_headers(id: &str, timestamp: &str, signature: &str) -> Vec<(&'static str, String)> {
    vec![
        ("Webhook-Id", id.to_owned()),
        ("Webhook-Timestamp", timestamp.to_owned()),
        ("Webhook-Signature", signature.to_owned()),
    ]
}

/// A delivery askloop would send to a standard endpoint holding `secrets`.
fn standard_delivery(secrets: &[&str], id: &str, at: i64) -> (Vec<(&'static str, String)>, String) {
    let body = envelope(id);
    let signature = secrets
        .iter()
        .map(|secret| standard_entry(secret, id, at, &body))
        .collect::<Vec<_>>()
        .join(" ");
    (standard_headers(id, &at.to_string(), &signature), body)
}

/// The contract's published vectors, shared with the server's suite.
fn vectors() -> Vec<Value> {
    let doc: Value = serde_json::from_str(include_str!("../../../tests/vectors/signing.json"))
        .expect("the vectors are JSON");
    doc["vectors"].as_array().expect("a list").clone()
}

#[test]
fn every_published_verification_vector_holds_for_a_chovy_endpoint() {
    let mut checked = 0;
    for v in vectors().iter().filter(|v| v.get("header").is_some()) {
        let name = v["name"].as_str().unwrap_or("?");
        let verifier = Verifier::chovy(v["secret"].as_str().expect("a secret"));
        let outcome = verifier.verify_signature_at(
            &chovy_headers(v["header"].as_str().expect("a header")),
            v["body"].as_str().expect("a body").as_bytes(),
            v["now"].as_i64().expect("a clock"),
        );
        if v["ok"].as_bool() == Some(true) {
            assert_eq!(outcome, Ok(()), "vector {name}");
        } else {
            let reason = outcome.expect_err(name).to_string();
            assert_eq!(Some(reason.as_str()), v["reason"].as_str(), "vector {name}");
        }
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} vectors");
}

#[test]
fn a_chovy_delivery_verifies_and_its_envelope_is_read() {
    let body = envelope("evt_1");
    let headers = chovy_headers(&sign("s3cret", body.as_bytes(), NOW));
    let event = Verifier::chovy("s3cret")
        .verify_at(&headers, body.as_bytes(), NOW)
        .expect("verified");
    assert_eq!(event.id, "evt_1");
    assert_eq!(event.event_type, "expert_answer.created");
    assert_eq!(event.version, 1);
    assert_eq!(event.producer, "askloop");
    assert_eq!((event.niche_id, event.user_id), (1, Some(2)));
    assert_eq!(event.payload["answeredBy"], "ana");
}

#[test]
fn a_tampered_chovy_delivery_is_a_bad_signature() {
    let body = envelope("evt_1");
    let headers = chovy_headers(&sign("s3cret", body.as_bytes(), NOW));
    let tampered = body.replace("Ship early access.", "Ship 1.0.");
    assert_eq!(
        Verifier::chovy("s3cret").verify_at(&headers, tampered.as_bytes(), NOW),
        Err(WebhookError::Mismatch)
    );
}

#[test]
fn a_chovy_delivery_signed_too_long_ago_or_ahead_has_expired() {
    let body = envelope("evt_1");
    let headers = chovy_headers(&sign("s3cret", body.as_bytes(), NOW));
    let verifier = Verifier::chovy("s3cret");
    assert!(
        verifier
            .verify_at(&headers, body.as_bytes(), NOW + 300)
            .is_ok()
    );
    for now in [NOW + 301, NOW - 301, i64::MIN] {
        assert_eq!(
            verifier.verify_at(&headers, body.as_bytes(), now),
            Err(WebhookError::Expired),
            "{now}"
        );
    }
    let patient = Verifier::chovy("s3cret").tolerance(Duration::from_secs(3600));
    assert!(
        patient
            .verify_at(&headers, body.as_bytes(), NOW + 3000)
            .is_ok()
    );
}

#[test]
fn a_chovy_delivery_with_another_secret_is_a_bad_signature() {
    let body = envelope("evt_1");
    let headers = chovy_headers(&sign("other", body.as_bytes(), NOW));
    assert_eq!(
        Verifier::chovy("s3cret").verify_at(&headers, body.as_bytes(), NOW),
        Err(WebhookError::Mismatch)
    );
}

#[test]
fn while_rotating_a_chovy_delivery_verifies_with_either_secret() {
    let body = envelope("evt_1");
    // askloop sends one v1 per active secret, current first.
    let both = format!(
        "{},v1={}",
        sign("new", body.as_bytes(), NOW),
        &sign("old", body.as_bytes(), NOW)["t=1700000000,v1=".len()..]
    );
    for holder in ["new", "old"] {
        assert!(
            Verifier::chovy(holder)
                .verify_at(&chovy_headers(&both), body.as_bytes(), NOW)
                .is_ok(),
            "{holder}"
        );
    }
    // A receiver holding both verifies a delivery signed with only the old one.
    let old_only = chovy_headers(&sign("old", body.as_bytes(), NOW));
    let rotating = Verifier::chovy("new").also_accept("old");
    assert!(rotating.verify_at(&old_only, body.as_bytes(), NOW).is_ok());
    assert_eq!(
        Verifier::chovy("new").verify_at(&old_only, body.as_bytes(), NOW),
        Err(WebhookError::Mismatch)
    );
}

#[test]
fn a_delivery_without_its_schemes_signature_is_refused_as_missing() {
    let body = envelope("evt_1");
    let none: Vec<(String, String)> = Vec::new();
    assert_eq!(
        Verifier::chovy("s").verify_at(&none, body.as_bytes(), NOW),
        Err(WebhookError::Missing)
    );
    assert_eq!(
        Verifier::chovy("s").verify_at(&chovy_headers("  "), body.as_bytes(), NOW),
        Err(WebhookError::Missing)
    );
    // A standard delivery sent to a chovy verifier carries no X-Chovy-Signature.
    let (standard, body) = standard_delivery(&[SECRET], "evt_1", NOW);
    assert_eq!(
        Verifier::chovy(SECRET).verify_at(&standard, body.as_bytes(), NOW),
        Err(WebhookError::Missing)
    );
    // And the reverse.
    let chovy = chovy_headers(&sign(SECRET, body.as_bytes(), NOW));
    assert_eq!(
        Verifier::standard(SECRET).verify_at(&chovy, body.as_bytes(), NOW),
        Err(WebhookError::Missing)
    );
}

#[test]
fn a_verifier_without_a_secret_refuses_everything() {
    let body = envelope("evt_1");
    let headers = chovy_headers(&sign("", body.as_bytes(), NOW));
    assert_eq!(
        Verifier::chovy("").verify_at(&headers, body.as_bytes(), NOW),
        Err(WebhookError::NoSecret)
    );
    assert_eq!(
        Verifier::standard("")
            .also_accept("")
            .verify_at(&headers, body.as_bytes(), NOW),
        Err(WebhookError::NoSecret)
    );
}

#[test]
fn a_well_signed_body_that_is_not_an_envelope_is_refused_after_the_signature() {
    let body = br#"{"id": "evt_1"}"#;
    let headers = chovy_headers(&sign("s", body, NOW));
    assert!(matches!(
        Verifier::chovy("s").verify_at(&headers, body, NOW),
        Err(WebhookError::BadEnvelope(_))
    ));
    let not_json = b"not json";
    let headers = chovy_headers(&sign("s", not_json, NOW));
    assert!(matches!(
        Verifier::chovy("s").verify_at(&headers, not_json, NOW),
        Err(WebhookError::BadEnvelope(_))
    ));
}

/// The example of the Standard Webhooks specification, which every library checks.
#[test]
fn the_standard_webhooks_specification_example_verifies() {
    let headers = standard_headers(
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "1614265330",
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    );
    let verifier = Verifier::standard(SECRET);
    assert_eq!(
        verifier.verify_signature_at(&headers, br#"{"test": 2432232314}"#, 1_614_265_330),
        Ok(())
    );
    assert_eq!(
        verifier.verify_signature_at(&headers, br#"{"test": 2432232315}"#, 1_614_265_330),
        Err(WebhookError::Mismatch)
    );
}

#[test]
fn a_standard_delivery_verifies_and_its_envelope_is_read() {
    let (headers, body) = standard_delivery(&[SECRET], "evt_9", NOW);
    let event = Verifier::standard(SECRET)
        .verify_at(&headers, body.as_bytes(), NOW)
        .expect("verified");
    assert_eq!(event.id, "evt_9");
}

#[test]
fn a_tampered_standard_delivery_is_a_bad_signature() {
    let (headers, body) = standard_delivery(&[SECRET], "evt_9", NOW);
    let tampered = body.replace("pending", "verified");
    assert_eq!(
        Verifier::standard(SECRET).verify_at(&headers, tampered.as_bytes(), NOW),
        Err(WebhookError::Mismatch)
    );
    // The id and the time are signed too.
    let (mut headers, body) = standard_delivery(&[SECRET], "evt_9", NOW);
    headers[0].1 = "evt_10".to_owned();
    assert_eq!(
        Verifier::standard(SECRET).verify_at(&headers, body.as_bytes(), NOW),
        Err(WebhookError::Mismatch)
    );
    let (mut headers, body) = standard_delivery(&[SECRET], "evt_9", NOW);
    headers[1].1 = (NOW + 1).to_string();
    assert_eq!(
        Verifier::standard(SECRET).verify_at(&headers, body.as_bytes(), NOW),
        Err(WebhookError::Mismatch)
    );
}

#[test]
fn a_standard_delivery_signed_too_long_ago_or_ahead_has_expired() {
    let verifier = Verifier::standard(SECRET);
    let (headers, body) = standard_delivery(&[SECRET], "evt_9", NOW);
    assert!(
        verifier
            .verify_at(&headers, body.as_bytes(), NOW - 300)
            .is_ok()
    );
    for now in [NOW + 301, NOW - 301] {
        assert_eq!(
            verifier.verify_at(&headers, body.as_bytes(), now),
            Err(WebhookError::Expired)
        );
    }
}

#[test]
fn a_standard_delivery_with_another_secret_is_a_bad_signature() {
    let (headers, body) = standard_delivery(&[PREVIOUS], "evt_9", NOW);
    assert_eq!(
        Verifier::standard(SECRET).verify_at(&headers, body.as_bytes(), NOW),
        Err(WebhookError::Mismatch)
    );
}

#[test]
fn while_rotating_a_standard_delivery_verifies_with_either_secret() {
    // askloop sends one entry per active secret, separated by a space.
    let (headers, body) = standard_delivery(&[SECRET, PREVIOUS], "evt_9", NOW);
    assert_eq!(headers[2].1.matches("v1,").count(), 2);
    for holder in [SECRET, PREVIOUS] {
        assert!(
            Verifier::standard(holder)
                .verify_at(&headers, body.as_bytes(), NOW)
                .is_ok()
        );
    }
    let (old_only, body) = standard_delivery(&[PREVIOUS], "evt_9", NOW);
    assert!(
        Verifier::standard(SECRET)
            .also_accept(PREVIOUS)
            .verify_at(&old_only, body.as_bytes(), NOW)
            .is_ok()
    );
}

#[test]
fn standard_entries_of_other_versions_or_bad_base64_do_not_match() {
    let body = envelope("evt_9");
    let good = standard_entry(SECRET, "evt_9", NOW, &body);
    let verifier = Verifier::standard(SECRET);
    let with = |signature: &str| {
        verifier.verify_at(
            &standard_headers("evt_9", &NOW.to_string(), signature),
            body.as_bytes(),
            NOW,
        )
    };
    assert!(with(&format!("v1a,xyz {good}")).is_ok());
    assert_eq!(with("v1,***not-base64***"), Err(WebhookError::Mismatch));
    assert_eq!(
        with(&good.replace("v1,", "v2,")),
        Err(WebhookError::Malformed)
    );
    assert_eq!(with("v1"), Err(WebhookError::Malformed));
}

#[test]
fn a_standard_delivery_missing_a_header_or_with_a_bad_timestamp_is_refused() {
    let (headers, body) = standard_delivery(&[SECRET], "evt_9", NOW);
    let verifier = Verifier::standard(SECRET);
    for missing in 0..3 {
        let mut without = headers.clone();
        without.remove(missing);
        assert_eq!(
            verifier.verify_at(&without, body.as_bytes(), NOW),
            Err(WebhookError::Missing),
            "without {}",
            headers[missing].0
        );
    }
    let mut bad_time = headers.clone();
    bad_time[1].1 = "yesterday".to_owned();
    assert_eq!(
        verifier.verify_at(&bad_time, body.as_bytes(), NOW),
        Err(WebhookError::Malformed)
    );
}

#[test]
fn a_secret_without_the_whsec_prefix_signs_with_its_own_text() {
    assert_eq!(standard_key("plain"), b"plain".to_vec());
    assert_eq!(standard_key("whsec_%%%"), b"whsec_%%%".to_vec());
    assert_eq!(standard_key(SECRET).len(), 24);
    let (headers, body) = standard_delivery(&["plain"], "evt_9", NOW);
    assert!(
        Verifier::standard("plain")
            .verify_at(&headers, body.as_bytes(), NOW)
            .is_ok()
    );
}

#[test]
fn headers_are_found_whatever_their_case_in_a_list_or_an_http_header_map() {
    let list = vec![("X-Chovy-Signature", "t=1,v1=00")];
    assert_eq!(list.header("x-chovy-signature"), Some("t=1,v1=00"));
    assert_eq!(list.header("webhook-id"), None);
    let mut map = reqwest::header::HeaderMap::new();
    map.insert(
        "Webhook-Id",
        reqwest::header::HeaderValue::from_static("evt_1"),
    );
    assert_eq!(map.header("webhook-id"), Some("evt_1"));
}

#[test]
fn each_event_type_reads_as_its_typed_payload() {
    let event = |kind: &str, payload: Value| -> Event {
        serde_json::from_value(json!({
            "id": "evt_1", "type": kind, "version": 1, "occurredAt": "2026-11-29T10:00:00Z",
            "producer": "askloop", "nicheId": 1, "userId": null, "payload": payload,
        }))
        .expect("an envelope")
    };
    let created: Event = serde_json::from_str(&envelope("evt_1")).expect("an envelope");
    let EventData::AnswerCreated(answer) = created.data().expect("typed") else {
        panic!("not an answer");
    };
    assert_eq!(answer.answer.as_deref(), Some("Ship early access."));
    assert_eq!(answer.option_label.as_deref(), Some("Early access"));
    assert_eq!(answer.review, Review::Pending);

    let ids = json!({"questionId": 7, "externalId": "q-1", "answerId": 12});
    assert!(matches!(
        event("expert_answer.verified", ids.clone()).data(),
        Ok(EventData::AnswerVerified(AnswerVerified {
            answer_id: 12,
            ..
        }))
    ));
    let mut rejected = ids.clone();
    rejected["note"] = json!("wrong date");
    rejected["previousReview"] = json!("verified");
    let Ok(EventData::AnswerRejected(rejected)) = event("expert_answer.rejected", rejected).data()
    else {
        panic!("not a rejection");
    };
    assert_eq!(rejected.previous_review, Review::Verified);
    assert!(matches!(
        event(
            "agent.research_requested",
            json!({"questionId": 7, "externalId": "q-1", "note": null})
        )
        .data(),
        Ok(EventData::ResearchRequested(ResearchRequested {
            note: None,
            ..
        }))
    ));
    assert!(matches!(
        event(
            "expert_question.expired",
            json!({"questionId": 7, "externalId": "q-1", "expiredAt": "2026-11-29T10:00:00.123456Z"})
        )
        .data(),
        Ok(EventData::QuestionExpired(_))
    ));
    assert!(matches!(
        event(
            "expert_question.dismissed",
            json!({"questionId": 7, "externalId": "q-1", "dismissedBy": "bo"})
        )
        .data(),
        Ok(EventData::QuestionDismissed(QuestionDismissed {
            reason: None,
            ..
        }))
    ));
    assert!(matches!(
        event(
            "expert_question.needs_context",
            json!({"questionId": 7, "externalId": "q-1", "round": 1, "declines": 3})
        )
        .data(),
        Ok(EventData::NeedsContext(NeedsContext { declines: 3, .. }))
    ));
    assert_eq!(
        event(
            "task.completed",
            json!({"questionId": 7, "externalId": "t-1", "answerId": 9, "result": "£12",
                   "actualCostMinor": 150, "budgetLimitMinor": 400, "completedBy": "ana",
                   "review": "pending"})
        )
        .data()
        .ok(),
        Some(EventData::TaskCompleted(TaskCompleted {
            question_id: 7,
            external_id: Some("t-1".into()),
            answer_id: 9,
            result: Some("£12".into()),
            actual_cost_minor: 150,
            budget_limit_minor: 400,
            completed_by: "ana".into(),
            review: Review::Pending,
        }))
    );
    assert!(
        event("task.completed", json!({})).data().is_err(),
        "a task.completed without its fields is refused, not guessed"
    );
    assert_eq!(
        event("niche.renamed", json!({})).data().ok(),
        Some(EventData::Other)
    );
    assert!(
        event("expert_answer.created", json!({"questionId": "seven"}))
            .data()
            .is_err(),
        "a known type without its fields is an error"
    );
}

#[test]
fn the_deduplicator_says_new_once_per_id_until_it_forgets() {
    let seen = Deduplicator::new(10);
    assert!(seen.is_empty());
    assert!(seen.first_time("evt_1"));
    assert!(!seen.first_time("evt_1"));
    assert!(seen.first_time("evt_2"));
    assert_eq!(seen.len(), 2);
    seen.remove("evt_1");
    assert!(seen.first_time("evt_1"), "forgotten, so new again");
}

#[test]
fn the_deduplicator_forgets_the_oldest_id_beyond_its_capacity() {
    let seen = Deduplicator::new(2);
    assert!(seen.first_time("a") && seen.first_time("b"));
    assert!(seen.first_time("c"));
    assert_eq!(seen.len(), 2);
    assert!(!seen.first_time("b") && !seen.first_time("c"));
    assert!(seen.first_time("a"), "the oldest was forgotten");
    assert!(
        Deduplicator::new(0).first_time("x"),
        "a capacity of at least one"
    );
}

/// Drive a future that never waits (every store here answers at once).
fn now_or_never<F: Future>(future: F) -> F::Output {
    let waker = std::task::Waker::noop();
    let mut context = std::task::Context::from_waker(waker);
    let mut future = std::pin::pin!(future);
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => panic!("the future waited"),
    }
}

#[test]
fn receiving_a_delivery_twice_is_new_then_a_duplicate() {
    let verifier = Verifier::standard(SECRET);
    let seen = Deduplicator::default();
    let (headers, body) = standard_delivery(&[SECRET], "evt_9", chrono::Utc::now().timestamp());
    let first = now_or_never(verifier.receive(&seen, &headers, body.as_bytes())).expect("new");
    assert!(matches!(first, Delivery::New(ref e) if e.id == "evt_9"));
    assert!(!first.is_duplicate());
    let again = now_or_never(verifier.receive(&seen, &headers, body.as_bytes())).expect("again");
    assert!(again.is_duplicate());
    assert_eq!(again.event().id, "evt_9");
    // Its handling failed: forgotten, the next copy is handled.
    now_or_never(seen.forget("evt_9")).expect("forgotten");
    let retried = now_or_never(verifier.receive(&seen, &headers, body.as_bytes())).expect("new");
    assert!(!retried.is_duplicate());
}

#[test]
fn a_refused_delivery_is_not_recorded_as_seen() {
    let seen = Deduplicator::default();
    let (headers, body) = standard_delivery(&[PREVIOUS], "evt_9", chrono::Utc::now().timestamp());
    let refused =
        now_or_never(Verifier::standard(SECRET).receive(&seen, &headers, body.as_bytes()));
    assert!(matches!(
        refused,
        Err(ReceiveError::Rejected(WebhookError::Mismatch))
    ));
    assert!(seen.is_empty());
}

/// A store that is down.
struct Broken;

#[derive(Debug, thiserror::Error)]
#[error("the store is down")]
struct Down;

impl SeenStore for Broken {
    type Error = Down;

    fn insert(&self, _id: &str) -> impl Future<Output = Result<bool, Down>> + Send {
        std::future::ready(Err(Down))
    }

    fn forget(&self, _id: &str) -> impl Future<Output = Result<(), Down>> + Send {
        std::future::ready(Err(Down))
    }
}

#[test]
fn a_failing_store_is_reported_as_the_stores_error() {
    let (headers, body) = standard_delivery(&[SECRET], "evt_9", chrono::Utc::now().timestamp());
    let failed =
        now_or_never(Verifier::standard(SECRET).receive(&Broken, &headers, body.as_bytes()));
    let Err(ReceiveError::Store(Down)) = failed else {
        panic!("not the store's error: {failed:?}");
    };
    assert_eq!(
        ReceiveError::<Infallible>::Rejected(WebhookError::Expired).to_string(),
        "signature expired"
    );
}
