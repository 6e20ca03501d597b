//! The service error enum and the one list of error codes ([`ErrorCode`]). This module speaks no
//! transport: each maps a [`ServiceError`] itself — REST and MCP to a status, the JSON body and
//! `Retry-After` (`rest::errors`), GraphQL to `extensions.code` (`graphql::error_door`). Internal
//! errors are logged once, by that mapping, and never shown.
//!
//! A database error is sorted here, once, as it becomes a [`ServiceError`]: one that says the
//! database is out of reach for now (unreachable, restarting, shutting down, out of connections)
//! is [`ServiceError::TemporarilyUnavailable`] — 503 with `Retry-After` on REST and MCP,
//! `UNAVAILABLE` on GraphQL — so a client knows to try again; any other is internal.

use std::time::Duration;

use sea_orm::{DbErr, RuntimeErr};
use serde_json::json;

/// How long a client is asked to wait before trying again after a temporary failure: long
/// enough for a pool to reconnect, short enough for a database restart to pass in a few tries.
pub const RETRY_AFTER: Duration = Duration::from_secs(2);

/// What went wrong in a use-case, in terms every transport can express.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The input is wrong; nothing changed.
    #[error("{0}")]
    BadInput(String),
    /// Nobody is signed in (or the signature did not verify).
    #[error("{0}")]
    Unauthenticated(String),
    /// Signed in, but not allowed.
    #[error("{0}")]
    Forbidden(String),
    /// A person may not judge or settle their own work or money (four eyes): reviewing their own
    /// contribution, adjusting their own score, settling a payout to themselves.
    #[error("{0}")]
    SelfReview(String),
    /// No such thing (or not visible to the caller).
    #[error("{0}")]
    NotFound(String),
    /// The thing is not in a state that allows this; the [`Conflict`] says which state.
    #[error("{0}")]
    Conflict(Conflict),
    /// The request body is larger than askloop accepts.
    #[error("{0}")]
    TooLarge(String),
    /// A feature is not configured (no secret, no webhook).
    #[error("{0}")]
    Unavailable(String),
    /// The database is out of reach for now (unreachable, restarting, out of connections): the
    /// same request may succeed after [`RETRY_AFTER`]. The cause is logged, never shown.
    #[error("askloop cannot reach its database just now; try again in a moment")]
    TemporarilyUnavailable(#[source] anyhow::Error),
    /// The niche's monthly agent budget cannot cover the bounty; nothing was stored.
    #[error("over budget: {remaining_minor} left until {resets_at}")]
    OverBudget {
        /// What is left this month, minor units.
        remaining_minor: i64,
        /// When the budget month starts again.
        resets_at: chrono::DateTime<chrono::Utc>,
    },
    /// Done too often: it may be done again after `retry_after` (REST: 429 with `Retry-After`;
    /// GraphQL: `extensions.retryAfterSeconds`, whole seconds).
    #[error("{message}")]
    RateLimited {
        /// What the limit is and when it lifts, for people.
        message: String,
        /// The stable reason clients match on (which limit).
        reason: &'static str,
        /// How long until it may be done again.
        retry_after: std::time::Duration,
    },
    /// A fault inside askloop or its database.
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

/// Every stable error code askloop answers with, on every surface: the codes a [`ServiceError`]
/// carries ([`ErrorCode::SERVICE`]) and the ones only GraphQL's error door gives the library's
/// own refusals. Clients match on the text ([`ErrorCode::as_str`]); OpenAPI's `ErrorCode` schema
/// and the error door's constants are made from this list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The input is wrong; the message names the field.
    BadUserInput,
    /// No or a bad credential or signature.
    Unauthenticated,
    /// The caller may not do this.
    Forbidden,
    /// No such thing (or not the caller's).
    NotFound,
    /// The thing is not in a state that allows this.
    Conflict,
    /// askloop cannot serve this now (not configured, or its database out of reach).
    Unavailable,
    /// The niche's budget cannot take the bounty.
    OverBudget,
    /// Done too often.
    RateLimited,
    /// askloop's fault; logged.
    Internal,
    /// GraphQL: the query text is not GraphQL.
    GraphqlParseFailed,
    /// GraphQL: the query does not fit the schema.
    GraphqlValidationFailed,
    /// GraphQL: the query nests deeper than askloop answers.
    QueryTooDeep,
    /// GraphQL: the query would cost more than askloop answers.
    QueryTooComplex,
    /// GraphQL over HTTP: the body is not a single GraphQL request.
    BadRequest,
}

