//! [`Settings`]: every setting askloop reads at start-up, one annotated field each — the
//! variable it comes from, its help line (the doc comment) and its default. Adding a setting is
//! adding a field here (then reading it in [`Config::from_settings`](super::Config)); the
//! `--help` text, `docs/configuration.md` and `.env.example` are checked against this struct.
//!
//! Settings come only from the environment: each field's long flag is how
//! [`Settings::from_lookup`] hands clap a variable's value, not a command-line option of
//! `askloop`. Values are checked by the parsers below, which word their refusals as askloop
//! always has (`VARIABLE: 'value' is not …`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, FromArgMatches};

use super::{
    ConfigError, DEFAULT_BIND, DEFAULT_DATABASE_URL, DEFAULT_MAX_NODES, DEFAULT_WEB_DIR, LogFormat,
    MAX_LISTEN_BACKLOG,
};
use crate::domain::sealing::DataKey;
use crate::net::client_address::TrustedProxies;

/// The log filter while `RUST_LOG` is unset.
pub const DEFAULT_LOG_FILTER: &str = "info,sqlx=warn,sea_orm=warn,tower_http=info";

/// Every setting askloop reads, in the order `docs/configuration.md` lists them.
#[derive(Debug, Clone, Args)]
pub struct Settings {
    /// The database: sqlite://file?mode=rwc, or postgres://user:password@host/db
    #[arg(long, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL, hide_env_values = true)]
    pub database_url: String,
    /// How many database connections askloop serve holds (at least 2; on PostgreSQL all kept
    /// open, so n instances hold n times this); one-shot commands hold at most 2. Unset: 8 on
    /// SQLite, 20 on PostgreSQL
    #[arg(long, env = "ASKLOOP_DB_MAX_CONNECTIONS", value_parser = pool_size)]
    pub db_max_connections: Option<u32>,
    /// The address to listen on, host:port (port 0 picks a free one)
    #[arg(long, env = "ASKLOOP_BIND", default_value = DEFAULT_BIND, value_parser = socket_address)]
    pub bind: SocketAddr,
    /// scheme://host[:port] browsers reach askloop at, behind a proxy; writes made with the
    /// session cookie must come from it, and https:// marks the cookie Secure. Unset: the origin
    /// the Host header names
    #[arg(long, env = "ASKLOOP_PUBLIC_ORIGIN")]
    pub public_origin: Option<String>,
    /// The secret agents sign their requests with and askloop signs its events with. Unset: the
    /// signed agent routes answer 503
    #[arg(long, env = "CHOVY_SIGNING_SECRET", hide_env_values = true, value_parser = secret)]
    pub signing_secret: Option<Secret>,
    /// The previous secret, still accepted (and signed with) while rotating. Unset: only the
    /// current one is accepted
    #[arg(long, env = "CHOVY_SIGNING_SECRET_PREVIOUS", hide_env_values = true, value_parser = secret)]
    pub signing_secret_previous: Option<Secret>,
    /// Where events for the agent are POSTed. Unset: events wait in the outbox; agents read
    /// through the lookup route
    #[arg(long, env = "CHOVY_WEBHOOK_URL")]
    pub webhook_url: Option<String>,
    /// How long one webhook POST may take, in milliseconds
    #[arg(long, env = "ASKLOOP_DELIVERY_TIMEOUT_MS", default_value = "10000", value_parser = millis)]
    pub delivery_timeout: Duration,
    /// How long a claimed delivery stays claimed, in milliseconds (longer than the timeout).
    /// Unset: the timeout + 30000
    #[arg(long, env = "ASKLOOP_DELIVERY_LEASE_MS", value_parser = millis)]
    pub delivery_lease: Option<Duration>,
    /// The first retry's delay in milliseconds, doubling up to 6 h, for 72 h
    #[arg(long, env = "ASKLOOP_DELIVERY_RETRY_BASE_MS", default_value = "10000", value_parser = millis)]
    pub delivery_retry_base: Duration,
    /// How often the delivery worker looks for due deliveries, in milliseconds
    #[arg(long, env = "ASKLOOP_DELIVERY_POLL_MS", default_value = "1000", value_parser = millis)]
    pub delivery_poll: Duration,
    /// How many deliveries to agents one instance sends at once (a lane of their own, never
    /// shared with operator webhooks)
    #[arg(long, env = "ASKLOOP_DELIVERY_AGENT_SLOTS", default_value = "32", value_parser = count)]
    pub delivery_agent_slots: usize,
    /// How many deliveries to one agent's endpoint are in flight at once
    #[arg(long, env = "ASKLOOP_DELIVERY_AGENT_PER_ENDPOINT", default_value = "8", value_parser = count)]
    pub delivery_agent_per_endpoint: usize,
    /// How many deliveries to operator webhooks one instance sends at once
    #[arg(long, env = "ASKLOOP_DELIVERY_HOOK_SLOTS", default_value = "16", value_parser = count)]
    pub delivery_hook_slots: usize,
    /// How many deliveries to one operator webhook are in flight at once
    #[arg(long, env = "ASKLOOP_DELIVERY_HOOK_PER_ENDPOINT", default_value = "2", value_parser = count)]
    pub delivery_hook_per_endpoint: usize,
    /// Attempts in a row that waited out the timeout without an answer, after which an endpoint
    /// is left alone for the cooldown; its deliveries wait untried
    #[arg(long, env = "ASKLOOP_DELIVERY_BREAKER_FAILURES", default_value = "3", value_parser = count_u32)]
    pub delivery_breaker_failures: u32,
    /// How long an endpoint whose breaker opened is left alone before one delivery probes it,
    /// in milliseconds
    #[arg(long, env = "ASKLOOP_DELIVERY_BREAKER_COOLDOWN_MS", default_value = "30000", value_parser = millis)]
    pub delivery_breaker_cooldown: Duration,
    /// How many test events (testOperatorWebhook) one webhook may be sent in the window
    #[arg(long, env = "ASKLOOP_WEBHOOK_TESTS_PER_WEBHOOK", default_value = "3", value_parser = count_u32)]
    pub webhook_tests_per_webhook: u32,
    /// How many test events one person may send to their webhooks in the window
    #[arg(long, env = "ASKLOOP_WEBHOOK_TESTS_PER_PERSON", default_value = "10", value_parser = count_u32)]
    pub webhook_tests_per_person: u32,
    /// The sliding window test events are counted over, in milliseconds
    #[arg(long, env = "ASKLOOP_WEBHOOK_TEST_WINDOW_MS", default_value = "600000", value_parser = millis)]
    pub webhook_test_window: Duration,
    /// How often waiting questions past their time are expired, in milliseconds
    #[arg(long, env = "ASKLOOP_EXPIRY_SWEEP_MS", default_value = "5000", value_parser = millis)]
    pub expiry_sweep: Duration,
    /// The SMTP server notifications go through: smtp://host:25 (STARTTLS when offered),
    /// smtp://host:587?tls=required, or smtps://user:password@host:465. Unset: no mail is sent
    /// (operators see questions on the dashboard only)
    #[arg(long, env = "ASKLOOP_SMTP_URL", hide_env_values = true, value_parser = secret)]
    pub smtp_url: Option<Secret>,
    /// The From of every notification, e.g. askloop <askloop@example.com>. Unset: no mail is
    /// sent; set together with ASKLOOP_SMTP_URL
    #[arg(long, env = "ASKLOOP_MAIL_FROM")]
    pub mail_from: Option<String>,
    /// The largest POST /graphql body in bytes; larger ones are refused (413) unread
    #[arg(long, env = "ASKLOOP_GRAPHQL_MAX_BODY_BYTES", default_value = "1048576", value_parser = count)]
    pub graphql_max_body_bytes: usize,
    /// 1 serves the GraphiQL explorer on GET /graphql (its scripts come from unpkg.com, allowed
    /// by that page's own CSP); 0 answers 404 there
    #[arg(long, env = "ASKLOOP_GRAPHIQL", default_value = "0", value_parser = zero_or_one, action = clap::ArgAction::Set)]
    pub graphiql: bool,
    /// The most nodes one GraphQL query may return, counting each page at its size (first, 20
    /// when omitted) and nested pages multiplied; larger queries are refused with
    /// QUERY_TOO_COMPLEX before they run
    #[arg(long, env = "ASKLOOP_GRAPHQL_MAX_NODES", default_value_t = DEFAULT_MAX_NODES, value_parser = count)]
    pub graphql_max_nodes: usize,
    /// How many failed sign-ins one address (IPv4, or IPv6 /64) may make in a burst, whatever
    /// the handles; past it each attempt is refused before its password is checked until the
    /// bucket refills
    #[arg(long, env = "ASKLOOP_LOGIN_ADDRESS_BURST", default_value = "20", value_parser = burst)]
    pub login_address_burst: u32,
    /// How often an address earns back one failed sign-in of its burst, in milliseconds (at
    /// most an hour)
    #[arg(long, env = "ASKLOOP_LOGIN_ADDRESS_REFILL_MS", default_value = "3000", value_parser = refill)]
    pub login_address_refill: Duration,
    /// How many of one address's sign-in passwords are checked (argon2) at once; the checks are
    /// shared round robin among addresses
    #[arg(long, env = "ASKLOOP_LOGIN_CHECKS_PER_ADDRESS", default_value = "1", value_parser = count)]
    pub login_checks_per_address: usize,
    /// How many signed-in /graphql/ws connections one instance holds (sockets still waiting to
    /// sign in are not counted); past it a new one is closed with 1013 (try again later)
    #[arg(long, env = "ASKLOOP_MAX_WEBSOCKETS", default_value = "10000", value_parser = count)]
    pub max_websockets: usize,
    /// How many /graphql/ws connections one address (IPv4, or IPv6 /64) may hold open before
    /// they have signed in; past it the upgrade is refused with 429
    #[arg(long, env = "ASKLOOP_MAX_ANONYMOUS_WEBSOCKETS_PER_ADDRESS", default_value = "8", value_parser = count)]
    pub max_anonymous_websockets_per_address: usize,
    /// How many /graphql/ws upgrades without a session cookie or bearer token one address may
    /// make per second (as a burst, refilled at that rate); past it 429
    #[arg(long, env = "ASKLOOP_WEBSOCKET_HANDSHAKES_PER_SECOND", default_value = "10", value_parser = count)]
    pub websocket_handshakes_per_second: usize,
    /// How many TCP connections one instance holds at once (websockets included); past it a new
    /// one is answered 503 and closed. Unset: the open-file limit less one in eight (at least
    /// 64) of it
    #[arg(long, env = "ASKLOOP_MAX_CONNECTIONS", value_parser = count)]
    pub max_connections: Option<usize>,
    /// How many of ASKLOOP_MAX_CONNECTIONS only serve /healthz, /readyz and requests that carry
    /// a credential; others on them are answered 503. Unset: one in ten of
    /// ASKLOOP_MAX_CONNECTIONS
    #[arg(long, env = "ASKLOOP_RESERVED_CONNECTIONS", value_parser = whole_number)]
    pub reserved_connections: Option<usize>,
    /// How many TCP connections one address (IPv4, or IPv6 /64) may hold at once; past it a new
    /// one is answered 429 and closed
    #[arg(long, env = "ASKLOOP_MAX_CONNECTIONS_PER_ADDRESS", default_value = "256", value_parser = count)]
    pub max_connections_per_address: usize,
    /// How many connections the system holds for askloop before it accepts them (the listen
    /// backlog, at most 65535; the kernel also caps it at net.core.somaxconn); a reconnect storm
    /// past it loses handshakes until clients retry
    #[arg(long, env = "ASKLOOP_LISTEN_BACKLOG", default_value = "4096", value_parser = backlog)]
    pub listen_backlog: u32,
    /// The reverse proxies in front of askloop, as addresses and CIDR ranges separated by commas
    /// (10.0.0.5,10.1.0.0/16); only for a connection from one of them is the client read from
    /// Forwarded or X-Forwarded-For, and every per-address limit and the audit log use that
    /// client. Unset: none; every client is its connection's peer
    #[arg(long, env = "ASKLOOP_TRUSTED_PROXIES", value_parser = trusted_proxies)]
    pub trusted_proxies: Option<TrustedProxies>,
    /// How long a request's line and headers may take to arrive, from when the connection waits
    /// for them, in milliseconds; then the connection is closed
    #[arg(long, env = "ASKLOOP_HEADER_TIMEOUT_MS", default_value = "10000", value_parser = millis)]
    pub header_timeout: Duration,
    /// How long a connection with no request in flight may send and receive nothing (a
    /// kept-alive or a never-used one), in milliseconds; then it is closed
    #[arg(long, env = "ASKLOOP_IDLE_TIMEOUT_MS", default_value = "5000", value_parser = millis)]
    pub idle_timeout: Duration,
    /// The secret the anomaly monitor signs its signals with. Unset: the anomaly-signal route
    /// answers 503
    #[arg(long, env = "ASKLOOP_MONITOR_SECRET", hide_env_values = true, value_parser = secret)]
    pub monitor_secret: Option<Secret>,
    /// Base64 of 32 random bytes (openssl rand -base64 32); agents' signing secrets are sealed
    /// with it (ChaCha20-Poly1305) before they are stored. Unset: they are stored as given
    /// (serve warns once)
    #[arg(long, env = "ASKLOOP_DATA_KEY", hide_env_values = true, value_parser = data_key)]
    pub data_key: Option<DataKey>,
    /// The built dashboard (cargo xtask build-web writes it)
    #[arg(long, env = "ASKLOOP_WEB_DIR", default_value = DEFAULT_WEB_DIR)]
    pub web_dir: PathBuf,
    /// Log lines: pretty, or json (one object per line)
    #[arg(long, env = "ASKLOOP_LOG_FORMAT", default_value = "pretty", value_parser = log_format)]
    pub log_format: LogFormat,
    /// Which log lines are written (tracing's filter syntax); a filter askloop cannot read is
    /// refused at start-up
    #[arg(long, env = "RUST_LOG", default_value = DEFAULT_LOG_FILTER, value_parser = log_filter)]
    pub log_filter: String,
}

