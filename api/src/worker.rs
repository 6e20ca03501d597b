//! Background work of a serving askloop: the outbox worker (`delivery`) and the expiry sweeper
//! (`expiry`). Assembly starts them with [`spawn`] and stops them by cancelling the token it
//! passes in; each loop finishes the step it is in (a claimed delivery is sent again by another
//! worker once its lease runs out if it is cut off).

use std::sync::Arc;

use crate::db::Db;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::live::ChangeHint;

mod delivery;
mod expiry;
mod lanes;
mod mail;

/// What the loops need: the pool, the configuration and the live hint for what they change.
#[derive(Clone)]
pub struct WorkerContext {
    /// The database pool.
    pub db: Db,
    /// The configuration.
    pub config: Arc<Config>,
    /// Woken after each committed change subscribers may see.
    pub hint: ChangeHint,
}

/// Start the expiry sweeper and the delivery worker; both stop when `stop` is cancelled.
///
/// The delivery worker always runs, since registered agents have endpoints of their own; the
/// default agent's events are sent only when `CHOVY_WEBHOOK_URL` is set.
pub fn spawn(context: WorkerContext, stop: CancellationToken) {
    let sweeper = context.clone();
    tokio::spawn(
        stop.clone()
            .run_until_cancelled_owned(expiry::sweep_forever(sweeper)),
    );
    if context.config.webhook_url.is_none() {
        tracing::info!(
            "CHOVY_WEBHOOK_URL is not set: the default agent's events wait in the outbox and it reads them through the lookup route"
        );
    }
    match context.config.mail.clone() {
        Some(settings) => {
            tokio::spawn(
                stop.clone()
                    .run_until_cancelled_owned(mail::mail_forever(context.clone(), settings)),
            );
        }
        None => tracing::info!("ASKLOOP_SMTP_URL is not set: no mail is sent"),
    }
    tokio::spawn(stop.run_until_cancelled_owned(delivery::deliver_forever(context)));
}
