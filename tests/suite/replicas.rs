//! Replicas are first-class (docs/architecture.md#migrations): any number of `askloop serve`
//! processes may start together on one fresh database — they take turns at the migrations
//! under the database's lock, and every one comes up and serves — and a one-shot command holds
//! at most two database connections, however large the servers' pools are.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use askloop_tests::wait;
use askloop_tests::{Backend, TestDatabase, askloop_binary};
use migration::{Migrator, MigratorTrait};
use sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DbBackend, Statement,
    TransactionTrait,
};

/// Generous bounds for a loaded two-core machine: how long a process may take to come up or to
/// be seen blocked. They only keep a broken run from hanging; nothing is timed.
const PATIENCE: Duration = Duration::from_secs(90);

/// Child processes this test started, killed when it ends however it ends.
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `askloop` with `args` on `database_url`, nothing else in its environment but `env`.
fn askloop(database_url: &str, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(askloop_binary());
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", database_url)
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    command
}

/// Where a starting `askloop serve` says it serves, or what it said on stderr when it exited
/// instead.
fn where_it_serves(child: &mut Child) -> tokio::task::JoinHandle<Result<String, String>> {
    let stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    tokio::task::spawn_blocking(move || {
        let serving = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|line| {
                line.strip_prefix("askloop is serving on ")
                    .map(str::to_owned)
            });
        serving.ok_or_else(|| {
            let mut said = String::new();
            let _ = stderr.read_to_string(&mut said);
            said
        })
    })
}

async fn four_instances_started_together_on_a_fresh_database_all_serve(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        eprintln!("skipped: TEST_DATABASE_URL is not set");
        return;
    };
    // Small pools: four servers share the test PostgreSQL server with the rest of the suite.
    let env = [
        ("ASKLOOP_BIND", "127.0.0.1:0"),
        ("ASKLOOP_DB_MAX_CONNECTIONS", "3"),
        ("ASKLOOP_WEB_DIR", "/nonexistent"),
    ];
    // All four are started before any is waited for: they meet at the migrations.
    let mut children = Children(
        (0..4)
            .map(|_| {
                askloop(&database.url, &["serve"], &env)
                    .spawn()
                    .expect("askloop starts")
            })
            .collect(),
    );
    let waits: Vec<_> = children.0.iter_mut().map(where_it_serves).collect();
    let client = reqwest::Client::new();
    for (i, wait) in waits.into_iter().enumerate() {
        let serving = tokio::time::timeout(PATIENCE, wait)
            .await
            .expect("every instance comes up or exits")
            .expect("the reader");
        let base = serving.unwrap_or_else(|said| panic!("instance {i} exited: {said}"));
        let ready = client
            .get(format!("{base}/readyz"))
            .send()
            .await
            .expect("an answer");
        assert_eq!(ready.status(), 200, "instance {i}");
    }
    // The schema was built once, whole.
    let db = Database::connect(&database.url).await.expect("connect");
    let applied = Migrator::get_applied_migrations(&db).await.expect("read");
    assert_eq!(applied.len(), Migrator::migrations().len());
    db.close().await.ok();
    drop(children);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_instances_started_together_on_a_fresh_postgres_database_all_serve() {
    four_instances_started_together_on_a_fresh_database_all_serve(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_instances_started_together_on_a_fresh_sqlite_database_all_serve() {
    four_instances_started_together_on_a_fresh_database_all_serve(Backend::Sqlite).await;
}

/// A pool of exactly one connection to `url`, so its one backend is known.
async fn one_connection(url: &str) -> DatabaseConnection {
    let mut options = ConnectOptions::new(url.to_owned());
    options
        .max_connections(1)
        .min_connections(0)
        .sqlx_logging(false);
    Database::connect(options).await.expect("connect")
}

/// The connections to `database` other than `ours`, each with its application name and whether
/// it waits for a lock, as PostgreSQL lists them.
async fn connections(
    watcher: &DatabaseConnection,
    database: &str,
    ours: i32,
) -> Vec<(String, bool)> {
    watcher
        .query_all_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            "SELECT application_name, coalesce(wait_event_type = 'Lock', false) AS waiting \
             FROM pg_stat_activity \
             WHERE datname = $1 AND pid <> $2 AND backend_type = 'client backend'",
            [database.into(), ours.into()],
        ))
        .await
        .expect("pg_stat_activity")
        .into_iter()
        .map(|row| {
            (
                row.try_get::<String>("", "application_name")
                    .unwrap_or_default(),
                row.try_get::<bool>("", "waiting").expect("a flag"),
            )
        })
        .collect()
}