/// A secret setting's value: kept out of `Debug` (and so out of every log line and panic).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The secret itself, for the one place that uses it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The secret itself, owned.
    pub fn into_inner(self) -> String {
        self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<set>)")
    }
}

/// One setting as `askloop --help` and the checks of the documents see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    /// The environment variable.
    pub name: String,
    /// What it sets (the field's doc comment).
    pub help: String,
    /// Its default, when it has a value of its own (otherwise the help says what unset means).
    pub default: Option<String>,
}

impl Settings {
    /// The settings with every variable unset: askloop's defaults.
    pub fn defaults() -> Self {
        Self::from_lookup(|_| None)
            .unwrap_or_else(|err| unreachable!("askloop's own defaults are refused: {err}"))
    }

    /// Read the settings through `lookup` (the environment, or a map in tests): each field's
    /// variable is asked for, and only those; a value that is empty or only spaces counts as
    /// unset. A value that cannot be used is refused naming its variable.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let mut given = vec![std::ffi::OsString::from("askloop")];
        for arg in Self::command().get_arguments() {
            let (Some(variable), Some(long)) =
                (arg.get_env().and_then(|v| v.to_str()), arg.get_long())
            else {
                continue;
            };
            if let Some(value) = lookup(variable).filter(|value| !value.trim().is_empty()) {
                // `--long=value`, so a value that starts with '-' is still a value.
                given.push(format!("--{long}={value}").into());
            }
        }
        // Parse with the variables detached: clap would otherwise read the process environment
        // for every setting `lookup` left unset.
        let mut parser = Self::command().mut_args(|arg| arg.env(None));
        let matches = parser
            .try_get_matches_from_mut(given)
            .map_err(|err| refusal(&parser, &err))?;
        Self::from_arg_matches(&matches).map_err(|err| refusal(&parser, &err))
    }

    /// Every setting's variable, help line and default, in the struct's order.
    pub fn variables() -> Vec<Variable> {
        Self::command()
            .get_arguments()
            .filter_map(|arg| {
                let name = arg.get_env()?.to_str()?.to_owned();
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                let defaults: Vec<String> = arg
                    .get_default_values()
                    .iter()
                    .map(|value| value.to_string_lossy().into_owned())
                    .collect();
                Some(Variable {
                    name,
                    help,
                    default: (!defaults.is_empty()).then(|| defaults.join(",")),
                })
            })
            .collect()
    }

    /// The clap command the fields make (no help flag: nobody types these as options).
    fn command() -> clap::Command {
        Self::augment_args(
            clap::Command::new("askloop")
                .disable_help_flag(true)
                .disable_version_flag(true),
        )
    }
}

