//! One [`Config`], built once (from the environment in `main`, in code in tests) and passed down.
//! Secrets live in [`SigningKeys`] and are never printed.
//!
//! [`ENVIRONMENT`] is the one list of the variables askloop reads: [`Config::from_lookup`] reads
//! each of them through it, `askloop --help` prints it ([`environment_help`]), and a test fails
//! when the configuration table in `docs/configuration.md` or `.env.example` names a different
//! set.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::domain::delivery::{BreakerPolicy, TestSendLimits};
use crate::domain::sealing::DataKey;
use crate::domain::signing::SigningKeys;

/// How many nodes a GraphQL query may return when `ASKLOOP_GRAPHQL_MAX_NODES` is unset.
pub const DEFAULT_MAX_NODES: usize = 10_000;
/// The SQLite file used when `DATABASE_URL` is unset.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://askloop.db?mode=rwc";
/// Where askloop listens when `ASKLOOP_BIND` is unset.
pub const DEFAULT_BIND: &str = "127.0.0.1:3000";
/// The largest listen backlog askloop asks for (the kernel's own ceiling for somaxconn).
pub const MAX_LISTEN_BACKLOG: u32 = 65_535;
/// The built dashboard when `ASKLOOP_WEB_DIR` is unset.
pub const DEFAULT_WEB_DIR: &str = "web/dist";

/// One environment variable askloop reads at start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvVar {
    /// The variable's name.
    pub name: &'static str,
    /// What askloop does while it is unset (or empty): a value, or what follows.
    pub default: &'static str,
    /// What it sets.
    pub meaning: &'static str,
}

/// The variables themselves, one constant each, so that reading one means naming its entry.
pub mod env {
    use super::EnvVar;

