//! The black-box harness: [`TestApp`] starts a real askloop on a random port over a fresh
//! database (an SQLite file, or a new PostgreSQL database when `TEST_DATABASE_URL` is set) and
//! tears it down afterwards.

pub mod browser;
pub mod receiver;

use std::net::SocketAddr;
use std::path::PathBuf;

use askloop::config::Config;
use askloop::domain::signing::{SIGNATURE_HEADER, SigningKeys, sign};
use askloop::startup::Application;
use sea_orm::{ConnectionTrait, Database, DatabaseConnection};
use tokio::sync::oneshot;

/// The signing secret every test app is configured with.
pub const SECRET: &str = "test-signing-secret";

/// Which storage a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A fresh SQLite file.
    Sqlite,
    /// A fresh PostgreSQL database on `TEST_DATABASE_URL`'s server.
    Postgres,
}

/// A fresh database, removed when dropped.
pub struct TestDatabase {
    /// Where it is.
    pub url: String,
    cleanup: Cleanup,
}

enum Cleanup {
    SqliteDir(PathBuf),
    Postgres { admin_url: String, name: String },
}

impl TestDatabase {
    /// Make one; `None` for PostgreSQL when `TEST_DATABASE_URL` is not set.
    pub async fn create(backend: Backend) -> Option<Self> {
        let unique = uuid::Uuid::new_v4().simple().to_string();
        match backend {
            Backend::Sqlite => {
                let dir = std::env::temp_dir().join(format!("askloop-test-{unique}"));
                std::fs::create_dir_all(&dir).expect("create a temporary directory");
                Some(Self {
                    url: format!("sqlite://{}?mode=rwc", dir.join("askloop.db").display()),
                    cleanup: Cleanup::SqliteDir(dir),
                })
            }
            Backend::Postgres => {
                let admin_url = std::env::var("TEST_DATABASE_URL").ok()?;
                let name = format!("askloop_test_{unique}");
                let admin = Database::connect(&admin_url)
                    .await
                    .expect("connect to TEST_DATABASE_URL");
                admin
                    .execute_unprepared(&format!("CREATE DATABASE {name}"))
                    .await
                    .expect("create a test database");
                admin.close().await.ok();
                Some(Self {
                    url: replace_database(&admin_url, &name),
                    cleanup: Cleanup::Postgres { admin_url, name },
                })
            }
        }
    }
}

/// `postgres://…/old?x` → `postgres://…/name?x`.
fn replace_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    let mut out = format!("{}/{name}", &base[..host_end]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        match &self.cleanup {
            Cleanup::SqliteDir(dir) => {
                let _ = std::fs::remove_dir_all(dir);
            }
            Cleanup::Postgres { admin_url, name } => {
                let (admin_url, name) = (admin_url.clone(), name.clone());
                // Drop runs inside the test's runtime, which cannot be blocked on: use a thread
                // with a runtime of its own.
                let dropped = std::thread::spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("a runtime for cleanup");
                    runtime.block_on(async {
                        if let Ok(admin) = Database::connect(&admin_url).await {
                            let _ = admin
                                .execute_unprepared(&format!(
                                    "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                                ))
                                .await;
                            admin.close().await.ok();
                        }
                    });
                });
                let _ = dropped.join();
            }
        }
    }
}

/// A running askloop.
pub struct TestApp {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The bound address.
    pub addr: SocketAddr,
    /// A client with a cookie store.
    pub client: reqwest::Client,
    /// A direct connection to the app's database, for setting up and checking.
    pub db: DatabaseConnection,
    /// Which storage it runs on.
    pub backend: Backend,
    /// The database URL it runs on (for a second instance on the same database).
    pub database_url: String,
    config: Config,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
    // Declared last: dropped after everything that holds connections to it. `None` for a
    // second instance on another app's database.
    _database: Option<TestDatabase>,
}

/// The config a test app starts from: a random port, the test secret, the built dashboard.
pub fn test_config(database_url: &str) -> Config {
    let mut config = Config::defaults();
    config.database_url = database_url.to_owned();
    config.bind = "127.0.0.1:0".parse().expect("an address");
    config.signing = SigningKeys::new(Some(SECRET.to_owned()), None);
    config.web_dir = web_dist();
    config.shutdown_grace = std::time::Duration::from_secs(5);
    config
}

