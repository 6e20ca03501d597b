//! The agent registry (docs/contract.md#agents): registering agents, rotating their secrets,
//! disabling and enabling them, their niches and endpoints — every change audited — and the two
//! questions the signed routes and the delivery worker ask of it: which secrets does this agent
//! sign with, and where do its events go.
//!
//! The built-in default agent (no `X-Askloop-Agent` header) has no row: its secrets are
//! `CHOVY_SIGNING_SECRET(_PREVIOUS)`, its endpoint `CHOVY_WEBHOOK_URL`, and it may ask anywhere.
//!
//! By job: registering and changing agents (`changes`), reading the registry (`listing`), and
//! the secrets and destinations signing needs (`signing`).

mod changes;
mod listing;
mod signing;

pub(crate) use changes::check_url;
pub use changes::{
    Endpoint, MOST_RETIRE_SECS, NewAgent, WithSecret, admin_actor, create, find, parse_events,
    rotate, set_endpoint, set_niches, set_status, wanted_events,
};
pub use listing::{
    AgentSummary, list, list_for_admin, niche_slugs, reads_by_lookup, recent_deliveries,
};
pub use signing::{Destination, active_with_secrets, destinations, signer};

use crate::error::ServiceError;

/// How long a rotated-out secret stays accepted when nobody says otherwise: one day.
pub const DEFAULT_RETIRE_PREVIOUS_SECS: i64 = 24 * 3600;
/// The longest an agent's name may be.
pub const NAME_MAX: usize = 120;
/// The longest webhook URL accepted.
pub const URL_MAX: usize = 2000;

/// Who is making a signed request: the built-in default agent, or a registered one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asker {
    /// No `X-Askloop-Agent` header: `CHOVY_SIGNING_SECRET`'s agent, which may ask in every niche.
    Default,
    /// A registered agent, already verified and active.
    Registered {
        /// Its id.
        id: i64,
        /// Its slug.
        slug: String,
        /// The niches it may ask in.
        niche_ids: Vec<i64>,
    },
}

impl Asker {
    /// The registered agent's id, or none for the default agent (as questions store it).
    pub fn agent_id(&self) -> Option<i64> {
        match self {
            Asker::Default => None,
            Asker::Registered { id, .. } => Some(*id),
        }
    }

    /// Whether this agent may ask (or book revenue) in `niche_id`.
    pub fn may_use_niche(&self, niche_id: i64) -> bool {
        match self {
            Asker::Default => true,
            Asker::Registered { niche_ids, .. } => niche_ids.contains(&niche_id),
        }
    }

    /// The refusal for a niche that is not this agent's (asked after the signature passed).
    pub fn not_your_niche(slug: &str) -> ServiceError {
        ServiceError::Forbidden(format!("this agent may not ask in '{slug}'"))
    }
}
