//! The MCP server (docs/contract.md#mcp): `POST/GET /mcp`, the Model Context Protocol's
//! streamable HTTP transport, served by the official Rust SDK (`rmcp`), for registered agents
//! holding an agent token.
//!
//! Every request is authenticated before the SDK sees it: `Authorization: Bearer <agent token>`
//! names the agent (missing, unknown or revoked → 401, a disabled agent → 403), and the agent
//! rides in the request's extensions to the tool, which reads it from the HTTP parts the SDK
//! hands on. Each request stands alone — no MCP session is kept between requests — so a tool
//! call may reach any instance sharing the database, and shutting down leaves nothing open but
//! in-flight calls (a waiting `get_answer` returns at once when askloop stops).
//!
//! The tools themselves are in [`tools`]; this module only adapts them to the SDK: a tool's
//! result is its structured content (and the same JSON as text), and a refusal is a tool error
//! (`isError: true`) whose structured content is the REST error body, `{error, code, reason?}`.
//! When the refusal is that the database is out of reach for now, the HTTP response says so as
//! well (503 with `Retry-After`), so a client's transport knows to try again.
//!
//! A body that claims to be JSON and is not one JSON-RPC message is answered before the SDK
//! sees it, as the streamable HTTP transport asks (400, with a JSON-RPC error and no id):
//! `-32700` (parse error) for text that is not JSON, `-32600` (invalid request) for JSON that is
//! not a message. The SDK would answer both with a plain-text 415.
//!
//! `ask_expert` can also be awaited as a task (the MCP Tasks extension, SEP-2663, which `rmcp`
//! implements; docs/contract.md#mcp-tasks): a client that declares the extension gets a task
//! handle for the question it asked instead of the plain result. `tasks/get` reports it `working`
//! while people have it, `input_required` with a one-field form while it is with the agent for
//! research (`tasks/update` answering that form is `add_research`), `cancelled` once withdrawn
//! (`tasks/cancel` withdraws it), and `completed` with what `get_answer` would return once it is
//! otherwise settled. The task is the question itself — its id is `question-<id>`, its state
//! read from the database — so no task is kept in memory and any instance can answer for it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use entity::agent_questions::QuestionStatus;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    ClientJsonRpcMessage, CreateTaskResult, DetailedTask, ElicitRequest, ElicitRequestParams,
    ElicitationSchema, GetTaskParams, GetTaskResult, Implementation, InputRequest, InputRequests,
    InputResponses, JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Task, TaskPayload, TaskStatus, Tool, ToolAnnotations, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::auth::bearer_token;
use crate::error::ServiceError;
use crate::rest::views::seconds;
use crate::service::agents::agent_tokens::{self, TokenHolder};
use crate::service::agents::registry::Asker;
use crate::service::questions::lookup::{self, QuestionRef};
use crate::service::questions::research::add_findings;
use crate::state::AppState;

pub mod tools;

/// Where the MCP server is mounted.
pub const PATH: &str = "/mcp";

/// The agent a request's bearer token named, put in the request's extensions by [`authenticate`].
#[derive(Debug, Clone)]
pub struct McpAgent(pub Asker);

/// The `/mcp` route: the SDK's streamable HTTP service behind [`authenticate`].
pub fn router(state: &AppState) -> Router<AppState> {
    let config = StreamableHttpServerConfig::default()
        // No session between requests: see the module's documentation.
        .with_legacy_session_mode(false)
        // Plain JSON answers: no tool sends anything before its result.
        .with_json_response(true)
        // The SDK's check against DNS rebinding accepts only loopback `Host`s by default. It
        // guards servers that trust whoever can reach them; this one trusts only a bearer token,
        // which a page that rebinds a name cannot send, and it runs behind proxies under names
        // of its own.
        .disable_allowed_hosts()
        .with_max_request_body_bytes(state.config.max_body_bytes);
    let server = AskloopMcp {
        state: state.clone(),
    };
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    Router::new()
        .route_service(PATH, service)
        // Inner first: a message is read only once its request is authenticated.
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            read_message_first,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            authenticate,
        ))
}

/// Set by a handler whose database was out of reach, so the response is 503 with
/// `Retry-After` (the SDK answers every JSON-RPC response it sends with 200).
#[derive(Debug, Clone, Default)]
struct OutOfReach(Arc<AtomicBool>);

/// Mark this request's response as temporarily unavailable when `err` says the database is out
/// of reach.
fn note_if_out_of_reach(context: &RequestContext<RoleServer>, err: &ServiceError) {
    if err.retry_after().is_none() {
        return;
    }
    if let Some(flag) = context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<OutOfReach>())
    {
        flag.0.store(true, Ordering::Relaxed);
    }
}

