//! The handshake gate: how many websockets do the database work of setting up at once — the
//! credential lookup of an upgrade or a `connection_init`, and the rights check of a starting
//! subscription — and in which order the others wait for their turn.
//!
//! When an instance restarts or a load balancer fails over, thousands of dashboards reconnect in
//! the same second and every one of them wants a database read for its session, then another
//! for each subscription it starts again. Taken
//! in arrival order, a socket opened in the middle of that storm would wait for all the
//! thousands before it. The gate lets [`HANDSHAKES_AT_ONCE`] through at a time and serves the
//! others first come, first served while the wait is short; once the oldest waiter has waited
//! longer than [`OVERLOADED_AFTER`], the gate is overloaded and serves the newest first
//! ("adaptive LIFO"): the socket that just arrived is acknowledged at once, and the storm's
//! backlog is still worked through at the same rate behind it (each of those clients is already
//! waiting; a few more moments cost it little). The wait is bounded by the caller.
//!
//! While the storm is still arriving, newest-first alone would let every later reconnection
//! pass a socket opened a moment before. So a socket says when it is a reconnection (the
//! dashboard adds `?reconnect=1` to the address when it comes back after a drop): waiting
//! sockets opened for the first time ([`Class::First`]) are served before waiting
//! reconnections, each line in the order above. Someone opening the dashboard during a storm is
//! served at once; the dashboards coming back, already retrying on their own, wait a little
//! more.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::net::admission::next_waiting;

/// How many sockets do their set-up reads at once.
pub const HANDSHAKES_AT_ONCE: usize = 64;

/// How long the oldest waiter may wait before the gate counts as overloaded and serves the
/// newest first.
pub const OVERLOADED_AFTER: Duration = Duration::from_millis(50);

/// Whose turn comes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A socket opened for the first time (or a client that does not say).
    First,
    /// A socket coming back after its connection dropped.
    Reconnection,
}

/// The gate (one per instance).
#[derive(Debug)]
pub struct HandshakeGate {
    state: Mutex<GateState>,
    overloaded_after: Duration,
}

#[derive(Debug)]
struct GateState {
    /// Turns free now.
    free: usize,
    /// Sockets opened for the first time that wait, oldest first.
    first: VecDeque<Waiter>,
    /// Reconnections that wait, oldest first.
    reconnections: VecDeque<Waiter>,
}

#[derive(Debug)]
struct Waiter {
    since: Instant,
    turn: oneshot::Sender<Turn>,
}

/// One handshake's turn through the gate, given back when dropped.
#[derive(Debug)]
pub struct Turn {
    gate: Option<Arc<HandshakeGate>>,
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some(gate) = self.gate.take() {
            gate.hand_on(&gate);
        }
    }
}

