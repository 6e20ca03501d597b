//! The app under test: [`TestApp`] starts a real askloop in-process on a random port over a
//! fresh [`TestDatabase`], can pause, resume and start a second instance on the same database,
//! and stops it when dropped. Also where the built `askloop` binary and dashboard are.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use askloop::config::Config;
use askloop::db::Db;
use askloop::domain::signing::SigningKeys;
use askloop::live::LiveHub;
use askloop::net::admission::Connections;
use askloop::net::login_throttle::LoginThrottle;
use askloop::startup::Application;
use tokio::sync::oneshot;

use crate::database::{Backend, TestDatabase};

/// The signing secret every test app is configured with.
pub const SECRET: &str = "test-signing-secret";

/// A running askloop.
pub struct TestApp {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The bound address.
    pub addr: SocketAddr,
    /// A client with a cookie store.
    pub client: reqwest::Client,
    /// The test's own handle on the app's database, for setting up and checking: its reads may
    /// write (the app's refuse to, on SQLite), its `begin_write` takes the app's turn, and it
    /// shares what the app's `Db` keeps for the database.
    pub db: Db,
    /// The app's own database handle, to take the database away from it.
    app_db: Db,
    /// The app's sign-in throttle, to see what it keeps.
    pub login_throttle: Arc<LoginThrottle>,
    /// The app's live hub, to see who listens and to stop it.
    pub live: LiveHub,
    /// Which storage it runs on.
    pub backend: Backend,
    /// Its connection caps: how many connections it holds open now.
    pub connections: Arc<Connections>,
    /// The database URL it runs on (for a second instance on the same database).
    pub database_url: String,
    config: Config,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
    // Declared last: dropped after everything that holds connections to it. `None` for a
    // second instance on another app's database.
    _database: Option<TestDatabase>,
}

/// How many connections each of the suite's servers holds on PostgreSQL.
pub const TEST_POSTGRES_CONNECTIONS: u32 = 6;

/// The config a test app starts from: a random port, the test secret, the built dashboard.
pub fn test_config(database_url: &str) -> Config {
    let mut config = Config::defaults();
    config.database_url = database_url.to_owned();
    config.bind = "127.0.0.1:0".parse().expect("an address");
    config.signing = SigningKeys::new(Some(SECRET.to_owned()), None);
    config.web_dir = web_dist();
    config.shutdown_grace = std::time::Duration::from_secs(5);
    // A server on PostgreSQL opens all its connections up front (20 by default); the suite runs
    // several servers at once against one PostgreSQL (`max_connections` 100 by default), so
    // each of its servers holds six: three to write, three to read.
    if database_url.starts_with("postgres") {
        config.db_max_connections = Some(TEST_POSTGRES_CONNECTIONS);
    }
    // Every client of the suite connects from 127.0.0.1, so the per-address bounds would be one
    // shared bound for all of a test's clients: they are lifted here, and the tests of those
    // bounds (connection_limits.rs) set their own.
    config.connections.max_per_address = 1_000_000;
    config.live.max_anonymous_per_address = 1_000_000;
    config.live.handshakes_per_second = 1_000_000;
    config
}

/// Where an npm tool `cargo xtask test` installs lives: the folder `variable` names, else
/// [`tools_folder`]`(folder)`.
pub fn npm_tool(variable: &str, folder: &str) -> PathBuf {
    std::env::var_os(variable).map_or_else(|| tools_folder(folder), PathBuf::from)
}

/// `target/tools/<folder>`, next to the test binary: where `cargo xtask test` installs tools.
pub fn tools_folder(folder: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/<test binary>
    exe.ancestors()
        .nth(3)
        .expect("the target folder")
        .join("tools")
        .join(folder)
}

/// The `askloop` binary cargo built next to the test binary (`cargo xtask test` builds it).
pub fn askloop_binary() -> PathBuf {
    built("askloop")
}

/// The measuring tool `name` of `askloop-load` (`loadgen`, `flood`, `contention`, …), built with
/// the other binaries.
pub fn load_binary(name: &str) -> PathBuf {
    built(name)
}

