//! `askloop-agent`: what an agent author adds to talk to askloop, following askloop's
//! `docs/contract.md`.
//!
//! - [`Client`] asks a question ([`Client::ask`], idempotent by its external id), waits for the
//!   answer over the lookup's long poll, honouring the question's expiry and the caller's
//!   timeout ([`Client::wait_for_answer`]), brings research back ([`Client::add_research`]) and
//!   withdraws a question no longer needed ([`Client::withdraw`]).
//!   Every request is signed with `X-Chovy-Signature` ([`signing`]), as the built-in default
//!   agent or as a registered one ([`Client::agent`]).
//! - [`webhook`] verifies a delivery of askloop's events in either scheme (`chovy` or Standard
//!   Webhooks), parses its envelope and drops redeliveries by envelope id.
//! - [`Error`] is askloop's refusal as a variant per code, plus the ways a wait ends unanswered.
//!
//! ```no_run
//! # async fn run() -> Result<(), askloop_agent::Error> {
//! use std::time::Duration;
//! use askloop_agent::{Client, Question, Status};
//!
//! let askloop = Client::new("http://127.0.0.1:3000", "dev-secret");
//! let asked = askloop
//!     .ask(&Question::new("games", "Which date?", "Early access or 1.0?"))
//!     .await?;
//! let question = askloop
//!     .wait_for_answer(&asked.niche, &asked.external_id, Duration::from_secs(3600))
//!     .await?;
//! if question.status == Status::Answered {
//!     println!("{:?}", question.answer);
//! }
//! # Ok(()) }
//! ```

mod client;
mod error;
mod question;
pub mod signing;
pub mod webhook;

pub use client::{
    Client, EXPIRY_GRACE, INTAKE_PATH, LOOKUP_MAX_WAIT, LOOKUP_PATH, RESEARCH_PATH, RetryPolicy,
    WITHDRAW_PATH,
};
pub use error::Error;
pub use question::{
    Answer, AnswerOption, Asked, Budget, BudgetState, LookedUp, Question, QuestionState,
    ResearchAdded, Review, Status, Urgency, WithdrawOutcome, Withdrawn, new_external_id,
};
