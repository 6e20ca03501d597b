//! Live updates (docs/architecture.md#the-live-change-feed, docs/contract.md#subscriptions). One
//! change feed per instance tails the audit log — the record every question and membership change
//! already writes in its own transaction — and the anomaly-signal log, and broadcasts each change,
//! read once from the database, to that instance's subscribers. This is infrastructure: who may
//! see what is decided in `service::reach::subscriptions` and `service::money::signals`.
//!
//! Wake-ups are only hints: a local one after every write here, PostgreSQL `NOTIFY` from writes
//! on other instances, and a short poll as the floor. A lost hint costs latency, never an event,
//! because the feed always reads everything after the last audit row it saw.
//!
//! The rest of the live subsystem lives beside the hub, one layer up (docs/architecture.md#layers):
//! the websocket that serves subscriptions over `graphql-transport-ws` ([`socket`]), the
//! hand-over of a subscription to its socket ([`adopt`]) and the payloads resolved once for every
//! subscriber of a change ([`shared`]). Those are a transport; this module, the feed and the
//! listener import none of them.

use std::collections::VecDeque;
use std::sync::Arc;

use entity::{agent_questions, anomaly_signals};
use sea_orm::{DatabaseConnection, DbBackend};
use tokio::sync::{Notify, broadcast};

pub mod adopt;
mod feed;
mod listen;
pub mod shared;
pub mod socket;

/// The channel askloop's instances notify each other on.
pub const CHANNEL: &str = "askloop_changes";

/// What happened to a question, as the feed read it.
#[derive(Debug, Clone)]
pub struct QuestionChange {
    /// The audit row it was read from: one event, one number.
    pub event: i64,
    /// The niche it belongs to.
    pub niche_id: i64,
    /// The audit action (`question.created`, `question.answered`, …).
    pub action: String,
    /// Who acted, when it was a person.
    pub actor_user_id: Option<i64>,
    /// The question as it is now, shared by every subscriber it is handed to.
    pub question: Arc<agent_questions::Model>,
}

/// One change the feed broadcasts.
#[derive(Debug, Clone)]
pub enum LiveEvent {
    /// A question changed.
    Question(Arc<QuestionChange>),
    /// A membership changed: subscribers of that person re-check what they may see.
    Member {
        /// The niche.
        niche_id: i64,
        /// The person.
        user_id: i64,
    },
    /// An anomaly signal was logged (read from the signal log, which is not audited).
    Signal(Arc<anomaly_signals::Model>),
    /// Something the admins review arrived or was decided (a contribution was recorded,
    /// verified, rejected or reversed, or a correction was proposed): the audit row's id.
    Review(i64),
}

/// What a writer holds to tell the live feed it committed something subscribers may see. The
/// services that write take one, so a transport cannot forget it: the hint comes from the write
/// path. A hint is only a wake-up (the feed reads the audit log itself), so a lost one costs
/// latency, never an event; [`ChangeHint::none`] is for writers with no feed (the CLI).
#[derive(Clone, Default)]
pub struct ChangeHint {
    wake: Option<(Arc<Notify>, Arc<Notify>)>,
}

impl std::fmt::Debug for ChangeHint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeHint")
            .field("connected", &self.wake.is_some())
            .finish()
    }
}

impl ChangeHint {
    /// A hint that wakes nobody: for writes made where no feed runs (the command line); other
    /// instances' feeds still see them at their next read.
    pub fn none() -> Self {
        Self::default()
    }

    /// Something was committed: wake this instance's feed now, and the others' through
    /// `NOTIFY`. Never blocks the caller and never fails it.
    pub fn changed(&self) {
        if let Some((wake, notify_others)) = &self.wake {
            wake.notify_one();
            notify_others.notify_one();
        }
    }
}

