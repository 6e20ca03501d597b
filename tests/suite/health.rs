//! Liveness, readiness, metrics and request ids.

use askloop_tests::fixtures::{open_niche, question_body};
use askloop_tests::{TestApp, on_both_backends};

async fn health_and_readiness_answer(app: TestApp) {
    let health = app
        .client
        .get(app.url("/healthz"))
        .send()
        .await
        .expect("sent");
    assert_eq!(health.status(), 200);
    assert_eq!(health.text().await.expect("text"), "ok");
    let ready = app
        .client
        .get(app.url("/readyz"))
        .send()
        .await
        .expect("sent");
    assert_eq!(ready.status(), 200);
}

async fn metrics_count_requests_and_intake_outcomes(app: TestApp) {
    open_niche(&app.db, "games").await;
    let body = question_body("games", "m-1").to_string();
    app.post_signed("/api/v1/internal/expert-questions", &body)
        .await;
    app.post_signed("/api/v1/internal/expert-questions", &body)
        .await;
    app.post_with_signature("/api/v1/internal/expert-questions", &body, None)
        .await;
    let text = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .expect("sent")
        .text()
        .await
        .expect("text");
    for line in [
        r#"askloop_intake_outcomes_total{outcome="created"} 1"#,
        r#"askloop_intake_outcomes_total{outcome="duplicate"} 1"#,
        r#"askloop_intake_outcomes_total{outcome="no_signature"} 1"#,
        r#"askloop_http_requests_total{method="POST",route="/api/v1/internal/expert-questions",status="201"} 1"#,
        r#"askloop_http_requests_total{method="POST",route="/api/v1/internal/expert-questions",status="401"} 1"#,
    ] {
        assert!(text.contains(line), "missing `{line}` in:\n{text}");
    }
    assert!(text.contains("askloop_http_request_duration_seconds_bucket"));
}

async fn every_response_carries_a_request_id(app: TestApp) {
    let response = app
        .client
        .get(app.url("/healthz"))
        .send()
        .await
        .expect("sent");
    let id = response
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .expect("a request id");
    assert_eq!(id.len(), 36, "{id}");
}

#[tokio::test]
async fn invented_methods_do_not_become_metric_labels() {
    let app = TestApp::spawn(askloop_tests::Backend::Sqlite)
        .await
        .expect("an app");
    for method in ["FROBNICATE", "XYZZY1", "XYZZY2"] {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("a token");
        app.client
            .request(method, app.url("/healthz"))
            .send()
            .await
            .expect("sent");
    }
    let text = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .expect("sent")
        .text()
        .await
        .expect("text");
    assert!(
        !text.contains("FROBNICATE") && !text.contains("XYZZY"),
        "{text}"
    );
    assert!(text.contains(r#"method="other""#), "{text}");
}

on_both_backends!(
    health_and_readiness_answer,
    metrics_count_requests_and_intake_outcomes,
    every_response_carries_a_request_id,
);

#[tokio::test]
async fn readiness_fails_when_the_database_is_gone() {
    let app = TestApp::spawn(askloop_tests::Backend::Sqlite)
        .await
        .expect("an app");
    app.close_the_apps_database().await;
    let ready = app
        .client
        .get(app.url("/readyz"))
        .send()
        .await
        .expect("sent");
    assert_eq!(ready.status(), 503);
    let health = app
        .client
        .get(app.url("/healthz"))
        .send()
        .await
        .expect("sent");
    assert_eq!(health.status(), 200);
}
