//! The dashboard is served on the same origin, and in a real headless Chromium it loads, talks to
//! `/graphql` and shows the niches it can see.

use askloop_tests::browser::Browser;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_the_niches_it_can_see_in_a_real_browser() {
    require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    niche(&app.db, "games", NicheStatus::Open).await;
    niche(&app.db, "secret-draft", NicheStatus::Draft).await;
    let mut browser = Browser::start().await;
    for (name, width, height, mobile) in [
        ("niches-desktop", 1280, 800, false),
        ("niches-phone", 390, 844, true),
    ] {
        browser.viewport(width, height, mobile).await;
        browser.goto(&app.url("/")).await;
        browser
            .wait_for(
                "document.querySelector('[data-slug=\"games\"]')",
                "the games niche",
            )
            .await;
        let text = browser.eval("document.body.innerText").await;
        let text = text.as_str().unwrap_or_default();
        assert!(text.contains("Niche games"), "{text}");
        assert!(
            !text.contains("secret-draft"),
            "a draft niche leaked:\n{text}"
        );
        let shot = browser.screenshot(name).await;
        let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
        assert!(size > 1_000, "{} is only {size} bytes", shot.display());
    }
}