    /// Where the data lives.
    pub const DATABASE_URL: EnvVar = EnvVar {
        name: "DATABASE_URL",
        default: super::DEFAULT_DATABASE_URL,
        meaning: "the database: sqlite://file?mode=rwc, or postgres://user:password@host/db",
    };
    /// How many connections a server's pool holds.
    pub const ASKLOOP_DB_MAX_CONNECTIONS: EnvVar = EnvVar {
        name: "ASKLOOP_DB_MAX_CONNECTIONS",
        default: "8 on SQLite, 20 on PostgreSQL",
        meaning: "how many database connections askloop serve holds (at least 2; on PostgreSQL \
                  all kept open, so n instances hold n times this); one-shot commands hold at \
                  most 2",
    };
    /// Where askloop listens.
    pub const ASKLOOP_BIND: EnvVar = EnvVar {
        name: "ASKLOOP_BIND",
        default: super::DEFAULT_BIND,
        meaning: "the address to listen on, host:port (port 0 picks a free one)",
    };
    /// The public origin behind a proxy.
    pub const ASKLOOP_PUBLIC_ORIGIN: EnvVar = EnvVar {
        name: "ASKLOOP_PUBLIC_ORIGIN",
        default: "unset: the origin the Host header names",
        meaning: "scheme://host[:port] browsers reach askloop at, behind a proxy; writes made with \
                  the session cookie must come from it, and https:// marks the cookie Secure",
    };
    /// The agent platform's shared secret.
    pub const CHOVY_SIGNING_SECRET: EnvVar = EnvVar {
        name: "CHOVY_SIGNING_SECRET",
        default: "unset: the signed agent routes answer 503",
        meaning: "the secret agents sign their requests with and askloop signs its events with",
    };
    /// The secret being rotated out.
    pub const CHOVY_SIGNING_SECRET_PREVIOUS: EnvVar = EnvVar {
        name: "CHOVY_SIGNING_SECRET_PREVIOUS",
        default: "unset",
        meaning: "the previous secret, still accepted (and signed with) while rotating",
    };
    /// Where events for the agent go.
    pub const CHOVY_WEBHOOK_URL: EnvVar = EnvVar {
        name: "CHOVY_WEBHOOK_URL",
        default: "unset: events wait in the outbox; agents read through the lookup route",
        meaning: "where events for the agent are POSTed",
    };
    /// One webhook POST's timeout.
    pub const ASKLOOP_DELIVERY_TIMEOUT_MS: EnvVar = EnvVar {
        name: "ASKLOOP_DELIVERY_TIMEOUT_MS",
        default: "10000",
        meaning: "how long one webhook POST may take, in milliseconds",
    };
    /// The claim lease of a delivery.
    pub const ASKLOOP_DELIVERY_LEASE_MS: EnvVar = EnvVar {
        name: "ASKLOOP_DELIVERY_LEASE_MS",
        default: "the timeout + 30000",
        meaning: "how long a claimed delivery stays claimed, in milliseconds (over the timeout)",
    };
    /// The first retry's delay.
    pub const ASKLOOP_DELIVERY_RETRY_BASE_MS: EnvVar = EnvVar {
        name: "ASKLOOP_DELIVERY_RETRY_BASE_MS",
        default: "10000",
        meaning: "the first retry's delay in milliseconds, doubling up to 6 h, for 72 h",
    };
    /// The delivery worker's poll.
    pub const ASKLOOP_DELIVERY_POLL_MS: EnvVar = EnvVar {
        name: "ASKLOOP_DELIVERY_POLL_MS",
        default: "1000",
        meaning: "how often the delivery worker looks for due deliveries, in milliseconds",
    };
    /// How many deliveries to agents are sent at once.
    pub const ASKLOOP_DELIVERY_AGENT_SLOTS: EnvVar = EnvVar {
        name: "ASKLOOP_DELIVERY_AGENT_SLOTS",
        default: "32",
        meaning: "how many deliveries to agents one instance sends at once (a lane of their own, \
                  never shared with operator webhooks)",
    };
    /// How many deliveries go to one agent endpoint at once.
    pub const ASKLOOP_DELIVERY_AGENT_PER_ENDPOINT: EnvVar = EnvVar {
        name: "ASKLOOP_DELIVERY_AGENT_PER_ENDPOINT",
        default: "8",
        meaning: "how many deliveries to one agent's endpoint are in flight at once",
    };
    /// How many deliveries to operator webhooks are sent at once.
    pub const ASKLOOP_DELIVERY_HOOK_SLOTS: EnvVar = EnvVar {
        name: "ASKLOOP_DELIVERY_HOOK_SLOTS",
        default: "16",
        meaning: "how many deliveries to operator webhooks one instance sends at once",
    };
    /// How many deliveries go to one operator webhook at once.
    pub const ASKLOOP_DELIVERY_HOOK_PER_ENDPOINT: EnvVar = EnvVar {
        name: "ASKLOOP_DELIVERY_HOOK_PER_ENDPOINT",
        default: "2",
        meaning: "how many deliveries to one operator webhook are in flight at once",
    };
    /// When an endpoint's circuit breaker opens.
    pub const ASKLOOP_DELIVERY_BREAKER_FAILURES: EnvVar = EnvVar {
        name: "ASKLOOP_DELIVERY_BREAKER_FAILURES",
        default: "3",
        meaning: "attempts in a row that waited out the timeout without an answer, after which an \
                  endpoint is left alone for the cooldown; its deliveries wait untried",
    };
    /// How long an open breaker waits before it probes.
    pub const ASKLOOP_DELIVERY_BREAKER_COOLDOWN_MS: EnvVar = EnvVar {
        name: "ASKLOOP_DELIVERY_BREAKER_COOLDOWN_MS",
        default: "30000",
        meaning: "how long an endpoint whose breaker opened is left alone before one delivery \
                  probes it, in milliseconds",
    };
    /// Test events per webhook.
    pub const ASKLOOP_WEBHOOK_TESTS_PER_WEBHOOK: EnvVar = EnvVar {
        name: "ASKLOOP_WEBHOOK_TESTS_PER_WEBHOOK",
        default: "3",
        meaning: "how many test events (testOperatorWebhook) one webhook may be sent in the window",
    };
    /// Test events per person.
    pub const ASKLOOP_WEBHOOK_TESTS_PER_PERSON: EnvVar = EnvVar {
        name: "ASKLOOP_WEBHOOK_TESTS_PER_PERSON",
        default: "10",
        meaning: "how many test events one person may send to their webhooks in the window",
    };
    /// The window test events are counted over.
    pub const ASKLOOP_WEBHOOK_TEST_WINDOW_MS: EnvVar = EnvVar {
        name: "ASKLOOP_WEBHOOK_TEST_WINDOW_MS",
        default: "600000",
        meaning: "the sliding window test events are counted over, in milliseconds",
    };
    /// The expiry sweeper's period.
    pub const ASKLOOP_EXPIRY_SWEEP_MS: EnvVar = EnvVar {
        name: "ASKLOOP_EXPIRY_SWEEP_MS",
        default: "5000",
        meaning: "how often waiting questions past their time are expired, in milliseconds",
    };
    /// The mail server.
    pub const ASKLOOP_SMTP_URL: EnvVar = EnvVar {
        name: "ASKLOOP_SMTP_URL",
        default: "unset: no mail is sent (operators see questions on the dashboard only)",
        meaning: "the SMTP server notifications go through: smtp://host:25 (STARTTLS when \
                  offered), smtp://host:587?tls=required, or smtps://user:password@host:465",
    };
    /// The sender of notifications.
    pub const ASKLOOP_MAIL_FROM: EnvVar = EnvVar {
        name: "ASKLOOP_MAIL_FROM",
        default: "unset: no mail is sent; set together with ASKLOOP_SMTP_URL",
        meaning: "the From of every notification, e.g. askloop <askloop@example.com>",
    };
    /// The largest GraphQL request body.
    pub const ASKLOOP_GRAPHQL_MAX_BODY_BYTES: EnvVar = EnvVar {
        name: "ASKLOOP_GRAPHQL_MAX_BODY_BYTES",
        default: "1048576",
        meaning: "the largest POST /graphql body in bytes; larger ones are refused (413) unread",
    };
    /// Whether `GET /graphql` serves GraphiQL.
    pub const ASKLOOP_GRAPHIQL: EnvVar = EnvVar {
        name: "ASKLOOP_GRAPHIQL",
        default: "0",
        meaning: "1 serves the GraphiQL explorer on GET /graphql (its scripts come from \
                  unpkg.com, allowed by that page's own CSP); 0 answers 404 there",
    };
    /// How many nodes one GraphQL query may return.
    pub const ASKLOOP_GRAPHQL_MAX_NODES: EnvVar = EnvVar {
        name: "ASKLOOP_GRAPHQL_MAX_NODES",
        default: "10000",
        meaning: "the most nodes one GraphQL query may return, counting each page at its size \
                  (first, 20 when omitted) and nested pages multiplied; larger queries are \
                  refused with QUERY_TOO_COMPLEX before they run",
    };
    /// Failed sign-ins one address may make at once, whatever the handles.
    pub const ASKLOOP_LOGIN_ADDRESS_BURST: EnvVar = EnvVar {
        name: "ASKLOOP_LOGIN_ADDRESS_BURST",
        default: "20",
        meaning: "how many failed sign-ins one address (IPv4, or IPv6 /64) may make in a burst, \
                  whatever the handles; past it each attempt is refused before its password is \
                  checked until the bucket refills",
    };
    /// How often an address earns back one failed sign-in.
    pub const ASKLOOP_LOGIN_ADDRESS_REFILL_MS: EnvVar = EnvVar {
        name: "ASKLOOP_LOGIN_ADDRESS_REFILL_MS",
        default: "3000",
        meaning: "how often an address earns back one failed sign-in of its burst, in \
                  milliseconds",
    };
    /// How many of one address's passwords are checked at once.
    pub const ASKLOOP_LOGIN_CHECKS_PER_ADDRESS: EnvVar = EnvVar {
        name: "ASKLOOP_LOGIN_CHECKS_PER_ADDRESS",
        default: "1",
        meaning: "how many of one address's sign-in passwords are checked (argon2) at once; the \
                  checks are shared round robin among addresses",
    };
    /// How many websockets one instance holds.
    pub const ASKLOOP_MAX_WEBSOCKETS: EnvVar = EnvVar {
        name: "ASKLOOP_MAX_WEBSOCKETS",
        default: "10000",
        meaning: "how many signed-in /graphql/ws connections one instance holds (sockets still \
                  waiting to sign in are not counted); past it a new one is closed with 1013 \
                  (try again later)",
    };
    /// How many anonymous websockets one address may hold open.
    pub const ASKLOOP_MAX_ANONYMOUS_WEBSOCKETS_PER_ADDRESS: EnvVar = EnvVar {
        name: "ASKLOOP_MAX_ANONYMOUS_WEBSOCKETS_PER_ADDRESS",
        default: "8",
        meaning: "how many /graphql/ws connections one address (IPv4, or IPv6 /64) may hold \
                  open before they have signed in; past it the upgrade is refused with 429",
    };
    /// How fast one address may open websockets without credentials.
    pub const ASKLOOP_WEBSOCKET_HANDSHAKES_PER_SECOND: EnvVar = EnvVar {
        name: "ASKLOOP_WEBSOCKET_HANDSHAKES_PER_SECOND",
        default: "10",
        meaning: "how many /graphql/ws upgrades without a session cookie or bearer token one \
                  address may make per second (as a burst, refilled at that rate); past it 429",
    };
    /// How many connections one instance holds.
    pub const ASKLOOP_MAX_CONNECTIONS: EnvVar = EnvVar {
        name: "ASKLOOP_MAX_CONNECTIONS",
        default: "unset: the open-file limit less one in eight (at least 64) of it",
        meaning: "how many TCP connections one instance holds at once (websockets included); \
                  past it a new one is answered 503 and closed",
    };
    /// The share of the connections kept for health checks and credentials.
    pub const ASKLOOP_RESERVED_CONNECTIONS: EnvVar = EnvVar {
        name: "ASKLOOP_RESERVED_CONNECTIONS",
        default: "unset: one in ten of ASKLOOP_MAX_CONNECTIONS",
        meaning: "how many of ASKLOOP_MAX_CONNECTIONS only serve /healthz, /readyz and requests \
                  that carry a credential; others on them are answered 503",
    };
    /// How many connections one address may hold.
    pub const ASKLOOP_MAX_CONNECTIONS_PER_ADDRESS: EnvVar = EnvVar {
        name: "ASKLOOP_MAX_CONNECTIONS_PER_ADDRESS",
        default: "256",
        meaning: "how many TCP connections one address (IPv4, or IPv6 /64) may hold at once; \
                  past it a new one is answered 429 and closed",
    };
    /// How many connections may wait to be accepted.
    pub const ASKLOOP_LISTEN_BACKLOG: EnvVar = EnvVar {
        name: "ASKLOOP_LISTEN_BACKLOG",
        default: "4096",
        meaning: "how many connections the system holds for askloop before it accepts them (the \
                  listen backlog, at most 65535; the kernel also caps it at net.core.somaxconn); \
                  a reconnect storm past it loses handshakes until clients retry",
    };
    /// The proxies whose forwarding headers are believed.
    pub const ASKLOOP_TRUSTED_PROXIES: EnvVar = EnvVar {
        name: "ASKLOOP_TRUSTED_PROXIES",
        default: "unset: none; every client is its connection's peer",
        meaning: "the reverse proxies in front of askloop, as addresses and CIDR ranges separated \
                  by commas (10.0.0.5,10.1.0.0/16); only for a connection from one of them is \
                  the client read from Forwarded or X-Forwarded-For, and every per-address limit \
                  and the audit log use that client",
    };
    /// How long a request's head may take.
    pub const ASKLOOP_HEADER_TIMEOUT_MS: EnvVar = EnvVar {
        name: "ASKLOOP_HEADER_TIMEOUT_MS",
        default: "10000",
        meaning: "how long a request's line and headers may take to arrive, from when the \
                  connection waits for them, in milliseconds; then the connection is closed",
    };
    /// How long a connection may sit silent between requests.
    pub const ASKLOOP_IDLE_TIMEOUT_MS: EnvVar = EnvVar {
        name: "ASKLOOP_IDLE_TIMEOUT_MS",
        default: "5000",
        meaning: "how long a connection with no request in flight may send and receive nothing \
                  (a kept-alive or a never-used one), in milliseconds; then it is closed",
    };
    /// The anomaly monitor's secret.
    pub const ASKLOOP_MONITOR_SECRET: EnvVar = EnvVar {
        name: "ASKLOOP_MONITOR_SECRET",
        default: "unset: the anomaly-signal route answers 503",
        meaning: "the secret the anomaly monitor signs its signals with",
    };
    /// The key agents' secrets are sealed with at rest.
    pub const ASKLOOP_DATA_KEY: EnvVar = EnvVar {
        name: "ASKLOOP_DATA_KEY",
        default: "unset: agents' signing secrets are stored as given (serve warns once)",
        meaning: "base64 of 32 random bytes (openssl rand -base64 32); agents' signing secrets \
                  are sealed with it (ChaCha20-Poly1305) before they are stored",
    };
    /// The built dashboard.
    pub const ASKLOOP_WEB_DIR: EnvVar = EnvVar {
        name: "ASKLOOP_WEB_DIR",
        default: super::DEFAULT_WEB_DIR,
        meaning: "the built dashboard (cargo xtask build-web writes it)",
    };
    /// Pretty or JSON logs.
    pub const ASKLOOP_LOG_FORMAT: EnvVar = EnvVar {
        name: "ASKLOOP_LOG_FORMAT",
        default: "pretty",
        meaning: "log lines: pretty, or json (one object per line)",
    };
    /// The log filter.
    pub const RUST_LOG: EnvVar = EnvVar {
        name: "RUST_LOG",
        default: "info,sqlx=warn,sea_orm=warn,tower_http=info",
        meaning: "which log lines are written (tracing's filter syntax)",
    };
}