impl ErrorCode {
    /// The codes a [`ServiceError`] carries: what REST and MCP answer with.
    pub const SERVICE: &'static [ErrorCode] = &[
        ErrorCode::BadUserInput,
        ErrorCode::Unauthenticated,
        ErrorCode::Forbidden,
        ErrorCode::NotFound,
        ErrorCode::Conflict,
        ErrorCode::Unavailable,
        ErrorCode::OverBudget,
        ErrorCode::RateLimited,
        ErrorCode::Internal,
    ];

    /// Every code, the error door's included.
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode::BadUserInput,
        ErrorCode::Unauthenticated,
        ErrorCode::Forbidden,
        ErrorCode::NotFound,
        ErrorCode::Conflict,
        ErrorCode::Unavailable,
        ErrorCode::OverBudget,
        ErrorCode::RateLimited,
        ErrorCode::Internal,
        ErrorCode::GraphqlParseFailed,
        ErrorCode::GraphqlValidationFailed,
        ErrorCode::QueryTooDeep,
        ErrorCode::QueryTooComplex,
        ErrorCode::BadRequest,
    ];

    /// The code as clients see it.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadUserInput => "BAD_USER_INPUT",
            ErrorCode::Unauthenticated => "UNAUTHENTICATED",
            ErrorCode::Forbidden => "FORBIDDEN",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::Conflict => "CONFLICT",
            ErrorCode::Unavailable => "UNAVAILABLE",
            ErrorCode::OverBudget => "OVER_BUDGET",
            ErrorCode::RateLimited => "RATE_LIMITED",
            ErrorCode::Internal => "INTERNAL",
            ErrorCode::GraphqlParseFailed => "GRAPHQL_PARSE_FAILED",
            ErrorCode::GraphqlValidationFailed => "GRAPHQL_VALIDATION_FAILED",
            ErrorCode::QueryTooDeep => "QUERY_TOO_DEEP",
            ErrorCode::QueryTooComplex => "QUERY_TOO_COMPLEX",
            ErrorCode::BadRequest => "BAD_REQUEST",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl serde::Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The reasons a [`ServiceError::RateLimited`] carries, for the documentation test.
pub const RATE_LIMIT_REASONS: &[&str] = &[TEST_SENDS_PER_WEBHOOK, TEST_SENDS_PER_PERSON];

/// One webhook was sent as many test events as the window allows.
pub const TEST_SENDS_PER_WEBHOOK: &str = "TEST_SENDS_PER_WEBHOOK";

/// One person sent as many test events, over all their webhooks, as the window allows.
pub const TEST_SENDS_PER_PERSON: &str = "TEST_SENDS_PER_PERSON";

