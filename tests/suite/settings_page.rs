//! The settings page (`/dashboard/settings`) in a real Chromium: a person makes an API key and
//! sees it once — a key that really works, gone after a reload, its prefix listed — revokes it
//! after a confirmation (its next request is refused and a subscription opened with it ends),
//! sees where and when they are signed in with this device marked, ends another session and
//! signs out everywhere else. The page passes axe-core at desktop and phone widths, does not
//! scroll sideways, and shows where the keyboard's focus is.

use std::time::Duration;

use askloop_tests::answers::sign_in;
use askloop_tests::browser::{Browser, button, labelled, link_in, role};
use askloop_tests::fixtures::open_niche;
use askloop_tests::people::operator;
use askloop_tests::socket::{GqlSocket, Received};
use askloop_tests::{Backend, TestApp, error_code};
use serde_json::json;

use crate::review_pages::{assert_accessible, assert_no_sideways_scroll, tab_through};
use askloop_tests::pages::{assert_secret_shown_once, signed_in};

const PATH: &str = "/dashboard/settings";
const VIEWER: &str = "{ viewer { user { handle } } }";
const QUEUE: &str =
    "subscription($slug: String!) { questionQueue(nicheSlug: $slug) { change question { id } } }";

/// `/dashboard/settings`, as its owner uses it.
struct SettingsPage<'a>(&'a mut Browser);

askloop_tests::page_object!(SettingsPage);

impl SettingsPage<'_> {
    /// The form that makes a key.
    const FORM: &'static str = "document.querySelector('form.key-form')";

    /// The listed session whose text says `words`.
    fn session_saying(words: &str) -> String {
        let words = serde_json::to_string(words).unwrap_or_default();
        format!(
            "[...document.querySelectorAll('li[data-session]')].find(li => li.innerText.includes({words}))"
        )
    }

    /// Wait until both sections have been read.
    async fn wait_until_loaded(&mut self) {
        self.0
            .wait_for(
                &format!(
                    "{} && document.querySelector('li[data-current=true]')",
                    Self::FORM
                ),
                "the settings page's key form and this device's session",
            )
            .await;
    }

    /// Make a key named `name` with no expiry.
    async fn make_key(&mut self, name: &str) {
        self.0.fill(&labelled("Key name"), name).await;
        self.0.click(&button("Make key")).await;
    }

    /// The key shown once under `name`, read from its labelled field.
    async fn shown_key(&mut self, name: &str) -> String {
        self.0.shown_once(&format!("API key “{name}”")).await
    }
}