/// Every variable askloop reads, in the order `docs/configuration.md` lists them.
pub const ENVIRONMENT: &[EnvVar] = &[
    env::DATABASE_URL,
    env::ASKLOOP_DB_MAX_CONNECTIONS,
    env::ASKLOOP_BIND,
    env::ASKLOOP_PUBLIC_ORIGIN,
    env::CHOVY_SIGNING_SECRET,
    env::CHOVY_SIGNING_SECRET_PREVIOUS,
    env::CHOVY_WEBHOOK_URL,
    env::ASKLOOP_DELIVERY_TIMEOUT_MS,
    env::ASKLOOP_DELIVERY_LEASE_MS,
    env::ASKLOOP_DELIVERY_RETRY_BASE_MS,
    env::ASKLOOP_DELIVERY_POLL_MS,
    env::ASKLOOP_DELIVERY_AGENT_SLOTS,
    env::ASKLOOP_DELIVERY_AGENT_PER_ENDPOINT,
    env::ASKLOOP_DELIVERY_HOOK_SLOTS,
    env::ASKLOOP_DELIVERY_HOOK_PER_ENDPOINT,
    env::ASKLOOP_DELIVERY_BREAKER_FAILURES,
    env::ASKLOOP_DELIVERY_BREAKER_COOLDOWN_MS,
    env::ASKLOOP_WEBHOOK_TESTS_PER_WEBHOOK,
    env::ASKLOOP_WEBHOOK_TESTS_PER_PERSON,
    env::ASKLOOP_WEBHOOK_TEST_WINDOW_MS,
    env::ASKLOOP_EXPIRY_SWEEP_MS,
    env::ASKLOOP_SMTP_URL,
    env::ASKLOOP_MAIL_FROM,
    env::ASKLOOP_GRAPHQL_MAX_BODY_BYTES,
    env::ASKLOOP_GRAPHIQL,
    env::ASKLOOP_GRAPHQL_MAX_NODES,
    env::ASKLOOP_LOGIN_ADDRESS_BURST,
    env::ASKLOOP_LOGIN_ADDRESS_REFILL_MS,
    env::ASKLOOP_LOGIN_CHECKS_PER_ADDRESS,
    env::ASKLOOP_MAX_WEBSOCKETS,
    env::ASKLOOP_MAX_ANONYMOUS_WEBSOCKETS_PER_ADDRESS,
    env::ASKLOOP_WEBSOCKET_HANDSHAKES_PER_SECOND,
    env::ASKLOOP_MAX_CONNECTIONS,
    env::ASKLOOP_RESERVED_CONNECTIONS,
    env::ASKLOOP_MAX_CONNECTIONS_PER_ADDRESS,
    env::ASKLOOP_LISTEN_BACKLOG,
    env::ASKLOOP_TRUSTED_PROXIES,
    env::ASKLOOP_HEADER_TIMEOUT_MS,
    env::ASKLOOP_IDLE_TIMEOUT_MS,
    env::ASKLOOP_MONITOR_SECRET,
    env::ASKLOOP_DATA_KEY,
    env::ASKLOOP_WEB_DIR,
    env::ASKLOOP_LOG_FORMAT,
    env::RUST_LOG,
];

/// The environment section of `askloop --help`: every variable of [`ENVIRONMENT`], what it sets
/// and what happens while it is unset.
pub fn environment_help() -> String {
    let width = ENVIRONMENT
        .iter()
        .map(|var| var.name.len())
        .max()
        .unwrap_or(0);
    let mut help =
        String::from("Environment (read once at start-up; an empty value counts as unset):\n");
    for var in ENVIRONMENT {
        // "unset: what follows" reads better bare than after "default:".
        let default = if var.default.starts_with("unset") {
            format!("[{}]", var.default)
        } else {
            format!("[default: {}]", var.default)
        };
        help.push_str(&format!(
            "  {:width$}  {}\n  {:width$}  {default}\n",
            var.name, var.meaning, ""
        ));
    }
    help
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Pretty,
    /// One JSON object per line, for log shippers.
    Json,
}

/// Everything askloop is configured with.
#[derive(Debug, Clone)]
pub struct Config {
    /// `sqlite://…` or `postgres://…`.
    pub database_url: String,
    /// How many connections a server's pool holds (`ASKLOOP_DB_MAX_CONNECTIONS`, at least
    /// [`crate::db::MIN_POOL`]); `None` is the store's default.
    pub db_max_connections: Option<u32>,
    /// The address to listen on; port 0 picks a free one.
    pub bind: SocketAddr,
    /// Secrets for the agent's signed routes and our outbound events.
    pub signing: SigningKeys,
    /// Secret for the monitor's anomaly signals.
    pub monitor: SigningKeys,
    /// Where answers are delivered to the agent.
    pub webhook_url: Option<String>,
    /// The key registered agents' secrets are sealed with (`ASKLOOP_DATA_KEY`), if set.
    pub data_key: Option<DataKey>,
    /// The built dashboard (index.html and the wasm bundle).
    pub web_dir: PathBuf,
    /// The largest request body accepted on the REST routes.
    pub max_body_bytes: usize,
    /// The largest `POST /graphql` body accepted.
    pub graphql_max_body_bytes: usize,
    /// Whether `GET /graphql` serves GraphiQL (off unless `ASKLOOP_GRAPHIQL=1`).
    pub graphiql: bool,
    /// The most nodes one GraphQL query may return (`ASKLOOP_GRAPHQL_MAX_NODES`).
    pub graphql_max_nodes: usize,
    /// How long in-flight requests get to finish on shutdown.
    pub shutdown_grace: Duration,
    /// How log lines are written.
    pub log_format: LogFormat,
    /// The public origin (scheme://host[:port]) askloop is served from, when behind a proxy.
    pub public_origin: Option<String>,
    /// How live updates are buffered and polled.
    pub live: LiveSettings,
    /// How sign-ins are throttled and their passwords checked per address.
    pub sign_in: SignInSettings,
    /// How connections are admitted, and when quiet ones are closed.
    pub connections: ConnectionSettings,
    /// The proxies whose forwarding headers are believed (`ASKLOOP_TRUSTED_PROXIES`, none).
    pub trusted_proxies: crate::domain::proxies::TrustedProxies,
    /// How events are delivered to the agent and questions expired.
    pub delivery: DeliverySettings,
    /// How outbound webhooks' host names are resolved (the system's resolver; a test's own).
    pub resolver: NameResolver,
    /// How many test events a person may send to their operator webhooks.
    pub webhook_tests: TestSendLimits,
    /// Where notifications are mailed from and through; none sends no mail.
    pub mail: Option<MailSettings>,
}

/// The mail server and sender (`ASKLOOP_SMTP_URL`, `ASKLOOP_MAIL_FROM`).
#[derive(Clone)]
pub struct MailSettings {
    /// The SMTP URL, as given (it may hold a password: never logged).
    pub smtp_url: String,
    /// The sender.
    pub from: lettre::message::Mailbox,
}

impl std::fmt::Debug for MailSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailSettings")
            .field("from", &self.from.to_string())
            .finish_non_exhaustive()
    }
}

/// Admission and timeouts of the connections askloop serves (`serve.rs`, `docs/security.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionSettings {
    /// How long a request's line and headers may take once the connection waits for them
    /// (`ASKLOOP_HEADER_TIMEOUT_MS`, 10 s): a peer that trickles its headers is closed then.
    pub header_timeout: Duration,
    /// How long a connection with no request in flight may move no byte either way
    /// (`ASKLOOP_IDLE_TIMEOUT_MS`, 5 s): idle keep-alive and never-used connections end then.
    pub idle_timeout: Duration,
    /// How many connections the instance holds at once (`ASKLOOP_MAX_CONNECTIONS`); `None`:
    /// the open-file limit found at start-up, less what [`ConnectionSettings::max_connections_for`]
    /// keeps for the database, files and outbound requests.
    pub max_connections: Option<usize>,
    /// How many of those only serve health checks and requests with a credential
    /// (`ASKLOOP_RESERVED_CONNECTIONS`); `None`: one in ten.
    pub reserved: Option<usize>,
    /// How many connections one address may hold (`ASKLOOP_MAX_CONNECTIONS_PER_ADDRESS`, 256).
    pub max_per_address: usize,
    /// How many connections the system holds before they are accepted
    /// (`ASKLOOP_LISTEN_BACKLOG`, 4096): asked for explicitly, since the default of the
    /// runtime's `bind` (1,024) overflows when thousands of dashboards reconnect at once.
    pub listen_backlog: u32,
}

impl Default for ConnectionSettings {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(5),
            max_connections: None,
            reserved: None,
            max_per_address: 256,
            listen_backlog: 4096,
        }
    }
}

impl ConnectionSettings {
    /// The connection cap with `file_limit` open files: the configured one, or the limit less
    /// one in eight of it (at least 64), which the pool, log files, mail and outbound webhooks
    /// need whatever the clients do.
    pub fn max_connections_for(&self, file_limit: u64) -> usize {
        self.max_connections.unwrap_or_else(|| {
            let limit = usize::try_from(file_limit).unwrap_or(usize::MAX);
            limit.saturating_sub((limit / 8).max(64)).max(1)
        })
    }

    /// How many of `max_connections` are kept for health checks and credentials.
    pub fn reserved_of(&self, max_connections: usize) -> usize {
        self.reserved
            .unwrap_or(max_connections / 10)
            .min(max_connections.saturating_sub(1))
    }
}

/// The outbox worker and the expiry sweeper.
#[derive(Debug, Clone, Copy)]
pub struct DeliverySettings {
    /// How long one POST to the agent may take (`ASKLOOP_DELIVERY_TIMEOUT_MS`, 10 s).
    pub timeout: Duration,
    /// How long a claimed delivery stays claimed (`ASKLOOP_DELIVERY_LEASE_MS`, the timeout plus
    /// 30 s): a worker that dies mid-send lets go after this, and the row is sent again.
    pub lease: Duration,
    /// The first retry's delay, doubling each time (`ASKLOOP_DELIVERY_RETRY_BASE_MS`, 10 s).
    pub retry_base: Duration,
    /// The longest delay between retries (6 h).
    pub retry_max: Duration,
    /// How long retries go on before a delivery is exhausted (72 h).
    pub retry_window: Duration,
    /// How often the worker looks for due deliveries (`ASKLOOP_DELIVERY_POLL_MS`, 1 s).
    pub poll: Duration,
    /// How often waiting questions past their time are expired (`ASKLOOP_EXPIRY_SWEEP_MS`, 5 s).
    pub sweep_every: Duration,
    /// How the worker's concurrency is shared between receivers.
    pub lanes: LaneSettings,
    /// Whether anyone's operator webhook may use plain `http://` (off: only an admin's, to a
    /// local host or this deployment's own). Never read from the environment: tests set it,
    /// their receivers speaking plain HTTP under made-up names.
    pub plain_http_hooks: bool,
}