/// The environment section of `askloop --help` and `askloop serve --help`: every setting's
/// variable, what it sets, and its default or what happens while it is unset.
pub fn environment_help() -> String {
    /// Where the text column wraps, as clap wraps its own help.
    const WIDTH: usize = 100;
    let variables = Settings::variables();
    let name_width = variables
        .iter()
        .map(|var| var.name.len())
        .max()
        .unwrap_or(0);
    let indent = " ".repeat(2 + name_width + 2);
    let mut help =
        String::from("Environment (read once at start-up; an empty value counts as unset):\n");
    for var in variables {
        // A setting without a default of its own says what unset means at the end of its help.
        let (meaning, default) = match (var.help.split_once(". Unset: "), var.default) {
            (_, Some(default)) => (var.help.as_str(), format!("[default: {default}]")),
            (Some((meaning, unset)), None) => (meaning, format!("[unset: {unset}]")),
            (None, None) => (var.help.as_str(), "[default: unset]".to_owned()),
        };
        let mut lines = wrapped(meaning, WIDTH.saturating_sub(indent.len())).into_iter();
        help.push_str(&format!(
            "  {:name_width$}  {}\n",
            var.name,
            lines.next().unwrap_or_default()
        ));
        for line in lines.chain(wrapped(&default, WIDTH.saturating_sub(indent.len()))) {
            help.push_str(&format!("{indent}{line}\n"));
        }
    }
    help
}

