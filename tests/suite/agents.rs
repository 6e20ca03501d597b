//! The agent registry (docs/contract.md#agents), on both backends: registered agents sign with
//! their own secrets and name themselves in `X-Askloop-Agent`; each asks only in its niches,
//! sees and touches only its own questions, and receives only its own events at its own
//! endpoint (chovy or Standard Webhooks); rotation keeps the previous secret until it retires;
//! a disabled agent is refused and its events wait; bad input to the registry changes nothing.

use askloop_tests::answers::early_access;
use std::time::Duration;

use askloop::config::Config;
use askloop::domain::agents::AGENT_HEADER;
use askloop::domain::sealing::{DataKey, SEALED_PREFIX};
use askloop::domain::signing::{SIGNATURE_HEADER, sign};
use askloop::service::agents::registry::{self, Endpoint, NewAgent};
use askloop::service::audit::Actor;
use askloop_tests::fixtures::{open_niche, question_body};
use askloop_tests::people::{operator, person};
use askloop_tests::receiver::{Receiver, reserve_port};
use askloop_tests::standard_webhooks::verify_with_library;
use askloop_tests::{TestApp, error_code, on_both_backends};
use entity::agents::WebhookScheme;
use entity::deliveries::{self, DeliveryStatus};
use entity::{agent_questions, audit_log, delivery_attempts};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter,
};
use serde_json::{Value, json};

pub(crate) const WAIT: Duration = Duration::from_secs(20);
const INTAKE: &str = "/api/v1/internal/expert-questions";
const LOOKUP: &str = "/api/v1/internal/expert-questions/lookup";
const RESEARCH: &str = "/api/v1/internal/research-results";

/// Deliveries sent at once and retried quickly.
pub(crate) fn quick(config: &mut Config) {
    config.delivery.timeout = Duration::from_millis(500);
    config.delivery.lease = Duration::from_secs(2);
    config.delivery.retry_base = Duration::from_millis(50);
    config.delivery.poll = Duration::from_millis(50);
}

/// Register `slug` for `niches` with an endpoint; its secret.
pub(crate) async fn register(
    app: &TestApp,
    slug: &str,
    niches: &[&str],
    url: Option<&str>,
    scheme: WebhookScheme,
) -> String {
    let created = registry::create(
        &app.db,
        app.config().data_key.as_ref(),
        NewAgent {
            slug: askloop::domain::agents::AgentSlug::parse(slug).expect("a slug"),
            name: format!("Agent {slug}"),
            niches: niches.iter().map(|n| (*n).to_owned()).collect(),
            endpoint: Endpoint {
                url: url.map(str::to_owned),
                scheme,
                events: Vec::new(),
            },
        },
        &Actor::Cli,
        chrono::Utc::now(),
    )
    .await
    .expect("the agent is registered");
    created.secret
}

/// POST `body` to `path` as agent `slug`, signed with `secret`.
pub(crate) async fn post_as(
    app: &TestApp,
    slug: &str,
    secret: &str,
    path: &str,
    body: &Value,
) -> reqwest::Response {
    let body = body.to_string();
    app.client
        .post(app.url(path))
        .header("content-type", "application/json")
        .header(AGENT_HEADER, slug)
        .header(
            SIGNATURE_HEADER,
            sign(secret, body.as_bytes(), chrono::Utc::now().timestamp()),
        )
        .body(body)
        .send()
        .await
        .expect("the request is sent")
}

