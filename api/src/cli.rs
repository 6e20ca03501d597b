//! The `askloop` command line: serving, migrating, admin set-up, and the agent side (`sign`,
//! `ask`) that signs with the very code the server verifies with.

use std::io::{IsTerminal, Read};
use std::process::ExitCode;

use chrono::Utc;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use entity::niche_members::MemberRole;
use entity::niches::NicheStatus;

use crate::config::Config;
use crate::domain::slug::Slug;
use crate::live::ChangeHint;
use crate::service::audit::Actor;
use crate::service::people::accounts::{self, NewUser};
use crate::service::{demo, people::niches};
use crate::startup::{self, Application};
use crate::{graphql, telemetry};

mod agent;
mod knowledge;
mod registry;

/// askloop: agents ask the questions they cannot settle; the people who have done the job answer.
///
/// Configured by the environment, listed below (and in .env.example).
#[derive(Debug, Parser)]
#[command(
    name = "askloop",
    version,
    propagate_version = true,
    after_help = crate::config::environment_help()
)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the API and the dashboard (the default). Migrates the database first.
    #[command(after_help = crate::config::environment_help())]
    Serve {
        /// On an empty database, create a demo niche `games`, an operator and an admin, and
        /// print how to sign in.
        #[arg(long)]
        demo: bool,
    },
    /// Bring the database schema up to date, then exit.
    Migrate,
    /// Manage niches.
    Niche {
        #[command(subcommand)]
        action: NicheCommand,
    },
    /// Manage people. Passwords come from ASKLOOP_PASSWORD or a prompt, never an argument.
    User {
        #[command(subcommand)]
        action: UserCommand,
    },
    /// Manage niche memberships.
    Member {
        #[command(subcommand)]
        action: MemberCommand,
    },
    /// Manage integrators' API keys.
    Apikey {
        #[command(subcommand)]
        action: ApiKeyCommand,
    },
    /// Manage registered agents: their niches, secrets and endpoints.
    Agent {
        #[command(subcommand)]
        action: registry::AgentCommand,
    },
    /// A niche's knowledge: export it with its provenance and hash chain, or check an export.
    Knowledge {
        #[command(subcommand)]
        action: knowledge::KnowledgeCommand,
    },
    /// Agent side: print the X-Chovy-Signature header for the body on stdin.
    Sign(agent::SignArgs),
    /// Agent side: sign and post a question, from flags or a JSON file.
    Ask(Box<agent::AskArgs>),
    /// Agent side: sign and post the withdrawal of a question the agent no longer needs.
    Withdraw(agent::WithdrawArgs),
    /// Print the GraphQL schema (SDL), as committed in schema.graphql.
    Schema,
    /// Print the REST routes' OpenAPI 3.1 document, as committed in openapi.json.
    Openapi,
}

