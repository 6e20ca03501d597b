//! Admission by address: how many connections (or anonymous websockets) one address may hold
//! open at once ([`OpenPerAddress`]), and how fast one address may start something
//! ([`RatePerAddress`]). An address is counted as the sign-in throttle counts it
//! ([`ClientAddress::throttle_address`]): IPv4 as is, IPv6 by its /64, so that one subscriber
//! cannot multiply itself by picking fresh addresses from its own network.
//!
//! Both are used by the connection layer (`net/serve.rs`) and the websocket
//! (`live/socket.rs`); what they refuse and with which answer is in `docs/security.md`. So
//! are the instance-wide cap on connections and its reserve ([`Connections`], which admits
//! each connection before it is served) and the order in which waiting connections and
//! handshakes are served when more arrive than can be served at once ([`next_waiting`]).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::auth::ClientAddress;
use crate::config::ConnectionSettings;

/// Take the next of `line` (oldest first) to serve: the oldest, unless it has waited (since
/// `since` says) longer than `overloaded_after` — then the newest ("adaptive LIFO"). When more
/// arrive than can be served, the backlog is worked through at the same rate either way, and
/// whoever arrived just now is served at once instead of after all of it.
pub fn next_waiting<T>(
    line: &mut VecDeque<T>,
    overloaded_after: Duration,
    since: impl Fn(&T) -> Instant,
) -> Option<T> {
    let overloaded = line
        .front()
        .is_some_and(|oldest| since(oldest).elapsed() > overloaded_after);
    if overloaded {
        line.pop_back()
    } else {
        line.pop_front()
    }
}

/// The instance-wide and per-address caps on open connections.
#[derive(Debug)]
pub struct Connections {
    max: usize,
    /// Connections admitted from this count on are in the reserve.
    reserve_from: usize,
    open: Arc<AtomicUsize>,
    per_address: Arc<OpenPerAddress>,
}

/// What admitting a connection decided.
#[derive(Debug)]
pub enum Admission {
    /// Served; in the reserve when `reserved`.
    Admitted {
        /// Its place in the caps, given back when the connection (or its websocket) closes.
        place: ConnectionPlace,
        /// Only health checks and requests with a credential are served on it.
        reserved: bool,
    },
    /// Its address holds as many connections as it may.
    AddressFull,
    /// The instance holds as many connections as it may.
    Full,
}

/// One connection's place in the caps.
#[derive(Debug)]
pub struct ConnectionPlace {
    /// Its place under its address's cap; none for a trusted proxy's connection, whose
    /// requests hold places under their clients' addresses instead.
    _address: Option<OpenSlot>,
    open: Arc<AtomicUsize>,
}

impl Drop for ConnectionPlace {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Connections {
    /// The caps of `settings` for a process allowed `file_limit` open files.
    pub fn new(settings: &ConnectionSettings, file_limit: u64) -> Arc<Self> {
        let max = settings.max_connections_for(file_limit);
        Arc::new(Self {
            max,
            reserve_from: max - settings.reserved_of(max),
            open: Arc::new(AtomicUsize::new(0)),
            per_address: OpenPerAddress::new(settings.max_per_address),
        })
    }

    /// Admit a connection from `client`, or say why not.
    pub fn admit(&self, client: ClientAddress) -> Admission {
        let before = self.open.fetch_add(1, Ordering::AcqRel);
        if before >= self.max {
            self.open.fetch_sub(1, Ordering::AcqRel);
            return Admission::Full;
        }
        let Some(address) = self.per_address.try_open(client) else {
            self.open.fetch_sub(1, Ordering::AcqRel);
            return Admission::AddressFull;
        };
        Admission::Admitted {
            place: ConnectionPlace {
                _address: Some(address),
                open: self.open.clone(),
            },
            reserved: before >= self.reserve_from,
        }
    }