impl HandshakeGate {
    /// A gate letting `at_once` through at a time, overloaded once its oldest waiter has waited
    /// `overloaded_after`.
    pub fn new(at_once: usize, overloaded_after: Duration) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(GateState {
                free: at_once.max(1),
                first: VecDeque::new(),
                reconnections: VecDeque::new(),
            }),
            overloaded_after,
        })
    }

    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Wait for a turn (at once when one is free). Dropping the future gives up the place in
    /// line; a turn handed to it meanwhile goes on to the next waiter.
    pub async fn turn(self: &Arc<Self>, class: Class) -> Turn {
        loop {
            let waiting = {
                let mut state = self.lock();
                if state.free > 0 {
                    state.free -= 1;
                    return Turn {
                        gate: Some(self.clone()),
                    };
                }
                let (turn, waiting) = oneshot::channel();
                let line = match class {
                    Class::First => &mut state.first,
                    Class::Reconnection => &mut state.reconnections,
                };
                line.push_back(Waiter {
                    since: Instant::now(),
                    turn,
                });
                waiting
            };
            // The gate drops a waiter's sender only by sending it a turn, so this is a turn;
            // were the sender ever dropped unsent, waiting again is safe.
            if let Ok(turn) = waiting.await {
                return turn;
            }
        }
    }

    /// How many wait now.
    pub fn waiting(&self) -> usize {
        let state = self.lock();
        state.first.len() + state.reconnections.len()
    }

    /// A turn was given back: hand it to the next waiter still there — first-time sockets
    /// before reconnections, in each line the oldest, or the newest when its oldest has waited
    /// too long — or keep it free.
    fn hand_on(&self, this: &Arc<Self>) {
        let mut state = self.lock();
        loop {
            let line = if state.first.is_empty() {
                &mut state.reconnections
            } else {
                &mut state.first
            };
            let Some(next) = next_waiting(line, self.overloaded_after, |w| w.since) else {
                state.free += 1;
                return;
            };
            let turn = Turn {
                gate: Some(this.clone()),
            };
            match next.turn.send(turn) {
                Ok(()) => return,
                // That waiter has gone: take the turn back without giving it (we hold the
                // lock), and try the next.
                Err(mut unsent) => {
                    unsent.gate = None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn turns_are_limited_and_given_back() {
        let gate = HandshakeGate::new(2, Duration::from_secs(60));
        let first = gate.turn(Class::First).await;
        let second = gate.turn(Class::First).await;
        let third = tokio::spawn({
            let gate = gate.clone();
            async move { gate.turn(Class::First).await }
        });
        while gate.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        assert!(!third.is_finished());
        drop(first);
        let third = third
            .await
            .expect("the third gets the turn the first gave back");
        drop((second, third));
        // Every turn is free again: two at once without waiting.
        let _a = gate.turn(Class::First).await;
        let _b = gate.turn(Class::First).await;
        assert_eq!(gate.waiting(), 0);
    }

    /// Queue `n` waiters in order, each reporting its number when its turn comes.
    async fn queue(
        gate: &Arc<HandshakeGate>,
        n: usize,
        class: Class,
    ) -> (
        tokio::sync::mpsc::UnboundedReceiver<(usize, Turn)>,
        Vec<tokio::task::JoinHandle<()>>,
    ) {
        let (order, served) = tokio::sync::mpsc::unbounded_channel();
        let mut waiters = Vec::new();
        let already = gate.waiting();
        for i in 0..n {
            let (waiter, order) = (gate.clone(), order.clone());
            waiters.push(tokio::spawn(async move {
                let turn = waiter.turn(class).await;
                let _ = order.send((i, turn));
            }));
            while gate.waiting() < already + i + 1 {
                tokio::task::yield_now().await;
            }
        }
        (served, waiters)
    }

    #[tokio::test]
    async fn first_come_first_served_while_the_wait_is_short() {
        let gate = HandshakeGate::new(1, Duration::from_secs(60));
        let held = gate.turn(Class::First).await;
        let (mut served, _waiters) = queue(&gate, 3, Class::First).await;
        drop(held);
        let mut order = Vec::new();
        for _ in 0..3 {
            let (i, turn) = served.recv().await.expect("served");
            order.push(i);
            drop(turn);
        }
        assert_eq!(order, [0, 1, 2]);
    }

    #[tokio::test]
    async fn newest_first_once_the_oldest_has_waited_too_long() {
        let gate = HandshakeGate::new(1, Duration::from_millis(1));
        let held = gate.turn(Class::First).await;
        let (mut served, _waiters) = queue(&gate, 3, Class::First).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        drop(held);
        let (i, turn) = served.recv().await.expect("served");
        assert_eq!(
            i, 2,
            "the newest waiter goes first when the gate is overloaded"
        );
        drop(turn);
        let (i, turn) = served.recv().await.expect("served");
        assert_eq!(i, 1);
        drop(turn);
        let (i, _turn) = served.recv().await.expect("served");
        assert_eq!(i, 0, "the oldest is still served");
    }

    #[tokio::test]
    async fn a_waiter_that_gave_up_passes_its_turn_on() {
        let gate = HandshakeGate::new(1, Duration::from_secs(60));
        let held = gate.turn(Class::First).await;
        let (mut served, waiters) = queue(&gate, 2, Class::First).await;
        // The first in line goes away before its turn comes.
        waiters[0].abort();
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            while !waiters[0].is_finished() {
                tokio::task::yield_now().await;
            }
        })
        .await;
        drop(held);
        let (i, turn) = served.recv().await.expect("the second is served");
        assert_eq!(i, 1);
        drop(turn);
        // Nothing leaked: the turn is free again.
        let _again = tokio::time::timeout(Duration::from_secs(5), gate.turn(Class::First))
            .await
            .expect("a free turn");
    }

    #[tokio::test]
    async fn a_first_socket_goes_before_waiting_reconnections() {
        let gate = HandshakeGate::new(1, Duration::from_secs(60));
        let held = gate.turn(Class::First).await;
        let (mut reconnections, _r) = queue(&gate, 2, Class::Reconnection).await;
        let (mut first, _f) = queue(&gate, 1, Class::First).await;
        drop(held);
        let (i, turn) = first
            .recv()
            .await
            .expect("the first-time socket is served first");
        assert_eq!(i, 0);
        drop(turn);
        let (i, turn) = reconnections.recv().await.expect("then the reconnections");
        assert_eq!(i, 0);
        drop(turn);
        let (i, _turn) = reconnections.recv().await.expect("every one of them");
        assert_eq!(i, 1);
    }
}
