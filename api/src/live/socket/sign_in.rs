//! Who a websocket is: deciding its `connection_init` (the payload's `token`, or the upgrade's
//! caller), and looking its credential up again while it stays open, so a socket ends with its
//! session or key.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::gate::{Class, HandshakeGate};
use super::protocol::InitRefusal;
use super::{HANDSHAKE_WAIT, SIGNING_IN_BUSY, turn_within};
use crate::auth::{Caller, OriginCheck};
use crate::db::Db;
use crate::service::people::sessions::{self, Lookup};

/// The credential a socket was opened with.
pub(super) struct Held {
    pub(super) token: String,
    pub(super) user_id: i64,
}

/// A `connection_init` accepted: who the connection is, and the credential to look up again
/// when it came in the payload.
pub(super) struct Accepted {
    pub(super) caller: Caller,
    pub(super) held: Option<Held>,
}

/// Decide a `connection_init` with `payload`, for a socket whose upgrade came signed in as
/// `upgrade_caller`: the payload's `token` when it has one, the upgrade's caller otherwise.
/// Boxed: it is kept beside the socket only while it is being decided.
pub(super) fn decide_init(
    db: Db,
    (gate, class): (Arc<HandshakeGate>, Class),
    payload: serde_json::Value,
    upgrade_caller: Caller,
) -> BoxFuture<'static, Result<Accepted, (InitRefusal, &'static str)>> {
    async move {
        let token = payload
            .get("token")
            .and_then(|t| t.as_str())
            .map(str::to_owned);
        let Some(token) = token else {
            return match upgrade_caller.viewer {
                Some(_) => Ok(Accepted {
                    caller: upgrade_caller,
                    held: None,
                }),
                None => Err((InitRefusal::Forbidden, "sign in first")),
            };
        };
        let Some(turn) = turn_within(&gate, class, HANDSHAKE_WAIT).await else {
            return Err((InitRefusal::AtCapacity, SIGNING_IN_BUSY));
        };
        let resolved = sessions::resolve(&db, &token, chrono::Utc::now(), Lookup::Use)
            .await
            .ok()
            .flatten();
        drop(turn);
        let Some((viewer, credential)) = resolved else {
            return Err((InitRefusal::Forbidden, "that token is not valid"));
        };
        Ok(Accepted {
            held: Some(Held {
                token,
                user_id: viewer.user_id,
            }),
            caller: Caller {
                viewer: Some(viewer),
                credential: Some(credential),
                session_token: None,
                via_cookie: false,
                origin: OriginCheck::Unknown,
            },
        })
    }
    .boxed()
}

/// Whether `token` no longer resolves (looked up without recording a use). Boxed: inline, this
/// rare read would size every idle socket's task.
pub(super) fn has_ended(db: &Db, token: String) -> BoxFuture<'static, bool> {
    let db = db.clone();
    async move {
        matches!(
            sessions::resolve(&db, &token, chrono::Utc::now(), Lookup::Recheck).await,
            Ok(None)
        )
    }
    .boxed()
}

/// The credential held in `credential`, if any: its token and owner.
pub(super) fn held(credential: &Option<Held>) -> Option<(String, i64)> {
    credential.as_ref().map(|h| (h.token.clone(), h.user_id))
}