/// Whether the request says its body is JSON (`application/json`, parameters aside).
fn says_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// A JSON-RPC error response with no id (the request's could not be read), as HTTP 400.
fn jsonrpc_refusal(error: ErrorData) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": error});
    (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}

/// Read a JSON POST's body (within the body limit) and refuse it as JSON-RPC does unless it is
/// one JSON-RPC message; a message goes on to the SDK unchanged. Other requests (GET, another
/// content type, which the SDK refuses itself) pass untouched.
pub async fn read_message_first(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST || !says_json(request.headers()) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    // Read through axum's extractor, so the body limit applies before a byte past it is read.
    let bytes = match Bytes::from_request(Request::from_parts(parts.clone(), body), &state).await {
        Ok(bytes) => bytes,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return ServiceError::TooLarge(format!(
                "the request body is larger than {} KiB",
                state.config.max_body_bytes / 1024
            ))
            .into_response();
        }
        Err(_) => {
            return ServiceError::BadInput("the request body could not be read".into())
                .into_response();
        }
    };
    if serde_json::from_slice::<ClientJsonRpcMessage>(&bytes).is_err() {
        return match serde_json::from_slice::<Value>(&bytes) {
            Err(err) => jsonrpc_refusal(ErrorData::parse_error(
                format!("Parse error: the body is not JSON ({err})"),
                None,
            )),
            Ok(_) => jsonrpc_refusal(ErrorData::invalid_request(
                "Invalid Request: the body is not one JSON-RPC request, notification or \
                 response (batches are not accepted)",
                None,
            )),
        };
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// Resolve the bearer token to an agent before any MCP message is read.
pub async fn authenticate(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(token) = bearer_token(request.headers()) else {
        return unauthenticated("an agent token is required: Authorization: Bearer <token>");
    };
    match agent_tokens::resolve(&state.db, &token).await {
        Ok(Some(TokenHolder::Active(asker))) => {
            let out_of_reach = OutOfReach::default();
            request.extensions_mut().insert(McpAgent(asker));
            request.extensions_mut().insert(out_of_reach.clone());
            let mut response = next.run(request).await;
            if out_of_reach.0.load(Ordering::Relaxed) {
                *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                response.headers_mut().insert(
                    header::RETRY_AFTER,
                    crate::rest::errors::temporary_retry_after(),
                );
            }
            response
        }
        Ok(Some(TokenHolder::Disabled)) => {
            ServiceError::Forbidden("this agent is disabled".into()).into_response()
        }
        Ok(None) => unauthenticated("that agent token is unknown or revoked"),
        Err(err) => err.into_response(),
    }
}

/// 401 with the challenge RFC 6750 asks for.
fn unauthenticated(message: &str) -> Response {
    let mut response = ServiceError::Unauthenticated(message.to_owned()).into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"askloop\""),
    );
    response
}

/// askloop as an MCP server: the tools of [`tools`], for the agent of each request.
#[derive(Clone)]
pub struct AskloopMcp {
    state: AppState,
}

const INSTRUCTIONS: &str = "askloop puts an agent's questions in front of people who have done \
    the job. Call ask_expert with a question in one of your niches, then get_answer with its \
    questionId (waitSeconds up to 55; call again while the status is open). An answer's review \
    is pending until an admin checks it; rejected or reversed means discard it. Status \
    researching means a person wants more context: call add_research with your findings. Call \
    withdraw_question for a question you no longer need. Clients with the tasks extension may \
    instead await ask_expert as a task: input_required asks for findings (tasks/update), and \
    tasks/cancel withdraws it.";

/// How often a task's client is asked to poll `tasks/get`.
const TASK_POLL_MS: u64 = 5_000;

/// The task id of question `id`.
fn task_id(id: i64) -> String {
    format!("question-{id}")
}

/// The question a task id names, if it names one.
fn question_of_task(task_id: &str) -> Option<i64> {
    task_id
        .strip_prefix("question-")
        .and_then(|id| id.parse().ok())
        .filter(|id| *id > 0)
}

/// The key of the input request a question sent back for research carries in `round`: keys are
/// unique over a task's life (SEP-2663), and a question may be sent back more than once.
fn research_key(round: i64) -> String {
    format!("research-{round}")
}

/// The field of the research form.
const FINDINGS: &str = "findings";

