//! What one subscriber sees (the service half of the live feed; `live/` only carries changes): the feed's events filtered to what they may read, classified as
//! ADDED / UPDATED / REMOVED, and ended — with a reason — when they fall behind (the client
//! re-syncs and subscribes again) or lose access mid-subscription.

use std::collections::HashSet;

use crate::db::Db;
use entity::agent_answers::{self, AnswerKind};
use entity::agent_questions;
use futures::Stream;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use tokio::sync::broadcast::{self, error::RecvError};

use crate::error::{Conflict, ServiceError};
use crate::live::{LiveEvent, QuestionChange};
use crate::service::people::access::{self, Viewer};

/// How a question changed for the subscriber.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// It appeared in their view.
    Added,
    /// It is still there, changed.
    Updated,
    /// It left their view.
    Removed,
}

/// One change for one subscriber.
#[derive(Debug, Clone)]
pub struct Change {
    /// The event it came from (the audit row the feed read).
    pub event: i64,
    /// How.
    pub kind: ChangeKind,
    /// The question as it is now: the feed's one copy, shared by every subscriber it reaches.
    pub question: std::sync::Arc<agent_questions::Model>,
    /// Who made the change, when it was a person (who answered, declined or dismissed it).
    pub actor_user_id: Option<i64>,
}

/// The error that ends a subscription that fell behind.
pub fn fell_behind() -> ServiceError {
    Conflict::SubscriptionFellBehind.into()
}

/// Which view a subscriber watches.
#[derive(Debug, Clone)]
pub enum View {
    /// One niche's waiting queue.
    Niche(i64),
    /// "Awaiting me": the subscriber's operator/specialist niches, minus what they acted on.
    AwaitingMe(HashSet<i64>),
}

struct Watch {
    rx: broadcast::Receiver<LiveEvent>,
    db: Db,
    viewer: Viewer,
    view: View,
    done: bool,
}

pub use crate::service::people::access::acting_niches;

/// Watch niche `slug`'s waiting queue from `rx` on: for its active members and admins, and
/// only while they stay so.
pub async fn watch_niche(
    db: Db,
    rx: broadcast::Receiver<LiveEvent>,
    viewer: Option<&Viewer>,
    slug: &str,
) -> Result<impl Stream<Item = Result<Change, ServiceError>> + use<>, ServiceError> {
    let viewer = access::signed_in(viewer)?.clone();
    let niche = crate::service::questions::queue::niche_by_slug(&db, slug).await?;
    access::can_read_questions(&db, Some(&viewer), &niche).await?;
    Ok(changes(rx, db, viewer, View::Niche(niche.id)))
}

/// Watch "awaiting me" from `rx` on: waiting questions in the caller's operator and specialist
/// niches, minus those they acted on.
pub async fn watch_awaiting_me(
    db: Db,
    rx: broadcast::Receiver<LiveEvent>,
    viewer: Option<&Viewer>,
) -> Result<impl Stream<Item = Result<Change, ServiceError>> + use<>, ServiceError> {
    let viewer = access::signed_in(viewer)?.clone();
    let niches = acting_niches(&db, &viewer).await?;
    Ok(changes(rx, db, viewer, View::AwaitingMe(niches)))
}

/// The stream of changes `viewer` may see in `view`, from `rx` on.
pub fn changes(
    rx: broadcast::Receiver<LiveEvent>,
    db: Db,
    viewer: Viewer,
    view: View,
) -> impl Stream<Item = Result<Change, ServiceError>> {
    let watch = Watch {
        rx,
        db,
        viewer,
        view,
        done: false,
    };
    futures::stream::unfold(watch, |mut watch| async move {
        if watch.done {
            return None;
        }
        loop {
            // The reads below are boxed: this future is kept for every idle subscriber, and
            // inline they would size it for a database query it is not making.
            match watch.rx.recv().await {
                Ok(LiveEvent::Question(change)) => {
                    let classified = match seen(&watch, &change) {
                        Seen::Now(kind) => Ok(kind),
                        needs_read => Box::pin(read_back(&watch, &change, needs_read)).await,
                    };
                    match classified {
                        Ok(Some(kind)) => {
                            let question = change.question.clone();
                            let event = change.event;
                            return Some((
                                Ok(Change {
                                    event,
                                    kind,
                                    question,
                                    actor_user_id: change.actor_user_id,
                                }),
                                watch,
                            ));
                        }
                        Ok(None) => {}
                        Err(err) => {
                            watch.done = true;
                            return Some((Err(err), watch));
                        }
                    }
                }
                Ok(LiveEvent::Member { niche_id, user_id }) if user_id == watch.viewer.user_id => {
                    if let Err(err) = Box::pin(recheck(&mut watch, niche_id)).await {
                        watch.done = true;
                        return Some((Err(err), watch));
                    }
                }
                Ok(LiveEvent::Member { .. } | LiveEvent::Signal(_) | LiveEvent::Review(_)) => {}
                Err(RecvError::Lagged(_)) => {
                    watch.done = true;
                    return Some((Err(fell_behind()), watch));
                }
                Err(RecvError::Closed) => return None,
            }
        }
    })
}

