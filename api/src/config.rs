//! One [`Config`], built once (from the environment in `main`, in code in tests) and passed down.
//! Secrets live in [`SigningKeys`] and are never printed.
//!
//! What askloop reads from the environment is one annotated struct, [`Settings`]: its fields
//! name the variables, their help and their defaults, and [`Config::from_settings`] turns them
//! into the configuration the rest of askloop reads, checking what no single value can.
//! `askloop --help` prints them ([`environment_help`]), and a test fails when the configuration
//! table in `docs/configuration.md` or `.env.example` names a different set.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::domain::delivery::{BreakerPolicy, TestSendLimits};
use crate::domain::sealing::DataKey;
use crate::domain::signing::SigningKeys;
use crate::net::client_address::TrustedProxies;

mod settings;

pub use settings::{DEFAULT_LOG_FILTER, Secret, Settings, Variable, environment_help};

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
    /// Which log lines are written (`RUST_LOG`, tracing's filter syntax).
    pub log_filter: String,
    /// The public origin (scheme://host[:port]) askloop is served from, when behind a proxy.
    pub public_origin: Option<String>,
    /// How live updates are buffered and polled.
    pub live: LiveSettings,
    /// How sign-ins are throttled and their passwords checked per address.
    pub sign_in: SignInSettings,
    /// How connections are admitted, and when quiet ones are closed.
    pub connections: ConnectionSettings,
    /// The proxies whose forwarding headers are believed (`ASKLOOP_TRUSTED_PROXIES`, none).
    pub trusted_proxies: TrustedProxies,
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
    /// askloop's defaults: those of [`Settings`].
    fn default() -> Self {
        Config::defaults().connections
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
    /// askloop's defaults: those of [`Settings`].
    fn default() -> Self {
        Config::defaults().delivery.lanes
    }
}

impl Default for DeliverySettings {
    /// askloop's defaults: those of [`Settings`].
    fn default() -> Self {
        Config::defaults().delivery
    }
}

/// A configuration value that could not be used: the variable, and what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[error("{name}: {problem}")]
pub struct ConfigError {
    name: String,
    problem: String,
}

impl ConfigError {
    /// A refusal of variable `name`'s value.
    fn new(name: &str, problem: impl Into<String>) -> Self {
        Self {
            name: name.to_owned(),
            problem: problem.into(),
        }
    }
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

    /// A config with askloop's defaults (those of [`Settings`]) and no secrets.
    pub fn defaults() -> Self {
        Self::from_settings(Settings::defaults())
            .unwrap_or_else(|err| unreachable!("askloop's own defaults are refused: {err}"))
    }

