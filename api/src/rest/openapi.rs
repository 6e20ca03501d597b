//! `GET /openapi.json`: the REST routes as an OpenAPI 3.1 document, generated from the handlers'
//! attributes and the wire types in `rest::views` (docs/contract.md#openapi). The committed
//! `openapi.json` is this document; a test fails when the two drift apart.

use std::sync::OnceLock;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{forms, health, intake, knowledge, links, lookup, money, queue, research, withdraw};

/// The document's root: every REST route and the security schemes they use.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "askloop REST API",
        description = "Agents ask the questions they cannot settle; the people who have done the \
            job answer. These are askloop's REST routes: the signed routes agents call, the \
            member routes, the dashboard's form posts and the operations endpoints. Integrators \
            also have GraphQL (`/graphql`, schema in schema.graphql) and agents an MCP server \
            (`/mcp`). The contract is docs/contract.md.",
        license(name = "MIT", identifier = "MIT"),
    ),
    paths(
        intake::receive_question,
        lookup::lookup,
        knowledge::search,
        knowledge::reuse,
        knowledge::export,
        research::research_returned,
        withdraw::withdraw,
        money::revenue_event,
        money::anomaly_signal,
        queue::list,
        queue::answer,
        forms::answer,
        forms::dismiss,
        links::verify_email,
        links::unsubscribe_page,
        links::unsubscribe,
        health::healthz,
        health::readyz,
        health::metrics,
        openapi_json,
    ),
    modifiers(&SecuritySchemes),
    tags(
        (name = "agents", description = "Signed routes an agent calls (docs/contract.md#signed-routes)."),
        (name = "monitors", description = "Signed with the monitor's secret."),
        (name = "members", description = "For the people of a niche: a session or an API key."),
        (name = "forms", description = "What the dashboard's plain HTML forms post."),
        (name = "links", description = "The signed links askloop mails (address verification, unsubscribe)."),
        (name = "operations", description = "Health, readiness, metrics and this document."),
    )
)]
struct ApiDoc;

/// The security schemes the routes name.
struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "agentSignature",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-Chovy-Signature",
                "`t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<raw body>\">` with the agent's \
                 signing secret (the default agent's is CHOVY_SIGNING_SECRET); at most 300 s \
                 old. During a rotation, `v1=` may appear once per secret. See \
                 docs/contract.md#signing.",
            ))),
        );
        components.add_security_scheme(
            "agentSlug",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-Askloop-Agent",
                "The registered agent's slug; its own secrets must sign the request. Without \
                 it, the request is the built-in default agent's. See docs/contract.md#agents.",
            ))),
        );
        components.add_security_scheme(
            "monitorSignature",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-Chovy-Signature",
                "The same scheme as agentSignature, with ASKLOOP_MONITOR_SECRET.",
            ))),
        );
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "A session token (`al_sess_…`, from the GraphQL `login`) or an API key \
                         (`al_key_…`).",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "sessionCookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                crate::auth::SESSION_COOKIE,
                "The dashboard's session cookie; writes with it must come from askloop's own \
                 origin.",
            ))),
        );
    }
}

/// The document.
pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// The document as pretty JSON with a final newline, as committed in `openapi.json`.
pub fn json() -> String {
    let mut text = document()
        .to_pretty_json()
        .expect("the OpenAPI document serialises");
    text.push('\n');
    text
}

