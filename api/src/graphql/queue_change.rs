//! A change to a live queue as the schema shows it (`QueueChange`), apart from the
//! subscriptions that send it, so the live modules depend on each other in a line:
//! `live → adopt → shared`, with `live` and `adopt` reading this.

use async_graphql::{Enum, SimpleObject};

use super::types::Question;
use crate::service::subscriptions::{Change, ChangeKind};

/// How a question changed for the subscriber.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
pub enum QueueChangeKind {
    /// It appeared (a new question, or one back from research for someone who set it aside).
    Added,
    /// It is still waiting, changed (sent for research, research back, declined by someone).
    Updated,
    /// It left the queue (answered, dismissed, expired; or I declined it).
    Removed,
}

/// One change to a queue.
#[derive(SimpleObject)]
pub struct QueueChange {
    /// How it changed.
    pub change: QueueChangeKind,
    /// The question as it is now.
    pub question: Question,
}

/// How a change reads in the schema.
pub fn kind_of(kind: ChangeKind) -> QueueChangeKind {
    match kind {
        ChangeKind::Added => QueueChangeKind::Added,
        ChangeKind::Updated => QueueChangeKind::Updated,
        ChangeKind::Removed => QueueChangeKind::Removed,
    }
}

impl From<Change> for QueueChange {
    fn from(change: Change) -> Self {
        Self {
            change: kind_of(change.kind),
            question: change.question.into(),
        }
    }
}
