//! Hashing and checking passwords with argon2id. Both are deliberately expensive, so they run on
//! tokio's blocking threads, never on the threads that serve requests, and at most one per core
//! at a time: a flood of sign-ins queues here instead of starving every other request.
//!
//! The permits are shared fairly. Every check waits in a [`Lane`] — a sign-in in the lane of the
//! address it came from, askloop's own work (hashing a new password) in its own — and a freed
//! permit goes to the next lane in turn, round robin, not to the oldest waiter: so one address
//! with hundreds of guesses in flight holds back only itself, and a sign-in from anywhere else
//! waits for at most one check to finish. A lane may also be held to a number of checks at once
//! (a sign-in lane to `ASKLOOP_LOGIN_CHECKS_PER_ADDRESS`), leaving the other permits free for
//! whoever arrives next. The permits are one pool per process, because the cores are.
//!
//! A sign-in for a handle nobody has is checked against a fixed dummy hash made with the same
//! parameters, so it takes as long as one for a real person: the time of the answer says nothing
//! about which handles exist.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};

use argon2::Argon2;
use argon2::password_hash::{
    PasswordHash, PasswordHasher, PasswordVerifier, SaltString, rand_core::OsRng,
};
use tokio::sync::oneshot;

use crate::error::ServiceError;

/// One permit per core (at least one): how many argon2 computations run at once.
static PERMITS: LazyLock<Permits> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    Permits::new(cores)
});

/// The process's argon2 permits (to see who waits for them).
pub fn permits() -> &'static Permits {
    &PERMITS
}

/// Which line a password check waits in for its permit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lane {
    /// A sign-in from this address (an IPv4 address, or an IPv6 /64, as the throttle counts).
    Address(IpAddr),
    /// askloop's own work: hashing a new password, making the dummy hash.
    Local,
}

/// The lane a check waits in and how many checks of that lane may run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    lane: Lane,
    most: usize,
}

impl Share {
    /// A sign-in from `address`, at most `most` of whose checks run at once (at least one).
    pub fn address(address: IpAddr, most: usize) -> Self {
        Self {
            lane: Lane::Address(address),
            most: most.max(1),
        }
    }

    /// askloop's own work, which may use every permit that is free.
    pub fn local() -> Self {
        Self {
            lane: Lane::Local,
            most: usize::MAX,
        }
    }
}

/// A check waiting for its permit: told through `granted` once it has one.
#[derive(Debug)]
struct Waiter {
    most: usize,
    granted: oneshot::Sender<()>,
}

#[derive(Debug, Default)]
struct LaneState {
    running: usize,
    waiting: VecDeque<Waiter>,
}

#[derive(Debug)]
struct PoolState {
    free: usize,
    lanes: HashMap<Lane, LaneState>,
    /// The lanes that have waiters, in the order they get their next turn.
    turns: VecDeque<Lane>,
}

#[derive(Debug)]
struct Pool {
    size: usize,
    state: Mutex<PoolState>,
}

/// A fixed number of permits, handed out round robin among the lanes that wait for one.
#[derive(Debug, Clone)]
pub struct Permits {
    pool: Arc<Pool>,
}

/// A permit to run one check; given back when dropped.
#[derive(Debug)]
#[must_use = "the permit is given back as soon as it is dropped"]
pub struct Permit {
    pool: Arc<Pool>,
    lane: Lane,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.pool.release(self.lane);
    }
}

/// A wait for a permit. Dropped before the permit is taken (the caller gave up), it leaves the
/// queue; granted meanwhile, it gives the permit back.
struct Waiting {
    granted: oneshot::Receiver<()>,
    taken: bool,
    pool: Arc<Pool>,
    lane: Lane,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.taken {
            return;
        }
        // Closed first, so no grant can arrive after the look below and be lost.
        self.granted.close();
        if self.granted.try_recv().is_ok() {
            self.pool.release(self.lane);
        }
    }
}

impl Pool {
    /// The state; a panic elsewhere while it was held leaves it usable (no change to it can
    /// panic halfway).
    fn lock(&self) -> MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn release(&self, lane: Lane) {
        let mut state = self.lock();
        state.free += 1;
        if let Some(waiting) = state.lanes.get_mut(&lane) {
            waiting.running = waiting.running.saturating_sub(1);
            if waiting.running == 0 && waiting.waiting.is_empty() {
                state.lanes.remove(&lane);
            }
        }
        Self::dispatch(&mut state);
    }

