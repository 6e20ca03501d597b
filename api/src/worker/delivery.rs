//! The outbox worker: sends due deliveries to the endpoint of the agent that asked — a registered
//! agent's own URL and scheme, or `CHOVY_WEBHOOK_URL` for the default agent — and to operator
//! webhooks, signed afresh at every attempt, with a timeout, and records each attempt. It stops
//! when askloop shuts down; a delivery cut off mid-send is claimed and sent again once its lease
//! runs out.
//!
//! Every receiver has its own lane (docs/security.md#outbound): agents and operator webhooks
//! have slots of their own, each endpoint at most its share, and each send runs on its own, so
//! the worker claims again as soon as a slot frees — no response, however slow, holds up any
//! other. An endpoint that keeps not answering is left alone by its breaker ([`lanes`]).
//!
//! A member's webhook reaches only public addresses: its client resolves names through a
//! resolver that keeps only those ([`crate::outbound`]), and a literal address is checked before
//! connecting. Redirects are never followed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use rand::Rng;
use tokio::task::JoinSet;

use super::WorkerContext;
use super::lanes::{Heard, Lanes};
use entity::agents::WebhookScheme;

use crate::domain::addresses::NOT_PUBLIC;
use crate::domain::agents::standard_signature_header;
use crate::domain::delivery::{RetryPolicy, parse_retry_after};
use crate::domain::signing::{SIGNATURE_HEADER, SigningKeys};
use crate::outbound;
use crate::service::agents::outbox::{Class, Lane};
use crate::service::{agents::a2a_tasks, agents::outbox, agents::registry, reach::operator_hooks};

/// The two HTTP clients: one for agents and admins' webhooks, which may be on private networks,
/// and one for members' webhooks, which reaches only public addresses.
struct Clients {
    anywhere: reqwest::Client,
    public_only: reqwest::Client,
}

impl Clients {
    fn build(config: &crate::config::Config) -> reqwest::Result<Self> {
        // Redirects are never followed: the signed envelope goes to the configured URL only, and
        // a 3xx is a failed attempt (its Location is recorded), not a reason to send it elsewhere.
        let base = || {
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(config.delivery.timeout)
                .user_agent(concat!("askloop/", env!("CARGO_PKG_VERSION")))
        };
        Ok(Self {
            anywhere: base().dns_resolver2(config.resolver.resolver()).build()?,
            // No proxy either: a proxy would connect to whatever the URL names, past the check.
            public_only: base()
                .dns_resolver2(config.resolver.public_only())
                .no_proxy()
                .build()?,
        })
    }
}

/// Where one claimed delivery goes now.
struct Target {
    destination: registry::Destination,
    /// A member's webhook, or an A2A push to a host other than its agent's endpoint's: public
    /// addresses only.
    public_only: bool,
    /// Headers the receiver asked for (an A2A push config's token and `Authorization`).
    headers: Vec<(String, String)>,
}

