//! Remembering which envelopes were handled, so that a redelivery is not handled twice. askloop
//! keeps an envelope's id across every retry and redelivery (docs/contract.md#events-for-the-agent).

use std::collections::{HashSet, VecDeque};
use std::convert::Infallible;
use std::future::Future;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Where the envelope ids already handled are kept: [`Deduplicator`] in memory, or the caller's
/// own (a database table with a unique key, a cache with a time to live) so that a restart or a
/// second receiver remembers them too.
pub trait SeenStore {
    /// Why the store failed.
    type Error: std::error::Error + 'static;

    /// Record `id` as seen: `true` when it was not seen before, `false` when it was. Checking and
    /// recording must be one step, so that two copies arriving at once are not both new.
    fn insert(&self, id: &str) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// Forget `id`, so that the next copy of it is new again (its handling failed).
    fn forget(&self, id: &str) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// The envelope ids seen last, in memory, at most `capacity` of them (the oldest is forgotten
/// first). Enough for one receiver process: askloop's retries of one envelope span three days,
/// so size it to the events an agent gets in that time, or use a store of its own.
#[derive(Debug)]
pub struct Deduplicator {
    capacity: usize,
    inner: Mutex<Seen>,
}

#[derive(Debug, Default)]
struct Seen {
    ids: HashSet<String>,
    order: VecDeque<String>,
}

impl Default for Deduplicator {
    /// Remembers the last 10,000 ids.
    fn default() -> Self {
        Self::new(10_000)
    }
}

impl Deduplicator {
    /// Remember at most `capacity` ids (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            inner: Mutex::new(Seen::default()),
        }
    }

    /// Record `id`: `true` the first time, `false` while it is remembered.
    pub fn first_time(&self, id: &str) -> bool {
        let mut seen = self.lock();
        if seen.ids.contains(id) {
            return false;
        }
        if seen.ids.len() >= self.capacity
            && let Some(oldest) = seen.order.pop_front()
        {
            seen.ids.remove(&oldest);
        }
        seen.ids.insert(id.to_owned());
        seen.order.push_back(id.to_owned());
        true
    }

    /// Forget `id`.
    pub fn remove(&self, id: &str) {
        let mut seen = self.lock();
        if seen.ids.remove(id) {
            seen.order.retain(|kept| kept != id);
        }
    }

    /// How many ids it remembers.
    pub fn len(&self) -> usize {
        self.lock().ids.len()
    }

    /// Whether it remembers none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, Seen> {
        // The set stays consistent even if a holder panicked: every change is one insert or
        // remove on each side.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SeenStore for Deduplicator {
    type Error = Infallible;

    fn insert(&self, id: &str) -> impl Future<Output = Result<bool, Infallible>> + Send {
        std::future::ready(Ok(self.first_time(id)))
    }

    fn forget(&self, id: &str) -> impl Future<Output = Result<(), Infallible>> + Send {
        self.remove(id);
        std::future::ready(Ok(()))
    }
}
