//! The dashboard is served on the same origin, and in a real headless Chromium it loads, talks to
//! `/graphql` and shows the niches it can see.

use std::process::Command;

use askloop_tests::fixtures::niche;
use askloop_tests::{Backend, TestApp, web_dist};
use entity::niches::NicheStatus;

fn require_built_dashboard() {
    assert!(
        web_dist().join("index.html").is_file() && web_dist().join("pkg/web_bg.wasm").is_file(),
        "the dashboard is not built: run the tests with `cargo xtask test`"
    );
}

#[tokio::test]
async fn the_dashboard_is_served_for_its_routes_and_deep_links() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    for path in ["/", "/dashboard/niches", "/login"] {
        let page = app.client.get(app.url(path)).send().await.expect("sent");
        assert_eq!(page.status(), 200, "{path}");
        assert!(
            page.text().await.expect("text").contains("/pkg/web.js"),
            "{path}"
        );
    }
    let wasm = app
        .client
        .get(app.url("/pkg/web_bg.wasm"))
        .send()
        .await
        .expect("sent");
    assert_eq!(wasm.status(), 200);
    assert_eq!(
        wasm.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/wasm")
    );
}

/// Chromium renders the app and prints the DOM it ended with.
fn rendered_dom(url: &str) -> String {
    let profile = std::env::temp_dir().join(format!("askloop-chromium-{}", uuid::Uuid::new_v4()));
    let output = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(url)
        .output()
        .expect("chromium runs (CI installs it; locally: apt-get install chromium)");
    let _ = std::fs::remove_dir_all(profile);
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn chromium() -> String {
    std::env::var("CHROMIUM").unwrap_or_else(|_| "chromium".into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_the_niches_it_can_see_in_a_real_browser() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    niche(&app.db, "games", NicheStatus::Open).await;
    niche(&app.db, "secret-draft", NicheStatus::Draft).await;
    let url = app.url("/");
    let dom = tokio::task::spawn_blocking(move || rendered_dom(&url))
        .await
        .expect("chromium finished");
    assert!(
        dom.contains(r#"data-slug="games""#),
        "the niche is missing:\n{dom}"
    );
    assert!(dom.contains("Niche games"), "{dom}");
    assert!(
        !dom.contains("secret-draft"),
        "a draft niche leaked:\n{dom}"
    );
}