/// Why a request conflicts with the state of things. Each has a stable `reason` that clients
/// match on (GraphQL `extensions.reason`, REST `reason`); the text is for people and may change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Conflict {
    /// The niche is a draft or archived.
    #[error("niche '{slug}' is {state} and takes no questions")]
    NicheClosed {
        /// The niche.
        slug: String,
        /// `a draft` or `archived`.
        state: &'static str,
    },
    /// A niche with that slug exists.
    #[error("a niche with slug '{0}' already exists")]
    NicheSlugTaken(String),
    /// An agent with that slug is registered.
    #[error("an agent with slug '{0}' already exists")]
    AgentSlugTaken(String),
    /// Another agent's question in this niche has that external id.
    #[error("another agent's question in this niche already has that externalId; choose another")]
    ExternalIdTaken,
    /// The question's time ran out.
    #[error("that question has expired")]
    QuestionExpired,
    /// The question was answered or dismissed already.
    #[error("that question is already settled")]
    QuestionSettled,
    /// The caller answered this question already.
    #[error("you have already answered that question")]
    AlreadyAnswered,
    /// A question taking several answers has all it asked for.
    #[error("that question has all {0} answers it asked for")]
    AnswersComplete(i32),
    /// Research came back for a question that is settled or expired.
    #[error("that question is settled or expired and takes no more research")]
    NotAwaitingResearch,
    /// A review decision does not fit the contribution's status.
    #[error("only {needed} contributions can be {decision}")]
    ContributionNotReviewable {
        /// The status the decision needs.
        needed: &'static str,
        /// The decision, as a past participle.
        decision: &'static str,
    },
    /// The handle or email belongs to someone else.
    #[error("that handle or email is already taken")]
    AccountTaken,
    /// The person is a member of the niche already.
    #[error("'{handle}' is already a member of '{niche}'")]
    AlreadyMember {
        /// The person.
        handle: String,
        /// The niche.
        niche: String,
    },
    /// The person has no payout address.
    #[error("{0} has not saved a payout address")]
    PayoutAddressMissing(String),
    /// The address given is not the one saved (it may have just changed).
    #[error("{0}'s payout address is not the one given (it may have just changed)")]
    PayoutAddressChanged(String),
    /// The person's payout address is not verified.
    #[error("{0} has no verified payout address")]
    PayoutAddressUnverified(String),
    /// Nothing is owed in that currency.
    #[error("nothing is owed to {handle} in {currency}")]
    NothingOwed {
        /// The person.
        handle: String,
        /// The currency.
        currency: String,
    },
    /// The payout is paid or failed already.
    #[error("that payout is already {0}")]
    PayoutSettled(&'static str),
    /// The settlement reference belongs to another payout.
    #[error("the reference '{0}' is already recorded for another payout")]
    PayoutReferenceTaken(String),
    /// A worker is sending that delivery right now.
    #[error("that delivery is being sent right now; its attempt is recorded in a moment")]
    DeliveryInFlight,
    /// A live subscription could not keep up and was closed.
    #[error("this subscription fell behind and was closed; re-read the queue and subscribe again")]
    SubscriptionFellBehind,
    /// A knowledge entry was superseded or retracted: only the current version may be corrected.
    #[error("that knowledge entry is no longer current; correct its current version")]
    KnowledgeNotCurrent,
    /// Another request changed the same thing at the same moment and the database let only one
    /// through (a unique key taken meanwhile, a serialization failure, a deadlock): nothing of
    /// this request was stored, and sending it again decides it against the state that won.
    #[error("someone else changed this at the same moment; nothing was stored, try again")]
    ConcurrentChange,
}

