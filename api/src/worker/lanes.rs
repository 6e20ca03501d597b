//! The delivery worker's lanes (docs/security.md#outbound): how many sends each class of
//! receiver (agents, operator webhooks) and each endpoint has in flight in this instance, and
//! each endpoint's circuit breaker. What a claim may take follows from them: a class claims only
//! into its own free slots, an endpoint whose breaker is open is not claimed for, and one whose
//! breaker is probing gets one delivery at a time.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::config::LaneSettings;
use crate::domain::delivery::{Breaker, BreakerState};
use crate::service::agents::outbox::{ClaimRequest, Class, Lane};

/// How a send went, as far as its endpoint's breaker is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Heard {
    /// An HTTP response came back (any status): the endpoint is there.
    Answered,
    /// No response within the timeout: a slot was held for nothing.
    NoAnswer,
    /// Nothing was held up: nothing was sent (released, dropped, refused before connecting), or
    /// the connection failed at once.
    NotSent,
}

/// The in-flight counts and breakers of one worker.
#[derive(Debug)]
pub(super) struct Lanes {
    settings: LaneSettings,
    in_flight: HashMap<Class, usize>,
    per_endpoint: HashMap<Lane, usize>,
    breakers: HashMap<Lane, Breaker<Instant>>,
}

impl Lanes {
    /// No sends in flight, every breaker closed.
    pub(super) fn new(settings: LaneSettings) -> Self {
        Self {
            settings,
            in_flight: HashMap::new(),
            per_endpoint: HashMap::new(),
            breakers: HashMap::new(),
        }
    }

    fn slots(&self, class: Class) -> usize {
        match class {
            Class::Agents => self.settings.agent_slots,
            Class::Hooks => self.settings.hook_slots,
        }
    }

    fn share(&self, class: Class) -> usize {
        match class {
            Class::Agents => self.settings.agent_per_endpoint,
            Class::Hooks => self.settings.hook_per_endpoint,
        }
    }

    /// How many more sends `class` may start now.
    pub(super) fn free(&self, class: Class) -> usize {
        self.slots(class)
            .saturating_sub(self.in_flight.get(&class).copied().unwrap_or(0))
    }

    /// What a claim for `class` may take at `now`.
    pub(super) fn request(
        &self,
        class: Class,
        now: Instant,
        lease: Duration,
        default_has_url: bool,
    ) -> ClaimRequest {
        let mut skip = Vec::new();
        let mut probing = Vec::new();
        for (lane, breaker) in &self.breakers {
            if lane.class != class {
                continue;
            }
            match breaker.state(now) {
                BreakerState::Closed => {}
                BreakerState::Open => skip.push(lane.endpoint),
                BreakerState::Probing if self.sending_to(lane) > 0 => skip.push(lane.endpoint),
                BreakerState::Probing => probing.push(lane.endpoint),
            }
        }
        skip.sort_unstable();
        probing.sort_unstable();
        ClaimRequest {
            class,
            limit: self.free(class),
            per_endpoint: self.share(class),
            skip,
            probing,
            lease,
            default_has_url,
        }
    }

    fn sending_to(&self, lane: &Lane) -> usize {
        self.per_endpoint.get(lane).copied().unwrap_or(0)
    }

    /// A send on `lane` started.
    pub(super) fn started(&mut self, lane: Lane) {
        *self.in_flight.entry(lane.class).or_default() += 1;
        *self.per_endpoint.entry(lane).or_default() += 1;
    }