    /// Hand free permits to the lanes in turn: each lane whose first waiter may run gets one
    /// and goes to the back; a lane at its limit keeps waiting (also at the back); waiters that
    /// gave up are dropped on the way.
    fn dispatch(state: &mut PoolState) {
        let PoolState { free, lanes, turns } = state;
        let mut passed = 0;
        while *free > 0 && passed < turns.len() {
            let Some(id) = turns.pop_front() else { break };
            let Some(lane) = lanes.get_mut(&id) else {
                continue;
            };
            while lane.waiting.front().is_some_and(|w| w.granted.is_closed()) {
                lane.waiting.pop_front();
            }
            let Some(first) = lane.waiting.front() else {
                // Everyone in it gave up: the lane leaves the turns.
                if lane.running == 0 {
                    lanes.remove(&id);
                }
                continue;
            };
            if lane.running >= first.most {
                turns.push_back(id);
                passed += 1;
                continue;
            }
            let Some(waiter) = lane.waiting.pop_front() else {
                continue;
            };
            if waiter.granted.send(()).is_err() {
                // It gave up just now; the lane keeps its turn for the next waiter in it.
                turns.push_front(id);
                continue;
            }
            lane.running += 1;
            *free -= 1;
            if !lane.waiting.is_empty() {
                turns.push_back(id);
            }
            passed = 0;
        }
    }
}

impl Permits {
    /// `permits` permits (at least one).
    pub fn new(permits: usize) -> Self {
        Self {
            pool: Arc::new(Pool {
                size: permits.max(1),
                state: Mutex::new(PoolState {
                    free: permits.max(1),
                    lanes: HashMap::new(),
                    turns: VecDeque::new(),
                }),
            }),
        }
    }

    /// Wait for a permit in `share`'s lane, behind that lane's earlier waiters and in turn with
    /// the other lanes.
    pub async fn acquire(&self, share: Share) -> Result<Permit, ServiceError> {
        let (granted, receiver) = oneshot::channel();
        {
            let mut state = self.pool.lock();
            let lane = state.lanes.entry(share.lane).or_default();
            lane.waiting.retain(|w| !w.granted.is_closed());
            lane.waiting.push_back(Waiter {
                most: share.most,
                granted,
            });
            if lane.waiting.len() == 1 {
                // A lane whose earlier waiters all gave up may still hold its old turn.
                state.turns.retain(|id| *id != share.lane);
                state.turns.push_back(share.lane);
            }
            Pool::dispatch(&mut state);
        }
        let mut waiting = Waiting {
            granted: receiver,
            taken: false,
            pool: self.pool.clone(),
            lane: share.lane,
        };
        let outcome = (&mut waiting.granted).await;
        waiting.taken = true;
        outcome
            .map(|()| Permit {
                pool: self.pool.clone(),
                lane: share.lane,
            })
            .map_err(|_| {
                ServiceError::Internal(anyhow::anyhow!("password permits: a waiter was let go"))
            })
    }

    /// How many permits there are.
    pub fn size(&self) -> usize {
        self.pool.size
    }

    /// How many checks in `lane` wait for a permit.
    pub fn waiting(&self, lane: Lane) -> usize {
        self.pool.lock().lanes.get(&lane).map_or(0, |l| {
            l.waiting.iter().filter(|w| !w.granted.is_closed()).count()
        })
    }

    /// How many checks in `lane` hold a permit.
    pub fn running(&self, lane: Lane) -> usize {
        self.pool.lock().lanes.get(&lane).map_or(0, |l| l.running)
    }
}

/// The hash a sign-in for an unknown handle is checked against: a random password nobody
/// knows, hashed once with the parameters every real hash has.
static DUMMY: LazyLock<Result<String, String>> =
    LazyLock::new(|| hash_now(&crate::domain::tokens::new_token("")).map_err(|e| e.to_string()));

#[cfg(test)]
tokio::task_local! {
    /// How many passwords the current test task had checked (counted after each check ran).
    pub(crate) static CHECKS: std::cell::Cell<u32>;
}

fn hash_now(password: &str) -> Result<String, argon2::password_hash::Error> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
}