    /// Read the configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Read the configuration through `lookup` (the environment, or a map in tests): the
    /// [`Settings`] it gives, checked together.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Self::from_settings(Settings::from_lookup(lookup)?)
    }

    /// The configuration `settings` make, refused when they do not fit together. Every field is
    /// named here, so a setting added to [`Settings`] and not used fails to compile.
    pub fn from_settings(settings: Settings) -> Result<Self, ConfigError> {
        let Settings {
            database_url,
            db_max_connections,
            bind,
            public_origin,
            signing_secret,
            signing_secret_previous,
            webhook_url,
            delivery_timeout,
            delivery_lease,
            delivery_retry_base,
            delivery_poll,
            delivery_agent_slots,
            delivery_agent_per_endpoint,
            delivery_hook_slots,
            delivery_hook_per_endpoint,
            delivery_breaker_failures,
            delivery_breaker_cooldown,
            webhook_tests_per_webhook,
            webhook_tests_per_person,
            webhook_test_window,
            expiry_sweep,
            smtp_url,
            mail_from,
            graphql_max_body_bytes,
            graphiql,
            graphql_max_nodes,
            login_address_burst,
            login_address_refill,
            login_checks_per_address,
            max_websockets,
            max_anonymous_websockets_per_address,
            websocket_handshakes_per_second,
            max_connections,
            reserved_connections,
            max_connections_per_address,
            listen_backlog,
            trusted_proxies,
            header_timeout,
            idle_timeout,
            monitor_secret,
            data_key,
            web_dir,
            log_format,
            log_filter,
        } = settings;
        if let (Some(max), Some(reserved)) = (max_connections, reserved_connections)
            && reserved >= max
        {
            return Err(ConfigError::new(
                "ASKLOOP_RESERVED_CONNECTIONS",
                format!("{reserved} must be fewer than ASKLOOP_MAX_CONNECTIONS ({max})"),
            ));
        }
        let mail = mail_settings(smtp_url, mail_from)?;
        let delivery_lease = delivery_lease.unwrap_or(delivery_timeout + Duration::from_secs(30));
        // A lease shorter than a send would let a second worker take a delivery still in flight.
        if delivery_lease <= delivery_timeout {
            return Err(ConfigError::new(
                "ASKLOOP_DELIVERY_LEASE_MS",
                format!(
                    "the lease ({delivery_lease:?}) must be longer than the delivery timeout \
                     ({delivery_timeout:?})"
                ),
            ));
        }
        Ok(Self {
            database_url,
            db_max_connections,
            bind,
            signing: SigningKeys::new(
                signing_secret.map(Secret::into_inner),
                signing_secret_previous.map(Secret::into_inner),
            ),
            monitor: SigningKeys::new(monitor_secret.map(Secret::into_inner), None),
            webhook_url,
            data_key,
            web_dir,
            max_body_bytes: 256 * 1024,
            graphql_max_body_bytes,
            graphiql,
            graphql_max_nodes,
            shutdown_grace: Duration::from_secs(20),
            log_format,
            log_filter,
            public_origin,
            live: LiveSettings {
                buffer: 1024,
                poll: Duration::from_secs(2),
                init_timeout: Duration::from_secs(10),
                ping_every: Duration::from_secs(15),
                dead_after: Duration::from_secs(45),
                recheck_every: Duration::from_secs(60),
                max_sockets: max_websockets,
                max_uninitialised: 1_000,
                max_anonymous_per_address: max_anonymous_websockets_per_address,
                handshakes_per_second: websocket_handshakes_per_second,
                max_subscriptions: 32,
                max_message_bytes: 64 * 1024,
                inbox: 16,
            },
            sign_in: SignInSettings {
                address_burst: login_address_burst,
                address_refill: login_address_refill,
                checks_per_address: login_checks_per_address,
                first_hold: Duration::from_secs(1),
            },
            trusted_proxies: trusted_proxies.unwrap_or_default(),
            connections: ConnectionSettings {
                header_timeout,
                idle_timeout,
                max_connections,
                reserved: reserved_connections,
                max_per_address: max_connections_per_address,
                listen_backlog,
            },
            delivery: DeliverySettings {
                timeout: delivery_timeout,
                lease: delivery_lease,
                retry_base: delivery_retry_base,
                retry_max: Duration::from_secs(6 * 3600),
                retry_window: Duration::from_secs(72 * 3600),
                poll: delivery_poll,
                sweep_every: expiry_sweep,
                lanes: LaneSettings {
                    agent_slots: delivery_agent_slots,
                    agent_per_endpoint: delivery_agent_per_endpoint,
                    hook_slots: delivery_hook_slots,
                    hook_per_endpoint: delivery_hook_per_endpoint,
                    breaker: BreakerPolicy {
                        failures: delivery_breaker_failures,
                        cooldown: delivery_breaker_cooldown,
                    },
                },
                plain_http_hooks: false,
            },
            resolver: NameResolver::system(),
            webhook_tests: TestSendLimits {
                per_webhook: webhook_tests_per_webhook,
                per_person: webhook_tests_per_person,
                window: webhook_test_window,
            },
            mail,
        })
    }
}

