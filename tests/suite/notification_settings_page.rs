//! The settings page's notification sections in a real Chromium, against a real mail server
//! (aiosmtpd) and a real webhook receiver: an operator sees their address unverified, has a
//! verification link mailed, follows it and sees the address verified; sets a time zone and
//! quiet hours (a bad time zone is refused next to its field, nothing typed lost) and what one
//! niche mails, which persist across a reload and read back over GraphQL; registers a webhook (a
//! bad URL refused next to its field), sees its secret once, sends it a test that the receiver
//! verifies with that secret and sees the delivery listed, then removes it after a confirmation.
//! The page passes axe-core at desktop and phone widths, does not scroll sideways, and the
//! keyboard reaches every new control with its focus drawn.

use std::time::Duration;

use askloop_tests::browser::{Browser, button, button_in, labelled, labelled_in, role};
use askloop_tests::fixtures::open_niche;
use askloop_tests::pages::{assert_secret_shown_once, button_starting};
use askloop_tests::people::{member, operator, person};
use askloop_tests::receiver::{Receiver, reserve_port};
use askloop_tests::smtp::SmtpServer;
use askloop_tests::{Backend, TestApp};
use entity::niche_members::{MemberRole, MemberStatus};
use serde_json::json;
use std::net::SocketAddr;

use crate::reaching::{link, mail_through};
use crate::review_pages::{assert_accessible, assert_no_sideways_scroll, tab_through};
use askloop_tests::pages::signed_in;

const PATH: &str = "/dashboard/settings";
const WAIT: Duration = Duration::from_secs(20);
const SETTINGS: &str = "{ myMailSettings { emailVerified timeZone quietHours { startMinute endMinute } quietIncludesHigh } \
     myNotificationPreferences { nicheSlug enabled immediate digest } myOperatorWebhooks { id url } }";

/// The "games" niche's preferences form.
const GAMES: &str = "document.querySelector('li[data-niche=games]')";
/// The one webhook listed.
const HOOK: &str = "document.querySelector('li[data-hook]')";

/// `/dashboard/settings`'s notification sections, as their owner uses them.
struct NotificationSettings<'a>(&'a mut Browser);

askloop_tests::page_object!(NotificationSettings);

impl NotificationSettings<'_> {
    /// Wait until every notification section has been read.
    async fn wait_until_loaded(&mut self) {
        self.0
            .wait_for(
                "document.querySelector('[data-fact=verified]') && document.querySelector('#time-zone') \
                 && document.querySelector('li[data-niche=games]') && document.querySelector('#hook-url')",
                "the notification sections",
            )
            .await;
    }

    /// The address's status as the page says it.
    async fn verified_badge(&mut self) -> String {
        self.0
            .text("document.querySelector('[data-fact=verified]')")
            .await
    }

    /// The refusal shown as `id` (next to its control), once it shows.
    async fn refusal(&mut self, id: &str) -> String {
        let alert = format!("document.querySelector('#{id}[role=alert]')");
        self.0.wait_for(&alert, id).await;
        self.0.text(&alert).await
    }

    /// Whether the control `locator` names the refusal `id` as what describes it.
    async fn described_by(&mut self, locator: &str, id: &str) -> bool {
        self.0
            .eval(&format!(
                "(({locator}).getAttribute('aria-describedby') || '').split(' ').includes({id:?})"
            ))
            .await
            .as_bool()
            .unwrap_or(false)
    }
}

