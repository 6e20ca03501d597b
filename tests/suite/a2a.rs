//! The A2A server (docs/contract.md#a2a), on both backends, spoken by hand over HTTP so the
//! tests see the wire: the Agent Card lists one skill per niche the caller may ask in; a
//! message asks a question (once per messageId); a person sending it back is `INPUT_REQUIRED`
//! and the agent's reply on the task is its research (`WORKING`); the answer completes the
//! task with an artifact; `CancelTask` withdraws; a dismissed or expired question is `REJECTED`
//! or `FAILED`; another agent's task is not found; every refusal is the JSON-RPC error the
//! protocol names, and changes nothing. Also: the official Python SDK (`a2a-sdk`, a client that
//! is not askloop's code) reads the card and walks a task through its states.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use askloop::domain::agents::AgentSlug;
use askloop::domain::delivery::EventType;
use askloop::service::agents::registry::{self, Endpoint, NewAgent};
use askloop::service::audit::Actor;
use askloop_tests::answers::early_access;
use askloop_tests::fixtures::{niche, open_niche};
use askloop_tests::mcp::{agent_with_token, token_for};
use askloop_tests::outside_client::{PersonActs, drive};
use askloop_tests::people::operator;
use askloop_tests::receiver::{Receiver, Reply, reserve_port};
use askloop_tests::{Backend, TestApp, on_both_backends};
use entity::agent_questions::{self, QuestionStatus};
use entity::agents::{AgentStatus, WebhookScheme};
use entity::deliveries::{self, DeliveryStatus};
use entity::niches::NicheStatus;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

const SEND_BACK: &str = "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: NEEDS_RESEARCH}) { notice } }";

/// A client of `/a2a` holding one agent token.
struct A2a<'a> {
    app: &'a TestApp,
    token: String,
}

impl A2a<'_> {
    /// POST `body` as it is; the response.
    async fn post_raw(&self, body: String) -> reqwest::Response {
        self.app
            .client
            .post(self.app.url("/a2a"))
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .header("a2a-version", "1.0")
            .body(body)
            .send()
            .await
            .expect("sent")
    }

    /// Call `method` with `params`: the JSON-RPC response (HTTP 200 asserted).
    async fn call(&self, method: &str, params: Value) -> Value {
        let response = self
            .post_raw(
                json!({"jsonrpc": "2.0", "id": "r-1", "method": method, "params": params})
                    .to_string(),
            )
            .await;
        assert_eq!(response.status(), 200, "{method}");
        let body: Value = response.json().await.expect("JSON");
        assert_eq!(body["jsonrpc"], "2.0", "{body}");
        assert_eq!(body["id"], "r-1", "{body}");
        body
    }

    /// Call `method`, which must succeed: its result.
    async fn ok(&self, method: &str, params: Value) -> Value {
        let body = self.call(method, params).await;
        assert!(body["error"].is_null(), "{method}: {body}");
        body["result"].clone()
    }

    /// Call `method`, which must fail: its error code and message.
    async fn refused(&self, method: &str, params: Value) -> (i64, String) {
        let body = self.call(method, params).await;
        assert!(body["result"].is_null(), "{method}: {body}");
        (
            body["error"]["code"].as_i64().expect("a code"),
            body["error"]["message"]
                .as_str()
                .expect("a message")
                .to_owned(),
        )
    }
}

async fn client<'a>(app: &'a TestApp, slug: &str, niches: &[&str]) -> A2a<'a> {
    A2a {
        app,
        token: agent_with_token(app, slug, niches).await,
    }
}

/// A message asking a question (options in a data part), with `message_id`.
fn asking(message_id: &str) -> Value {
    json!({"message": {
        "messageId": message_id,
        "role": "ROLE_USER",
        "parts": [
            {"text": "Early access or 1.0?"},
            {"data": {
                "niche": "games",
                "title": "Which date?",
                "options": [{"id": "ea", "label": "Early access"}, {"id": "full", "label": "1.0"}],
                "urgency": "high",
            }},
        ],
    }})
}

/// The agent's reply on `task` with `text`.
fn reply(task: &str, text: &str) -> Value {
    json!({"message": {
        "messageId": format!("reply-{task}"),
        "role": "ROLE_USER",
        "taskId": task,
        "parts": [{"text": text}],
    }})
}

fn question_id(task: &Value) -> i64 {
    task["metadata"]["questionId"]
        .as_i64()
        .expect("a question id")
}

async fn question_count(app: &TestApp) -> u64 {
    agent_questions::Entity::find()
        .count(&app.db)
        .await
        .expect("count")
}