impl Conflict {
    /// The stable reason clients match on.
    pub fn reason(&self) -> &'static str {
        match self {
            Conflict::NicheClosed { .. } => "NICHE_CLOSED",
            Conflict::NicheSlugTaken(_) => "NICHE_SLUG_TAKEN",
            Conflict::AgentSlugTaken(_) => "AGENT_SLUG_TAKEN",
            Conflict::ExternalIdTaken => "EXTERNAL_ID_TAKEN",
            Conflict::QuestionExpired => "QUESTION_EXPIRED",
            Conflict::QuestionSettled => "QUESTION_SETTLED",
            Conflict::AlreadyAnswered => "ALREADY_ANSWERED",
            Conflict::AnswersComplete(_) => "ANSWERS_COMPLETE",
            Conflict::NotAwaitingResearch => "NOT_AWAITING_RESEARCH",
            Conflict::ContributionNotReviewable { .. } => "CONTRIBUTION_NOT_REVIEWABLE",
            Conflict::AccountTaken => "ACCOUNT_TAKEN",
            Conflict::AlreadyMember { .. } => "ALREADY_MEMBER",
            Conflict::PayoutAddressMissing(_) => "PAYOUT_ADDRESS_MISSING",
            Conflict::PayoutAddressChanged(_) => "PAYOUT_ADDRESS_CHANGED",
            Conflict::PayoutAddressUnverified(_) => "PAYOUT_ADDRESS_UNVERIFIED",
            Conflict::NothingOwed { .. } => "NOTHING_OWED",
            Conflict::PayoutSettled(_) => "PAYOUT_SETTLED",
            Conflict::PayoutReferenceTaken(_) => "PAYOUT_REFERENCE_TAKEN",
            Conflict::DeliveryInFlight => "DELIVERY_IN_FLIGHT",
            Conflict::SubscriptionFellBehind => "SUBSCRIPTION_FELL_BEHIND",
            Conflict::KnowledgeNotCurrent => "KNOWLEDGE_NOT_CURRENT",
            Conflict::ConcurrentChange => "CONCURRENT_CHANGE",
        }
    }

    /// Every reason, for the documentation test that keeps `docs/contract.md`'s table whole.
    pub const REASONS: &'static [&'static str] = &[
        "NICHE_CLOSED",
        "NICHE_SLUG_TAKEN",
        "AGENT_SLUG_TAKEN",
        "EXTERNAL_ID_TAKEN",
        "QUESTION_EXPIRED",
        "QUESTION_SETTLED",
        "ALREADY_ANSWERED",
        "NOT_AWAITING_RESEARCH",
        "CONTRIBUTION_NOT_REVIEWABLE",
        "ACCOUNT_TAKEN",
        "ALREADY_MEMBER",
        "PAYOUT_ADDRESS_MISSING",
        "PAYOUT_ADDRESS_CHANGED",
        "PAYOUT_ADDRESS_UNVERIFIED",
        "NOTHING_OWED",
        "PAYOUT_SETTLED",
        "PAYOUT_REFERENCE_TAKEN",
        "DELIVERY_IN_FLIGHT",
        "SUBSCRIPTION_FELL_BEHIND",
        "KNOWLEDGE_NOT_CURRENT",
        "CONCURRENT_CHANGE",
    ];
}

impl From<askloop_wire::BadRequest> for ServiceError {
    /// A request the wire crate's check refused: a 400 with its words.
    fn from(refused: askloop_wire::BadRequest) -> Self {
        ServiceError::BadInput(refused.0)
    }
}

impl From<Conflict> for ServiceError {
    fn from(conflict: Conflict) -> Self {
        ServiceError::Conflict(conflict)
    }
}

impl From<crate::domain::text::ControlCharacter> for ServiceError {
    fn from(refused: crate::domain::text::ControlCharacter) -> Self {
        ServiceError::BadInput(refused.to_string())
    }
}

impl From<DbErr> for ServiceError {
    fn from(err: DbErr) -> Self {
        if out_of_reach(&err) {
            ServiceError::TemporarilyUnavailable(err.into())
        } else if lost_a_race(&err) {
            // Said at warn level: a race the code does not decide itself yet shows up in the log.
            tracing::warn!(error = %err, "a write lost a race in the database; answered CONFLICT");
            ServiceError::Conflict(Conflict::ConcurrentChange)
        } else {
            ServiceError::Internal(err.into())
        }
    }
}