/// How the delivery worker shares its concurrency (docs/security.md#outbound): agents and
/// operator webhooks each have slots of their own, every endpoint at most its share of them,
/// and an endpoint that keeps not answering is left alone for a while by its breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneSettings {
    /// Deliveries to agents in flight at once (`ASKLOOP_DELIVERY_AGENT_SLOTS`, 32).
    pub agent_slots: usize,
    /// Deliveries to one agent endpoint in flight at once (`ASKLOOP_DELIVERY_AGENT_PER_ENDPOINT`,
    /// 8).
    pub agent_per_endpoint: usize,
    /// Deliveries to operator webhooks in flight at once (`ASKLOOP_DELIVERY_HOOK_SLOTS`, 16).
    pub hook_slots: usize,
    /// Deliveries to one operator webhook in flight at once (`ASKLOOP_DELIVERY_HOOK_PER_ENDPOINT`,
    /// 2).
    pub hook_per_endpoint: usize,
    /// When an endpoint's breaker opens and how long it stays open
    /// (`ASKLOOP_DELIVERY_BREAKER_FAILURES`, 3; `ASKLOOP_DELIVERY_BREAKER_COOLDOWN_MS`, 30 s).
    pub breaker: BreakerPolicy,
}

impl Default for LaneSettings {
    fn default() -> Self {
        Self {
            agent_slots: 32,
            agent_per_endpoint: 8,
            hook_slots: 16,
            hook_per_endpoint: 2,
            breaker: BreakerPolicy {
                failures: 3,
                cooldown: Duration::from_secs(30),
            },
        }
    }
}

impl Default for DeliverySettings {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            lease: Duration::from_secs(40),
            retry_base: Duration::from_secs(10),
            retry_max: Duration::from_secs(6 * 3600),
            retry_window: Duration::from_secs(72 * 3600),
            poll: Duration::from_secs(1),
            sweep_every: Duration::from_secs(5),
            lanes: LaneSettings::default(),
            plain_http_hooks: false,
        }
    }
}

/// A duration in milliseconds from the variable `name`, if set.
fn millis(name: &'static str, value: Option<String>) -> Result<Option<Duration>, ConfigError> {
    value
        .map(|raw| match raw.trim().parse::<u64>() {
            Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
            _ => Err(ConfigError {
                name,
                problem: format!("'{raw}' is not a positive number of milliseconds"),
            }),
        })
        .transpose()
}

fn count(name: &'static str, value: Option<String>) -> Result<Option<usize>, ConfigError> {
    value
        .map(|raw| match raw.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(ConfigError {
                name,
                problem: format!("'{raw}' is not a positive whole number"),
            }),
        })
        .transpose()
}

/// A positive count that fits 32 bits from `var`, if set.
fn count_u32(
    var: &EnvVar,
    get: &impl Fn(&EnvVar) -> Option<String>,
) -> Result<Option<u32>, ConfigError> {
    count(var.name, get(var))?
        .map(|n| {
            u32::try_from(n).map_err(|_| ConfigError {
                name: var.name,
                problem: format!("{n} is too large"),
            })
        })
        .transpose()
}

/// A configuration value that could not be used.
#[derive(Debug, thiserror::Error)]
#[error("{name}: {problem}")]
pub struct ConfigError {
    name: &'static str,
    problem: String,
}

impl Config {
    /// The origin links in mail and operator webhooks start with: `ASKLOOP_PUBLIC_ORIGIN`, or
    /// this instance's own address.
    pub fn link_origin(&self) -> String {
        match &self.public_origin {
            Some(origin) => origin.trim_end_matches('/').to_owned(),
            None => {
                let host = if self.bind.ip().is_unspecified() {
                    "localhost".to_owned()
                } else {
                    self.bind.ip().to_string()
                };
                format!("http://{host}:{}", self.bind.port())
            }
        }
    }

    /// A config with askloop's defaults and no secrets.
    pub fn defaults() -> Self {
        Self {
            database_url: DEFAULT_DATABASE_URL.to_owned(),
            db_max_connections: None,
            bind: DEFAULT_BIND
                .parse()
                .unwrap_or_else(|_| unreachable!("valid default")),
            signing: SigningKeys::default(),
            monitor: SigningKeys::default(),
            webhook_url: None,
            data_key: None,
            web_dir: PathBuf::from(DEFAULT_WEB_DIR),
            max_body_bytes: 256 * 1024,
            graphql_max_body_bytes: 1024 * 1024,
            graphiql: false,
            graphql_max_nodes: DEFAULT_MAX_NODES,
            shutdown_grace: Duration::from_secs(20),
            log_format: LogFormat::Pretty,
            public_origin: None,
            live: LiveSettings::default(),
            sign_in: SignInSettings::default(),
            connections: ConnectionSettings::default(),
            trusted_proxies: Default::default(),
            delivery: DeliverySettings::default(),
            resolver: NameResolver::system(),
            webhook_tests: TestSendLimits::default(),
            mail: None,
        }
    }

