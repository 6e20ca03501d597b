//! The MCP server (docs/contract.md#mcp), on both backends, spoken by hand over HTTP: a request
//! without a live agent token is refused before any MCP message is read (401; a disabled
//! agent's is 403); the five tools are listed with their schemas; `ask_expert` goes through the
//! intake (same validation, same niche rule, one question per external id); `get_answer` waits
//! for the answer an operator gives meanwhile; `add_research` and `list_questions` see only the
//! agent's own questions; every refusal is a tool error with the REST code and changes nothing.
//! Also: the official TypeScript SDK, a client that is not askloop's code, asks and hears the
//! answer. (`askloop agent token` and `revoke-token` are tested with the rest of the command
//! line, in `cli.rs`.)

use askloop_tests::answers::early_access;
use std::process::Stdio;
use std::time::Duration;

use askloop::service::agents::agent_tokens;
use askloop::service::agents::registry;
use askloop::service::audit::Actor;
use askloop_tests::fixtures::{niche, open_niche};
use askloop_tests::mcp::{McpClient, agent_with_token, sdk_check_script, sdk_prefix};
use askloop_tests::outside_client::{PersonActs, drive};
use askloop_tests::people::operator;
use askloop_tests::{Backend, TestApp, on_both_backends};
use entity::agent_questions::{self, QuestionStatus};
use entity::agents::AgentStatus;
use entity::audit_log;
use entity::niches::{self, NicheStatus};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

const SEND_BACK: &str = "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: NEEDS_RESEARCH}) { notice } }";

fn question(niche: &str, external_id: Option<&str>) -> Value {
    let mut arguments = json!({
        "niche": niche,
        "title": "Which date?",
        "question": "Early access or 1.0?",
        "context": "Steam lists both dates.",
        "options": [{"id": "ea", "label": "Early access"}, {"id": "full", "label": "1.0"}],
        "urgency": "high",
    });
    if let Some(id) = external_id {
        arguments["externalId"] = json!(id);
    }
    arguments
}

async fn question_count(app: &TestApp) -> u64 {
    agent_questions::Entity::find()
        .count(&app.db)
        .await
        .expect("count")
}

/// A ready client for a new agent `slug` asking in `niches`.
async fn agent(app: &TestApp, slug: &str, niches: &[&str]) -> McpClient {
    let token = agent_with_token(app, slug, niches).await;
    let client = McpClient::new(app, Some(&token));
    client.initialize().await;
    client
}

/// What `/mcp` answers an `initialize` sent with `authorization` (none: no header).
pub(crate) async fn initialize_with(
    app: &TestApp,
    authorization: Option<&str>,
) -> reqwest::Response {
    let mut request = app
        .client
        .post(app.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"}}})
            .to_string(),
        );
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    request.send().await.expect("sent")
}

pub(crate) async fn assert_refused_with(response: reqwest::Response, status: u16, code: &str) {
    assert_eq!(response.status().as_u16(), status);
    if status == 401 {
        assert_eq!(
            response
                .headers()
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok()),
            Some("Bearer realm=\"askloop\"")
        );
    }
    assert!(
        response.headers().get("mcp-session-id").is_none(),
        "no session is opened"
    );
    let body: Value = response.json().await.expect("a JSON error");
    assert_eq!(body["code"], code, "{body}");
}

async fn mcp_refuses_a_request_without_a_live_agent_token(app: TestApp) {
    open_niche(&app.db, "games").await;
    let token = agent_with_token(&app, "agent-a", &["games"]).await;
    let person = operator(&app.db, "games", "ana").await;

    assert_refused_with(initialize_with(&app, None).await, 401, "UNAUTHENTICATED").await;
    // The live token with its last digit changed.
    let last = if token.ends_with('0') { '1' } else { '0' };
    let unknown = format!("Bearer {}{last}", &token[..token.len() - 1]);
    for refused in [
        "Bearer al_agent_0000",
        unknown.as_str(),
        // A person's session is not an agent's token.
        &format!("Bearer {}", person.token),
        // Nor is the agent's token under another scheme.
        &format!("Basic {token}"),
    ] {
        assert_refused_with(
            initialize_with(&app, Some(refused)).await,
            401,
            "UNAUTHENTICATED",
        )
        .await;
    }
    let get = app.client.get(app.url("/mcp")).send().await.expect("sent");
    assert_refused_with(get, 401, "UNAUTHENTICATED").await;

    // An agent token opens /mcp only: GraphQL does not take it.
    let graphql = app
        .graphql(Some(&token), "{ viewer { user { handle } } }", json!({}))
        .await;
    assert_eq!(
        askloop_tests::error_code(&graphql),
        Some("UNAUTHENTICATED"),
        "{graphql}"
    );

    let live = initialize_with(&app, Some(&format!("Bearer {token}"))).await;
    assert_eq!(live.status(), 200, "the live token is served");
    assert!(
        live.headers().get("mcp-session-id").is_none(),
        "askloop keeps no session"
    );
    // With a live token, GET has no stream to open: askloop sends nothing unasked.
    let get = app
        .client
        .get(app.url("/mcp"))
        .header("accept", "text/event-stream")
        .bearer_auth(&token)
        .send()
        .await
        .expect("sent");
    assert_eq!(get.status(), 405);

    let revoked = agent_tokens::revoke(&app.db, "agent-a", None, &Actor::Cli, chrono::Utc::now())
        .await
        .expect("revoked");
    assert_eq!(revoked.len(), 1);
    assert_refused_with(
        initialize_with(&app, Some(&format!("Bearer {token}"))).await,
        401,
        "UNAUTHENTICATED",
    )
    .await;
    // A refused token's calls never reach a tool.
    let client = McpClient::new(&app, Some(&token));
    let response = client
        .post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "ask_expert", "arguments": question("games", Some("q-1"))}}))
        .await;
    assert_eq!(response.status(), 401);
    assert_eq!(question_count(&app).await, 0);
}

