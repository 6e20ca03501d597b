//! Subscriptions: the live queue of a niche and "awaiting me", over `graphql-transport-ws`.

use std::sync::Arc;

use crate::db::Db;
use async_graphql::{Context, Result, Subscription};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::admin::ReviewInboxChange;
use super::caller_of;
use super::queue_change::QueueChange;
use crate::graphql::error_door::GqlResultExt;
use crate::live::LiveHub;
use crate::live::adopt;
use crate::live::shared::{Serving, Sharing};
use crate::live::socket::gate::{Class, HandshakeGate, Turn};
use crate::service::people::admin_desk;
use crate::service::reach::subscriptions::{self, Change};

/// How many of one connection's subscriptions may be starting (reading the database to check
/// the subscriber's rights) at once.
pub const STARTS_AT_ONCE: usize = 2;

/// One websocket's gate for starting subscriptions. A burst of subscribes on one socket starts
/// them [`STARTS_AT_ONCE`] at a time, so it holds that many pooled connections at most: were the
/// socket closed mid-burst, only those queries are cut off (a connection cut off mid-query is
/// closed and must be opened again), and everyone else's requests never wait for the pool.
/// Each start also takes a turn through the instance's handshake gate (`live/socket/gate.rs`), so
/// the subscriptions of a reconnect storm's thousands of sockets do not queue for the pool ahead
/// of a socket signing in now.
#[derive(Clone)]
pub struct SubscriptionStarts {
    per_socket: Arc<Semaphore>,
    instance: Arc<HandshakeGate>,
    class: Class,
}

impl SubscriptionStarts {
    /// The gate of a new socket of `class` on an instance whose handshake gate is `instance`.
    pub fn new(instance: Arc<HandshakeGate>, class: Class) -> Self {
        Self {
            per_socket: Arc::new(Semaphore::new(STARTS_AT_ONCE)),
            instance,
            class,
        }
    }
}

/// A turn to start a subscription, when the connection has a gate: its socket's, then the
/// instance's.
async fn turn_to_start(ctx: &Context<'_>) -> Option<(OwnedSemaphorePermit, Turn)> {
    let gate = ctx.data_opt::<SubscriptionStarts>()?;
    let per_socket = gate.per_socket.clone().acquire_owned().await.ok()?;
    Some((per_socket, gate.instance.turn(gate.class).await))
}

/// Live subscriptions.
#[derive(Default)]
pub struct LiveSubscription;

#[Subscription]
impl LiveSubscription {
    /// Changes to a niche's waiting queue: for its active members and admins, and only while
    /// they stay so.
    async fn question_queue(
        &self,
        ctx: &Context<'_>,
        niche_slug: String,
    ) -> Result<BoxStream<'static, Result<QueueChange>>> {
        if let Some(change) = adopt::one_shot(ctx) {
            return Ok(shared(ctx, futures::stream::iter([change])));
        }
        // Boxed, here and below: the resolver's future stays inside the subscription's stream
        // for as long as the subscription lives, so its database reads are kept out of line
        // rather than sized into every idle subscriber.
        Box::pin(async move {
            let _turn = turn_to_start(ctx).await;
            let db = ctx.data::<Db>()?.clone();
            let rx = ctx.data::<LiveHub>()?.subscribe();
            let viewer = caller_of(ctx)?.viewer();
            let changes = subscriptions::watch_niche(db, rx, viewer, &niche_slug)
                .await
                .gql()?;
            Ok(shared(ctx, changes))
        })
        .await
    }

    /// Changes to "awaiting me": waiting questions in my operator/specialist niches.
    async fn awaiting_me(
        &self,
        ctx: &Context<'_>,
    ) -> Result<BoxStream<'static, Result<QueueChange>>> {
        if let Some(change) = adopt::one_shot(ctx) {
            return Ok(shared(ctx, futures::stream::iter([change])));
        }
        Box::pin(async move {
            let _turn = turn_to_start(ctx).await;
            let db = ctx.data::<Db>()?.clone();
            let rx = ctx.data::<LiveHub>()?.subscribe();
            let changes = subscriptions::watch_awaiting_me(db, rx, caller_of(ctx)?.viewer())
                .await
                .gql()?;
            Ok(shared(ctx, changes))
        })
        .await
    }

    /// Changes to the review inbox: an answer or correction arrived for review, or one was
    /// decided (admins only, as the inbox itself; ends with FORBIDDEN once the viewer is not
    /// an admin).
    async fn review_inbox(
        &self,
        ctx: &Context<'_>,
    ) -> Result<BoxStream<'static, Result<ReviewInboxChange>>> {
        Box::pin(async move {
            let _turn = turn_to_start(ctx).await;
            let db = ctx.data::<Db>()?.clone();
            let rx = ctx.data::<LiveHub>()?.subscribe();
            let changes = admin_desk::watch_review(db, caller_of(ctx)?.viewer(), rx)
                .await
                .gql()?;
            // Registered with the hub: counted in askloop_live_subscriptions_served from now.
            let serving = Serving::of(ctx);
            Ok(changes
                .map(move |event| {
                    let _held = &serving;
                    event
                        .map(|event| ReviewInboxChange {
                            event: event.to_string().into(),
                        })
                        .gql()
                })
                .boxed())
        })
        .await
    }
}

/// A subscriber's changes, already registered with the live hub. Over a websocket, a shareable
/// single-field subscription is handed over to the socket (`adopt`), which resolves each change
/// once per event and class (`shared`), and the library's stream ends here; any other is
/// resolved here, per subscriber. Either way the stream holds its place in
/// `askloop_live_subscriptions_served` from now (it is registered) until it is dropped; a
/// one-shot run (one change for a stream already counted) holds none.
fn shared<S>(ctx: &Context<'_>, changes: S) -> BoxStream<'static, Result<QueueChange>>
where
    S: Stream<Item = std::result::Result<Change, crate::error::ServiceError>> + Send + 'static,
{
    let changes = if adopt::is_one_shot(ctx) {
        changes.boxed()
    } else {
        let serving = Serving::of(ctx);
        changes
            .map(move |change| {
                let _held = &serving;
                change
            })
            .boxed()
    };
    let admin = caller_of(ctx)
        .ok()
        .and_then(|caller| caller.viewer())
        .is_some_and(|viewer| viewer.is_admin);
    // A one-shot run resolves for the adopted stream that asked, which does the sharing.
    let sharing = if adopt::is_one_shot(ctx) {
        None
    } else {
        Sharing::for_subscription(ctx, admin)
    };
    let changes = match adopt::hand_over(ctx, sharing.as_ref(), changes) {
        Ok(()) => return futures::stream::empty().boxed(),
        Err(changes) => changes,
    };
    changes
        .map(|change| change.map(QueueChange::from).gql())
        .boxed()
}