    /// Read the configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Read the configuration through `lookup` (the environment, or a map in tests). Every
    /// variable is asked for through its [`ENVIRONMENT`] entry, and only those are.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |var: &EnvVar| lookup(var.name).filter(|v| !v.trim().is_empty());
        let read_millis = |var: &EnvVar| millis(var.name, get(var));
        let mut config = Self::defaults();
        if let Some(url) = get(&env::DATABASE_URL) {
            config.database_url = url;
        }
        if let Some(raw) = get(&env::ASKLOOP_DB_MAX_CONNECTIONS) {
            config.db_max_connections = match raw.trim().parse::<u32>() {
                Ok(n) if n >= crate::db::MIN_POOL => Some(n),
                _ => {
                    return Err(ConfigError {
                        name: env::ASKLOOP_DB_MAX_CONNECTIONS.name,
                        problem: format!(
                            "'{raw}' is not a whole number of at least {} (a write transaction \
                             and a read beside it)",
                            crate::db::MIN_POOL
                        ),
                    });
                }
            };
        }
        if let Some(bind) = get(&env::ASKLOOP_BIND) {
            config.bind = bind.parse().map_err(|e| ConfigError {
                name: env::ASKLOOP_BIND.name,
                problem: format!("'{bind}' is not host:port ({e})"),
            })?;
        }
        config.signing = SigningKeys::new(
            get(&env::CHOVY_SIGNING_SECRET),
            get(&env::CHOVY_SIGNING_SECRET_PREVIOUS),
        );
        config.monitor = SigningKeys::new(get(&env::ASKLOOP_MONITOR_SECRET), None);
        config.webhook_url = get(&env::CHOVY_WEBHOOK_URL);
        config.data_key = get(&env::ASKLOOP_DATA_KEY)
            .map(|raw| DataKey::parse(&raw))
            .transpose()
            .map_err(|err| ConfigError {
                name: env::ASKLOOP_DATA_KEY.name,
                problem: err.to_string(),
            })?;
        if let Some(dir) = get(&env::ASKLOOP_WEB_DIR) {
            config.web_dir = PathBuf::from(dir);
        }
        config.log_format = match get(&env::ASKLOOP_LOG_FORMAT).as_deref() {
            None | Some("pretty") => LogFormat::Pretty,
            Some("json") => LogFormat::Json,
            Some(other) => {
                return Err(ConfigError {
                    name: env::ASKLOOP_LOG_FORMAT.name,
                    problem: format!("'{other}' is neither 'pretty' nor 'json'"),
                });
            }
        };
        // The logger reads the filter itself; a filter it cannot parse is refused here, naming
        // the variable, rather than quietly replaced by the default.
        if let Some(filter) = get(&env::RUST_LOG) {
            tracing_subscriber::EnvFilter::try_new(&filter).map_err(|e| ConfigError {
                name: env::RUST_LOG.name,
                problem: format!("'{filter}' is not a log filter ({e})"),
            })?;
        }
        config.public_origin = get(&env::ASKLOOP_PUBLIC_ORIGIN);
        if let Some(bytes) = count(
            env::ASKLOOP_GRAPHQL_MAX_BODY_BYTES.name,
            get(&env::ASKLOOP_GRAPHQL_MAX_BODY_BYTES),
        )? {
            config.graphql_max_body_bytes = bytes;
        }
        config.graphiql = match get(&env::ASKLOOP_GRAPHIQL).as_deref().map(str::trim) {
            None | Some("0") => false,
            Some("1") => true,
            Some(other) => {
                return Err(ConfigError {
                    name: env::ASKLOOP_GRAPHIQL.name,
                    problem: format!("'{other}' is neither 0 nor 1"),
                });
            }
        };
        if let Some(nodes) = count(
            env::ASKLOOP_GRAPHQL_MAX_NODES.name,
            get(&env::ASKLOOP_GRAPHQL_MAX_NODES),
        )? {
            config.graphql_max_nodes = nodes;
        }
        if let Some(burst) = count(
            env::ASKLOOP_LOGIN_ADDRESS_BURST.name,
            get(&env::ASKLOOP_LOGIN_ADDRESS_BURST),
        )? {
            config.sign_in.address_burst = u32::try_from(burst).map_err(|_| ConfigError {
                name: env::ASKLOOP_LOGIN_ADDRESS_BURST.name,
                problem: format!("'{burst}' is more than {}", u32::MAX),
            })?;
        }
        if let Some(refill) = read_millis(&env::ASKLOOP_LOGIN_ADDRESS_REFILL_MS)? {
            if refill > SignInSettings::LONGEST_REFILL {
                return Err(ConfigError {
                    name: env::ASKLOOP_LOGIN_ADDRESS_REFILL_MS.name,
                    problem: format!("'{}' is more than an hour (3600000 ms)", refill.as_millis()),
                });
            }
            config.sign_in.address_refill = refill;
        }
        if let Some(checks) = count(
            env::ASKLOOP_LOGIN_CHECKS_PER_ADDRESS.name,
            get(&env::ASKLOOP_LOGIN_CHECKS_PER_ADDRESS),
        )? {
            config.sign_in.checks_per_address = checks;
        }
        if let Some(sockets) = count(
            env::ASKLOOP_MAX_WEBSOCKETS.name,
            get(&env::ASKLOOP_MAX_WEBSOCKETS),
        )? {
            config.live.max_sockets = sockets;
        }
        if let Some(sockets) = count(
            env::ASKLOOP_MAX_ANONYMOUS_WEBSOCKETS_PER_ADDRESS.name,
            get(&env::ASKLOOP_MAX_ANONYMOUS_WEBSOCKETS_PER_ADDRESS),
        )? {
            config.live.max_anonymous_per_address = sockets;
        }
        if let Some(rate) = count(
            env::ASKLOOP_WEBSOCKET_HANDSHAKES_PER_SECOND.name,
            get(&env::ASKLOOP_WEBSOCKET_HANDSHAKES_PER_SECOND),
        )? {
            config.live.handshakes_per_second = rate;
        }
        if let Some(list) = get(&env::ASKLOOP_TRUSTED_PROXIES) {
            config.trusted_proxies = list.parse().map_err(|e| ConfigError {
                name: env::ASKLOOP_TRUSTED_PROXIES.name,
                problem: format!("{e}"),
            })?;
        }
        let connections = &mut config.connections;
        connections.max_connections = count(
            env::ASKLOOP_MAX_CONNECTIONS.name,
            get(&env::ASKLOOP_MAX_CONNECTIONS),
        )?;
        connections.reserved = get(&env::ASKLOOP_RESERVED_CONNECTIONS)
            .map(|raw| {
                raw.trim().parse::<usize>().map_err(|_| ConfigError {
                    name: env::ASKLOOP_RESERVED_CONNECTIONS.name,
                    problem: format!("'{raw}' is not a whole number"),
                })
            })
            .transpose()?;
        if let (Some(max), Some(reserved)) = (connections.max_connections, connections.reserved)
            && reserved >= max
        {
            return Err(ConfigError {
                name: env::ASKLOOP_RESERVED_CONNECTIONS.name,
                problem: format!("{reserved} must be fewer than ASKLOOP_MAX_CONNECTIONS ({max})"),
            });
        }
        if let Some(per_address) = count(
            env::ASKLOOP_MAX_CONNECTIONS_PER_ADDRESS.name,
            get(&env::ASKLOOP_MAX_CONNECTIONS_PER_ADDRESS),
        )? {
            connections.max_per_address = per_address;
        }
        if let Some(backlog) = count(
            env::ASKLOOP_LISTEN_BACKLOG.name,
            get(&env::ASKLOOP_LISTEN_BACKLOG),
        )? {
            connections.listen_backlog = u32::try_from(backlog)
                .ok()
                .filter(|b| *b <= MAX_LISTEN_BACKLOG)
                .ok_or_else(|| ConfigError {
                    name: env::ASKLOOP_LISTEN_BACKLOG.name,
                    problem: format!("{backlog} is more than {MAX_LISTEN_BACKLOG}"),
                })?;
        }
        if let Some(timeout) = read_millis(&env::ASKLOOP_HEADER_TIMEOUT_MS)? {
            connections.header_timeout = timeout;
        }
        if let Some(timeout) = read_millis(&env::ASKLOOP_IDLE_TIMEOUT_MS)? {
            connections.idle_timeout = timeout;
        }
        let delivery = &mut config.delivery;
        if let Some(timeout) = read_millis(&env::ASKLOOP_DELIVERY_TIMEOUT_MS)? {
            delivery.timeout = timeout;
            delivery.lease = timeout + Duration::from_secs(30);
        }
        if let Some(lease) = read_millis(&env::ASKLOOP_DELIVERY_LEASE_MS)? {
            delivery.lease = lease;
        }
        if let Some(base) = read_millis(&env::ASKLOOP_DELIVERY_RETRY_BASE_MS)? {
            delivery.retry_base = base;
        }
        if let Some(poll) = read_millis(&env::ASKLOOP_DELIVERY_POLL_MS)? {
            delivery.poll = poll;
        }
        if let Some(sweep) = read_millis(&env::ASKLOOP_EXPIRY_SWEEP_MS)? {
            delivery.sweep_every = sweep;
        }
        let read_count = |var: &EnvVar| count(var.name, get(var));
        let lanes = &mut delivery.lanes;
        for (var, slot) in [
            (&env::ASKLOOP_DELIVERY_AGENT_SLOTS, &mut lanes.agent_slots),
            (
                &env::ASKLOOP_DELIVERY_AGENT_PER_ENDPOINT,
                &mut lanes.agent_per_endpoint,
            ),
            (&env::ASKLOOP_DELIVERY_HOOK_SLOTS, &mut lanes.hook_slots),
            (
                &env::ASKLOOP_DELIVERY_HOOK_PER_ENDPOINT,
                &mut lanes.hook_per_endpoint,
            ),
        ] {
            if let Some(n) = read_count(var)? {
                *slot = n;
            }
        }
        if let Some(failures) = count_u32(&env::ASKLOOP_DELIVERY_BREAKER_FAILURES, &get)? {
            lanes.breaker.failures = failures;
        }
        if let Some(cooldown) = read_millis(&env::ASKLOOP_DELIVERY_BREAKER_COOLDOWN_MS)? {
            lanes.breaker.cooldown = cooldown;
        }
        if let Some(n) = count_u32(&env::ASKLOOP_WEBHOOK_TESTS_PER_WEBHOOK, &get)? {
            config.webhook_tests.per_webhook = n;
        }
        if let Some(n) = count_u32(&env::ASKLOOP_WEBHOOK_TESTS_PER_PERSON, &get)? {
            config.webhook_tests.per_person = n;
        }
        if let Some(window) = read_millis(&env::ASKLOOP_WEBHOOK_TEST_WINDOW_MS)? {
            config.webhook_tests.window = window;
        }
        config.mail = match (get(&env::ASKLOOP_SMTP_URL), get(&env::ASKLOOP_MAIL_FROM)) {
            (None, None) => None,
            (Some(_), None) => {
                return Err(ConfigError {
                    name: env::ASKLOOP_MAIL_FROM.name,
                    problem: "must be set when ASKLOOP_SMTP_URL is".into(),
                });
            }
            (None, Some(_)) => {
                return Err(ConfigError {
                    name: env::ASKLOOP_SMTP_URL.name,
                    problem: "must be set when ASKLOOP_MAIL_FROM is".into(),
                });
            }
            (Some(smtp_url), Some(from)) => {
                lettre::AsyncSmtpTransport::<lettre::Tokio1Executor>::from_url(smtp_url.trim())
                    .map_err(|e| ConfigError {
                        name: env::ASKLOOP_SMTP_URL.name,
                        // The URL itself is not repeated: it may carry a password.
                        problem: format!("not an SMTP URL ({e})"),
                    })?;
                let from = from.trim().parse().map_err(|e| ConfigError {
                    name: env::ASKLOOP_MAIL_FROM.name,
                    problem: format!("'{from}' is not a mail address ({e})"),
                })?;
                Some(MailSettings {
                    smtp_url: smtp_url.trim().to_owned(),
                    from,
                })
            }
        };
        // A lease shorter than a send would let a second worker take a delivery still in flight.
        if delivery.lease <= delivery.timeout {
            return Err(ConfigError {
                name: env::ASKLOOP_DELIVERY_LEASE_MS.name,
                problem: format!(
                    "the lease ({:?}) must be longer than the delivery timeout ({:?})",
                    delivery.lease, delivery.timeout
                ),
            });
        }
        Ok(config)
    }
}

/// How sign-ins are throttled per address (`ASKLOOP_LOGIN_ADDRESS_BURST`,
/// `ASKLOOP_LOGIN_ADDRESS_REFILL_MS`, `ASKLOOP_LOGIN_CHECKS_PER_ADDRESS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignInSettings {
    /// Failed sign-ins one address may make in a burst, whatever the handles (20).
    pub address_burst: u32,
    /// How often an address earns back one failed sign-in (every 3 s: 20 a minute).
    pub address_refill: Duration,
    /// How many of one address's passwords are checked at once (1).
    pub checks_per_address: usize,
    /// How long one handle waits after its free allowance of failures, doubling with each
    /// failure after it (a second). Not an environment variable: the tests hold it long, so a
    /// slow machine cannot outlast it.
    pub first_hold: Duration,
}

impl SignInSettings {
    /// The longest an address may be made to wait for one failed sign-in back (an hour).
    pub const LONGEST_REFILL: Duration = Duration::from_secs(3600);
}

