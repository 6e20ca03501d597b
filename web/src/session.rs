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
    read: LocalResource<Result<Option<me::MeViewer>, ApiError>>,
    changed: RwSignal<Option<Option<Person>>>,
    zone: RwSignal<Option<String>>,
    live: Live,
}

impl Session {
    /// Read the session and provide it to the whole app; signing in or out restarts `live`.
    pub fn provide(live: Live) -> Self {
        let session = Self {
            read: LocalResource::new(|| async {
                api::run::<Me>(me::Variables).await.map(|data| data.viewer)
            }),
            changed: RwSignal::new(None),
            zone: RwSignal::new(None),
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
        self.read
            .get()
            .map(|read| read.unwrap_or_default().map(|viewer| viewer.user))
    }

    /// The IANA time zone exact times are shown in: the signed-in person's (from their
    /// settings), "UTC" when they set none, nobody is signed in, or it is not read yet.
    pub fn time_zone(self) -> String {
        if let Some(zone) = self.zone.get() {
            return zone;
        }
        self.read
            .get()
            .and_then(|read| read.ok().flatten())
            .map_or_else(|| "UTC".to_owned(), |viewer| viewer.time_zone)
    }

    /// The person just saved `zone` as their time zone.
    pub fn set_time_zone(self, zone: String) {
        self.zone.set(Some(zone));
    }

    /// Whether someone is signed in, as the route guard asks it (`None`: not known yet).
    pub fn signed_in(self) -> Option<bool> {
        self.person().map(|p| p.is_some())
    }

    /// Signing in (or out) just happened.
    pub fn set(self, person: Option<Person>) {
        self.changed.set(Some(person));
        // Read again for the rest of what the session holds (the new person's time zone).
        self.zone.set(None);
        self.read.refetch();
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