/// The input request of a question sent back for research: a one-field form, `findings`.
fn research_request(
    question: &entity::agent_questions::Model,
) -> Result<InputRequests, ServiceError> {
    let schema = ElicitationSchema::builder()
        .required_string(FINDINGS)
        .description("What the agent found: appended to the question's context under a dated heading, and the question is open for people again.")
        .build()
        .map_err(|err| ServiceError::Internal(anyhow::anyhow!("research form: {err}")))?;
    let request = InputRequest::Elicitation(ElicitRequest::new(
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: format!(
                "A person asked for more research on \"{}\". Reply with your findings.",
                question.title.chars().take(120).collect::<String>()
            ),
            requested_schema: schema,
        },
    ));
    Ok(InputRequests::from([(
        research_key(question.research_round),
        request,
    )]))
}

/// The state of the task that is question `id` of `asker` (docs/contract.md#mcp-tasks): working
/// while it waits for people, input_required while it is with the agent for research (one form
/// asking for findings), cancelled once the agent withdrew it, completed with what `get_answer`
/// would return once it is otherwise settled.
async fn task_state(
    state: &AppState,
    asker: &Asker,
    id: i64,
) -> Result<DetailedTask, ServiceError> {
    let own = lookup::await_own(&state.db, &state.live, asker, &QuestionRef::Id(id), None).await?;
    let question = &own.question;
    let task = Task::new(
        task_id(id),
        TaskStatus::Working,
        seconds(question.created_at),
        seconds(question.updated_at),
    )
    .with_poll_interval_ms(TASK_POLL_MS);
    let (task, payload) = match question.status {
        QuestionStatus::Open => (
            task.with_status_message(format!(
                "waiting for a person; the question expires at {}",
                seconds(question.expires_at)
            )),
            TaskPayload::Working,
        ),
        QuestionStatus::Researching => (
            task.with_status_message(
                "a person asked for more research: answer the input request with your findings \
                 (tasks/update), or call add_research",
            ),
            TaskPayload::InputRequired {
                input_requests: research_request(question)?,
            },
        ),
        QuestionStatus::Dismissed if question.withdrawn_at.is_some() => (
            task.with_status_message(crate::service::questions::withdrawal::WITHDRAWN_REASON),
            TaskPayload::Cancelled,
        ),
        QuestionStatus::Answered | QuestionStatus::Dismissed | QuestionStatus::Expired => {
            let mut result = tools::answer_json(&own);
            if let Some(several) =
                crate::service::questions::consensus::several_json(&state.db, question).await?
            {
                result["several"] = several;
            }
            let result = CallToolResult::structured(result);
            (
                task,
                TaskPayload::Completed {
                    result: as_object(&result),
                },
            )
        }
    };
    Ok(DetailedTask::new(task, payload))
}

/// The findings in a client's answer to the research form, if it answered it: `None` when the
/// response does not answer the question's current input request (an unknown, earlier or
/// declined one, which SEP-2663 says to ignore); a refusal when it accepts the form without
/// findings.
fn findings_in(
    responses: &InputResponses,
    question: &entity::agent_questions::Model,
) -> Result<Option<String>, ServiceError> {
    if question.status != QuestionStatus::Researching {
        return Ok(None);
    }
    let Some(response) = responses.get(&research_key(question.research_round)) else {
        return Ok(None);
    };
    if response.get("action").and_then(Value::as_str) != Some("accept") {
        // Declined or cancelled: the question stays with the agent (it may withdraw it).
        return Ok(None);
    }
    let findings = response
        .get("content")
        .and_then(|content| content.get(FINDINGS))
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or_default();
    if findings.is_empty() {
        return Err(ServiceError::BadInput(format!(
            "the research form is answered with content.{FINDINGS}, a non-empty string"
        )));
    }
    if let Some(refused) = crate::domain::text::first_control_character(&json!(findings)) {
        return Err(refused.into());
    }
    Ok(Some(crate::domain::text::cap(
        findings,
        crate::domain::text::CONTEXT_MAX,
    )))
}

/// A tool result as the JSON object a completed task carries.
fn as_object(result: &CallToolResult) -> JsonObject {
    match serde_json::to_value(result) {
        Ok(Value::Object(object)) => object,
        _ => JsonObject::new(),
    }
}

/// A service refusal on a `tasks/*` method, as a JSON-RPC error with the REST error body as its
/// data.
fn task_error(err: ServiceError) -> ErrorData {
    err.log_if_internal();
    let body = Some(err.body());
    match err {
        // SEP-2663: an unknown task id (another agent's included) is invalid params.
        ServiceError::NotFound(message) => ErrorData::invalid_params(message, body),
        ServiceError::Internal(_) => ErrorData::internal_error("internal error", body),
        temporary @ ServiceError::TemporarilyUnavailable(_) => {
            ErrorData::internal_error(temporary.to_string(), body)
        }
        other => ErrorData::invalid_params(other.to_string(), body),
    }
}

