//! Building and running the app: connect, migrate, assemble the router, bind (port 0 works),
//! serve until a shutdown signal, then let in-flight requests finish.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use crate::db::Db;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, Request};
use sea_orm::DbErr;
use tokio::net::{TcpListener, TcpSocket};
use tokio_util::sync::CancellationToken;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::services::{ServeDir, ServeFile};
use tower_http::trace::{DefaultOnResponse, TraceLayer};

use crate::config::Config;
use crate::graphql::{self, GraphqlEndpoint};
use crate::live::LiveHub;
use crate::live::shared::SharedPayloads;
use crate::metrics::{self, Metrics};
use crate::net::admission::Connections;
use crate::net::login_throttle::LoginThrottle;
use crate::net::security_headers;
use crate::net::serve;
use crate::service::people::passwords;
use crate::state::{AppState, StateParts};
use crate::worker::{self, WorkerContext};
use crate::{a2a, db, live, mcp, rest};

/// A bound, migrated, ready-to-serve askloop.
pub struct Application {
    listener: TcpListener,
    router: Router,
    state: AppState,
    connections: Arc<Connections>,
    workers: CancellationToken,
}

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Connect to the configured database with a server's pool (`ASKLOOP_DB_MAX_CONNECTIONS`) and
/// bring its schema up to date, under the database's migration lock ([`db::migrate`]).
pub async fn connect_and_migrate(config: &Config) -> Result<Db, DbErr> {
    connect_and_migrate_sized(config, db::PoolSize::Serving(config.db_max_connections)).await
}

/// [`connect_and_migrate`] for a one-shot command: a pool of at most
/// [`db::ONE_SHOT_CONNECTIONS`], opened as needed.
pub async fn connect_for_a_command(config: &Config) -> Result<Db, DbErr> {
    connect_and_migrate_sized(config, db::PoolSize::OneShot).await
}

async fn connect_and_migrate_sized(config: &Config, size: db::PoolSize) -> Result<Db, DbErr> {
    let db = db::connect(&config.database_url, size).await?;
    db::migrate(&db).await?;
    Ok(db)
}

