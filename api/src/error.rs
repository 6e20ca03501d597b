//! The service error enum and its one mapping per transport: a status and JSON body for REST, a
//! code in `extensions.code` for GraphQL. Internal errors are logged once, here, and never shown.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use sea_orm::DbErr;
use serde_json::json;

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
    /// The niche's monthly agent budget cannot cover the bounty; nothing was stored.
    #[error("over budget: {remaining_minor} left until {resets_at}")]
    OverBudget {
        /// What is left this month, minor units.
        remaining_minor: i64,
        /// When the budget month starts again.
        resets_at: chrono::DateTime<chrono::Utc>,
    },
    /// Done too often: it may be done again after `retry_after` (REST: 429 with `Retry-After`;
    /// GraphQL: `extensions.retryAfter`, whole seconds).
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
        }
    }

    /// Every reason, for the documentation test that keeps the README's table whole.
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
    ];
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
        ServiceError::Internal(err.into())
    }
}

impl ServiceError {
    /// The stable code clients match on.
    pub fn code(&self) -> &'static str {
        match self {
            ServiceError::BadInput(_) | ServiceError::TooLarge(_) => "BAD_USER_INPUT",
            ServiceError::Unauthenticated(_) => "UNAUTHENTICATED",
            ServiceError::Forbidden(_) | ServiceError::SelfReview(_) => "FORBIDDEN",
            ServiceError::NotFound(_) => "NOT_FOUND",
            ServiceError::Conflict(_) => "CONFLICT",
            ServiceError::Unavailable(_) => "UNAVAILABLE",
            ServiceError::OverBudget { .. } => "OVER_BUDGET",
            ServiceError::RateLimited { .. } => "RATE_LIMITED",
            ServiceError::Internal(_) => "INTERNAL",
        }
    }

    /// The HTTP status for the REST shim.
    pub fn status(&self) -> StatusCode {
        match self {
            ServiceError::BadInput(_) => StatusCode::BAD_REQUEST,
            ServiceError::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            ServiceError::Forbidden(_) | ServiceError::SelfReview(_) => StatusCode::FORBIDDEN,
            ServiceError::NotFound(_) => StatusCode::NOT_FOUND,
            ServiceError::Conflict(_) => StatusCode::CONFLICT,
            ServiceError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ServiceError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ServiceError::OverBudget { .. } => StatusCode::PAYMENT_REQUIRED,
            ServiceError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ServiceError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The finer, stable reason behind a broad code, where there is one.
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            ServiceError::Conflict(conflict) => Some(conflict.reason()),
            ServiceError::SelfReview(_) => Some("SELF_REVIEW"),
            ServiceError::RateLimited { reason, .. } => Some(reason),
            _ => None,
        }
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
            _ => match self.reason() {
                Some(reason) => {
                    json!({ "error": self.to_string(), "code": self.code(), "reason": reason })
                }
                None => json!({ "error": self.to_string(), "code": self.code() }),
            },
        }
    }

    /// For a rate limit, the whole seconds until it lifts (at least one).
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            ServiceError::RateLimited { retry_after, .. } => {
                let whole = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
                Some(whole.max(1))
            }
            _ => None,
        }
    }

    /// Log internal faults once, with their cause chain; the caller's span carries the request id.
    pub fn log_if_internal(&self) {
        if let ServiceError::Internal(cause) = self {
            tracing::error!(error = format!("{cause:#}"), "internal error");
        }
    }
}

impl IntoResponse for ServiceError {
    fn into_response(self) -> Response {
        self.log_if_internal();
        let retry_after = self.retry_after_secs();
        let mut response = (self.status(), axum::Json(self.body())).into_response();
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(seconds),
            );
        }
        response
    }
}

impl async_graphql::ErrorExtensions for ServiceError {
    fn extend(&self) -> async_graphql::Error {
        self.log_if_internal();
        let (code, reason, retry_after) = (self.code(), self.reason(), self.retry_after_secs());
        let message = match self {
            // The cause is logged above; the client learns only that it was ours.
            ServiceError::Internal(_) => "internal error".to_owned(),
            _ => self.to_string(),
        };
        async_graphql::Error::new(message).extend_with(|_, e| {
            e.set("code", code);
            if let Some(reason) = reason {
                e.set("reason", reason);
            }
            if let Some(seconds) = retry_after {
                e.set("retryAfter", seconds);
            }
        })
    }
}

/// `?` in a resolver would convert through async-graphql's blanket `From<Display>` and drop the
/// code; `.gql()?` keeps it.
pub trait GqlResultExt<T> {
    /// Map the error to a GraphQL error carrying `extensions.code`.
    fn gql(self) -> async_graphql::Result<T>;
}

impl<T> GqlResultExt<T> for Result<T, ServiceError> {
    fn gql(self) -> async_graphql::Result<T> {
        use async_graphql::ErrorExtensions;
        self.map_err(|err| err.extend())
    }
}
