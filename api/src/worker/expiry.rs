//! The expiry sweeper: every `ASKLOOP_EXPIRY_SWEEP_MS` it expires waiting questions whose time
//! has passed, then takes the escalation steps that are due (the services make each expiry and
//! each step conditional, so instances can race safely). Expiry goes first: a question whose
//! time ran out never escalates.

use chrono::Utc;

use super::WorkerContext;
use crate::service::{questions::escalation, questions::expiry};

/// How many questions one sweep expires at most; the next tick takes the rest.
const SWEEP_LIMIT: u64 = 100;

/// Sweep on every tick until the process stops.
pub(super) async fn sweep_forever(context: WorkerContext) {
    let mut tick = tokio::time::interval(context.config.delivery.sweep_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match expiry::sweep(&context.db, &context.hint, SWEEP_LIMIT, Utc::now()).await {
            Ok(0) => {}
            Ok(count) => tracing::info!(count, "expired questions past their time"),
            Err(err) => {
                tracing::warn!(error = %err, "the expiry sweep failed; it runs again shortly")
            }
        }
        match escalation::sweep(&context.db, &context.hint, SWEEP_LIMIT, Utc::now()).await {
            Ok(0) => {}
            Ok(count) => tracing::info!(count, "questions escalated"),
            Err(err) => {
                tracing::warn!(error = %err, "the escalation sweep failed; it runs again shortly")
            }
        }
    }
}
