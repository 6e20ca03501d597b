//! Agents' names and secrets (docs/contract.md#agents): the slug an agent names itself with in
//! `X-Askloop-Agent`, the secrets askloop generates for it, and the Standard Webhooks signature
//! (<https://www.standardwebhooks.com/>) its endpoint may ask for. Pure, like `signing`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, KeyInit, Mac};
use rand::RngCore;
use sha2::Sha256;

/// The header a registered agent names itself with on every signed request.
pub const AGENT_HEADER: &str = "x-askloop-agent";

/// The prefix of a secret as askloop shows it (Standard Webhooks' spelling).
pub const SECRET_PREFIX: &str = "whsec_";

/// How many random bytes a generated secret has.
pub const SECRET_BYTES: usize = 32;

/// A validated agent slug: 2 to 40 of `a-z`, `0-9` and `-`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSlug(String);

/// Why an agent slug was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not an agent slug: 2 to 40 characters of a-z, 0-9 and '-'")]
pub struct AgentSlugError(pub String);

impl AgentSlug {
    /// Parse `raw` exactly as given (no trimming, no lowercasing: a header names an agent by
    /// these very characters).
    pub fn parse(raw: &str) -> Result<Self, AgentSlugError> {
        let ok = (2..=40).contains(&raw.len())
            && raw
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if ok {
            Ok(Self(raw.to_owned()))
        } else {
            // Bounded: the refused text is echoed in an error message.
            Err(AgentSlugError(raw.chars().take(60).collect()))
        }
    }

    /// The slug.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A fresh secret: 32 random bytes, shown as `whsec_<base64>`.
pub fn new_secret() -> String {
    let mut bytes = [0_u8; SECRET_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    format!("{SECRET_PREFIX}{}", BASE64.encode(bytes))
}

/// The key a secret signs with under the Standard Webhooks scheme: the bytes the base64 after
/// `whsec_` stands for; a secret of another shape signs with its own text.
pub fn secret_key_bytes(secret: &str) -> Vec<u8> {
    secret
        .strip_prefix(SECRET_PREFIX)
        .and_then(|encoded| BASE64.decode(encoded).ok())
        .unwrap_or_else(|| secret.as_bytes().to_vec())
}

/// One Standard Webhooks signature: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`.
pub fn standard_signature(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", BASE64.encode(mac.finalize().into_bytes()))
}

/// The `webhook-signature` header: one `v1,` entry per secret (current first), space-separated,
/// so a receiver holding either verifies it while the secret rotates.
pub fn standard_signature_header<'a>(
    secrets: impl IntoIterator<Item = &'a str>,
    id: &str,
    timestamp: i64,
    body: &[u8],
) -> String {
    secrets
        .into_iter()
        .map(|secret| standard_signature(&secret_key_bytes(secret), id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_two_to_forty_of_lowercase_digits_and_dashes() {
        for good in ["ab", "agent-7", &"a".repeat(40)] {
            assert_eq!(AgentSlug::parse(good).expect(good).as_str(), good);
        }
        for bad in [
            "a",
            "",
            "Agent",
            "a_b",
            "a b",
            " ab",
            &"a".repeat(41),
            "ü-x",
        ] {
            assert!(AgentSlug::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_new_secret_is_thirty_two_random_bytes_behind_the_prefix() {
        let one = new_secret();
        assert!(one.starts_with(SECRET_PREFIX));
        assert_eq!(secret_key_bytes(&one).len(), SECRET_BYTES);
        assert_ne!(one, new_secret());
    }

    #[test]
    fn a_secret_of_another_shape_signs_with_its_text() {
        assert_eq!(secret_key_bytes("plain"), b"plain".to_vec());
        assert_eq!(secret_key_bytes("whsec_%%%"), b"whsec_%%%".to_vec());
    }

    /// The example of the Standard Webhooks specification, whose signature every library checks.
    #[test]
    fn the_standard_signature_matches_the_specifications_example() {
        let key = secret_key_bytes("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            standard_signature(&key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1_614_265_330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn the_header_carries_one_entry_per_secret() {
        let header = standard_signature_header(["whsec_AAAA", "whsec_BBBB"], "id", 1, b"{}");
        assert_eq!(header.matches("v1,").count(), 2);
        assert!(header.contains(' '));
    }
}