impl Default for SignInSettings {
    fn default() -> Self {
        Self {
            address_burst: 20,
            address_refill: Duration::from_secs(3),
            checks_per_address: 1,
            first_hold: Duration::from_secs(1),
        }
    }
}

/// How the hub runs.
#[derive(Debug, Clone, Copy)]
pub struct LiveSettings {
    /// How many events a subscriber may fall behind before it is cut off (and re-syncs).
    pub buffer: usize,
    /// The floor under the hints: the feed reads at least this often.
    pub poll: Duration,
    /// How long a websocket may stay uninitialised before it is closed with 4408.
    pub init_timeout: Duration,
    /// How often the server pings each websocket.
    pub ping_every: Duration,
    /// How long a websocket may stay silent (no pong, no message) before it is dropped.
    pub dead_after: Duration,
    /// How often a websocket's session or key is looked up again (one query per socket each
    /// time), so a socket ends soon after its credential does.
    pub recheck_every: Duration,
    /// How many websockets one instance holds at once.
    pub max_sockets: usize,
    /// How many of them may be waiting for `connection_init` at once.
    pub max_uninitialised: usize,
    /// How many websockets one address may hold before they sign in
    /// (`ASKLOOP_MAX_ANONYMOUS_WEBSOCKETS_PER_ADDRESS`).
    pub max_anonymous_per_address: usize,
    /// How many upgrades without a credential one address may make per second, as a burst
    /// refilled at that rate (`ASKLOOP_WEBSOCKET_HANDSHAKES_PER_SECOND`).
    pub handshakes_per_second: usize,
    /// How many operations one websocket may run at once.
    pub max_subscriptions: usize,
    /// The largest message (and frame) a websocket peer may send, in bytes.
    pub max_message_bytes: usize,
    /// How many messages from one peer may wait for the protocol to take them.
    pub inbox: usize,
}

impl Default for LiveSettings {
    fn default() -> Self {
        Self {
            buffer: 1024,
            poll: Duration::from_secs(2),
            init_timeout: Duration::from_secs(10),
            ping_every: Duration::from_secs(15),
            dead_after: Duration::from_secs(45),
            recheck_every: Duration::from_secs(60),
            max_sockets: 10_000,
            max_uninitialised: 1_000,
            max_anonymous_per_address: 8,
            handshakes_per_second: 10,
            max_subscriptions: 32,
            max_message_bytes: 64 * 1024,
            inbox: 16,
        }
    }
}

/// Turns the host names of outbound webhooks into addresses: the system's resolver
/// (`getaddrinfo`, as the standard library uses) unless a test puts its own in the config.
#[derive(Clone)]
pub struct NameResolver(Arc<dyn Resolve>);

impl NameResolver {
    /// The system's resolver.
    pub fn system() -> Self {
        Self(Arc::new(SystemResolver))
    }

    /// Resolve with `resolver` instead (a test's fixed map, a custom DNS client).
    pub fn new(resolver: Arc<dyn Resolve>) -> Self {
        Self(resolver)
    }

    /// This resolver as reqwest takes it.
    pub fn resolver(&self) -> Arc<dyn Resolve> {
        self.0.clone()
    }
}

impl Default for NameResolver {
    fn default() -> Self {
        Self::system()
    }
}

impl std::fmt::Debug for NameResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NameResolver(..)")
    }
}