async fn the_card_lists_one_skill_per_niche_the_caller_may_ask_in(app: TestApp) {
    open_niche(&app.db, "games").await;
    open_niche(&app.db, "roofing").await;
    niche(&app.db, "drafty", NicheStatus::Draft).await;
    let agent = client(&app, "agent-a", &["games"]).await;
    let card = |token: Option<String>| {
        let mut request = app.client.get(app.url("/.well-known/agent-card.json"));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };

    let public: Value = card(None).await.expect("sent").json().await.expect("JSON");
    let skills = |card: &Value| -> Vec<String> {
        card["skills"]
            .as_array()
            .expect("skills")
            .iter()
            .map(|s| s["id"].as_str().expect("an id").to_owned())
            .collect()
    };
    assert_eq!(skills(&public), ["games", "roofing"], "{public}");
    assert_eq!(public["capabilities"]["streaming"], false);
    let interface = &public["supportedInterfaces"][0];
    assert_eq!(interface["protocolBinding"], "JSONRPC");
    assert_eq!(interface["protocolVersion"], "1.0");
    assert_eq!(interface["url"], app.url("/a2a"));
    assert_eq!(
        public["securitySchemes"]["agentToken"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    assert_eq!(
        public["securityRequirements"][0]["schemes"]["agentToken"],
        json!({"list": []})
    );

    let own: Value = card(Some(agent.token.clone()))
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON");
    assert_eq!(skills(&own), ["games"], "{own}");

    let unknown = card(Some("al_agent_nobody".into())).await.expect("sent");
    assert_eq!(unknown.status(), 401);
}

async fn a_message_asks_a_question_once_per_message_id(app: TestApp) {
    open_niche(&app.db, "games").await;
    let agent = client(&app, "agent-a", &["games"]).await;
    let sent = agent.ok("SendMessage", asking("m-1")).await;
    let task = &sent["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{sent}");
    let id = question_id(task);
    assert_eq!(task["id"], format!("question-{id}"));
    assert_eq!(task["contextId"], task["id"]);
    assert_eq!(task["metadata"]["externalId"], "a2a:m-1");
    let stored = agent_questions::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .expect("read")
        .expect("stored");
    assert_eq!(stored.title, "Which date?");
    assert_eq!(stored.question, "Early access or 1.0?");

    // The same message again is the same task; another message is another.
    let again = agent.ok("SendMessage", asking("m-1")).await;
    assert_eq!(again["task"]["id"], task["id"]);
    assert_eq!(question_count(&app).await, 1);
    let other = agent.ok("SendMessage", asking("m-2")).await;
    assert_ne!(other["task"]["id"], task["id"]);

    // With one niche, the niche and the title may be left out.
    let plain = agent
        .ok(
            "SendMessage",
            json!({"message": {"messageId": "m-3", "role": "ROLE_USER",
                "parts": [{"text": "Is the demo still up?\nIt was yesterday."}]}}),
        )
        .await;
    let stored = agent_questions::Entity::find_by_id(question_id(&plain["task"]))
        .one(&app.db)
        .await
        .expect("read")
        .expect("stored");
    assert_eq!(stored.title, "Is the demo still up?");
}

async fn sent_back_replied_answered_the_task_goes_through_its_states(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let agent = client(&app, "agent-a", &["games"]).await;
    let task = agent.ok("SendMessage", asking("m-1")).await["task"].clone();
    let id = question_id(&task);
    let task_id = task["id"].as_str().expect("an id").to_owned();

    let sent_back = app
        .graphql(Some(&ana.token), SEND_BACK, json!({"id": id.to_string()}))
        .await;
    assert!(sent_back["errors"].is_null(), "{sent_back}");
    let waiting = agent.ok("GetTask", json!({"id": task_id})).await;
    assert_eq!(waiting["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(waiting["status"]["message"]["role"], "ROLE_AGENT");

    let replied = agent
        .ok(
            "SendMessage",
            reply(&task_id, "Steam shows early access on the 9th."),
        )
        .await;
    assert_eq!(replied["task"]["id"], task_id);
    assert_eq!(replied["task"]["status"]["state"], "TASK_STATE_WORKING");
    let stored = agent_questions::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .expect("read")
        .expect("stored");
    assert_eq!(stored.research_round, 1);
    // The same reply again (a retried request) is not appended twice.
    let again = agent
        .ok(
            "SendMessage",
            reply(&task_id, "Steam shows early access on the 9th."),
        )
        .await;
    assert_eq!(again["task"]["status"]["state"], "TASK_STATE_WORKING");
    let stored = agent_questions::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .expect("read")
        .expect("stored");
    assert_eq!(stored.research_round, 1);
    assert_eq!(
        stored
            .context
            .as_deref()
            .map(|c| c.matches("Steam shows early access on the 9th.").count()),
        Some(1)
    );
    assert!(
        stored
            .context
            .as_deref()
            .is_some_and(|c| c.contains("Steam shows early access on the 9th.")),
        "{:?}",
        stored.context
    );

    let answered = app
        .answer(&ana.token, early_access(id, Some("Ship early access.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    let done = agent.ok("GetTask", json!({"id": task_id})).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    let artifact = &done["artifacts"][0];
    assert_eq!(artifact["name"], "answer");
    assert_eq!(artifact["parts"][0]["text"], "Ship early access.");
    let data = &artifact["parts"][1]["data"];
    assert_eq!(data["optionId"], "ea", "{data}");
    assert_eq!(data["optionLabel"], "Early access");
    assert!(data["review"].is_string(), "{data}");

    // A settled task takes no more messages and cannot be canceled.
    let (code, _) = agent
        .refused("SendMessage", reply(&task_id, "More findings."))
        .await;
    assert_eq!(code, -32004);
    let (code, message) = agent.refused("CancelTask", json!({"id": task_id})).await;
    assert_eq!(code, -32002, "{message}");
}

async fn cancel_task_withdraws_the_question(app: TestApp) {
    open_niche(&app.db, "games").await;
    let agent = client(&app, "agent-a", &["games"]).await;
    let task = agent.ok("SendMessage", asking("m-1")).await["task"].clone();
    let canceled = agent.ok("CancelTask", json!({"id": task["id"]})).await;
    assert_eq!(
        canceled["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
    let stored = agent_questions::Entity::find_by_id(question_id(&task))
        .one(&app.db)
        .await
        .expect("read")
        .expect("stored");
    assert_eq!(stored.status, QuestionStatus::Dismissed);
    assert!(stored.withdrawn_at.is_some());
    // Canceling again says the same.
    let again = agent.ok("CancelTask", json!({"id": task["id"]})).await;
    assert_eq!(again["status"]["state"], "TASK_STATE_CANCELED");
}

async fn a_dismissed_question_is_rejected_and_an_expired_one_failed(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let agent = client(&app, "agent-a", &["games"]).await;
    let first = agent.ok("SendMessage", asking("m-1")).await["task"].clone();
    let second = agent.ok("SendMessage", asking("m-2")).await["task"].clone();
    let dismissed = app
        .graphql(
            Some(&ana.token),
            "mutation($id: ID!) { dismissQuestion(id: $id) { status } }",
            json!({"id": question_id(&first).to_string()}),
        )
        .await;
    assert!(dismissed["errors"].is_null(), "{dismissed}");
    agent_questions::Entity::update_many()
        .col_expr(
            agent_questions::Column::Status,
            Expr::value(QuestionStatus::Expired),
        )
        .filter(agent_questions::Column::Id.eq(question_id(&second)))
        .exec(&app.db)
        .await
        .expect("expired");
    let rejected = agent.ok("GetTask", json!({"id": first["id"]})).await;
    assert_eq!(rejected["status"]["state"], "TASK_STATE_REJECTED");
    let failed = agent.ok("GetTask", json!({"id": second["id"]})).await;
    assert_eq!(failed["status"]["state"], "TASK_STATE_FAILED");

    // ListTasks filters by state.
    let listed = agent
        .ok("ListTasks", json!({"status": "TASK_STATE_REJECTED"}))
        .await;
    let ids: Vec<&Value> = listed["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| &t["id"])
        .collect();
    assert_eq!(ids, [&first["id"]], "{listed}");
}

async fn list_tasks_pages_through_the_agents_own_tasks_only(app: TestApp) {
    open_niche(&app.db, "games").await;
    let agent = client(&app, "agent-a", &["games"]).await;
    let other = client(&app, "agent-b", &["games"]).await;
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(agent.ok("SendMessage", asking(&format!("m-{n}"))).await["task"]["id"].clone());
    }
    other.ok("SendMessage", asking("theirs")).await;
    let first = agent.ok("ListTasks", json!({"pageSize": 2})).await;
    let page: Vec<Value> = first["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["id"].clone())
        .collect();
    assert_eq!(page, [ids[2].clone(), ids[1].clone()], "{first}");
    assert_eq!(first["totalSize"], 3, "{first}");
    let token = first["nextPageToken"].as_str().expect("a token");
    assert!(!token.is_empty());
    let second = agent
        .ok("ListTasks", json!({"pageSize": 2, "pageToken": token}))
        .await;
    assert_eq!(second["tasks"].as_array().map(Vec::len), Some(1));
    assert_eq!(second["tasks"][0]["id"], ids[0]);
    assert_eq!(second["nextPageToken"], "");

    for (params, what) in [
        (json!({"pageSize": 0}), "pageSize"),
        (json!({"pageSize": 101}), "pageSize"),
        (json!({"pageToken": "zzz"}), "pageToken"),
        (json!({"status": "TASK_STATE_SUBMITTED"}), "status"),
        (json!({"historyLength": -1}), "historyLength"),
    ] {
        let (code, message) = agent.refused("ListTasks", params).await;
        assert_eq!(code, -32602, "{message}");
        assert!(message.contains(what), "{message}");
    }
}

async fn an_agent_cannot_see_or_touch_another_agents_task(app: TestApp) {
    open_niche(&app.db, "games").await;
    let agent = client(&app, "agent-a", &["games"]).await;
    let other = client(&app, "agent-b", &["games"]).await;
    let task = agent.ok("SendMessage", asking("m-1")).await["task"].clone();
    for (method, params) in [
        ("GetTask", json!({"id": task["id"]})),
        ("CancelTask", json!({"id": task["id"]})),
        (
            "SendMessage",
            reply(task["id"].as_str().expect("an id"), "Mine now."),
        ),
        ("GetTask", json!({"id": "question-999999"})),
        ("GetTask", json!({"id": "drop tables"})),
    ] {
        let (code, message) = other.refused(method, params).await;
        assert_eq!(code, -32001, "{method}: {message}");
    }
    let listed = other
        .ok("ListTasks", json!({"contextId": task["id"]}))
        .await;
    assert_eq!(listed["tasks"], json!([]));
    let still = agent.ok("GetTask", json!({"id": task["id"]})).await;
    assert_eq!(still["status"]["state"], "TASK_STATE_WORKING");
}

async fn a2a_refuses_a_request_without_a_live_agent_token(app: TestApp) {
    open_niche(&app.db, "games").await;
    let token = agent_with_token(&app, "agent-a", &["games"]).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask",
        "params": {"id": "question-1"}})
    .to_string();
    let post = |authorization: Option<String>| {
        let mut request = app
            .client
            .post(app.url("/a2a"))
            .header("content-type", "application/json")
            .body(body.clone());
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        request.send()
    };
    for (authorization, status, code) in [
        (None, 401, "UNAUTHENTICATED"),
        (
            Some("Bearer al_agent_0000".to_owned()),
            401,
            "UNAUTHENTICATED",
        ),
        (Some(format!("Basic {token}")), 401, "UNAUTHENTICATED"),
    ] {
        let response = post(authorization).await.expect("sent");
        assert_eq!(response.status(), status);
        let body: Value = response.json().await.expect("JSON");
        assert_eq!(body["code"], code, "{body}");
    }
    registry::set_status(
        &app.db,
        "agent-a",
        AgentStatus::Disabled,
        &Actor::Cli,
        chrono::Utc::now(),
    )
    .await
    .expect("disabled");
    let disabled = post(Some(format!("Bearer {token}"))).await.expect("sent");
    assert_eq!(disabled.status(), 403);
    let card = app
        .client
        .get(app.url("/.well-known/agent-card.json"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("sent");
    assert_eq!(card.status(), 403);
}

async fn malformed_requests_get_the_json_rpc_errors_and_change_nothing(app: TestApp) {
    open_niche(&app.db, "games").await;
    open_niche(&app.db, "roofing").await;
    let agent = client(&app, "agent-a", &["games", "roofing"]).await;
    for (body, code) in [
        ("{not json".to_owned(), -32700),
        ("[]".to_owned(), -32600),
        (
            json!({"jsonrpc": "2.0", "method": "GetTask"}).to_string(),
            -32600,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1, "method": "NoSuchMethod"}).to_string(),
            -32601,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": "x"}).to_string(),
            -32602,
        ),
    ] {
        let response = agent.post_raw(body.clone()).await;
        assert_eq!(response.status(), 200, "{body}");
        let answered: Value = response.json().await.expect("JSON");
        assert_eq!(answered["error"]["code"], code, "{body}: {answered}");
    }

    let message = |parts: Value| json!({"message": {"messageId": "m-x", "role": "ROLE_USER", "parts": parts}});
    for (params, code, mentions) in [
        (json!({}), -32602, "message"),
        (message(json!([{"text": "Q?"}])), -32602, "niche"),
        (
            message(json!([{"text": "Q?"}, {"data": {"niche": "games", "bounty": 5}}])),
            -32602,
            "bounty",
        ),
        (
            message(json!([{"text": "Q?"}, {"data": {"niche": "games", "urgency": "now"}}])),
            -32602,
            "urgency",
        ),
        (
            message(json!([{"text": "Q?"}, {"data": {"niche": "pottery"}}])),
            -32602,
            "pottery",
        ),
        (
            message(json!([{"data": {"niche": "games"}}])),
            -32602,
            "text part",
        ),
        (
            message(json!([{"url": "https://files.example/q.pdf"}])),
            -32005,
            "not files",
        ),
        (
            message(json!([{"text": "Q\u{0}?"}, {"data": {"niche": "games"}}])),
            -32602,
            "control",
        ),
        (
            json!({"message": {"messageId": "m-y", "role": "ROLE_AGENT",
                "parts": [{"text": "Q?"}, {"data": {"niche": "games"}}]}}),
            -32602,
            "ROLE_USER",
        ),
        (
            json!({"message": {"messageId": "", "role": "ROLE_USER",
                "parts": [{"text": "Q?"}, {"data": {"niche": "games"}}]}}),
            -32602,
            "messageId",
        ),
    ] {
        let (got, text) = agent.refused("SendMessage", params.clone()).await;
        assert_eq!(got, code, "{params}: {text}");
        assert!(
            text.to_lowercase().contains(&mentions.to_lowercase()),
            "{params}: {text}"
        );
    }
    for method in ["SendStreamingMessage", "SubscribeToTask"] {
        let (code, _) = agent.refused(method, json!({})).await;
        assert_eq!(code, -32004, "{method}");
    }
    let (code, _) = agent
        .refused(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "question-1", "url": "https://hooks.example/a2a"}),
        )
        .await;
    assert_eq!(code, -32001, "no such task");
    let (code, _) = agent.refused("GetTask", json!({"id": 7})).await;
    assert_eq!(code, -32602);

    // A protocol version askloop does not speak.
    let old = app
        .client
        .post(app.url("/a2a"))
        .bearer_auth(&agent.token)
        .header("content-type", "application/json")
        .header("a2a-version", "0.3")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks"}).to_string())
        .send()
        .await
        .expect("sent");
    let old: Value = old.json().await.expect("JSON");
    assert_eq!(old["error"]["code"], -32009, "{old}");

    // Over the body limit: refused unread.
    let mut big = asking("m-big");
    big["message"]["parts"][0]["text"] = json!("x".repeat(300 * 1024));
    let response = agent
        .post_raw(
            json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": big}).to_string(),
        )
        .await;
    assert_eq!(response.status(), 413);
    assert_eq!(question_count(&app).await, 0);
}

/// Register `slug` for "games" with its endpoint on `endpoint`'s host (hearing only an event
/// these tests never cause), and issue it a token: its token and its signing secret.
async fn agent_with_endpoint(app: &TestApp, slug: &str, endpoint: &str) -> (String, String) {
    let created = registry::create(
        &app.db,
        app.config().data_key.as_ref(),
        NewAgent {
            slug: AgentSlug::parse(slug).expect("a slug"),
            name: format!("Agent {slug}"),
            niches: vec!["games".to_owned()],
            endpoint: Endpoint {
                url: Some(endpoint.to_owned()),
                scheme: WebhookScheme::Chovy,
                events: vec![EventType::KnowledgeSuperseded],
            },
        },
        &Actor::Cli,
        chrono::Utc::now(),
    )
    .await
    .expect("the agent is registered");
    (token_for(app, slug).await, created.secret)
}

/// A push config for `task` at `url`, with a token and a bearer for the receiver.
fn push_config(task: &Value, url: &str) -> Value {
    json!({"taskId": task["id"], "id": "cfg-1", "url": url, "token": "push-token",
        "authentication": {"scheme": "Bearer", "credentials": "receiver-secret"}})
}

/// The task states the pushes `received` carried, in the order they came.
fn pushed_states(received: &[askloop_tests::receiver::Received]) -> Vec<String> {
    received
        .iter()
        .map(|r| {
            r.envelope["statusUpdate"]["status"]["state"]
                .as_str()
                .unwrap_or("?")
                .to_owned()
        })
        .collect()
}

async fn push_configs_are_set_read_listed_and_deleted_and_each_state_change_is_pushed(
    app: TestApp,
) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let addr = reserve_port();
    let url = Receiver::url_for(addr);
    let (token, secret) = agent_with_endpoint(&app, "agent-a", &url).await;
    let receiver = Receiver::start_verifying(addr, &secret, Vec::new()).await;
    let agent = A2a { app: &app, token };
    let task = agent.ok("SendMessage", asking("m-1")).await["task"].clone();
    let id = question_id(&task);

    let set = agent
        .ok("CreateTaskPushNotificationConfig", push_config(&task, &url))
        .await;
    assert_eq!(
        set,
        json!({"id": "cfg-1", "taskId": task["id"], "url": url, "token": "push-token",
            "authentication": {"scheme": "Bearer"}}),
        "the credentials are never echoed"
    );
    let read = agent
        .ok(
            "GetTaskPushNotificationConfig",
            json!({"taskId": task["id"], "id": "cfg-1"}),
        )
        .await;
    assert_eq!(read, set);
    let listed = agent
        .ok(
            "ListTaskPushNotificationConfigs",
            json!({"taskId": task["id"]}),
        )
        .await;
    assert_eq!(listed["configs"], json!([set]));

    // Sent back, replied, answered: three pushes, each signed, with the token and the bearer.
    let sent_back = app
        .graphql(Some(&ana.token), SEND_BACK, json!({"id": id.to_string()}))
        .await;
    assert!(sent_back["errors"].is_null(), "{sent_back}");
    receiver
        .wait_until(Duration::from_secs(20), "the first push", |r| r.len() == 1)
        .await;
    agent
        .ok(
            "SendMessage",
            reply(task["id"].as_str().expect("an id"), "Found it."),
        )
        .await;
    receiver
        .wait_until(Duration::from_secs(20), "the second push", |r| r.len() == 2)
        .await;
    let answered = app
        .answer(&ana.token, early_access(id, Some("Ship early access.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    receiver
        .wait_until(Duration::from_secs(20), "the third push", |r| r.len() == 3)
        .await;
    let received = receiver.received();
    assert_eq!(
        pushed_states(&received),
        [
            "TASK_STATE_INPUT_REQUIRED",
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED"
        ]
    );
    for push in &received {
        assert!(push.verified, "signed with the agent's secret: {push:?}");
        assert_eq!(push.header("x-a2a-notification-token"), Some("push-token"));
        assert_eq!(push.header("authorization"), Some("Bearer receiver-secret"));
        assert_eq!(push.header("x-askloop-event"), Some("a2a.task_status"));
        assert_eq!(push.envelope["statusUpdate"]["taskId"], task["id"]);
    }

    // Deleted, it hears no more; reading it again is refused.
    let deleted = agent
        .ok(
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": task["id"], "id": "cfg-1"}),
        )
        .await;
    assert_eq!(deleted, json!({}));
    let (code, message) = agent
        .refused(
            "GetTaskPushNotificationConfig",
            json!({"taskId": task["id"], "id": "cfg-1"}),
        )
        .await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("cfg-1"), "{message}");
}

async fn a_push_url_must_be_public_unless_it_is_the_agents_own_endpoint_host(app: TestApp) {
    open_niche(&app.db, "games").await;
    let (token, _) = agent_with_endpoint(&app, "agent-a", "http://127.0.0.1:9/hooks").await;
    let agent = A2a { app: &app, token };
    let other = client(&app, "agent-b", &["games"]).await;
    let task = agent.ok("SendMessage", asking("m-1")).await["task"].clone();
    for url in [
        "http://10.0.0.7/a2a",
        "http://[::1]:8080/a2a",
        "http://169.254.169.254/latest",
    ] {
        let (code, message) = agent
            .refused("CreateTaskPushNotificationConfig", push_config(&task, url))
            .await;
        assert_eq!(code, -32602, "{url}: {message}");
        assert!(message.contains("not public"), "{message}");
    }
    let mut unsendable = push_config(&task, "https://hooks.example.com/a2a");
    unsendable["token"] = json!("tök");
    let (code, message) = agent
        .refused("CreateTaskPushNotificationConfig", unsendable)
        .await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("printable ASCII"), "{message}");
    for (url, mentions) in [
        ("ftp://hooks.example.com/", "http"),
        ("hooks.example.com/a2a", "absolute"),
        ("https://u:p@hooks.example.com/", "credentials"),
    ] {
        let (code, message) = agent
            .refused("CreateTaskPushNotificationConfig", push_config(&task, url))
            .await;
        assert_eq!(code, -32602, "{url}: {message}");
        assert!(message.contains(mentions), "{url}: {message}");
    }
    // The host of its own endpoint, which an admin set, may be private.
    agent
        .ok(
            "CreateTaskPushNotificationConfig",
            push_config(&task, "http://127.0.0.1:9001/a2a"),
        )
        .await;
    // Another agent's task is not found, for every push method.
    for (method, params) in [
        (
            "CreateTaskPushNotificationConfig",
            push_config(&task, "https://hooks.example.com/a2a"),
        ),
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": task["id"], "id": "cfg-1"}),
        ),
        (
            "ListTaskPushNotificationConfigs",
            json!({"taskId": task["id"]}),
        ),
        (
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": task["id"], "id": "cfg-1"}),
        ),
    ] {
        let (code, message) = other.refused(method, params).await;
        assert_eq!(code, -32001, "{method}: {message}");
    }
    let still = agent
        .ok(
            "ListTaskPushNotificationConfigs",
            json!({"taskId": task["id"]}),
        )
        .await;
    assert_eq!(still["configs"].as_array().map(Vec::len), Some(1));
}

/// Fast retries, a fast poll, and `hooks.example.test` resolving to 127.0.0.1.
fn fast_retries(config: &mut askloop::config::Config) {
    config.delivery.poll = Duration::from_millis(50);
    config.delivery.retry_base = Duration::from_millis(100);
    config.delivery.retry_max = Duration::from_millis(200);
    config.resolver = askloop_tests::resolver::fixed_names(&[("hooks.example.test", "127.0.0.1")]);
}

/// The push deliveries written so far.
async fn pushes(app: &TestApp) -> Vec<deliveries::Model> {
    deliveries::Entity::find()
        .filter(deliveries::Column::PushConfigId.is_not_null())
        .all(&app.db)
        .await
        .expect("read")
}

async fn a_push_whose_config_was_deleted_is_dropped_unsent(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    // Its own endpoint's host, so the config may point at a loopback port nobody listens on.
    let down = Receiver::url_for(reserve_port());
    let (token, _) = agent_with_endpoint(&app, "agent-a", &down).await;
    let agent = A2a { app: &app, token };
    let task = agent.ok("SendMessage", asking("m-1")).await["task"].clone();
    agent
        .ok(
            "CreateTaskPushNotificationConfig",
            push_config(&task, &down),
        )
        .await;
    let sent_back = app
        .graphql(
            Some(&ana.token),
            SEND_BACK,
            json!({"id": question_id(&task).to_string()}),
        )
        .await;
    assert!(sent_back["errors"].is_null(), "{sent_back}");
    askloop_tests::wait::until_some("a failed attempt", Duration::from_secs(20), || async {
        pushes(&app)
            .await
            .iter()
            .any(|p| p.attempts > 0)
            .then_some(())
    })
    .await;
    agent
        .ok(
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": task["id"], "id": "cfg-1"}),
        )
        .await;
    let dropped = askloop_tests::wait::until_some(
        "the push to be dropped",
        Duration::from_secs(20),
        || async {
            pushes(&app)
                .await
                .into_iter()
                .find(|p| p.status == DeliveryStatus::Dropped)
        },
    )
    .await;
    assert_eq!(
        dropped.dropped_reason.as_deref(),
        Some("its A2A push config was deleted")
    );
}

async fn a_push_to_a_name_with_only_private_addresses_is_refused_at_connect(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let addr = reserve_port();
    let receiver = Receiver::start(Vec::new()).await;
    // The agent's own endpoint is elsewhere: the push URL is held to public addresses, and its
    // name resolves to 127.0.0.1 only.
    let (token, _) = agent_with_endpoint(&app, "agent-a", &Receiver::url_for(addr)).await;
    let agent = A2a { app: &app, token };
    let task = agent.ok("SendMessage", asking("m-1")).await["task"].clone();
    let url = format!("http://hooks.example.test:{}/a2a", receiver.addr().port());
    agent
        .ok("CreateTaskPushNotificationConfig", push_config(&task, &url))
        .await;
    let sent_back = app
        .graphql(
            Some(&ana.token),
            SEND_BACK,
            json!({"id": question_id(&task).to_string()}),
        )
        .await;
    assert!(sent_back["errors"].is_null(), "{sent_back}");
    let refused =
        askloop_tests::wait::until_some("a refused attempt", Duration::from_secs(20), || async {
            pushes(&app)
                .await
                .into_iter()
                .find(|p| p.last_error.is_some())
        })
        .await;
    assert_eq!(
        refused.last_error.as_deref(),
        Some("refused: not a public address")
    );
    assert!(receiver.received().is_empty(), "nothing reached 127.0.0.1");
}

on_both_backends! {
    config: fast_retries;
    a_push_whose_config_was_deleted_is_dropped_unsent,
    a_push_to_a_name_with_only_private_addresses_is_refused_at_connect,
}

on_both_backends!(
    push_configs_are_set_read_listed_and_deleted_and_each_state_change_is_pushed,
    a_push_url_must_be_public_unless_it_is_the_agents_own_endpoint_host,
    the_card_lists_one_skill_per_niche_the_caller_may_ask_in,
    a_message_asks_a_question_once_per_message_id,
    sent_back_replied_answered_the_task_goes_through_its_states,
    cancel_task_withdraws_the_question,
    a_dismissed_question_is_rejected_and_an_expired_one_failed,
    list_tasks_pages_through_the_agents_own_tasks_only,
    an_agent_cannot_see_or_touch_another_agents_task,
    a2a_refuses_a_request_without_a_live_agent_token,
    malformed_requests_get_the_json_rpc_errors_and_change_nothing,
    a_message_with_a_push_config_askloop_refuses_asks_nothing,
    push_configs_created_at_once_keep_the_cap_and_one_id_replaces,
);

async fn a_message_with_a_push_config_askloop_refuses_asks_nothing(app: TestApp) {
    open_niche(&app.db, "games").await;
    let agent = client(&app, "agent-a", &["games"]).await;
    for config in [
        json!({"url": "http://127.0.0.1:9/hook"}),
        json!({"url": "not a url"}),
        json!({"url": "https://example.com/hook", "token": "x".repeat(5_000)}),
    ] {
        let mut message = asking("m-refused");
        message["configuration"] = json!({"taskPushNotificationConfig": config});
        let (code, _) = agent.refused("SendMessage", message).await;
        assert_eq!(code, -32602, "{config}");
        assert_eq!(question_count(&app).await, 0, "nothing is asked: {config}");
    }
    let budget = entity::budget_entries::Entity::find()
        .count(&app.db)
        .await
        .expect("count");
    assert_eq!(budget, 0, "no bounty is reserved");
    // The same message with a good config asks once and keeps the config.
    let mut message = asking("m-refused");
    message["configuration"] =
        json!({"taskPushNotificationConfig": {"id": "c", "url": "https://example.com/hook"}});
    let task = agent.ok("SendMessage", message).await["task"].clone();
    assert_eq!(question_count(&app).await, 1);
    let listed = agent
        .ok(
            "ListTaskPushNotificationConfigs",
            json!({"taskId": task["id"]}),
        )
        .await;
    assert_eq!(
        listed["configs"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
}

async fn push_configs_created_at_once_keep_the_cap_and_one_id_replaces(app: TestApp) {
    open_niche(&app.db, "games").await;
    let agent = client(&app, "agent-a", &["games"]).await;
    let task = agent.ok("SendMessage", asking("m-1")).await["task"].clone();
    let create = |id: String| {
        let agent = &agent;
        let task = &task;
        async move {
            agent
                .call(
                    "CreateTaskPushNotificationConfig",
                    json!({"taskId": task["id"], "id": id, "url": "https://example.com/hook"}),
                )
                .await
        }
    };
    let created = futures::future::join_all((0..25).map(|i| create(format!("cfg-{i}")))).await;
    for body in &created {
        if !body["error"].is_null() {
            assert_eq!(
                body["error"]["code"], -32602,
                "refused over the cap: {body}"
            );
        }
    }
    let stored = || async {
        entity::a2a_push_configs::Entity::find()
            .count(&app.db)
            .await
            .expect("count")
    };
    assert_eq!(stored().await, 10, "a task keeps at most ten configs");
    let ok = created.iter().filter(|b| b["error"].is_null()).count();
    assert_eq!(ok, 10);

    let other = agent.ok("SendMessage", asking("m-2")).await["task"].clone();
    let same = futures::future::join_all((0..10).map(|_| {
        let agent = &agent;
        let other = &other;
        async move {
            agent
                .call(
                    "CreateTaskPushNotificationConfig",
                    json!({"taskId": other["id"], "id": "one", "url": "https://example.com/hook"}),
                )
                .await
        }
    }))
    .await;
    for body in &same {
        assert!(body["error"].is_null(), "the same id replaces: {body}");
    }
    assert_eq!(stored().await, 11);
}

/// The a2a-sdk release `cargo xtask test` installs (xtask's `a2a_sdk::VERSION`).
const SDK_VERSION: &str = "1.3.0";

/// The Python of the venv holding a2a-sdk: `ASKLOOP_A2A_SDK` (a venv folder), else the one
/// `cargo xtask test` makes under `target/tools`.
fn sdk_python() -> PathBuf {
    askloop_tests::app::npm_tool("ASKLOOP_A2A_SDK", &format!("a2a-sdk-{SDK_VERSION}"))
        .join("bin")
        .join("python")
}

/// The official Python SDK (`a2a-sdk`) is refused with a wrong token, reads the card, asks, sees
/// `INPUT_REQUIRED` when a person sends the question back, replies on the task (`WORKING`), sees
/// `COMPLETED` with the answer as an artifact, cancels another (`CANCELED`), lists its tasks, and
/// another agent cannot read its task; its exit code says whether every check passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_official_python_sdk_walks_a_task_through_its_states() {
    let python = sdk_python();
    assert!(
        python.is_file(),
        "a2a-sdk is not installed at {}: run the tests with `cargo xtask test`, which installs \
         it, or set ASKLOOP_A2A_SDK to a venv holding a2a-sdk {SDK_VERSION}",
        python.display()
    );
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let addr = reserve_port();
    let push_url = Receiver::url_for(addr);
    let (token, secret) = agent_with_endpoint(&app, "sdk-agent", &push_url).await;
    let receiver = Receiver::start_verifying(addr, &secret, Vec::new()).await;
    let other = agent_with_token(&app, "other-agent", &["games"]).await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("a2a-client")
        .join("check.py");

    let child = tokio::process::Command::new(&python)
        .arg(script)
        .env("ASKLOOP_A2A_URL", app.url(""))
        .env("ASKLOOP_A2A_TOKEN", &token)
        .env("ASKLOOP_A2A_OTHER_TOKEN", &other)
        .env("ASKLOOP_A2A_NICHE", "games")
        .env("ASKLOOP_A2A_PUSH_URL", &push_url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the venv's python runs");
    let steps = drive(
        &app,
        &ana.token,
        child,
        PersonActs {
            // The script now polls GetTask: a person acts meanwhile.
            send_back_on: &["send-back"],
            answer_on: &["answer"],
        },
        Duration::from_secs(120),
    )
    .await;
    let step = |name: &str| steps.step(name);
    assert_eq!(step("card-refused"), json!("AgentCardResolutionError"));
    assert_eq!(step("refused"), json!("A2AClientError"));
    assert_eq!(
        step("card"),
        json!({"skills": ["games"], "streaming": false, "binding": "JSONRPC"})
    );
    assert_eq!(step("asked")["state"], "TASK_STATE_WORKING");
    assert_eq!(step("replied"), json!({"state": "TASK_STATE_WORKING"}));
    assert_eq!(
        step("completed"),
        json!({"artifact": "answer", "text": "Ship early access.", "optionId": "ea",
               "review": step("completed")["review"]})
    );
    assert!(step("completed")["review"].is_string());
    assert_eq!(step("canceled"), json!({"state": "TASK_STATE_CANCELED"}));
    assert_eq!(
        step("listed"),
        json!(["TASK_STATE_CANCELED", "TASK_STATE_COMPLETED"])
    );
    assert_eq!(step("foreign"), json!("TaskNotFoundError"));
    assert_eq!(
        step("push-config"),
        json!({"id": "sdk-push", "url": push_url, "token": "sdk-token"})
    );
    // The config the SDK set heard each state change, signed and with its token. Pushes travel
    // side by side and may arrive in any order: one for each state.
    receiver
        .wait_until(Duration::from_secs(20), "three pushes", |r| r.len() >= 3)
        .await;
    let received = receiver.received();
    let mut states = pushed_states(&received);
    states.sort();
    assert_eq!(
        states,
        [
            "TASK_STATE_COMPLETED",
            "TASK_STATE_INPUT_REQUIRED",
            "TASK_STATE_WORKING"
        ]
    );
    assert!(
        received
            .iter()
            .all(|r| r.verified && r.header("x-a2a-notification-token") == Some("sdk-token"))
    );
}

/// askloop as a process of its own on `database_url`, sending fast (a 4 s lease).
fn serve_process(database_url: &str) -> std::process::Child {
    std::process::Command::new(askloop_tests::askloop_binary())
        .arg("serve")
        .env("DATABASE_URL", database_url)
        .env("ASKLOOP_BIND", "127.0.0.1:0")
        .env("CHOVY_SIGNING_SECRET", "a2a-kill-test-secret")
        .env("ASKLOOP_DELIVERY_TIMEOUT_MS", "3000")
        .env("ASKLOOP_DELIVERY_LEASE_MS", "4000")
        .env("ASKLOOP_DELIVERY_POLL_MS", "50")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("askloop starts")
}

/// Every state change of two tasks (sent back, replied, answered; canceled) reaches the push
/// config's receiver signed and with its token, each under one push id, although askloop is
/// killed (SIGKILL) while the first push is in flight: the next askloop sends it again with the
/// same id.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_state_change_is_pushed_once_each_across_a_kill_mid_delivery() {
    // The in-process app takes the requests; it polls its outbox only hourly, so the pushes wait
    // for the processes below.
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        config.delivery.poll = Duration::from_secs(3600);
    })
    .await
    .expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let addr = reserve_port();
    let url = Receiver::url_for(addr);
    let (token, secret) = agent_with_endpoint(&app, "agent-a", &url).await;
    let agent = A2a { app: &app, token };
    let with_push = |message_id: &str| {
        let mut params = asking(message_id);
        params["configuration"] = json!({"taskPushNotificationConfig": {
            "url": url, "token": "push-token",
            "authentication": {"scheme": "Bearer", "credentials": "receiver-secret"}}});
        params
    };
    let task = agent.ok("SendMessage", with_push("m-1")).await["task"].clone();
    let task_id = task["id"].as_str().expect("an id").to_owned();
    let id = question_id(&task);
    let sent_back = app
        .graphql(Some(&ana.token), SEND_BACK, json!({"id": id.to_string()}))
        .await;
    assert!(sent_back["errors"].is_null(), "{sent_back}");
    agent.ok("SendMessage", reply(&task_id, "Found it.")).await;
    let answered = app
        .answer(&ana.token, early_access(id, Some("Ship early access.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    let other = agent.ok("SendMessage", with_push("m-2")).await["task"].clone();
    agent.ok("CancelTask", json!({"id": other["id"]})).await;
    let pushes = || async {
        deliveries::Entity::find()
            .filter(deliveries::Column::PushConfigId.is_not_null())
            .all(&app.db)
            .await
            .expect("read")
    };
    assert_eq!(pushes().await.len(), 4, "four pushes wait");

    let receiver = Receiver::start_verifying(addr, &secret, vec![Reply::Hang]).await;
    let mut first = serve_process(&app.database_url);
    receiver
        .wait_until(Duration::from_secs(30), "the first push", |r| !r.is_empty())
        .await;
    // In flight: killed before it can record anything.
    first.kill().expect("killed");
    let _ = first.wait();

    let mut second = serve_process(&app.database_url);
    askloop_tests::wait::until_some("every push delivered", Duration::from_secs(60), || async {
        pushes()
            .await
            .iter()
            .all(|p| p.status == DeliveryStatus::Delivered)
            .then_some(())
    })
    .await;
    let _ = second.kill();
    let _ = second.wait();

    let received = receiver.received();
    let mut by_id: std::collections::HashMap<String, Vec<String>> =
        std::collections::HashMap::new();
    for push in &received {
        assert!(push.verified, "signed with the agent's secret: {push:?}");
        assert_eq!(push.header("x-a2a-notification-token"), Some("push-token"));
        assert_eq!(push.header("authorization"), Some("Bearer receiver-secret"));
        let state = pushed_states(std::slice::from_ref(push)).remove(0);
        by_id
            .entry(push.header("x-askloop-delivery").expect("an id").to_owned())
            .or_default()
            .push(state);
    }
    assert_eq!(by_id.len(), 4, "one id per push: {by_id:?}");
    assert!(
        by_id.values().any(|copies| copies.len() == 2),
        "the push in flight at the kill came again: {by_id:?}"
    );
    let mut states: Vec<String> = by_id
        .values()
        .map(|copies| {
            assert!(copies.windows(2).all(|w| w[0] == w[1]), "{copies:?}");
            copies[0].clone()
        })
        .collect();
    states.sort();
    assert_eq!(
        states,
        [
            "TASK_STATE_CANCELED",
            "TASK_STATE_COMPLETED",
            "TASK_STATE_INPUT_REQUIRED",
            "TASK_STATE_WORKING"
        ]
    );
}