/// What to do with one claimed delivery.
enum Plan {
    Send(Target),
    /// Its receiver cannot take it now (an agent disabled since the claim, a removed webhook):
    /// it waits, unsent.
    Wait,
    /// Its webhook's owner may no longer hear of the niche: never sent.
    Drop(&'static str),
}

/// Claim and send due deliveries until the process stops.
pub(super) async fn deliver_forever(state: WorkerContext) {
    let settings = state.config.delivery;
    let clients = match Clients::build(&state.config) {
        Ok(clients) => Arc::new(clients),
        Err(err) => {
            tracing::error!(error = %err, "cannot build the webhook client; nothing will be delivered");
            return;
        }
    };
    let policy = RetryPolicy {
        base: settings.retry_base,
        max: settings.retry_max,
        window: settings.retry_window,
    };
    let mut lanes = Lanes::new(settings.lanes);
    let mut running: JoinSet<Heard> = JoinSet::new();
    let mut lane_of_task: HashMap<tokio::task::Id, Lane> = HashMap::new();
    // Which classes to look for due work for: at start, at every poll, and when one of its
    // sends finishes (a slot is free, and the endpoint may have more waiting).
    let mut look = HashMap::from([(Class::Agents, true), (Class::Hooks, true)]);
    let mut next_poll = tokio::time::Instant::now() + settings.poll;
    loop {
        for class in [Class::Agents, Class::Hooks] {
            if !look.get(&class).copied().unwrap_or(false) || lanes.free(class) == 0 {
                continue;
            }
            look.insert(class, false);
            let request = lanes.request(
                class,
                Instant::now(),
                settings.lease,
                state.config.webhook_url.is_some(),
            );
            let claimed = match outbox::claim_due(&state.db, &request, Utc::now()).await {
                Ok(claimed) => claimed,
                Err(err) => {
                    tracing::warn!(error = %err, "claiming deliveries failed; trying again shortly");
                    continue;
                }
            };
            if claimed.len() >= request.limit {
                // Every free slot was filled; more may be due once one frees.
                look.insert(class, true);
            }
            for claimed in claimed {
                let lane = Lane::of(&claimed.delivery);
                lanes.started(lane);
                let task = running.spawn(send_one(state.clone(), clients.clone(), policy, claimed));
                lane_of_task.insert(task.id(), lane);
            }
        }
        tokio::select! {
            Some(done) = running.join_next_with_id(), if !running.is_empty() => {
                let (id, heard) = match done {
                    Ok((id, heard)) => (id, heard),
                    Err(err) => {
                        tracing::error!(error = %err, "a delivery task failed; its lease runs out and it is sent again");
                        (err.id(), Heard::NotSent)
                    }
                };
                if let Some(lane) = lane_of_task.remove(&id) {
                    lanes.finished(lane, heard, Instant::now());
                    look.insert(lane.class, true);
                }
            }
            () = tokio::time::sleep_until(next_poll) => {
                next_poll = tokio::time::Instant::now() + settings.poll;
                look.insert(Class::Agents, true);
                look.insert(Class::Hooks, true);
            }
        }
    }
}

/// Send one claimed delivery (or let it wait, or drop it) and record how it went.
async fn send_one(
    state: WorkerContext,
    clients: Arc<Clients>,
    policy: RetryPolicy,
    claimed: outbox::Claimed,
) -> Heard {
    let target = match plan_for(&state, &claimed).await {
        Plan::Send(target) => target,
        Plan::Wait => {
            if let Err(err) = outbox::release(&state.db, &claimed, Utc::now()).await {
                tracing::warn!(error = %err, "a claim could not be released; it runs out");
            }
            return Heard::NotSent;
        }
        Plan::Drop(reason) => {
            if let Err(err) = outbox::drop_claimed(&state.db, &claimed, reason, Utc::now()).await {
                tracing::warn!(error = %err, "a delivery could not be dropped; its claim runs out");
            }
            return Heard::NotSent;
        }
    };
    let client = if target.public_only {
        &clients.public_only
    } else {
        &clients.anywhere
    };
    let (attempt, heard) = send(&state, client, &target, &claimed).await;
    let jitter = rand::rng().random::<f64>();
    match outbox::record(&state.db, &claimed, &attempt, &policy, jitter, Utc::now()).await {
        Ok(status) => tracing::info!(
            envelope = %claimed.delivery.envelope_id,
            event = %claimed.delivery.event_type,
            status = ?attempt.status_code,
            outcome = ?status,
            "delivery attempt"
        ),
        Err(err) => tracing::warn!(
            envelope = %claimed.delivery.envelope_id,
            error = %err,
            "an attempt could not be recorded; the lease runs out and it is sent again"
        ),
    }
    heard
}

/// Where one delivery goes: an operator webhook's URL and secret (while its owner may hear of
/// the niche), the default agent's URL and secrets, or its registered agent's destination (none
/// when it may not be sent to now).
async fn plan_for(state: &WorkerContext, claimed: &outbox::Claimed) -> Plan {
    let key = state.config.data_key.as_ref();
    if let Some(config) = claimed.delivery.push_config_id {
        return match a2a_tasks::push_destination(&state.db, key, config, Utc::now()).await {
            Ok(a2a_tasks::PushPlan::Send(push)) => Plan::Send(Target {
                destination: push.destination,
                public_only: push.public_only,
                headers: push.headers,
            }),
            Ok(a2a_tasks::PushPlan::Wait) => Plan::Wait,
            Ok(a2a_tasks::PushPlan::Drop) => Plan::Drop(a2a_tasks::CONFIG_DELETED),
            Err(err) => {
                tracing::warn!(error = %err, "reading an A2A push config failed");
                Plan::Wait
            }
        };
    }
    if let Some(webhook_id) = claimed.delivery.webhook_id {
        return match operator_hooks::destination(&state.db, key, webhook_id).await {
            Ok(Some(hook)) if !hook.owner_may_hear => Plan::Drop(operator_hooks::OWNER_DEPARTED),
            Ok(Some(hook)) => Plan::Send(Target {
                destination: registry::Destination {
                    url: hook.url,
                    scheme: WebhookScheme::Chovy,
                    secrets: vec![hook.secret],
                },
                public_only: !hook.owner_is_admin,
                headers: Vec::new(),
            }),
            Ok(None) => Plan::Wait,
            Err(err) => {
                tracing::warn!(error = %err, "reading an operator webhook failed");
                Plan::Wait
            }
        };
    }
    let destination = match claimed.delivery.agent_id {
        Some(agent_id) => {
            match registry::destinations(&state.db, key, &[agent_id], Utc::now()).await {
                Ok(mut found) => found.remove(&agent_id),
                Err(err) => {
                    tracing::warn!(error = %err, "reading an agent's endpoint failed");
                    None
                }
            }
        }
        None => state
            .config
            .webhook_url
            .clone()
            .map(|url| registry::Destination {
                url,
                scheme: WebhookScheme::Chovy,
                secrets: Vec::new(),
            }),
    };
    match destination {
        Some(destination) => Plan::Send(Target {
            destination,
            public_only: false,
            headers: Vec::new(),
        }),
        // Disabled (or left without a URL) since the claim: it waits, unsent.
        None => Plan::Wait,
    }
}

/// POST the envelope, signed now by the destination's scheme, and say how it went — for the
/// record, and for the endpoint's breaker, which counts only the attempts that held a slot for
/// the whole timeout (a refused connection is over at once and holds nothing up).
async fn send(
    state: &WorkerContext,
    client: &reqwest::Client,
    target: &Target,
    claimed: &outbox::Claimed,
) -> (outbox::Attempt, Heard) {
    let destination = &target.destination;
    let at = Utc::now();
    let started = Instant::now();
    // An address written in the URL never reaches the resolver: it is checked here.
    if target.public_only && outbound::literal_host_refused(&destination.url) {
        let refused = outbox::Attempt {
            at,
            status_code: None,
            duration: started.elapsed(),
            error: Some(NOT_PUBLIC.to_owned()),
            retry_after: None,
        };
        return (refused, Heard::NotSent);
    }
    let body = match claimed.delivery.webhook_id {
        // An operator webhook's `url` is stored as a path and sent absolute.
        Some(_) => absolute_url(&claimed.delivery.body, &state.config.link_origin()),
        None => claimed.delivery.body.clone(),
    };
    let mut request = client
        .post(&destination.url)
        .header("content-type", "application/json")
        .header("x-askloop-event", &claimed.delivery.event_type)
        .header("x-askloop-delivery", &claimed.delivery.envelope_id);
    for (name, value) in &target.headers {
        request = request.header(name.as_str(), value.as_str());
    }
    // The default agent signs with CHOVY_SIGNING_SECRET(_PREVIOUS); a registered agent with its
    // own secrets, current first (docs/contract.md#webhook-schemes).
    let keys = match (claimed.delivery.agent_id, claimed.delivery.webhook_id) {
        (None, None) => state.config.signing.clone(),
        _ => SigningKeys::new(
            destination.secrets.first().cloned(),
            destination.secrets.get(1).cloned(),
        ),
    };
    match destination.scheme {
        WebhookScheme::Chovy => {
            if let Some(signature) = keys.sign_header(body.as_bytes(), at.timestamp()) {
                request = request.header(SIGNATURE_HEADER, signature);
            }
        }
        WebhookScheme::Standard => {
            let envelope_id = &claimed.delivery.envelope_id;
            request = request
                .header("webhook-id", envelope_id)
                .header("webhook-timestamp", at.timestamp().to_string())
                .header(
                    "webhook-signature",
                    standard_signature_header(
                        destination.secrets.iter().map(String::as_str),
                        envelope_id,
                        at.timestamp(),
                        body.as_bytes(),
                    ),
                );
        }
    }
    let response = request.body(body).send().await;
    let duration = started.elapsed();
    match response {
        Ok(response) => {
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| parse_retry_after(v, Utc::now()));
            let error = if response.status().is_redirection() {
                let location = response
                    .headers()
                    .get("location")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("nowhere");
                // Bounded: the agent's endpoint chooses this text, and it lands in our log.
                let location: String = location.chars().take(200).collect();
                tracing::warn!(
                    envelope = %claimed.delivery.envelope_id,
                    status,
                    location = %location,
                    "the endpoint redirected; the envelope is not sent elsewhere"
                );
                Some(format!("HTTP {status} redirect to {location} not followed"))
            } else {
                (!response.status().is_success()).then(|| format!("HTTP {status}"))
            };
            let answered = outbox::Attempt {
                at,
                status_code: Some(status),
                duration,
                error,
                retry_after,
            };
            (answered, Heard::Answered)
        }
        Err(err) => {
            let (error, heard) = if outbound::is_not_public(&err) {
                (NOT_PUBLIC.to_owned(), Heard::NotSent)
            } else if err.is_timeout() {
                let waited = format!("no answer within {:?}", state.config.delivery.timeout);
                (waited, Heard::NoAnswer)
            } else {
                let why = format!("could not reach the endpoint: {}", root_cause(&err));
                (why, Heard::NotSent)
            };
            let failed = outbox::Attempt {
                at,
                status_code: None,
                duration,
                error: Some(error),
                retry_after: None,
            };
            (failed, heard)
        }
    }
}

/// `body` with its `url` (a path) made absolute under `origin`.
fn absolute_url(body: &str, origin: &str) -> String {
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(body) else {
        return body.to_owned();
    };
    if let Some(url) = value.get_mut("url")
        && let Some(path) = url.as_str().filter(|p| p.starts_with('/'))
    {
        *url = serde_json::Value::String(format!("{}{path}", origin.trim_end_matches('/')));
    }
    value.to_string()
}

fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = err;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}