/// One operator's session on the notification settings, as named steps: each acts on what the
/// one before saved (the verified address, the time zone, the webhook and its secret), and a
/// browser start is the costly part, so the steps share one app, mail server and browser.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_verifies_their_address_chooses_what_is_mailed_and_tests_a_webhook() {
    let smtp = SmtpServer::start().await;
    let smtp_url = smtp.url();
    let app = TestApp::spawn_with(Backend::Sqlite, |c| mail_through(c, &smtp_url))
        .await
        .expect("an app");
    open_niche(&app.db, "games").await;
    // The webhook receiver listens on this machine, where askloop lets only an admin point a
    // webhook: ana operates games and is an admin too. The niches the page offers are still
    // only hers.
    let ana = person(&app.db, "ana", true).await;
    member(
        &app.db,
        "games",
        &ana,
        MemberRole::Operator,
        MemberStatus::Active,
    )
    .await;
    open_niche(&app.db, "roofing").await;

    let mut browser = signed_in(&app, "ana", PATH).await;
    let browser = &mut browser;

    the_address_shows_as_not_verified(browser).await;
    the_verification_link_is_mailed_and_verifies_the_address(&app, browser, &smtp).await;
    an_unknown_time_zone_is_refused_next_to_its_field(browser).await;
    quiet_hours_without_an_end_are_refused(browser).await;
    a_time_zone_and_quiet_hours_across_midnight_are_saved(browser).await;
    a_niches_urgencies_and_digest_are_chosen(browser).await;
    the_choices_persist_after_a_reload_and_over_graphql(&app, browser, &ana.token).await;
    the_webhook_niches_are_hers(browser).await;
    a_url_askloop_will_not_call_is_refused_and_stays_typed(browser).await;
    let (addr, hook_url, secret) = registering_a_webhook_shows_its_secret_once(browser).await;
    a_test_delivery_verifies_and_is_listed(browser, addr, &secret).await;
    a_reload_hides_the_secret_and_lists_the_webhook(browser, &hook_url, &secret).await;
    removing_asks_twice_and_stops_the_webhook(&app, browser, &ana.token).await;
    the_keyboard_reaches_every_new_control(browser).await;
}

/// The page shows her address, not verified yet.
async fn the_address_shows_as_not_verified(browser: &mut Browser) {
    let mut page = NotificationSettings(browser);
    page.wait_until_loaded().await;
    browser
        .wait_for(&role("heading", "Email"), "the Email section")
        .await;
    let mut page = NotificationSettings(browser);
    assert_eq!(page.verified_badge().await, "not verified");
    let address = browser
        .text("document.querySelector('[data-fact=email]')")
        .await;
    assert_eq!(address, "ana@example.com");
}

/// The verification link: mailed, followed, and the page says the address is verified.
async fn the_verification_link_is_mailed_and_verifies_the_address(
    app: &TestApp,
    browser: &mut Browser,
    smtp: &SmtpServer,
) {
    browser.click(&button("Send verification link")).await;
    NotificationSettings(browser)
        .wait_for_notice("A verification link is on its way.")
        .await;
    let mails = smtp.wait_for(1, WAIT).await;
    assert_eq!(mails[0].header("to").as_deref(), Some("ana@example.com"));
    let verify = link(&mails[0], "Verify this address");
    browser.goto(&verify).await;
    browser
        .wait_for(
            "document.body && document.body.innerText.includes('Address verified')",
            "the page that says the address is verified",
        )
        .await;
    browser.goto(&app.url(PATH)).await;
    let mut page = NotificationSettings(browser);
    page.wait_until_loaded().await;
    assert_eq!(page.verified_badge().await, "verified");
    assert!(
        browser
            .eval(&format!("!{}", button("Send verification link")))
            .await
            .as_bool()
            .unwrap_or(false),
        "no verification link is offered for a verified address"
    );
}

/// A time zone askloop does not know is refused next to its field; nothing typed is lost.
async fn an_unknown_time_zone_is_refused_next_to_its_field(browser: &mut Browser) {
    let mut page = NotificationSettings(browser);
    page.0
        .fill(&labelled("Time zone"), "Mars/Olympus_Mons")
        .await;
    page.0.fill(&labelled("Quiet from"), "22:00").await;
    page.0.fill(&labelled("Quiet until"), "07:30").await;
    page.0.click(&button("Save quiet hours")).await;
    let refused = page.refusal("time-zone-error").await;
    assert!(refused.contains("is not an IANA time zone"), "{refused}");
    assert!(
        page.described_by(&labelled("Time zone"), "time-zone-error")
            .await
    );
    assert_eq!(
        page.value(&labelled("Time zone")).await,
        json!("Mars/Olympus_Mons")
    );
    assert_eq!(page.value(&labelled("Quiet from")).await, json!("22:00"));
}