/// The question a `tasks/*` request names, or the error for one that names none.
fn task_question(task_id: &str) -> Result<i64, ErrorData> {
    question_of_task(task_id).ok_or_else(|| {
        task_error(ServiceError::NotFound(format!(
            "no task '{}'",
            task_id.chars().take(60).collect::<String>()
        )))
    })
}

/// The agent the authentication layer found for this request.
fn caller(context: &RequestContext<RoleServer>) -> Option<Asker> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<McpAgent>())
        .map(|agent| agent.0.clone())
}

fn tool_result(result: Result<Value, ServiceError>) -> CallToolResult {
    match result {
        Ok(value) => CallToolResult::structured(value),
        Err(err) => {
            err.log_if_internal();
            CallToolResult::structured_error(err.body())
        }
    }
}

impl ServerHandler for AskloopMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("askloop", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = tools::specs()
            .into_iter()
            .map(|spec| {
                Tool::new(spec.name, spec.description, Arc::new(spec.input_schema)).annotate(
                    ToolAnnotations::new()
                        .read_only(spec.read_only)
                        .destructive(false)
                        .open_world(false),
                )
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(asker) = caller(&context) else {
            // Only reachable if the route were mounted without its authentication layer.
            return Err(ErrorData::internal_error("no agent for this request", None));
        };
        if !tools::TOOL_NAMES.contains(&request.name.as_ref()) {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool '{}'",
                    request.name.chars().take(60).collect::<String>()
                ),
                None,
            ));
        }
        let arguments = request.arguments.unwrap_or_default();
        let as_task = matches!(request.name.as_ref(), "ask_expert" | "delegate_task")
            && context
                .client_capabilities()
                .is_some_and(|capabilities| capabilities.supports_tasks());
        let result = tools::call(&self.state, &asker, &request.name, arguments).await;
        if let Err(err) = &result {
            note_if_out_of_reach(&context, err);
        }
        if as_task && let Ok(asked) = &result {
            // The question is stored (or was, under the same externalId): the task is it.
            let id = asked["questionId"].as_i64().unwrap_or_default();
            let task = task_state(&self.state, &asker, id).await.map_err(|err| {
                note_if_out_of_reach(&context, &err);
                task_error(err)
            })?;
            return Ok(CallToolResponse::Task(CreateTaskResult::new(task.task)));
        }
        Ok(tool_result(result).into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        Ok(GetTaskResult::new(
            self.own_task(&context, &request.task_id).await?,
        ))
    }

    /// SEP-2663 `tasks/update`: the client's answers to the task's input requests. An answer to
    /// the research form is `add_research`; any other key is ignored, as the extension says.
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let asker = self.asker(&context)?;
        let id = task_question(&request.task_id)?;
        let result = async {
            let question = lookup::find_own(&self.state.db, &asker, &QuestionRef::Id(id)).await?;
            let Some(findings) = findings_in(&request.input_responses, &question)? else {
                return Ok(());
            };
            match add_findings(
                &self.state.db,
                &self.state.hint(),
                &question,
                &findings,
                chrono::Utc::now(),
            )
            .await
            {
                // Settled or reopened meanwhile: the request is no longer outstanding.
                Err(ServiceError::Conflict(_)) => Ok(()),
                other => other.map(drop),
            }
        }
        .await;
        result.map_err(|err| {
            note_if_out_of_reach(&context, &err);
            task_error(err)
        })
    }

    /// SEP-2663 `tasks/cancel`: acknowledged with an empty result, and the question is withdrawn
    /// (a settled one stays settled; cancellation is eventually consistent).
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let asker = self.asker(&context)?;
        let id = task_question(&request.task_id)?;
        crate::service::questions::withdrawal::withdraw(
            &self.state.db,
            &self.state.hint(),
            &asker,
            &QuestionRef::Id(id),
            Some("cancelled as an MCP task"),
            chrono::Utc::now(),
        )
        .await
        .map(drop)
        .map_err(|err| {
            note_if_out_of_reach(&context, &err);
            task_error(err)
        })
    }
}

impl AskloopMcp {
    /// The task `task_id` of this request's agent, as it stands: not found for an id that names
    /// none of its questions.
    /// The agent this request is for.
    fn asker(&self, context: &RequestContext<RoleServer>) -> Result<Asker, ErrorData> {
        // Only missing if the route were mounted without its authentication layer.
        caller(context).ok_or_else(|| ErrorData::internal_error("no agent for this request", None))
    }

    async fn own_task(
        &self,
        context: &RequestContext<RoleServer>,
        task_id: &str,
    ) -> Result<DetailedTask, ErrorData> {
        let asker = self.asker(context)?;
        let id = task_question(task_id)?;
        task_state(&self.state, &asker, id).await.map_err(|err| {
            note_if_out_of_reach(context, &err);
            task_error(err)
        })
    }
}