impl Application {
    /// Connect, migrate and bind according to `config`.
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        let db = connect_and_migrate(&config).await?;
        Self::build_with(config, db).await
    }

    /// Bind with an already connected and migrated database.
    pub async fn build_with(mut config: Config, db: Db) -> anyhow::Result<Self> {
        let listener = listen(config.bind, config.connections.listen_backlog)
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.bind))?;
        // Port 0 picks one: the links askloop writes (mail, operator webhooks) name the real one.
        if let Ok(bound) = listener.local_addr() {
            config.bind = bound;
        }
        if !config.web_dir.join("index.html").is_file() {
            tracing::warn!(
                dir = %config.web_dir.display(),
                "the dashboard is not built here; `cargo xtask build-web` builds it"
            );
        }
        let live = LiveHub::start(db.reads().clone(), config.live).await?;
        // The dummy hash unknown handles are checked against, made before the first sign-in.
        passwords::prepare().await?;
        let config = Arc::new(config);
        let login_throttle = Arc::new(LoginThrottle::new(config.sign_in));
        let metrics = Arc::new(Metrics::new());
        let endpoint = GraphqlEndpoint::new(
            graphql::build_schema(
                db.clone(),
                config.clone(),
                login_throttle.clone(),
                Some(live.clone()),
                Arc::new(SharedPayloads::new(metrics.live_payloads())),
            ),
            db.clone(),
            config.clone(),
            live.clone(),
        );
        let state = AppState::new(StateParts {
            db,
            config,
            metrics,
            login_throttle,
            live,
        });
        let router = router(state.clone(), endpoint);
        let connections = Connections::new(&state.config.connections, serve::file_limit());
        Ok(Self {
            listener,
            router,
            state,
            connections,
            workers: CancellationToken::new(),
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .unwrap_or_else(|_| self.state.config.bind)
    }

    /// The shared state (for the CLI's load generator and tests).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// The connection caps this instance serves with (how many are open, the cap).
    pub fn connections(&self) -> Arc<Connections> {
        self.connections.clone()
    }

    /// Serve until `shutdown` resolves, then give in-flight requests the configured grace period.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        worker::spawn(
            WorkerContext {
                db: self.state.db.clone(),
                config: self.state.config.clone(),
                hint: self.state.hint(),
            },
            self.workers.clone(),
        );
        let grace = self.state.config.shutdown_grace;
        let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
        let live = self.state.live.clone();
        let workers = self.workers.clone();
        let connections = CancellationToken::new();
        let stop_serving = connections.clone();
        let signal = async move {
            shutdown.await;
            tracing::info!("shutting down: finishing in-flight requests");
            // Websockets are not in-flight requests: stopping the feed closes them (1001) now,
            // so their clients reconnect elsewhere instead of waiting on a silent socket.
            live.stop();
            workers.cancel();
            stop_serving.cancel();
            let _ = stopping_tx.send(());
        };
        // Served by hyper-util (`net/serve.rs`) behind askloop's accept thread: the header and
        // idle timeouts apply, and the connection caps; each request's client address (the peer,
        // or the client a trusted proxy forwards for) reaches handlers.
        let serve = serve::serve(
            self.listener,
            self.router,
            self.connections.clone(),
            self.state.config.connections,
            self.state.config.trusted_proxies.clone(),
            connections,
        );
        let serving = tokio::spawn(async move {
            let mut serve = std::pin::pin!(serve);
            tokio::select! {
                () = &mut serve => return,
                () = signal => {}
            }
            // Stopped accepting: the connections still open finish their requests.
            serve.await;
        });
        tokio::select! {
            result = serving => result?,
            () = async {
                let _ = stopping_rx.await;
                tokio::time::sleep(grace).await;
            } => tracing::warn!("in-flight requests outlived the {grace:?} grace period"),
        }
        self.state.live.stop();
        self.workers.cancel();
        self.state.db.clone().close().await.ok();
        Ok(())
    }
}

/// Listen on `address` with room for `backlog` connections waiting to be accepted, asked for
/// explicitly: the runtime's `bind` asks for 1,024, which a reconnect storm overflows. The
/// kernel caps it at `net.core.somaxconn`; a cap below what was asked for is logged.
fn listen(address: SocketAddr, backlog: u32) -> std::io::Result<TcpListener> {
    let socket = if address.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    // As the runtime's `bind` does: a restarted instance can listen at once on its old port.
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    let listener = socket.listen(backlog)?;
    let ceiling = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|raw| raw.trim().parse::<u32>().ok());
    match ceiling {
        Some(ceiling) if ceiling < backlog => tracing::warn!(
            asked = backlog,
            granted = ceiling,
            "the listen backlog is capped by net.core.somaxconn; raise it (sysctl) for \
             reconnect storms"
        ),
        _ => tracing::debug!(backlog, "listening"),
    }
    Ok(listener)
}

/// The whole HTTP surface.
pub fn router(state: AppState, graphql: GraphqlEndpoint) -> Router {
    let index = state.config.web_dir.join("index.html");
    let dashboard = ServeDir::new(&state.config.web_dir).fallback(ServeFile::new(index));
    let body_limit = state.config.max_body_bytes;
    let routes = Router::new()
        .merge(rest::router())
        .merge(graphql::routes(graphql.clone()))
        .merge(live::socket::routes(graphql))
        .merge(mcp::router(&state))
        .merge(a2a::router(&state))
        .route_layer(axum::middleware::from_fn_with_state(
            state.metrics.clone(),
            metrics::track,
        ))
        .fallback_service(dashboard);
    security_headers::apply(routes)
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(
            TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
                let id = request
                    .headers()
                    .get(REQUEST_ID)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("-");
                tracing::info_span!("request", method = %request.method(), uri = %request.uri(), request_id = %id)
            })
            .on_response(DefaultOnResponse::new().level(tracing::Level::INFO)),
        )
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
        .with_state(state)
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}
