//! `askloop agent …`: the agent registry at the command line (docs/contract.md#agents). Secrets
//! and agent tokens are printed once, on stdout alone, so `askloop agent rotate x > secret` (or
//! `askloop agent token x > token`) captures only them;
//! everything else goes to stderr. Every change is audited with the actor `cli`.

use chrono::Utc;
use clap::{Subcommand, ValueEnum};
use entity::agents::{AgentStatus, WebhookScheme};

use crate::config::Config;
use crate::domain::agents::AgentSlug;
use crate::service::agents::agent_tokens;
use crate::service::agents::registry::{
    self, AgentSummary, DEFAULT_RETIRE_PREVIOUS_SECS, Endpoint, NewAgent, parse_events,
    wanted_events,
};
use crate::service::audit::Actor;
use crate::startup;

/// `askloop agent …`.
#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Register an agent; its signing secret is printed once and never again.
    Create {
        /// 2..40 of a-z, 0-9 and '-': what it sends in X-Askloop-Agent.
        #[arg(long)]
        slug: String,
        /// Display name.
        #[arg(long)]
        name: String,
        /// A niche it may ask in; repeat for more (at least one).
        #[arg(long = "niche", required = true)]
        niches: Vec<String>,
        /// Where its events are POSTed (none: they wait in the outbox).
        #[arg(long)]
        webhook_url: Option<String>,
        /// How its events are signed.
        #[arg(long, value_enum, default_value_t = SchemeArg::Chovy)]
        scheme: SchemeArg,
        /// An event it wants (e.g. expert_answer.created); repeat for more; none means all.
        #[arg(long = "event")]
        events: Vec<String>,
    },
    /// Give an agent a new signing secret (printed once); the previous one stays accepted, and
    /// is signed with too, until it retires.
    Rotate {
        /// The agent.
        slug: String,
        /// Seconds until the previous secret retires (0: at once).
        #[arg(long, default_value_t = DEFAULT_RETIRE_PREVIOUS_SECS)]
        retire_previous_in: i64,
    },
    /// Disable an agent: its signed requests get 403 and its events wait until it is enabled.
    Disable {
        /// The agent.
        slug: String,
    },
    /// Enable a disabled agent; its waiting events are sent.
    Enable {
        /// The agent.
        slug: String,
    },
    /// Issue an agent token for the MCP server (`/mcp`), printed once and never again; the
    /// agent's other tokens stay valid until revoked.
    Token {
        /// The agent.
        slug: String,
    },
    /// Revoke an agent's tokens: all of them, or the one shown as `--prefix`.
    RevokeToken {
        /// The agent.
        slug: String,
        /// Only the token starting with this (as `agent token` showed it, e.g. al_agent_1a2b3c4d).
        #[arg(long)]
        prefix: Option<String>,
    },
    /// List the registered agents (never their secrets).
    List,
}

/// How an agent's events are signed.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SchemeArg {
    /// X-Chovy-Signature: t=…,v1=<hex>.
    Chovy,
    /// Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature.
    Standard,
}

impl From<SchemeArg> for WebhookScheme {
    fn from(scheme: SchemeArg) -> Self {
        match scheme {
            SchemeArg::Chovy => WebhookScheme::Chovy,
            SchemeArg::Standard => WebhookScheme::Standard,
        }
    }
}

fn describe(summary: &AgentSummary) -> String {
    let agent = &summary.agent;
    let events = wanted_events(agent);
    format!(
        "{}\t{}\t{}\tniches: {}\tendpoint: {} ({})\tevents: {}",
        agent.slug,
        match agent.status {
            AgentStatus::Active => "active",
            AgentStatus::Disabled => "disabled",
        },
        agent.name,
        summary.niches.join(","),
        agent.webhook_url.as_deref().unwrap_or("none"),
        match agent.scheme {
            WebhookScheme::Chovy => "chovy",
            WebhookScheme::Standard => "standard",
        },
        if events.is_empty() {
            "all".to_owned()
        } else {
            events.join(",")
        },
    )
}

/// Run one `askloop agent` command.
pub async fn run(config: Config, command: AgentCommand) -> anyhow::Result<()> {
    let db = startup::connect_for_a_command(&config).await?;
    let key = config.data_key.as_ref();
    let now = Utc::now();
    match command {
        AgentCommand::Create {
            slug,
            name,
            niches,
            webhook_url,
            scheme,
            events,
        } => {
            let new = NewAgent {
                slug: AgentSlug::parse(&slug)?,
                name,
                niches,
                endpoint: Endpoint {
                    url: webhook_url,
                    scheme: scheme.into(),
                    events: parse_events(&events)?,
                },
            };
            let created = registry::create(&db, key, new, &Actor::Cli, now).await?;
            eprintln!("registered {}", describe(&created.summary));
            eprintln!("its signing secret (shown once; keep it safe):");
            println!("{}", created.secret);
        }
        AgentCommand::Rotate {
            slug,
            retire_previous_in,
        } => {
            let rotated =
                registry::rotate(&db, key, &slug, retire_previous_in, &Actor::Cli, now).await?;
            let retires = rotated
                .summary
                .agent
                .previous_retires_at
                .map_or_else(String::new, |at| at.to_rfc3339());
            eprintln!("rotated '{slug}'; the previous secret is accepted until {retires}");
            eprintln!("the new signing secret (shown once; keep it safe):");
            println!("{}", rotated.secret);
        }
        AgentCommand::Disable { slug } => {
            let agent =
                registry::set_status(&db, &slug, AgentStatus::Disabled, &Actor::Cli, now).await?;
            println!("disabled {}", describe(&agent));
        }
        AgentCommand::Enable { slug } => {
            let agent =
                registry::set_status(&db, &slug, AgentStatus::Active, &Actor::Cli, now).await?;
            println!("enabled {}", describe(&agent));
        }
        AgentCommand::Token { slug } => {
            let issued = agent_tokens::issue(&db, &slug, &Actor::Cli, now).await?;
            eprintln!(
                "issued a token for '{slug}' ({}…); send it as Authorization: Bearer <token> to /mcp",
                issued.row.prefix
            );
            eprintln!("the token (shown once; keep it safe):");
            println!("{}", issued.token);
        }
        AgentCommand::RevokeToken { slug, prefix } => {
            let revoked =
                agent_tokens::revoke(&db, &slug, prefix.as_deref(), &Actor::Cli, now).await?;
            if revoked.is_empty() {
                anyhow::bail!(
                    "'{slug}' has no live token{}",
                    prefix.map_or_else(String::new, |p| format!(" shown as '{p}'"))
                );
            }
            println!(
                "revoked {} token(s) of '{slug}': {}",
                revoked.len(),
                revoked.join(", ")
            );
        }
        AgentCommand::List => {
            for agent in registry::list(&db).await? {
                println!("{}", describe(&agent));
            }
        }
    }
    Ok(())
}
