//! Database lifecycle: which storage a test runs on ([`Backend`]) and a fresh database per test
//! ([`TestDatabase`]) — an SQLite file in its own temporary directory, or a new PostgreSQL
//! database on `TEST_DATABASE_URL`'s server — removed again when the test is done.

use std::path::PathBuf;

use sea_orm::{ConnectionTrait, Database};

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
