//! A change to a live queue as the schema shows it (`QueueChange`), apart from the
//! subscriptions that send it, so the live modules depend on each other in a line:
//! `live → adopt → shared`, with `live` and `adopt` reading this.

use async_graphql::{ComplexObject, Context, Enum, Result, SimpleObject};

use super::types::Question;
use crate::graphql::error_door::GqlResultExt;
use crate::service::reach::subscriptions::{Change, ChangeKind};

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
#[graphql(complex)]
pub struct QueueChange {
    /// How it changed.
    pub change: QueueChangeKind,
    /// The question as it is now.
    pub question: Question,
    #[graphql(skip)]
    pub actor_user_id: Option<i64>,
}

#[ComplexObject]
impl QueueChange {
    /// Who made the change, when a person did: the handle of whoever answered, declined, sent
    /// back or dismissed the question (none when it expired or came from the agent).
    async fn by(&self, ctx: &Context<'_>) -> Result<Option<String>> {
        let Some(id) = self.actor_user_id else {
            return Ok(None);
        };
        let db = ctx.data::<crate::db::Db>()?;
        let handles = crate::service::people::names::handles(db, [id])
            .await
            .gql()?;
        Ok(handles.get(&id).cloned())
    }
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
            question: std::sync::Arc::unwrap_or_clone(change.question).into(),
            actor_user_id: change.actor_user_id,
        }
    }
}
