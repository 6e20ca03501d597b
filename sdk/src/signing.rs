//! The `X-Chovy-Signature` scheme (docs/contract.md#signing), the agent's side of it: every
//! request to askloop is signed, and a `chovy` webhook endpoint verifies askloop's events with
//! the same MAC.
//!
//! ```text
//! X-Chovy-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>
//! signed payload:    "<t>.<body exactly as sent>"
//! ```

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The header that carries a signature, in both directions (askloop sends it lowercased).
pub const SIGNATURE_HEADER: &str = "x-chovy-signature";

/// The header a registered agent names itself with (docs/contract.md#agents).
pub const AGENT_HEADER: &str = "x-askloop-agent";

/// How far (seconds, either side of the receiver's clock) a signature's time may be; exactly
/// this far still passes. askloop applies it to requests, and the webhook verifier to events.
pub const TOLERANCE_SECS: u64 = 300;

/// The `X-Chovy-Signature` value for `body` signed with `secret` at unix time `t`:
/// `t=<t>,v1=<hex>`. The key is the secret's text exactly as askloop printed it (`whsec_…`
/// included).
pub fn sign(secret: &str, body: &[u8], t: i64) -> String {
    let mac = chovy_mac(secret.as_bytes(), t, body);
    format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
}

/// HMAC-SHA256 over `"<t>.<body>"`, not yet finalised (the verifier compares it in constant
/// time with `verify_slice`).
pub(crate) fn chovy_mac(key: &[u8], t: i64, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = hmac_sha256(key);
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// An HMAC-SHA256 keyed with `key`.
pub(crate) fn hmac_sha256(key: &[u8]) -> Hmac<Sha256> {
    // HMAC takes keys of any length: this cannot fail, and an empty key still keys it.
    <Hmac<Sha256> as KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The contract's published vectors, shared with the server's suite.
    fn vectors() -> Vec<Value> {
        let doc: Value = serde_json::from_str(include_str!("../../tests/vectors/signing.json"))
            .expect("the vectors are JSON");
        doc["vectors"].as_array().expect("a list").clone()
    }

    #[test]
    fn signing_produces_the_pinned_header_of_every_signing_vector() {
        let pinned: Vec<Value> = vectors()
            .into_iter()
            .filter(|v| v.get("expect_header").is_some())
            .collect();
        assert!(!pinned.is_empty(), "the vectors pin at least one header");
        for v in pinned {
            let header = sign(
                v["secret"].as_str().expect("a secret"),
                v["body"].as_str().expect("a body").as_bytes(),
                v["sign_at"].as_i64().expect("a time"),
            );
            assert_eq!(Some(header.as_str()), v["expect_header"].as_str(), "{v}");
        }
    }

    #[test]
    fn a_signature_covers_the_time_and_every_byte_of_the_body() {
        let header = sign("s3cret", b"{}", 10);
        assert!(header.starts_with("t=10,v1="));
        assert_eq!(header.len(), "t=10,v1=".len() + 64);
        assert_ne!(header, sign("s3cret", b"{ }", 10));
        assert_ne!(header[5..], sign("s3cret", b"{}", 11)[5..]);
        assert_ne!(header, sign("other", b"{}", 10));
    }
}