/// The agent SDK's example program `name` (`cargo xtask test` builds the examples with the
/// binaries, into `target/<profile>/examples`).
pub fn example_binary(name: &str) -> PathBuf {
    built(&format!("examples/{name}"))
}

/// `target/<profile>/<path>`, next to the test binary; panics with what to run when it is not
/// built.
fn built(path: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>");
    let binary = dir.join(path);
    assert!(
        binary.is_file(),
        "{} is not built: run the tests with `cargo xtask test` (or `cargo build --bins \
         --examples` first)",
        binary.display()
    );
    binary
}

/// Where `cargo xtask build-web` puts the dashboard.
pub fn web_dist() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("web")
        .join("dist")
}

impl TestApp {
    /// Start askloop on `backend`; `None` for PostgreSQL when `TEST_DATABASE_URL` is not set.
    pub async fn spawn(backend: Backend) -> Option<Self> {
        Self::spawn_with(backend, |_| {}).await
    }

    /// Start askloop on `backend` with `adjust` applied to its config.
    pub async fn spawn_with(backend: Backend, adjust: impl FnOnce(&mut Config)) -> Option<Self> {
        let database = TestDatabase::create(backend).await?;
        let mut config = test_config(&database.url);
        adjust(&mut config);
        Some(Self::start(backend, config, Some(database)).await)
    }

    async fn start(backend: Backend, config: Config, database: Option<TestDatabase>) -> Self {
        let app = Application::build(config.clone())
            .await
            .expect("askloop starts");
        let addr = app.local_addr();
        let app_db = app.state().db.clone();
        // Beside the app's own: its writes take the app's turn, and it sees what the app keeps
        // for the database (the intake queue, the question turns).
        let db = askloop::db::connect_for_tests(&config.database_url, Some(&app_db))
            .await
            .expect("the harness connects to the app's database");
        let login_throttle = app.state().login_throttle.clone();
        let live = app.state().live.clone();
        let connections = app.connections();
        let (tx, rx) = oneshot::channel::<()>();
        let server = tokio::spawn(app.run_until(async {
            let _ = rx.await;
        }));
        Self {
            base: format!("http://{addr}"),
            addr,
            client: reqwest::Client::builder()
                .cookie_store(true)
                .build()
                .expect("a client"),
            db,
            app_db,
            login_throttle,
            live,
            backend,
            connections,
            database_url: config.database_url.clone(),
            config,
            shutdown: Some(tx),
            server: Some(server),
            _database: database,
        }
    }

    /// A second askloop on this app's database, on its own random port.
    pub async fn another_instance(&self) -> TestApp {
        self.another_instance_with(|_| {}).await
    }

    /// A second askloop on this app's database, on its own random port, with `adjust` applied
    /// to a copy of this app's config.
    pub async fn another_instance_with(&self, adjust: impl FnOnce(&mut Config)) -> TestApp {
        let mut config = self.config.clone();
        config.bind = "127.0.0.1:0".parse().expect("an address");
        adjust(&mut config);
        Self::start(self.backend, config, None).await
    }

    /// Shut the server down as SIGTERM would (its websockets close with 1001) and wait for it;
    /// the database stays. [`TestApp::resume`] starts it again.
    pub async fn pause(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
    }

    /// Start askloop again on the same address and database after [`TestApp::pause`].
    pub async fn resume(&mut self) {
        let mut config = self.config.clone();
        config.bind = self.addr;
        // Its handles move here; what is left of it drops without stopping anything.
        let mut restarted = Self::start(self.backend, config, None).await;
        self.db = restarted.db.clone();
        self.app_db = restarted.app_db.clone();
        self.login_throttle = restarted.login_throttle.clone();
        self.live = restarted.live.clone();
        self.connections = restarted.connections.clone();
        self.shutdown = restarted.shutdown.take();
        self.server = restarted.server.take();
    }

    /// Take the database away from the app: its own pools close, so every query it makes from
    /// now on fails as if the database had gone.
    pub async fn close_the_apps_database(&self) {
        self.app_db
            .clone()
            .close()
            .await
            .expect("the app's pools close");
    }

    /// The full URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The config this app runs with (after any adjustment a test made).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Stop the server and wait for it to finish.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(server) = self.server.take() {
            server.abort();
        }
    }
}