/// The `askloop` binary cargo built next to the test binary (`cargo xtask test` builds it).
pub fn askloop_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>");
    let binary = dir.join("askloop");
    assert!(
        binary.is_file(),
        "{} is not built: run the tests with `cargo xtask test`",
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
        let db = app.state().db.clone();
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
            backend,
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
        self.shutdown = restarted.shutdown.take();
        self.server = restarted.server.take();
    }

    /// The full URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A signature header for `body`, made now with the test secret.
    pub fn signature(&self, body: &str) -> String {
        sign(SECRET, body.as_bytes(), chrono::Utc::now().timestamp())
    }

    /// POST `body` to `path` signed with the test secret.
    pub async fn post_signed(&self, path: &str, body: &str) -> reqwest::Response {
        self.client
            .post(self.url(path))
            .header("content-type", "application/json")
            .header(SIGNATURE_HEADER, self.signature(body))
            .body(body.to_owned())
            .send()
            .await
            .expect("the request is sent")
    }

    /// POST `body` to `path` with a chosen signature header (or none).
    pub async fn post_with_signature(
        &self,
        path: &str,
        body: &str,
        signature: Option<&str>,
    ) -> reqwest::Response {
        let mut request = self
            .client
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(signature) = signature {
            request = request.header(SIGNATURE_HEADER, signature);
        }
        request.send().await.expect("the request is sent")
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

/// Generate a test per backend from `async fn name(app: TestApp)`: `name::sqlite` always runs;
/// `name::postgres` runs when `TEST_DATABASE_URL` is set (CI sets it) and says it was skipped
/// otherwise.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn sqlite() {
                    let app = $crate::TestApp::spawn($crate::Backend::Sqlite)
                        .await
                        .expect("SQLite is always available");
                    super::$name(app).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn postgres() {
                    match $crate::TestApp::spawn($crate::Backend::Postgres).await {
                        Some(app) => super::$name(app).await,
                        None => eprintln!("skipped: TEST_DATABASE_URL is not set"),
                    }
                }
            }
        )+
    };
}

#[cfg(test)]
mod tests {
    use super::replace_database;

    #[test]
    fn the_test_database_replaces_the_admin_database_in_the_url() {
        assert_eq!(
            replace_database("postgres://postgres@127.0.0.1:5432/postgres", "t1"),
            "postgres://postgres@127.0.0.1:5432/t1"
        );
        assert_eq!(
            replace_database("postgres://u:p@h/db?sslmode=disable", "t2"),
            "postgres://u:p@h/t2?sslmode=disable"
        );
        assert_eq!(replace_database("postgres://h", "t3"), "postgres://h/t3");
    }
}

/// Fixtures: builder functions that set up exactly what a test needs through askloop's services.
pub mod fixtures {
    use askloop::domain::slug::Slug;
    use askloop::service::audit::Actor;
    use askloop::service::niches::{NewNiche, create_niche};
    use entity::niches::{self, NicheStatus};
    use sea_orm::DatabaseConnection;
    use serde_json::{Value, json};

    /// A niche `slug` in `status`.
    pub async fn niche(db: &DatabaseConnection, slug: &str, status: NicheStatus) -> niches::Model {
        create_niche(
            db,
            NewNiche {
                slug: Slug::parse(slug).expect("a valid slug"),
                name: format!("Niche {slug}"),
                status,
            },
            &Actor::Cli,
            chrono::Utc::now(),
        )
        .await
        .expect("the niche is created")
    }

    /// An open niche `slug`.
    pub async fn open_niche(db: &DatabaseConnection, slug: &str) -> niches::Model {
        niche(db, slug, NicheStatus::Open).await
    }

    /// A valid intake body for niche `slug` with external id `external_id`.
    pub fn question_body(slug: &str, external_id: &str) -> Value {
        json!({"payload": {
            "nicheSlug": slug,
            "externalId": external_id,
            "title": "Which date?",
            "question": "Early access or 1.0?",
            "context": "Steam lists both an early-access date and a 1.0 date.",
            "urgency": "high",
            "options": [{"id": "ea", "label": "Early access"}, {"id": "full", "label": "1.0"}],
        }})
    }
}