/// Ask `external_id` in `niche` as `slug`; the status and body.
pub(crate) async fn ask_as(
    app: &TestApp,
    slug: &str,
    secret: &str,
    niche: &str,
    external_id: &str,
) -> (u16, Value) {
    let response = post_as(
        app,
        slug,
        secret,
        INTAKE,
        &question_body(niche, external_id),
    )
    .await;
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

async fn question_count(app: &TestApp) -> u64 {
    agent_questions::Entity::find()
        .count(&app.db)
        .await
        .expect("count")
}

async fn two_agents_each_ask_only_in_their_own_niche(app: TestApp) {
    open_niche(&app.db, "games").await;
    open_niche(&app.db, "roofing").await;
    let a = register(&app, "agent-a", &["games"], None, WebhookScheme::Chovy).await;
    let b = register(&app, "agent-b", &["roofing"], None, WebhookScheme::Chovy).await;

    let (status, body) = ask_as(&app, "agent-a", &a, "roofing", "q-a").await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["code"], "FORBIDDEN");
    assert_eq!(question_count(&app).await, 0, "nothing is stored");

    let (status, body) = ask_as(&app, "agent-a", &a, "games", "q-a").await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = ask_as(&app, "agent-b", &b, "roofing", "q-b").await;
    assert_eq!(status, 201, "{body}");
    let id = body["question"]["id"].as_i64().expect("an id");
    let row = agent_questions::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .expect("query")
        .expect("the question");
    let b_row = registry::find(&app.db, "agent-b").await.expect("agent-b");
    assert_eq!(
        row.registered_agent_id,
        Some(b_row.id),
        "the question records its agent"
    );

    // B signing with A's secret is a bad signature, not a way into A's niches.
    let (status, _) = ask_as(&app, "agent-b", &a, "games", "q-x").await;
    assert_eq!(status, 401);
    // The default agent still asks anywhere.
    assert!(app.ask("roofing", "q-default").await > 0);
}

async fn an_agent_cannot_look_up_or_add_research_to_another_agents_question(app: TestApp) {
    open_niche(&app.db, "games").await;
    let a = register(&app, "agent-a", &["games"], None, WebhookScheme::Chovy).await;
    let b = register(&app, "agent-b", &["games"], None, WebhookScheme::Chovy).await;
    let (status, _) = ask_as(&app, "agent-b", &b, "games", "b-1").await;
    assert_eq!(status, 201);

    let research = json!({"nicheSlug": "games", "externalId": "b-1", "context": "more"});
    let refused = post_as(&app, "agent-a", &a, RESEARCH, &research).await;
    assert_eq!(refused.status(), 404);
    let lookup = json!({"nicheSlug": "games", "externalIds": ["b-1"]});
    let seen: Value = post_as(&app, "agent-a", &a, LOOKUP, &lookup)
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(seen["questions"][0]["found"], false, "{seen}");
    // The default agent does not see it either.
    let seen: Value = app
        .post_signed(LOOKUP, &lookup.to_string())
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(seen["questions"][0]["found"], false, "{seen}");

    // Its own agent does, and may add research.
    let seen: Value = post_as(&app, "agent-b", &b, LOOKUP, &lookup)
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(seen["questions"][0]["found"], true, "{seen}");
    assert_eq!(
        post_as(&app, "agent-b", &b, RESEARCH, &research)
            .await
            .status(),
        200
    );

    // A may not take B's external id in the shared niche.
    let (status, body) = ask_as(&app, "agent-a", &a, "games", "b-1").await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["reason"], "EXTERNAL_ID_TAKEN");
}

async fn an_agent_books_revenue_only_in_its_niches(app: TestApp) {
    open_niche(&app.db, "games").await;
    open_niche(&app.db, "roofing").await;
    let a = register(&app, "agent-a", &["games"], None, WebhookScheme::Chovy).await;
    let revenue = |niche: &str| {
        json!({"nicheSlug": niche, "externalId": "inv-1", "sourceType": "usage",
            "grossMinor": 1000, "currency": "USD"})
    };
    let refused = post_as(
        &app,
        "agent-a",
        &a,
        "/api/v1/internal/revenue-events",
        &revenue("roofing"),
    )
    .await;
    assert_eq!(refused.status(), 403);
    assert_eq!(
        entity::revenue_events::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        0
    );
    let booked = post_as(
        &app,
        "agent-a",
        &a,
        "/api/v1/internal/revenue-events",
        &revenue("games"),
    )
    .await;
    assert_eq!(booked.status(), 201);
}

