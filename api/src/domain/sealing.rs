//! Secrets at rest (docs/security.md#secrets-at-rest): with `ASKLOOP_DATA_KEY` set, an agent's
//! signing secrets are sealed with ChaCha20-Poly1305 (an AEAD: a changed byte fails to open
//! rather than yielding another secret) before they are stored; without it they are stored as
//! given. A stored value says which it is, so a key set later still reads older rows.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use chacha20poly1305::aead::{Aead, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, KeyInit, Nonce};
use rand::RngCore;

/// What a sealed value starts with.
pub const SEALED_PREFIX: &str = "sealed:v1:";

/// Bound to every sealed value, so a ciphertext made for something else does not open as one.
const ASSOCIATED: &[u8] = b"askloop agent secret";

/// The key from `ASKLOOP_DATA_KEY`: base64 of exactly 32 bytes. Never printed.
#[derive(Clone)]
pub struct DataKey([u8; 32]);

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataKey(<set>)")
    }
}

/// Why a stored secret could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// The key is not base64 of 32 bytes.
    #[error("must be base64 of exactly 32 bytes (e.g. `openssl rand -base64 32`)")]
    BadKey,
    /// A sealed value was found but no key is configured.
    #[error("a stored secret is sealed but ASKLOOP_DATA_KEY is not set")]
    NoKey,
    /// The sealed value does not open with this key (another key, or changed bytes).
    #[error("a stored secret does not open with ASKLOOP_DATA_KEY (another key, or damaged)")]
    WontOpen,
}

impl DataKey {
    /// Parse the variable's value.
    pub fn parse(raw: &str) -> Result<Self, SealError> {
        let bytes = BASE64.decode(raw.trim()).map_err(|_| SealError::BadKey)?;
        let key: [u8; 32] = bytes.try_into().map_err(|_| SealError::BadKey)?;
        Ok(Self(key))
    }

    /// Seal `secret`: `sealed:v1:<base64 of a 12-byte random nonce, then the ciphertext>`.
    pub fn seal(&self, secret: &str) -> String {
        let cipher = ChaCha20Poly1305::new(Key::from_slice(&self.0));
        let mut nonce = [0_u8; 12];
        rand::rng().fill_bytes(&mut nonce);
        let sealed = cipher
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: secret.as_bytes(),
                    aad: ASSOCIATED,
                },
            )
            .unwrap_or_else(|_| unreachable!("encrypting into a Vec cannot fail"));
        let mut out = nonce.to_vec();
        out.extend(sealed);
        format!("{SEALED_PREFIX}{}", BASE64.encode(out))
    }

    fn open(&self, encoded: &str) -> Result<String, SealError> {
        let bytes = BASE64.decode(encoded).map_err(|_| SealError::WontOpen)?;
        if bytes.len() < 12 {
            return Err(SealError::WontOpen);
        }
        let (nonce, sealed) = bytes.split_at(12);
        let cipher = ChaCha20Poly1305::new(Key::from_slice(&self.0));
        let plain = cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: sealed,
                    aad: ASSOCIATED,
                },
            )
            .map_err(|_| SealError::WontOpen)?;
        String::from_utf8(plain).map_err(|_| SealError::WontOpen)
    }
}

/// How `secret` is stored: sealed with `key`, or as given without one.
pub fn store(key: Option<&DataKey>, secret: &str) -> String {
    match key {
        Some(key) => key.seal(secret),
        None => secret.to_owned(),
    }
}

/// The secret `stored` holds.
pub fn reveal(key: Option<&DataKey>, stored: &str) -> Result<String, SealError> {
    match stored.strip_prefix(SEALED_PREFIX) {
        None => Ok(stored.to_owned()),
        Some(encoded) => key.ok_or(SealError::NoKey)?.open(encoded),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> DataKey {
        DataKey::parse(&BASE64.encode([byte; 32])).expect("a key")
    }

    #[test]
    fn a_sealed_secret_opens_with_its_key_only() {
        let stored = store(Some(&key(1)), "whsec_abc");
        assert!(stored.starts_with(SEALED_PREFIX));
        assert!(!stored.contains("whsec_abc"));
        assert_eq!(reveal(Some(&key(1)), &stored), Ok("whsec_abc".into()));
        assert_eq!(reveal(Some(&key(2)), &stored), Err(SealError::WontOpen));
        assert_eq!(reveal(None, &stored), Err(SealError::NoKey));
    }

    #[test]
    fn sealing_twice_gives_different_text() {
        assert_ne!(store(Some(&key(1)), "s"), store(Some(&key(1)), "s"));
    }

    #[test]
    fn without_a_key_a_secret_is_stored_as_given_and_read_back() {
        assert_eq!(store(None, "whsec_x"), "whsec_x");
        assert_eq!(reveal(Some(&key(1)), "whsec_x"), Ok("whsec_x".into()));
    }

    #[test]
    fn a_damaged_sealed_value_does_not_open() {
        let mut stored = store(Some(&key(1)), "secret");
        stored.pop();
        stored.push(if stored.ends_with('A') { 'B' } else { 'A' });
        assert!(reveal(Some(&key(1)), &stored).is_err());
        assert_eq!(
            reveal(Some(&key(1)), "sealed:v1:AAAA"),
            Err(SealError::WontOpen)
        );
    }

    #[test]
    fn a_key_must_be_base64_of_thirty_two_bytes() {
        for bad in [
            "",
            "not base64!",
            &BASE64.encode([0_u8; 31]),
            &BASE64.encode([0_u8; 33]),
        ] {
            assert_eq!(DataKey::parse(bad).err(), Some(SealError::BadKey), "{bad}");
        }
        assert!(DataKey::parse(&format!(" {} ", BASE64.encode([7_u8; 32]))).is_ok());
    }
}