/// Whether `err` says that a concurrent transaction won: PostgreSQL's `23505` unique violation
/// (two inserts of one key), `40001` serialization failure and `40P01` deadlock; SQLite's
/// extended codes 2067 (`SQLITE_CONSTRAINT_UNIQUE`) and 1555 (`SQLITE_CONSTRAINT_PRIMARYKEY`).
/// The transaction was rolled back whole, so the request changed nothing.
fn lost_a_race(err: &DbErr) -> bool {
    let cause = match err {
        DbErr::Exec(RuntimeErr::SqlxError(cause)) | DbErr::Query(RuntimeErr::SqlxError(cause)) => {
            cause
        }
        _ => return false,
    };
    let sea_orm::sqlx::Error::Database(db) = cause.as_ref() else {
        return false;
    };
    db.code()
        .is_some_and(|code| matches!(code.as_ref(), "23505" | "40001" | "40P01" | "2067" | "1555"))
}

/// Whether `err` says the database cannot be reached for now, rather than that a statement
/// failed: no connection to be had (the pool timed out or is closed), the connection refused,
/// reset or cut (an I/O error), or the server turning connections away while it starts, stops
/// or is full.
fn out_of_reach(err: &DbErr) -> bool {
    match err {
        DbErr::ConnectionAcquire(_) => true,
        DbErr::Conn(RuntimeErr::SqlxError(cause))
        | DbErr::Exec(RuntimeErr::SqlxError(cause))
        | DbErr::Query(RuntimeErr::SqlxError(cause)) => sqlx_out_of_reach(cause),
        _ => false,
    }
}

fn sqlx_out_of_reach(err: &sea_orm::sqlx::Error) -> bool {
    use sea_orm::sqlx::Error;
    match err {
        Error::PoolTimedOut | Error::PoolClosed | Error::Io(_) | Error::WorkerCrashed => true,
        Error::Database(db) => db.code().is_some_and(|code| temporary_code(&code)),
        _ => false,
    }
}

/// The database error codes that pass by waiting. PostgreSQL's SQLSTATEs: class 08 (connection
/// exceptions), `57P01` admin shutdown, `57P02` crash shutdown, `57P03` cannot connect now (the
/// database system is starting up or shutting down), `57P05` idle session timeout, `53300` too
/// many connections. SQLite's result codes (primary code in the low byte): 5 busy and 6 locked,
/// after the busy timeout has run out.
fn temporary_code(code: &str) -> bool {
    if code.len() == 5 && code.is_ascii() {
        return code.starts_with("08")
            || matches!(code, "57P01" | "57P02" | "57P03" | "57P05" | "53300");
    }
    code.parse::<u32>()
        .is_ok_and(|code| matches!(code & 0xff, 5 | 6))
}

impl ServiceError {
    /// The stable code clients match on.
    pub fn code(&self) -> ErrorCode {
        match self {
            ServiceError::BadInput(_) | ServiceError::TooLarge(_) => ErrorCode::BadUserInput,
            ServiceError::Unauthenticated(_) => ErrorCode::Unauthenticated,
            ServiceError::Forbidden(_) | ServiceError::SelfReview(_) => ErrorCode::Forbidden,
            ServiceError::NotFound(_) => ErrorCode::NotFound,
            ServiceError::Conflict(_) => ErrorCode::Conflict,
            ServiceError::Unavailable(_) | ServiceError::TemporarilyUnavailable(_) => {
                ErrorCode::Unavailable
            }
            ServiceError::OverBudget { .. } => ErrorCode::OverBudget,
            ServiceError::RateLimited { .. } => ErrorCode::RateLimited,
            ServiceError::Internal(_) => ErrorCode::Internal,
        }
    }

