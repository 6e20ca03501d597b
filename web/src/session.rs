//! Who is signed in, for the header and the route guard: read once when the app starts, then
//! set by signing in and out (which also restart the live connection, authenticated once per
//! socket).

use leptos::prelude::*;

use crate::api::{self, ApiError, ErrorCode};
use crate::live::Live;
use crate::operations::{Me, me};

/// The signed-in person as the header shows them.
pub type Person = me::MeViewerUser;

/// The app's session: the first read, overridden by what signing in or out just did.
#[derive(Clone, Copy)]
pub struct Session {
    read: LocalResource<Result<Option<Person>, ApiError>>,
    changed: RwSignal<Option<Option<Person>>>,
    live: Live,
}

impl Session {
    /// Read the session and provide it to the whole app; signing in or out restarts `live`.
    pub fn provide(live: Live) -> Self {
        let session = Self {
            read: LocalResource::new(|| async {
                api::run::<Me>(me::Variables)
                    .await
                    .map(|data| data.viewer.map(|v| v.user))
            }),
            changed: RwSignal::new(None),
            live,
        };
        provide_context(session);
        session
    }

    /// The app's session.
    pub fn get() -> Self {
        expect_context()
    }

    /// Who is signed in: `None` while the first read runs, `Some(None)` when nobody is (an
    /// ended session reads as signed out).
    pub fn person(self) -> Option<Option<Person>> {
        if let Some(changed) = self.changed.get() {
            return Some(changed);
        }
        self.read.get().map(Result::unwrap_or_default)
    }

    /// Whether someone is signed in, as the route guard asks it (`None`: not known yet).
    pub fn signed_in(self) -> Option<bool> {
        self.person().map(|p| p.is_some())
    }

    /// Signing in (or out) just happened.
    pub fn set(self, person: Option<Person>) {
        self.changed.set(Some(person));
        self.live.restart();
    }

    /// The server says the session has ended: sign-in is needed again.
    pub fn ended(self, err: &ApiError) -> bool {
        if err.code == ErrorCode::Unauthenticated {
            self.changed.set(Some(None));
            return true;
        }
        false
    }
}

/// `/login?next=<path>`: sign in, then come back to `path`.
pub fn login_path(path: &str, search: &str) -> String {
    let next = format!("{path}{search}");
    let encoded = js_sys::encode_uri_component(&next);
    format!("/login?next={encoded}")
}

/// Where to go after signing in: a path on this site, never another origin.
pub fn safe_next(next: Option<String>) -> String {
    next.filter(|n| n.starts_with('/') && !n.starts_with("//"))
        .unwrap_or_else(|| "/dashboard/niches".to_owned())
}
