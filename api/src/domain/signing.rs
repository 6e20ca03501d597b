//! Request signing, both directions (docs/contract.md#signing).
//!
//! ```text
//! X-Chovy-Signature: t=<unix seconds>,v1=<hex hmac-sha256>
//! signed payload:    "<t>.<raw body>"
//! ```
//!
//! Pure by contract: it takes bytes, strings and a clock value, never a request object, so the
//! agent side (the CLI's `sign` and `ask`) signs with exactly the code the server verifies with.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The header that carries a signature, in both directions.
pub const SIGNATURE_HEADER: &str = "x-chovy-signature";

/// How far (in seconds, either side of now) a signature's timestamp may be from the clock.
pub const TOLERANCE_SECS: i64 = 300;

/// Why a signature was refused; the `Display` text is the reason the route returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// Neither the current nor the previous secret is configured.
    #[error("no signing secret is configured")]
    NoSecret,
    /// The request carried no signature header (or an empty one).
    #[error("no signature")]
    Missing,
    /// The header has no integer `t` or no `v1`.
    #[error("malformed signature")]
    Malformed,
    /// `t` is more than [`TOLERANCE_SECS`] away from now.
    #[error("signature expired")]
    Expired,
    /// No `v1` value matches any accepted secret.
    #[error("bad signature")]
    Mismatch,
}

/// The secrets a verifier accepts: the current one and, while rotating, the previous one.
#[derive(Clone, Default)]
pub struct SigningKeys {
    current: Option<String>,
    previous: Option<String>,
}

impl std::fmt::Debug for SigningKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Secrets are never printed, not even in debug output.
        f.debug_struct("SigningKeys")
            .field("current", &self.current.as_ref().map(|_| "<set>"))
            .field("previous", &self.previous.as_ref().map(|_| "<set>"))
            .finish()
    }
}

impl SigningKeys {
    /// Keys from the current and previous secret; empty strings count as unset.
    pub fn new(current: Option<String>, previous: Option<String>) -> Self {
        let keep = |s: Option<String>| s.filter(|s| !s.is_empty());
        Self {
            current: keep(current),
            previous: keep(previous),
        }
    }

    /// Whether any secret is configured at all.
    pub fn is_configured(&self) -> bool {
        self.current.is_some() || self.previous.is_some()
    }

    /// Every configured secret, current first.
    fn accepted(&self) -> impl Iterator<Item = &str> {
        self.current
            .iter()
            .chain(self.previous.iter())
            .map(String::as_str)
    }

    /// Verify `header` over `body` at clock `now` (unix seconds); the signed time `t` when valid.
    pub fn verify(
        &self,
        header: Option<&str>,
        body: &[u8],
        now: i64,
    ) -> Result<i64, SignatureError> {
        if !self.is_configured() {
            return Err(SignatureError::NoSecret);
        }
        let header = header.map(str::trim).filter(|h| !h.is_empty());
        let header = header.ok_or(SignatureError::Missing)?;
        let parsed = parse_header(header)?;
        // Checked: a hostile `t` far from now must be "expired", never an overflow.
        let skew = now.checked_sub(parsed.timestamp).map(i64::unsigned_abs);
        if skew.is_none_or(|skew| skew > TOLERANCE_SECS.unsigned_abs()) {
            return Err(SignatureError::Expired);
        }
        for secret in self.accepted() {
            let expected = mac_bytes(secret, parsed.timestamp, body);
            if parsed
                .v1
                .iter()
                .any(|candidate| matches(candidate, &expected))
            {
                return Ok(parsed.timestamp);
            }
        }
        Err(SignatureError::Mismatch)
    }

    /// The header for an outbound body at time `t`: one `v1` per configured secret, so a receiver
    /// holding either secret verifies it while the secret rotates.
    pub fn sign_header(&self, body: &[u8], t: i64) -> Option<String> {
        if !self.is_configured() {
            return None;
        }
        let mut header = format!("t={t}");
        for secret in self.accepted() {
            header.push_str(",v1=");
            header.push_str(&hex::encode(mac_bytes(secret, t, body)));
        }
        Some(header)
    }
}

/// The header for `body` at time `t` with one secret: `t=<t>,v1=<hex>`.
pub fn sign(secret: &str, body: &[u8], t: i64) -> String {
    format!("t={t},v1={}", hex::encode(mac_bytes(secret, t, body)))
}