/// Serve the document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "operations",
    operation_id = "openapi",
    summary = "This document",
    responses((status = 200, description = "The OpenAPI 3.1 document.", content_type = "application/json", body = Object))
)]
pub async fn openapi_json() -> Response {
    static DOCUMENT: OnceLock<String> = OnceLock::new();
    (
        [(header::CONTENT_TYPE, "application/json")],
        DOCUMENT.get_or_init(json).as_str(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::domain::intake::parse_new_question;
    use crate::error::ServiceError;

    fn document_value() -> Value {
        serde_json::from_str(&json()).expect("the document is JSON")
    }

    fn schema<'a>(doc: &'a Value, name: &str) -> &'a Value {
        &doc["components"]["schemas"][name]
    }

    fn properties(doc: &Value, name: &str) -> Vec<String> {
        let mut names: Vec<String> = schema(doc, name)["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("{name} has properties"))
            .keys()
            .cloned()
            .collect();
        names.sort();
        names
    }

    #[test]
    fn every_rest_route_is_in_the_document() {
        let doc = document_value();
        assert_eq!(doc["openapi"], "3.1.0");
        let paths = doc["paths"].as_object().expect("paths");
        for (path, method) in [
            ("/api/v1/internal/expert-questions", "post"),
            ("/api/v1/internal/expert-questions/lookup", "post"),
            ("/api/v1/internal/expert-questions/withdraw", "post"),
            ("/api/v1/internal/knowledge/search", "post"),
            ("/api/v1/internal/knowledge/reuse", "post"),
            ("/api/v1/niches/{slug}/knowledge/export", "get"),
            ("/api/v1/internal/research-results", "post"),
            ("/api/v1/internal/revenue-events", "post"),
            ("/api/v1/internal/anomaly-signals", "post"),
            ("/api/v1/niches/{slug}/questions", "get"),
            ("/api/v1/niches/{slug}/questions/{id}/answer", "post"),
            ("/dashboard/questions/{id}/answer", "post"),
            ("/dashboard/questions/{id}/dismiss", "post"),
            ("/email/verify", "get"),
            ("/notifications/unsubscribe", "get"),
            ("/notifications/unsubscribe", "post"),
            ("/healthz", "get"),
            ("/readyz", "get"),
            ("/metrics", "get"),
            ("/openapi.json", "get"),
        ] {
            assert!(
                paths.get(path).and_then(|p| p.get(method)).is_some(),
                "{method} {path} is not documented"
            );
        }
        assert_eq!(
            paths.len(),
            19,
            "a documented route the router does not have"
        );
    }

    #[test]
    fn the_signed_routes_name_the_signature_and_the_agent_header() {
        let doc = document_value();
        let schemes = doc["components"]["securitySchemes"].as_object().unwrap();
        assert_eq!(schemes["agentSignature"]["name"], "X-Chovy-Signature");
        assert_eq!(schemes["agentSlug"]["name"], "X-Askloop-Agent");
        let ask = &doc["paths"]["/api/v1/internal/expert-questions"]["post"];
        assert_eq!(
            ask["security"],
            json!([{"agentSignature": [], "agentSlug": []}, {"agentSignature": []}])
        );
        assert_eq!(
            ask["responses"]["402"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/OverBudgetBody"
        );
    }

    /// The documented error codes are exactly the ones `ServiceError` answers with.
    #[test]
    fn the_error_codes_are_the_services_codes() {
        let doc = document_value();
        let mut documented: Vec<String> = schema(&doc, "ErrorCode")["enum"]
            .as_array()
            .expect("ErrorCode is an enum")
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect();
        documented.sort();
        let errors = [
            ServiceError::BadInput(String::new()),
            ServiceError::Unauthenticated(String::new()),
            ServiceError::Forbidden(String::new()),
            ServiceError::NotFound(String::new()),
            ServiceError::Conflict(crate::error::Conflict::NotAwaitingResearch),
            ServiceError::Unavailable(String::new()),
            ServiceError::OverBudget {
                remaining_minor: 0,
                resets_at: chrono::Utc::now(),
            },
            ServiceError::RateLimited {
                message: String::new(),
                reason: crate::error::TEST_SENDS_PER_WEBHOOK,
                retry_after: std::time::Duration::from_secs(1),
            },
            ServiceError::Internal(anyhow::anyhow!("x")),
            ServiceError::TemporarilyUnavailable(anyhow::anyhow!("x")),
        ];
        let mut actual: Vec<String> = errors
            .iter()
            .map(|e| e.code().as_str().to_owned())
            .collect();
        actual.sort();
        actual.dedup();
        assert_eq!(documented, actual);
        // And each body has exactly the documented fields.
        let over = errors[6].body();
        let mut keys: Vec<String> = over.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        assert_eq!(keys, properties(&doc, "OverBudgetBody"));
        // The fullest error body has every documented field; the others a part of them.
        let temporary = errors[9].body();
        let mut keys: Vec<String> = temporary.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        assert_eq!(keys, properties(&doc, "ErrorBody"));
        let conflict = errors[4].body();
        let documented = properties(&doc, "ErrorBody");
        assert!(
            conflict
                .as_object()
                .unwrap()
                .keys()
                .all(|key| documented.contains(key))
        );
    }

    /// The intake's documented body is what its parser reads: a body with every documented
    /// field is accepted and each one lands, and the parser's required fields are the
    /// documented required ones.
    #[test]
    fn the_ask_body_is_what_the_intake_parser_reads() {
        let doc = document_value();
        let documented = properties(&doc, "AskBody");
        let mut expected = vec![
            "agentId",
            "answers",
            "bountyMinor",
            "budgetLimitMinor",
            "context",
            "deliverable",
            "expiresInSeconds",
            "externalId",
            "kind",
            "nicheId",
            "nicheSlug",
            "options",
            "question",
            "relatedResourceIds",
            // Read by the route beside the parser: whether to answer with similar entries.
            "similar",
            "title",
            "urgency",
        ];
        expected.sort_unstable();
        assert_eq!(documented, expected);
        let full = json!({
            "nicheSlug": "roofing", "externalId": "q-1", "agentId": "run-1",
            "title": "t", "question": "q", "context": "c",
            "options": [{"id": "a", "label": "A"}], "urgency": "high",
            "relatedResourceIds": ["r"], "bountyMinor": 5, "expiresInSeconds": 3600,
            "answers": {"wanted": 1, "agreement": 0.75},
        });
        let parsed = parse_new_question(&full).expect("a full documented body parses");
        assert_eq!(parsed.external_id.as_deref(), Some("q-1"));
        assert_eq!(parsed.agent_id.as_deref(), Some("run-1"));
        assert_eq!(parsed.options.len(), 1);
        assert_eq!(parsed.related_resource_ids, vec!["r".to_owned()]);
        assert_eq!(parsed.bounty_minor, Some(5));
        assert_eq!(parsed.expires_in_seconds, Some(3600));
        assert_eq!(parsed.context.as_deref(), Some("c"));
        assert_eq!(
            (parsed.answers.wanted, parsed.answers.agreement_bps),
            (1, 7500)
        );
        // The task fields, which a question may not carry, land on a task.
        let task = json!({
            "nicheSlug": "roofing", "title": "t", "question": "q", "kind": "task",
            "budgetLimitMinor": 900, "deliverable": "d",
        });
        let parsed = parse_new_question(&task).expect("a documented task body parses");
        assert_eq!(parsed.budget_limit_minor, Some(900));
        assert_eq!(parsed.deliverable.as_deref(), Some("d"));
        let mut required: Vec<&str> = schema(&doc, "AskBody")["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        required.sort_unstable();
        assert_eq!(required, ["question", "title"]);
        for field in required {
            let mut without = full.clone();
            without.as_object_mut().unwrap().remove(field);
            let err = parse_new_question(&without).expect_err(field);
            assert!(err.0.contains(field), "{field}: {err}");
        }
    }

    /// The other signed bodies: every documented required field is one the parser requires.
    #[test]
    fn the_signed_bodies_require_what_their_parsers_require() {
        let doc = document_value();
        type Parse = fn(&Value) -> Result<(), ServiceError>;
        let cases: [(&str, Value, Parse); 5] = [
            (
                "WithdrawBody",
                json!({"questionId": "7", "reason": "not needed"}),
                |v| crate::rest::withdraw::parse(v).map(drop),
            ),
            (
                "LookupBody",
                json!({"nicheSlug": "roofing", "externalIds": ["a"], "waitSeconds": 0}),
                |v| crate::service::questions::lookup::parse(v).map(drop),
            ),
            (
                "ResearchBody",
                json!({"nicheSlug": "roofing", "externalId": "a", "context": "found"}),
                |v| crate::service::questions::research::parse(v).map(drop),
            ),
            (
                "RevenueBody",
                json!({"nicheSlug": "roofing", "externalId": "e", "sourceType": "usage",
                       "grossMinor": 100, "processingMinor": 1, "networkMinor": 1,
                       "infraMinor": 1, "refundMinor": 0, "currency": "EUR"}),
                |v| crate::service::money::revenue::parse(v).map(drop),
            ),
            (
                "SignalBody",
                json!({"signalId": "s", "subjectType": "question", "subjectId": "7",
                       "kind": "k", "severity": "low", "finding": "f"}),
                |v| crate::service::money::signals::parse(v).map(drop),
            ),
        ];
        for (name, full, parse) in cases {
            let documented = properties(&doc, name);
            let mut sent: Vec<String> = full.as_object().unwrap().keys().cloned().collect();
            sent.sort();
            let extra: Vec<&String> = documented.iter().filter(|d| !sent.contains(d)).collect();
            // nicheId is the documented alternative to nicheSlug; a withdrawal names its
            // question by questionId or by externalId (and nicheSlug), never both.
            let alternative = |e: &str| {
                e == "nicheId"
                    || (name == "WithdrawBody" && matches!(e, "externalId" | "nicheSlug"))
            };
            assert!(
                extra.iter().all(|e| alternative(e)),
                "{name}: documented but not exercised: {extra:?}"
            );
            parse(&full).unwrap_or_else(|e| panic!("{name}: a full body is refused: {e}"));
            // A withdrawal requires no one field: it names its question by one of two.
            let required = schema(&doc, name)["required"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for field in &required {
                let field = field.as_str().unwrap();
                let mut without = full.clone();
                without.as_object_mut().unwrap().remove(field);
                assert!(
                    parse(&without).is_err(),
                    "{name}: documented as required, but accepted without {field}"
                );
            }
        }
    }
}