/// `text` in lines of at most `width` characters, broken between words (a longer word stands
/// alone).
fn wrapped(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// A clap refusal as askloop words it: the variable, then what is wrong with its value.
fn refusal(parser: &clap::Command, err: &clap::Error) -> ConfigError {
    use clap::error::{ContextKind, ContextValue};
    // The refused argument, as clap renders it (`--bind <BIND>`), names the field; the field
    // names the variable.
    let variable = match err.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(shown)) => parser
            .get_arguments()
            .find(|arg| arg.to_string() == *shown)
            .and_then(|arg| arg.get_long())
            .and_then(variable_of),
        _ => None,
    };
    // The parsers' own message is the refusal's source; anything else is clap's wording.
    let problem = std::error::Error::source(err)
        .map(ToString::to_string)
        .unwrap_or_else(|| err.kind().to_string());
    ConfigError {
        name: variable.unwrap_or_else(|| "settings".to_owned()),
        problem,
    }
}

/// The variable of the field whose long flag is `long`.
fn variable_of(long: &str) -> Option<String> {
    Settings::command()
        .get_arguments()
        .find(|arg| arg.get_long() == Some(long))
        .and_then(|arg| arg.get_env()?.to_str().map(str::to_owned))
}

// The parsers: each takes a variable's value as given and words its refusal the way askloop
// always has, so an operator's scripts and habits keep working.