    /// Admit a connection from a trusted proxy: under the instance-wide cap only. Its address is
    /// every forwarded client's, so a cap on it would be one cap for all of them; each request
    /// it forwards is held to its client's cap instead ([`Connections::hold_for`]).
    pub fn admit_from_proxy(&self) -> Admission {
        let before = self.open.fetch_add(1, Ordering::AcqRel);
        if before >= self.max {
            self.open.fetch_sub(1, Ordering::AcqRel);
            return Admission::Full;
        }
        Admission::Admitted {
            place: ConnectionPlace {
                _address: None,
                open: self.open.clone(),
            },
            reserved: before >= self.reserve_from,
        }
    }

    /// A place under `client`'s per-address cap for a request a trusted proxy forwards, unless
    /// that address holds as many as it may.
    pub fn hold_for(&self, client: ClientAddress) -> Option<OpenSlot> {
        self.per_address.try_open(client)
    }

    /// How many places `client`'s address holds under the per-address cap.
    pub fn held_by(&self, client: ClientAddress) -> usize {
        self.per_address.held_by(client)
    }

    /// How many connections are open.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// The instance-wide cap.
    pub fn max(&self) -> usize {
        self.max
    }
}

/// Counts what each address holds open, up to a cap per address.
#[derive(Debug)]
pub struct OpenPerAddress {
    max: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One thing held open by an address; dropping it gives the place back.
#[derive(Debug)]
pub struct OpenSlot {
    owner: Arc<OpenPerAddress>,
    address: IpAddr,
}

impl OpenPerAddress {
    /// At most `max` open per address.
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max,
            open: Mutex::new(HashMap::new()),
        })
    }

    /// A place for one more from `client`, unless it already holds the most it may.
    pub fn try_open(self: &Arc<Self>, client: ClientAddress) -> Option<OpenSlot> {
        let address = client.throttle_address();
        let mut open = lock(&self.open);
        let held = open.entry(address).or_insert(0);
        if *held >= self.max {
            return None;
        }
        *held += 1;
        Some(OpenSlot {
            owner: self.clone(),
            address,
        })
    }

    /// How many `client`'s address holds open now.
    pub fn held_by(&self, client: ClientAddress) -> usize {
        lock(&self.open)
            .get(&client.throttle_address())
            .copied()
            .unwrap_or(0)
    }

    /// How many addresses hold something open (the map never keeps an address at zero).
    pub fn addresses(&self) -> usize {
        lock(&self.open).len()
    }
}

impl Drop for OpenSlot {
    fn drop(&mut self) {
        let mut open = lock(&self.owner.open);
        if let Some(held) = open.get_mut(&self.address) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                open.remove(&self.address);
            }
        }
    }
}

/// A token bucket per address: `per_second` at once, refilled at `per_second` a second.
///
/// The buckets kept are bounded: a full bucket says nothing and is swept away, and when
/// [`RatePerAddress::CAPACITY`] addresses all have recent attempts, a new address is refused
/// until some refill. Refusing is the safe side: what this guards (anonymous websockets) has
/// nothing to lose by waiting, and signed-in callers never pass through it.
#[derive(Debug)]
pub struct RatePerAddress {
    per_second: f64,
    buckets: Mutex<Buckets>,
}