/// On PostgreSQL, where every connection is a server process the server counts (SQLite's are
/// file handles inside the process, which no server runs out of). The command is caught in the
/// middle of its work: the test holds the `users` table locked, so `user create` blocks on it
/// with whatever pool it opened, and PostgreSQL's own list of connections to the database
/// (`pg_stat_activity`, everything but the test's locking connection) is read while it waits,
/// and again on every look until it exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_command_holds_at_most_two_database_connections() {
    let Some(database) = TestDatabase::create(Backend::Postgres).await else {
        eprintln!("skipped: TEST_DATABASE_URL is not set");
        return;
    };
    let admin_url = std::env::var("TEST_DATABASE_URL").expect("set, or skipped above");
    let name = database.url.rsplit('/').next().expect("a name").to_owned();
    let migrated = askloop(&database.url, &["migrate"], &[])
        .output()
        .expect("askloop runs");
    assert!(migrated.status.success(), "{migrated:?}");

    let locker = one_connection(&database.url).await;
    // Another client of the database, not askloop: its lock is what the command must wait on.
    #[expect(
        clippy::disallowed_methods,
        reason = "an outside client's transaction, holding a lock askloop waits for"
    )]
    let lock = locker.begin().await.expect("begin");
    lock.execute_unprepared("LOCK TABLE users IN ACCESS EXCLUSIVE MODE")
        .await
        .expect("locked");
    let ours: i32 = lock
        .query_one_raw(Statement::from_string(
            DbBackend::Postgres,
            "SELECT pg_backend_pid() AS pid",
        ))
        .await
        .expect("query")
        .expect("a row")
        .try_get("", "pid")
        .expect("a pid");
    let watcher = one_connection(&admin_url).await;

    let children = Children(vec![
        askloop(
            &database.url,
            &[
                "user",
                "create",
                "--handle",
                "ana",
                "--email",
                "ana@example.com",
            ],
            // However large a server's pool may be, a command's is its own.
            &[
                ("ASKLOOP_PASSWORD", "a long enough password"),
                ("ASKLOOP_DB_MAX_CONNECTIONS", "50"),
            ],
        )
        .spawn()
        .expect("askloop runs"),
    ]);
    // The most connections the command held at once, sampled at every look.
    let most = std::cell::Cell::new(0);
    let children = std::cell::RefCell::new(children);
    let blocked = wait::until_ok(PATIENCE, || async {
        let seen = connections(&watcher, &name, ours).await;
        most.set(most.get().max(seen.len()));
        if seen.iter().any(|(_, waiting)| *waiting) {
            return Ok(seen);
        }
        assert!(
            children.borrow_mut().0[0]
                .try_wait()
                .expect("a status")
                .is_none(),
            "the command ended before it reached the locked table"
        );
        Err(format!(
            "the command has not blocked on the locked table: {seen:?}"
        ))
    })
    .await;
    assert!(
        (1..=2).contains(&blocked.len()),
        "the command holds {} connections: {blocked:?}",
        blocked.len()
    );
    assert!(
        blocked.iter().all(|(app, _)| app == "askloop-command"),
        "a command's connections say what they are: {blocked:?}"
    );

    lock.commit().await.expect("unlocked");
    let status = wait::until_ok(PATIENCE, || async {
        let seen = connections(&watcher, &name, ours).await;
        most.set(most.get().max(seen.len()));
        children.borrow_mut().0[0]
            .try_wait()
            .expect("a status")
            .ok_or_else(|| "the command has not finished".to_owned())
    })
    .await;
    assert!(status.success(), "user create failed");
    let most = most.get();
    assert!(most <= 2, "the command held {most} connections at once");
    let created = locker
        .query_one_raw(Statement::from_string(
            DbBackend::Postgres,
            "SELECT count(*) AS n FROM users WHERE handle = 'ana'",
        ))
        .await
        .expect("query")
        .expect("a row")
        .try_get::<i64>("", "n")
        .expect("a count");
    assert_eq!(created, 1);
    drop(children);
    locker.close().await.ok();
    watcher.close().await.ok();
}