async fn each_agent_receives_only_its_own_events_at_its_own_endpoint(app: TestApp) {
    open_niche(&app.db, "games").await;
    open_niche(&app.db, "roofing").await;
    let ana = operator(&app.db, "games", "ana").await;
    askloop_tests::people::member(
        &app.db,
        "roofing",
        &ana,
        entity::niche_members::MemberRole::Operator,
        entity::niche_members::MemberStatus::Active,
    )
    .await;
    let (a_addr, b_addr) = (reserve_port(), reserve_port());
    let a = register(
        &app,
        "agent-a",
        &["games"],
        Some(&Receiver::url_for(a_addr)),
        WebhookScheme::Chovy,
    )
    .await;
    let b = register(
        &app,
        "agent-b",
        &["roofing"],
        Some(&Receiver::url_for(b_addr)),
        WebhookScheme::Chovy,
    )
    .await;
    let at_a = Receiver::start_verifying(a_addr, &a, Vec::new()).await;
    let at_b = Receiver::start_verifying(b_addr, &b, Vec::new()).await;
    // The default agent's endpoint hears nothing of theirs.
    let at_default = Receiver::start_for(&app, Vec::new()).await;

    let (_, asked_a) = ask_as(&app, "agent-a", &a, "games", "a-1").await;
    let (_, asked_b) = ask_as(&app, "agent-b", &b, "roofing", "b-1").await;
    for asked in [&asked_a, &asked_b] {
        let id = asked["question"]["id"].as_i64().expect("an id");
        let answered = app
            .answer(&ana.token, early_access(id, Some("The 1.0 date.")))
            .await;
        assert!(answered["errors"].is_null(), "{answered}");
    }
    // Each endpoint has an event and every delivery is recorded as delivered, so nothing is left
    // in flight to either endpoint.
    for receiver in [&at_a, &at_b] {
        receiver
            .wait_until(WAIT, "its answer", |r| !r.is_empty())
            .await;
    }
    app.until_every_delivery_delivered().await;
    for (receiver, asked) in [(&at_a, &asked_a), (&at_b, &asked_b)] {
        let got = receiver.received();
        assert_eq!(got.len(), 1, "only its own event");
        assert!(got[0].verified, "signed with its own secret");
        assert_eq!(got[0].envelope["type"], "expert_answer.created");
        assert_eq!(
            got[0].envelope["payload"]["questionId"],
            asked["question"]["id"]
        );
    }
    assert!(at_default.received().is_empty());
}

/// A delivering app whose default endpoint is a receiver started by the test.
fn delivering(config: &mut Config) {
    quick(config);
    config.webhook_url = Some(Receiver::url_for(reserve_port()));
}

