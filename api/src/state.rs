//! The state every HTTP handler can reach, and the `FromRef` sub-states that let extractors and
//! handlers ask for only the part they need (the pool, the configuration, the metrics, the hub).
//! It imports nothing above the request context: assembly (`startup`) builds it; transports read
//! it.

use std::sync::Arc;

use crate::db::Db;
use axum::extract::FromRef;

use crate::config::Config;
use crate::live::{ChangeHint, LiveHub};
use crate::metrics::Metrics;
use crate::net::login_throttle::LoginThrottle;

/// What every REST handler can reach: one shared [`StateParts`]. Every request clones the state
/// (axum hands each handler and middleware its own), so a clone is one reference count, not one
/// for each pool, channel and registry inside.
#[derive(Clone)]
pub struct AppState(Arc<StateParts>);

impl AppState {
    /// The state made of `parts`.
    pub fn new(parts: StateParts) -> Self {
        Self(Arc::new(parts))
    }
}

impl std::ops::Deref for AppState {
    type Target = StateParts;

    fn deref(&self) -> &StateParts {
        &self.0
    }
}

/// The parts of [`AppState`].
pub struct StateParts {
    /// The database pool.
    pub db: Db,
    /// The configuration, built once.
    pub config: Arc<Config>,
    /// The metrics registry.
    pub metrics: Arc<Metrics>,
    /// Failed sign-ins, to slow down guessing.
    pub login_throttle: Arc<LoginThrottle>,
    /// Live updates for subscribers.
    pub live: LiveHub,
}

impl AppState {
    /// The hint writers give the live feed after they commit.
    pub fn hint(&self) -> ChangeHint {
        self.live.hint()
    }
}

impl FromRef<AppState> for Db {
    fn from_ref(state: &AppState) -> Self {
        state.db.clone()
    }
}

impl FromRef<AppState> for Arc<Config> {
    fn from_ref(state: &AppState) -> Self {
        state.config.clone()
    }
}

impl FromRef<AppState> for Arc<Metrics> {
    fn from_ref(state: &AppState) -> Self {
        state.metrics.clone()
    }
}

impl FromRef<AppState> for LiveHub {
    fn from_ref(state: &AppState) -> Self {
        state.live.clone()
    }
}

impl FromRef<AppState> for Arc<LoginThrottle> {
    fn from_ref(state: &AppState) -> Self {
        state.login_throttle.clone()
    }
}
