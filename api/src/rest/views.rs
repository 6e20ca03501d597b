//! The REST shim's wire types: what each route reads and answers, as Rust types, so the
//! OpenAPI document (`rest::openapi`) is generated from the very types the handlers serialise.
//!
//! The request bodies of the signed routes are parsed field by field from JSON (every field's
//! own error message; `rest::signed`); their types here describe that body for the document,
//! and a unit test in `rest::openapi` holds each one to its parser.
//!
//! By route family: the shared words and error body (`common`), the question routes
//! (`asking`), the money routes (`money`), the member routes (`members`) and the knowledge
//! routes (`knowledge`).

mod asking;
mod common;
mod knowledge;
mod members;
mod money;

pub use asking::{
    AnswererView, AskBody, AskResponse, FoundQuestion, KnowledgeRef, LookedUp, LookedUpAnswer,
    LookupBody, LookupResponse, MissingQuestion, OptionBody, QuestionRef, ResearchBody,
    ResearchResponse, ReviewWord, StoredQuestion, WithdrawBody, WithdrawOutcomeWord,
    WithdrawalResponse,
};
pub use common::{
    BudgetView, BudgetWord, ErrorBody, OverBudgetBody, StatusWord, UrgencyWord, seconds,
};
pub use knowledge::{
    KnowledgeResult, KnowledgeReuseBody, KnowledgeReuseResponse, KnowledgeSearchBody,
    KnowledgeSearchResponse, KnowledgeStatusWord,
};
pub use members::{
    AnswerBody, AnswerKindWord, AnswerResponse, AnswerView, QuestionView, QueuePage,
};
pub use money::{
    AllocationView, RevenueBody, RevenueEventView, RevenueResponse, SignalBody, SignalRef,
    SignalResponse,
};
