//! The login throttle: failed sign-ins counted per handle and address (a backoff after five)
//! and per address across handles (a token bucket), so a flood from one address slows neither
//! the owner elsewhere nor the argon2 checks of other addresses (docs/security.md#limits).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::auth::ClientAddress;
use crate::domain::handle::Handle;

pub use crate::config::SignInSettings;

/// Why a sign-in attempt was not let through, and how long until it would be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// This handle failed too often from this address: its backoff runs.
    Handle(Duration),
    /// This address failed too often, whatever the handles: its bucket is empty.
    Address(Duration),
}

impl Refused {
    /// How long until an attempt would be let through.
    pub fn wait(self) -> Duration {
        match self {
            Refused::Handle(wait) | Refused::Address(wait) => wait,
        }
    }
}

/// Whose failed sign-ins a count is: a handle in normal form, tried from one address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ThrottleKey {
    handle: Handle,
    address: IpAddr,
}

impl ThrottleKey {
    /// Sign-ins for `handle` from `client`.
    pub fn new(handle: &Handle, client: ClientAddress) -> Self {
        Self {
            handle: handle.clone(),
            address: client.throttle_address(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Failures {
    /// Attempts counted: each is counted as it starts, and forgotten when one succeeds.
    count: u32,
    /// When the last was counted.
    last: Instant,
}

#[derive(Debug)]
struct Counts {
    by_key: HashMap<ThrottleKey, Failures>,
    /// Each address's bucket, as the moment it will be full again: every failure counted moves
    /// it one refill later, and an attempt is let through while it is at most a burst's worth
    /// of refills ahead of now (the generic cell rate algorithm). Addresses whose moment has
    /// passed are full, the same as not kept.
    by_address: HashMap<IpAddr, Instant>,
    swept: Instant,
}

/// Slows down guessing: after [`LoginThrottle::FREE_FAILURES`] failed sign-ins for a handle
/// from one address, each further attempt from there must wait, doubling up to
/// [`LoginThrottle::LONGEST_WAIT`]. Counting by handle *and* address means a stranger who fails
/// on purpose slows down only themselves, never the person signing in from their own address.
///
/// Guessing across handles is bounded too: each address (an IPv4 address, an IPv6 /64) has a
/// bucket of [`SignInSettings::address_burst`] failures, refilled one every
/// [`SignInSettings::address_refill`]; an attempt from an address whose bucket is empty is
/// refused before its password is checked, so it never waits for an argon2 permit. Successes
/// give their attempt back, so people who sign in from one shared address are not counted
/// against each other.
///
/// An attempt is counted when it starts, before its password is checked, and the count is
/// forgotten when one succeeds: so a burst of simultaneous guesses gets no more checks than the
/// free allowance. Counts are forgotten [`LoginThrottle::FORGET_AFTER`] after their last
/// attempt, and at most [`LoginThrottle::CAPACITY`] are kept; past it the least telling go
/// first (fewest failures, then oldest); the same cap holds the buckets, the fullest going
/// first. Per process: with several instances the limit applies per instance.
#[derive(Debug)]
pub struct LoginThrottle {
    counts: Mutex<Counts>,
    capacity: usize,
    settings: SignInSettings,
}

impl Default for LoginThrottle {
    fn default() -> Self {
        Self::new(SignInSettings::default())
    }
}

/// A counted sign-in attempt: it stays counted as a failure unless it is marked
/// [`succeeded`](Attempt::succeeded) or [`withdrawn`](Attempt::withdrawn).
#[derive(Debug)]
#[must_use = "an attempt is a failure unless marked otherwise"]
pub struct Attempt<'a> {
    throttle: &'a LoginThrottle,
    key: ThrottleKey,
}

impl Attempt<'_> {
    /// The password was right: forget this handle's failures from this address, and give the
    /// attempt back to the address's bucket.
    pub fn succeeded(self) {
        let mut counts = self.throttle.lock();
        counts.by_key.remove(&self.key);
        self.throttle.give_back(&mut counts, self.key.address);
    }

    /// The password was wrong: the attempt stays counted.
    pub fn failed(self) {}

    /// The attempt could not be judged (askloop failed, not the password): uncount it.
    pub fn withdrawn(self) {
        let mut counts = self.throttle.lock();
        if let Some(failures) = counts.by_key.get_mut(&self.key) {
            failures.count = failures.count.saturating_sub(1);
        }
        self.throttle.give_back(&mut counts, self.key.address);
    }
}

impl LoginThrottle {
    /// Failures allowed before waiting starts.
    pub const FREE_FAILURES: u32 = 5;
    /// The longest wait between attempts.
    pub const LONGEST_WAIT: Duration = Duration::from_secs(15 * 60);
    /// How long after its last attempt a count is forgotten.
    pub const FORGET_AFTER: Duration = Duration::from_secs(60 * 60);
    /// The most counts kept at once.
    pub const CAPACITY: usize = 20_000;
    /// The longest an address may be made to wait for one failed sign-in back.
    pub const LONGEST_REFILL: Duration = SignInSettings::LONGEST_REFILL;
    /// How often forgotten counts are swept out even when nothing is full.
    const SWEEP_EVERY: Duration = Duration::from_secs(60);

    /// A throttle with `settings` that keeps at most [`LoginThrottle::CAPACITY`] counts.
    pub fn new(settings: SignInSettings) -> Self {
        Self::with_capacity(settings, Self::CAPACITY)
    }

    /// A throttle with `settings` that keeps at most `capacity` counts and as many buckets (at
    /// least one of each).
    pub fn with_capacity(settings: SignInSettings, capacity: usize) -> Self {
        Self {
            counts: Mutex::new(Counts {
                by_key: HashMap::new(),
                by_address: HashMap::new(),
                swept: Instant::now(),
            }),
            capacity: capacity.max(1),
            settings: SignInSettings {
                address_burst: settings.address_burst.max(1),
                address_refill: settings
                    .address_refill
                    .clamp(Duration::from_millis(1), Self::LONGEST_REFILL),
                checks_per_address: settings.checks_per_address.max(1),
                first_hold: settings
                    .first_hold
                    .clamp(Duration::from_millis(1), Self::LONGEST_WAIT),
            },
        }
    }

    /// The settings it throttles by.
    pub fn settings(&self) -> SignInSettings {
        self.settings
    }

    /// The counts; a panic elsewhere while they were held leaves them usable (each change
    /// to them is a single step).
    fn lock(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The hold after `count` failures: none within the free allowance, then the first hold
    /// (a second by default), doubling with each failure, at most [`Self::LONGEST_WAIT`].
    fn delay(&self, count: u32) -> Option<Duration> {
        let over = count.checked_sub(Self::FREE_FAILURES)?;
        let factor = 2u32.saturating_pow(over.min(20));
        Some(
            self.settings
                .first_hold
                .saturating_mul(factor)
                .min(Self::LONGEST_WAIT),
        )
    }

    fn forgotten(failures: &Failures, now: Instant) -> bool {
        now.saturating_duration_since(failures.last) >= Self::FORGET_AFTER
    }

    fn wait_of(&self, failures: &Failures, now: Instant) -> Option<Duration> {
        if Self::forgotten(failures, now) {
            return None;
        }
        let ready = failures.last + self.delay(failures.count)?;
        (ready > now).then(|| ready - now)
    }

    /// How long sign-ins under `key` must still wait, if at all.
    pub fn wait_for(&self, key: &ThrottleKey, now: Instant) -> Option<Duration> {
        self.wait_of(self.lock().by_key.get(key)?, now)
    }

    /// How far ahead of `now` a bucket may be and still let an attempt through: the burst, less
    /// the one the attempt itself takes.
    fn bucket_depth(&self) -> Duration {
        self.settings
            .address_refill
            .saturating_mul(self.settings.address_burst.saturating_sub(1))
    }

    /// How long an attempt from `address` must wait for its bucket, if at all.
    fn bucket_wait(&self, counts: &Counts, address: IpAddr, now: Instant) -> Option<Duration> {
        let full_at = *counts.by_address.get(&address)?;
        let ahead = full_at.saturating_duration_since(now);
        ahead
            .checked_sub(self.bucket_depth())
            .filter(|wait| !wait.is_zero())
    }

    /// How long sign-ins from `client` must wait because the address failed too often, whatever
    /// the handles, if at all.
    pub fn address_wait(&self, client: ClientAddress, now: Instant) -> Option<Duration> {
        self.bucket_wait(&self.lock(), client.throttle_address(), now)
    }

    /// Take one failure from `address`'s bucket.
    fn take_from_bucket(&self, counts: &mut Counts, address: IpAddr, now: Instant) {
        let refill = self.settings.address_refill;
        let full_at = counts
            .by_address
            .get(&address)
            .copied()
            .filter(|full_at| *full_at > now)
            .unwrap_or(now);
        counts
            .by_address
            .insert(address, full_at.checked_add(refill).unwrap_or(full_at));
    }

    /// Give one attempt back to `address`'s bucket (it was not a failure after all).
    fn give_back(&self, counts: &mut Counts, address: IpAddr) {
        let refill = self.settings.address_refill;
        if let Some(full_at) = counts.by_address.get_mut(&address) {
            match full_at.checked_sub(refill) {
                Some(earlier) => *full_at = earlier,
                None => {
                    counts.by_address.remove(&address);
                }
            }
        }
    }

    /// Start a sign-in attempt under `key`: counted as a failure at once (for the handle and
    /// the address), or refused with why and how long to wait, counting nothing. Checking and
    /// counting happen under one lock, so simultaneous attempts cannot all pass the check
    /// before any is counted.
    pub fn attempt(&self, key: &ThrottleKey, now: Instant) -> Result<Attempt<'_>, Refused> {
        let mut counts = self.lock();
        if let Some(wait) = counts
            .by_key
            .get(key)
            .and_then(|failures| self.wait_of(failures, now))
        {
            return Err(Refused::Handle(wait));
        }
        if let Some(wait) = self.bucket_wait(&counts, key.address, now) {
            return Err(Refused::Address(wait));
        }
        if now.saturating_duration_since(counts.swept) >= Self::SWEEP_EVERY {
            Self::sweep(&mut counts, now);
        }
        self.make_room_for_bucket(&mut counts, key.address, now);
        self.take_from_bucket(&mut counts, key.address, now);
        if let Some(failures) = counts.by_key.get_mut(key) {
            if Self::forgotten(failures, now) {
                failures.count = 0;
            }
            failures.count = failures.count.saturating_add(1);
            failures.last = now;
        } else {
            self.make_room(&mut counts, now);
            counts.by_key.insert(
                key.clone(),
                Failures {
                    count: 1,
                    last: now,
                },
            );
        }
        Ok(Attempt {
            throttle: self,
            key: key.clone(),
        })
    }

    /// Sweep out forgotten counts and full buckets, and give back the memory a flood of them
    /// took once they are gone.
    fn sweep(counts: &mut Counts, now: Instant) {
        counts
            .by_key
            .retain(|_, failures| !Self::forgotten(failures, now));
        if counts.by_key.capacity() > 4 * counts.by_key.len().max(256) {
            counts.by_key.shrink_to_fit();
        }
        counts.by_address.retain(|_, full_at| *full_at > now);
        if counts.by_address.capacity() > 4 * counts.by_address.len().max(256) {
            counts.by_address.shrink_to_fit();
        }
        counts.swept = now;
    }

    /// Before a new count is added (forgotten counts are swept out every minute, see
    /// [`LoginThrottle::sweep`]): when full, sweep now; when still full, drop a tenth of the
    /// capacity, the least telling first: fewest failures, then oldest.
    fn make_room(&self, counts: &mut Counts, now: Instant) {
        if counts.by_key.len() >= self.capacity {
            Self::sweep(counts, now);
        }
        let len = counts.by_key.len();
        if len < self.capacity {
            return;
        }
        let drop = (len + 1 - self.capacity).max(self.capacity / 10).min(len);
        let mut ranked: Vec<(u32, Instant, ThrottleKey)> = counts
            .by_key
            .iter()
            .map(|(key, failures)| (failures.count, failures.last, key.clone()))
            .collect();
        ranked.select_nth_unstable_by_key(drop - 1, |(count, last, _)| (*count, *last));
        for (_, _, key) in ranked.into_iter().take(drop) {
            counts.by_key.remove(&key);
        }
    }

    /// Before a bucket for `address` is added: when full, sweep now; when still full, drop a
    /// tenth of the capacity, the fullest first (a full bucket is what no bucket is).
    fn make_room_for_bucket(&self, counts: &mut Counts, address: IpAddr, now: Instant) {
        if counts.by_address.contains_key(&address) {
            return;
        }
        if counts.by_address.len() >= self.capacity {
            Self::sweep(counts, now);
        }
        let len = counts.by_address.len();
        if len < self.capacity {
            return;
        }
        let drop = (len + 1 - self.capacity).max(self.capacity / 10).min(len);
        let mut ranked: Vec<(Instant, IpAddr)> = counts
            .by_address
            .iter()
            .map(|(address, full_at)| (*full_at, *address))
            .collect();
        ranked.select_nth_unstable_by_key(drop - 1, |(full_at, _)| *full_at);
        for (_, address) in ranked.into_iter().take(drop) {
            counts.by_address.remove(&address);
        }
    }

    /// How many counts are kept.
    pub fn len(&self) -> usize {
        self.lock().by_key.len()
    }

    /// How many addresses' buckets are kept (those not full again yet, and some that are).
    pub fn addresses_kept(&self) -> usize {
        self.lock().by_address.len()
    }

    /// Whether no counts are kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(ip: [u8; 4]) -> ClientAddress {
        ClientAddress::new(IpAddr::from(ip))
    }

    fn key(typed: &str, from: ClientAddress) -> ThrottleKey {
        ThrottleKey::new(&Handle::parse(typed).expect("a handle"), from)
    }

    const HOME: [u8; 4] = [127, 0, 0, 1];
    const STRANGER: [u8; 4] = [127, 0, 0, 2];

    /// Settings whose address buckets never run dry in these tests (they test the handles).
    fn roomy() -> SignInSettings {
        SignInSettings {
            address_burst: 1_000_000,
            ..SignInSettings::default()
        }
    }

    /// Settings with a bucket of `burst` failures per address, refilled one a second.
    fn bucket_of(burst: u32) -> SignInSettings {
        SignInSettings {
            address_burst: burst,
            address_refill: Duration::from_secs(1),
            checks_per_address: 1,
            ..SignInSettings::default()
        }
    }

    #[test]
    fn the_throttle_lets_five_failures_through_then_makes_people_wait_longer_each_time() {
        let throttle = LoginThrottle::default();
        let home = client(HOME);
        let start = Instant::now();
        for _ in 0..5 {
            assert_eq!(throttle.wait_for(&key("Ana", home), start), None);
            throttle
                .attempt(&key("ana", home), start)
                .expect("free")
                .failed();
        }
        assert_eq!(
            throttle.wait_for(&key("ana", home), start),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            throttle
                .attempt(&key("ana", home), start)
                .map(Attempt::failed),
            Err(Refused::Handle(Duration::from_secs(1)))
        );
        let later = start + Duration::from_secs(1);
        throttle
            .attempt(&key("ana", home), later)
            .expect("after the wait")
            .failed();
        assert_eq!(
            throttle.wait_for(&key("ANA", home), later),
            Some(Duration::from_secs(2))
        );
        let ready = later + Duration::from_secs(2);
        assert_eq!(throttle.wait_for(&key("ana", home), ready), None);
        throttle
            .attempt(&key("ana", home), ready)
            .expect("after the wait")
            .succeeded();
        assert_eq!(throttle.wait_for(&key("ana", home), ready), None);
        assert!(throttle.is_empty());
    }

    #[test]
    fn padded_and_differently_cased_handles_share_one_count() {
        let throttle = LoginThrottle::default();
        let home = client(HOME);
        let now = Instant::now();
        for typed in [
            " operator",
            "operator ",
            "\toperator",
            "\u{3000}operator",
            "OPERATOR",
        ] {
            throttle
                .attempt(&key(typed, home), now)
                .expect("free")
                .failed();
        }
        assert_eq!(throttle.len(), 1);
        // The plain handle is the sixth attempt: it waits, whatever the password.
        assert!(throttle.attempt(&key("operator", home), now).is_err());
    }

    #[test]
    fn a_strangers_failures_do_not_hold_back_the_owner_at_their_own_address() {
        let throttle = LoginThrottle::default();
        let now = Instant::now();
        for _ in 0..20 {
            let _ = throttle
                .attempt(&key("ana", client(STRANGER)), now)
                .map(Attempt::failed);
        }
        assert!(
            throttle
                .wait_for(&key("ana", client(STRANGER)), now)
                .is_some()
        );
        assert_eq!(throttle.wait_for(&key("ana", client(HOME)), now), None);
        throttle
            .attempt(&key("ana", client(HOME)), now)
            .expect("the owner is let through")
            .succeeded();
        // The stranger is still held back.
        assert!(
            throttle
                .wait_for(&key("ana", client(STRANGER)), now)
                .is_some()
        );
    }

    #[test]
    fn a_burst_of_simultaneous_attempts_gets_only_the_free_allowance() {
        let throttle = LoginThrottle::default();
        let now = Instant::now();
        let through = std::thread::scope(|scope| {
            let tries: Vec<_> = (0..20)
                .map(|_| {
                    scope.spawn(|| {
                        // Each attempt stays counted, as a wrong password leaves it.
                        throttle.attempt(&key("ana", client(HOME)), now).is_ok()
                    })
                })
                .collect();
            tries
                .into_iter()
                .map(|t| t.join().unwrap_or(false))
                .filter(|&through| through)
                .count()
        });
        assert_eq!(through, LoginThrottle::FREE_FAILURES as usize);
    }

    #[test]
    fn an_attempt_askloop_could_not_judge_is_not_counted() {
        let throttle = LoginThrottle::default();
        let now = Instant::now();
        for _ in 0..10 {
            throttle
                .attempt(&key("ana", client(HOME)), now)
                .expect("never counted")
                .withdrawn();
        }
        assert_eq!(throttle.wait_for(&key("ana", client(HOME)), now), None);
    }

    #[test]
    fn the_store_stays_within_its_capacity_and_keeps_the_telling_counts() {
        let throttle = LoginThrottle::with_capacity(roomy(), 100);
        let now = Instant::now();
        // A stranger locked out of ana's account from their address.
        let locked = key("ana", client(STRANGER));
        for _ in 0..LoginThrottle::FREE_FAILURES {
            throttle.attempt(&locked, now).expect("free").failed();
        }
        // Then a flood of one-off handles, each one failure.
        for i in 0..1_000 {
            let handle = format!("flood-{i}");
            throttle
                .attempt(&key(&handle, client(STRANGER)), now)
                .expect("a fresh count")
                .failed();
            assert!(throttle.len() <= 100, "{} counts kept", throttle.len());
        }
        // The flood pushed out its own counts, not the one that holds the stranger back.
        assert!(throttle.wait_for(&locked, now).is_some());
    }

    #[test]
    fn counts_are_forgotten_after_an_hour_and_swept_out() {
        let throttle = LoginThrottle::new(roomy());
        let start = Instant::now();
        for i in 0..50 {
            let _ = throttle
                .attempt(&key(&format!("old-{i}"), client(HOME)), start)
                .map(Attempt::failed);
        }
        for _ in 0..10 {
            let _ = throttle
                .attempt(&key("ana", client(HOME)), start)
                .map(Attempt::failed);
        }
        assert!(
            throttle
                .wait_for(&key("ana", client(HOME)), start)
                .is_some()
        );
        let later = start + LoginThrottle::FORGET_AFTER;
        assert_eq!(throttle.wait_for(&key("ana", client(HOME)), later), None);
        throttle
            .attempt(&key("new", client(HOME)), later)
            .expect("free")
            .failed();
        assert_eq!(throttle.len(), 1, "the forgotten counts were swept out");
        // A forgotten count starts again from nothing.
        for _ in 0..LoginThrottle::FREE_FAILURES {
            throttle
                .attempt(&key("ana", client(HOME)), later)
                .expect("free again")
                .failed();
        }
    }

    #[test]
    fn an_address_failing_across_handles_is_refused_past_its_burst_then_refilled() {
        let throttle = LoginThrottle::new(bucket_of(3));
        let now = Instant::now();
        for handle in ["ana", "bob", "cy"] {
            throttle
                .attempt(&key(handle, client(STRANGER)), now)
                .expect("within the burst")
                .failed();
        }
        // A fourth handle, never tried: the address is out of attempts.
        assert_eq!(
            throttle
                .attempt(&key("dee", client(STRANGER)), now)
                .map(Attempt::failed),
            Err(Refused::Address(Duration::from_secs(1)))
        );
        assert_eq!(
            throttle.address_wait(client(STRANGER), now),
            Some(Duration::from_secs(1))
        );
        // The refusal counted nothing: dee has no count of its own.
        assert_eq!(throttle.wait_for(&key("dee", client(STRANGER)), now), None);
        assert_eq!(throttle.len(), 3);
        // Another address is untouched.
        assert_eq!(throttle.address_wait(client(HOME), now), None);
        throttle
            .attempt(&key("dee", client(HOME)), now)
            .expect("another address")
            .failed();
        // One refill later, one more attempt.
        let later = now + Duration::from_secs(1);
        throttle
            .attempt(&key("dee", client(STRANGER)), later)
            .expect("refilled by one")
            .failed();
        assert!(
            throttle
                .attempt(&key("eve", client(STRANGER)), later)
                .is_err()
        );
        // A full bucket later, the whole burst again.
        let rested = later + Duration::from_secs(3);
        for handle in ["f1", "f2", "f3"] {
            throttle
                .attempt(&key(handle, client(STRANGER)), rested)
                .expect("refilled")
                .failed();
        }
    }

    #[test]
    fn successes_and_unjudged_attempts_give_their_attempt_back_to_the_address() {
        let throttle = LoginThrottle::new(bucket_of(2));
        let now = Instant::now();
        for _ in 0..10 {
            throttle
                .attempt(&key("ana", client(HOME)), now)
                .expect("people signing in are not counted against each other")
                .succeeded();
            throttle
                .attempt(&key("bob", client(HOME)), now)
                .expect("nor is askloop's own failure")
                .withdrawn();
        }
        assert_eq!(throttle.address_wait(client(HOME), now), None);
        for handle in ["x1", "x2"] {
            throttle
                .attempt(&key(handle, client(HOME)), now)
                .expect("the burst is whole")
                .failed();
        }
        assert!(throttle.attempt(&key("x3", client(HOME)), now).is_err());
    }

    #[test]
    fn the_buckets_stay_within_the_capacity_and_keep_the_emptiest() {
        let throttle = LoginThrottle::with_capacity(bucket_of(3), 100);
        let now = Instant::now();
        for handle in ["a1", "a2", "a3"] {
            throttle
                .attempt(&key(handle, client(STRANGER)), now)
                .expect("within the burst")
                .failed();
        }
        // A thousand other addresses fail once each.
        for i in 0..1_000_u32 {
            let [_, _, hi, lo] = i.to_be_bytes();
            let from = ClientAddress::new(IpAddr::from([10, 1, hi, lo]));
            throttle
                .attempt(&key("once", from), now)
                .expect("a fresh bucket")
                .failed();
            assert!(
                throttle.addresses_kept() <= 100,
                "{} kept",
                throttle.addresses_kept()
            );
        }
        // The emptied bucket was kept: the stranger is still refused.
        assert!(matches!(
            throttle.attempt(&key("a4", client(STRANGER)), now),
            Err(Refused::Address(_))
        ));
        // Full buckets are swept out once their time has passed.
        let later = now + Duration::from_secs(120);
        throttle
            .attempt(&key("late", client(HOME)), later)
            .expect("free")
            .failed();
        assert_eq!(throttle.addresses_kept(), 1);
    }
}