/// What this instance's websockets watch, besides their peer: one value shared by all of them,
/// so an idle socket holds a receiver (two words) and the number it last saw, whatever happens.
/// Each socket learns from it that askloop is shutting down, or that a session or API key ended
/// here, and whose: the sockets of that person look their credential up again at once, the rest
/// do nothing (docs/contract.md#subscriptions).
#[derive(Debug, Default)]
pub struct SocketNotice {
    /// askloop is shutting down: every socket closes with 1001.
    pub stopping: bool,
    /// How many credentials have ended in this process so far.
    pub ended: u64,
    /// The owners of the latest of them, oldest first, each with its number.
    recent: VecDeque<(u64, i64)>,
}

impl SocketNotice {
    /// How many ended credentials' owners are remembered: a socket that has missed more than
    /// this many (it was busy sending) looks its own credential up, whoever's they were.
    const REMEMBERED: usize = 64;

    /// Whether a socket of `user_id` that last saw `seen` must look its credential up again.
    pub fn concerns(&self, user_id: i64, seen: u64) -> bool {
        if self.ended == seen {
            return false;
        }
        let remembered_from = self.recent.front().map_or(u64::MAX, |(number, _)| *number);
        remembered_from > seen.saturating_add(1)
            || self
                .recent
                .iter()
                .any(|(number, owner)| *number > seen && *owner == user_id)
    }

    fn record(&mut self, user_id: i64) {
        self.ended += 1;
        if self.recent.len() == Self::REMEMBERED {
            self.recent.pop_front();
        }
        self.recent.push_back((self.ended, user_id));
    }
}

/// What a service that ends sessions or revokes API keys holds to tell this instance's
/// websockets, after it commits, that one of `user_id`'s credentials ended: their sockets close
/// (4403) at once rather than at their next periodic check. Other instances' sockets still
/// notice at that check. [`CredentialsEnded::none`] is for writers with no sockets (the CLI).
#[derive(Clone, Default)]
pub struct CredentialsEnded {
    notice: Option<Arc<tokio::sync::watch::Sender<SocketNotice>>>,
}

impl std::fmt::Debug for CredentialsEnded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialsEnded")
            .field("connected", &self.notice.is_some())
            .finish()
    }
}

impl CredentialsEnded {
    /// Tells nobody: for writes made where no socket is served.
    pub fn none() -> Self {
        Self::default()
    }

    /// A session or API key of `user_id` ended (committed): their sockets here check theirs.
    pub fn ended(&self, user_id: i64) {
        if let Some(notice) = &self.notice {
            notice.send_modify(|notice| notice.record(user_id));
        }
    }
}

/// The hub: subscribe to changes, and hint that something changed.
#[derive(Clone)]
pub struct LiveHub {
    events: broadcast::Sender<LiveEvent>,
    wake: Arc<Notify>,
    notify_others: Arc<Notify>,
    db: DatabaseConnection,
    stop: tokio::sync::watch::Sender<bool>,
    sockets: Arc<tokio::sync::watch::Sender<SocketNotice>>,
}

impl std::fmt::Debug for LiveHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveHub")
            .field("subscribers", &self.events.receiver_count())
            .finish()
    }
}

pub use crate::config::LiveSettings;