/// People, memberships and sessions for tests.
pub mod people {
    use askloop::service::access::Viewer;
    use askloop::service::accounts::{self, NewUser, new_token, token_hash};
    use askloop::service::audit::Actor;
    use askloop::service::sessions::SESSION_PREFIX;
    use chrono::{Duration, Utc};
    use entity::niche_members::{self, MemberRole, MemberStatus};
    use entity::sessions;
    use sea_orm::{
        ActiveModelTrait, ActiveValue::Set, ColumnTrait, DatabaseConnection, EntityTrait, NotSet,
        QueryFilter,
    };

    /// The password every test person has.
    pub const PASSWORD: &str = "correct horse battery staple";

    /// A person with a live session token.
    #[derive(Debug, Clone)]
    pub struct Person {
        /// Their user id.
        pub id: i64,
        /// Their handle.
        pub handle: String,
        /// A session token to send as a bearer (or cookie).
        pub token: String,
        /// Whether they are an admin.
        pub admin: bool,
    }

    impl Person {
        /// The person as the services see them.
        pub fn viewer(&self) -> Viewer {
            Viewer {
                user_id: self.id,
                handle: self.handle.clone(),
                is_admin: self.admin,
            }
        }
    }

    /// Create `handle` (an admin when `admin`) with [`PASSWORD`] and a session.
    pub async fn person(db: &DatabaseConnection, handle: &str, admin: bool) -> Person {
        let user = accounts::create_user(
            db,
            NewUser {
                handle: handle.into(),
                email: format!("{handle}@example.com"),
                password: PASSWORD.into(),
                admin,
            },
            &Actor::Cli,
            Utc::now(),
        )
        .await
        .expect("the person is created");
        let token = new_token(SESSION_PREFIX);
        sessions::ActiveModel {
            id: NotSet,
            user_id: Set(user.id),
            token_hash: Set(token_hash(&token)),
            created_at: Set(Utc::now()),
            expires_at: Set(Utc::now() + Duration::days(1)),
            last_seen_at: Set(Utc::now()),
        }
        .insert(db)
        .await
        .expect("a session");
        Person {
            id: user.id,
            handle: user.handle,
            token,
            admin,
        }
    }

    /// Make `person` a member of `slug` with `role` and `status`.
    pub async fn member(
        db: &DatabaseConnection,
        slug: &str,
        person: &Person,
        role: MemberRole,
        status: MemberStatus,
    ) {
        let member = accounts::add_member(
            db,
            &askloop::live::ChangeHint::none(),
            slug,
            &person.handle,
            role,
            &Actor::Cli,
            Utc::now(),
        )
        .await
        .expect("the membership is created");
        if status != MemberStatus::Active {
            let member = niche_members::Entity::find()
                .filter(niche_members::Column::Id.eq(member.id))
                .one(db)
                .await
                .expect("query")
                .expect("the membership");
            let mut member: niche_members::ActiveModel = member.into();
            member.status = Set(status);
            member.update(db).await.expect("status set");
        }
    }

    /// An active operator of `slug`.
    pub async fn operator(db: &DatabaseConnection, slug: &str, handle: &str) -> Person {
        let p = person(db, handle, false).await;
        member(db, slug, &p, MemberRole::Operator, MemberStatus::Active).await;
        p
    }
}

impl TestApp {
    /// Run a GraphQL operation as `token` (a bearer), returning the whole response body.
    pub async fn graphql(
        &self,
        token: Option<&str>,
        query: &str,
        variables: serde_json::Value,
    ) -> serde_json::Value {
        let mut request = self
            .client
            .post(self.url("/graphql"))
            .json(&serde_json::json!({ "query": query, "variables": variables }));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request
            .send()
            .await
            .expect("sent")
            .json()
            .await
            .expect("a JSON body")
    }