    /// The finer, stable reason behind a broad code, where there is one.
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            ServiceError::Conflict(conflict) => Some(conflict.reason()),
            ServiceError::SelfReview(_) => Some("SELF_REVIEW"),
            ServiceError::RateLimited { reason, .. } => Some(reason),
            ServiceError::TemporarilyUnavailable(_) => Some(TEMPORARILY_UNAVAILABLE),
            _ => None,
        }
    }

    /// How long to wait before sending the same request again, when waiting helps.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ServiceError::TemporarilyUnavailable(_) => Some(RETRY_AFTER),
            ServiceError::RateLimited { retry_after, .. } => Some(*retry_after),
            _ => None,
        }
    }

    /// [`Self::retry_after`] in whole seconds, rounded up and at least one: what `Retry-After`
    /// and `retryAfterSeconds` say.
    pub fn retry_after_seconds(&self) -> Option<u64> {
        self.retry_after().map(|wait| {
            let whole = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            whole.max(1)
        })
    }

    /// The JSON body that carries this error: `{error, code, reason?}`, and for `OVER_BUDGET`
    /// what is left and when it resets. The REST shim answers with it, and the MCP tools return
    /// it as a tool error. An internal error's text is only `internal error`.
    pub fn body(&self) -> serde_json::Value {
        match self {
            ServiceError::OverBudget {
                remaining_minor,
                resets_at,
            } => json!({
                "error": "over budget",
                "code": self.code(),
                "remainingMinor": remaining_minor,
                "resetsAt": resets_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            }),
            ServiceError::TemporarilyUnavailable(_) => json!({
                "error": self.to_string(),
                "code": self.code(),
                "reason": TEMPORARILY_UNAVAILABLE,
                "retryAfterSeconds": RETRY_AFTER.as_secs(),
            }),
            ServiceError::RateLimited { reason, .. } => json!({
                "error": self.to_string(),
                "code": self.code(),
                "reason": reason,
                "retryAfterSeconds": self.retry_after_seconds(),
            }),
            _ => match self.reason() {
                Some(reason) => {
                    json!({ "error": self.to_string(), "code": self.code(), "reason": reason })
                }
                None => json!({ "error": self.to_string(), "code": self.code() }),
            },
        }
    }

    /// Log internal faults once, with their cause chain; the caller's span carries the request id.
    /// A database out of reach is logged too, as a warning: it is not askloop's fault, but the
    /// operator wants to know.
    pub fn log_if_internal(&self) {
        match self {
            ServiceError::Internal(cause) => {
                tracing::error!(error = format!("{cause:#}"), "internal error");
            }
            ServiceError::TemporarilyUnavailable(cause) => {
                tracing::warn!(error = format!("{cause:#}"), "the database is out of reach");
            }
            _ => {}
        }
    }
}

