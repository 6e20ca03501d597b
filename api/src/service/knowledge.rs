//! Niche knowledge (docs/contract.md#knowledge): verified answers become entries of their
//! niche's knowledge, in the transaction that verifies them, and are searched with each store's
//! own full-text index.
//!
//! - **Written** where an answer becomes verified: on arrival for an answerer the niche trusts
//!   (`answering`), or by review (`admin::review`). Tasks are not knowledge. A question's entries
//!   are versions: the first is 1, a later verified answer to the reopened question is the next,
//!   naming the one it replaces.
//! - **Retracted** in the transaction that rejects or reverses the answer: gone from every search
//!   that asks for current entries, still there by id with its status.
//! - **Searched** by title, question and answer words — never the agent's context, which is
//!   untrusted and is not copied into an entry at all. The index (SQLite FTS5, PostgreSQL's
//!   `tsvector` column) changes in the entry's transaction, so an entry is found the moment it
//!   is committed.

mod corrections;
mod entries;
mod export;
pub mod reuse;
mod search;

pub use corrections::{
    CORRECTION_TYPE, ForReview, NOTE_MAX, NewCorrection, Proposed, correction_for_review,
    options_of, propose_correction, review_correction,
};
pub use entries::{
    POINTER_TYPE, record_concluded, record_verified_answer, retract_for, verdict_word,
};
pub use export::{export, export_for};
pub use search::{
    AgentSearch, Found, FoundPage, Looking, MAX_AGENT_RESULTS, MAX_PAGE, SIMILAR_MAX, Similar,
    entry, for_agent, for_members, narrowed, of_question, search, search_statement, similar,
    similar_to_question,
};
