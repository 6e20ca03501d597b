//! A connection's place among those starting: handed to the serving runtime and not yet through
//! its first read. Goal: the reconnect storm (docs/benchmarks.md#fan-out-and-reconnect-storms) —
//! the accept thread (`accept.rs`) holds the rest back, where the newest can be started first.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How many accepted connections may be starting at once: handed to the serving runtime and not
/// yet through their first read. The rest wait in the accept loop, where the newest can be
/// started first; in the runtime's queue they would all be started in arrival order.
pub(super) const STARTING_AT_ONCE: usize = 128;

/// A connection's place among those starting: given back once, at its first read that finds
/// nothing to read yet, its first request, or its end, whichever comes first.
pub(super) struct StartSlot {
    starting: Arc<Semaphore>,
    given_back: AtomicBool,
}

impl StartSlot {
    /// The place `permit` holds, kept until given back rather than until the permit is dropped.
    pub(super) fn holding(permit: OwnedSemaphorePermit) -> Arc<Self> {
        let starting = permit.semaphore().clone();
        permit.forget();
        Arc::new(Self {
            starting,
            given_back: AtomicBool::new(false),
        })
    }

    /// Give the place back; only the first call does.
    pub(super) fn give_back(&self) {
        if !self.given_back.swap(true, Ordering::AcqRel) {
            self.starting.add_permits(1);
        }
    }
}

impl Drop for StartSlot {
    fn drop(&mut self) {
        self.give_back();
    }
}
