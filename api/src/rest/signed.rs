//! Reading a signed request: the secret must be configured, the body within limits, the signature
//! good over the exact bytes received — and only then is the body parsed as JSON.
//!
//! The agent routes first find out which agent is asking (docs/contract.md#agents): no
//! `X-Askloop-Agent` header is the built-in default agent (`CHOVY_SIGNING_SECRET`); a header names
//! a registered agent, whose own secrets the signature must match. An unknown slug is refused
//! exactly like a bad signature, and a disabled agent's signed request gets 403.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use serde_json::Value;

use entity::agents::AgentStatus;

use crate::domain::agents::{AGENT_HEADER, new_secret};
use crate::domain::signing::{SIGNATURE_HEADER, SignatureError, SigningKeys, request_digest};
use crate::domain::text::first_control_character;
use crate::error::ServiceError;
use crate::service::agents::registry::{self, Asker};
use crate::state::AppState;

/// Why a signed request was refused, with a short label for the metrics.
pub struct Refusal {
    /// The error to answer with.
    pub error: ServiceError,
    /// The metrics label.
    pub reason: &'static str,
}

/// A verified signed request.
pub struct Signed {
    /// Its body, parsed.
    pub value: Value,
    /// What names this exact request ([`request_digest`]): the same bytes under the same `t` give
    /// the same digest.
    pub digest: String,
}

/// Verify and parse a signed JSON request.
pub fn verified_json(
    keys: &SigningKeys,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
    now: i64,
) -> Result<Signed, Refusal> {
    if !keys.is_configured() {
        return Err(Refusal {
            error: ServiceError::Unavailable(SignatureError::NoSecret.to_string()),
            reason: "no_secret",
        });
    }
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Refusal {
                error: ServiceError::TooLarge("the request body is larger than 256 KiB".into()),
                reason: "too_large",
            }
        } else {
            Refusal {
                error: ServiceError::BadInput(rejection.body_text()),
                reason: "bad_body",
            }
        }
    })?;
    // A header that is not visible ASCII cannot carry a valid signature: treat it as malformed.
    let header = match headers.get(SIGNATURE_HEADER) {
        None => None,
        Some(value) => Some(value.to_str().unwrap_or("\u{fffd}")),
    };
    let signed_at = keys.verify(header, &body, now).map_err(|err| Refusal {
        error: ServiceError::Unauthenticated(err.to_string()),
        reason: match err {
            SignatureError::NoSecret => "no_secret",
            SignatureError::Missing => "no_signature",
            SignatureError::Malformed => "malformed_signature",
            SignatureError::Expired => "expired_signature",
            SignatureError::Mismatch => "bad_signature",
        },
    })?;
    let value: Value = serde_json::from_slice(&body).map_err(|err| Refusal {
        error: ServiceError::BadInput(format!("the body is not valid JSON: {err}")),
        reason: "not_json",
    })?;
    // One check for every signed route, before any field is read: PostgreSQL cannot store NUL
    // in text, and no field has a use for the other control characters.
    if let Some(refused) = first_control_character(&value) {
        return Err(Refusal {
            error: refused.into(),
            reason: "bad_input",
        });
    }
    Ok(Signed {
        value,
        digest: request_digest(signed_at, &body),
    })
}

/// Verify a signed request and parse its JSON with `parse`: the parsed value, or the error
/// that refuses it (for the signed routes that keep no metrics of their own).
pub fn signed_and_parsed<T>(
    keys: &SigningKeys,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
    parse: impl FnOnce(&Value) -> Result<T, ServiceError>,
) -> Result<T, ServiceError> {
    let signed = verified_json(keys, headers, body, chrono::Utc::now().timestamp())
        .map_err(|refusal| refusal.error)?;
    parse(&signed.value)
}

/// Verify and parse a signed request from an agent, finding out which agent it is first.
pub async fn verified_agent_json(
    state: &AppState,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
    now: i64,
) -> Result<(Signed, Asker), Refusal> {
    let Some(named) = headers.get(AGENT_HEADER) else {
        return verified_json(&state.config.signing, headers, body, now)
            .map(|signed| (signed, Asker::Default));
    };
    // The retirement of a previous secret is judged by the clock itself, not by `now`'s whole
    // seconds: "retire at once" must not leave a second's grace.
    let at = chrono::Utc::now();
    let found = match named.to_str() {
        Ok(slug) => registry::signer(&state.db, state.config.data_key.as_ref(), slug, at)
            .await
            .map_err(|error| Refusal {
                error,
                reason: "error",
            })?,
        Err(_) => None,
    };
    let Some((asker, status, keys)) = found else {
        // An unknown agent is checked against a secret nobody holds, so every answer (no
        // signature, malformed, expired, bad) is the one a known agent would get: the response
        // never says whether the slug exists.
        let decoy = SigningKeys::new(Some(new_secret()), None);
        verified_json(&decoy, headers, body, now)?;
        return Err(Refusal {
            error: ServiceError::Unauthenticated(SignatureError::Mismatch.to_string()),
            reason: "bad_signature",
        });
    };
    let signed = verified_json(&keys, headers, body, now)?;
    if status == AgentStatus::Disabled {
        return Err(Refusal {
            error: ServiceError::Forbidden("this agent is disabled".into()),
            reason: "agent_disabled",
        });
    }
    Ok((signed, asker))
}

/// Verify an agent's signed request and parse its JSON with `parse`: the parsed value and the
/// agent, or the error that refuses it.
pub async fn agent_signed_and_parsed<T>(
    state: &AppState,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
    parse: impl FnOnce(&Value) -> Result<T, ServiceError>,
) -> Result<(T, Asker), ServiceError> {
    let (signed, asker) = verified_agent_json(state, headers, body, chrono::Utc::now().timestamp())
        .await
        .map_err(|refusal| refusal.error)?;
    Ok((parse(&signed.value)?, asker))
}