    /// A send on `lane` finished at `now`, as `heard` says.
    pub(super) fn finished(&mut self, lane: Lane, heard: Heard, now: Instant) {
        if let Some(n) = self.in_flight.get_mut(&lane.class) {
            *n = n.saturating_sub(1);
        }
        let still_sending = match self.per_endpoint.get_mut(&lane) {
            Some(n) => {
                *n = n.saturating_sub(1);
                *n
            }
            None => 0,
        };
        if still_sending == 0 {
            self.per_endpoint.remove(&lane);
        }
        let breaker = self.breakers.entry(lane).or_default();
        match heard {
            Heard::Answered => breaker.answered(),
            Heard::NoAnswer => {
                let opened = breaker.state(now) == BreakerState::Closed;
                breaker.no_answer(&self.settings.breaker, now);
                if opened && breaker.state(now) == BreakerState::Open {
                    tracing::warn!(
                        class = ?lane.class,
                        endpoint = lane.endpoint,
                        cooldown = ?self.settings.breaker.cooldown,
                        "an endpoint keeps not answering; its deliveries wait untried for the cooldown"
                    );
                }
            }
            Heard::NotSent => {}
        }
        // Only endpoints with something to remember are kept, so the map stays as small as the
        // set of endpoints that are failing now.
        if breaker.is_forgettable() {
            self.breakers.remove(&lane);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::delivery::BreakerPolicy;

    fn lanes() -> Lanes {
        Lanes::new(LaneSettings {
            agent_slots: 4,
            agent_per_endpoint: 2,
            hook_slots: 2,
            hook_per_endpoint: 1,
            breaker: BreakerPolicy {
                failures: 2,
                cooldown: Duration::from_secs(30),
            },
        })
    }

    fn hook(id: i64) -> Lane {
        Lane {
            class: Class::Hooks,
            endpoint: id,
        }
    }

    fn agent(id: i64) -> Lane {
        Lane {
            class: Class::Agents,
            endpoint: id,
        }
    }

    fn request(lanes: &Lanes, class: Class, now: Instant) -> ClaimRequest {
        lanes.request(class, now, Duration::from_secs(40), true)
    }

    #[test]
    fn operator_webhooks_filling_their_slots_leave_the_agents_theirs() {
        let mut lanes = lanes();
        lanes.started(hook(1));
        lanes.started(hook(2));
        assert_eq!(lanes.free(Class::Hooks), 0);
        assert_eq!(lanes.free(Class::Agents), 4);
        let now = Instant::now();
        assert_eq!(request(&lanes, Class::Agents, now).limit, 4);
        assert_eq!(request(&lanes, Class::Hooks, now).per_endpoint, 1);
        lanes.finished(hook(1), Heard::Answered, now);
        assert_eq!(lanes.free(Class::Hooks), 1);
    }

    #[test]
    fn an_endpoint_that_keeps_not_answering_is_skipped_then_probed_once() {
        let mut lanes = lanes();
        let start = Instant::now();
        for _ in 0..2 {
            lanes.started(agent(7));
            lanes.finished(agent(7), Heard::NoAnswer, start);
        }
        let open = request(&lanes, Class::Agents, start + Duration::from_secs(1));
        assert_eq!((open.skip, open.probing), (vec![7], vec![]));
        assert!(
            request(&lanes, Class::Hooks, start).skip.is_empty(),
            "another class's breaker is not this one's"
        );
        let later = start + Duration::from_secs(31);
        let probe = request(&lanes, Class::Agents, later);
        assert_eq!((probe.skip, probe.probing), (vec![], vec![7]));
        // While its probe is out, nothing more is claimed for it.
        lanes.started(agent(7));
        assert_eq!(request(&lanes, Class::Agents, later).skip, vec![7]);
        // The probe is answered: the endpoint is back, and nothing is kept about it.
        lanes.finished(agent(7), Heard::Answered, later);
        let closed = request(&lanes, Class::Agents, later);
        assert!(closed.skip.is_empty() && closed.probing.is_empty());
        assert!(lanes.breakers.is_empty() && lanes.per_endpoint.is_empty());
    }

    #[test]
    fn a_probe_without_an_answer_opens_the_breaker_again() {
        let mut lanes = lanes();
        let start = Instant::now();
        for _ in 0..2 {
            lanes.started(hook(3));
            lanes.finished(hook(3), Heard::NoAnswer, start);
        }
        let later = start + Duration::from_secs(31);
        lanes.started(hook(3));
        lanes.finished(hook(3), Heard::NoAnswer, later);
        assert_eq!(
            request(&lanes, Class::Hooks, later + Duration::from_secs(29)).skip,
            vec![3]
        );
        assert_eq!(
            request(&lanes, Class::Hooks, later + Duration::from_secs(30)).probing,
            vec![3]
        );
    }

    #[test]
    fn what_was_not_sent_changes_no_breaker() {
        let mut lanes = lanes();
        let now = Instant::now();
        lanes.started(hook(4));
        lanes.finished(hook(4), Heard::NoAnswer, now);
        for _ in 0..5 {
            lanes.started(hook(4));
            lanes.finished(hook(4), Heard::NotSent, now);
        }
        assert!(request(&lanes, Class::Hooks, now).skip.is_empty());
        assert_eq!(lanes.free(Class::Hooks), 2);
    }
}
