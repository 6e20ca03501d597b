//! Turns by key inside this process, for writers that would all fight over one row.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::{Mutex, OwnedMutexGuard};

/// Turns by key inside this process: writers that would all fight over one row (everyone
/// answering one question at once) wait here, in order, instead of each holding a pooled
/// connection while blocked on the row's lock. The database still decides: this only keeps the
/// queue out of it.
///
/// A turn may leave a note for the writers queued behind it (what it settled), which they read
/// when their turn comes instead of asking the database again. A key, and its note, is
/// forgotten as soon as nobody holds or waits for it: a note only ever reaches writers that were
/// already waiting when it was written.
pub struct Turns<N = ()> {
    keys: std::sync::Mutex<HashMap<i64, Arc<Mutex<Option<N>>>>>,
}

impl<N> Default for Turns<N> {
    fn default() -> Self {
        Self {
            keys: std::sync::Mutex::new(HashMap::new()),
        }
    }
}

/// One writer's turn for a key; the next waiter goes when it is dropped.
pub struct Turn<'a, N = ()> {
    turns: &'a Turns<N>,
    key: i64,
    lock: Option<Arc<Mutex<Option<N>>>>,
    guard: Option<OwnedMutexGuard<Option<N>>>,
}

impl<N> Turns<N> {
    /// How many writers hold or wait for the turn at `key` now: what a test waits on to know a
    /// writer has queued.
    pub fn queued(&self, key: i64) -> usize {
        let keys = self
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // The map holds one reference; each holder holds two (its lock and its guard), and so
        // does each waiter (its lock and the lock it waits on).
        keys.get(&key)
            .map_or(0, |lock| Arc::strong_count(lock).saturating_sub(1) / 2)
    }

    /// Wait for the turn at `key`.
    pub async fn take(&self, key: i64) -> Turn<'_, N> {
        let lock = self
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entry(key)
            .or_default()
            .clone();
        let guard = lock.clone().lock_owned().await;
        Turn {
            turns: self,
            key,
            lock: Some(lock),
            guard: Some(guard),
        }
    }
}

impl<N> Turn<'_, N> {
    /// The note a turn before this one left, if any.
    pub fn note(&self) -> Option<&N> {
        self.guard.as_ref().and_then(|guard| guard.as_ref())
    }

    /// Leave `note` for the writers waiting behind this turn.
    pub fn leave(&mut self, note: N) {
        if let Some(guard) = self.guard.as_mut() {
            **guard = Some(note);
        }
    }

    /// Take back the note a turn before this one left: what it said is no longer true (the
    /// question it settled is open again).
    pub fn clear(&mut self) {
        if let Some(guard) = self.guard.as_mut() {
            **guard = None;
        }
    }
}

impl<N> Drop for Turn<'_, N> {
    fn drop(&mut self) {
        self.guard = None;
        let mut keys = self
            .turns
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Ours and the map's: nobody else holds or waits for it.
        if self
            .lock
            .take()
            .is_some_and(|lock| Arc::strong_count(&lock) == 2)
        {
            keys.remove(&self.key);
        }
        // A waiter that gave up (its request went away) leaves a key only the map holds.
        keys.retain(|_, lock| Arc::strong_count(lock) > 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_note_reaches_the_writers_already_waiting_and_no_one_after() {
        let turns: Arc<Turns<&'static str>> = Arc::default();
        let mut first = turns.take(7).await;
        assert_eq!(first.note(), None);
        let queued = {
            let turns = turns.clone();
            tokio::spawn(async move { turns.take(7).await.note().copied() })
        };
        // Wait until the second writer is queued behind the first: the map, the first turn
        // (its lock and its guard) and the waiter (its lock and the lock it waits on).
        while turns
            .keys
            .lock()
            .map(|keys| keys.get(&7).map_or(0, Arc::strong_count))
            .unwrap_or(0)
            < 5
        {
            tokio::task::yield_now().await;
        }
        first.leave("settled");
        drop(first);
        assert_eq!(queued.await.expect("the waiter"), Some("settled"));
        // Nobody waited any more: the key and its note are gone.
        assert_eq!(turns.take(7).await.note(), None);
    }

    #[tokio::test]
    async fn a_cleared_note_reaches_nobody_queued_behind_it() {
        let turns: Arc<Turns<&'static str>> = Arc::default();
        let mut settling = turns.take(7).await;
        settling.leave("settled");
        let reopening = {
            let turns = turns.clone();
            tokio::spawn(async move {
                let mut turn = turns.take(7).await;
                let seen = turn.note().copied();
                turn.clear();
                seen
            })
        };
        while turns.queued(7) < 2 {
            tokio::task::yield_now().await;
        }
        let after = {
            let turns = turns.clone();
            tokio::spawn(async move { turns.take(7).await.note().copied() })
        };
        while turns.queued(7) < 3 {
            tokio::task::yield_now().await;
        }
        drop(settling);
        assert_eq!(reopening.await.expect("the reopener"), Some("settled"));
        assert_eq!(after.await.expect("the writer after"), None);
        assert_eq!(turns.queued(7), 0);
    }

    #[tokio::test]
    async fn turns_at_one_key_go_one_at_a_time_and_are_forgotten_after() {
        let turns: Turns = Turns::default();
        let first = turns.take(7).await;
        // Another key is not held up.
        drop(turns.take(8).await);
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(50), turns.take(7));
        assert!(
            waiting.await.is_err(),
            "a second turn at 7 waits for the first"
        );
        drop(first);
        let second = turns.take(7).await;
        assert_eq!(turns.keys.lock().map(|k| k.len()).unwrap_or(0), 1);
        drop(second);
        assert_eq!(
            turns.keys.lock().map(|k| k.len()).unwrap_or(usize::MAX),
            0,
            "nobody holds or waits: no key is kept"
        );
    }
}
