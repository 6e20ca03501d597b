//! The outbox worker: sends due deliveries to the endpoint of the agent that asked — a registered
//! agent's own URL and scheme, or `CHOVY_WEBHOOK_URL` for the default agent — signed afresh at
//! every attempt, with a timeout, and records each attempt. It stops when askloop shuts down; a
//! delivery cut off mid-send is claimed and sent again once its lease runs out.

use std::collections::HashMap;
use std::time::Instant;

use chrono::Utc;
use futures::StreamExt;
use rand::Rng;

use super::WorkerContext;
use entity::agents::WebhookScheme;

use crate::domain::agents::standard_signature_header;
use crate::domain::delivery::{RetryPolicy, parse_retry_after};
use crate::domain::signing::{SIGNATURE_HEADER, SigningKeys};
use crate::service::{agents, operator_hooks, outbox};

/// How many deliveries are sent at once, and so how many one claim takes: every claimed row is
/// sent at once, so none waits in the worker while its lease runs down.
const IN_FLIGHT: usize = 8;
const BATCH: u64 = IN_FLIGHT as u64;

/// Claim and send due deliveries until the process stops.
pub(super) async fn deliver_forever(state: WorkerContext) {
    let settings = state.config.delivery;
    // Redirects are never followed: the signed envelope goes to the configured URL only, and a
    // 3xx is a failed attempt (its Location is recorded), not a reason to send it elsewhere.
    let client = match reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(settings.timeout)
        .user_agent(concat!("askloop/", env!("CARGO_PKG_VERSION")))
        .build()
    {
        Ok(client) => client,
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
    loop {
        let default_has_url = state.config.webhook_url.is_some();
        let claimed = match outbox::claim_due(
            &state.db,
            BATCH,
            settings.lease,
            default_has_url,
            Utc::now(),
        )
        .await
        {
            Ok(claimed) => claimed,
            Err(err) => {
                tracing::warn!(error = %err, "claiming deliveries failed; trying again shortly");
                Vec::new()
            }
        };
        if claimed.is_empty() {
            tokio::time::sleep(settings.poll).await;
            continue;
        }
        let agent_ids: Vec<i64> = claimed.iter().filter_map(|c| c.delivery.agent_id).collect();
        let destinations = match agents::destinations(
            &state.db,
            state.config.data_key.as_ref(),
            &agent_ids,
            Utc::now(),
        )
        .await
        {
            Ok(found) => found,
            Err(err) => {
                tracing::warn!(error = %err, "reading agents' endpoints failed; their deliveries are sent once the claims run out");
                HashMap::new()
            }
        };
        futures::stream::iter(claimed)
            .for_each_concurrent(IN_FLIGHT, |claimed| {
                let (state, client, destinations) = (&state, &client, &destinations);
                async move {
                    let Some(destination) = destination_of(state, destinations, &claimed).await else {
                        // Disabled (or left without a URL) since the claim: it waits, unsent.
                        if let Err(err) = outbox::release(&state.db, &claimed, Utc::now()).await {
                            tracing::warn!(error = %err, "a claim could not be released; it runs out");
                        }
                        return;
                    };
                    let attempt = send(state, client, &destination, &claimed).await;
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
                }
            })
            .await;
    }
}

/// Where one delivery goes: an operator webhook's URL and secret, the default agent's URL and
/// secrets, or its registered agent's destination (none when it may not be sent to now).
async fn destination_of(
    state: &WorkerContext,
    destinations: &HashMap<i64, agents::Destination>,
    claimed: &outbox::Claimed,
) -> Option<agents::Destination> {
    if let Some(webhook_id) = claimed.delivery.webhook_id {
        return match operator_hooks::destination(
            &state.db,
            state.config.data_key.as_ref(),
            webhook_id,
        )
        .await
        {
            Ok(found) => found.map(|(url, secret)| agents::Destination {
                url,
                scheme: WebhookScheme::Chovy,
                secrets: vec![secret],
            }),
            Err(err) => {
                tracing::warn!(error = %err, "reading an operator webhook failed");
                None
            }
        };
    }
    match claimed.delivery.agent_id {
        Some(agent_id) => destinations.get(&agent_id).cloned(),
        None => state
            .config
            .webhook_url
            .clone()
            .map(|url| agents::Destination {
                url,
                scheme: WebhookScheme::Chovy,
                secrets: Vec::new(),
            }),
    }
}

/// POST the envelope, signed now by the destination's scheme, and say how it went.
async fn send(
    state: &WorkerContext,
    client: &reqwest::Client,
    destination: &agents::Destination,
    claimed: &outbox::Claimed,
) -> outbox::Attempt {
    let at = Utc::now();
    let started = Instant::now();
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
                    "the agent's endpoint redirected; the envelope is not sent elsewhere"
                );
                Some(format!("HTTP {status} redirect to {location} not followed"))
            } else {
                (!response.status().is_success()).then(|| format!("HTTP {status}"))
            };
            outbox::Attempt {
                at,
                status_code: Some(status),
                duration,
                error,
                retry_after,
            }
        }
        Err(err) => outbox::Attempt {
            at,
            status_code: None,
            duration,
            error: Some(if err.is_timeout() {
                format!("no answer within {:?}", state.config.delivery.timeout)
            } else {
                format!("could not reach the agent: {}", root_cause(&err))
            }),
            retry_after: None,
        },
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