/// The reason of [`ServiceError::TemporarilyUnavailable`]: the same request may succeed later.
pub const TEMPORARILY_UNAVAILABLE: &str = "TEMPORARILY_UNAVAILABLE";

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::sync::Arc;

    use sea_orm::sqlx;
    use sea_orm::{ConnAcquireErr, DbErr, RuntimeErr};

    use super::*;

    /// A database's error with `code`, as a driver reports it.
    #[derive(Debug)]
    struct Coded(&'static str);

    impl std::fmt::Display for Coded {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "error {}", self.0)
        }
    }

    impl std::error::Error for Coded {}

    impl sqlx::error::DatabaseError for Coded {
        fn message(&self) -> &str {
            self.0
        }
        fn code(&self) -> Option<Cow<'_, str>> {
            Some(Cow::Borrowed(self.0))
        }
        fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
            self
        }
        fn kind(&self) -> sqlx::error::ErrorKind {
            sqlx::error::ErrorKind::Other
        }
    }

    fn query(err: sqlx::Error) -> ServiceError {
        ServiceError::from(DbErr::Query(RuntimeErr::SqlxError(Arc::new(err))))
    }

    fn coded(code: &'static str) -> ServiceError {
        query(sqlx::Error::Database(Box::new(Coded(code))))
    }

    fn io(kind: std::io::ErrorKind) -> ServiceError {
        ServiceError::from(DbErr::Conn(RuntimeErr::SqlxError(Arc::new(
            sqlx::Error::Io(std::io::Error::from(kind)),
        ))))
    }

    #[test]
    fn a_database_out_of_reach_is_temporary_and_says_when_to_try_again() {
        let temporary = [
            ServiceError::from(DbErr::ConnectionAcquire(ConnAcquireErr::Timeout)),
            ServiceError::from(DbErr::ConnectionAcquire(ConnAcquireErr::ConnectionClosed)),
            query(sqlx::Error::PoolTimedOut),
            query(sqlx::Error::PoolClosed),
            io(std::io::ErrorKind::ConnectionRefused),
            io(std::io::ErrorKind::ConnectionReset),
            io(std::io::ErrorKind::UnexpectedEof),
            // PostgreSQL: administrator command, crash, starting up or shutting down, too many
            // clients, a connection failure.
            coded("57P01"),
            coded("57P02"),
            coded("57P03"),
            coded("53300"),
            coded("08006"),
            // SQLite: busy or locked after the busy timeout (517 is SQLITE_BUSY_SNAPSHOT).
            coded("5"),
            coded("517"),
            coded("6"),
        ];
        for err in &temporary {
            assert_eq!(err.code(), ErrorCode::Unavailable, "{err:?}");
            assert_eq!(err.reason(), Some(TEMPORARILY_UNAVAILABLE));
            assert_eq!(err.retry_after(), Some(RETRY_AFTER));
            let body = err.body();
            assert_eq!(body["retryAfterSeconds"], RETRY_AFTER.as_secs(), "{body}");
            // The driver's words stay in the log.
            assert!(!body.to_string().contains("57P"), "{body}");
        }
        assert_eq!(coded("57P03").retry_after_seconds(), Some(2));
    }

    #[test]
    fn a_write_that_lost_a_race_in_the_database_is_a_coded_conflict() {
        // PostgreSQL: unique violation, serialization failure, deadlock; SQLite: unique and
        // primary-key constraints (extended codes).
        for code in ["23505", "40001", "40P01", "2067", "1555"] {
            let err = coded(code);
            assert_eq!(err.code(), ErrorCode::Conflict, "{code}");
            assert_eq!(err.reason(), Some("CONCURRENT_CHANGE"), "{code}");
            assert_eq!(err.retry_after(), None);
            assert!(!err.body().to_string().contains(code), "{}", err.body());
        }
    }

    #[test]
    fn a_statement_the_database_refused_stays_internal() {
        for err in [
            coded("42P01"),
            coded("22P02"),
            coded("23503"),
            // SQLite: a constraint (19) and its check form (275).
            coded("19"),
            coded("275"),
            query(sqlx::Error::RowNotFound),
            ServiceError::from(DbErr::Custom("x".into())),
            ServiceError::from(DbErr::Query(RuntimeErr::Internal("x".into()))),
        ] {
            assert_eq!(err.code(), ErrorCode::Internal, "{err:?}");
            assert_eq!(err.retry_after(), None);
            assert_eq!(err.body()["error"], "internal error");
        }
        // Not configured is unavailable too, but waiting does not help: no Retry-After.
        let unconfigured = ServiceError::Unavailable("no signing secret is configured".into());
        assert_eq!(unconfigured.code(), ErrorCode::Unavailable);
        assert_eq!(unconfigured.reason(), None);
        assert_eq!(unconfigured.retry_after_seconds(), None);
    }

    #[test]
    fn every_code_is_listed_once_and_the_service_codes_come_first() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            assert!(seen.insert(code.as_str()), "{code} is listed twice");
            assert!(
                code.as_str()
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c == '_'),
                "{code}"
            );
        }
        assert_eq!(
            &ErrorCode::ALL[..ErrorCode::SERVICE.len()],
            ErrorCode::SERVICE
        );
        assert_eq!(
            serde_json::to_value(ErrorCode::OverBudget).unwrap(),
            "OVER_BUDGET"
        );
        assert!(ErrorCode::Conflict == "CONFLICT");
    }
}