#[derive(Debug, Subcommand)]
enum NicheCommand {
    /// Create a niche.
    Create {
        /// 2..63 of a-z, 0-9 and '-' (lowercased).
        #[arg(long)]
        slug: String,
        /// Display name.
        #[arg(long)]
        name: String,
        /// Where it starts: `open` takes questions at once.
        #[arg(long, value_enum, default_value_t = NicheStatusArg::Open)]
        status: NicheStatusArg,
    },
    /// Set a niche's agent budget: the monthly limit and the bounties (minor units). What is not
    /// given keeps its value; the result is printed with this month's spending.
    Budget {
        /// The niche.
        #[arg(long)]
        slug: String,
        /// The monthly limit.
        #[arg(long, conflicts_with = "unlimited")]
        monthly: Option<i64>,
        /// No monthly limit.
        #[arg(long)]
        unlimited: bool,
        /// The bounty a question carries when the agent names none.
        #[arg(long)]
        bounty: Option<i64>,
        /// The largest bounty an agent may offer.
        #[arg(long)]
        max_bounty: Option<i64>,
        /// What one reuse of the niche's knowledge costs an agent (0: free).
        #[arg(long)]
        reuse_price: Option<i64>,
    },
    /// How the niche weighs its answers: the trust threshold and the routing of notifications.
    Weighing {
        /// The niche's slug.
        #[arg(long)]
        slug: String,
        /// The Wilson lower bound at which answers verify on arrival (0.5–1.0).
        #[arg(long)]
        trust_lower_bound: Option<f64>,
        /// Notify the N best-placed operators first, the rest at half the escalation wait.
        #[arg(long, conflicts_with = "broadcast")]
        first_wave: Option<i32>,
        /// Notify every operator at once.
        #[arg(long)]
        broadcast: bool,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum NicheStatusArg {
    Draft,
    Open,
    Operated,
    Archived,
}

#[derive(Debug, Subcommand)]
enum UserCommand {
    /// Create a person.
    Create {
        /// 2..40 of a-z, 0-9, '_' and '-'.
        #[arg(long)]
        handle: String,
        /// Their email address.
        #[arg(long)]
        email: String,
        /// Make them an admin.
        #[arg(long)]
        admin: bool,
    },
}

#[derive(Debug, Subcommand)]
enum MemberCommand {
    /// Make a person an active member of a niche.
    Add {
        /// The niche's slug.
        #[arg(long)]
        niche: String,
        /// The person's handle.
        #[arg(long)]
        user: String,
        /// Their role.
        #[arg(long, value_enum, default_value_t = RoleArg::Operator)]
        role: RoleArg,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum RoleArg {
    Operator,
    Specialist,
    Observer,
}

#[derive(Debug, Subcommand)]
enum ApiKeyCommand {
    /// Issue an API key; it is printed once and never again.
    Create {
        /// Whose key.
        #[arg(long)]
        user: String,
        /// What to call it.
        #[arg(long, default_value = "cli")]
        name: String,
    },
}

/// Parse the arguments, run the command, and turn any failure into a message and exit code 1.
pub fn main() -> ExitCode {
    let command = Cli::command();
    let matches = command.clone().get_matches();
    if let Err(refused) = text_arguments(&command, &matches) {
        eprintln!("askloop: {refused}");
        return ExitCode::from(2);
    }
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit());
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(err) => {
            eprintln!("askloop: {err}");
            return ExitCode::from(2);
        }
    };
    let _logs = telemetry::init(config.log_format, &config.log_filter);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("askloop: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli, config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("askloop: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli, config: Config) -> anyhow::Result<()> {
    match cli.command.unwrap_or(Command::Serve { demo: false }) {
        Command::Serve { demo } => serve(config, demo).await,
        Command::Migrate => {
            startup::connect_for_a_command(&config).await?;
            println!("migrated {}", redact_url(&config.database_url));
            Ok(())
        }
        Command::Niche {
            action: NicheCommand::Create { slug, name, status },
        } => {
            let db = startup::connect_for_a_command(&config).await?;
            let slug = Slug::parse(&slug)?;
            let status = match status {
                NicheStatusArg::Draft => NicheStatus::Draft,
                NicheStatusArg::Open => NicheStatus::Open,
                NicheStatusArg::Operated => NicheStatus::Operated,
                NicheStatusArg::Archived => NicheStatus::Archived,
            };
            let niche = niches::create_niche(
                &db,
                niches::NewNiche { slug, name, status },
                &Actor::Cli,
                Utc::now(),
            )
            .await?;
            println!("created niche '{}' (id {})", niche.slug, niche.id);
            Ok(())
        }
        Command::Niche {
            action:
                NicheCommand::Weighing {
                    slug,
                    trust_lower_bound,
                    first_wave,
                    broadcast,
                },
        } => {
            let db = startup::connect_for_a_command(&config).await?;
            let niche = crate::service::people::niches::set_weighing(
                &db,
                &Actor::Cli,
                &slug,
                crate::service::people::niches::Weighing {
                    trust_lower_bound,
                    first_wave: match (first_wave, broadcast) {
                        (Some(k), _) => Some(Some(k)),
                        (None, true) => Some(None),
                        (None, false) => None,
                    },
                },
                Utc::now(),
            )
            .await?;
            let routing = niche
                .first_wave
                .map_or_else(|| "broadcast".to_owned(), |k| format!("first wave of {k}"));
            println!(
                "niche '{}': trusted from a lower bound of {:.2}; routing: {routing}",
                niche.slug,
                f64::from(niche.trust_lower_bound_bps) / 10_000.0,
            );
            Ok(())
        }
        Command::Niche {
            action:
                NicheCommand::Budget {
                    slug,
                    monthly,
                    unlimited,
                    bounty,
                    max_bounty,
                    reuse_price,
                },
        } => {
            let db = startup::connect_for_a_command(&config).await?;
            let niche = crate::service::questions::queue::niche_by_slug(&db, &slug).await?;
            let settings = crate::service::money::ledger_views::NicheBudget {
                monthly_budget_minor: match (monthly, unlimited) {
                    (Some(limit), _) => Some(limit),
                    (None, true) => None,
                    (None, false) => niche.monthly_budget_minor,
                },
                bounty_minor: bounty.unwrap_or(niche.bounty_minor),
                max_bounty_minor: max_bounty.unwrap_or(niche.max_bounty_minor),
                reuse_price_minor: reuse_price,
            };
            let view = crate::service::money::ledger_views::apply_niche_budget(
                &db,
                &Actor::Cli,
                &niche.slug,
                settings,
                Utc::now(),
            )
            .await?;
            let limit = view.budget.limit.map_or_else(
                || "no monthly limit".to_owned(),
                |l| format!("monthly limit {l}"),
            );
            let left = view
                .budget
                .remaining()
                .map_or_else(|| "no limit".to_owned(), |r| r.to_string());
            println!(
                "niche '{}': {limit}, bounty {}, largest bounty {}, reuse price {}; this month spent {}, reserved {}, left {left}",
                view.niche.slug,
                view.niche.bounty_minor,
                view.niche.max_bounty_minor,
                view.niche.reuse_price_minor,
                view.budget.spent,
                view.budget.reserved,
            );
            Ok(())
        }
        Command::User {
            action:
                UserCommand::Create {
                    handle,
                    email,
                    admin,
                },
        } => {
            let password = read_password()?;
            let db = startup::connect_for_a_command(&config).await?;
            let user = accounts::create_user(
                &db,
                NewUser {
                    handle,
                    email,
                    password,
                    admin,
                },
                &Actor::Cli,
                Utc::now(),
            )
            .await?;
            println!("created user '{}' (id {})", user.handle, user.id);
            Ok(())
        }
        Command::Member {
            action: MemberCommand::Add { niche, user, role },
        } => {
            let db = startup::connect_for_a_command(&config).await?;
            let role = match role {
                RoleArg::Operator => MemberRole::Operator,
                RoleArg::Specialist => MemberRole::Specialist,
                RoleArg::Observer => MemberRole::Observer,
            };
            accounts::add_member(
                &db,
                &ChangeHint::none(),
                &niche,
                &user,
                role,
                &Actor::Cli,
                Utc::now(),
            )
            .await?;
            println!("'{user}' is now an active member of '{niche}'");
            Ok(())
        }
        Command::Apikey {
            action: ApiKeyCommand::Create { user, name },
        } => {
            let db = startup::connect_for_a_command(&config).await?;
            let issued =
                accounts::create_api_key(&db, &user, &name, None, &Actor::Cli, Utc::now()).await?;
            eprintln!("API key for '{user}' (shown once; keep it safe):");
            println!("{}", issued.token);
            Ok(())
        }
        Command::Agent { action } => registry::run(config, action).await,
        Command::Knowledge { action } => knowledge::run(config, action).await,
        Command::Sign(args) => agent::sign(&config, args),
        Command::Ask(args) => agent::ask(&config, *args).await,
        Command::Withdraw(args) => agent::withdraw(&config, args).await,
        Command::Schema => {
            print!("{}", graphql::sdl());
            Ok(())
        }
        Command::Openapi => {
            print!("{}", crate::rest::openapi::json());
            Ok(())
        }
    }
}

async fn serve(config: Config, demo: bool) -> anyhow::Result<()> {
    // Before anything is opened: the connection cap is set from the limit found at start.
    crate::net::serve::raise_file_limit();
    let database = redact_url(&config.database_url);
    let db = startup::connect_and_migrate(&config).await?;
    if demo {
        match demo::seed_demo(&db).await? {
            Some(logins) => {
                println!("Demo data created: niche 'games' with an operator and an admin.");
                println!(
                    "  operator  handle: {}  password: {}",
                    logins.operator.0, logins.operator.1
                );
                println!(
                    "  admin     handle: {}  password: {}",
                    logins.admin.0, logins.admin.1
                );
                println!("These passwords are shown once; sign in at /login.");
            }
            None => println!("Demo data not created: the database already has people or niches."),
        }
    }
    if !config.signing.is_configured() {
        tracing::warn!("CHOVY_SIGNING_SECRET is not set: the signed intake routes answer 503");
    }
    if config.data_key.is_none() {
        tracing::warn!(
            "ASKLOOP_DATA_KEY is not set: registered agents' signing secrets are stored as given"
        );
    }
    let app = Application::build_with(config, db).await?;
    let addr = app.local_addr();
    tracing::info!(%addr, %database, "askloop is listening");
    println!("askloop is serving on http://{addr}");
    app.run_until(startup::shutdown_signal()).await
}

/// The one text rule (docs/security.md#text) for every argument of every command, before any
/// command runs: a value holding a control character other than tab and line breaks is refused,
/// naming its flag. The arguments are read from what clap matched, so a flag added later is
/// covered without being listed. (NUL itself cannot be in an argument; the others can.)
fn text_arguments(
    command: &clap::Command,
    matches: &ArgMatches,
) -> Result<(), crate::domain::text::ControlCharacter> {
    use crate::domain::text::{TextKind, checked};
    for arg in command.get_arguments() {
        let Ok(Some(values)) = matches.try_get_raw(arg.get_id().as_str()) else {
            continue;
        };
        let field = match arg.get_long() {
            Some(long) => format!("--{long}"),
            None => format!("<{}>", arg.get_id()),
        };
        // A value that is not UTF-8 is for its own parser (a path) or clap to refuse.
        for value in values.filter_map(|value| value.to_str()) {
            checked(&field, value, TextKind::Lines)?;
        }
    }
    match matches.subcommand() {
        Some((name, sub_matches)) => match command.find_subcommand(name) {
            Some(sub_command) => text_arguments(sub_command, sub_matches),
            None => Ok(()),
        },
        None => Ok(()),
    }
}

/// The password for a new user: ASKLOOP_PASSWORD, or typed at a prompt (twice), or read from
/// stdin; text like any other, so a control character other than tab is refused.
fn read_password() -> anyhow::Result<String> {
    let password = typed_password()?;
    crate::domain::text::checked(
        "the password",
        &password,
        crate::domain::text::TextKind::Lines,
    )?;
    Ok(password)
}

fn typed_password() -> anyhow::Result<String> {
    if let Ok(password) = std::env::var("ASKLOOP_PASSWORD") {
        return Ok(password);
    }
    if !std::io::stdin().is_terminal() {
        let mut password = String::new();
        std::io::stdin().read_to_string(&mut password)?;
        let password = password.trim_end_matches(['\n', '\r']).to_owned();
        if password.is_empty() {
            anyhow::bail!("no password: set ASKLOOP_PASSWORD or type one at the prompt");
        }
        return Ok(password);
    }
    let first = rpassword::prompt_password("Password: ")?;
    let second = rpassword::prompt_password("Again: ")?;
    if first != second {
        anyhow::bail!("the two passwords differ");
    }
    Ok(first)
}

/// A database URL with any password replaced, fit for printing.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let credentials = &url[scheme_end + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme_end + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_database_urls_hide_the_password() {
        assert_eq!(
            redact_url("postgres://askloop:hunter2@db:5432/askloop"),
            "postgres://askloop:***@db:5432/askloop"
        );
        assert_eq!(
            redact_url("sqlite://askloop.db?mode=rwc"),
            "sqlite://askloop.db?mode=rwc"
        );
        assert_eq!(
            redact_url("postgres://postgres@127.0.0.1/test"),
            "postgres://postgres@127.0.0.1/test"
        );
    }

    #[test]
    fn every_argument_of_every_command_is_text_by_the_one_rule() {
        let command = Cli::command();
        let check = |args: &[&str]| {
            let matches = command.clone().try_get_matches_from(args).expect("parses");
            text_arguments(&command, &matches).map_err(|refused| refused.to_string())
        };
        assert_eq!(
            check(&["askloop", "niche", "create", "--slug", "games", "--name", "Ga\u{1b}[2Jmes"]),
            Err("--name contains a control character (U+001B; only tab and line breaks are allowed)".into())
        );
        assert!(
            check(&["askloop", "agent", "rotate", "bo\u{7f}t"])
                .is_err_and(|refused| refused.starts_with("<slug> contains"))
        );
        assert_eq!(
            check(&[
                "askloop", "niche", "create", "--slug", "games", "--name", "Games"
            ]),
            Ok(())
        );
        assert_eq!(
            check(&[
                "askloop",
                "ask",
                "--niche",
                "games",
                "--title",
                "t",
                "--question",
                "line one\n\tline two"
            ]),
            Ok(())
        );
    }

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    /// The variables the environment section of `help` names: the first word of each of its
    /// lines that begins in the name column (two spaces in; wrapped text is indented further).
    fn variables_in_help(help: &str) -> Vec<String> {
        let section = help
            .split_once("Environment (")
            .map(|(_, rest)| rest)
            .expect("an environment section");
        let mut names: Vec<String> = section
            .lines()
            .filter_map(|line| line.strip_prefix("  "))
            .filter(|line| !line.starts_with(' '))
            .filter_map(|line| line.split_whitespace().next())
            .filter(|word| {
                word.len() > 1
                    && word
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            })
            .map(str::to_owned)
            .collect();
        names.sort();
        names
    }

    #[test]
    fn help_and_serve_help_list_exactly_the_variables_of_the_settings() {
        use clap::CommandFactory;
        let mut askloop = Cli::command();
        let top = askloop.render_long_help().to_string();
        let serve = askloop
            .find_subcommand_mut("serve")
            .expect("a serve command")
            .render_long_help()
            .to_string();
        let mut settings: Vec<String> = crate::config::Settings::variables()
            .into_iter()
            .map(|var| var.name)
            .collect();
        settings.sort();
        assert_eq!(variables_in_help(&top), settings, "askloop --help");
        assert_eq!(variables_in_help(&serve), settings, "askloop serve --help");
    }
}