impl LiveHub {
    /// Start the feed (and, on PostgreSQL, the listener) for `db`.
    pub async fn start(db: DatabaseConnection, settings: LiveSettings) -> anyhow::Result<Self> {
        let (events, _) = broadcast::channel(settings.buffer.max(1));
        let wake = Arc::new(Notify::new());
        let (stop, _) = tokio::sync::watch::channel(false);
        let (sockets, _) = tokio::sync::watch::channel(SocketNotice::default());
        let hub = Self {
            events,
            wake,
            notify_others: Arc::new(Notify::new()),
            db,
            stop,
            sockets: Arc::new(sockets),
        };
        let start_after = feed::last_audit_id(&hub.db).await?;
        let signals = feed::SignalWindow::start(&hub.db).await?;
        let stopped = hub.stopped();
        let feed_hub = hub.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = feed::run(feed_hub, start_after, signals, settings.poll) => {},
                () = stopped => {},
            }
        });
        if hub.db.get_database_backend() == DbBackend::Postgres {
            let (db, wake, stopped) = (hub.db.clone(), hub.wake.clone(), hub.stopped());
            tokio::spawn(async move {
                tokio::select! {
                    () = listen::run(db, wake) => {},
                    () = stopped => {},
                }
            });
            let (db, pending, stopped) = (hub.db.clone(), hub.notify_others.clone(), hub.stopped());
            tokio::spawn(async move {
                tokio::select! {
                    () = notify_loop(db, pending) => {},
                    () = stopped => {},
                }
            });
        }
        Ok(hub)
    }

    /// Stop the feed and the listener (on shutdown, before the pool closes).
    pub fn stop(&self) {
        let _ = self.stop.send(true);
        self.sockets.send_modify(|notice| notice.stopping = true);
    }

    /// What a websocket watches: shutdown, and credentials ended in this process.
    pub fn socket_notices(&self) -> tokio::sync::watch::Receiver<SocketNotice> {
        self.sockets.subscribe()
    }

    /// The handle services that end credentials tell this instance's websockets through.
    pub fn credentials_ended(&self) -> CredentialsEnded {
        CredentialsEnded {
            notice: Some(self.sockets.clone()),
        }
    }

    /// Resolves once the hub is stopped (askloop is shutting down).
    pub fn stopped(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.stop.subscribe();
        async move {
            let _ = rx.wait_for(|stopped| *stopped).await;
        }
    }

    /// A receiver of every change from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<LiveEvent> {
        self.events.subscribe()
    }

    /// How many receivers are listening for changes (subscriptions and long polls waiting).
    pub fn listeners(&self) -> usize {
        self.events.receiver_count()
    }

    /// The hint writers give after they commit.
    pub fn hint(&self) -> ChangeHint {
        ChangeHint {
            wake: Some((self.wake.clone(), self.notify_others.clone())),
        }
    }

    pub(crate) fn publish(&self, event: LiveEvent) {
        // No receivers is fine: nobody is watching.
        let _ = self.events.send(event);
    }

    pub(crate) fn wake(&self) -> &Notify {
        &self.wake
    }

    pub(crate) fn db(&self) -> &DatabaseConnection {
        &self.db
    }
}

/// Send `NOTIFY` for the writes of this instance, at most one a feed round
/// ([`feed::ROUND_SPACING`]): the other instances' feeds start their rounds no closer together,
/// so a notification sooner would not reach anyone sooner. Hints that arrive meanwhile fold into
/// the next one, so a stream of writes costs a hundred NOTIFYs a second at most, not one a
/// batch, and the last write is always followed by one. Each `NOTIFY` is a transaction of its
/// own, committed to the write-ahead log like any other: one a batch cost PostgreSQL's CPU and
/// intake's rate measurably more than this (docs/benchmarks.md#intake).
async fn notify_loop(db: DatabaseConnection, pending: Arc<Notify>) {
    use sea_orm::ConnectionTrait;
    loop {
        pending.notified().await;
        let sent = tokio::time::Instant::now();
        if let Err(err) = db.execute_unprepared(&format!("NOTIFY {CHANNEL}")).await {
            tracing::debug!(error = %err, "NOTIFY failed; other instances catch up by polling");
        }
        tokio::time::sleep_until(sent + feed::ROUND_SPACING).await;
    }
}

#[cfg(test)]
mod tests {
    use super::SocketNotice;

    #[test]
    fn only_the_owners_sockets_look_again_unless_too_much_was_missed() {
        let mut notice = SocketNotice::default();
        assert!(!notice.concerns(7, 0), "nothing ended yet");
        notice.record(7);
        assert!(notice.concerns(7, 0));
        assert!(!notice.concerns(8, 0), "someone else's ended");
        assert!(!notice.concerns(7, 1), "already seen");
        for _ in 0..SocketNotice::REMEMBERED {
            notice.record(9);
        }
        // The first one (7's) is forgotten: a socket that saw nothing since cannot tell whose
        // they were, so it looks its own up.
        assert!(notice.concerns(8, 0));
        assert!(
            !notice.concerns(8, 1),
            "all of them are remembered from 2 on"
        );
        assert!(notice.concerns(9, 1));
    }
}