async fn a_body_over_256_kib_is_refused_unread(app: TestApp) {
    open_niche(&app.db, "games").await;
    let client = agent(&app, "agent-a", &["games"]).await;
    let mut arguments = question("games", Some("q-big"));
    arguments["context"] = json!("x".repeat(300 * 1024));
    let response = client
        .post(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "ask_expert", "arguments": arguments}}))
        .await;
    assert_eq!(response.status(), 413);
    assert_eq!(question_count(&app).await, 0);
}

async fn a_disabled_agents_token_is_forbidden_until_it_is_enabled(app: TestApp) {
    open_niche(&app.db, "games").await;
    let token = agent_with_token(&app, "agent-a", &["games"]).await;
    registry::set_status(
        &app.db,
        "agent-a",
        AgentStatus::Disabled,
        &Actor::Cli,
        chrono::Utc::now(),
    )
    .await
    .expect("disabled");
    assert_refused_with(
        initialize_with(&app, Some(&format!("Bearer {token}"))).await,
        403,
        "FORBIDDEN",
    )
    .await;
    registry::set_status(
        &app.db,
        "agent-a",
        AgentStatus::Active,
        &Actor::Cli,
        chrono::Utc::now(),
    )
    .await
    .expect("enabled");
    let client = McpClient::new(&app, Some(&token));
    client.initialize().await;
    let asked = client
        .ok("ask_expert", question("games", Some("q-1")))
        .await;
    assert_eq!(asked["status"], "open");
}

async fn the_five_tools_are_listed_with_their_schemas(app: TestApp) {
    open_niche(&app.db, "games").await;
    let token = agent_with_token(&app, "agent-a", &["games"]).await;
    let client = McpClient::new(&app, Some(&token));
    let init = client.initialize().await;
    assert_eq!(init["serverInfo"]["name"], "askloop");
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    assert!(
        init["instructions"]
            .as_str()
            .is_some_and(|i| i.contains("get_answer"))
    );

    let listed = client.request("tools/list", json!({})).await;
    let tools = listed["result"]["tools"].as_array().expect("tools").clone();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "ask_expert",
            "delegate_task",
            "get_answer",
            "add_research",
            "withdraw_question",
            "list_questions",
            "search_knowledge",
            "use_knowledge"
        ]
    );
    let schema = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["inputSchema"].clone())
            .expect("the tool")
    };
    let ask = schema("ask_expert");
    assert_eq!(ask["type"], "object");
    let mut required: Vec<&str> = ask["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    required.sort_unstable();
    assert_eq!(required, ["niche", "question", "title"]);
    for field in [
        "context",
        "options",
        "urgency",
        "bountyMinor",
        "expiresInSeconds",
        "externalId",
    ] {
        assert!(ask["properties"][field].is_object(), "{field}: {ask}");
    }
    let delegate = schema("delegate_task");
    let mut required: Vec<&str> = delegate["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    required.sort_unstable();
    assert_eq!(required, ["budgetLimitMinor", "niche", "task", "title"]);
    assert!(
        delegate["properties"]["deliverable"].is_object(),
        "{delegate}"
    );
    assert!(
        delegate["properties"].get("options").is_none(),
        "{delegate}"
    );
    assert_eq!(
        schema("get_answer")["properties"]["waitSeconds"]["maximum"],
        55
    );
    assert_eq!(schema("add_research")["required"], json!(["findings"]));
    assert!(schema("list_questions")["properties"]["after"].is_object());
    let read_only = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["annotations"]["readOnlyHint"].clone())
    };
    assert_eq!(read_only("get_answer"), Some(json!(true)));
    assert_eq!(read_only("ask_expert"), Some(json!(false)));
    assert_eq!(read_only("delegate_task"), Some(json!(false)));
}