/// Quiet hours with a start and no end are refused before anything is sent.
async fn quiet_hours_without_an_end_are_refused(browser: &mut Browser) {
    let mut page = NotificationSettings(browser);
    page.0.fill(&labelled("Quiet until"), "").await;
    page.0.click(&button("Save quiet hours")).await;
    let refused = page.refusal("quiet-error").await;
    assert!(refused.contains("both a start and an end"), "{refused}");
    assert!(
        page.described_by(&labelled("Quiet until"), "quiet-error")
            .await
    );
}

/// A good time zone and quiet hours that cross midnight, holding back high urgency too.
async fn a_time_zone_and_quiet_hours_across_midnight_are_saved(browser: &mut Browser) {
    let mut page = NotificationSettings(browser);
    page.0.fill(&labelled("Time zone"), "Europe/Paris").await;
    page.0.fill(&labelled("Quiet until"), "07:30").await;
    page.0.click(&labelled("Hold back high urgency too")).await;
    page.0.click(&button("Save quiet hours")).await;
    page.wait_for_notice("Saved: quiet hours from 22:00 to 07:30, in Europe/Paris.")
        .await;
    browser
        .wait_for(
            "document.querySelector('[data-fact=time-zone]').innerText === 'Europe/Paris'",
            "the stored time zone shown",
        )
        .await;
}

/// Games: high and normal mailed at once, a daily digest for the rest.
async fn a_niches_urgencies_and_digest_are_chosen(browser: &mut Browser) {
    browser.click(&labelled_in(GAMES, "Normal")).await;
    browser
        .click(&labelled_in(GAMES, "Daily digest, at 08:00 your time"))
        .await;
    browser
        .click(&button_in(GAMES, "Save notifications for Niche games"))
        .await;
    NotificationSettings(browser)
        .wait_for_notice("Saved what askloop mails you about Niche games.")
        .await;
}

/// All of it persists: after a reload, and over GraphQL.
async fn the_choices_persist_after_a_reload_and_over_graphql(
    app: &TestApp,
    browser: &mut Browser,
    ana: &str,
) {
    browser.reload().await;
    let mut page = NotificationSettings(browser);
    page.wait_until_loaded().await;
    assert_eq!(
        page.value(&labelled("Time zone")).await,
        json!("Europe/Paris")
    );
    assert_eq!(page.value(&labelled("Quiet from")).await, json!("22:00"));
    assert_eq!(page.value(&labelled("Quiet until")).await, json!("07:30"));
    assert!(page.ticked(&labelled("Hold back high urgency too")).await);
    assert!(page.ticked(&labelled_in(GAMES, "High")).await);
    assert!(page.ticked(&labelled_in(GAMES, "Normal")).await);
    assert!(!page.ticked(&labelled_in(GAMES, "Low")).await);
    assert!(
        page.ticked(&labelled_in(GAMES, "Daily digest, at 08:00 your time"))
            .await
    );
    let stored = app.graphql(Some(ana), SETTINGS, json!({})).await;
    assert_eq!(
        stored["data"]["myMailSettings"],
        json!({"emailVerified": true, "timeZone": "Europe/Paris",
               "quietHours": {"startMinute": 1320, "endMinute": 450}, "quietIncludesHigh": true}),
        "{stored}"
    );
    assert_eq!(
        stored["data"]["myNotificationPreferences"],
        json!([{"nicheSlug": "games", "enabled": true, "immediate": ["HIGH", "NORMAL"], "digest": "DAILY"}]),
        "{stored}"
    );
}

