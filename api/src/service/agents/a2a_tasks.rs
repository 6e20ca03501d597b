//! A2A tasks (docs/contract.md#a2a): the state a question's task is in, and the push
//! notification configs an agent sets on its tasks, whose pushes are outbox deliveries.
//!
//! A push is a delivery row like any event for the agent (written in the transaction of the
//! change, sent by the worker with retries and a log, sent again with the same id after a crash
//! mid-send); what sets it apart is its `push_config_id`, which sends it to the config's URL with
//! the config's token and `Authorization`, signed with the agent's secrets by its scheme. Each
//! event about a question that changes its task (a person's answer, a request for research, a
//! dismissal, expiry, withdrawal, a verdict, a retraction) and the agent's own research writes
//! one push per config of that task, carrying the task's state as it is in that transaction.
//!
//! A push URL is held to the rule of members' webhooks (docs/security.md#outbound): public
//! addresses only, checked at every connect — unless its host is the host of the agent's own
//! registered endpoint, which an admin set.

use chrono::{DateTime, Utc};
use entity::a2a_push_configs;
use entity::agent_questions::{self, QuestionStatus};
use entity::deliveries::{self, DeliveryStatus};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, NotSet, PaginatorTrait,
    QueryFilter, QueryOrder,
};
use serde_json::{Value, json};

use crate::db::{Db, WriteTxn};
use crate::domain::delivery::EventType;
use crate::domain::sealing::DataKey;
use crate::domain::text::char_len;
use crate::error::ServiceError;
use crate::service::agents::registry::{self, Asker};
use crate::service::questions::lookup::{QuestionRef, find_own};

/// The event type of an A2A push.
pub const PUSH_EVENT: &str = "a2a.task_status";

/// The most push configs one task may have.
pub const CONFIGS_PER_TASK: u64 = 10;

/// The longest push URL, token, config id and credentials askloop keeps.
const URL_MAX: usize = 2000;
const FIELD_MAX: usize = 500;

/// Why a push is not sent when its config is gone.
pub const CONFIG_DELETED: &str = "its A2A push config was deleted";

/// A task state, as the protocol spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    /// Waiting for a person.
    Working,
    /// A person asked the agent for more research.
    InputRequired,
    /// Answered.
    Completed,
    /// Dismissed by a person.
    Rejected,
    /// Withdrawn by its agent.
    Canceled,
    /// Its time ran out.
    Failed,
}

impl TaskState {
    /// Every state askloop's tasks take.
    pub const ALL: [TaskState; 6] = [
        TaskState::Working,
        TaskState::InputRequired,
        TaskState::Completed,
        TaskState::Rejected,
        TaskState::Canceled,
        TaskState::Failed,
    ];

    /// The wire name (`TASK_STATE_…`).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Working => "TASK_STATE_WORKING",
            TaskState::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            TaskState::Completed => "TASK_STATE_COMPLETED",
            TaskState::Rejected => "TASK_STATE_REJECTED",
            TaskState::Canceled => "TASK_STATE_CANCELED",
            TaskState::Failed => "TASK_STATE_FAILED",
        }
    }

    /// The state named `name` (`TASK_STATE_…`), if askloop has it.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|state| state.as_str() == name)
    }

    /// The state of `question` (the table of task states in docs/contract.md#a2a).
    pub fn of(question: &agent_questions::Model) -> Self {
        match question.status {
            QuestionStatus::Open => TaskState::Working,
            QuestionStatus::Researching => TaskState::InputRequired,
            QuestionStatus::Answered => TaskState::Completed,
            QuestionStatus::Dismissed if question.withdrawn_at.is_some() => TaskState::Canceled,
            QuestionStatus::Dismissed => TaskState::Rejected,
            QuestionStatus::Expired => TaskState::Failed,
        }
    }

    /// The question status this state is read from.
    pub fn status(self) -> QuestionStatus {
        match self {
            TaskState::Working => QuestionStatus::Open,
            TaskState::InputRequired => QuestionStatus::Researching,
            TaskState::Completed => QuestionStatus::Answered,
            TaskState::Rejected | TaskState::Canceled => QuestionStatus::Dismissed,
            TaskState::Failed => QuestionStatus::Expired,
        }
    }

    /// Whether nothing more happens to the task's state.
    pub fn is_terminal(self) -> bool {
        !matches!(self, TaskState::Working | TaskState::InputRequired)
    }
}