/// Mail from `ASKLOOP_SMTP_URL` and `ASKLOOP_MAIL_FROM`: both or neither, each usable.
fn mail_settings(
    smtp_url: Option<Secret>,
    from: Option<String>,
) -> Result<Option<MailSettings>, ConfigError> {
    let (smtp_url, from) = match (smtp_url, from) {
        (None, None) => return Ok(None),
        (Some(_), None) => {
            return Err(ConfigError::new(
                "ASKLOOP_MAIL_FROM",
                "must be set when ASKLOOP_SMTP_URL is",
            ));
        }
        (None, Some(_)) => {
            return Err(ConfigError::new(
                "ASKLOOP_SMTP_URL",
                "must be set when ASKLOOP_MAIL_FROM is",
            ));
        }
        (Some(smtp_url), Some(from)) => (smtp_url, from),
    };
    let smtp_url = smtp_url.expose().trim();
    lettre::AsyncSmtpTransport::<lettre::Tokio1Executor>::from_url(smtp_url).map_err(|e| {
        // The URL itself is not repeated: it may carry a password.
        ConfigError::new("ASKLOOP_SMTP_URL", format!("not an SMTP URL ({e})"))
    })?;
    let sender = from.trim().parse().map_err(|e| {
        ConfigError::new(
            "ASKLOOP_MAIL_FROM",
            format!("'{from}' is not a mail address ({e})"),
        )
    })?;
    Ok(Some(MailSettings {
        smtp_url: smtp_url.to_owned(),
        from: sender,
    }))
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
    /// askloop's defaults: those of [`Settings`].
    fn default() -> Self {
        Config::defaults().sign_in
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
    /// askloop's defaults: those of [`Settings`].
    fn default() -> Self {
        Config::defaults().live
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
        let spaces = Config::from_lookup(|name| (name == "ASKLOOP_BIND").then(|| "   ".into()))
            .expect("only spaces count as unset too");
        assert_eq!(spaces.bind.to_string(), DEFAULT_BIND);
    }

    #[test]
    fn a_value_is_taken_as_given_whatever_it_looks_like() {
        // Values reach the parser as `--field=value`: one that looks like another field's flag,
        // or holds '=' or starts with '-', is still only its own variable's value.
        let config = Config::from_lookup(|name| match name {
            "ASKLOOP_PUBLIC_ORIGIN" => Some("--bind=10.0.0.1:1".into()),
            "CHOVY_WEBHOOK_URL" => Some("-https://agent.example/hook?a=b=c".into()),
            _ => None,
        })
        .expect("valid");
        assert_eq!(config.public_origin.as_deref(), Some("--bind=10.0.0.1:1"));
        assert_eq!(config.bind.to_string(), DEFAULT_BIND);
        assert_eq!(
            config.webhook_url.as_deref(),
            Some("-https://agent.example/hook?a=b=c")
        );
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

    /// Every variable the settings name, in their order.
    fn names_of_the_settings() -> Vec<String> {
        Settings::variables()
            .into_iter()
            .map(|var| var.name)
            .collect()
    }

    #[test]
    fn every_variable_of_the_settings_is_asked_for_once_and_only_those() {
        let asked = std::cell::RefCell::new(Vec::new());
        Config::from_lookup(|name| {
            asked.borrow_mut().push(name.to_owned());
            None
        })
        .expect("the defaults are valid");
        let asked = asked.into_inner();
        assert_eq!(
            asked,
            names_of_the_settings(),
            "asked for vs named by Settings"
        );
        let mut unique = asked.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), asked.len(), "a variable is named twice");
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

    /// Fail, naming the difference, unless `found` in `place` is exactly the variables of
    /// [`Settings`].
    fn assert_lists_the_table(place: &str, found: &[String]) {
        let settings = names_of_the_settings();
        let table: Vec<&str> = settings.iter().map(String::as_str).collect();
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
            "{place} has drifted from Settings in api/src/config/settings.rs: \
             missing {missing:?}, not among the settings {extra:?}"
        );
    }

    #[test]
    fn the_configuration_page_and_env_example_list_exactly_the_variables_of_the_settings() {
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

        // The README's configuration section names a few variables as examples: each must be one.
        let readme = include_str!("../../README.md");
        let section = readme
            .split("\n## ")
            .find(|part| part.starts_with("Configuring"))
            .expect("README.md has a Configuring section");
        let settings = names_of_the_settings();
        for name in section
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|word| is_variable(word) && word.contains('_'))
        {
            assert!(
                settings.iter().any(|setting| setting == name),
                "README.md names {name}, which is no setting"
            );
        }
    }

    #[test]
    fn the_defaults_are_those_the_help_states() {
        let config = Config::defaults();
        let defaults: std::collections::HashMap<String, Option<String>> = Settings::variables()
            .into_iter()
            .map(|var| (var.name, var.default))
            .collect();
        let default = |name: &str| defaults[name].clone().expect("a default of its own");
        assert_eq!(default("DATABASE_URL"), config.database_url);
        assert_eq!(default("ASKLOOP_BIND"), config.bind.to_string());
        assert_eq!(default("ASKLOOP_DELIVERY_TIMEOUT_MS"), "10000");
        assert_eq!(config.delivery.timeout, Duration::from_secs(10));
        // Unset, the lease follows the timeout, as its help says.
        assert_eq!(
            config.delivery.lease,
            config.delivery.timeout + Duration::from_secs(30)
        );
        assert_eq!(defaults["ASKLOOP_DELIVERY_LEASE_MS"], None);
        assert_eq!(default("RUST_LOG"), config.log_filter);
        assert_eq!(config.log_format, LogFormat::Pretty);
        assert!(!config.signing.is_configured() && !config.monitor.is_configured());
        assert!(config.mail.is_none() && config.data_key.is_none());
        assert_eq!(config.connections.max_connections, None);
        // The sub-settings' own defaults are the same ones.
        assert_eq!(ConnectionSettings::default(), config.connections);
        assert_eq!(SignInSettings::default(), config.sign_in);
        assert_eq!(LaneSettings::default(), config.delivery.lanes);
    }

    #[test]
    fn secrets_are_never_printed_nor_shown_in_the_help() {
        let secrets = [
            ("CHOVY_SIGNING_SECRET", "current-secret-value"),
            ("CHOVY_SIGNING_SECRET_PREVIOUS", "previous-secret-value"),
            ("ASKLOOP_MONITOR_SECRET", "monitor-secret-value"),
            (
                "ASKLOOP_SMTP_URL",
                "smtps://user:smtp-password@mail.example.com:465",
            ),
            ("ASKLOOP_MAIL_FROM", "askloop@example.com"),
        ];
        let lookup = |name: &str| {
            secrets
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        };
        let settings = Settings::from_lookup(lookup).expect("valid");
        let config = Config::from_lookup(lookup).expect("valid");
        for printed in [format!("{settings:?}"), format!("{config:?}")] {
            for word in [
                "current-secret",
                "previous-secret",
                "monitor-secret",
                "smtp-password",
            ] {
                assert!(!printed.contains(word), "{word} printed: {printed}");
            }
        }
        assert!(config.signing.is_configured() && config.monitor.is_configured());
        assert_eq!(
            config.mail.expect("mail on").smtp_url,
            "smtps://user:smtp-password@mail.example.com:465"
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
        // Compared with the lines unwrapped: the help wraps at 100 columns.
        let help = environment_help()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
        for var in Settings::variables() {
            assert!(help.contains(&var.name), "{} missing", var.name);
            let stated = match &var.default {
                Some(default) => format!("{} [default: {default}]", var.help),
                None => match var.help.split_once(". Unset: ") {
                    Some((meaning, unset)) => format!("{meaning} [unset: {unset}]"),
                    None => format!("{} [default: unset]", var.help),
                },
            };
            assert!(
                help.contains(&format!("{} {}", var.name, words(&stated))),
                "{}'s help or default missing",
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
        let pool = Settings::variables()
            .into_iter()
            .find(|var| var.name == "ASKLOOP_DB_MAX_CONNECTIONS")
            .expect("a pool setting");
        assert!(
            pool.help.ends_with(&format!(
                "Unset: {} on SQLite, {} on PostgreSQL",
                crate::db::SQLITE_CONNECTIONS,
                crate::db::POSTGRES_CONNECTIONS
            )),
            "{}",
            pool.help
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
