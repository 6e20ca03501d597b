//! Waiting for facts, not for time: a poll with a short interval and a generous deadline that
//! fails saying what never became true, and the readiness facts the suite waits on (a gauge on
//! `/metrics`, such as the subscriptions the live hub serves).

use std::future::Future;
use std::time::{Duration, Instant};

use crate::TestApp;

/// How long a fact may take before the test fails: generous, since a slow CI machine is not a bug.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// How often a fact is looked at again.
const INTERVAL: Duration = Duration::from_millis(20);

/// Look at `check` until it gives `Ok`, for at most `within`; fails with the last `Err`, which
/// says what is still not so.
pub async fn until_ok<T, F, Fut>(within: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + within;
    loop {
        match check().await {
            Ok(found) => return found,
            Err(still) => assert!(
                Instant::now() < deadline,
                "timed out after {within:?}: {still}"
            ),
        }
        tokio::time::sleep(INTERVAL).await;
    }
}

/// Look at `check` until it gives `Some`, for at most `within`; fails naming `what` otherwise.
pub async fn until_some<T, F, Fut>(what: &str, within: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    until_ok(within, || {
        let found = check();
        async move { found.await.ok_or_else(|| format!("waiting for {what}")) }
    })
    .await
}

/// Look at `check` until it holds, for at most [`PATIENCE`]; fails naming `what` otherwise.
pub async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    until_some(what, PATIENCE, || {
        let holds = check();
        async move { holds.await.then_some(()) }
    })
    .await;
}

/// The gauge of subscriptions askloop serves, as `/metrics` names it.
pub const SUBSCRIPTIONS_SERVED: &str = "askloop_live_subscriptions_served";

impl TestApp {
    /// The value of the gauge or counter `name` on `/metrics`.
    pub async fn gauge(&self, name: &str) -> u64 {
        gauge_at(&self.base, name).await
    }

    /// Wait until askloop serves at least `count` subscriptions: each is registered with the live
    /// hub once the gauge counts it, so a change committed afterwards reaches it.
    pub async fn until_subscriptions_served(&self, count: u64) {
        until_subscriptions_served_at(&self.base, count).await;
    }

    /// Wait until every delivery is recorded as delivered: none is left in flight.
    pub async fn until_every_delivery_delivered(&self) {
        use entity::deliveries::{self, DeliveryStatus};
        use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
        until("every delivery recorded as delivered", || async {
            deliveries::Entity::find()
                .filter(deliveries::Column::Status.ne(DeliveryStatus::Delivered))
                .count(&self.db)
                .await
                .expect("count")
                == 0
        })
        .await;
    }

    /// Wait until askloop serves exactly `count` subscriptions: the ones of sockets it closed
    /// are gone and the new ones are registered.
    pub async fn until_exactly_subscriptions_served(&self, count: u64) {
        until(
            &format!("exactly {count} subscriptions served"),
            || async move { self.gauge(SUBSCRIPTIONS_SERVED).await == count },
        )
        .await;
    }
}

/// The value of the gauge or counter `name` on the `/metrics` of the askloop at `base`.
pub async fn gauge_at(base: &str, name: &str) -> u64 {
    let text = reqwest::get(format!("{base}/metrics"))
        .await
        .expect("metrics answer")
        .text()
        .await
        .expect("metrics text");
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{name} ")))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics:\n{text}"))
}

/// Wait until the askloop at `base` serves at least `count` subscriptions.
pub async fn until_subscriptions_served_at(base: &str, count: u64) {
    until(
        &format!("{count} subscriptions served at {base}"),
        || async move { gauge_at(base, SUBSCRIPTIONS_SERVED).await >= count },
    )
    .await;
}
