//! GraphQL output types. They are their own structs, built from entities with `From`, so the
//! storage schema can change without changing the API.

mod contribution;
mod niche;
mod people;
mod question;
mod triage;

pub use contribution::{Contribution, Contributor};
pub use niche::{
    Niche, NicheAgreement, NicheLoader, NicheStatus, PersonAgreement, QuestionConnection,
    QueueFilter, Routing, RoutingMode, connection,
};
pub use people::{
    Calibration, CalibrationBin, Member, MemberRole, Membership, Tier, User, member_view,
};
pub use question::{
    Answer, AnswerKind, ConsensusView, Question, QuestionOption, QuestionStatus, Route,
    TimelineEntry,
};
pub use triage::{
    MyPart, MyPartIn, QueueSort, TriageConnection, TriageEdgeName, TriageName, TriageTotals,
    WaitingCounts, counts_of, queue_of,
};

/// The stored word of a serde-serialisable enum (`"open"`, `"verified"`, …).
pub fn word<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
