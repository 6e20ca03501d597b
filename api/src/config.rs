//! One [`Config`], built once (from the environment in `main`, in code in tests) and passed down.
//! Secrets live in [`SigningKeys`] and are never printed.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::domain::signing::SigningKeys;
use crate::live::LiveSettings;

/// The SQLite file used when `DATABASE_URL` is unset.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://askloop.db?mode=rwc";
/// Where askloop listens when `ASKLOOP_BIND` is unset.
pub const DEFAULT_BIND: &str = "127.0.0.1:3000";

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
    /// The address to listen on; port 0 picks a free one.
    pub bind: SocketAddr,
    /// Secrets for the agent's signed routes and our outbound events.
    pub signing: SigningKeys,
    /// Secret for the monitor's anomaly signals.
    pub monitor: SigningKeys,
    /// Where answers are delivered to the agent.
    pub webhook_url: Option<String>,
    /// The built dashboard (index.html and the wasm bundle).
    pub web_dir: PathBuf,
    /// The largest request body accepted.
    pub max_body_bytes: usize,
    /// How long in-flight requests get to finish on shutdown.
    pub shutdown_grace: Duration,
    /// How log lines are written.
    pub log_format: LogFormat,
    /// The public origin (scheme://host[:port]) askloop is served from, when behind a proxy.
    pub public_origin: Option<String>,
    /// How live updates are buffered and polled.
    pub live: LiveSettings,
    /// How events are delivered to the agent and questions expired.
    pub delivery: DeliverySettings,
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

/// A configuration value that could not be used.
#[derive(Debug, thiserror::Error)]
#[error("{name}: {problem}")]
pub struct ConfigError {
    name: &'static str,
    problem: String,
}

impl Config {
    /// A config with askloop's defaults and no secrets.
    pub fn defaults() -> Self {
        Self {
            database_url: DEFAULT_DATABASE_URL.to_owned(),
            bind: DEFAULT_BIND
                .parse()
                .unwrap_or_else(|_| unreachable!("valid default")),
            signing: SigningKeys::default(),
            monitor: SigningKeys::default(),
            webhook_url: None,
            web_dir: PathBuf::from("web/dist"),
            max_body_bytes: 256 * 1024,
            shutdown_grace: Duration::from_secs(20),
            log_format: LogFormat::Pretty,
            public_origin: None,
            live: LiveSettings::default(),
            delivery: DeliverySettings::default(),
        }
    }

    /// Read the configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Read the configuration through `lookup` (the environment, or a map in tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let mut config = Self::defaults();
        if let Some(url) = get("DATABASE_URL") {
            config.database_url = url;
        }
        if let Some(bind) = get("ASKLOOP_BIND") {
            config.bind = bind.parse().map_err(|e| ConfigError {
                name: "ASKLOOP_BIND",
                problem: format!("'{bind}' is not host:port ({e})"),
            })?;
        }
        config.signing = SigningKeys::new(
            get("CHOVY_SIGNING_SECRET"),
            get("CHOVY_SIGNING_SECRET_PREVIOUS"),
        );
        config.monitor = SigningKeys::new(get("ASKLOOP_MONITOR_SECRET"), None);
        config.webhook_url = get("CHOVY_WEBHOOK_URL");
        if let Some(dir) = get("ASKLOOP_WEB_DIR") {
            config.web_dir = PathBuf::from(dir);
        }
        config.log_format = match get("ASKLOOP_LOG_FORMAT").as_deref() {
            None | Some("pretty") => LogFormat::Pretty,
            Some("json") => LogFormat::Json,
            Some(other) => {
                return Err(ConfigError {
                    name: "ASKLOOP_LOG_FORMAT",
                    problem: format!("'{other}' is neither 'pretty' nor 'json'"),
                });
            }
        };
        config.public_origin = get("ASKLOOP_PUBLIC_ORIGIN");
        let delivery = &mut config.delivery;
        if let Some(timeout) = millis(
            "ASKLOOP_DELIVERY_TIMEOUT_MS",
            get("ASKLOOP_DELIVERY_TIMEOUT_MS"),
        )? {
            delivery.timeout = timeout;
            delivery.lease = timeout + Duration::from_secs(30);
        }
        if let Some(lease) = millis(
            "ASKLOOP_DELIVERY_LEASE_MS",
            get("ASKLOOP_DELIVERY_LEASE_MS"),
        )? {
            delivery.lease = lease;
        }
        if let Some(base) = millis(
            "ASKLOOP_DELIVERY_RETRY_BASE_MS",
            get("ASKLOOP_DELIVERY_RETRY_BASE_MS"),
        )? {
            delivery.retry_base = base;
        }
        if let Some(poll) = millis("ASKLOOP_DELIVERY_POLL_MS", get("ASKLOOP_DELIVERY_POLL_MS"))? {
            delivery.poll = poll;
        }
        if let Some(sweep) = millis("ASKLOOP_EXPIRY_SWEEP_MS", get("ASKLOOP_EXPIRY_SWEEP_MS"))? {
            delivery.sweep_every = sweep;
        }
        // A lease shorter than a send would let a second worker take a delivery still in flight.
        if delivery.lease <= delivery.timeout {
            return Err(ConfigError {
                name: "ASKLOOP_DELIVERY_LEASE_MS",
                problem: format!(
                    "the lease ({:?}) must be longer than the delivery timeout ({:?})",
                    delivery.lease, delivery.timeout
                ),
            });
        }
        Ok(config)
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
    fn a_bad_bind_address_names_the_variable() {
        let err = Config::from_lookup(|name| (name == "ASKLOOP_BIND").then(|| "nope".into()))
            .expect_err("invalid");
        assert!(err.to_string().starts_with("ASKLOOP_BIND: 'nope'"), "{err}");
    }
}