/// What names one signed request whatever secret signed it: the first 128 bits of SHA-256 over
/// `"<t>.<body>"`, in hex. The same bytes sent again under the same `t` (a replay inside the
/// signature's window, or an agent's retry) have the same digest.
pub fn request_digest(t: i64, body: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(t.to_string().as_bytes());
    hasher.update(b".");
    hasher.update(body);
    hex::encode(&hasher.finalize()[..16])
}

/// HMAC-SHA256 over `"<t>.<body>"`.
fn mac_bytes(secret: &str, t: i64, body: &[u8]) -> Vec<u8> {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.finalize().into_bytes().to_vec()
}

/// Compare a hex candidate with the expected MAC as bytes, in constant time. Hex that does not
/// decode, or decodes to the wrong length, simply does not match.
fn matches(candidate: &str, expected: &[u8]) -> bool {
    match hex::decode(candidate) {
        Ok(bytes) => bytes.len() == expected.len() && bool::from(bytes.ct_eq(expected)),
        Err(_) => false,
    }
}

struct ParsedHeader<'a> {
    timestamp: i64,
    v1: Vec<&'a str>,
}

/// Split `t=…,v1=…[,v1=…]`; unknown schemes (`v0=…`) are ignored, spaces around parts allowed.
fn parse_header(header: &str) -> Result<ParsedHeader<'_>, SignatureError> {
    let mut timestamp = None;
    let mut v1 = Vec::new();
    for part in header.split(',') {
        let Some((key, value)) = part.split_once('=') else {
            continue;
        };
        match key.trim() {
            "t" => timestamp = value.trim().parse::<i64>().ok(),
            "v1" => v1.push(value.trim()),
            _ => {}
        }
    }
    match timestamp {
        Some(timestamp) if !v1.is_empty() => Ok(ParsedHeader { timestamp, v1 }),
        _ => Err(SignatureError::Malformed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(current: &str) -> SigningKeys {
        SigningKeys::new(Some(current.to_owned()), None)
    }

    #[test]
    fn a_signed_body_verifies_with_the_same_secret() {
        let header = sign("s3cret", b"{}", 1_700_000_000);
        assert_eq!(
            keys("s3cret").verify(Some(&header), b"{}", 1_700_000_000),
            Ok(1_700_000_000)
        );
    }

    #[test]
    fn a_request_digest_depends_on_the_time_and_every_byte() {
        let digest = request_digest(10, b"{}");
        assert_eq!(digest.len(), 32);
        assert_eq!(digest, request_digest(10, b"{}"));
        assert_ne!(digest, request_digest(11, b"{}"));
        assert_ne!(digest, request_digest(10, b"{ }"));
    }

    #[test]
    fn verification_without_any_secret_says_so() {
        let none = SigningKeys::new(None, Some(String::new()));
        assert_eq!(
            none.verify(Some("t=1,v1=00"), b"", 1),
            Err(SignatureError::NoSecret)
        );
        assert_eq!(none.sign_header(b"", 1), None);
    }

    #[test]
    fn the_previous_secret_is_accepted_while_rotating() {
        let rotating = SigningKeys::new(Some("new".into()), Some("old".into()));
        let old_header = sign("old", b"body", 10);
        assert_eq!(rotating.verify(Some(&old_header), b"body", 10), Ok(10));
        let unrelated = sign("other", b"body", 10);
        assert_eq!(
            rotating.verify(Some(&unrelated), b"body", 10),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn outbound_headers_carry_one_v1_per_secret_and_verify_with_either() {
        let rotating = SigningKeys::new(Some("new".into()), Some("old".into()));
        let header = rotating.sign_header(b"x", 99).expect("configured");
        assert_eq!(header.matches("v1=").count(), 2);
        assert_eq!(keys("new").verify(Some(&header), b"x", 99), Ok(99));
        assert_eq!(keys("old").verify(Some(&header), b"x", 99), Ok(99));
    }

    #[test]
    fn hostile_headers_never_panic() {
        let k = keys("s");
        for header in [
            "t=",
            "=",
            ",,,",
            "t=99999999999999999999999,v1=00",
            "t=-5,v1=zz",
            "v1=,t=1",
            "t=1,v1=é",
            "t=\u{0},v1=\u{0}",
        ] {
            assert!(k.verify(Some(header), b"", 1).is_err(), "{header}");
        }
        assert_eq!(
            k.verify(Some("t=1,v1=00"), b"", i64::MIN),
            Err(SignatureError::Expired)
        );
    }
}