/// A positive duration in milliseconds.
fn millis(raw: &str) -> Result<Duration, String> {
    match raw.trim().parse::<u64>() {
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(format!("'{raw}' is not a positive number of milliseconds")),
    }
}

/// A positive count.
fn count(raw: &str) -> Result<usize, String> {
    match raw.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{raw}' is not a positive whole number")),
    }
}

/// A positive count that fits 32 bits.
fn count_u32(raw: &str) -> Result<u32, String> {
    let n = count(raw)?;
    u32::try_from(n).map_err(|_| format!("{n} is too large"))
}

/// A count that may be zero.
fn whole_number(raw: &str) -> Result<usize, String> {
    raw.trim()
        .parse::<usize>()
        .map_err(|_| format!("'{raw}' is not a whole number"))
}

/// A pool big enough for a write transaction and a read beside it.
fn pool_size(raw: &str) -> Result<u32, String> {
    match raw.trim().parse::<u32>() {
        Ok(n) if n >= crate::db::MIN_POOL => Ok(n),
        _ => Err(format!(
            "'{raw}' is not a whole number of at least {} (a write transaction and a read beside \
             it)",
            crate::db::MIN_POOL
        )),
    }
}

/// host:port.
fn socket_address(raw: &str) -> Result<SocketAddr, String> {
    raw.parse()
        .map_err(|e| format!("'{raw}' is not host:port ({e})"))
}

