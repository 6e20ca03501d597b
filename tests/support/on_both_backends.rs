//! [`on_both_backends!`](crate::on_both_backends): one storage test, generated once per backend,
//! so every such test runs on SQLite always and on PostgreSQL whenever `TEST_DATABASE_URL` is set.

/// Generate a test per backend from `async fn name(app: TestApp)`: `name::sqlite` always runs;
/// `name::postgres` runs when `TEST_DATABASE_URL` is set (CI sets it) and says it was skipped
/// otherwise.
///
/// Without a config, each app starts from [`test_config`](crate::test_config). With `config:`
/// first, that config is adjusted before the app starts, for every test named after it. The
/// adjustment is any `FnOnce(&mut Config)` — a closure or a function of the test's module:
///
/// ```ignore
/// on_both_backends!(intake_rejects_a_stale_timestamp, a_duplicate_is_a_200);
///
/// on_both_backends! {
///     config: |config| config.delivery.poll = Duration::from_millis(50);
///     everything_arrives_once_the_agent_comes_up,
///     a_question_past_its_time_expires,
/// }
/// ```
#[macro_export]
macro_rules! on_both_backends {
    (config: $config:expr; $($name:ident),+ $(,)?) => {
        $(
            mod $name {
                // The config is written in the test's module and may name its helpers; the test
                // itself is reached through this import too, so it is always used.
                use super::*;

                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn sqlite() {
                    let app = $crate::TestApp::spawn_with($crate::Backend::Sqlite, $config)
                        .await
                        .expect("SQLite is always available");
                    $name(app).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn postgres() {
                    match $crate::TestApp::spawn_with($crate::Backend::Postgres, $config).await {
                        Some(app) => $name(app).await,
                        None => eprintln!("skipped: TEST_DATABASE_URL is not set"),
                    }
                }
            }
        )+
    };
    ($($name:ident),+ $(,)?) => {
        $crate::on_both_backends!(config: |_| {}; $($name),+);
    };
}