/// `delegate_task` stores a task at its limit through the intake (and refuses one without a
/// limit, storing nothing); `get_answer` then shows its result and what it cost.
async fn delegate_task_reserves_its_limit_and_get_answer_shows_the_result_and_cost(app: TestApp) {
    open_niche(&app.db, "games").await;
    niches::Entity::update_many()
        .col_expr(
            niches::Column::MonthlyBudgetMinor,
            Expr::value(Some(1000_i64)),
        )
        .col_expr(niches::Column::MaxBountyMinor, Expr::value(1000_i64))
        .exec(&app.db)
        .await
        .expect("budget");
    let ana = operator(&app.db, "games", "ana").await;
    let client = agent(&app, "agent-a", &["games"]).await;
    let task = json!({
        "niche": "games",
        "title": "Three prices",
        "task": "Check the price of these three underlays.",
        "deliverable": "Each price with its link.",
        "budgetLimitMinor": 400,
        "externalId": "t-1",
    });
    let mut without_limit = task.clone();
    without_limit
        .as_object_mut()
        .expect("an object")
        .remove("budgetLimitMinor");
    let refused = client.refused("delegate_task", without_limit).await;
    assert_eq!(refused["code"], "BAD_USER_INPUT", "{refused}");
    let mut with_options = task.clone();
    with_options["options"] = json!([{"id": "a", "label": "A"}]);
    let refused = client.refused("delegate_task", with_options).await;
    assert_eq!(refused["code"], "BAD_USER_INPUT", "{refused}");
    assert_eq!(question_count(&app).await, 0);

    let delegated = client.ok("delegate_task", task.clone()).await;
    assert_eq!(delegated["kind"], "task", "{delegated}");
    assert_eq!(delegated["status"], "open", "{delegated}");
    let id = delegated["questionId"].as_i64().expect("an id");
    let again = client.ok("delegate_task", task).await;
    assert_eq!(
        (again["questionId"].as_i64(), &again["duplicate"]),
        (Some(id), &json!(true))
    );
    let stored = agent_questions::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .expect("query")
        .expect("the task");
    assert_eq!(stored.kind, agent_questions::ExchangeKind::Task);
    assert_eq!(stored.bounty_minor, 400);
    assert_eq!(stored.question, "Check the price of these three underlays.");

    let done = app
        .graphql(
            Some(&ana.token),
            "mutation($id: ID!) { answerQuestion(input: {questionId: $id, kind: ANSWERED, body: \"£12, £15, £19\", actualCostMinor: 90}) { notice } }",
            json!({"id": id.to_string()}),
        )
        .await;
    assert!(done["errors"].is_null(), "{done}");
    let answer = client.ok("get_answer", json!({"questionId": id})).await;
    assert_eq!(answer["status"], "answered", "{answer}");
    assert_eq!(answer["kind"], "task", "{answer}");
    assert_eq!(answer["budgetLimitMinor"], 400, "{answer}");
    assert_eq!(answer["result"], "£12, £15, £19", "{answer}");
    assert_eq!(answer["actualCostMinor"], 90, "{answer}");
    assert_eq!(answer["review"], "pending", "{answer}");
}