async fn the_previous_secret_works_until_it_retires_without_a_failed_delivery_or_intake(
    app: TestApp,
) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let addr = reserve_port();
    let old = register(
        &app,
        "agent-a",
        &["games"],
        Some(&Receiver::url_for(addr)),
        WebhookScheme::Chovy,
    )
    .await;
    // The agent's receiver still holds the old secret while it rolls the new one out.
    let receiver = Receiver::start_verifying(addr, &old, Vec::new()).await;

    let admin = person(&app.db, "root", true).await;
    let rotated = app
        .graphql(
            Some(&admin.token),
            "mutation { rotateAgentSecret(slug: \"agent-a\", retirePreviousInSeconds: 3600) { secret agent { previousSecretRetiresAt } } }",
            json!({}),
        )
        .await;
    assert!(rotated["errors"].is_null(), "{rotated}");
    let new = rotated["data"]["rotateAgentSecret"]["secret"]
        .as_str()
        .expect("the new secret, once")
        .to_owned();
    assert_ne!(new, old);

    let (status, asked) = ask_as(&app, "agent-a", &old, "games", "q-old").await;
    assert_eq!(
        status, 201,
        "the previous secret is still accepted: {asked}"
    );
    let (status, _) = ask_as(&app, "agent-a", &new, "games", "q-new").await;
    assert_eq!(status, 201);
    let id = asked["question"]["id"].as_i64().expect("an id");
    let answered = app
        .answer(&ana.token, early_access(id, Some("The 1.0 date.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    receiver
        .wait_until(WAIT, "the answer", |r| !r.is_empty())
        .await;
    let got = receiver.received();
    assert!(got[0].verified, "signed with both secrets while rotating");
    assert_eq!(got[0].signature.matches("v1=").count(), 2);

    // Time passes: the previous secret retires.
    let row = registry::find(&app.db, "agent-a").await.expect("agent-a");
    let mut retired: entity::agents::ActiveModel = row.into();
    retired.previous_retires_at = Set(Some(chrono::Utc::now() - chrono::Duration::seconds(1)));
    retired.update(&app.db).await.expect("retired");
    let (status, body) = ask_as(&app, "agent-a", &old, "games", "q-late").await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"], "bad signature");
    let (status, _) = ask_as(&app, "agent-a", &new, "games", "q-late").await;
    assert_eq!(status, 201);

    let failed = delivery_attempts::Entity::find()
        .filter(delivery_attempts::Column::Outcome.ne("delivered"))
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(failed, 0, "no delivery failed during the rotation");
}

async fn an_unknown_agent_is_refused_exactly_like_a_bad_signature(app: TestApp) {
    open_niche(&app.db, "games").await;
    let a = register(&app, "agent-a", &["games"], None, WebhookScheme::Chovy).await;
    let body = question_body("games", "q-1");
    let unknown = post_as(&app, "ghost", &a, INTAKE, &body).await;
    assert_eq!(unknown.status(), 401);
    let unknown: Value = unknown.json().await.expect("JSON");
    let wrong = post_as(&app, "agent-a", "not-the-secret", INTAKE, &body).await;
    assert_eq!(wrong.status(), 401);
    let wrong: Value = wrong.json().await.expect("JSON");
    assert_eq!(
        unknown, wrong,
        "the response does not say whether the agent exists"
    );
    // The default agent's secret does not open a registered name, nor a malformed one.
    let as_default = post_as(&app, "ghost", askloop_tests::SECRET, INTAKE, &body).await;
    assert_eq!(as_default.status(), 401);
    let malformed = post_as(&app, "Not A Slug", &a, INTAKE, &body).await;
    assert_eq!(malformed.status(), 401);
    // An unsigned request names the missing signature, whoever it claims to be.
    let unsigned = app
        .client
        .post(app.url(INTAKE))
        .header(AGENT_HEADER, "ghost")
        .body(body.to_string())
        .send()
        .await
        .expect("sent");
    assert_eq!(unsigned.status(), 401);
    let unsigned: Value = unsigned.json().await.expect("JSON");
    assert_eq!(unsigned["error"], "no signature");
    assert_eq!(question_count(&app).await, 0);
}

async fn a_disabled_agent_is_refused_and_its_deliveries_wait_until_it_is_enabled(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let admin = person(&app.db, "root", true).await;
    let addr = reserve_port();
    let a = register(
        &app,
        "agent-a",
        &["games"],
        Some(&Receiver::url_for(addr)),
        WebhookScheme::Chovy,
    )
    .await;
    let receiver = Receiver::start_verifying(addr, &a, Vec::new()).await;
    let (_, asked) = ask_as(&app, "agent-a", &a, "games", "q-1").await;
    let id = asked["question"]["id"].as_i64().expect("an id");

    let disabled = app
        .graphql(
            Some(&admin.token),
            "mutation { disableAgent(slug: \"agent-a\") { status } }",
            json!({}),
        )
        .await;
    assert_eq!(
        disabled["data"]["disableAgent"]["status"], "DISABLED",
        "{disabled}"
    );
    let (status, body) = ask_as(&app, "agent-a", &a, "games", "q-2").await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["code"], "FORBIDDEN");
    let lookup = json!({"nicheSlug": "games", "externalIds": ["q-1"]});
    assert_eq!(
        post_as(&app, "agent-a", &a, LOOKUP, &lookup).await.status(),
        403
    );

    let answered = app
        .answer(&ana.token, early_access(id, Some("The 1.0 date.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    // Many polls later nothing was attempted: the delivery waits, neither failed nor lost. Time
    // is the fact: an absence, watched over many worker polls.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(receiver.received().is_empty());
    let waiting = deliveries::Entity::find()
        .one(&app.db)
        .await
        .expect("query")
        .expect("the delivery");
    assert_eq!(waiting.status, DeliveryStatus::Pending);
    assert_eq!(waiting.attempts, 0);

    let enabled = app
        .graphql(
            Some(&admin.token),
            "mutation { enableAgent(slug: \"agent-a\") { status } }",
            json!({}),
        )
        .await;
    assert_eq!(
        enabled["data"]["enableAgent"]["status"], "ACTIVE",
        "{enabled}"
    );
    receiver
        .wait_until(WAIT, "the waiting answer", |r| !r.is_empty())
        .await;
    assert!(receiver.received()[0].verified);
    assert_eq!(receiver.received()[0].envelope["id"], waiting.envelope_id);
    let actions: Vec<String> = audit_log::Entity::find()
        .filter(audit_log::Column::SubjectType.eq("agent"))
        .all(&app.db)
        .await
        .expect("query")
        .into_iter()
        .map(|row| row.action)
        .collect();
    assert_eq!(
        actions,
        ["agent.created", "agent.disabled", "agent.enabled"]
    );
}

async fn a_standard_endpoint_receives_a_delivery_its_library_verifies(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let addr = reserve_port();
    let secret = register(
        &app,
        "agent-std",
        &["games"],
        Some(&Receiver::url_for(addr)),
        WebhookScheme::Standard,
    )
    .await;
    assert!(secret.starts_with("whsec_"), "{secret}");
    let receiver = Receiver::start_verifying(addr, &secret, Vec::new()).await;
    let (_, asked) = ask_as(&app, "agent-std", &secret, "games", "q-1").await;
    let id = asked["question"]["id"].as_i64().expect("an id");
    let answered = app
        .answer(&ana.token, early_access(id, Some("The 1.0 date.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    receiver
        .wait_until(WAIT, "the answer", |r| !r.is_empty())
        .await;
    let got = receiver.received().remove(0);
    assert!(got.verified, "the signature verifies: {:?}", got.headers);
    assert_eq!(got.header("webhook-id"), got.envelope["id"].as_str());
    assert!(
        got.header("webhook-signature")
            .is_some_and(|s| s.starts_with("v1,"))
    );
    assert!(
        got.header(SIGNATURE_HEADER).is_none(),
        "one scheme at a time"
    );

    // The scheme's own library agrees, and refuses a changed byte or another secret.
    assert_eq!(
        verify_with_library(&secret, &got, &got.body),
        Ok(got.envelope["id"].as_str().expect("an id").to_owned())
    );
    let tampered = got.body.replace("The 1.0 date.", "The EA date.");
    assert!(verify_with_library(&secret, &got, &tampered).is_err());
    let other = askloop::domain::agents::new_secret();
    assert!(verify_with_library(&other, &got, &got.body).is_err());
}

async fn an_endpoint_receives_only_the_events_it_wants(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let admin = person(&app.db, "root", true).await;
    let a = register(
        &app,
        "agent-a",
        &["games"],
        Some("http://127.0.0.1:9/hooks"),
        WebhookScheme::Chovy,
    )
    .await;
    let set = app
        .graphql(
            Some(&admin.token),
            "mutation { setAgentEndpoint(slug: \"agent-a\", endpoint: {url: \"http://127.0.0.1:9/hooks\", scheme: STANDARD, events: [\"expert_question.dismissed\"]}) { endpoint { scheme events } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        set["data"]["setAgentEndpoint"]["endpoint"],
        json!({"scheme": "STANDARD", "events": ["expert_question.dismissed"]}),
        "{set}"
    );
    let (_, asked) = ask_as(&app, "agent-a", &a, "games", "q-1").await;
    let id = asked["question"]["id"].as_i64().expect("an id");
    let answered = app
        .answer(&ana.token, early_access(id, Some("The 1.0 date.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    assert_eq!(
        deliveries::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        0,
        "an answer is not among the events it wants"
    );
}

/// Every change to the registry an admin can make, with the registry's state as a value.
async fn registry_state(app: &TestApp) -> (u64, u64, Value) {
    let agents = entity::agents::Entity::find()
        .count(&app.db)
        .await
        .expect("count");
    let audited = audit_log::Entity::find()
        .filter(audit_log::Column::SubjectType.eq("agent"))
        .count(&app.db)
        .await
        .expect("count");
    let listed = registry::list(&app.db).await.expect("list");
    let summary = json!(
        listed
            .iter()
            .map(|s| json!([
                s.agent.slug,
                s.niches,
                s.agent.status,
                s.agent.webhook_url,
                s.agent.secret_current
            ]))
            .collect::<Vec<_>>()
    );
    (agents, audited, summary)
}

async fn bad_input_to_the_registry_is_refused_clearly_and_changes_nothing(app: TestApp) {
    open_niche(&app.db, "games").await;
    register(&app, "agent-a", &["games"], None, WebhookScheme::Chovy).await;
    let admin = person(&app.db, "root", true).await;
    let member = operator(&app.db, "games", "ana").await;
    let before = registry_state(&app).await;
    let create = "mutation($input: CreateAgentInput!) { createAgent(input: $input) { secret } }";
    let input = |slug: &str, niches: Value, endpoint: Value| json!({"input": {"slug": slug, "name": "An agent", "niches": niches, "endpoint": endpoint}});
    for (variables, code, says) in [
        (
            input("Bad Slug", json!(["games"]), Value::Null),
            "BAD_USER_INPUT",
            "not an agent slug",
        ),
        (
            input("x", json!(["games"]), Value::Null),
            "BAD_USER_INPUT",
            "not an agent slug",
        ),
        (
            input("agent-b", json!(["nope"]), Value::Null),
            "BAD_USER_INPUT",
            "no niche 'nope'",
        ),
        (
            input("agent-b", json!([]), Value::Null),
            "BAD_USER_INPUT",
            "at least one niche",
        ),
        (
            input("agent-b", json!(["games"]), json!({"url": "ftp://x/y"})),
            "BAD_USER_INPUT",
            "http:// or https://",
        ),
        (
            input("agent-b", json!(["games"]), json!({"url": "not a url"})),
            "BAD_USER_INPUT",
            "http:// or https://",
        ),
        (
            input(
                "agent-b",
                json!(["games"]),
                json!({"events": ["answer.maybe"]}),
            ),
            "BAD_USER_INPUT",
            "not an event askloop sends",
        ),
        (
            input("agent-a", json!(["games"]), Value::Null),
            "CONFLICT",
            "already exists",
        ),
        (
            json!({"input": {"slug": "agent-b", "name": "  ", "niches": ["games"]}}),
            "BAD_USER_INPUT",
            "name",
        ),
    ] {
        let refused = app
            .graphql(Some(&admin.token), create, variables.clone())
            .await;
        assert_eq!(error_code(&refused), Some(code), "{variables}: {refused}");
        let message = refused["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{variables}: {message}");
    }
    for (mutation, code) in [
        (
            "mutation { rotateAgentSecret(slug: \"ghost\") { secret } }",
            "NOT_FOUND",
        ),
        (
            "mutation { rotateAgentSecret(slug: \"agent-a\", retirePreviousInSeconds: -1) { secret } }",
            "BAD_USER_INPUT",
        ),
        (
            "mutation { rotateAgentSecret(slug: \"agent-a\", retirePreviousInSeconds: 2592001) { secret } }",
            "BAD_USER_INPUT",
        ),
        (
            // Far past any date: refused as a number, never turned into a time.
            "mutation { rotateAgentSecret(slug: \"agent-a\", retirePreviousInSeconds: 33002518175046784) { secret } }",
            "BAD_USER_INPUT",
        ),
        (
            "mutation { disableAgent(slug: \"ghost\") { status } }",
            "NOT_FOUND",
        ),
        (
            "mutation { enableAgent(slug: \"ghost\") { status } }",
            "NOT_FOUND",
        ),
        (
            "mutation { setAgentNiches(slug: \"agent-a\", niches: [\"games\", \"nope\"]) { niches } }",
            "BAD_USER_INPUT",
        ),
        (
            "mutation { setAgentNiches(slug: \"ghost\", niches: [\"games\"]) { niches } }",
            "NOT_FOUND",
        ),
        (
            "mutation { setAgentEndpoint(slug: \"agent-a\", endpoint: {url: \"javascript:alert(1)\"}) { slug } }",
            "BAD_USER_INPUT",
        ),
    ] {
        let refused = app.graphql(Some(&admin.token), mutation, json!({})).await;
        assert_eq!(error_code(&refused), Some(code), "{mutation}: {refused}");
    }
    // Not an admin: refused before anything is read.
    for query in [
        "{ agents { slug } }",
        "mutation { rotateAgentSecret(slug: \"agent-a\") { secret } }",
        "mutation { disableAgent(slug: \"agent-a\") { status } }",
    ] {
        let refused = app.graphql(Some(&member.token), query, json!({})).await;
        assert_eq!(
            error_code(&refused),
            Some("FORBIDDEN"),
            "{query}: {refused}"
        );
        let anonymous = app.graphql(None, query, json!({})).await;
        assert_eq!(
            error_code(&anonymous),
            Some("UNAUTHENTICATED"),
            "{query}: {anonymous}"
        );
    }
    let refused = app
        .graphql(
            Some(&member.token),
            create,
            input("agent-b", json!(["games"]), Value::Null),
        )
        .await;
    assert_eq!(error_code(&refused), Some("FORBIDDEN"));
    assert_eq!(registry_state(&app).await, before, "nothing changed");
}

async fn admins_manage_agents_and_see_their_niches_endpoint_and_deliveries(app: TestApp) {
    open_niche(&app.db, "games").await;
    open_niche(&app.db, "roofing").await;
    let admin = person(&app.db, "root", true).await;
    let created = app
        .graphql(
            Some(&admin.token),
            "mutation { createAgent(input: {slug: \"agent-a\", name: \"Agent A\", niches: [\"games\"], endpoint: {url: \"https://agent.example/hooks\", scheme: STANDARD}}) { secret agent { slug status niches endpoint { url scheme events } } } }",
            json!({}),
        )
        .await;
    assert!(created["errors"].is_null(), "{created}");
    let secret = created["data"]["createAgent"]["secret"]
        .as_str()
        .expect("a secret")
        .to_owned();
    assert_eq!(
        created["data"]["createAgent"]["agent"],
        json!({"slug": "agent-a", "status": "ACTIVE", "niches": ["games"],
               "endpoint": {"url": "https://agent.example/hooks", "scheme": "STANDARD", "events": []}})
    );
    let moved = app
        .graphql(
            Some(&admin.token),
            "mutation { setAgentNiches(slug: \"agent-a\", niches: [\"roofing\", \"games\"]) { niches } }",
            json!({}),
        )
        .await;
    assert_eq!(
        moved["data"]["setAgentNiches"]["niches"],
        json!(["games", "roofing"])
    );
    let (status, _) = ask_as(&app, "agent-a", &secret, "roofing", "r-1").await;
    assert_eq!(status, 201, "its new niche takes its questions");
    let ana = operator(&app.db, "roofing", "ana").await;
    let id = agent_questions::Entity::find()
        .one(&app.db)
        .await
        .expect("query")
        .expect("q")
        .id;
    app.answer(&ana.token, early_access(id, Some("The 1.0 date.")))
        .await;
    let listed = app
        .graphql(
            Some(&admin.token),
            "{ agents { slug niches recentDeliveries(first: 5) { eventType status } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        listed["data"]["agents"],
        json!([{"slug": "agent-a", "niches": ["games", "roofing"],
                "recentDeliveries": [{"eventType": "expert_answer.created", "status": "PENDING"}]}]),
        "{listed}"
    );
    // The secret is not readable anywhere in the API afterwards.
    let everything = app
        .graphql(
            Some(&admin.token),
            "{ agents { slug name endpoint { url } } auditLog(first: 50) { detail } }",
            json!({}),
        )
        .await;
    assert!(
        !everything.to_string().contains(&secret[6..]),
        "{everything}"
    );
}

fn with_data_key(config: &mut Config) {
    config.data_key =
        Some(DataKey::parse("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").expect("a key"));
}

async fn with_a_data_key_secrets_are_sealed_at_rest_and_still_verify(app: TestApp) {
    open_niche(&app.db, "games").await;
    let secret = register(&app, "agent-a", &["games"], None, WebhookScheme::Chovy).await;
    let row = registry::find(&app.db, "agent-a").await.expect("agent-a");
    assert!(
        row.secret_current.starts_with(SEALED_PREFIX),
        "{}",
        row.secret_current
    );
    assert!(!row.secret_current.contains(&secret[6..]));
    let (status, body) = ask_as(&app, "agent-a", &secret, "games", "q-1").await;
    assert_eq!(status, 201, "{body}");
    // An instance without the key cannot read it, and says so rather than accepting anything.
    let keyless = app.another_instance_with(|c| c.data_key = None).await;
    let refused = post_as(
        &keyless,
        "agent-a",
        &secret,
        INTAKE,
        &question_body("games", "q-2"),
    )
    .await;
    assert_eq!(refused.status(), 500);
}

on_both_backends!(
    two_agents_each_ask_only_in_their_own_niche,
    an_agent_cannot_look_up_or_add_research_to_another_agents_question,
    an_agent_books_revenue_only_in_its_niches,
    an_unknown_agent_is_refused_exactly_like_a_bad_signature,
    an_endpoint_receives_only_the_events_it_wants,
    bad_input_to_the_registry_is_refused_clearly_and_changes_nothing,
    admins_manage_agents_and_see_their_niches_endpoint_and_deliveries,
);

on_both_backends! {
    config: delivering;
    each_agent_receives_only_its_own_events_at_its_own_endpoint,
    the_previous_secret_works_until_it_retires_without_a_failed_delivery_or_intake,
    a_disabled_agent_is_refused_and_its_deliveries_wait_until_it_is_enabled,
    a_standard_endpoint_receives_a_delivery_its_library_verifies,
}

on_both_backends! {
    config: with_data_key;
    with_a_data_key_secrets_are_sealed_at_rest_and_still_verify,
}