/// Whose `token` is, or the error code it gets.
async fn who(app: &TestApp, token: &str) -> Result<String, String> {
    let me = app.graphql(Some(token), VIEWER, json!({})).await;
    match me["data"]["viewer"]["user"]["handle"].as_str() {
        Some(handle) => Ok(handle.to_owned()),
        None => Err(error_code(&me).unwrap_or("none").to_owned()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_makes_a_key_sees_it_once_revokes_it_and_manages_their_sessions() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let laptop = sign_in(&app, "ana", "Other laptop/1.0").await;
    let phone = sign_in(&app, "ana", "Phone/2.0").await;

    // From the header's link to the settings page.
    let mut browser = signed_in(&app, "ana", "/dashboard/niches").await;
    browser
        .click(&link_in("document.querySelector('header')", "Settings"))
        .await;
    browser
        .wait_for(&format!("location.pathname === {PATH:?}"), PATH)
        .await;
    let mut page = SettingsPage(&mut browser);
    page.wait_until_loaded().await;
    browser
        .wait_for(&role("heading", "API keys"), "the API keys section")
        .await;
    browser
        .wait_for("document.querySelector('main .empty')", "no key yet")
        .await;

    // A name of spaces only is refused, shown as an alert; nothing is made.
    let mut page = SettingsPage(&mut browser);
    page.make_key("   ").await;
    let refusal = page.page_error().await;
    assert!(
        refusal
            .to_lowercase()
            .contains("a key name is 1 to 80 characters"),
        "{refusal}"
    );

    // Make a key: it is shown once, in a labelled read-only field that takes the focus.
    let mut page = SettingsPage(&mut browser);
    page.make_key("CI script").await;
    page.wait_for_notice("The key “CI script” is made. Copy it now")
        .await;
    let key = page.shown_key("CI script").await;
    assert!(key.starts_with("al_key_"), "{key}");
    let field = labelled("API key “CI script”");
    // Copying says what happened and keeps the secret on the page.
    assert_secret_shown_once(&mut browser, &field, "Copy key").await;
    assert_accessible(&mut browser, "the settings page showing a new key").await;

    // It works, over HTTP and for a subscription.
    assert_eq!(who(&app, &key).await, Ok("ana".into()));
    let mut subscribed = GqlSocket::connect(&app.base, Some(&key)).await;
    subscribed
        .subscribe("q", QUEUE, json!({"slug": "games"}))
        .await;

    // After a reload the key is nowhere in the page; its prefix is listed.
    browser.reload().await;
    let prefix: String = key.chars().take(14).collect();
    let listed = format!("document.querySelector('li[data-key={prefix:?}]')");
    browser
        .wait_for(&listed, "the key listed by its prefix")
        .await;
    let mut page = SettingsPage(&mut browser);
    page.wait_until_loaded().await;
    assert!(!page.shows(&key).await, "the key is still in the page");
    let item = browser.text(&listed).await;
    assert!(item.contains("CI script"), "{item}");
    assert!(item.contains(&prefix), "{item}");
    assert!(item.contains("never: it works until revoked"), "{item}");

    // Sessions: this device marked, the others with where they came from.
    let this_device = browser
        .text("document.querySelector('li[data-current=true]')")
        .await;
    assert!(this_device.contains("this device"), "{this_device}");
    assert!(
        this_device.contains("Chrome on Linux · 127.0.0.1"),
        "{this_device}"
    );
    let other = browser
        .text(&SettingsPage::session_saying("Other laptop/1.0"))
        .await;
    // A User-Agent naming no browser askloop knows; what it said is still shown.
    assert!(other.contains("Unknown browser · 127.0.0.1"), "{other}");

    // Revoke, asked twice: the confirmation takes the focus.
    browser.click(&button("Revoke key CI script")).await;
    let yes = button("Yes, revoke key CI script");
    browser
        .wait_for(
            &format!("document.activeElement === {yes}"),
            "the confirmation, focused",
        )
        .await;
    for (width, height, mobile) in [(1280, 900, false), (390, 844, true)] {
        browser.viewport(width, height, mobile).await;
        assert_no_sideways_scroll(&mut browser, &format!("the settings page at {width} px")).await;
        assert_accessible(&mut browser, &format!("the settings page at {width} px")).await;
    }
    browser.viewport(1280, 900, false).await;
    // "Keep it" changes nothing and gives the focus back.
    browser.click(&button("Keep it key CI script")).await;
    browser
        .wait_for(
            &format!(
                "document.activeElement === {}",
                button("Revoke key CI script")
            ),
            "the focus back on Revoke",
        )
        .await;
    assert_eq!(who(&app, &key).await, Ok("ana".into()));
    browser.click(&button("Revoke key CI script")).await;
    browser.click(&yes).await;
    SettingsPage(&mut browser)
        .wait_for_notice("The key “CI script” is revoked")
        .await;
    // Its next request is refused, and its subscription ends at once.
    assert_eq!(who(&app, &key).await, Err("UNAUTHENTICATED".into()));
    let status = app
        .client
        .get(app.url("/api/v1/niches/games/questions"))
        .bearer_auth(&key)
        .send()
        .await
        .expect("sent")
        .status();
    assert_eq!(status, 401);
    match subscribed.receive(Duration::from_secs(5)).await {
        Received::Closed(code) => assert_eq!(code, Some(4403)),
        other => panic!("expected a 4403 close, got {other:?}"),
    }
    browser
        .wait_for(
            "document.querySelector('main .empty')",
            "no key listed any more",
        )
        .await;

    // End the other laptop's session (asked first); then every other one.
    browser
        .click(&format!(
            "{}.querySelector('button')",
            SettingsPage::session_saying("Other laptop/1.0")
        ))
        .await;
    browser.click(&button("Yes, end it")).await;
    SettingsPage(&mut browser)
        .wait_for_notice("That session is ended")
        .await;
    assert_eq!(who(&app, &laptop).await, Err("UNAUTHENTICATED".into()));
    assert_eq!(who(&app, &phone).await, Ok("ana".into()));
    browser.click(&button("Sign out everywhere else")).await;
    browser.click(&button("Yes, sign out the others")).await;
    // The phone's and the fixture's.
    SettingsPage(&mut browser)
        .wait_for_notice("Signed out of 2 other sessions.")
        .await;
    assert_eq!(who(&app, &phone).await, Err("UNAUTHENTICATED".into()));
    assert_eq!(who(&app, &ana.token).await, Err("UNAUTHENTICATED".into()));
    browser
        .wait_for(
            "document.querySelectorAll('li[data-session]').length === 1",
            "only this device listed",
        )
        .await;
    // This device is still signed in: the page reads again after a reload.
    browser.reload().await;
    SettingsPage(&mut browser).wait_until_loaded().await;

    // The keyboard reaches every control, its focus drawn.
    let focused = tab_through(&mut browser, 30).await;
    let names: Vec<&str> = focused.iter().map(|(name, _)| name.as_str()).collect();
    for wanted in [
        "a: Settings",
        "input:",
        "button: Make key",
        "button: Sign out everywhere else",
    ] {
        assert!(
            names.iter().any(|name| name.starts_with(wanted)),
            "{wanted} is not reached: {names:#?}"
        );
    }
    for (name, drawn) in &focused {
        assert!(drawn, "{name} has no visible focus");
    }
}
