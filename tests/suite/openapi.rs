//! The REST routes' OpenAPI document: the committed `openapi.json` is what the code generates
//! and what `/openapi.json` serves; it is a valid OpenAPI 3.1 document by an independent
//! validator; and what the routes really answer, status and body, is what it documents.

use std::path::PathBuf;
use std::process::Command;

use askloop::domain::signing::{SIGNATURE_HEADER, sign};
use askloop_tests::fixtures::question_body;
use askloop_tests::people::{operator, person};
use askloop_tests::{TestApp, on_both_backends};
use serde_json::{Value, json};

use crate::money::budgeted_niche;

const COMMITTED: &str = include_str!("../../openapi.json");
const MONITOR_SECRET: &str = "monitor-secret";

/// The release of `@apidevtools/swagger-parser` `cargo xtask test` installs (its
/// `SWAGGER_PARSER_PACKAGE` names the same one).
const SWAGGER_PARSER_VERSION: &str = "13.1.0";

#[test]
fn the_committed_openapi_document_matches_the_code() {
    assert!(
        COMMITTED == askloop::rest::openapi::json(),
        "openapi.json is stale: run `cargo run -p askloop -- openapi > openapi.json`"
    );
}

/// `@apidevtools/swagger-parser` checks the document against the OpenAPI 3.1 schema and resolves
/// every `$ref`; the run fails on any finding. (It is also shown to refuse a broken document, so
/// a validator that accepts everything would fail this test.)
#[test]
fn the_document_validates_as_openapi_3_1() {
    let prefix = askloop_tests::app::npm_tool(
        "ASKLOOP_SWAGGER_PARSER",
        &format!("apidevtools-swagger-parser-{SWAGGER_PARSER_VERSION}"),
    );
    assert!(
        prefix
            .join("node_modules/@apidevtools/swagger-parser")
            .is_dir(),
        "swagger-parser is not installed under {}: run the tests with `cargo xtask test`, which \
         installs it, or set ASKLOOP_SWAGGER_PARSER to a folder holding its node_modules",
        prefix.display()
    );
    let script = r#"
const SwaggerParser = require("@apidevtools/swagger-parser");
SwaggerParser.validate(process.argv[1]).then(
  (api) => { process.stdout.write(`valid ${api.openapi}`); },
  (err) => { process.stdout.write(String(err && err.message)); process.exit(1); },
);
"#;
    let validate = |file: &PathBuf| {
        let output = Command::new("node")
            .arg("-e")
            .arg(script)
            .arg(file)
            .env("NODE_PATH", prefix.join("node_modules"))
            .output()
            .expect("node runs");
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    let committed = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../openapi.json");
    let (ok, said) = validate(&committed);
    assert!(ok, "openapi.json is not a valid OpenAPI document: {said}");
    assert_eq!(said, "valid 3.1.0");

    let mut broken: Value = serde_json::from_str(COMMITTED).expect("JSON");
    broken["info"]
        .as_object_mut()
        .expect("an info object")
        .remove("version");
    let file = std::env::temp_dir().join(format!("askloop-broken-{}.json", std::process::id()));
    std::fs::write(&file, broken.to_string()).expect("written");
    let (ok, said) = validate(&file);
    let _ = std::fs::remove_file(&file);
    assert!(!ok, "a document without a version passed: {said}");
    assert!(said.contains("version"), "{said}");
}

/// The document, for checking real responses against it.
struct Documented(Value);

impl Documented {
    fn load() -> Self {
        Documented(serde_json::from_str(COMMITTED).expect("JSON"))
    }

    /// `body`, answered with `status` by `method path` (`path` as the document spells it), is
    /// one of that operation's documented responses, and its JSON matches the response's schema
    /// (JSON Schema 2020-12, formats checked).
    fn check(&self, method: &str, path: &str, status: u16, body: &Value) {
        let response = &self.0["paths"][path][method]["responses"][status.to_string()];
        assert!(
            response.is_object(),
            "{method} {path} answered {status}, which its document does not list: {body}"
        );
        let schema = &response["content"]["application/json"]["schema"];
        assert!(
            schema.is_object(),
            "{method} {path} {status} documents no JSON body"
        );
        let root = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "components": self.0["components"],
            "allOf": [schema],
        });
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .build(&root)
            .unwrap_or_else(|e| panic!("{method} {path} {status}: the schema is invalid: {e}"));
        let errors: Vec<String> = validator
            .iter_errors(body)
            .map(|e| format!("{e} (at {})", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{method} {path} {status} does not match its documented schema: {errors:?}\n{body:#}"
        );
    }
}

/// The check below refuses what the document does not allow: a field of the wrong type, a
/// missing required field, a word outside an enum, an undocumented status.
#[test]
fn the_conformance_check_refuses_what_the_document_does_not_allow() {
    let doc = Documented::load();
    let good = json!({"questions": [
        {"externalId": "q-1", "found": false},
        {"externalId": "q-2", "found": true, "id": 7, "kind": "question", "status": "open",
         "expiresAt": "2026-12-01T00:00:00Z", "answeredAt": null, "answer": null},
    ]});
    doc.check("post", LOOKUP, 200, &good);
    let mut bad = Vec::new();
    let mut wrong_type = good.clone();
    wrong_type["questions"][1]["id"] = json!("seven");
    bad.push((200, wrong_type));
    let mut missing = good.clone();
    missing["questions"][1]
        .as_object_mut()
        .expect("an object")
        .remove("status");
    bad.push((200, missing));
    let mut off_enum = good.clone();
    off_enum["questions"][1]["status"] = json!("pondering");
    bad.push((200, off_enum));
    let mut not_a_time = good.clone();
    not_a_time["questions"][1]["expiresAt"] = json!("tomorrow");
    bad.push((200, not_a_time));
    bad.push((418, good));
    for (status, body) in bad {
        let refused = std::panic::catch_unwind(|| doc.check("post", LOOKUP, status, &body));
        assert!(refused.is_err(), "accepted {status} {body}");
    }
}

/// Send a request, then check its answer against the document; the status and body.
async fn exchange(
    doc: &Documented,
    method: &str,
    template: &str,
    request: reqwest::RequestBuilder,
) -> (u16, Value) {
    let response = request.send().await.expect("sent");
    let status = response.status().as_u16();
    let body: Value = response.json().await.expect("a JSON body");
    doc.check(method, template, status, &body);
    (status, body)
}

/// POST `body` to `path` signed with `secret`, and check the answer against the document.
async fn post_signed(
    doc: &Documented,
    app: &TestApp,
    path: &str,
    secret: &str,
    body: &Value,
) -> (u16, Value) {
    exchange(doc, "post", path, signed(app, path, secret, body)).await
}

fn signed(app: &TestApp, path: &str, secret: &str, body: &Value) -> reqwest::RequestBuilder {
    let text = body.to_string();
    app.client
        .post(app.url(path))
        .header("content-type", "application/json")
        .header(
            SIGNATURE_HEADER,
            sign(secret, text.as_bytes(), chrono::Utc::now().timestamp()),
        )
        .body(text)
}

const ASK: &str = "/api/v1/internal/expert-questions";
const LOOKUP: &str = "/api/v1/internal/expert-questions/lookup";
const RESEARCH: &str = "/api/v1/internal/research-results";
const REVENUE: &str = "/api/v1/internal/revenue-events";
const SIGNALS: &str = "/api/v1/internal/anomaly-signals";
const QUEUE: &str = "/api/v1/niches/{slug}/questions";
const REST_ANSWER: &str = "/api/v1/niches/{slug}/questions/{id}/answer";

async fn every_route_answers_as_documented(app: TestApp) {
    let doc = Documented::load();
    let secret = askloop_tests::SECRET;
    budgeted_niche(&app, "roofing", Some(150), 100).await;
    let ana = operator(&app.db, "roofing", "ana").await;
    let bo = operator(&app.db, "roofing", "bo").await;
    person(&app.db, "root", true).await;

    // Asking: stored, stored before, over budget, bad input, bad signature, no such niche.
    let first = question_body("roofing", "q-1");
    let (status, asked) = post_signed(&doc, &app, ASK, secret, &first).await;
    assert_eq!(status, 201);
    let id = asked["question"]["id"].as_i64().expect("an id");
    let (status, again) = post_signed(&doc, &app, ASK, secret, &first).await;
    assert_eq!((status, &again["duplicate"]), (200, &json!(true)));
    let mut costly = question_body("roofing", "q-2");
    costly["payload"]["bountyMinor"] = json!(100);
    let (status, _) = post_signed(&doc, &app, ASK, secret, &costly).await;
    assert_eq!(status, 402);
    let mut untitled = question_body("roofing", "q-3");
    untitled["payload"]
        .as_object_mut()
        .expect("a payload")
        .remove("title");
    let (status, _) = post_signed(&doc, &app, ASK, secret, &untitled).await;
    assert_eq!(status, 400);
    let (status, _) = post_signed(&doc, &app, ASK, "wrong", &first).await;
    assert_eq!(status, 401);
    let elsewhere = question_body("no-such-niche", "q-4");
    let (status, _) = post_signed(&doc, &app, ASK, secret, &elsewhere).await;
    assert_eq!(status, 404);

    // Looking up before the answer: found (no answer yet) and missing.
    let lookup = json!({"nicheSlug": "roofing", "externalIds": ["q-1", "nobody-asked"]});
    let (status, looked) = post_signed(&doc, &app, LOOKUP, secret, &lookup).await;
    assert_eq!(status, 200);
    assert_eq!(looked["questions"][1]["found"], false);

    // The member routes: a page, an answer, a second answer that loses, nobody signed in.
    let page = app
        .client
        .get(app.url("/api/v1/niches/roofing/questions"))
        .bearer_auth(&ana.token);
    let (status, listed) = exchange(&doc, "get", QUEUE, page).await;
    assert_eq!(
        (status, listed["questions"][0]["id"].as_i64()),
        (200, Some(id))
    );
    let anonymous = reqwest::Client::new().get(app.url("/api/v1/niches/roofing/questions"));
    let (status, _) = exchange(&doc, "get", QUEUE, anonymous).await;
    assert_eq!(status, 401);
    let (status, _) = exchange(
        &doc,
        "get",
        QUEUE,
        app.client
            .get(app.url("/api/v1/niches/roofing/questions?status=everything"))
            .bearer_auth(&ana.token),
    )
    .await;
    assert_eq!(status, 400);
    let answer_path = format!("/api/v1/niches/roofing/questions/{id}/answer");
    let answer = json!({"kind": "answered", "optionId": "ea"});
    let (status, answered) = exchange(
        &doc,
        "post",
        REST_ANSWER,
        app.client
            .post(app.url(&answer_path))
            .bearer_auth(&ana.token)
            .json(&answer),
    )
    .await;
    assert_eq!(
        (status, &answered["question"]["status"]),
        (200, &json!("answered"))
    );
    let (status, _) = exchange(
        &doc,
        "post",
        REST_ANSWER,
        app.client
            .post(app.url(&answer_path))
            .bearer_auth(&bo.token)
            .json(&answer),
    )
    .await;
    assert_eq!(status, 409);

    // Looking up after: the answer with its review state.
    let (status, looked) = post_signed(&doc, &app, LOOKUP, secret, &lookup).await;
    assert_eq!(status, 200);
    assert_eq!(looked["questions"][0]["answer"]["review"], "pending");

    // Research: for an open question, and refused for a settled one.
    let mut free = question_body("roofing", "q-5");
    free["payload"]["bountyMinor"] = json!(0);
    let (status, _) = post_signed(&doc, &app, ASK, secret, &free).await;
    assert_eq!(status, 201);
    let findings = json!({"nicheSlug": "roofing", "externalId": "q-5", "context": "found it"});
    let (status, _) = post_signed(&doc, &app, RESEARCH, secret, &findings).await;
    assert_eq!(status, 200);
    let late = json!({"nicheSlug": "roofing", "externalId": "q-1", "context": "too late"});
    let (status, _) = post_signed(&doc, &app, RESEARCH, secret, &late).await;
    assert_eq!(status, 409);

    // Revenue: booked, booked before, an unknown source type.
    let revenue = json!({"nicheSlug": "roofing", "externalId": "inv-1", "sourceType": "usage",
                         "grossMinor": 1000, "processingMinor": 30, "currency": "EUR"});
    let (status, booked) = post_signed(&doc, &app, REVENUE, secret, &revenue).await;
    assert_eq!(status, 201);
    assert!(!booked["allocations"].as_array().expect("a list").is_empty());
    let (status, _) = post_signed(&doc, &app, REVENUE, secret, &revenue).await;
    assert_eq!(status, 200);
    let mut odd = revenue.clone();
    odd["sourceType"] = json!("lottery");
    let (status, _) = post_signed(&doc, &app, REVENUE, secret, &odd).await;
    assert_eq!(status, 400);

    // Anomaly signals: appended, seen before, the agent's secret refused.
    let signal = json!({"signalId": "s-1", "subjectType": "question", "subjectId": id,
                        "kind": "burst", "severity": "low", "finding": "many at once"});
    let (status, _) = post_signed(&doc, &app, SIGNALS, MONITOR_SECRET, &signal).await;
    assert_eq!(status, 201);
    let (status, _) = post_signed(&doc, &app, SIGNALS, MONITOR_SECRET, &signal).await;
    assert_eq!(status, 200);
    let (status, _) = post_signed(&doc, &app, SIGNALS, secret, &signal).await;
    assert_eq!(status, 401);

    // The document itself, as served, is the committed one.
    let served = app
        .client
        .get(app.url("/openapi.json"))
        .send()
        .await
        .expect("sent");
    assert_eq!(served.status(), 200);
    assert_eq!(
        served
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/json")
    );
    assert!(served.text().await.expect("a body") == COMMITTED);
}

on_both_backends! {
    config: |config| config.monitor =
        askloop::domain::signing::SigningKeys::new(Some(MONITOR_SECRET.into()), None);
    every_route_answers_as_documented,
}
