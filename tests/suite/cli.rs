//! The `askloop` command line, run as the real binary.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use askloop::domain::signing::SigningKeys;
use askloop_tests::fixtures::open_niche;
use askloop_tests::mcp::{McpClient, agent_with_token, token_for};
use askloop_tests::{Backend, SECRET, TestApp, TestDatabase, askloop_binary, load_binary};
use entity::{api_keys, audit_log, niche_members, users};
use sea_orm::{ColumnTrait, Database, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};
use serde_json::json;

fn askloop(database_url: &str, args: &[&str]) -> Command {
    let mut command = Command::new(askloop_binary());
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", database_url)
        .env("RUST_LOG", "error")
        .stdin(Stdio::null());
    command
}

/// A measuring tool of `askloop-load`, named by the first argument, as the CLI tests run askloop.
fn measuring(database_url: &str, args: &[&str]) -> Command {
    let mut command = Command::new(load_binary(args[0]));
    command
        .args(&args[1..])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", database_url)
        .env("RUST_LOG", "error")
        .stdin(Stdio::null());
    command
}

fn run(mut command: Command) -> Output {
    command.output().expect("askloop runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn the_cli_sets_up_a_niche_a_person_a_membership_and_an_api_key() {
    let database = TestDatabase::create(Backend::Sqlite)
        .await
        .expect("a database");
    let url = database.url.clone();
    let steps: [&[&str]; 3] = [
        &["niche", "create", "--slug", "Roofing", "--name", "Roofing"],
        &[
            "user",
            "create",
            "--handle",
            "ana",
            "--email",
            "ana@example.com",
        ],
        &[
            "member",
            "add",
            "--niche",
            "roofing",
            "--user",
            "ana",
            "--role",
            "specialist",
        ],
    ];
    for args in steps {
        let mut command = askloop(&url, args);
        command.env("ASKLOOP_PASSWORD", "a long enough password");
        let output = run(command);
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
    }
    let output = run(askloop(&url, &["apikey", "create", "--user", "ana"]));
    assert!(output.status.success(), "{}", stderr(&output));
    let token = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert!(token.starts_with("al_key_") && token.len() == 71, "{token}");

    let db = Database::connect(&url).await.expect("connect");
    let person = users::Entity::find()
        .one(&db)
        .await
        .expect("query")
        .expect("a user");
    assert_eq!(person.handle, "ana");
    assert!(person.credential_hash.starts_with("$argon2id$"));
    assert!(!person.credential_hash.contains("a long enough password"));
    let member = niche_members::Entity::find()
        .one(&db)
        .await
        .expect("query")
        .expect("a membership");
    assert_eq!(member.role, niche_members::MemberRole::Specialist);
    assert_eq!(member.status, niche_members::MemberStatus::Active);
    let key = api_keys::Entity::find()
        .one(&db)
        .await
        .expect("query")
        .expect("a key");
    assert_ne!(key.token_hash, token, "only a hash of the key is stored");
    db.close().await.ok();
}

#[tokio::test]
async fn cli_errors_say_what_is_wrong_and_exit_non_zero() {
    let database = TestDatabase::create(Backend::Sqlite)
        .await
        .expect("a database");
    let url = database.url.clone();
    let created = run(askloop(
        &url,
        &["niche", "create", "--slug", "games", "--name", "Games"],
    ));
    assert!(created.status.success(), "{}", stderr(&created));

    let cases: [(&[&str], &str); 5] = [
        (
            &["niche", "create", "--slug", "games", "--name", "Again"],
            "already exists",
        ),
        (
            &["niche", "create", "--slug=-x", "--name", "Bad"],
            "a slug is 2 to 63 characters",
        ),
        (
            &["niche", "create", "--slug", "admin", "--name", "Admin"],
            "'admin' is reserved",
        ),
        (
            &["member", "add", "--niche", "games", "--user", "nobody"],
            "no user 'nobody'",
        ),
        (
            &["apikey", "create", "--user", "nobody"],
            "no user 'nobody'",
        ),
    ];
    for (args, message) in cases {
        let output = run(askloop(&url, args));
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&output).contains(message),
            "{args:?}: {}",
            stderr(&output)
        );
    }

    let mut short = askloop(
        &url,
        &[
            "user",
            "create",
            "--handle",
            "bo",
            "--email",
            "bo@example.com",
        ],
    );
    short.env("ASKLOOP_PASSWORD", "short");
    let output = run(short);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("at least 10 characters"),
        "{}",
        stderr(&output)
    );

    let db = Database::connect(&url).await.expect("connect");
    assert_eq!(users::Entity::find().count(&db).await.expect("count"), 0);
    db.close().await.ok();
}