/// The niches offered for a webhook are the ones she belongs to.
async fn the_webhook_niches_are_hers(browser: &mut Browser) {
    assert_eq!(
        browser
            .eval(&format!(
                "[...{}.options].map(o => o.value)",
                labelled("Niche")
            ))
            .await,
        json!(["games"])
    );
}

/// A URL askloop will not call is refused next to its field, and stays typed.
async fn a_url_askloop_will_not_call_is_refused_and_stays_typed(browser: &mut Browser) {
    let mut page = NotificationSettings(browser);
    page.0
        .fill(&labelled("Webhook URL"), "ftp://example.com/hook")
        .await;
    page.0.click(&button("Register webhook")).await;
    let refused = page.refusal("hook-url-error").await;
    assert!(!refused.is_empty());
    assert!(
        page.described_by(&labelled("Webhook URL"), "hook-url-error")
            .await
    );
    assert_eq!(
        page.value(&labelled("Webhook URL")).await,
        json!("ftp://example.com/hook")
    );
}

/// Register one: its secret is shown once, read-only and focused.
async fn registering_a_webhook_shows_its_secret_once(
    browser: &mut Browser,
) -> (SocketAddr, String, String) {
    let mut page = NotificationSettings(browser);
    let addr = reserve_port();
    let hook_url = Receiver::url_for(addr);
    page.0.fill(&labelled("Webhook URL"), &hook_url).await;
    page.0.click(&button("Register webhook")).await;
    page.wait_for_notice("The webhook for games is registered.")
        .await;
    let field = labelled("Secret of the new webhook for games");
    browser
        .wait_for(&format!("{field}.value"), "the secret shown once")
        .await;
    let secret = assert_secret_shown_once(browser, &field, "Copy secret").await;
    assert!(secret.starts_with("whsec_"), "{secret}");
    assert_accessible(browser, "the settings page showing a webhook's secret").await;
    (addr, hook_url, secret)
}

/// A test: the receiver verifies it with the secret the page showed; the delivery is listed.
async fn a_test_delivery_verifies_and_is_listed(
    browser: &mut Browser,
    addr: SocketAddr,
    secret: &str,
) {
    let receiver = Receiver::start_verifying(addr, secret, vec![]).await;
    browser.click(&button_starting(HOOK, "Send a test")).await;
    NotificationSettings(browser)
        .wait_for_notice("A test event is on its way")
        .await;
    receiver
        .wait_until(WAIT, "the test event", |r| !r.is_empty())
        .await;
    let received = receiver.received();
    assert!(received[0].verified, "{:?}", received[0]);
    assert_eq!(received[0].envelope["test"], true);
    let refresh = button_starting(HOOK, "Refresh deliveries");
    browser
        .wait_for(
            &format!(
                "(() => {{ const row = document.querySelector('li[data-hook] tr[data-status=delivered]'); \
                 if (!row) ({refresh}).click(); return !!row; }})()"
            ),
            "the test delivery listed as delivered",
        )
        .await;
    let row = browser
        .text("document.querySelector('li[data-hook] tr[data-status=delivered]')")
        .await;
    assert!(row.contains("HTTP 200"), "{row}");
}

/// After a reload the secret is nowhere in the page; the webhook is listed.
async fn a_reload_hides_the_secret_and_lists_the_webhook(
    browser: &mut Browser,
    hook_url: &str,
    secret: &str,
) {
    browser.reload().await;
    let mut page = NotificationSettings(browser);
    page.wait_until_loaded().await;
    browser.wait_for(HOOK, "the webhook listed").await;
    let mut page = NotificationSettings(browser);
    assert!(!page.shows(secret).await, "the secret is still in the page");
    let item = browser.text(HOOK).await;
    assert!(item.contains(hook_url), "{item}");
    assert!(item.contains("Webhook for Niche games"), "{item}");
}