async fn asking_twice_with_one_external_id_stores_one_question(app: TestApp) {
    open_niche(&app.db, "games").await;
    let client = agent(&app, "agent-a", &["games"]).await;
    let first = client
        .ok("ask_expert", question("games", Some("q-1")))
        .await;
    assert_eq!(first["externalId"], "q-1");
    assert_eq!(first["status"], "open");
    assert_eq!(first["duplicate"], false);
    assert!(
        first["expiresAt"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    let again = client
        .ok("ask_expert", question("games", Some("q-1")))
        .await;
    assert_eq!(again["questionId"], first["questionId"]);
    assert_eq!(again["duplicate"], true);
    assert_eq!(question_count(&app).await, 1);

    let row = agent_questions::Entity::find_by_id(first["questionId"].as_i64().expect("an id"))
        .one(&app.db)
        .await
        .expect("query")
        .expect("the question");
    let agent_a = registry::find(&app.db, "agent-a").await.expect("agent-a");
    assert_eq!(row.registered_agent_id, Some(agent_a.id));
    assert_eq!(row.title, "Which date?");
    assert_eq!(row.options.as_array().map(Vec::len), Some(2));
    let audited = audit_log::Entity::find()
        .filter(audit_log::Column::Action.eq("question.created"))
        .one(&app.db)
        .await
        .expect("query")
        .expect("the intake is audited");
    assert_eq!(audited.actor, "agent:agent-a");
}

async fn asking_twice_without_an_external_id_is_one_question_named_by_its_arguments(app: TestApp) {
    open_niche(&app.db, "games").await;
    let client = agent(&app, "agent-a", &["games"]).await;
    let first = client.ok("ask_expert", question("games", None)).await;
    let derived = first["externalId"].as_str().expect("an external id");
    assert!(derived.starts_with("mcp:"), "{derived}");
    let again = client.ok("ask_expert", question("games", None)).await;
    assert_eq!(again["questionId"], first["questionId"]);
    assert_eq!(again["externalId"], derived);
    assert_eq!(again["duplicate"], true);
    let mut other = question("games", None);
    other["title"] = json!("Which year?");
    let different = client.ok("ask_expert", other).await;
    assert_ne!(different["questionId"], first["questionId"]);
    assert_eq!(question_count(&app).await, 2);
    // The answer is found by the derived id too.
    let read = client
        .ok("get_answer", json!({"externalId": derived}))
        .await;
    assert_eq!(read["questionId"], first["questionId"]);
}

async fn an_agent_may_not_ask_in_another_niche(app: TestApp) {
    open_niche(&app.db, "games").await;
    open_niche(&app.db, "roofing").await;
    let client = agent(&app, "agent-a", &["games"]).await;
    let refused = client
        .refused("ask_expert", question("roofing", Some("q-1")))
        .await;
    assert_eq!(refused["code"], "FORBIDDEN");
    assert_eq!(refused["error"], "this agent may not ask in 'roofing'");
    assert_eq!(question_count(&app).await, 0, "nothing is stored");
}

async fn ask_expert_refuses_bad_input_as_the_intake_does_and_stores_nothing(app: TestApp) {
    open_niche(&app.db, "games").await;
    niche(&app.db, "drafts", NicheStatus::Draft).await;
    let client = agent(&app, "agent-a", &["games", "drafts"]).await;
    let with = |key: &str, value: Value| {
        let mut arguments = question("games", Some("q-1"));
        arguments[key] = value;
        arguments
    };
    let mut without_title = question("games", Some("q-1"));
    without_title.as_object_mut().map(|o| o.remove("title"));
    let cases = [
        (without_title, "BAD_USER_INPUT", "title"),
        (
            with("title", json!("   ")),
            "BAD_USER_INPUT",
            "title is required",
        ),
        (
            with("nicheSlug", json!("games")),
            "BAD_USER_INPUT",
            "nicheSlug",
        ),
        (
            with("urgency", json!("URGENT")),
            "BAD_USER_INPUT",
            "urgency",
        ),
        (
            with("expiresInSeconds", json!(59)),
            "BAD_USER_INPUT",
            "expiresInSeconds must be between 60 and 2592000",
        ),
        (
            with("bountyMinor", json!(-1)),
            "BAD_USER_INPUT",
            "bountyMinor cannot be negative",
        ),
        (
            with(
                "options",
                json!([{"id": "a", "label": "x"}, {"id": "a", "label": "y"}]),
            ),
            "BAD_USER_INPUT",
            "option id 'a' appears twice",
        ),
        (
            with("externalId", json!("x".repeat(201))),
            "BAD_USER_INPUT",
            "externalId is longer than 200 characters",
        ),
        (
            with("question", json!("nul \u{0} inside")),
            "BAD_USER_INPUT",
            "control character",
        ),
        (
            with("niche", json!("nowhere")),
            "NOT_FOUND",
            "no niche 'nowhere'",
        ),
        (
            with("niche", json!("drafts")),
            "CONFLICT",
            "takes no questions",
        ),
    ];
    for (arguments, code, says) in cases {
        let refused = client.refused("ask_expert", arguments.clone()).await;
        assert_eq!(refused["code"], code, "{arguments}: {refused}");
        assert!(
            refused["error"].as_str().is_some_and(|e| e.contains(says)),
            "{arguments}: {refused}"
        );
    }
    let closed = client
        .refused("ask_expert", with("niche", json!("drafts")))
        .await;
    assert_eq!(closed["reason"], "NICHE_CLOSED");
    assert_eq!(question_count(&app).await, 0, "nothing is stored");
}

async fn ask_expert_over_budget_is_refused_with_what_is_left(app: TestApp) {
    crate::money::budgeted_niche(&app, "games", Some(100), 0).await;
    let client = agent(&app, "agent-a", &["games"]).await;
    let mut arguments = question("games", Some("q-1"));
    arguments["bountyMinor"] = json!(300);
    let refused = client.refused("ask_expert", arguments).await;
    assert_eq!(refused["code"], "OVER_BUDGET");
    assert_eq!(refused["remainingMinor"], 100);
    assert!(refused["resetsAt"].is_string());
    assert_eq!(question_count(&app).await, 0);
}

async fn get_answer_waits_for_the_answer_an_operator_gives_meanwhile(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let client = agent(&app, "agent-a", &["games"]).await;
    let asked = client
        .ok("ask_expert", question("games", Some("q-1")))
        .await;
    let id = asked["questionId"].as_i64().expect("an id");

    let now = client.ok("get_answer", json!({"questionId": id})).await;
    assert_eq!(now["status"], "open");
    assert!(now.get("answer").is_none(), "{now}");

    let listening = app.live.listeners();
    let waiting = tokio::spawn(async move {
        client
            .ok(
                "get_answer",
                json!({"externalId": "q-1", "waitSeconds": 30}),
            )
            .await
    });
    // The call is held while the question is open...
    askloop_tests::wait::until("get_answer to wait for a change", || async {
        app.live.listeners() > listening
    })
    .await;
    assert!(
        !waiting.is_finished(),
        "get_answer waits while the question is open"
    );
    let answered = app
        .answer(&ana.token, early_access(id, Some("Ship early access.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    // ...and returns the answer given meanwhile.
    let heard = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("get_answer returns once the question is answered")
        .expect("the call");
    assert_eq!(heard["questionId"], id);
    assert_eq!(heard["externalId"], "q-1");
    assert_eq!(heard["status"], "answered");
    assert_eq!(heard["answer"], "Ship early access.");
    assert_eq!(heard["optionId"], "ea");
    assert_eq!(heard["optionLabel"], "Early access");
    assert_eq!(
        heard["review"], "pending",
        "a new operator's answer awaits review"
    );
    assert_eq!(heard["answeredBy"], "ana");
    assert!(heard["expiresAt"].is_string());
}

async fn get_answer_returns_at_once_for_a_settled_question_and_after_the_wait_otherwise(
    app: TestApp,
) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let client = agent(&app, "agent-a", &["games"]).await;
    let asked = client
        .ok("ask_expert", question("games", Some("q-1")))
        .await;
    let id = asked["questionId"].as_i64().expect("an id");
    // Nothing happens: the wait runs out and the question is still open.
    let still = client
        .ok("get_answer", json!({"questionId": id, "waitSeconds": 1}))
        .await;
    assert_eq!(still["status"], "open");
    // Sent back for research: returned at once, so the agent can act on it.
    let sent = app
        .graphql(Some(&ana.token), SEND_BACK, json!({"id": id.to_string()}))
        .await;
    assert!(sent["errors"].is_null(), "{sent}");
    let researching = tokio::time::timeout(
        Duration::from_secs(10),
        client.ok("get_answer", json!({"questionId": id, "waitSeconds": 55})),
    )
    .await
    .expect("a question sent back is returned without waiting");
    assert_eq!(researching["status"], "researching");
}

async fn get_answer_refuses_bad_arguments(app: TestApp) {
    open_niche(&app.db, "games").await;
    let client = agent(&app, "agent-a", &["games"]).await;
    client
        .ok("ask_expert", question("games", Some("q-1")))
        .await;
    for (arguments, says) in [
        (json!({}), "questionId or externalId"),
        (json!({"questionId": 1, "externalId": "q-1"}), "not both"),
        (
            json!({"externalId": "q-1", "waitSeconds": 56}),
            "waitSeconds must be a whole number from 0 to 55",
        ),
        (
            json!({"externalId": "q-1", "waitSeconds": -1}),
            "waitSeconds",
        ),
        (json!({"questionId": "one"}), "questionId"),
        (json!({"externalId": "q-1", "wait": 5}), "wait"),
    ] {
        let refused = client.refused("get_answer", arguments.clone()).await;
        assert_eq!(refused["code"], "BAD_USER_INPUT", "{arguments}: {refused}");
        assert!(
            refused["error"].as_str().is_some_and(|e| e.contains(says)),
            "{arguments}: {refused}"
        );
    }
}

async fn an_agents_tools_never_show_or_touch_another_agents_questions(app: TestApp) {
    open_niche(&app.db, "games").await;
    let a = agent(&app, "agent-a", &["games"]).await;
    let b = agent(&app, "agent-b", &["games"]).await;
    let asked = a.ok("ask_expert", question("games", Some("q-a"))).await;
    let id = asked["questionId"].as_i64().expect("an id");
    b.ok("ask_expert", question("games", Some("q-b"))).await;

    for (tool, arguments) in [
        ("get_answer", json!({"questionId": id})),
        ("get_answer", json!({"externalId": "q-a"})),
        ("get_answer", json!({"externalId": "q-a", "niche": "games"})),
        (
            "add_research",
            json!({"questionId": id, "findings": "B's findings"}),
        ),
        (
            "add_research",
            json!({"externalId": "q-a", "findings": "B's findings"}),
        ),
    ] {
        let refused = b.refused(tool, arguments.clone()).await;
        assert_eq!(
            refused["code"], "NOT_FOUND",
            "{tool} {arguments}: {refused}"
        );
    }
    // Exactly what a question that does not exist gets.
    let missing = b
        .refused("get_answer", json!({"questionId": 999_999}))
        .await;
    assert_eq!(missing["code"], "NOT_FOUND");

    // B asking under A's external id in their shared niche is refused, and shows nothing of A's.
    let taken = b
        .refused("ask_expert", question("games", Some("q-a")))
        .await;
    assert_eq!(taken["code"], "CONFLICT");
    assert_eq!(taken["reason"], "EXTERNAL_ID_TAKEN");
    assert!(taken.get("questionId").is_none());

    let row = agent_questions::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .expect("query")
        .expect("A's question");
    assert_eq!(row.research_round, 0, "B's findings changed nothing");
    assert!(!row.context.unwrap_or_default().contains("B's findings"));

    let listed = b.ok("list_questions", json!({})).await;
    let external: Vec<&str> = listed["questions"]
        .as_array()
        .expect("questions")
        .iter()
        .filter_map(|q| q["externalId"].as_str())
        .collect();
    assert_eq!(external, ["q-b"], "B lists only its own");
}

async fn add_research_appends_findings_and_opens_the_question_again(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let client = agent(&app, "agent-a", &["games"]).await;
    let asked = client
        .ok("ask_expert", question("games", Some("q-1")))
        .await;
    let id = asked["questionId"].as_i64().expect("an id");
    let sent = app
        .graphql(Some(&ana.token), SEND_BACK, json!({"id": id.to_string()}))
        .await;
    assert!(sent["errors"].is_null(), "{sent}");

    let empty = client
        .refused("add_research", json!({"questionId": id, "findings": "  "}))
        .await;
    assert_eq!(empty["code"], "BAD_USER_INPUT");
    assert_eq!(empty["error"], "findings is required");

    let added = client
        .ok(
            "add_research",
            json!({"externalId": "q-1", "findings": "The publisher confirmed June for 1.0."}),
        )
        .await;
    assert_eq!(added["questionId"], id);
    assert_eq!(added["status"], "open");
    assert_eq!(added["round"], 1);
    let row = agent_questions::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .expect("query")
        .expect("the question");
    let context = row.context.expect("a context");
    assert!(
        context.starts_with("Steam lists both dates.\n\nResearch, "),
        "{context}"
    );
    assert!(
        context.ends_with("The publisher confirmed June for 1.0."),
        "{context}"
    );

    // Answered, it takes no more research.
    let answered = app
        .answer(&ana.token, early_access(id, Some("Ship early access.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    let settled = client
        .refused(
            "add_research",
            json!({"questionId": id, "findings": "More."}),
        )
        .await;
    assert_eq!(settled["code"], "CONFLICT");
    assert_eq!(settled["reason"], "NOT_AWAITING_RESEARCH");
}

async fn list_questions_pages_through_the_agents_own_questions(app: TestApp) {
    open_niche(&app.db, "games").await;
    open_niche(&app.db, "roofing").await;
    let ana = operator(&app.db, "games", "ana").await;
    let client = agent(&app, "agent-a", &["games", "roofing"]).await;
    let mut ids = Vec::new();
    for (niche, external) in [("games", "q-1"), ("roofing", "q-2"), ("games", "q-3")] {
        let asked = client
            .ok("ask_expert", question(niche, Some(external)))
            .await;
        ids.push(asked["questionId"].as_i64().expect("an id"));
    }
    let answered = app
        .answer(&ana.token, early_access(ids[0], Some("Ship early access.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");

    let first = client.ok("list_questions", json!({"first": 2})).await;
    let page: Vec<(&str, &str)> = first["questions"]
        .as_array()
        .expect("questions")
        .iter()
        .map(|q| {
            (
                q["externalId"].as_str().unwrap_or_default(),
                q["niche"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(page, [("q-3", "games"), ("q-2", "roofing")], "newest first");
    let cursor = first["nextCursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let second = client
        .ok("list_questions", json!({"first": 2, "after": cursor}))
        .await;
    assert_eq!(second["questions"].as_array().map(Vec::len), Some(1));
    assert_eq!(second["questions"][0]["externalId"], "q-1");
    assert_eq!(second["questions"][0]["status"], "answered");
    assert!(second["questions"][0]["answeredAt"].is_string());
    assert!(second["nextCursor"].is_null());

    let answered_only = client
        .ok("list_questions", json!({"status": "answered"}))
        .await;
    assert_eq!(answered_only["questions"].as_array().map(Vec::len), Some(1));
    assert_eq!(answered_only["questions"][0]["questionId"], ids[0]);

    for (arguments, says) in [
        (json!({"first": 0}), "first must be between 1 and 100"),
        (json!({"first": 101}), "first must be between 1 and 100"),
        (
            json!({"after": "q1.7"}),
            "that cursor is not one askloop gave out",
        ),
        (json!({"status": "lost"}), "status"),
    ] {
        let refused = client.refused("list_questions", arguments.clone()).await;
        assert_eq!(refused["code"], "BAD_USER_INPUT", "{arguments}: {refused}");
        assert!(
            refused["error"].as_str().is_some_and(|e| e.contains(says)),
            "{arguments}: {refused}"
        );
    }
}

async fn an_unknown_tool_is_a_protocol_error(app: TestApp) {
    open_niche(&app.db, "games").await;
    let client = agent(&app, "agent-a", &["games"]).await;
    let response = client
        .request(
            "tools/call",
            json!({"name": "drop_tables", "arguments": {}}),
        )
        .await;
    assert_eq!(response["error"]["code"], -32602, "{response}");
    assert!(
        response["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("drop_tables")),
        "{response}"
    );
}

/// Request metadata declaring the MCP Tasks extension, as a client that can await tasks sends it.
fn declaring_tasks() -> Value {
    json!({"io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    }})
}

/// `ask_expert` in `games` as `external_id`, declaring tasks: the JSON-RPC response.
async fn ask_as_task(client: &McpClient, external_id: &str) -> Value {
    client
        .request(
            "tools/call",
            json!({"name": "ask_expert", "arguments": question("games", Some(external_id)),
                   "_meta": declaring_tasks()}),
        )
        .await
}

/// `tasks/get` for `task` with the tasks extension declared: the JSON-RPC response.
async fn get_task(client: &McpClient, task: &str) -> Value {
    client
        .request(
            "tasks/get",
            json!({"taskId": task, "_meta": declaring_tasks()}),
        )
        .await
}

async fn ask_expert_is_awaited_as_a_task_by_a_client_that_declares_tasks(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let client = agent(&app, "agent-a", &["games"]).await;
    let info = client.initialize().await;
    assert!(
        info["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(),
        "the server advertises the tasks extension: {info}"
    );

    // Declaring tasks, ask_expert answers with a task handle: the question, stored.
    let created = ask_as_task(&client, "q-1").await;
    let handle = &created["result"];
    assert_eq!(handle["resultType"], "task", "{created}");
    assert_eq!(handle["status"], "working", "{created}");
    let task = handle["taskId"].as_str().expect("a task id").to_owned();
    let stored = agent_questions::Entity::find()
        .one(&app.db)
        .await
        .expect("read")
        .expect("the question is stored");
    assert_eq!(task, format!("question-{}", stored.id));
    assert!(handle["pollIntervalMs"].as_u64().is_some(), "{created}");

    // The same call again (a retry) is the same question and the same task.
    let again = ask_as_task(&client, "q-1").await;
    assert_eq!(again["result"]["taskId"], task.as_str());
    assert_eq!(question_count(&app).await, 1);

    // Working while it waits, saying what for.
    let waiting = get_task(&client, &task).await;
    assert_eq!(waiting["result"]["status"], "working", "{waiting}");
    assert!(
        waiting["result"]["statusMessage"]
            .as_str()
            .is_some_and(|m| m.contains("waiting for a person")),
        "{waiting}"
    );
    assert!(waiting["result"].get("result").is_none(), "{waiting}");

    // An update answering no outstanding input request is acknowledged and ignored (SEP-2663),
    // and nothing changes.
    let ignored = client
        .request(
            "tasks/update",
            json!({"taskId": task, "inputResponses": {"research-0": {"action": "accept",
                   "content": {"findings": "Unasked."}}}, "_meta": declaring_tasks()}),
        )
        .await;
    assert_eq!(
        ignored["result"],
        json!({"resultType": "complete"}),
        "{ignored}"
    );
    let unchanged = get_task(&client, &task).await;
    assert_eq!(unchanged["result"]["status"], "working", "{unchanged}");

    // Sent back for research: input_required, with one form asking for findings, keyed by the
    // round. An accepted form without findings is refused; a declined one is ignored.
    let sent = app
        .graphql(
            Some(&ana.token),
            SEND_BACK,
            json!({"id": stored.id.to_string()}),
        )
        .await;
    assert!(sent["errors"].is_null(), "{sent}");
    let asked_for = get_task(&client, &task).await;
    assert_eq!(
        asked_for["result"]["status"], "input_required",
        "{asked_for}"
    );
    let form = &asked_for["result"]["inputRequests"]["research-0"];
    assert_eq!(form["method"], "elicitation/create", "{asked_for}");
    assert_eq!(
        form["params"]["requestedSchema"]["properties"]["findings"]["type"],
        "string"
    );
    let update = |responses: Value| {
        let client = &client;
        let task = task.clone();
        async move {
            client
                .request(
                    "tasks/update",
                    json!({"taskId": task, "inputResponses": responses,
                           "_meta": declaring_tasks()}),
                )
                .await
        }
    };
    let empty =
        update(json!({"research-0": {"action": "accept", "content": {"findings": " "}}})).await;
    assert_eq!(empty["error"]["code"], -32602, "{empty}");
    assert_eq!(empty["error"]["data"]["code"], "BAD_USER_INPUT", "{empty}");
    let declined = update(json!({"research-0": {"action": "decline"}})).await;
    assert_eq!(
        declined["result"],
        json!({"resultType": "complete"}),
        "{declined}"
    );
    assert_eq!(
        get_task(&client, &task).await["result"]["status"],
        "input_required"
    );
    let researched = update(json!({"research-0": {"action": "accept",
        "content": {"findings": "Steam confirms March."}}}))
    .await;
    assert_eq!(
        researched["result"],
        json!({"resultType": "complete"}),
        "{researched}"
    );
    let back = get_task(&client, &task).await;
    assert_eq!(back["result"]["status"], "working", "{back}");
    let reopened = agent_questions::Entity::find_by_id(stored.id)
        .one(&app.db)
        .await
        .expect("read")
        .expect("the question");
    assert_eq!(reopened.status, QuestionStatus::Open);
    assert!(
        reopened
            .context
            .as_deref()
            .is_some_and(|c| c.ends_with("Steam confirms March.")),
        "{reopened:?}"
    );

    // Answered by a person: completed, with what get_answer returns.
    let answered = app
        .answer(
            &ana.token,
            early_access(stored.id, Some("Ship early access.")),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    let done = get_task(&client, &task).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let result = &done["result"]["result"]["structuredContent"];
    assert_eq!(result["status"], "answered", "{done}");
    assert_eq!(result["answer"], "Ship early access.");
    assert_eq!(result["optionLabel"], "Early access");
    assert_eq!(result["review"], "pending");

    // Another agent's task, a task id that names no question, and a client that has not
    // declared tasks: refused.
    open_niche(&app.db, "roofing").await;
    let other = agent(&app, "agent-b", &["roofing"]).await;
    let foreign = get_task(&other, &task).await;
    assert_eq!(foreign["error"]["code"], -32602, "{foreign}");
    assert_eq!(foreign["error"]["data"]["code"], "NOT_FOUND", "{foreign}");
    for method in ["tasks/cancel", "tasks/update"] {
        let foreign = other
            .request(
                method,
                json!({"taskId": task, "inputResponses": {}, "_meta": declaring_tasks()}),
            )
            .await;
        assert_eq!(foreign["error"]["code"], -32602, "{method}: {foreign}");
    }
    let nonsense = get_task(&client, "drop-tables").await;
    assert_eq!(nonsense["error"]["code"], -32602, "{nonsense}");
    assert_eq!(nonsense["error"]["data"]["code"], "NOT_FOUND", "{nonsense}");
    // Cancelling a settled task is acknowledged and changes nothing: it stays completed.
    let late = client
        .request(
            "tasks/cancel",
            json!({"taskId": task, "_meta": declaring_tasks()}),
        )
        .await;
    assert_eq!(late["result"], json!({"resultType": "complete"}), "{late}");
    assert_eq!(
        get_task(&client, &task).await["result"]["status"],
        "completed"
    );
    let undeclared = client.request("tasks/get", json!({"taskId": task})).await;
    assert!(undeclared["error"].is_object(), "{undeclared}");
    assert!(undeclared["result"].is_null(), "{undeclared}");

    // Without declaring tasks, ask_expert answers as before.
    let plain = client
        .ok("ask_expert", question("games", Some("q-2")))
        .await;
    assert_eq!(plain["status"], "open");
}

on_both_backends!(
    ask_expert_is_awaited_as_a_task_by_a_client_that_declares_tasks,
    mcp_refuses_a_request_without_a_live_agent_token,
    a_body_over_256_kib_is_refused_unread,
    a_disabled_agents_token_is_forbidden_until_it_is_enabled,
    the_five_tools_are_listed_with_their_schemas,
    delegate_task_reserves_its_limit_and_get_answer_shows_the_result_and_cost,
    asking_twice_with_one_external_id_stores_one_question,
    asking_twice_without_an_external_id_is_one_question_named_by_its_arguments,
    an_agent_may_not_ask_in_another_niche,
    ask_expert_refuses_bad_input_as_the_intake_does_and_stores_nothing,
    ask_expert_over_budget_is_refused_with_what_is_left,
    get_answer_waits_for_the_answer_an_operator_gives_meanwhile,
    get_answer_returns_at_once_for_a_settled_question_and_after_the_wait_otherwise,
    get_answer_refuses_bad_arguments,
    an_agents_tools_never_show_or_touch_another_agents_questions,
    add_research_appends_findings_and_opens_the_question_again,
    list_questions_pages_through_the_agents_own_questions,
    an_unknown_tool_is_a_protocol_error,
);

/// The official TypeScript SDK (`@modelcontextprotocol/sdk`, a client that is not askloop's
/// code) is refused with a wrong token, lists the tools, asks, and waits in `get_answer` for the
/// answer an operator gives meanwhile; its exit code says whether every check passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_official_typescript_sdk_asks_and_hears_the_answer() {
    let prefix = sdk_prefix();
    assert!(
        prefix
            .join("node_modules")
            .join("@modelcontextprotocol")
            .join("sdk")
            .is_dir(),
        "@modelcontextprotocol/sdk is not installed under {}: run the tests with `cargo xtask \
         test`, which installs it, or set ASKLOOP_MCP_SDK to a folder holding its node_modules",
        prefix.display()
    );
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let token = agent_with_token(&app, "sdk-agent", &["games"]).await;

    let child = tokio::process::Command::new("node")
        .arg(sdk_check_script())
        .env("MCP_SDK_PREFIX", &prefix)
        .env("ASKLOOP_MCP_URL", app.url("/mcp"))
        .env("ASKLOOP_MCP_TOKEN", &token)
        .env("ASKLOOP_MCP_NICHE", "games")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs (it comes with npm)");
    let steps = drive(
        &app,
        &ana.token,
        child,
        PersonActs {
            // It waits in get_answer, or polls its task: the operator acts meanwhile.
            send_back_on: &["task-asked"],
            answer_on: &["waiting", "task-updated"],
        },
        Duration::from_secs(90),
    )
    .await;
    let step = |name: &str| steps.step(name);
    assert_eq!(
        step("tools"),
        json!([
            "ask_expert",
            "delegate_task",
            "get_answer",
            "add_research",
            "withdraw_question",
            "list_questions",
            "search_knowledge",
            "use_knowledge"
        ])
    );
    assert_eq!(step("server")["name"], "askloop");
    let answer = step("answer");
    assert_eq!(answer["status"], "answered");
    assert_eq!(answer["answer"], "Ship early access.");
    assert_eq!(answer["optionLabel"], "Early access");
    assert_eq!(answer["answeredBy"], "ana");
    assert_eq!(step("again")["duplicate"], true);
    assert_eq!(step("unknown")["code"], "NOT_FOUND");
    // Ids as strings of digits are taken; a word is refused with what is wrong.
    assert_eq!(step("by-text")["status"], "answered");
    let word = step("by-word");
    assert!(
        word["error"]
            .as_str()
            .is_some_and(|e| e.contains("questionId must be a whole number")),
        "{word}"
    );
    // The task: input_required with one form asking for findings while it was with the agent;
    // the update acknowledged empty, the findings in its context, then completed by the answer.
    let needs = step("input-required");
    assert_eq!(needs["status"], "input_required");
    let request = needs["inputRequests"]
        .as_object()
        .and_then(|r| r.values().next())
        .expect("an input request")
        .clone();
    assert_eq!(request["params"]["mode"], "form", "{request}");
    assert_eq!(
        request["params"]["requestedSchema"]["required"],
        json!(["findings"])
    );
    assert_eq!(step("update-ack"), json!({"resultType": "complete"}));
    let task = step("task-completed");
    assert_eq!(task["status"], "answered");
    assert_eq!(task["answer"], "Ship early access.");
    let researched = agent_questions::Entity::find()
        .filter(agent_questions::Column::ExternalId.eq("sdk-task-1"))
        .one(&app.db)
        .await
        .expect("read")
        .expect("the task's question");
    assert!(
        researched
            .context
            .as_deref()
            .is_some_and(|c| c.ends_with("The team knows GDScript; no console port planned.")),
        "{researched:?}"
    );
    assert_eq!(researched.research_round, 1);
    // Cancelled: acknowledged empty, and the question withdrawn.
    assert_eq!(step("cancel-ack"), json!({"resultType": "complete"}));
    assert_eq!(step("task-cancelled")["status"], "cancelled");
    let withdrawn = agent_questions::Entity::find()
        .filter(agent_questions::Column::ExternalId.eq("sdk-task-2"))
        .one(&app.db)
        .await
        .expect("read")
        .expect("the cancelled task's question");
    assert_eq!(withdrawn.status, QuestionStatus::Dismissed);
    assert!(withdrawn.withdrawn_at.is_some());
    assert_eq!(step("unknown-task")["code"], -32602);
    assert_eq!(step("done"), json!(true));
    assert_eq!(
        question_count(&app).await,
        3,
        "one question for one externalId, and the two tasks"
    );
}