#[test]
fn cli_sign_prints_a_header_that_askloop_verifies() {
    let body = br#"{"payload":{"nicheSlug":"games","title":"t","question":"q"}}"#;
    let mut child = askloop("sqlite::memory:", &["sign", "--at", "1700000000"])
        .env("CHOVY_SIGNING_SECRET", SECRET)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("askloop runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(body)
        .expect("write the body");
    let output = child.wait_with_output().expect("askloop finishes");
    assert!(output.status.success());
    let header = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert!(header.starts_with("t=1700000000,v1="), "{header}");
    let keys = SigningKeys::new(Some(SECRET.into()), None);
    assert_eq!(
        keys.verify(Some(&header), body, 1_700_000_000),
        Ok(1_700_000_000)
    );
}

#[test]
fn cli_sign_without_a_secret_fails() {
    let output = run(askloop("sqlite::memory:", &["sign"]));
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("CHOVY_SIGNING_SECRET is not set"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_ask_posts_a_signed_question_and_withdraw_takes_it_back() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let base = app.base.clone();
    let ask_base = base.clone();
    let output = tokio::task::spawn_blocking(move || {
        let mut ask = askloop(
            "sqlite::memory:",
            &[
                "ask",
                "--url",
                &ask_base,
                "--niche",
                "games",
                "--title",
                "Which date?",
                "--question",
                "EA or 1.0?",
                "--external-id",
                "cli-1",
                "--option",
                "ea=Early access",
                "--option",
                "full=1.0",
            ],
        );
        ask.env("CHOVY_SIGNING_SECRET", SECRET);
        run(ask)
    })
    .await
    .expect("askloop finished");
    assert!(output.status.success(), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("201 "), "{stdout}");
    assert!(stdout.contains(r#""duplicate":false"#), "{stdout}");

    // `askloop withdraw` takes it back; a second time it says so; an unknown one fails.
    let withdraw = |external_id: &'static str| {
        let base = base.clone();
        tokio::task::spawn_blocking(move || {
            let mut withdraw = askloop(
                "sqlite::memory:",
                &[
                    "withdraw",
                    "--url",
                    &base,
                    "--external-id",
                    external_id,
                    "--reason",
                    "no longer needed",
                ],
            );
            withdraw.env("CHOVY_SIGNING_SECRET", SECRET);
            run(withdraw)
        })
    };
    let first = withdraw("cli-1").await.expect("askloop finished");
    assert!(first.status.success(), "{}", stderr(&first));
    let printed = String::from_utf8_lossy(&first.stdout).into_owned();
    assert!(printed.starts_with("200 "), "{printed}");
    assert!(printed.contains(r#""outcome":"withdrawn""#), "{printed}");
    assert!(printed.contains(r#""status":"dismissed""#), "{printed}");
    let second = withdraw("cli-1").await.expect("askloop finished");
    let printed = String::from_utf8_lossy(&second.stdout).into_owned();
    assert!(
        printed.contains(r#""outcome":"already_withdrawn""#),
        "{printed}"
    );
    let unknown = withdraw("cli-9").await.expect("askloop finished");
    assert!(!unknown.status.success());
    assert!(
        String::from_utf8_lossy(&unknown.stdout).starts_with("404 "),
        "{}",
        String::from_utf8_lossy(&unknown.stdout)
    );
}

/// `askloop ask --task` delegates a task at its limit; `--task` without a limit is refused by
/// the command itself and sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_ask_delegates_a_task_with_its_limit() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let base = app.base.clone();
    let ask_with = |extra: &'static [&'static str]| {
        let base = base.clone();
        tokio::task::spawn_blocking(move || {
            let mut args = vec![
                "ask",
                "--url",
                &base,
                "--niche",
                "games",
                "--title",
                "Three prices",
                "--question",
                "Check these three underlays.",
                "--external-id",
                "cli-task",
                "--task",
            ];
            args.extend_from_slice(extra);
            let mut ask = askloop("sqlite::memory:", &args);
            ask.env("CHOVY_SIGNING_SECRET", SECRET);
            run(ask)
        })
    };
    let without = ask_with(&[]).await.expect("askloop finished");
    assert!(!without.status.success());
    assert!(
        stderr(&without).contains("--budget-limit-minor"),
        "{}",
        stderr(&without)
    );
    assert_eq!(
        entity::agent_questions::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        0
    );
    let output = ask_with(&["--budget-limit-minor", "0", "--deliverable", "Links too"])
        .await
        .expect("askloop finished");
    assert!(!output.status.success(), "a limit of 0 is refused");
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("400 "));
    let niche_max = entity::niches::Entity::update_many()
        .col_expr(
            entity::niches::Column::MaxBountyMinor,
            sea_orm::sea_query::Expr::value(1000_i64),
        )
        .exec(&app.db)
        .await;
    niche_max.expect("maximum set");
    let output = ask_with(&["--budget-limit-minor", "250", "--deliverable", "Links too"])
        .await
        .expect("askloop finished");
    assert!(output.status.success(), "{}", stderr(&output));
    let stored = entity::agent_questions::Entity::find()
        .one(&app.db)
        .await
        .expect("query")
        .expect("the task");
    assert_eq!(stored.kind, entity::agent_questions::ExchangeKind::Task);
    assert_eq!(stored.bounty_minor, 250);
    assert_eq!(stored.deliverable.as_deref(), Some("Links too"));
}

/// What `askloop serve --demo` did on a fresh SQLite file, logging JSON, asked for `/healthz`
/// once and then sent SIGTERM.
struct ServedDemo {
    /// What it printed before saying where it serves.
    printed: String,
    /// Whether `/healthz` answered 200.
    healthy: bool,
    /// How it exited, and its log lines.
    output: Output,
}

async fn serve_the_demo_until_sigterm() -> ServedDemo {
    use std::io::{BufRead, BufReader};

    let database = TestDatabase::create(Backend::Sqlite)
        .await
        .expect("a database");
    let mut child = askloop(&database.url, &["serve", "--demo"])
        .env("ASKLOOP_BIND", "127.0.0.1:0")
        .env("ASKLOOP_LOG_FORMAT", "json")
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("askloop starts");
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut printed = Vec::new();
    let mut base = None;
    for line in stdout.lines() {
        let line = line.expect("a line");
        if let Some(url) = line.strip_prefix("askloop is serving on ") {
            base = Some(url.to_owned());
            break;
        }
        printed.push(line);
    }
    let base = base.expect("askloop says where it serves");
    let health = reqwest::get(format!("{base}/healthz")).await.expect("sent");
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(kill.success());
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("joined")
        .expect("askloop exits");
    ServedDemo {
        printed: printed.join("\n"),
        healthy: health.status() == 200,
        output,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_demo_seeds_an_empty_database_and_prints_how_to_sign_in() {
    let ServedDemo {
        printed, healthy, ..
    } = serve_the_demo_until_sigterm().await;
    assert!(
        printed.contains("operator  handle: operator  password: "),
        "{printed}"
    );
    assert!(
        printed.contains("admin     handle: admin  password: "),
        "{printed}"
    );
    assert!(healthy, "/healthz did not answer 200");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_logs_json_lines_that_carry_the_request_id() {
    let ServedDemo { output, .. } = serve_the_demo_until_sigterm().await;
    let logs = stderr(&output);
    let request_line = logs
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|entry| entry["span"]["request_id"].is_string())
        .unwrap_or_else(|| panic!("no JSON log line carries a request id:\n{logs}"));
    assert_eq!(request_line["span"]["uri"], "/healthz");
    let warnings = logs
        .lines()
        .filter(|line| line.contains("ASKLOOP_DATA_KEY is not set"))
        .count();
    assert_eq!(
        warnings, 1,
        "one warning about secrets stored as given:\n{logs}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_stops_cleanly_on_sigterm() {
    let ServedDemo { output, .. } = serve_the_demo_until_sigterm().await;
    assert!(output.status.success(), "{}", stderr(&output));
    let logs = stderr(&output);
    assert!(logs.contains("shutting down"), "{logs}");
}

/// `askloop ask --file` run against a fresh app with `games` open, for a file holding
/// `contents`.
async fn ask_with_a_file(contents: String) -> Output {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let dir = std::env::temp_dir().join(format!("askloop-ask-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let file = dir.join("question.json");
    std::fs::write(&file, contents).expect("written");
    let base = app.base.clone();
    let output = tokio::task::spawn_blocking(move || {
        let mut ask = askloop("sqlite::memory:", &["ask", "--url", &base, "--file"]);
        ask.arg(&file).env("CHOVY_SIGNING_SECRET", SECRET);
        run(ask)
    })
    .await
    .expect("askloop finished");
    let _ = std::fs::remove_dir_all(&dir);
    output
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_ask_sends_a_json_file_as_the_question() {
    let ok =
        ask_with_a_file(askloop_tests::fixtures::question_body("games", "from-file").to_string())
            .await;
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(String::from_utf8_lossy(&ok.stdout).starts_with("201 "));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_ask_refuses_a_file_that_is_not_json() {
    let broken = ask_with_a_file("{ not json".to_owned()).await;
    assert_eq!(broken.status.code(), Some(1));
    assert!(
        stderr(&broken).contains("is not JSON"),
        "{}",
        stderr(&broken)
    );
}

/// The `flood` tool (askloop-load) against a fresh askloop of its own: the flooding socket is closed at the
/// operation cap, the floods from the other address are refused past its bounds, every probe is
/// answered, and the server exits on SIGTERM. Bad arguments are refused before anything starts.
#[tokio::test]
async fn the_flood_tool_reports_the_cap_the_probes_and_the_exit() {
    let database = TestDatabase::create(Backend::Sqlite)
        .await
        .expect("a database");
    let output = run(measuring(
        &database.url,
        &[
            "flood",
            "--seconds",
            "3",
            "--subscribes",
            "100",
            "--idle",
            "300",
            "--trickle",
            "10",
            "--anonymous",
            "20",
        ],
    ));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", stderr(&output));
    // Past the cap it is closed: at the 33rd operation (4429), or sooner (1008) when the burst
    // outruns the socket's small inbox, as it may on a busy machine.
    assert!(
        stdout.contains("sent 100 subscribes")
            && (stdout.contains("closed with 4429") || stdout.contains("closed with 1008")),
        "{stdout}"
    );
    assert!(stdout.contains("from the flood on"), "{stdout}");
    // 330 connections from one address against its cap of 256: some are refused at once, as
    // are the anonymous websockets past the 8 one address may hold.
    for flood in [
        "300 idle connections from 127.0.0.2",
        "20 anonymous websockets from 127.0.0.2",
    ] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("flood    {flood}")))
            .unwrap_or_else(|| panic!("no {flood} line in {stdout}"));
        assert!(!line.contains("refused at once 0,"), "{line}");
    }
    assert!(
        stdout.contains("every probe's max under 100 ms"),
        "{stdout}"
    );
    for probe in ["intake", "graphql", "readyz", "ping", "connect"] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("probe {probe}")))
            .unwrap_or_else(|| panic!("no {probe} line in {stdout}"));
        assert!(line.ends_with("failures 0"), "{line}");
    }
    assert!(stdout.contains("sigterm  exited in"), "{stdout}");

    for (args, says) in [
        (
            &["flood", "--subscribes", "0"][..],
            "--subscribes must be at least 1",
        ),
        (
            &["flood", "--seconds", "1"][..],
            "--seconds must be at least 2",
        ),
        (
            &["flood", "--seconds", "3", "--flood-after", "3"][..],
            "--flood-after must be shorter than --seconds",
        ),
        (&["flood", "--target", "http://127.0.0.1:9"][..], "--token"),
        (
            &[
                "flood", "--target", "ftp://x", "--token", "t", "--niche", "n", "--secret", "s",
            ][..],
            "--target must be an http:// or https:// address",
        ),
    ] {
        let output = run(measuring(&database.url, args));
        assert!(!output.status.success(), "{args:?}");
        assert!(
            stderr(&output).contains(says),
            "{args:?}: {}",
            stderr(&output)
        );
    }
}

/// The last `bench:` line of a measuring command's output, parsed.
fn bench_line(stdout: &str, run: &str) -> serde_json::Value {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("bench: "))
        .filter_map(|json| serde_json::from_str::<serde_json::Value>(json).ok())
        .find(|figures| figures["run"] == run)
        .unwrap_or_else(|| panic!("no '{run}' bench line in {stdout}"))
}

/// The `contention` tool has N operators answer one question at once: exactly one wins each
/// round, and the figures reach `cargo xtask bench` as a bench line; bad sizes are refused.
#[tokio::test]
async fn the_contention_tool_finds_one_winner_per_round() {
    let database = TestDatabase::create(Backend::Sqlite)
        .await
        .expect("a database");
    let output = run(measuring(
        &database.url,
        &["contention", "--operators", "5", "--rounds", "2"],
    ));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", stderr(&output));
    // Two counted rounds after the uncounted warm-up rounds, one more than SQLite's one writing
    // connection: four in all.
    assert!(stdout.contains("one winner in 4 of 4 rounds"), "{stdout}");
    assert!(stdout.contains("after 2 warm-up rounds"), "{stdout}");
    let figures = bench_line(&stdout, "contention");
    assert_eq!(figures["badRounds"], 0, "{figures}");
    assert_eq!(figures["operators"], 5, "{figures}");
    assert_eq!(figures["rounds"], 2, "{figures}");
    assert_eq!(figures["warmUpRounds"], 2, "{figures}");
    for (args, says) in [
        (
            &["contention", "--operators", "1"][..],
            "--operators must be at least 2",
        ),
        (
            &["contention", "--rounds", "0"][..],
            "--rounds must be at least 1",
        ),
        (
            &["contention", "--warm-up", "0"][..],
            "--warm-up must be at least 1",
        ),
    ] {
        let output = run(measuring(&database.url, args));
        assert!(!output.status.success(), "{args:?}");
        assert!(
            stderr(&output).contains(says),
            "{args:?}: {}",
            stderr(&output)
        );
    }
}

/// `loadgen --rate` offers requests on a schedule (open loop) and stores every one; a
/// rate of 0 is refused.
#[tokio::test]
async fn the_load_generator_runs_open_loop_at_a_rate() {
    let database = TestDatabase::create(Backend::Sqlite)
        .await
        .expect("a database");
    let output = run(measuring(
        &database.url,
        &["loadgen", "--rate", "200", "-n", "100", "--no-baseline"],
    ));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", stderr(&output));
    assert!(stdout.contains("offered 200/s"), "{stdout}");
    let figures = bench_line(&stdout, "open");
    assert_eq!(
        (&figures["count"], &figures["failures"]),
        (&json!(100), &json!(0)),
        "{figures}"
    );
    let refused = run(measuring(
        &database.url,
        &["loadgen", "--rate", "0", "-n", "10"],
    ));
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("--rate must be at least 1"),
        "{}",
        stderr(&refused)
    );
}

/// `askloop niche budget` sets the monthly limit and bounties, keeps what is not given, prints
/// where the month stands, and refuses bad amounts with nothing changed.
#[tokio::test]
async fn the_cli_sets_a_niche_budget_and_refuses_bad_amounts() {
    let database = TestDatabase::create(Backend::Sqlite)
        .await
        .expect("a database");
    let url = database.url.clone();
    let created = run(askloop(
        &url,
        &["niche", "create", "--slug", "games", "--name", "Games"],
    ));
    assert!(created.status.success(), "{}", stderr(&created));
    let stored = |url: String| async move {
        let db = Database::connect(&url).await.expect("connect");
        let niche = entity::niches::Entity::find()
            .one(&db)
            .await
            .expect("query")
            .expect("the niche");
        db.close().await.ok();
        (
            niche.monthly_budget_minor,
            niche.bounty_minor,
            niche.max_bounty_minor,
        )
    };

    let set = run(askloop(
        &url,
        &[
            "niche",
            "budget",
            "--slug",
            "games",
            "--monthly",
            "5000",
            "--bounty",
            "100",
            "--max-bounty",
            "500",
        ],
    ));
    assert!(set.status.success(), "{}", stderr(&set));
    assert_eq!(
        String::from_utf8_lossy(&set.stdout).trim(),
        "niche 'games': monthly limit 5000, bounty 100, largest bounty 500, reuse price 0; this month spent 0, reserved 0, left 5000"
    );
    assert_eq!(stored(url.clone()).await, (Some(5000), 100, 500));

    let bounty_only = run(askloop(
        &url,
        &["niche", "budget", "--slug", "games", "--bounty", "200"],
    ));
    assert!(bounty_only.status.success(), "{}", stderr(&bounty_only));
    assert_eq!(stored(url.clone()).await, (Some(5000), 200, 500));
    let unlimited = run(askloop(
        &url,
        &["niche", "budget", "--slug", "games", "--unlimited"],
    ));
    assert!(unlimited.status.success(), "{}", stderr(&unlimited));
    assert!(String::from_utf8_lossy(&unlimited.stdout).contains("no monthly limit"));
    assert_eq!(stored(url.clone()).await, (None, 200, 500));

    let cases: [(&[&str], &str); 4] = [
        (
            &["niche", "budget", "--slug", "games", "--bounty", "600"],
            "the default bounty cannot be above the largest bounty",
        ),
        (
            &["niche", "budget", "--slug", "games", "--monthly=-1"],
            "monthlyBudgetMinor cannot be negative",
        ),
        (
            &["niche", "budget", "--slug", "nowhere", "--bounty", "1"],
            "no niche 'nowhere'",
        ),
        (
            &[
                "niche",
                "budget",
                "--slug",
                "games",
                "--monthly",
                "5",
                "--unlimited",
            ],
            "cannot be used with",
        ),
    ];
    for (args, message) in cases {
        let output = run(askloop(&url, args));
        assert!(!output.status.success(), "{args:?}");
        assert!(
            stderr(&output).contains(message),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    assert_eq!(stored(url).await, (None, 200, 500));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_registers_rotates_disables_enables_and_lists_agents() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let url = app.database_url.clone();
    let base = app.base.clone();
    let created = run(askloop(
        &url,
        &[
            "agent",
            "create",
            "--slug",
            "agent-a",
            "--name",
            "Agent A",
            "--niche",
            "games",
            "--webhook-url",
            "https://agent.example/hooks",
            "--scheme",
            "standard",
            "--event",
            "expert_answer.created",
        ],
    ));
    assert!(created.status.success(), "{}", stderr(&created));
    let secret = String::from_utf8_lossy(&created.stdout).trim().to_owned();
    assert!(
        secret.starts_with("whsec_") && secret.len() == 50,
        "only the secret on stdout: {secret}"
    );

    // The printed secret signs as that agent, through `askloop ask --agent`.
    let ask = |secret: String, external_id: &'static str| {
        let base = base.clone();
        tokio::task::spawn_blocking(move || {
            let mut ask = askloop(
                "sqlite::memory:",
                &[
                    "ask",
                    "--url",
                    &base,
                    "--agent",
                    "agent-a",
                    "--niche",
                    "games",
                    "--title",
                    "Which date?",
                    "--question",
                    "EA or 1.0?",
                    "--external-id",
                    external_id,
                ],
            );
            ask.env("CHOVY_SIGNING_SECRET", secret);
            run(ask)
        })
    };
    let asked = ask(secret.clone(), "cli-1").await.expect("joined");
    assert!(asked.status.success(), "{}", stderr(&asked));

    let rotated = run(askloop(
        &url,
        &["agent", "rotate", "agent-a", "--retire-previous-in", "0"],
    ));
    assert!(rotated.status.success(), "{}", stderr(&rotated));
    let new = String::from_utf8_lossy(&rotated.stdout).trim().to_owned();
    assert!(new.starts_with("whsec_") && new != secret);
    let refused = ask(secret, "cli-2").await.expect("joined");
    assert!(!refused.status.success(), "the retired secret is refused");
    assert!(String::from_utf8_lossy(&refused.stdout).starts_with("401 "));
    assert!(
        ask(new.clone(), "cli-3")
            .await
            .expect("joined")
            .status
            .success()
    );

    let disabled = run(askloop(&url, &["agent", "disable", "agent-a"]));
    assert!(disabled.status.success(), "{}", stderr(&disabled));
    let refused = ask(new.clone(), "cli-4").await.expect("joined");
    assert!(String::from_utf8_lossy(&refused.stdout).starts_with("403 "));
    let enabled = run(askloop(&url, &["agent", "enable", "agent-a"]));
    assert!(enabled.status.success(), "{}", stderr(&enabled));

    let listed = run(askloop(&url, &["agent", "list"]));
    assert!(listed.status.success(), "{}", stderr(&listed));
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(
        listed.starts_with("agent-a\tactive\tAgent A\tniches: games\tendpoint: https://agent.example/hooks (standard)\tevents: expert_answer.created"),
        "{listed}"
    );
    assert!(!listed.contains(&new[6..]), "a list never shows a secret");
    let audited = entity::audit_log::Entity::find()
        .all(&app.db)
        .await
        .expect("query")
        .into_iter()
        .filter(|row| row.subject_type == "agent")
        .map(|row| (row.actor, row.action))
        .collect::<Vec<_>>();
    let cli = |action: &str| ("cli".to_owned(), action.to_owned());
    assert_eq!(
        audited,
        [
            cli("agent.created"),
            cli("agent.rotated"),
            cli("agent.disabled"),
            cli("agent.enabled")
        ]
    );
}

#[tokio::test]
async fn cli_agent_errors_say_what_is_wrong_and_change_nothing() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let url = app.database_url.clone();
    for (args, says) in [
        (
            &[
                "agent", "create", "--slug", "A!", "--name", "A", "--niche", "games",
            ][..],
            "is not an agent slug",
        ),
        (
            &[
                "agent", "create", "--slug", "agent-a", "--name", "A", "--niche", "nope",
            ][..],
            "no niche 'nope'",
        ),
        (
            &["agent", "create", "--slug", "agent-a", "--name", "A"][..],
            "--niche",
        ),
        (
            &[
                "agent",
                "create",
                "--slug",
                "agent-a",
                "--name",
                "A",
                "--niche",
                "games",
                "--event",
                "answer.maybe",
            ][..],
            "not an event askloop sends",
        ),
        (
            &[
                "agent",
                "create",
                "--slug",
                "agent-a",
                "--name",
                "A",
                "--niche",
                "games",
                "--webhook-url",
                "nowhere",
            ][..],
            "http:// or https://",
        ),
        (&["agent", "rotate", "ghost"][..], "no agent 'ghost'"),
        (
            &[
                "agent",
                "rotate",
                "ghost",
                "--retire-previous-in",
                "9223372036854775807",
            ][..],
            "within 0 seconds to 30 days",
        ),
        (&["agent", "disable", "ghost"][..], "no agent 'ghost'"),
    ] {
        let output = run(askloop(&url, args));
        assert!(!output.status.success(), "{args:?}");
        assert!(
            stderr(&output).contains(says),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(output.stdout.is_empty(), "{args:?}: no secret printed");
    }
    assert_eq!(
        entity::agents::Entity::find()
            .count(&app.db)
            .await
            .expect("count"),
        0
    );
}

#[test]
fn a_malformed_data_key_stops_askloop_before_it_starts() {
    let mut serve = askloop("sqlite::memory:", &["serve"]);
    serve.env("ASKLOOP_DATA_KEY", "too-short");
    let output = run(serve);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("ASKLOOP_DATA_KEY: must be base64 of exactly 32 bytes"),
        "{}",
        stderr(&output)
    );
}

/// `askloop agent token` prints a token (alone on stdout) that opens `/mcp`; `revoke-token`
/// closes it again; both are audited; a wrong agent or nothing to revoke is an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_issues_and_revokes_agent_tokens() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    agent_with_token(&app, "agent-a", &["games"]).await;
    let url = app.database_url.clone();
    let cli = |args: &'static [&'static str]| {
        let url = url.clone();
        async move {
            tokio::task::spawn_blocking(move || run(askloop(&url, args)))
                .await
                .expect("askloop finished")
        }
    };

    let issued = cli(&["agent", "token", "agent-a"]).await;
    assert!(
        issued.status.success(),
        "{}",
        String::from_utf8_lossy(&issued.stderr)
    );
    let token = String::from_utf8_lossy(&issued.stdout).trim().to_owned();
    assert!(
        token.starts_with("al_agent_") && !token.contains('\n'),
        "{token}"
    );
    assert!(String::from_utf8_lossy(&issued.stderr).contains("shown once"));
    let client = McpClient::new(&app, Some(&token));
    client.initialize().await;
    client.ok("list_questions", json!({})).await;

    // Revoking one token by its prefix leaves the agent's other token alive.
    let other = token_for(&app, "agent-a").await;
    let prefix: String = token.chars().take(17).collect();
    let url_for_prefix = url.clone();
    let revoked = tokio::task::spawn_blocking(move || {
        run(askloop(
            &url_for_prefix,
            &["agent", "revoke-token", "agent-a", "--prefix", &prefix],
        ))
    })
    .await
    .expect("askloop finished");
    assert!(
        revoked.status.success(),
        "{}",
        String::from_utf8_lossy(&revoked.stderr)
    );
    assert!(
        String::from_utf8_lossy(&revoked.stdout).starts_with("revoked 1 token(s) of 'agent-a'")
    );
    crate::mcp::assert_refused_with(
        crate::mcp::initialize_with(&app, Some(&format!("Bearer {token}"))).await,
        401,
        "UNAUTHENTICATED",
    )
    .await;
    McpClient::new(&app, Some(&other)).initialize().await;

    let all = cli(&["agent", "revoke-token", "agent-a"]).await;
    assert!(
        all.status.success(),
        "{}",
        String::from_utf8_lossy(&all.stderr)
    );
    // Two live before this: the fixture's and `other`.
    assert!(String::from_utf8_lossy(&all.stdout).starts_with("revoked 2 token(s) of 'agent-a'"));
    crate::mcp::assert_refused_with(
        crate::mcp::initialize_with(&app, Some(&format!("Bearer {other}"))).await,
        401,
        "UNAUTHENTICATED",
    )
    .await;

    let nothing = cli(&["agent", "revoke-token", "agent-a"]).await;
    assert_eq!(nothing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&nothing.stderr).contains("'agent-a' has no live token"));
    let unknown = cli(&["agent", "token", "agent-z"]).await;
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no agent 'agent-z'"));

    let actions: Vec<(String, String)> = audit_log::Entity::find()
        .filter(audit_log::Column::SubjectType.eq("agent"))
        .filter(audit_log::Column::Action.is_in(["agent.token_issued", "agent.tokens_revoked"]))
        .order_by_asc(audit_log::Column::Id)
        .all(&app.db)
        .await
        .expect("query")
        .into_iter()
        .map(|row| (row.action, row.actor))
        .collect();
    let cli = |action: &str| (action.to_owned(), "cli".to_owned());
    assert_eq!(
        actions,
        [
            cli("agent.token_issued"),
            cli("agent.token_issued"),
            cli("agent.token_issued"),
            cli("agent.tokens_revoked"),
            cli("agent.tokens_revoked"),
        ]
    );
    let stored = entity::agent_tokens::Entity::find()
        .all(&app.db)
        .await
        .expect("query");
    assert_eq!(stored.len(), 3);
    assert!(
        stored
            .iter()
            .all(|t| t.token_hash.len() == 64 && t.token_hash != token),
        "only hashes are stored"
    );
    assert!(stored.iter().all(|t| t.revoked_at.is_some()));
}