#[derive(Debug)]
struct Buckets {
    by_address: HashMap<IpAddr, Bucket>,
    swept: Instant,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl RatePerAddress {
    /// The most addresses with a bucket that is not full.
    pub const CAPACITY: usize = 65_536;

    /// `per_second` at once, then `per_second` a second (at least one).
    pub fn new(per_second: usize) -> Self {
        Self {
            per_second: per_second.max(1) as f64,
            buckets: Mutex::new(Buckets {
                by_address: HashMap::new(),
                swept: Instant::now(),
            }),
        }
    }

    /// Take one for `client` at `now`: `Err` with how long until one is there again.
    pub fn take(&self, client: ClientAddress, now: Instant) -> Result<(), Duration> {
        let address = client.throttle_address();
        let mut buckets = lock(&self.buckets);
        let refilled = |bucket: &Bucket| {
            let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
            (bucket.tokens + elapsed * self.per_second).min(self.per_second)
        };
        // A sweep now and then, and whenever the map is full: full buckets are forgotten.
        let full_map = buckets.by_address.len() >= Self::CAPACITY;
        if full_map || now.saturating_duration_since(buckets.swept) > Duration::from_secs(10) {
            buckets
                .by_address
                .retain(|_, bucket| refilled(bucket) < self.per_second);
            buckets.swept = now;
        }
        let wait_for_one = Duration::from_secs_f64(1.0 / self.per_second);
        let tokens = match buckets.by_address.get(&address) {
            Some(bucket) => refilled(bucket),
            None if buckets.by_address.len() >= Self::CAPACITY => return Err(wait_for_one),
            None => self.per_second,
        };
        if tokens < 1.0 {
            let missing = (1.0 - tokens) / self.per_second;
            return Err(Duration::from_secs_f64(missing).max(Duration::from_millis(1)));
        }
        buckets.by_address.insert(
            address,
            Bucket {
                tokens: tokens - 1.0,
                at: now,
            },
        );
        Ok(())
    }
}

/// The lock, also when a thread panicked holding it: the counts stay usable (at worst one
/// count is off by one), and admission must not take the server down with it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn waiters_go_oldest_first_until_the_oldest_has_waited_too_long() {
        let after = Duration::from_millis(50);
        let now = Instant::now();
        let mut waiting: VecDeque<(u32, Instant)> = (0..3).map(|n| (n, now)).collect();
        assert_eq!(
            next_waiting(&mut waiting, after, |w| w.1).map(|w| w.0),
            Some(0)
        );
        let long_ago = now - after * 2;
        let mut waiting: VecDeque<(u32, Instant)> = (0..3).map(|n| (n, long_ago)).collect();
        waiting.push_back((3, now));
        let order: Vec<u32> = std::iter::from_fn(|| next_waiting(&mut waiting, after, |w| w.1))
            .map(|w| w.0)
            .collect();
        // Overloaded: the newest first, and every one of them still served.
        assert_eq!(order, [3, 2, 1, 0]);
        assert!(next_waiting(&mut VecDeque::<(u32, Instant)>::new(), after, |w| w.1).is_none());
    }

    fn v4(last: u8) -> ClientAddress {
        ClientAddress::new(IpAddr::V4(Ipv4Addr::new(203, 0, 113, last)))
    }

    fn v6(host: u16) -> ClientAddress {
        ClientAddress::new(IpAddr::V6(Ipv6Addr::new(
            0x2001, 0xdb8, 0, 1, 0, 0, 0, host,
        )))
    }

    #[test]
    fn an_address_holds_at_most_its_cap_and_gets_places_back_as_they_close() {
        let open = OpenPerAddress::new(2);
        let first = open.try_open(v4(1)).expect("a first place");
        let _second = open.try_open(v4(1)).expect("a second place");
        assert!(open.try_open(v4(1)).is_none(), "a third is refused");
        assert!(open.try_open(v4(2)).is_some(), "another address is not");
        drop(first);
        assert_eq!(open.held_by(v4(1)), 1);
        assert!(open.try_open(v4(1)).is_some(), "a place came back");
    }

    #[test]
    fn an_ipv6_network_counts_as_one_address_and_empty_addresses_are_forgotten() {
        let open = OpenPerAddress::new(1);
        let slot = open.try_open(v6(1)).expect("a place");
        assert!(open.try_open(v6(2)).is_none(), "the same /64");
        drop(slot);
        assert_eq!(open.addresses(), 0);
    }

    #[test]
    fn a_burst_is_allowed_then_one_per_refill_and_the_wait_is_said() {
        let rate = RatePerAddress::new(4);
        let start = Instant::now();
        for _ in 0..4 {
            assert_eq!(rate.take(v4(1), start), Ok(()));
        }
        let wait = rate.take(v4(1), start).expect_err("past the burst");
        assert!(wait <= Duration::from_millis(250), "{wait:?}");
        assert_eq!(
            rate.take(v4(2), start),
            Ok(()),
            "another address has its own"
        );
        assert_eq!(rate.take(v4(1), start + Duration::from_millis(250)), Ok(()));
        assert!(
            rate.take(v4(1), start + Duration::from_millis(250))
                .is_err()
        );
    }

    #[test]
    fn the_buckets_kept_are_bounded_and_full_ones_are_swept() {
        let rate = RatePerAddress::new(1);
        let start = Instant::now();
        for n in 0..RatePerAddress::CAPACITY {
            let ip = IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + n as u32));
            assert_eq!(rate.take(ClientAddress::new(ip), start), Ok(()));
        }
        assert!(
            rate.take(v4(9), start).is_err(),
            "a new address while every bucket is in use"
        );
        let later = start + Duration::from_secs(2);
        assert_eq!(rate.take(v4(9), later), Ok(()), "refilled buckets swept");
        assert_eq!(lock(&rate.buckets).by_address.len(), 1);
    }

    fn from(last: u8) -> ClientAddress {
        ClientAddress::new(IpAddr::V4(Ipv4Addr::new(198, 51, 100, last)))
    }

    fn settings(max: usize, reserved: usize, per_address: usize) -> ConnectionSettings {
        ConnectionSettings {
            max_connections: Some(max),
            reserved: Some(reserved),
            max_per_address: per_address,
            ..ConnectionSettings::default()
        }
    }

    #[test]
    fn the_last_connections_under_the_cap_are_the_reserve_and_past_it_none_is_admitted() {
        let connections = Connections::new(&settings(3, 1, 10), 20_000);
        let mut held = Vec::new();
        for (n, expect_reserved) in [(1, false), (2, false), (3, true)] {
            match connections.admit(from(n)) {
                Admission::Admitted { place, reserved } => {
                    assert_eq!(reserved, expect_reserved, "connection {n}");
                    held.push(place);
                }
                other => panic!("connection {n}: {other:?}"),
            }
        }
        assert!(matches!(connections.admit(from(4)), Admission::Full));
        assert_eq!(connections.open(), 3);
        held.pop();
        assert_eq!(connections.open(), 2);
        assert!(matches!(
            connections.admit(from(4)),
            Admission::Admitted { reserved: true, .. }
        ));
    }

    #[test]
    fn one_address_cannot_take_more_than_its_share_and_a_refusal_holds_no_place() {
        let connections = Connections::new(&settings(100, 0, 2), 20_000);
        let _a = connections.admit(from(1));
        let _b = connections.admit(from(1));
        assert!(matches!(connections.admit(from(1)), Admission::AddressFull));
        assert_eq!(connections.open(), 2, "the refused one is not counted");
        assert!(matches!(
            connections.admit(from(2)),
            Admission::Admitted { .. }
        ));
    }

    #[test]
    fn a_proxys_connections_hold_no_place_under_its_address_but_its_requests_hold_their_clients() {
        let connections = Connections::new(&settings(2, 0, 1), 20_000);
        let proxy = from(1);
        let _a = connections.admit_from_proxy();
        let _b = connections.admit_from_proxy();
        assert_eq!(
            connections.held_by(proxy),
            0,
            "more than its cap of one, uncounted"
        );
        assert!(
            matches!(connections.admit_from_proxy(), Admission::Full),
            "the instance-wide cap still holds"
        );
        let client = from(7);
        let place = connections.hold_for(client).expect("a place");
        assert!(
            connections.hold_for(client).is_none(),
            "past the client's cap"
        );
        assert!(connections.hold_for(from(8)).is_some(), "another client");
        drop(place);
        assert!(
            connections.hold_for(client).is_some(),
            "the place came back"
        );
    }
}