/// `getaddrinfo` on a blocking thread (tokio's `lookup_host`).
struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            Ok(Box::new(found.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_values_count_as_unset() {
        let config = Config::from_lookup(|name| match name {
            "CHOVY_SIGNING_SECRET" => Some(String::new()),
            "ASKLOOP_BIND" => Some("0.0.0.0:8080".into()),
            _ => None,
        })
        .expect("valid");
        assert!(!config.signing.is_configured());
        assert_eq!(config.bind.port(), 8080);
        assert_eq!(config.database_url, DEFAULT_DATABASE_URL);
    }

    #[test]
    fn a_data_key_is_base64_of_thirty_two_bytes_or_askloop_refuses_to_start() {
        let good = Config::from_lookup(|name| {
            (name == "ASKLOOP_DATA_KEY")
                .then(|| "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=".to_owned())
        })
        .expect("valid");
        assert!(good.data_key.is_some());
        assert!(!format!("{good:?}").contains("AAECAwQF"), "never printed");
        for bad in ["short", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg=="] {
            let err =
                Config::from_lookup(|name| (name == "ASKLOOP_DATA_KEY").then(|| bad.to_owned()))
                    .expect_err("a malformed key");
            assert!(
                err.to_string()
                    .starts_with("ASKLOOP_DATA_KEY: must be base64 of exactly 32 bytes"),
                "{err}"
            );
        }
    }

    #[test]
    fn delivery_timings_are_read_in_milliseconds_and_nonsense_is_refused() {
        let config = Config::from_lookup(|name| match name {
            "ASKLOOP_DELIVERY_TIMEOUT_MS" => Some("500".into()),
            "ASKLOOP_DELIVERY_RETRY_BASE_MS" => Some("20".into()),
            _ => None,
        })
        .expect("valid");
        assert_eq!(config.delivery.timeout, Duration::from_millis(500));
        assert_eq!(config.delivery.lease, Duration::from_millis(30_500));
        assert_eq!(config.delivery.retry_base, Duration::from_millis(20));
        let short = Config::from_lookup(|name| match name {
            "ASKLOOP_DELIVERY_TIMEOUT_MS" => Some("5000".into()),
            "ASKLOOP_DELIVERY_LEASE_MS" => Some("5000".into()),
            _ => None,
        })
        .expect_err("a lease no longer than the timeout");
        assert!(
            short
                .to_string()
                .contains("longer than the delivery timeout"),
            "{short}"
        );
        for bad in ["0", "-5", "soon"] {
            let err = Config::from_lookup(|name| {
                (name == "ASKLOOP_DELIVERY_LEASE_MS").then(|| bad.to_owned())
            })
            .expect_err("invalid");
            assert!(
                err.to_string().starts_with("ASKLOOP_DELIVERY_LEASE_MS"),
                "{err}"
            );
        }
    }

    #[test]
    fn mail_needs_both_variables_and_usable_values() {
        let with = |pairs: &'static [(&'static str, &'static str)]| {
            Config::from_lookup(move |name| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| (*v).to_owned())
            })
        };
        let err = with(&[("ASKLOOP_SMTP_URL", "smtp://127.0.0.1:25")]).expect_err("no sender");
        assert!(err.to_string().starts_with("ASKLOOP_MAIL_FROM: "), "{err}");
        let err = with(&[("ASKLOOP_MAIL_FROM", "a@example.com")]).expect_err("no server");
        assert!(err.to_string().starts_with("ASKLOOP_SMTP_URL: "), "{err}");
        let err = with(&[
            ("ASKLOOP_SMTP_URL", "http://user:secret@example.com"),
            ("ASKLOOP_MAIL_FROM", "a@example.com"),
        ])
        .expect_err("not smtp");
        assert!(err.to_string().starts_with("ASKLOOP_SMTP_URL: "), "{err}");
        assert!(!err.to_string().contains("secret"), "{err}");
        let err = with(&[
            ("ASKLOOP_SMTP_URL", "smtp://127.0.0.1:25"),
            ("ASKLOOP_MAIL_FROM", "not an address"),
        ])
        .expect_err("bad sender");
        assert!(err.to_string().starts_with("ASKLOOP_MAIL_FROM: "), "{err}");
        let config = with(&[
            ("ASKLOOP_SMTP_URL", "smtp://127.0.0.1:2525"),
            ("ASKLOOP_MAIL_FROM", "askloop <askloop@example.com>"),
        ])
        .expect("valid");
        let mail = config.mail.expect("mail on");
        assert_eq!(mail.from.email.to_string(), "askloop@example.com");
    }

    #[test]
    fn every_variable_is_read_through_the_table_and_only_those() {
        let asked = std::cell::RefCell::new(Vec::new());
        Config::from_lookup(|name| {
            asked.borrow_mut().push(name.to_owned());
            None
        })
        .expect("the defaults are valid");
        let mut asked = asked.into_inner();
        asked.sort();
        asked.dedup();
        let mut table: Vec<String> = ENVIRONMENT.iter().map(|v| v.name.to_owned()).collect();
        table.sort();
        let listed = table.len();
        table.dedup();
        assert_eq!(table.len(), listed, "a variable is listed twice");
        assert_eq!(asked, table, "read by Config vs listed in ENVIRONMENT");
    }

    /// The variable names in `text`'s lines, each found by `name_of`.
    fn names(text: &str, name_of: impl Fn(&str) -> Option<&str>) -> Vec<String> {
        let mut names: Vec<String> = text
            .lines()
            .filter_map(name_of)
            .map(str::to_owned)
            .collect();
        names.sort();
        names.dedup();
        names
    }

    fn is_variable(word: &str) -> bool {
        !word.is_empty()
            && word.starts_with(|c: char| c.is_ascii_uppercase())
            && word
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    }

    /// Fail, naming the difference, unless `found` in `place` is exactly [`ENVIRONMENT`].
    fn assert_lists_the_table(place: &str, found: &[String]) {
        let table: Vec<&str> = ENVIRONMENT.iter().map(|v| v.name).collect();
        let missing: Vec<&str> = table
            .iter()
            .copied()
            .filter(|name| !found.iter().any(|f| f == name))
            .collect();
        let extra: Vec<&String> = found
            .iter()
            .filter(|f| !table.contains(&f.as_str()))
            .collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{place} has drifted from ENVIRONMENT in api/src/config.rs: \
             missing {missing:?}, not in the table {extra:?}"
        );
    }

    #[test]
    fn the_configuration_page_and_env_example_list_exactly_the_variables_of_the_table() {
        let page = include_str!("../../docs/configuration.md");
        let env_example = include_str!("../../.env.example");

        // The configuration page's table: the rows of its "Configuration" section whose first
        // cell is a variable in backticks.
        let section = page
            .split("\n## ")
            .find(|part| part.starts_with("Configuration"))
            .expect("docs/configuration.md has a Configuration section");
        let in_page = names(section, |line| {
            let cell = line.strip_prefix("| `")?;
            let name = &cell[..cell.find('`')?];
            is_variable(name).then_some(name)
        });
        assert_lists_the_table("docs/configuration.md's configuration table", &in_page);

        // `.env.example`: every `NAME=` line, commented-out alternatives included.
        let in_example = names(env_example, |line| {
            let line = line.trim_start_matches('#').trim_start();
            let name = &line[..line.find('=')?];
            is_variable(name).then_some(name)
        });
        assert_lists_the_table(".env.example", &in_example);
    }

    #[test]
    fn the_table_states_the_defaults_config_uses() {
        let config = Config::defaults();
        let ms = |var: &EnvVar| -> u128 { var.default.parse().expect("a number") };
        assert_eq!(env::DATABASE_URL.default, config.database_url);
        assert_eq!(env::ASKLOOP_BIND.default, config.bind.to_string());
        assert_eq!(PathBuf::from(env::ASKLOOP_WEB_DIR.default), config.web_dir);
        assert_eq!(config.log_format, LogFormat::Pretty);
        assert_eq!(env::ASKLOOP_LOG_FORMAT.default, "pretty");
        let delivery = config.delivery;
        assert_eq!(
            ms(&env::ASKLOOP_DELIVERY_TIMEOUT_MS),
            delivery.timeout.as_millis()
        );
        assert_eq!(
            ms(&env::ASKLOOP_DELIVERY_RETRY_BASE_MS),
            delivery.retry_base.as_millis()
        );
        assert_eq!(
            ms(&env::ASKLOOP_DELIVERY_POLL_MS),
            delivery.poll.as_millis()
        );
        assert_eq!(
            ms(&env::ASKLOOP_EXPIRY_SWEEP_MS),
            delivery.sweep_every.as_millis()
        );
        assert_eq!(delivery.lease, delivery.timeout + Duration::from_secs(30));
        let lanes = delivery.lanes;
        let count = |var: &EnvVar| -> usize { var.default.parse().expect("a number") };
        assert_eq!(count(&env::ASKLOOP_DELIVERY_AGENT_SLOTS), lanes.agent_slots);
        assert_eq!(
            count(&env::ASKLOOP_DELIVERY_AGENT_PER_ENDPOINT),
            lanes.agent_per_endpoint
        );
        assert_eq!(count(&env::ASKLOOP_DELIVERY_HOOK_SLOTS), lanes.hook_slots);
        assert_eq!(
            count(&env::ASKLOOP_DELIVERY_HOOK_PER_ENDPOINT),
            lanes.hook_per_endpoint
        );
        assert_eq!(
            count(&env::ASKLOOP_DELIVERY_BREAKER_FAILURES),
            lanes.breaker.failures as usize
        );
        assert_eq!(
            ms(&env::ASKLOOP_DELIVERY_BREAKER_COOLDOWN_MS),
            lanes.breaker.cooldown.as_millis()
        );
        let tests = config.webhook_tests;
        assert_eq!(
            count(&env::ASKLOOP_WEBHOOK_TESTS_PER_WEBHOOK),
            tests.per_webhook as usize
        );
        assert_eq!(
            count(&env::ASKLOOP_WEBHOOK_TESTS_PER_PERSON),
            tests.per_person as usize
        );
        assert_eq!(
            ms(&env::ASKLOOP_WEBHOOK_TEST_WINDOW_MS),
            tests.window.as_millis()
        );
        assert_eq!(
            env::ASKLOOP_GRAPHQL_MAX_NODES.default,
            config.graphql_max_nodes.to_string()
        );
        let connections = config.connections;
        assert_eq!(
            ms(&env::ASKLOOP_HEADER_TIMEOUT_MS),
            connections.header_timeout.as_millis()
        );
        assert_eq!(
            ms(&env::ASKLOOP_IDLE_TIMEOUT_MS),
            connections.idle_timeout.as_millis()
        );
        assert_eq!(
            env::ASKLOOP_MAX_CONNECTIONS_PER_ADDRESS.default,
            connections.max_per_address.to_string()
        );
        assert_eq!(
            env::ASKLOOP_LISTEN_BACKLOG.default,
            connections.listen_backlog.to_string()
        );
        assert_eq!(
            env::ASKLOOP_MAX_ANONYMOUS_WEBSOCKETS_PER_ADDRESS.default,
            config.live.max_anonymous_per_address.to_string()
        );
        assert_eq!(
            env::ASKLOOP_WEBSOCKET_HANDSHAKES_PER_SECOND.default,
            config.live.handshakes_per_second.to_string()
        );
        assert_eq!(
            env::ASKLOOP_LOGIN_ADDRESS_BURST.default,
            config.sign_in.address_burst.to_string()
        );
        assert_eq!(
            ms(&env::ASKLOOP_LOGIN_ADDRESS_REFILL_MS),
            config.sign_in.address_refill.as_millis()
        );
        assert_eq!(
            env::ASKLOOP_LOGIN_CHECKS_PER_ADDRESS.default,
            config.sign_in.checks_per_address.to_string()
        );
    }

    #[test]
    fn the_sign_in_limits_are_read_and_nonsense_is_refused() {
        let config = Config::from_lookup(|name| match name {
            "ASKLOOP_LOGIN_ADDRESS_BURST" => Some("50".into()),
            "ASKLOOP_LOGIN_ADDRESS_REFILL_MS" => Some("250".into()),
            "ASKLOOP_LOGIN_CHECKS_PER_ADDRESS" => Some("2".into()),
            _ => None,
        })
        .expect("valid");
        assert_eq!(config.sign_in.address_burst, 50);
        assert_eq!(config.sign_in.address_refill, Duration::from_millis(250));
        assert_eq!(config.sign_in.checks_per_address, 2);
        for (name, raw) in [
            ("ASKLOOP_LOGIN_ADDRESS_BURST", "0"),
            ("ASKLOOP_LOGIN_ADDRESS_BURST", "99999999999"),
            ("ASKLOOP_LOGIN_ADDRESS_REFILL_MS", "3s"),
            ("ASKLOOP_LOGIN_ADDRESS_REFILL_MS", "0"),
            ("ASKLOOP_LOGIN_ADDRESS_REFILL_MS", "3600001"),
            ("ASKLOOP_LOGIN_CHECKS_PER_ADDRESS", "0"),
            ("ASKLOOP_LOGIN_CHECKS_PER_ADDRESS", "one"),
        ] {
            let err =
                Config::from_lookup(|n| (n == name).then(|| raw.into())).expect_err("refused");
            assert!(
                err.to_string().starts_with(&format!("{name}: '{raw}'")),
                "{err}"
            );
        }
    }

    #[test]
    fn the_help_text_names_every_variable_with_its_default() {
        let help = environment_help();
        for var in ENVIRONMENT {
            assert!(help.contains(var.name), "{} missing", var.name);
            assert!(
                help.contains(&format!("{}]\n", var.default)),
                "{}'s default missing",
                var.name
            );
        }
    }

    #[test]
    fn lanes_breaker_and_test_limits_are_read_and_nonsense_is_refused() {
        let config = Config::from_lookup(|name| match name {
            "ASKLOOP_DELIVERY_AGENT_SLOTS" => Some("4".into()),
            "ASKLOOP_DELIVERY_AGENT_PER_ENDPOINT" => Some("2".into()),
            "ASKLOOP_DELIVERY_HOOK_SLOTS" => Some("3".into()),
            "ASKLOOP_DELIVERY_HOOK_PER_ENDPOINT" => Some("1".into()),
            "ASKLOOP_DELIVERY_BREAKER_FAILURES" => Some("5".into()),
            "ASKLOOP_DELIVERY_BREAKER_COOLDOWN_MS" => Some("1500".into()),
            "ASKLOOP_WEBHOOK_TESTS_PER_WEBHOOK" => Some("7".into()),
            "ASKLOOP_WEBHOOK_TESTS_PER_PERSON" => Some("9".into()),
            "ASKLOOP_WEBHOOK_TEST_WINDOW_MS" => Some("60000".into()),
            _ => None,
        })
        .expect("valid");
        let lanes = config.delivery.lanes;
        assert_eq!(
            (
                lanes.agent_slots,
                lanes.agent_per_endpoint,
                lanes.hook_slots,
                lanes.hook_per_endpoint
            ),
            (4, 2, 3, 1)
        );
        assert_eq!(lanes.breaker.failures, 5);
        assert_eq!(lanes.breaker.cooldown, Duration::from_millis(1500));
        assert_eq!(
            config.webhook_tests,
            TestSendLimits {
                per_webhook: 7,
                per_person: 9,
                window: Duration::from_secs(60),
            }
        );
        for (name, bad) in [
            ("ASKLOOP_DELIVERY_HOOK_SLOTS", "0"),
            ("ASKLOOP_DELIVERY_AGENT_PER_ENDPOINT", "many"),
            ("ASKLOOP_DELIVERY_BREAKER_FAILURES", "99999999999"),
            ("ASKLOOP_WEBHOOK_TESTS_PER_PERSON", "-1"),
            ("ASKLOOP_WEBHOOK_TEST_WINDOW_MS", "0"),
        ] {
            let err =
                Config::from_lookup(|n| (n == name).then(|| bad.to_owned())).expect_err("refused");
            assert!(err.to_string().starts_with(&format!("{name}: ")), "{err}");
        }
    }

    #[test]
    fn an_unreadable_log_filter_names_the_variable() {
        let err = Config::from_lookup(|name| (name == "RUST_LOG").then(|| "info,x=loud".into()))
            .expect_err("invalid");
        assert!(err.to_string().starts_with("RUST_LOG: "), "{err}");
        Config::from_lookup(|name| (name == "RUST_LOG").then(|| "info,askloop=debug".into()))
            .expect("a valid filter");
    }

    #[test]
    fn graphiql_is_off_unless_set_to_one() {
        assert!(!Config::from_lookup(|_| None).expect("valid").graphiql);
        let on = Config::from_lookup(|name| (name == "ASKLOOP_GRAPHIQL").then(|| "1".into()));
        assert!(on.expect("valid").graphiql);
        let err = Config::from_lookup(|name| (name == "ASKLOOP_GRAPHIQL").then(|| "yes".into()))
            .expect_err("refused");
        assert_eq!(err.name, "ASKLOOP_GRAPHIQL");
        assert!(err.problem.contains("neither 0 nor 1"), "{}", err.problem);
    }

    #[test]
    fn the_graphql_limits_and_socket_cap_are_read_and_checked() {
        let config = Config::from_lookup(|name| match name {
            "ASKLOOP_GRAPHQL_MAX_BODY_BYTES" => Some("2048".into()),
            "ASKLOOP_MAX_WEBSOCKETS" => Some("7".into()),
            "ASKLOOP_GRAPHQL_MAX_NODES" => Some("500".into()),
            _ => None,
        })
        .expect("valid");
        assert_eq!(config.graphql_max_body_bytes, 2048);
        assert_eq!(config.live.max_sockets, 7);
        assert_eq!(config.graphql_max_nodes, 500);
        for (name, raw) in [
            ("ASKLOOP_GRAPHQL_MAX_BODY_BYTES", "0"),
            ("ASKLOOP_GRAPHQL_MAX_BODY_BYTES", "1MiB"),
            ("ASKLOOP_GRAPHQL_MAX_NODES", "0"),
            ("ASKLOOP_GRAPHQL_MAX_NODES", "ten thousand"),
            ("ASKLOOP_MAX_WEBSOCKETS", "-1"),
        ] {
            let err =
                Config::from_lookup(|n| (n == name).then(|| raw.into())).expect_err("refused");
            assert!(
                err.to_string().starts_with(&format!("{name}: '{raw}'")),
                "{err}"
            );
        }
    }

    #[test]
    fn the_pool_size_is_read_and_a_pool_too_small_to_write_is_refused() {
        assert_eq!(Config::defaults().db_max_connections, None);
        let config =
            Config::from_lookup(|name| (name == "ASKLOOP_DB_MAX_CONNECTIONS").then(|| "5".into()))
                .expect("valid");
        assert_eq!(config.db_max_connections, Some(5));
        for bad in ["0", "1", "-3", "many"] {
            let err = Config::from_lookup(|name| {
                (name == "ASKLOOP_DB_MAX_CONNECTIONS").then(|| bad.to_owned())
            })
            .expect_err("refused");
            assert!(
                err.to_string().starts_with(&format!(
                    "ASKLOOP_DB_MAX_CONNECTIONS: '{bad}' is not a whole number of at least 2"
                )),
                "{err}"
            );
        }
        assert_eq!(
            env::ASKLOOP_DB_MAX_CONNECTIONS.default,
            format!(
                "{} on SQLite, {} on PostgreSQL",
                crate::db::SQLITE_CONNECTIONS,
                crate::db::POSTGRES_CONNECTIONS
            )
        );
    }

    #[test]
    fn the_connection_limits_are_read_and_checked() {
        let config = Config::from_lookup(|name| match name {
            "ASKLOOP_MAX_ANONYMOUS_WEBSOCKETS_PER_ADDRESS" => Some("3".into()),
            "ASKLOOP_WEBSOCKET_HANDSHAKES_PER_SECOND" => Some("4".into()),
            "ASKLOOP_MAX_CONNECTIONS" => Some("900".into()),
            "ASKLOOP_RESERVED_CONNECTIONS" => Some("0".into()),
            "ASKLOOP_MAX_CONNECTIONS_PER_ADDRESS" => Some("50".into()),
            "ASKLOOP_LISTEN_BACKLOG" => Some("8192".into()),
            "ASKLOOP_HEADER_TIMEOUT_MS" => Some("2500".into()),
            "ASKLOOP_IDLE_TIMEOUT_MS" => Some("1500".into()),
            _ => None,
        })
        .expect("valid");
        assert_eq!(config.live.max_anonymous_per_address, 3);
        assert_eq!(config.live.handshakes_per_second, 4);
        let connections = config.connections;
        assert_eq!(connections.max_connections_for(20_000), 900);
        assert_eq!(connections.reserved_of(900), 0);
        assert_eq!(connections.max_per_address, 50);
        assert_eq!(connections.listen_backlog, 8192);
        assert_eq!(connections.header_timeout, Duration::from_millis(2500));
        assert_eq!(connections.idle_timeout, Duration::from_millis(1500));
        for (name, raw) in [
            ("ASKLOOP_MAX_ANONYMOUS_WEBSOCKETS_PER_ADDRESS", "0"),
            ("ASKLOOP_WEBSOCKET_HANDSHAKES_PER_SECOND", "fast"),
            ("ASKLOOP_MAX_CONNECTIONS", "0"),
            ("ASKLOOP_RESERVED_CONNECTIONS", "-1"),
            ("ASKLOOP_MAX_CONNECTIONS_PER_ADDRESS", "many"),
            ("ASKLOOP_LISTEN_BACKLOG", "0"),
            ("ASKLOOP_HEADER_TIMEOUT_MS", "0"),
            ("ASKLOOP_IDLE_TIMEOUT_MS", "5s"),
        ] {
            let err =
                Config::from_lookup(|n| (n == name).then(|| raw.into())).expect_err("refused");
            assert!(
                err.to_string().starts_with(&format!("{name}: '{raw}'")),
                "{err}"
            );
        }
        let err = Config::from_lookup(|name| match name {
            "ASKLOOP_MAX_CONNECTIONS" => Some("100".into()),
            "ASKLOOP_RESERVED_CONNECTIONS" => Some("100".into()),
            _ => None,
        })
        .expect_err("a reserve as large as the cap");
        assert!(
            err.to_string()
                .starts_with("ASKLOOP_RESERVED_CONNECTIONS: 100 must be fewer"),
            "{err}"
        );
        let err =
            Config::from_lookup(|name| (name == "ASKLOOP_LISTEN_BACKLOG").then(|| "70000".into()))
                .expect_err("a backlog past the kernel's ceiling");
        assert!(
            err.to_string()
                .starts_with("ASKLOOP_LISTEN_BACKLOG: 70000 is more than 65535"),
            "{err}"
        );
        let err = Config::from_lookup(|name| match name {
            "ASKLOOP_MAX_CONNECTIONS" => Some("100".into()),
            "ASKLOOP_RESERVED_CONNECTIONS" => Some("100".into()),
            _ => None,
        })
        .expect_err("a reserve as large as the cap");
        assert!(
            err.to_string()
                .starts_with("ASKLOOP_RESERVED_CONNECTIONS: 100 must be fewer"),
            "{err}"
        );
    }

    #[test]
    fn the_connection_cap_follows_the_file_limit_and_keeps_a_reserve() {
        let connections = ConnectionSettings::default();
        assert_eq!(connections.max_connections_for(20_000), 17_500);
        assert_eq!(connections.max_connections_for(1_024), 896);
        assert_eq!(connections.max_connections_for(256), 192);
        assert_eq!(connections.max_connections_for(10), 1);
        assert_eq!(connections.reserved_of(17_500), 1_750);
        assert_eq!(connections.reserved_of(1), 0);
    }

    #[test]
    fn trusted_proxies_are_read_and_a_bad_item_stops_start_up_naming_it() {
        let config = Config::from_lookup(|name| {
            (name == "ASKLOOP_TRUSTED_PROXIES").then(|| "127.0.0.1, 10.0.0.0/8".into())
        })
        .expect("valid");
        assert_eq!(
            config.trusted_proxies.to_string(),
            "127.0.0.1/32,10.0.0.0/8"
        );
        assert!(Config::defaults().trusted_proxies.is_empty());
        let err = Config::from_lookup(|name| {
            (name == "ASKLOOP_TRUSTED_PROXIES").then(|| "10.0.0.1,proxy.internal".into())
        })
        .expect_err("a host name");
        assert!(
            err.to_string()
                .starts_with("ASKLOOP_TRUSTED_PROXIES: 'proxy.internal' is not an IP address"),
            "{err}"
        );
    }

    #[test]
    fn a_bad_bind_address_names_the_variable() {
        let err = Config::from_lookup(|name| (name == "ASKLOOP_BIND").then(|| "nope".into()))
            .expect_err("invalid");
        assert!(err.to_string().starts_with("ASKLOOP_BIND: 'nope'"), "{err}");
    }
}
