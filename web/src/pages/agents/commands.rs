//! What an admin does on the agents page, one mutation each: registering an agent (which makes
//! its signing secret), rotating its secret, disabling and enabling it, and changing its niches
//! and endpoint; and what each tells the admin when it worked. A secret made here is handed back
//! once, to be shown once (docs/contract.md#agents); it is never kept anywhere else.

use crate::api::{self, ApiError};
use crate::components::time_ago::exact;
use crate::operations::{
    CreateAgent, DisableAgent, EnableAgent, RotateAgentSecret, SetAgentEndpoint, SetAgentNiches,
    create_agent, disable_agent, enable_agent, rotate_agent_secret, set_agent_endpoint,
    set_agent_niches,
};
use crate::vocab::WebhookScheme;

/// Something an admin does on this page: one mutation each.
#[derive(Clone)]
pub(super) enum Command {
    /// Register an agent in `niches`, with its endpoint (`url`, signed by `scheme`).
    Register {
        slug: String,
        name: String,
        niches: Vec<String>,
        url: Option<String>,
        scheme: WebhookScheme,
    },
    /// Give an agent a new secret; the previous one stays accepted `retire_in_seconds`.
    Rotate {
        slug: String,
        retire_in_seconds: i64,
    },
    /// Stop an agent: its signed requests are refused and its events wait.
    Disable { slug: String },
    /// Let a disabled agent work again.
    Enable { slug: String },
    /// Change the niches an agent asks in.
    SetNiches { slug: String, niches: Vec<String> },
    /// Change where an agent's events go, how they are signed and which it wants.
    SetEndpoint {
        slug: String,
        url: Option<String>,
        scheme: WebhookScheme,
        events: Vec<String>,
    },
}

/// A secret just made, to show this once.
#[derive(Clone)]
pub(super) struct Revealed {
    /// The agent it signs for.
    pub(super) slug: String,
    /// `whsec_…`.
    pub(super) secret: String,
}

/// What a command did: the words for the notice, and the secret it made, if it made one.
pub(super) struct Done {
    /// The notice.
    pub(super) said: String,
    /// The secret it made, to show once.
    pub(super) secret: Option<Revealed>,
}

impl Done {
    /// A notice, and no secret.
    fn said(said: String) -> Self {
        Self { said, secret: None }
    }
}

impl Command {
    /// Send the mutation; what to tell the admin when it worked.
    pub(super) async fn run(self) -> Result<Done, ApiError> {
        Ok(match self {
            Self::Register {
                slug,
                name,
                niches,
                url,
                scheme,
            } => {
                let input = create_agent::CreateAgentInput {
                    slug,
                    name,
                    niches,
                    endpoint: Some(create_agent::AgentEndpointInput {
                        url,
                        scheme,
                        events: Vec::new(),
                    }),
                };
                let made = api::run::<CreateAgent>(create_agent::Variables { input })
                    .await?
                    .create_agent;
                let slug = made.agent.slug;
                Done {
                    said: format!(
                        "{slug} is registered. Copy its signing secret now: it is shown only this once."
                    ),
                    secret: Some(Revealed {
                        slug,
                        secret: made.secret,
                    }),
                }
            }
            Self::Rotate {
                slug,
                retire_in_seconds,
            } => {
                let made = api::run::<RotateAgentSecret>(rotate_agent_secret::Variables {
                    slug,
                    retire_previous_in_seconds: retire_in_seconds,
                })
                .await?
                .rotate_agent_secret;
                let slug = made.agent.slug;
                let previous = match made.agent.previous_secret_retires_at {
                    Some(at) if retire_in_seconds > 0 => {
                        format!("the previous one is still accepted until {}", exact(&at))
                    }
                    _ => "the previous one is retired".to_owned(),
                };
                Done {
                    said: format!(
                        "{slug} has a new signing secret and {previous}. Copy the new one now: it is shown only this once."
                    ),
                    secret: Some(Revealed {
                        slug,
                        secret: made.secret,
                    }),
                }
            }
            Self::Disable { slug } => {
                let done =
                    format!("{slug} is disabled: its signed requests get 403 and its events wait.");
                api::send::<DisableAgent>(disable_agent::Variables { slug }).await?;
                Done::said(done)
            }
            Self::Enable { slug } => {
                let done = format!("{slug} is active again: its waiting events are sent.");
                api::send::<EnableAgent>(enable_agent::Variables { slug }).await?;
                Done::said(done)
            }
            Self::SetNiches { slug, niches } => {
                let done = format!("The niches of {slug} are saved.");
                api::send::<SetAgentNiches>(set_agent_niches::Variables { slug, niches }).await?;
                Done::said(done)
            }
            Self::SetEndpoint {
                slug,
                url,
                scheme,
                events,
            } => {
                let done = format!("The endpoint of {slug} is saved.");
                let endpoint = set_agent_endpoint::AgentEndpointInput {
                    url,
                    scheme,
                    events,
                };
                api::send::<SetAgentEndpoint>(set_agent_endpoint::Variables { slug, endpoint })
                    .await?;
                Done::said(done)
            }
        })
    }
}