/// A membership of the subscriber changed: re-read what they may see.
async fn recheck(watch: &mut Watch, niche_id: i64) -> Result<(), ServiceError> {
    match &mut watch.view {
        View::Niche(watched) if *watched == niche_id => {
            still_reads(&watch.db, &watch.viewer, niche_id).await
        }
        View::Niche(_) => Ok(()),
        View::AwaitingMe(niches) => {
            *niches = acting_niches(&watch.db, &watch.viewer).await?;
            Ok(())
        }
    }
}

/// Whether `viewer` may still read niche `niche_id`'s questions (an admin, or an active
/// member): the one rule every niche subscription is held to while it lives, FORBIDDEN once not.
pub async fn still_reads(db: &Db, viewer: &Viewer, niche_id: i64) -> Result<(), ServiceError> {
    if viewer.is_admin {
        return Ok(());
    }
    let member = access::membership(db, viewer, niche_id).await?;
    if access::reads_questions(member.as_ref()) {
        Ok(())
    } else {
        Err(ServiceError::Forbidden(
            "you are no longer an active member of this niche".into(),
        ))
    }
}

/// `items` for as long as `viewer` may read niche `niche_id`'s questions, by the rule of
/// [`still_reads`], checked each time the hub (`rx`) says one of the viewer's memberships
/// changed, or that this subscriber missed events (it may have missed that one): the stream
/// ends with FORBIDDEN the moment access ends, as `questionQueue` does. Any niche subscription
/// whose items are not the live feed's own (presence, say) is wrapped in it.
pub fn while_reading<T: Send + 'static>(
    items: futures::stream::BoxStream<'static, T>,
    rx: broadcast::Receiver<LiveEvent>,
    db: Db,
    viewer: Viewer,
    niche_id: i64,
) -> impl Stream<Item = Result<T, ServiceError>> {
    struct Guarded<T> {
        items: futures::stream::BoxStream<'static, T>,
        rx: Option<broadcast::Receiver<LiveEvent>>,
        db: Db,
        viewer: Viewer,
        niche_id: i64,
        done: bool,
    }
    let guarded = Guarded {
        items,
        rx: Some(rx),
        db,
        viewer,
        niche_id,
        done: false,
    };
    futures::stream::unfold(guarded, |mut g| async move {
        use futures::StreamExt;
        if g.done {
            return None;
        }
        loop {
            let heard = match g.rx.as_mut() {
                Some(rx) => tokio::select! {
                    item = g.items.next() => return item.map(|item| (Ok(item), g)),
                    heard = rx.recv() => heard,
                },
                None => return g.items.next().await.map(|item| (Ok(item), g)),
            };
            let check = match heard {
                Ok(LiveEvent::Member { niche_id, user_id }) => {
                    niche_id == g.niche_id && user_id == g.viewer.user_id
                }
                Ok(_) => false,
                Err(RecvError::Lagged(_)) => true,
                Err(RecvError::Closed) => {
                    g.rx = None;
                    false
                }
            };
            if check && let Err(err) = Box::pin(still_reads(&g.db, &g.viewer, g.niche_id)).await {
                g.done = true;
                return Some((Err(err), g));
            }
        }
    })
}

/// How a change shows in one subscriber's view, as far as the change itself tells.
enum Seen {
    /// Known now: the kind, or nothing to show.
    Now(Option<ChangeKind>),
    /// A question back in "awaiting me": shown only to those who did not answer it before.
    BackUnlessAnswered,
    /// A question back from research: new again for those who had set it aside.
    BackFromResearch,
}

