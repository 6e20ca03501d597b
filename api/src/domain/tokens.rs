//! Random bearer tokens and what is stored for them: sessions, API keys and agent tokens share
//! one shape, so one module makes and hashes them all.

use rand::RngCore;
use sha2::{Digest, Sha256};

/// A fresh random token: `prefix` and 32 random bytes as hex.
pub fn new_token(prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!("{prefix}{}", hex::encode(bytes))
}

/// What is stored for a token: its SHA-256, hex. Tokens are random, so no salt is needed.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_token_is_its_prefix_and_64_hex_digits() {
        let token = new_token("al_key_");
        let rest = token.strip_prefix("al_key_").unwrap();
        assert_eq!(rest.len(), 64);
        assert!(rest.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(new_token(""), new_token(""));
    }

    #[test]
    fn a_token_hash_is_the_hex_sha256() {
        assert_eq!(
            token_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