    /// Ask a question through the signed intake route; returns its id.
    pub async fn ask(&self, slug: &str, external_id: &str) -> i64 {
        let body = fixtures::question_body(slug, external_id).to_string();
        let response = self
            .post_signed("/api/v1/internal/expert-questions", &body)
            .await;
        assert!(
            response.status().is_success(),
            "intake: {}",
            response.status()
        );
        let body: serde_json::Value = response.json().await.expect("JSON");
        body["question"]["id"].as_i64().expect("a question id")
    }
}

/// The GraphQL error code of a response, if it failed.
pub fn error_code(body: &serde_json::Value) -> Option<&str> {
    body["errors"][0]["extensions"]["code"].as_str()
}

/// A `graphql-transport-ws` client over a real websocket.
pub mod socket {
    use std::time::Duration;

    use futures::{SinkExt, StreamExt};
    use serde_json::{Value, json};
    use tokio::net::TcpStream;
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

    /// A connected socket.
    pub struct GqlSocket {
        ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    }

    /// What the server sent.
    #[derive(Debug)]
    pub enum Received {
        /// A protocol message (`next`, `error`, `complete`, …).
        Json(Value),
        /// The server closed the connection with this code.
        Closed(Option<u16>),
        /// Nothing arrived in time.
        Nothing,
    }

    impl GqlSocket {
        /// Open a websocket to `base` (http://…) offering `graphql-transport-ws`.
        pub async fn open(base: &str) -> Self {
            let url = format!("{}/graphql/ws", base.replacen("http", "ws", 1));
            let mut request = url.into_client_request().expect("a request");
            request.headers_mut().insert(
                "sec-websocket-protocol",
                "graphql-transport-ws".parse().expect("a header"),
            );
            let (ws, response) = tokio_tungstenite::connect_async(request)
                .await
                .expect("the websocket opens");
            assert_eq!(
                response
                    .headers()
                    .get("sec-websocket-protocol")
                    .and_then(|v| v.to_str().ok()),
                Some("graphql-transport-ws")
            );
            Self { ws }
        }

        /// Open, send `connection_init` with `token`, and wait for `connection_ack`.
        pub async fn connect(base: &str, token: Option<&str>) -> Self {
            let mut socket = Self::open(base).await;
            let payload = match token {
                Some(token) => json!({ "token": token }),
                None => json!({}),
            };
            socket
                .send(json!({"type": "connection_init", "payload": payload}))
                .await;
            match socket.receive(Duration::from_secs(5)).await {
                Received::Json(message) if message["type"] == "connection_ack" => socket,
                other => panic!("no connection_ack: {other:?}"),
            }
        }

        /// Send a protocol message.
        pub async fn send(&mut self, message: Value) {
            self.ws
                .send(Message::Text(message.to_string().into()))
                .await
                .expect("sent");
        }

        /// Subscribe as operation `id`.
        pub async fn subscribe(&mut self, id: &str, query: &str, variables: Value) {
            self.send(json!({"id": id, "type": "subscribe", "payload": {"query": query, "variables": variables}}))
                .await;
        }

        /// The next protocol message, close, or nothing within `wait`.
        pub async fn receive(&mut self, wait: Duration) -> Received {
            let deadline = tokio::time::Instant::now() + wait;
            loop {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                match tokio::time::timeout(left, self.ws.next()).await {
                    Err(_) => return Received::Nothing,
                    Ok(None) => return Received::Closed(None),
                    Ok(Some(Err(_))) => return Received::Closed(None),
                    Ok(Some(Ok(Message::Text(text)))) => {
                        return Received::Json(serde_json::from_str(&text).expect("JSON"));
                    }
                    Ok(Some(Ok(Message::Close(frame)))) => {
                        return Received::Closed(frame.map(|f| u16::from(f.code)));
                    }
                    Ok(Some(Ok(_))) => continue,
                }
            }
        }

        /// The next `next` payload's data for operation `id` (panics on anything else).
        pub async fn next_data(&mut self, id: &str) -> Value {
            match self.receive(Duration::from_secs(10)).await {
                Received::Json(message) if message["type"] == "next" && message["id"] == id => {
                    message["payload"].clone()
                }
                other => panic!("expected next for {id}, got {other:?}"),
            }
        }
    }
}
