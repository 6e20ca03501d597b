//! Niche slugs: `^[a-z0-9][a-z0-9-]{1,62}$`, lowercased, reserved words refused.

/// Words that name askloop's own routes or roles and so cannot be a niche.
const RESERVED: &[&str] = &[
    "admin",
    "api",
    "askloop",
    "assets",
    "dashboard",
    "graphql",
    "healthz",
    "internal",
    "login",
    "logout",
    "metrics",
    "new",
    "niches",
    "readyz",
    "settings",
    "static",
    "www",
];

/// A validated niche slug.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slug(String);

/// Why a slug was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlugError {
    /// Wrong length or characters.
    #[error("a slug is 2 to 63 characters of a-z, 0-9 and '-', starting with a letter or digit")]
    Shape,
    /// One of askloop's own words.
    #[error("'{0}' is reserved")]
    Reserved(String),
}

impl Slug {
    /// Parse `raw` (lowercased first) into a slug.
    pub fn parse(raw: &str) -> Result<Self, SlugError> {
        let slug = raw.trim().to_lowercase();
        let mut chars = slug.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !first_ok || !rest_ok || !(2..=63).contains(&slug.len()) {
            return Err(SlugError::Shape);
        }
        if RESERVED.contains(&slug.as_str()) {
            return Err(SlugError::Reserved(slug));
        }
        Ok(Self(slug))
    }

    /// The slug as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Slug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_lowercased_and_shaped() {
        assert_eq!(Slug::parse("Roofing").map(|s| s.0), Ok("roofing".into()));
        assert_eq!(
            Slug::parse("indie-games-2").map(|s| s.0),
            Ok("indie-games-2".into())
        );
        assert_eq!(Slug::parse("a"), Err(SlugError::Shape));
        assert_eq!(Slug::parse("-games"), Err(SlugError::Shape));
        assert_eq!(Slug::parse("gämes"), Err(SlugError::Shape));
        assert_eq!(Slug::parse(&"a".repeat(64)), Err(SlugError::Shape));
        assert!(Slug::parse(&"a".repeat(63)).is_ok());
        assert_eq!(
            Slug::parse("Admin"),
            Err(SlugError::Reserved("admin".into()))
        );
    }
}