/// The task id of question `id`.
pub fn task_id(id: i64) -> String {
    format!("question-{id}")
}

/// A protocol timestamp (RFC 3339, UTC, milliseconds).
pub fn timestamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A push notification config as an agent sets it (parsed at the edge).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPushConfig {
    /// The config's id; askloop names one when none is given.
    pub config_id: Option<String>,
    /// Where pushes go.
    pub url: String,
    /// Sent back with every push.
    pub token: Option<String>,
    /// `Authorization: <scheme> <credentials>`, if given.
    pub authentication: Option<(String, Option<String>)>,
}

/// Check the lengths and the URL's form of `config` (not yet its address).
fn check_form(config: &NewPushConfig) -> Result<(), ServiceError> {
    let too_long = |field: &str, max: usize| {
        ServiceError::BadInput(format!("{field} is longer than {max} characters"))
    };
    if char_len(&config.url) > URL_MAX {
        return Err(too_long("url", URL_MAX));
    }
    for (field, value) in [
        ("id", config.config_id.as_deref()),
        ("token", config.token.as_deref()),
        (
            "authentication.scheme",
            config.authentication.as_ref().map(|(s, _)| s.as_str()),
        ),
        (
            "authentication.credentials",
            config
                .authentication
                .as_ref()
                .and_then(|(_, c)| c.as_deref()),
        ),
    ] {
        if value.is_some_and(|v| char_len(v) > FIELD_MAX) {
            return Err(too_long(field, FIELD_MAX));
        }
    }
    // Both are sent as header values: printable ASCII only, so every attempt can be sent.
    for (field, value) in [
        ("token", config.token.as_deref()),
        (
            "authentication.credentials",
            config
                .authentication
                .as_ref()
                .and_then(|(_, c)| c.as_deref()),
        ),
    ] {
        if value.is_some_and(|v| !v.bytes().all(|b| (0x20..0x7f).contains(&b))) {
            return Err(ServiceError::BadInput(format!(
                "{field} must be printable ASCII (it is sent as a header)"
            )));
        }
    }
    if let Some((scheme, _)) = &config.authentication
        && (scheme.is_empty()
            || !scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    {
        return Err(ServiceError::BadInput(
            "authentication.scheme must be one word (Bearer, Basic, …)".into(),
        ));
    }
    let parsed = reqwest::Url::parse(&config.url)
        .map_err(|err| ServiceError::BadInput(format!("url is not an absolute URL ({err})")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(ServiceError::BadInput(
            "url must be an http or https URL with a host".into(),
        ));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(ServiceError::BadInput(
            "url must not carry credentials; give them as authentication".into(),
        ));
    }
    Ok(())
}

/// The host of `url`, lowercased, if it has one.
fn host_of(url: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .ok()?
        .host_str()
        .map(str::to_ascii_lowercase)
}

/// Whether pushes to `url` may reach any address: its host is that of the agent's own endpoint.
fn is_agents_own_host(url: &str, endpoint: Option<&str>) -> bool {
    match (host_of(url), endpoint.and_then(host_of)) {
        (Some(host), Some(own)) => host == own,
        _ => false,
    }
}

/// Check everything about `config` that does not depend on the task: `asker` is a registered
/// agent (403), the fields' lengths and form, and a public address (or the agent's own
/// endpoint's host) (400). `SendMessage` calls it before it stores a question, so a config
/// it would refuse never leaves a question asked (and paid for) behind. The agent's id.
pub async fn check_push_config(
    db: &Db,
    asker: &Asker,
    config: &NewPushConfig,
) -> Result<i64, ServiceError> {
    let Some(agent_id) = asker.agent_id() else {
        return Err(ServiceError::Forbidden(
            "push notifications are for registered agents".into(),
        ));
    };
    check_form(config)?;
    let agent = entity::agents::Entity::find_by_id(agent_id)
        .one(db)
        .await?
        .ok_or_else(|| ServiceError::NotFound("no such agent".into()))?;
    if !is_agents_own_host(&config.url, agent.webhook_url.as_deref())
        && crate::outbound::literal_host_refused(&config.url)
    {
        return Err(ServiceError::BadInput(
            "url names an address that is not public; pushes go to public addresses only \
             (or to the host of this agent's registered endpoint)"
                .into(),
        ));
    }
    Ok(agent_id)
}

/// Set (or replace, by id) a push config on `asker`'s task `question_id`. Creates of one task
/// take turns on its question's row (locked on PostgreSQL; SQLite has one writer), so under any
/// race a task keeps at most [`CONFIGS_PER_TASK`] configs and a second create with the same id
/// replaces the first.
pub async fn set_push_config(
    db: &Db,
    asker: &Asker,
    question_id: i64,
    config: NewPushConfig,
    now: DateTime<Utc>,
) -> Result<a2a_push_configs::Model, ServiceError> {
    let question = find_own(db, asker, &QuestionRef::Id(question_id)).await?;
    let agent_id = check_push_config(db, asker, &config).await?;
    let config_id = config
        .config_id
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| format!("push-{}", uuid::Uuid::new_v4().simple()));
    let (auth_scheme, auth_credentials) = match config.authentication {
        Some((scheme, credentials)) => (Some(scheme), credentials),
        None => (None, None),
    };
    let txn = db.begin_write().await?;
    if sea_orm::ConnectionTrait::get_database_backend(&txn) == sea_orm::DbBackend::Postgres {
        use sea_orm::QuerySelect;
        entity::agent_questions::Entity::find_by_id(question.id)
            .select_only()
            .column(entity::agent_questions::Column::Id)
            .lock_exclusive()
            .into_tuple::<i64>()
            .one(&txn)
            .await?;
    }
    let existing = a2a_push_configs::Entity::find()
        .filter(a2a_push_configs::Column::QuestionId.eq(question.id))
        .filter(a2a_push_configs::Column::ConfigId.eq(config_id.as_str()))
        .one(&txn)
        .await?;
    let saved = match existing {
        Some(found) => {
            let mut row: a2a_push_configs::ActiveModel = found.into();
            row.url = Set(config.url);
            row.token = Set(config.token);
            row.auth_scheme = Set(auth_scheme);
            row.auth_credentials = Set(auth_credentials);
            row.updated_at = Set(now);
            row.update(&txn).await?
        }
        None => {
            let count = a2a_push_configs::Entity::find()
                .filter(a2a_push_configs::Column::QuestionId.eq(question.id))
                .count(&txn)
                .await?;
            if count >= CONFIGS_PER_TASK {
                txn.rollback().await?;
                return Err(ServiceError::BadInput(format!(
                    "a task has at most {CONFIGS_PER_TASK} push configs; delete one first"
                )));
            }
            a2a_push_configs::ActiveModel {
                id: NotSet,
                question_id: Set(question.id),
                agent_id: Set(agent_id),
                config_id: Set(config_id),
                url: Set(config.url),
                token: Set(config.token),
                auth_scheme: Set(auth_scheme),
                auth_credentials: Set(auth_credentials),
                created_at: Set(now),
                updated_at: Set(now),
            }
            .insert(&txn)
            .await?
        }
    };
    txn.commit().await?;
    Ok(saved)
}

/// The push configs of `asker`'s task `question_id`, oldest first.
pub async fn list_push_configs(
    db: &Db,
    asker: &Asker,
    question_id: i64,
) -> Result<Vec<a2a_push_configs::Model>, ServiceError> {
    let question = find_own(db, asker, &QuestionRef::Id(question_id)).await?;
    Ok(a2a_push_configs::Entity::find()
        .filter(a2a_push_configs::Column::QuestionId.eq(question.id))
        .order_by_asc(a2a_push_configs::Column::Id)
        .all(db)
        .await?)
}

/// The push config `config_id` of `asker`'s task `question_id`.
pub async fn get_push_config(
    db: &Db,
    asker: &Asker,
    question_id: i64,
    config_id: &str,
) -> Result<a2a_push_configs::Model, ServiceError> {
    list_push_configs(db, asker, question_id)
        .await?
        .into_iter()
        .find(|config| config.config_id == config_id)
        .ok_or_else(|| {
            ServiceError::BadInput(format!(
                "task {} has no push config '{}'",
                task_id(question_id),
                config_id.chars().take(80).collect::<String>()
            ))
        })
}

/// Delete the push config `config_id` of `asker`'s task `question_id`; pushes not yet sent to
/// it are dropped when they come to be sent.
pub async fn delete_push_config(
    db: &Db,
    asker: &Asker,
    question_id: i64,
    config_id: &str,
) -> Result<(), ServiceError> {
    let found = get_push_config(db, asker, question_id, config_id).await?;
    let txn = db.begin_write().await?;
    a2a_push_configs::Entity::delete_by_id(found.id)
        .exec(&txn)
        .await?;
    txn.commit().await?;
    Ok(())
}

/// How many questions `asker` asked, optionally only those in `status` (`ListTasks`'s
/// `totalSize`).
pub async fn count_own(
    db: &Db,
    asker: &Asker,
    status: Option<QuestionStatus>,
) -> Result<u64, ServiceError> {
    let mut query =
        agent_questions::Entity::find().filter(crate::service::questions::lookup::asked_by(asker));
    if let Some(status) = status {
        query = query.filter(agent_questions::Column::Status.eq(status));
    }
    Ok(query.count(db).await?)
}

/// Whether `event` changes what an agent's task says (its state, or its answer's verdict).
pub fn pushes_for(event: EventType) -> bool {
    matches!(
        event,
        EventType::AnswerCreated
            | EventType::ResearchRequested
            | EventType::QuestionExpired
            | EventType::QuestionDismissed
            | EventType::AnswerVerified
            | EventType::AnswerRejected
            | EventType::TaskCompleted
            | EventType::KnowledgeRetracted
            | EventType::Consensus
            | EventType::Disagreement
    )
}

/// Write one push per config of question `question_id`'s task on `conn` (the transaction of the
/// change), saying the task's state as it is there: `event` names what happened, `payload` is
/// the event's own fields.
pub async fn enqueue_pushes(
    conn: &WriteTxn,
    question_id: i64,
    event: &str,
    payload: &Value,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let configs = a2a_push_configs::Entity::find()
        .filter(a2a_push_configs::Column::QuestionId.eq(question_id))
        .order_by_asc(a2a_push_configs::Column::Id)
        .all(conn)
        .await?;
    if configs.is_empty() {
        return Ok(());
    }
    let Some(question) = agent_questions::Entity::find_by_id(question_id)
        .one(conn)
        .await?
    else {
        return Ok(());
    };
    let state = TaskState::of(&question);
    let task = task_id(question.id);
    for config in configs {
        let envelope_id = format!("push_{}", uuid::Uuid::new_v4().simple());
        let body = json!({"statusUpdate": {
            "taskId": task,
            "contextId": task,
            "status": {"state": state.as_str(), "timestamp": timestamp(now)},
            "metadata": {
                "pushId": envelope_id,
                "pushConfigId": config.config_id,
                "event": event,
                "questionId": question.id,
                "payload": payload,
            },
        }});
        deliveries::ActiveModel {
            id: NotSet,
            envelope_id: Set(envelope_id),
            event_type: Set(PUSH_EVENT.to_owned()),
            niche_id: Set(question.niche_id),
            question_id: Set(Some(question.id)),
            agent_id: Set(Some(config.agent_id)),
            webhook_id: Set(None),
            body: Set(body.to_string()),
            status: Set(DeliveryStatus::Pending),
            attempts: Set(0),
            next_attempt_at: Set(now),
            claim_token: Set(None),
            claimed_until: Set(None),
            last_status_code: Set(None),
            last_error: Set(None),
            retry_from: Set(now),
            delivered_at: Set(None),
            dropped_reason: Set(None),
            single_attempt: Set(false),
            push_config_id: Set(Some(config.id)),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(conn)
        .await?;
    }
    Ok(())
}

/// Where one push goes now, and how it is signed and authorised.
#[derive(Debug, Clone)]
pub struct PushDestination {
    /// The config's URL, the agent's scheme and secrets.
    pub destination: registry::Destination,
    /// Headers the config asks for: its token, its `Authorization`.
    pub headers: Vec<(String, String)>,
    /// Whether only public addresses may be reached (its host is not the agent's own endpoint's).
    pub public_only: bool,
}

/// What becomes of a claimed push.
#[derive(Debug, Clone)]
pub enum PushPlan {
    /// Send it here.
    Send(PushDestination),
    /// Its agent is disabled (or gone): it waits.
    Wait,
    /// Its config was deleted: never sent.
    Drop,
}

/// Where the push for config row `config_row` goes now.
pub async fn push_destination(
    db: &Db,
    key: Option<&DataKey>,
    config_row: i64,
    now: DateTime<Utc>,
) -> Result<PushPlan, ServiceError> {
    let Some(config) = a2a_push_configs::Entity::find_by_id(config_row)
        .one(db)
        .await?
    else {
        return Ok(PushPlan::Drop);
    };
    let Some((agent, secrets)) =
        registry::active_with_secrets(db, key, config.agent_id, now).await?
    else {
        return Ok(PushPlan::Wait);
    };
    let mut headers = Vec::new();
    if let Some(token) = config.token.filter(|t| !t.is_empty()) {
        headers.push(("x-a2a-notification-token".to_owned(), token));
    }
    if let Some(scheme) = config.auth_scheme {
        let value = match config.auth_credentials {
            Some(credentials) => format!("{scheme} {credentials}"),
            None => scheme,
        };
        headers.push(("authorization".to_owned(), value));
    }
    Ok(PushPlan::Send(PushDestination {
        public_only: !is_agents_own_host(&config.url, agent.webhook_url.as_deref()),
        destination: registry::Destination {
            url: config.url,
            scheme: agent.scheme,
            secrets,
        },
        headers,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(url: &str) -> NewPushConfig {
        NewPushConfig {
            config_id: None,
            url: url.to_owned(),
            token: None,
            authentication: None,
        }
    }

    #[test]
    fn a_push_url_is_an_http_url_with_a_host_and_no_credentials() {
        assert!(check_form(&config("https://hooks.example.com/a2a")).is_ok());
        for refused in [
            "hooks.example.com/a2a",
            "ftp://hooks.example.com/",
            "https://user:pw@hooks.example.com/",
            "file:///etc/passwd",
        ] {
            assert!(check_form(&config(refused)).is_err(), "{refused}");
        }
        let mut odd = config("https://hooks.example.com/");
        odd.authentication = Some(("Bearer token".into(), None));
        assert!(check_form(&odd).is_err());
        let mut unsendable = config("https://hooks.example.com/");
        unsendable.token = Some("tök".into());
        assert!(check_form(&unsendable).is_err());
    }

    #[test]
    fn only_the_agents_own_endpoint_host_may_be_private() {
        let own = Some("http://127.0.0.1:9000/hooks");
        assert!(is_agents_own_host("http://127.0.0.1:9001/a2a", own));
        assert!(!is_agents_own_host("http://10.0.0.1/a2a", own));
        assert!(!is_agents_own_host("http://127.0.0.1/a2a", None));
    }

    #[test]
    fn every_state_round_trips_through_its_wire_name() {
        for state in TaskState::ALL {
            assert_eq!(TaskState::parse(state.as_str()), Some(state));
        }
        assert_eq!(TaskState::parse("TASK_STATE_SUBMITTED"), None);
        assert!(TaskState::Canceled.is_terminal());
        assert!(!TaskState::InputRequired.is_terminal());
    }
}
