//! The one text rule on the REST routes (docs/security.md#text), applied before a handler reads
//! anything:
//!
//! - the path and the query of every route, by [`refuse_control_characters`], a layer on the
//!   whole REST router: slugs, ids, cursors and link tokens are one line, so no percent-escape
//!   there may decode to a control character;
//! - JSON bodies, by [`TextJson`]: every string and key, at any depth, named by its path;
//! - form bodies, by [`TextForm`]: every field.
//!
//! The signed routes read their bytes themselves (the signature covers them) and apply the same
//! check to the verified JSON, in `signed`. A new route takes its body through one of these
//! (docs/architecture.md#a-new-rest-route); a field added to a body is covered as it is.

use axum::extract::{FromRequest, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::domain::text::{ControlCharacter, TextKind, checked, first_control_character};
use crate::error::ServiceError;

/// Refuse (400 `BAD_USER_INPUT`, naming the path or the query parameter) a request whose path or
/// query holds a percent-escape of a control character. Raw control characters never get this
/// far (the HTTP parser refuses them), so an escape is the only way one could arrive.
pub async fn refuse_control_characters(request: Request, next: Next) -> Response {
    let uri = request.uri();
    let refused = escaped_control(uri.path())
        .map(|character| ("the path".to_owned(), character))
        .or_else(|| {
            uri.query()?.split('&').find_map(|pair| {
                let character = escaped_control(pair)?;
                let name = pair.split('=').next().unwrap_or_default();
                Some((format!("query parameter '{name}'"), character))
            })
        });
    match refused {
        Some((field, character)) => ServiceError::from(ControlCharacter {
            field,
            character,
            kind: TextKind::Line,
        })
        .into_response(),
        None => next.run(request).await,
    }
}

/// The first control character a `%XX` escape in `raw` decodes to. A byte below 0x80 is a whole
/// character in UTF-8, so the escape alone decides.
fn escaped_control(raw: &str) -> Option<char> {
    raw.as_bytes().windows(3).find_map(|window| {
        let [b'%', high, low] = *window else {
            return None;
        };
        let hex = |digit: u8| char::from(digit).to_digit(16);
        let byte = u8::try_from(hex(high)? * 16 + hex(low)?).ok()?;
        let character = char::from(byte);
        TextKind::Line.refuses(character).then_some(character)
    })
}

/// A JSON body as `T`, once every string and key in it passes the rule. A body that is not
/// JSON, or not a `T`, is `BAD_USER_INPUT` naming the field at fault; take it as
/// `Result<TextJson<T>, ServiceError>` to decide when the refusal is answered (after the
/// caller is known, say).
#[derive(Debug)]
pub struct TextJson<T>(pub T);

impl<S, T> FromRequest<S> for TextJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ServiceError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let axum::Json(value) = axum::Json::<Value>::from_request(request, state)
            .await
            .map_err(|rejection| ServiceError::BadInput(rejection.body_text()))?;
        if let Some(refused) = first_control_character(&value) {
            return Err(refused.into());
        }
        serde_path_to_error::deserialize(value)
            .map(TextJson)
            .map_err(|err| {
                let path = err.path().to_string();
                let inner = err.into_inner();
                ServiceError::BadInput(if path == "." {
                    format!("the body: {inner}")
                } else {
                    format!("{path}: {inner}")
                })
            })
    }
}

/// A form body (`application/x-www-form-urlencoded`) as `T`, once every field passes the rule.
#[derive(Debug)]
pub struct TextForm<T>(pub T);

/// A form refused at the edge, with the `next` it asked to return to (for the handler to
/// redirect through its own `safe_next`). Answered alone, it is a 400.
#[derive(Debug)]
pub struct FormRefusal {
    /// Why.
    pub error: ServiceError,
    /// The form's `next` field, unchecked.
    pub next: Option<String>,
}

impl IntoResponse for FormRefusal {
    fn into_response(self) -> Response {
        self.error.into_response()
    }
}

impl<S, T> FromRequest<S> for TextForm<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = FormRefusal;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let fields = axum::Form::<Vec<(String, String)>>::from_request(request, state)
            .await
            .map_err(|rejection| FormRefusal {
                error: ServiceError::BadInput(rejection.body_text()),
                next: None,
            })?
            .0;
        let next = fields
            .iter()
            .find(|(name, _)| name == "next")
            .map(|(_, value)| value.clone());
        let refuse = |error: ServiceError| FormRefusal {
            error,
            next: next.clone(),
        };
        for (name, value) in &fields {
            let field = name.escape_default().to_string();
            checked(&field, name, TextKind::Lines)
                .and_then(|_| checked(&field, value, TextKind::Lines))
                .map_err(|refused| refuse(refused.into()))?;
        }
        let encoded = serde_urlencoded::to_string(&fields)
            .map_err(|err| refuse(ServiceError::BadInput(err.to_string())))?;
        serde_urlencoded::from_str(&encoded)
            .map(TextForm)
            .map_err(|err| refuse(ServiceError::BadInput(format!("the form: {err}"))))
    }
}

#[cfg(test)]
mod tests {
    use super::escaped_control;

    #[test]
    fn only_an_escape_of_a_control_character_is_refused() {
        assert_eq!(
            escaped_control("/api/v1/niches/a%00b/questions"),
            Some('\u{0}')
        );
        assert_eq!(escaped_control("after=x%0a"), Some('\n'));
        assert_eq!(escaped_control("after=x%7F"), Some('\u{7f}'));
        assert_eq!(escaped_control("token=%1B"), Some('\u{1b}'));
        for fine in [
            "/a%20b",
            "x=%25%30%30",
            "%e2%80%a8",
            "%",
            "%0",
            "%zz",
            "%2000",
            "",
        ] {
            assert_eq!(escaped_control(fine), None, "{fine}");
        }
    }
}