fn matches_now(password: &str, stored: &str) -> Result<bool, ServiceError> {
    let parsed = PasswordHash::new(stored)
        .map_err(|e| ServiceError::Internal(anyhow::anyhow!("stored hash is unreadable: {e}")))?;
    Ok(Argon2::default()
        .verify_password(password.as_bytes(), &parsed)
        .is_ok())
}

/// Run `work` on a blocking thread once `share`'s lane has its turn at a permit. The permit goes
/// with the work, so a caller that gives up (a client that hangs up) does not free it before
/// the work is done.
async fn off_the_async_threads<T: Send + 'static>(
    share: Share,
    work: impl FnOnce() -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, ServiceError> {
    let permit = PERMITS.acquire(share).await?;
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        work()
    })
    .await
    .map_err(|e| ServiceError::Internal(anyhow::anyhow!("password work: {e}")))?
}

/// The argon2id hash of `password`, to store.
pub async fn hash(password: &str) -> Result<String, ServiceError> {
    let password = password.to_owned();
    off_the_async_threads(Share::local(), move || {
        hash_now(&password)
            .map_err(|e| ServiceError::Internal(anyhow::anyhow!("hashing a password: {e}")))
    })
    .await
}

/// The hash a sign-in checks the password against: the person's, or the dummy when the handle
/// is nobody's.
fn hash_to_check(stored: Option<&str>) -> Result<&str, ServiceError> {
    match stored {
        Some(stored) => Ok(stored),
        None => DUMMY
            .as_deref()
            .map_err(|e| ServiceError::Internal(anyhow::anyhow!("the dummy password hash: {e}"))),
    }
}

/// Whether `password` is the one `stored` was made from, checked in `share`'s lane. With no
/// stored hash (an unknown handle) the password is checked all the same, against the dummy, and
/// the answer is `false`.
pub async fn verify(
    password: &str,
    stored: Option<&str>,
    share: Share,
) -> Result<bool, ServiceError> {
    let known = stored.is_some();
    let password = password.to_owned();
    let against = hash_to_check(stored)?.to_owned();
    let matched = off_the_async_threads(share, move || matches_now(&password, &against)).await?;
    #[cfg(test)]
    let _ = CHECKS.try_with(|checks| checks.set(checks.get() + 1));
    Ok(known && matched)
}