/// Remove, asked twice: the confirmation takes the focus.
async fn removing_asks_twice_and_stops_the_webhook(
    app: &TestApp,
    browser: &mut Browser,
    ana: &str,
) {
    browser.click(&button_starting(HOOK, "Remove")).await;
    let yes = button_starting(HOOK, "Yes, remove");
    browser
        .wait_for(
            &format!("document.activeElement === {yes}"),
            "the confirmation, focused",
        )
        .await;
    for (width, height, mobile) in [(1280, 900, false), (390, 844, true)] {
        browser.viewport(width, height, mobile).await;
        assert_no_sideways_scroll(browser, &format!("the settings page at {width} px")).await;
        assert_accessible(browser, &format!("the settings page at {width} px")).await;
    }
    browser.viewport(1280, 900, false).await;
    browser.click(&yes).await;
    NotificationSettings(browser)
        .wait_for_notice("is removed: nothing more is sent to it.")
        .await;
    browser
        .wait_for(
            "!document.querySelector('li[data-hook]')",
            "no webhook listed",
        )
        .await;
    let stored = app.graphql(Some(ana), SETTINGS, json!({})).await;
    assert_eq!(stored["data"]["myOperatorWebhooks"], json!([]), "{stored}");
}

/// The keyboard reaches every control of the new sections, its focus drawn.
async fn the_keyboard_reaches_every_new_control(browser: &mut Browser) {
    browser.reload().await;
    NotificationSettings(browser).wait_until_loaded().await;
    let focused = tab_through(browser, 70).await;
    let names: Vec<&str> = focused.iter().map(|(name, _)| name.as_str()).collect();
    for wanted in [
        "button: Save address",
        "input: Europe/Paris",
        "button: Save quiet hours",
        "button: Clear quiet hours",
        "button: Save notifications for Niche games",
        "select:",
        "button: Register webhook",
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_mail_the_page_says_so_and_a_taken_address_is_refused_next_to_its_field() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    person(&app.db, "bob", false).await;

    let mut browser = signed_in(&app, "ana", PATH).await;
    NotificationSettings(&mut browser).wait_until_loaded().await;
    // No mail server: the page says nothing is mailed and offers no link to send.
    let off = browser.text("document.querySelector('#mail-off')").await;
    assert!(off.contains("This askloop sends no mail"), "{off}");
    assert!(
        browser
            .eval(&format!("!{}", button("Send verification link")))
            .await
            .as_bool()
            .unwrap_or(false),
        "a verification link is offered though no mail is sent"
    );

    // Someone else's address is refused next to the field, and stays typed.
    let mut page = NotificationSettings(&mut browser);
    page.0
        .fill(&labelled("Email address"), "bob@example.com")
        .await;
    page.0.click(&button("Save address")).await;
    let refused = page.refusal("email-address-error").await;
    assert!(!refused.is_empty());
    assert!(
        page.described_by(&labelled("Email address"), "email-address-error")
            .await
    );
    assert_eq!(
        page.value(&labelled("Email address")).await,
        json!("bob@example.com")
    );

    // A free one is taken, unverified.
    page.0
        .fill(&labelled("Email address"), "ana.new@example.com")
        .await;
    page.0.click(&button("Save address")).await;
    page.wait_for_notice("Your address is now ana.new@example.com.")
        .await;
    browser
        .wait_for(
            "document.querySelector('[data-fact=email]').innerText === 'ana.new@example.com'",
            "the new address shown",
        )
        .await;
    assert_eq!(
        NotificationSettings(&mut browser).verified_badge().await,
        "not verified"
    );
    let stored = app
        .graphql(
            Some(&ana.token),
            "{ myMailSettings { email emailVerified mailEnabled } }",
            json!({}),
        )
        .await;
    assert_eq!(
        stored["data"]["myMailSettings"],
        json!({"email": "ana.new@example.com", "emailVerified": false, "mailEnabled": false}),
        "{stored}"
    );
    assert_accessible(&mut browser, "the settings page without mail").await;
}
