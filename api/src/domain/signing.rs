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

/// Properties of the signature header: whatever arrives, `verify` answers without panicking, and
/// only a header that carries the MAC of these very bytes at this very `t`, inside the window,
/// is accepted.
#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    /// A secret as an operator would set it: printable, never empty.
    fn secret() -> impl Strategy<Value = String> {
        "[ -~]{1,40}"
    }

    /// Timestamps from everywhere: plausible clocks, small numbers and the ends of `i64`.
    fn timestamp() -> impl Strategy<Value = i64> {
        prop_oneof![
            0_i64..4_000_000_000,
            -1_000_i64..1_000,
            any::<i64>(),
            Just(i64::MIN),
            Just(i64::MAX),
        ]
    }

    fn body() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(any::<u8>(), 0..256)
    }

    /// One comma-free part of a header and what the parser should make of it.
    #[derive(Debug, Clone)]
    enum Part {
        /// `t=<n>`, with the number written in `raw` (padded, signed, zero-led).
        T(i64, String),
        /// `t=<something that is not an i64>`.
        BadT(String),
        /// `v1=<value>`; the value has no surrounding whitespace.
        V1(String),
        /// Some other scheme or junk with an `=`; ignored.
        Other(String, String),
        /// A part without `=`; ignored.
        Bare(String),
    }

    fn spaces() -> impl Strategy<Value = String> {
        prop::sample::select(vec!["", " ", "  ", "\t", " \t "]).prop_map(str::to_owned)
    }

    fn part() -> impl Strategy<Value = Part> {
        let number = any::<i64>().prop_flat_map(|n| {
            let plain = n.to_string();
            let mut written = vec![Just(plain.clone())];
            if n >= 0 {
                written.push(Just(format!("+{n}")));
                written.push(Just(format!("000{n}")));
            }
            (Just(n), prop::strategy::Union::new(written))
        });
        prop_oneof![
            number.prop_map(|(n, raw)| Part::T(n, raw)),
            prop_oneof![
                Just(String::new()),
                // Past i64 either way (a leading zero would make it a number again).
                "[1-9][0-9]{19,59}",
                "-[1-9][0-9]{19,59}",
                "[0-9]{1,5}\\.[0-9]{1,3}",
                "[a-z]{1,6}",
                "1e[0-9]",
                "[0-9]{1,3} [0-9]{1,3}",
                "é[0-9]{1,3}",
            ]
            .prop_map(Part::BadT),
            prop_oneof!["[0-9a-f]{0,80}", "[0-9A-Fa-f=]{1,64}", "[^,\\s]{1,20}"].prop_map(Part::V1),
            (
                prop_oneof![
                    Just("v0".to_owned()),
                    Just("T".to_owned()),
                    Just("V1".to_owned()),
                    Just("v2".to_owned()),
                    Just("tt".to_owned()),
                    Just(String::new()),
                    "[a-zé]{1,4}".prop_filter("t is the time's key", |k| k != "t"),
                ],
                "[^,]{0,12}",
            )
                .prop_map(|(k, v)| Part::Other(k, v)),
            "[^,=]{0,12}".prop_map(Part::Bare),
        ]
    }

    /// Render `parts` as a header, with whitespace around keys and values.
    fn render(parts: &[(Part, String, String)]) -> String {
        parts
            .iter()
            .map(|(part, before, after)| match part {
                Part::T(_, raw) => format!("{before}t{after}={before}{raw}{after}"),
                Part::BadT(raw) => format!("{before}t{after}={raw}"),
                Part::V1(value) => format!("{before}v1{after}={before}{value}{after}"),
                Part::Other(key, value) => format!("{key}={value}"),
                Part::Bare(text) => text.clone(),
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    fn parts() -> impl Strategy<Value = Vec<(Part, String, String)>> {
        prop::collection::vec((part(), spaces(), spaces()), 0..12)
    }

    /// Whether one of `candidates` is, in hex of either case, the MAC of `body` at `t`.
    fn carries_mac(candidates: &[&str], secret: &str, t: i64, body: &[u8]) -> bool {
        let mac = hex::encode(mac_bytes(secret, t, body));
        candidates.iter().any(|c| c.eq_ignore_ascii_case(&mac))
    }

    fn one_key(secret: &str) -> SigningKeys {
        SigningKeys::new(Some(secret.to_owned()), None)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The parser's rule: the last `t` decides the time (one that is not an i64 makes the
        /// header malformed), every `v1` is a candidate, in order, anything else is ignored.
        #[test]
        fn the_header_parser_takes_the_last_t_and_every_v1(parts in parts()) {
            let header = render(&parts);
            let last_t = parts.iter().rev().find_map(|(part, _, _)| match part {
                Part::T(n, _) => Some(Some(*n)),
                Part::BadT(_) => Some(None),
                _ => None,
            });
            let v1: Vec<&str> = parts
                .iter()
                .filter_map(|(part, _, _)| match part {
                    Part::V1(value) => Some(value.as_str()),
                    _ => None,
                })
                .collect();
            match (parse_header(&header), last_t.flatten()) {
                (Ok(parsed), Some(t)) if !v1.is_empty() => {
                    prop_assert_eq!(parsed.timestamp, t);
                    prop_assert_eq!(parsed.v1, v1);
                }
                (Err(SignatureError::Malformed), t) if t.is_none() || v1.is_empty() => {}
                (Ok(parsed), _) => prop_assert!(
                    false,
                    "{header:?} parsed to t={} with {:?}",
                    parsed.timestamp,
                    parsed.v1
                ),
                (Err(e), _) => prop_assert!(false, "{header:?} refused as {e:?}"),
            }
        }

        /// Any header string, body and clock: an answer, never a panic, and the refusal is the
        /// one the parser and the window call for. Acceptance needs the real MAC in the header.
        #[test]
        fn verify_answers_any_header_without_panicking(
            header in prop_oneof![
                any::<String>(),
                parts().prop_map(|p| render(&p)),
                (timestamp(), "[0-9a-f]{64}").prop_map(|(t, v)| format!("t={t},v1={v}")),
            ],
            body in body(),
            now in timestamp(),
            secret in secret(),
        ) {
            let keys = one_key(&secret);
            let outcome = keys.verify(Some(&header), &body, now);
            let trimmed = header.trim();
            let expected = if trimmed.is_empty() {
                Err(SignatureError::Missing)
            } else {
                match parse_header(trimmed) {
                    Err(e) => Err(e),
                    Ok(parsed)
                        if (i128::from(now) - i128::from(parsed.timestamp)).abs()
                            > i128::from(TOLERANCE_SECS) =>
                    {
                        Err(SignatureError::Expired)
                    }
                    Ok(parsed) if carries_mac(&parsed.v1, &secret, parsed.timestamp, &body) => {
                        Ok(parsed.timestamp)
                    }
                    Ok(_) => Err(SignatureError::Mismatch),
                }
            };
            prop_assert_eq!(outcome, expected);
        }

        /// A correctly signed body verifies at every clock within the tolerance of its `t`,
        /// and is expired at every clock beyond it, including clocks at the ends of `i64`.
        #[test]
        fn a_signed_body_verifies_exactly_inside_the_window(
            secret in secret(),
            body in body(),
            t in timestamp(),
            offset in prop_oneof![
                prop::sample::select(vec![
                    -TOLERANCE_SECS - 1,
                    -TOLERANCE_SECS,
                    TOLERANCE_SECS,
                    TOLERANCE_SECS + 1,
                ]),
                -TOLERANCE_SECS..=TOLERANCE_SECS,
                -3 * TOLERANCE_SECS..=3 * TOLERANCE_SECS,
                any::<i64>(),
            ],
        ) {
            let now = i128::from(t) + i128::from(offset);
            let now = i64::try_from(now).unwrap_or(if offset < 0 { i64::MIN } else { i64::MAX });
            let header = sign(&secret, &body, t);
            let outcome = one_key(&secret).verify(Some(&header), &body, now);
            if (i128::from(now) - i128::from(t)).abs() <= i128::from(TOLERANCE_SECS) {
                prop_assert_eq!(outcome, Ok(t));
            } else {
                prop_assert_eq!(outcome, Err(SignatureError::Expired));
            }
        }

        /// Any change to the signed body — a flipped bit, bytes added anywhere, bytes cut off —
        /// makes a valid header a mismatch.
        #[test]
        fn a_tampered_body_is_a_mismatch(
            secret in secret(),
            body in body(),
            t in timestamp(),
            change in (0_u8..4, any::<prop::sample::Index>(), 1_u8..=255, body()),
        ) {
            let (kind, at, bits, extra) = change;
            let mut tampered = body.clone();
            match kind {
                0 if !body.is_empty() => {
                    let i = at.index(body.len());
                    tampered[i] ^= bits;
                }
                1 => tampered.extend(if extra.is_empty() { vec![bits] } else { extra }),
                2 if !body.is_empty() => tampered.truncate(at.index(body.len())),
                _ => tampered.insert(at.index(body.len() + 1), bits),
            }
            prop_assert_ne!(&tampered, &body);
            let header = sign(&secret, &body, t);
            prop_assert_eq!(
                one_key(&secret).verify(Some(&header), &tampered, t),
                Err(SignatureError::Mismatch)
            );
        }

        /// Moving `t` (and the clock with it) breaks the MAC; moving `t` alone past the window
        /// is expired.
        #[test]
        fn a_tampered_time_is_refused(
            secret in secret(),
            body in body(),
            t in -4_000_000_000_i64..4_000_000_000,
            shift in prop_oneof![-2 * TOLERANCE_SECS..=2 * TOLERANCE_SECS, any::<i32>().prop_map(i64::from)],
        ) {
            prop_assume!(shift != 0);
            let moved = t + shift;
            let header = sign(&secret, &body, t);
            let (_, mac) = header.split_once(',').unwrap_or_default();
            let forged = format!("t={moved},{mac}");
            let keys = one_key(&secret);
            prop_assert_eq!(
                keys.verify(Some(&forged), &body, moved),
                Err(SignatureError::Mismatch)
            );
            let at_original_clock = keys.verify(Some(&forged), &body, t);
            if shift.abs() > TOLERANCE_SECS {
                prop_assert_eq!(at_original_clock, Err(SignatureError::Expired));
            } else {
                prop_assert_eq!(at_original_clock, Err(SignatureError::Mismatch));
            }
        }

        /// A header made with another secret is a mismatch; while rotating, either the current
        /// or the previous secret is accepted, a third is not, and an outbound header verifies
        /// with each of them alone.
        #[test]
        fn only_the_configured_secrets_sign(
            current in secret(),
            previous in secret(),
            stranger in secret(),
            body in body(),
            t in timestamp(),
        ) {
            prop_assume!(current != previous && stranger != current && stranger != previous);
            prop_assert_eq!(
                one_key(&current).verify(Some(&sign(&stranger, &body, t)), &body, t),
                Err(SignatureError::Mismatch)
            );
            let rotating = SigningKeys::new(Some(current.clone()), Some(previous.clone()));
            for signer in [&current, &previous] {
                prop_assert_eq!(rotating.verify(Some(&sign(signer, &body, t)), &body, t), Ok(t));
            }
            prop_assert_eq!(
                rotating.verify(Some(&sign(&stranger, &body, t)), &body, t),
                Err(SignatureError::Mismatch)
            );
            let outbound = rotating.sign_header(&body, t).unwrap_or_default();
            prop_assert_eq!(one_key(&current).verify(Some(&outbound), &body, t), Ok(t));
            prop_assert_eq!(one_key(&previous).verify(Some(&outbound), &body, t), Ok(t));
            prop_assert_eq!(
                one_key(&stranger).verify(Some(&outbound), &body, t),
                Err(SignatureError::Mismatch)
            );
        }

        /// The signed time and bytes name a request: equal pairs have one digest, and another
        /// time, another body or both have another.
        #[test]
        fn a_request_digest_names_its_time_and_body(
            t in timestamp(),
            body in body(),
            extra in any::<u8>(),
            other_t in timestamp(),
            other_body in body(),
        ) {
            let digest = request_digest(t, &body);
            prop_assert_eq!(digest.len(), 32);
            prop_assert!(digest.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
            prop_assert_eq!(&digest, &request_digest(t, &body));
            let mut longer = body.clone();
            longer.push(extra);
            prop_assert_ne!(&digest, &request_digest(t, &longer));
            let next = t.checked_add(1).unwrap_or(i64::MIN);
            prop_assert_ne!(&digest, &request_digest(next, &body));
            if (t, &body) != (other_t, &other_body) {
                prop_assert_ne!(&digest, &request_digest(other_t, &other_body));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]

        /// Thousands of `v1` candidates cost no more than a refusal; the one real MAC among
        /// them, wherever it stands, is found.
        #[test]
        fn thousands_of_candidates_are_checked_without_panicking(
            secret in secret(),
            body in body(),
            t in timestamp(),
            junk in prop::collection::vec((any::<u64>(), 0_u8..5), 1_000..4_000),
            real_at in prop::option::of(any::<prop::sample::Index>()),
        ) {
            // Wrong MACs of the right length, short hex, upper case, odd lengths and non-hex.
            let mut candidates: Vec<String> = junk
                .into_iter()
                .map(|(n, kind)| match kind {
                    0 => format!("{n:016x}").repeat(4),
                    1 => format!("{n:x}"),
                    2 => format!("{n:016X}").repeat(4),
                    3 => format!("{n:016x}").repeat(4)[1..].to_owned(),
                    _ => format!("zz{n}"),
                })
                .collect();
            let real = hex::encode(mac_bytes(&secret, t, &body));
            if let Some(at) = real_at {
                candidates.insert(at.index(candidates.len() + 1), real.clone());
            }
            let header = std::iter::once(format!("t={t}"))
                .chain(candidates.iter().map(|c| format!("v1={c}")))
                .collect::<Vec<_>>()
                .join(",");
            let expected = if candidates.iter().any(|c| c.eq_ignore_ascii_case(&real)) {
                Ok(t)
            } else {
                Err(SignatureError::Mismatch)
            };
            prop_assert_eq!(one_key(&secret).verify(Some(&header), &body, t), expected);
        }
    }
}
