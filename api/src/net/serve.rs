//! Serving connections. hyper-util does the serving: each connection is driven by its connection
//! builder (`hyper_util::server::conn::auto::Builder`, `serve_connection_with_upgrades`, so that
//! websockets upgrade), with hyper's HTTP/1.1 `header_read_timeout` on hyper-util's `TokioTimer`
//! (a request's line and headers must arrive within `ASKLOOP_HEADER_TIMEOUT_MS` of the connection
//! waiting for them; a peer that trickles them is closed then), and shut down by hyper-util's
//! `GracefulShutdown` (accepting stops, idle connections close at once, in-flight requests finish
//! within `startup`'s grace period; websockets are closed with 1001 by the live hub).
//!
//! askloop speaks HTTP/1.1 only. hyper-util's graceful shutdown watches an upgradable connection
//! only through that builder, which brings HTTP/2 with it and offers it to any client that opens
//! with HTTP/2's preface, upgrades or not; such a request is answered `505`
//! ([`connection`]). The proxy in front speaks HTTP/1.1 to askloop, websockets are HTTP/1.1
//! upgrades, and the header timeout and the per-connection caps are HTTP/1.1's: one connection, one
//! request at a time.
//!
//! What stays hand-written, and the goal each part serves:
//!
//! - [`accept`] and [`starting`]: accepting on a thread of its own, from a listen backlog asked for explicitly
//!   (`startup`, `ASKLOOP_LISTEN_BACKLOG`), handing connections to the runtime a bounded number at
//!   a time and the newest first once the oldest have waited too long. Goal: the reconnect storm,
//!   10,000 sockets opened at once all served, and a socket opened in the middle of it served at
//!   once (docs/benchmarks.md#goals, `storm`; how it is measured:
//!   docs/benchmarks.md#fan-out-and-reconnect-storms). An accept loop on the runtime lets the
//!   kernel's queue overflow while every worker is busy with the storm's handshakes.
//! - Admission before a connection is served ([`Connections`], in `net/admission.rs`): the
//!   instance-wide cap and its reserve for health checks and credentials, and the cap per
//!   address; a connection past a cap is answered `503` or `429` from the accept thread and
//!   costs a status line, not a task. Goal: floods from one address leave every other client's
//!   requests fast (docs/benchmarks.md#goals, `flood`; docs/benchmarks.md#floods), and monitoring
//!   and signed-in people get in while strangers hold the rest (docs/security.md#denial-of-service).
//! - [`idle`]: the idle timeout (`ASKLOOP_IDLE_TIMEOUT_MS`). A connection with no request in
//!   flight that moves no byte either way for it is closed, while a long poll or a streamed
//!   response keeps its connection; hyper has no such timeout. Goal: the same floods, whose idle
//!   connections would otherwise be held for good (docs/benchmarks.md#floods).
//! - [`connection`]: each request's client address, worked out once and handed to the handlers
//!   as a [`ClientAddress`] extension (beside the peer's `ConnectInfo<SocketAddr>`): the peer, or,
//!   when the peer is a trusted proxy (`ASKLOOP_TRUSTED_PROXIES`), the client it forwards for
//!   (`net/client_address.rs`). A trusted proxy's connections count under the instance-wide cap
//!   only; each request it forwards holds a place under its client's per-address cap while in
//!   flight (a websocket: while open), and past that cap is answered `429`. Not a figure but the
//!   contract: behind a proxy every limit is still per person (docs/security.md#behind-a-proxy).
//!
//! The limits and their variables are in docs/security.md#limits.
//!
//! [`ClientAddress`]: crate::auth::ClientAddress

mod accept;
mod connection;
mod idle;
mod starting;

use std::sync::Arc;

use axum::Router;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::config::ConnectionSettings;
use crate::net::client_address::TrustedProxies;

use crate::net::admission::Connections;
use accept::Served;
use starting::STARTING_AT_ONCE;

/// The open-file limit in force (the soft limit), or 1,024 where it cannot be read.
pub fn file_limit() -> u64 {
    #[cfg(unix)]
    if let Ok((soft, _)) = rlimit::getrlimit(rlimit::Resource::NOFILE) {
        return soft;
    }
    1_024
}

/// Raise the soft open-file limit to the hard limit, so that the connection cap is not set
/// by a shell's default of 1,024; logs what it did, or why it could not.
pub fn raise_file_limit() {
    #[cfg(unix)]
    {
        let (soft, hard) = match rlimit::getrlimit(rlimit::Resource::NOFILE) {
            Ok(limits) => limits,
            Err(err) => {
                tracing::warn!("cannot read the open-file limit ({err}); serving with it as it is");
                return;
            }
        };
        if soft >= hard {
            tracing::info!(
                limit = soft,
                "the open-file limit is already its hard limit"
            );
            return;
        }
        match rlimit::increase_nofile_limit(hard) {
            Ok(now) => tracing::info!(from = soft, to = now, "raised the open-file limit"),
            Err(err) => tracing::warn!(
                limit = soft,
                hard,
                "cannot raise the open-file limit to the hard limit ({err}); fewer connections \
                 fit (raise it with `ulimit -n` or the service manager's LimitNOFILE)"
            ),
        }
    }
}

/// Serve `router` on `listener` until `stop` is cancelled, then stop accepting, close idle
/// connections and let in-flight requests finish; returns once every connection has ended.
///
/// Accepting runs on a thread of its own ([`accept`]); each admitted connection is served on
/// the runtime `serve` was called on, watched by one [`GracefulShutdown`], which is told to shut
/// down once the accept thread has ended, so no connection is started after it.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    connections: Arc<Connections>,
    settings: ConnectionSettings,
    trusted: TrustedProxies,
    stop: CancellationToken,
) {
    // Accepting ends with `stop`, or when this future is dropped unfinished.
    let accepting = stop.child_token();
    let _stop_accepting_if_dropped = accepting.clone().drop_guard();
    // The accept thread hands what it served with back once it has stopped accepting.
    let (accepted_all, accept_ended) = tokio::sync::oneshot::channel::<Served>();
    let served = Served {
        runtime: tokio::runtime::Handle::current(),
        router,
        connections,
        settings,
        trusted: Arc::new(trusted),
        shutdown: GracefulShutdown::new(),
        starting: Arc::new(Semaphore::new(STARTING_AT_ONCE)),
    };
    let spawned = match listener.into_std() {
        Ok(listener) => std::thread::Builder::new()
            .name("askloop-accept".into())
            .spawn({
                let accepting = accepting.clone();
                move || {
                    accept::accept_loop(listener, &served, &accepting);
                    let _ = accepted_all.send(served);
                }
            })
            .map_err(|err| err.to_string()),
        Err(err) => Err(err.to_string()),
    };
    if let Err(err) = spawned {
        tracing::error!("cannot start accepting connections: {err}");
        return;
    }
    let Ok(served) = accept_ended.await else {
        // The thread panicked: its `GracefulShutdown`, dropped with it, has already told every
        // connection to shut down; there is nothing left to wait on them with.
        tracing::error!("the accept thread ended without handing back its connections");
        return;
    };
    let Served { shutdown, .. } = served;
    shutdown.shutdown().await;
}