/// A secret, kept out of `Debug`.
fn secret(raw: &str) -> Result<Secret, String> {
    Ok(Secret(raw.to_owned()))
}

/// The sign-in burst, which the throttle counts in 32 bits.
fn burst(raw: &str) -> Result<u32, String> {
    let n = count(raw)?;
    u32::try_from(n).map_err(|_| format!("'{n}' is more than {}", u32::MAX))
}

/// The sign-in refill, at most [`super::SignInSettings::LONGEST_REFILL`].
fn refill(raw: &str) -> Result<Duration, String> {
    let refill = millis(raw)?;
    if refill > super::SignInSettings::LONGEST_REFILL {
        return Err(format!(
            "'{}' is more than an hour (3600000 ms)",
            refill.as_millis()
        ));
    }
    Ok(refill)
}

/// A list of trusted proxies, each item an address or a CIDR range.
fn trusted_proxies(raw: &str) -> Result<TrustedProxies, String> {
    raw.parse()
        .map_err(|e: crate::net::client_address::TrustedProxiesError| e.to_string())
}

/// A listen backlog the kernel can take.
fn backlog(raw: &str) -> Result<u32, String> {
    let n = count(raw)?;
    u32::try_from(n)
        .ok()
        .filter(|b| *b <= MAX_LISTEN_BACKLOG)
        .ok_or_else(|| format!("{n} is more than {MAX_LISTEN_BACKLOG}"))
}

/// `0` or `1`.
fn zero_or_one(raw: &str) -> Result<bool, String> {
    match raw.trim() {
        "0" => Ok(false),
        "1" => Ok(true),
        other => Err(format!("'{other}' is neither 0 nor 1")),
    }
}

/// `pretty` or `json`.
fn log_format(raw: &str) -> Result<LogFormat, String> {
    match raw {
        "pretty" => Ok(LogFormat::Pretty),
        "json" => Ok(LogFormat::Json),
        other => Err(format!("'{other}' is neither 'pretty' nor 'json'")),
    }
}

/// A filter the logger can read: refused here, naming the variable, rather than quietly
/// replaced by the default when the logger starts.
fn log_filter(raw: &str) -> Result<String, String> {
    tracing_subscriber::EnvFilter::try_new(raw)
        .map(|_| raw.to_owned())
        .map_err(|e| format!("'{raw}' is not a log filter ({e})"))
}

/// The key agents' secrets are sealed with.
fn data_key(raw: &str) -> Result<DataKey, String> {
    DataKey::parse(raw).map_err(|err| err.to_string())
}
