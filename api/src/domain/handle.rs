//! Handles: what a person signs in with. A handle is kept in one normal form, and every way in
//! (creating a person, signing in, looking someone up) folds what was typed to that form first:
//! Unicode NFKC (so full-width letters and the ideographic space become their plain forms), then
//! surrounding white space trimmed, then lowercased. Lowercasing after NFKC serves as the case
//! fold: a handle is ASCII once folded or it is refused, and for ASCII the two are the same.

use unicode_normalization::UnicodeNormalization;

/// The shortest handle.
pub const HANDLE_MIN: usize = 2;
/// The longest handle.
pub const HANDLE_MAX: usize = 40;
/// The most bytes a typed handle may have before it is folded: room for a longest handle in
/// full-width letters with some white space around it. Anything longer is refused unread.
pub const TYPED_HANDLE_MAX_BYTES: usize = 256;

/// A handle in normal form: 2 to 40 of a-z, 0-9, '_' and '-'.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Handle(String);

/// Why a typed handle is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a handle is 2 to 40 characters of a-z, 0-9, '_' and '-'")]
pub struct HandleError;

/// What `typed` folds to: NFKC, trimmed, lowercased. It is not checked; [`Handle::parse`] is.
pub fn fold(typed: &str) -> String {
    let normalised: String = typed.nfkc().collect();
    normalised.trim().to_lowercase()
}

impl Handle {
    /// Fold `typed` and check its shape. An overlong input is refused before it is folded.
    pub fn parse(typed: &str) -> Result<Self, HandleError> {
        if typed.len() > TYPED_HANDLE_MAX_BYTES {
            return Err(HandleError);
        }
        let handle = fold(typed);
        let shaped = (HANDLE_MIN..=HANDLE_MAX).contains(&handle.len())
            && handle
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        if shaped {
            Ok(Self(handle))
        } else {
            Err(HandleError)
        }
    }

    /// The handle as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_way_of_typing_a_handle_folds_to_one_form() {
        for typed in [
            "operator",
            " operator",
            "operator ",
            "\toperator\n",
            "\u{3000}operator\u{3000}",
            "OPERATOR",
            "Operator",
            // Full-width letters, as an East Asian keyboard types them.
            "\u{FF4F}\u{FF50}\u{FF45}\u{FF52}\u{FF41}\u{FF54}\u{FF4F}\u{FF52}",
            "\u{FF2F}\u{FF30}\u{FF25}\u{FF32}\u{FF21}\u{FF34}\u{FF2F}\u{FF32}",
        ] {
            assert_eq!(
                Handle::parse(typed).map(|h| h.0),
                Ok("operator".to_owned()),
                "{typed:?}"
            );
        }
        // The Kelvin sign is a K once folded.
        assert_eq!(
            Handle::parse("\u{212A}im").map(|h| h.0),
            Ok("kim".to_owned())
        );
    }

    #[test]
    fn handles_of_the_wrong_shape_or_length_are_refused() {
        for typed in ["a", "", "   ", "ana maria", "ana@x", "ánä", "ana\u{0}"] {
            assert_eq!(Handle::parse(typed), Err(HandleError), "{typed:?}");
        }
        assert!(Handle::parse(&"a".repeat(HANDLE_MAX)).is_ok());
        assert_eq!(Handle::parse(&"a".repeat(HANDLE_MAX + 1)), Err(HandleError));
        // Padding does not count, but an input past the byte cap is not even looked at.
        let padded = format!("{}ana{}", " ".repeat(100), " ".repeat(100));
        assert!(Handle::parse(&padded).is_ok());
        let flood = format!("ana{}", " ".repeat(10_000));
        assert_eq!(Handle::parse(&flood), Err(HandleError));
    }
}