/// How `change` shows to `watch`'s subscriber, without reading anything: the common case,
/// decided for every subscriber of every event, so it allocates nothing.
fn seen(watch: &Watch, change: &QuestionChange) -> Seen {
    // An answer to a question that takes several answers settles it only with its last place
    // (docs/contract.md#several-answers): until then it still waits, for everyone who has not
    // answered it.
    let still_waits = agent_questions::WAITING.contains(&change.question.status);
    let settled = match change.action.as_str() {
        "question.answered" => !still_waits,
        "question.dismissed" | "question.withdrawn" | "question.expired" => true,
        _ => false,
    };
    let mine = change.actor_user_id == Some(watch.viewer.user_id);
    match &watch.view {
        View::Niche(niche_id) => {
            if *niche_id != change.niche_id {
                return Seen::Now(None);
            }
            Seen::Now(Some(match change.action.as_str() {
                "question.created" | "question.reopened" | "question.place_reopened" => {
                    ChangeKind::Added
                }
                _ if settled => ChangeKind::Removed,
                _ => ChangeKind::Updated,
            }))
        }
        View::AwaitingMe(niches) => {
            if !niches.contains(&change.niche_id) {
                return Seen::Now(None);
            }
            Seen::Now(Some(match change.action.as_str() {
                "question.created" => ChangeKind::Added,
                _ if settled => ChangeKind::Removed,
                "question.declined" | "question.research_requested" | "question.answered"
                    if mine =>
                {
                    ChangeKind::Removed
                }
                "question.reopened" | "question.place_reopened" => {
                    return Seen::BackUnlessAnswered;
                }
                "question.research_returned" => return Seen::BackFromResearch,
                _ => ChangeKind::Updated,
            }))
        }
    }
}

/// How `change` shows to `watch`'s subscriber when [`seen`] could not tell (`seen`): their
/// earlier answers to it, read.
async fn read_back(
    watch: &Watch,
    change: &QuestionChange,
    seen: Seen,
) -> Result<Option<ChangeKind>, ServiceError> {
    match seen {
        Seen::Now(kind) => Ok(kind),
        Seen::BackUnlessAnswered => {
            // Back for everyone but whoever answered it before (their answer was rejected,
            // and they may not answer it again).
            let answered_before = agent_answers::Entity::find()
                .filter(agent_answers::Column::QuestionId.eq(change.question.id))
                .filter(agent_answers::Column::UserId.eq(watch.viewer.user_id))
                .filter(agent_answers::Column::Kind.eq(AnswerKind::Answered))
                .count(&watch.db)
                .await?;
            Ok((answered_before == 0).then_some(ChangeKind::Added))
        }
        Seen::BackFromResearch => {
            let declined_before = agent_answers::Entity::find()
                .filter(agent_answers::Column::QuestionId.eq(change.question.id))
                .filter(agent_answers::Column::UserId.eq(watch.viewer.user_id))
                .filter(agent_answers::Column::ResearchRound.eq(change.question.research_round - 1))
                .count(&watch.db)
                .await?;
            Ok(Some(if declined_before > 0 {
                ChangeKind::Added
            } else {
                ChangeKind::Updated
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn viewer() -> Viewer {
        Viewer {
            user_id: 1,
            handle: "ana".into(),
            is_admin: true,
        }
    }

    #[tokio::test]
    async fn a_subscriber_that_falls_behind_is_told_so_and_the_stream_ends() {
        let (tx, rx) = broadcast::channel(2);
        for user_id in 10..15 {
            tx.send(LiveEvent::Member {
                niche_id: 1,
                user_id,
            })
            .expect("a receiver");
        }
        let stream = changes(rx, Db::disconnected(), viewer(), View::Niche(1));
        let items: Vec<_> = stream.collect().await;
        assert_eq!(items.len(), 1, "one error, then the end");
        let err = items
            .into_iter()
            .next()
            .and_then(Result::err)
            .expect("an error");
        assert!(err.to_string().contains("fell behind"), "{err}");
        drop(tx);
    }

    #[tokio::test]
    async fn the_stream_ends_quietly_when_the_hub_goes_away() {
        let (tx, rx) = broadcast::channel::<LiveEvent>(4);
        drop(tx);
        let stream = changes(rx, Db::disconnected(), viewer(), View::Niche(1));
        assert_eq!(stream.collect::<Vec<_>>().await.len(), 0);
    }
}