/// Make the dummy hash now (at start-up), so the first sign-in for an unknown handle does not
/// take longer than the rest.
pub async fn prepare() -> Result<(), ServiceError> {
    off_the_async_threads(Share::local(), || {
        hash_to_check(None)?;
        Ok(())
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex as StdMutex;

    use super::*;

    fn from(last: u8) -> Lane {
        Lane::Address(IpAddr::from([203, 0, 113, last]))
    }

    fn share(lane: Lane, most: usize) -> Share {
        match lane {
            Lane::Address(ip) => Share::address(ip, most),
            Lane::Local => Share::local(),
        }
    }

    /// Let the other tasks run until `fact` holds (a fact, not a time: it fails after many
    /// rounds rather than hanging).
    async fn until(fact: impl Fn() -> bool) {
        for _ in 0..10_000 {
            if fact() {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("the fact never held");
    }

    /// Queue a check in `lane` that records `name` once it has its permit and gives it back at
    /// once; returns when it waits.
    async fn queue(
        permits: &Permits,
        lane: Lane,
        name: &'static str,
        order: &Arc<StdMutex<Vec<&'static str>>>,
    ) -> tokio::task::JoinHandle<()> {
        let before = permits.waiting(lane);
        let (pool, order) = (permits.clone(), order.clone());
        let task = tokio::spawn(async move {
            let _permit = pool.acquire(share(lane, 1)).await.expect("a permit");
            order.lock().expect("the order").push(name);
        });
        until(|| permits.waiting(lane) == before + 1).await;
        task
    }

    #[tokio::test]
    async fn a_freed_permit_goes_to_the_next_lane_in_turn_not_to_the_oldest_waiter() {
        let permits = Permits::new(1);
        let order = Arc::new(StdMutex::new(Vec::new()));
        let held = permits
            .acquire(Share::local())
            .await
            .expect("the one permit");
        let mut tasks = Vec::new();
        for name in ["flood-1", "flood-2", "flood-3"] {
            tasks.push(queue(&permits, from(1), name, &order).await);
        }
        tasks.push(queue(&permits, from(2), "owner", &order).await);
        drop(held);
        for task in tasks {
            task.await.expect("ran");
        }
        // The owner waited for one of the flood's checks, not for all three.
        assert_eq!(
            *order.lock().expect("the order"),
            ["flood-1", "owner", "flood-2", "flood-3"]
        );
        assert_eq!(permits.running(from(1)) + permits.waiting(from(1)), 0);
    }

    #[tokio::test]
    async fn a_lane_at_its_limit_leaves_the_other_permits_free() {
        let permits = Permits::new(2);
        let first = permits.acquire(share(from(1), 1)).await.expect("a permit");
        let waiting = {
            let pool = permits.clone();
            tokio::spawn(async move { pool.acquire(share(from(1), 1)).await.map(drop) })
        };
        until(|| permits.waiting(from(1)) == 1).await;
        // The second permit is free, but not for the same address…
        assert_eq!(permits.running(from(1)), 1);
        // …while another address takes it at once.
        let other = permits.acquire(share(from(2), 1)).await.expect("at once");
        assert_eq!(permits.running(from(2)), 1);
        drop(other);
        assert_eq!(permits.waiting(from(1)), 1, "still held to one at a time");
        drop(first);
        waiting.await.expect("ran").expect("its turn came");
        // askloop's own work may use every permit.
        let a = permits.acquire(Share::local()).await.expect("one");
        let b = permits.acquire(Share::local()).await.expect("two");
        assert_eq!(permits.running(Lane::Local), 2);
        drop((a, b));
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_takes_no_permit_with_it() {
        let permits = Permits::new(1);
        let held = permits
            .acquire(share(from(1), 1))
            .await
            .expect("the permit");
        let gave_up = {
            let pool = permits.clone();
            tokio::spawn(async move { pool.acquire(share(from(2), 1)).await.map(drop) })
        };
        until(|| permits.waiting(from(2)) == 1).await;
        gave_up.abort();
        until(|| permits.waiting(from(2)) == 0).await;
        drop(held);
        // The permit is free again, and goes from one caller to the next without leaking.
        let again = permits.acquire(share(from(3), 1)).await.expect("free");
        let next = {
            let pool = permits.clone();
            tokio::spawn(async move { pool.acquire(share(from(4), 1)).await.map(drop) })
        };
        until(|| permits.waiting(from(4)) == 1).await;
        drop(again);
        next.await.expect("ran").expect("granted");
        let last = permits
            .acquire(share(from(5), 1))
            .await
            .expect("nothing leaked");
        drop(last);
        for lane in [from(1), from(2), from(3), from(4), from(5)] {
            assert_eq!(permits.running(lane) + permits.waiting(lane), 0);
        }
    }

    #[tokio::test]
    async fn the_dummy_hash_has_the_parameters_of_a_real_one() {
        let real = hash("correct horse battery staple").await.expect("hashed");
        let real = PasswordHash::new(&real).expect("readable");
        let dummy = PasswordHash::new(hash_to_check(None).expect("a dummy")).expect("readable");
        assert_eq!(dummy.algorithm, real.algorithm);
        assert_eq!(dummy.version, real.version);
        assert_eq!(dummy.params, real.params);
        assert_ne!(dummy.salt, real.salt);
    }

    #[tokio::test]
    async fn an_unknown_handle_is_checked_against_the_dummy_and_never_matches() {
        let stored = hash("correct horse battery staple").await.expect("hashed");
        assert_eq!(hash_to_check(Some(&stored)).ok(), Some(stored.as_str()));
        let checks = CHECKS
            .scope(std::cell::Cell::new(0), async {
                assert!(
                    verify(
                        "correct horse battery staple",
                        Some(&stored),
                        Share::local()
                    )
                    .await
                    .expect("checked")
                );
                assert!(
                    !verify("wrong", Some(&stored), Share::local())
                        .await
                        .expect("checked")
                );
                assert!(
                    !verify("correct horse battery staple", None, Share::local())
                        .await
                        .expect("checked")
                );
                CHECKS.with(std::cell::Cell::get)
            })
            .await;
        assert_eq!(checks, 3, "every call ran one argon2 check");
    }
}
