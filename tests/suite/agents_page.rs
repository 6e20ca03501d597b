//! The agents page (`/admin/agents`) in a real Chromium: an admin registers an agent and sees its
//! signing secret once — a secret that really signs, gone after a reload — rotates it (a new
//! secret, once; the old one still accepted for the window chosen), disables and enables it, and
//! sees its endpoint's deliveries; a member who is not an admin is refused and shown nothing. The
//! page passes axe-core at desktop and phone widths, does not scroll sideways, and shows where
//! the keyboard's focus is.

use askloop_tests::answers::early_access;
use askloop_tests::browser::{Browser, button, button_in, labelled, labelled_in, link_in};
use askloop_tests::fixtures::open_niche;
use askloop_tests::pages::assert_secret_shown_once;
use askloop_tests::people::{operator, person};
use askloop_tests::receiver::{Receiver, reserve_port};
use askloop_tests::{Backend, TestApp};
use entity::agents::WebhookScheme;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};
use std::net::SocketAddr;

use crate::agents::{WAIT, ask_as, quick, register};
use crate::review_pages::{assert_accessible, assert_no_sideways_scroll, tab_through};
use askloop_tests::pages::signed_in;

const PATH: &str = "/admin/agents";

/// `/admin/agents`, as an admin uses it.
struct AgentsPage<'a>(&'a mut Browser);

askloop_tests::page_object!(AgentsPage);

impl AgentsPage<'_> {
    /// The registration form.
    const FORM: &'static str = "document.querySelector('form.agent-form')";

    /// Agent `slug`'s card.
    fn card(slug: &str) -> String {
        format!("document.querySelector('article.agent[data-agent={slug:?}]')")
    }

    /// Wait until the registry has been read (its registration form is there).
    async fn wait_until_loaded(&mut self) {
        self.0
            .wait_for(Self::FORM, "the agents page's registration form")
            .await;
    }

    /// Fill the registration form (a receiver's URL for the endpoint) and send it.
    async fn register(&mut self, slug: &str, name: &str, niche_label: &str, url: &str) {
        let form = Self::FORM;
        self.0.fill(&labelled_in(form, "Slug"), slug).await;
        self.0.fill(&labelled_in(form, "Name"), name).await;
        self.0.click(&labelled_in(form, niche_label)).await;
        self.0
            .fill(&labelled_in(form, "Endpoint URL (optional)"), url)
            .await;
        self.0.click(&button_in(form, "Register agent")).await;
    }

    /// Open the `<details>` of agent `slug`'s card whose summary says `summary`.
    async fn open(&mut self, slug: &str, summary: &str) {
        let summary = serde_json::to_string(summary).unwrap_or_default();
        let found = format!(
            "[...{}.querySelectorAll('summary')].find(s => \
             s.textContent.replace(/\\s+/g, ' ').trim() === {summary})",
            Self::card(slug)
        );
        self.0.click(&found).await;
        self.0
            .wait_for(&format!("{found}.parentElement.open"), "the opened form")
            .await;
    }

    /// Press the button named `name` on agent `slug`'s card.
    async fn press(&mut self, slug: &str, name: &str) {
        self.0.click(&button_in(&Self::card(slug), name)).await;
    }

    /// The secret shown once for agent `slug`, read from its labelled field.
    async fn shown_secret(&mut self, slug: &str) -> String {
        self.0
            .shown_once(&format!("Signing secret of {slug}"))
            .await
    }

    /// The text of agent `slug`'s fact `fact` (`niches`, `url`, `scheme`, `events`,
    /// `previous-secret`).
    async fn fact(&mut self, slug: &str, fact: &str) -> String {
        self.0
            .text(&format!(
                "{}.querySelector('[data-fact={fact:?}]')",
                Self::card(slug)
            ))
            .await
    }
}

/// The status of a signed intake request as `slug` with `secret`, asking `external_id` in games.
async fn intake_status(app: &TestApp, slug: &str, secret: &str, external_id: &str) -> u16 {
    ask_as(app, slug, secret, "games", external_id).await.0
}

/// One admin's session on the agents page, as named steps: each step acts on what the one
/// before left (the agent, its secret, its delivery), and a browser start is the costly part,
/// so the steps share one app and one browser rather than each replaying the ones before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_registers_an_agent_sees_its_secret_once_rotates_disables_and_enables_it() {
    let app = TestApp::spawn_with(Backend::Sqlite, quick)
        .await
        .expect("an app");
    open_niche(&app.db, "games").await;
    open_niche(&app.db, "roofing").await;
    let ana = operator(&app.db, "games", "ana").await;
    person(&app.db, "root", true).await;
    let endpoint = reserve_port();
    let mut browser = signed_in(&app, "root", "/admin").await;
    let browser = &mut browser;

    the_agents_page_is_reached_from_the_admin_page(browser).await;
    let first = registering_shows_the_secret_once(browser, endpoint).await;
    let question = the_secret_signs_in_the_agents_niche_only(&app, &first).await;
    a_reload_hides_the_secret_and_lists_the_agent(browser, &first, endpoint).await;
    a_refused_registration_keeps_what_was_typed(browser).await;
    the_card_lists_its_endpoints_deliveries(&app, browser, &ana.token, &first, question, endpoint)
        .await;
    let second = rotating_shows_a_new_secret_once_and_keeps_the_old_one_for_its_window(
        &app, browser, &first,
    )
    .await;
    disabling_hides_the_secret_and_refuses_the_agent(&app, browser, &second).await;
    enabling_accepts_the_agent_again(&app, browser, &second).await;
    niches_and_endpoint_are_edited_in_place(&app, browser, &second).await;
    the_page_passes_axe_at_both_widths_and_by_keyboard(browser).await;
}

/// From the admin page to the agents page, by its link.
async fn the_agents_page_is_reached_from_the_admin_page(browser: &mut Browser) {
    browser
        .click(&link_in("document.querySelector('main')", "Agents"))
        .await;
    browser
        .wait_for(&format!("location.pathname === {PATH:?}"), PATH)
        .await;
    let mut page = AgentsPage(browser);
    page.wait_until_loaded().await;
    browser
        .wait_for(
            "document.querySelector('main .empty')",
            "no agent registered yet",
        )
        .await;
}

/// Register: the secret is shown once, in a labelled read-only field that takes the focus.
async fn registering_shows_the_secret_once(browser: &mut Browser, endpoint: SocketAddr) -> String {
    let mut page = AgentsPage(browser);
    page.register(
        "research-bot",
        "Research bot",
        "Niche games (games)",
        &Receiver::url_for(endpoint),
    )
    .await;
    page.wait_for_notice("research-bot is registered. Copy its signing secret now")
        .await;
    let first = page.shown_secret("research-bot").await;
    assert!(first.starts_with("whsec_"), "{first}");
    assert!(AgentsPage(browser).shows(&first).await);
    let field = labelled("Signing secret of research-bot");
    // Copying says what happened and keeps the secret on the page.
    assert_secret_shown_once(browser, &field, "Copy secret").await;
    assert!(AgentsPage(browser).shows(&first).await);
    assert_accessible(browser, "the agents page showing a new secret").await;
    first
}

/// It really signs: an intake as the agent is accepted, in its niche only.
async fn the_secret_signs_in_the_agents_niche_only(app: &TestApp, first: &str) -> i64 {
    let (status, asked) = ask_as(app, "research-bot", first, "games", "q-1").await;
    assert_eq!(status, 201, "{asked}");
    let question = asked["question"]["id"].as_i64().expect("a question id");
    let (status, body) = ask_as(app, "research-bot", first, "roofing", "q-2").await;
    assert_eq!(status, 403, "{body}");
    question
}

/// After a reload the secret is nowhere in the page; the agent is listed as registered.
async fn a_reload_hides_the_secret_and_lists_the_agent(
    browser: &mut Browser,
    first: &str,
    endpoint: SocketAddr,
) {
    browser.eval("window.__reloaded = false; true").await;
    browser.reload().await;
    browser
        .wait_for(
            &format!(
                "window.__reloaded === undefined && {}",
                AgentsPage::card("research-bot")
            ),
            "research-bot's card on the reloaded page",
        )
        .await;
    let mut page = AgentsPage(browser);
    assert!(!page.shows(first).await, "the secret is still in the page");
    assert_eq!(page.fact("research-bot", "niches").await, "games");
    assert_eq!(
        page.fact("research-bot", "url").await,
        Receiver::url_for(endpoint)
    );
    assert_eq!(
        page.fact("research-bot", "scheme").await,
        "chovy (X-Chovy-Signature)"
    );
    assert_eq!(page.fact("research-bot", "events").await, "all");
    assert!(
        page.fact("research-bot", "previous-secret")
            .await
            .starts_with("none"),
    );
}

/// A refused registration is shown as an alert, and what was typed stays.
async fn a_refused_registration_keeps_what_was_typed(browser: &mut Browser) {
    let mut page = AgentsPage(browser);
    page.register(
        "research-bot",
        "Again",
        "Niche roofing (roofing)",
        "https://bot.example/hooks",
    )
    .await;
    let refusal = page.page_error().await;
    assert!(
        refusal
            .to_lowercase()
            .contains("an agent with slug 'research-bot' already exists"),
        "{refusal}"
    );
    assert_eq!(
        browser
            .eval(&format!("{}.value", labelled_in(AgentsPage::FORM, "Name")))
            .await,
        json!("Again")
    );
}

/// Its endpoint's deliveries: an operator answers the agent's question, the agent's receiver takes
/// the event, and the card lists it.
async fn the_card_lists_its_endpoints_deliveries(
    app: &TestApp,
    browser: &mut Browser,
    ana: &str,
    first: &str,
    question: i64,
    endpoint: SocketAddr,
) {
    let receiver = Receiver::start_verifying(endpoint, first, Vec::new()).await;
    let answered = app
        .answer(ana, early_access(question, Some("The 1.0 date.")))
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    receiver
        .wait_until(WAIT, "the answer at the agent's endpoint", |r| {
            !r.is_empty()
        })
        .await;
    assert!(receiver.received()[0].verified);
    let delivered = format!(
        "{}.querySelector('tr.delivery-delivered')",
        AgentsPage::card("research-bot")
    );
    // The worker marks the delivery delivered just after the endpoint has it: once it has, the
    // registry read again lists it so.
    askloop_tests::wait::until("the delivery recorded as delivered", || async {
        entity::deliveries::Entity::find()
            .filter(
                entity::deliveries::Column::Status
                    .eq(entity::deliveries::DeliveryStatus::Delivered),
            )
            .count(&app.db)
            .await
            .expect("count")
            > 0
    })
    .await;
    browser.click(&button("Read the registry again")).await;
    browser
        .wait_for(&delivered, "the delivery listed as delivered")
        .await;
    let row = browser.text(&delivered).await;
    assert!(row.contains("expert_answer.created"), "{row}");
    assert!(row.contains("delivered"), "{row}");
}

/// Rotate with an hour's window: a new secret, once; the old one is still accepted.
async fn rotating_shows_a_new_secret_once_and_keeps_the_old_one_for_its_window(
    app: &TestApp,
    browser: &mut Browser,
    first: &str,
) -> String {
    let mut page = AgentsPage(browser);
    page.open("research-bot", "Rotate the secret of research-bot")
        .await;
    page.choose(
        &labelled_in(
            &AgentsPage::card("research-bot"),
            "Keep accepting the previous secret for",
        ),
        "3600",
    )
    .await;
    page.press("research-bot", "Rotate secret of research-bot")
        .await;
    page.wait_for_notice(
        "research-bot has a new signing secret and the previous one is still accepted until",
    )
    .await;
    let second = page.shown_secret("research-bot").await;
    assert!(second.starts_with("whsec_"), "{second}");
    assert_ne!(second, first);
    assert!(AgentsPage(browser).shows(&second).await);
    browser
        .wait_for(&AgentsPage::card("research-bot"), "research-bot's card")
        .await;
    let mut page = AgentsPage(browser);
    assert!(!page.shows(first).await, "the first secret is shown again");
    // The card shows the rotation once the registry is read again, which on a loaded machine
    // may come after the notice: wait for that fact, not for the first render.
    browser
        .wait_for(
            &format!(
                "(({})?.querySelector('[data-fact=\"previous-secret\"]')?.textContent ?? '').trim().startsWith('still accepted until')",
                AgentsPage::card("research-bot")
            ),
            "the previous secret shown as still accepted",
        )
        .await;
    assert_eq!(
        intake_status(app, "research-bot", first, "q-3").await,
        201,
        "the previous secret within its window"
    );
    assert_eq!(
        intake_status(app, "research-bot", &second, "q-4").await,
        201
    );
    second
}

/// Disable: the next action hides the secret, and the agent's signed requests get 403.
async fn disabling_hides_the_secret_and_refuses_the_agent(
    app: &TestApp,
    browser: &mut Browser,
    second: &str,
) {
    let mut page = AgentsPage(browser);
    // Disabling asks first: the first press changes nothing.
    page.press("research-bot", "Disable… research-bot").await;
    page.wait_for(
        "document.querySelector('[data-agent=research-bot] [data-action=confirm-disable]')",
        "the confirmation",
    )
    .await;
    assert_eq!(
        page.eval("document.querySelector('[data-agent=research-bot] h3 .badge').textContent")
            .await,
        json!("active"),
        "asked, not yet disabled"
    );
    page.press("research-bot", "Disable it research-bot").await;
    page.wait_for_notice("research-bot is disabled").await;
    assert!(
        !page.shows(second).await,
        "the secret outlives the next action"
    );
    assert_eq!(
        browser
            .eval("!!document.querySelector('section.secret-once')")
            .await,
        json!(false)
    );
    let (status, body) = ask_as(app, "research-bot", second, "games", "q-5").await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["code"], "FORBIDDEN");
    browser
        .wait_for(
            &format!(
                "{}.querySelector('.badge.status-disabled')",
                AgentsPage::card("research-bot")
            ),
            "research-bot shown disabled",
        )
        .await;
}

/// Enable: accepted again.
async fn enabling_accepts_the_agent_again(app: &TestApp, browser: &mut Browser, second: &str) {
    let mut page = AgentsPage(browser);
    page.press("research-bot", "Enable research-bot").await;
    page.wait_for_notice("research-bot is active again").await;
    assert_eq!(intake_status(app, "research-bot", second, "q-5").await, 201);
}

/// Its niches and endpoint are edited in place.
async fn niches_and_endpoint_are_edited_in_place(
    app: &TestApp,
    browser: &mut Browser,
    second: &str,
) {
    let card = AgentsPage::card("research-bot");
    let mut page = AgentsPage(browser);
    page.open("research-bot", "Edit niches of research-bot")
        .await;
    browser
        .click(&labelled_in(&card, "Niche roofing (roofing)"))
        .await;
    let mut page = AgentsPage(browser);
    page.press("research-bot", "Save niches of research-bot")
        .await;
    page.wait_for_notice("The niches of research-bot are saved.")
        .await;
    browser
        .wait_for(
            &format!("{card}.querySelector('[data-fact=niches]').textContent === 'games, roofing'"),
            "both niches listed",
        )
        .await;
    assert_eq!(
        ask_as(app, "research-bot", second, "roofing", "q-6")
            .await
            .0,
        201
    );
    let mut page = AgentsPage(browser);
    page.open("research-bot", "Edit endpoint of research-bot")
        .await;
    page.choose(&labelled_in(&card, "Signature scheme"), "standard")
        .await;
    browser
        .click(&labelled_in(&card, "expert_answer.created"))
        .await;
    let mut page = AgentsPage(browser);
    page.press("research-bot", "Save endpoint of research-bot")
        .await;
    page.wait_for_notice("The endpoint of research-bot is saved.")
        .await;
    browser
        .wait_for(
            &format!(
                "{card}.querySelector('[data-fact=events]').textContent === 'expert_answer.created'"
            ),
            "the events it wants",
        )
        .await;
    let mut page = AgentsPage(browser);
    assert_eq!(
        page.fact("research-bot", "scheme").await,
        "standard (Standard Webhooks)"
    );
}

/// Desktop and phone: no serious axe-core finding, nothing scrolls sideways, and the keyboard
/// reaches the card's controls with its focus drawn.
async fn the_page_passes_axe_at_both_widths_and_by_keyboard(browser: &mut Browser) {
    browser
        .wait_for(
            &format!(
                "{}.querySelector('.badge.status-active')",
                AgentsPage::card("research-bot")
            ),
            "research-bot shown active",
        )
        .await;
    for (width, height, mobile) in [(1280, 900, false), (390, 844, true)] {
        browser.viewport(width, height, mobile).await;
        assert_no_sideways_scroll(browser, &format!("the agents page at {width} px")).await;
        assert_accessible(browser, &format!("the agents page at {width} px")).await;
    }
    browser.viewport(1280, 900, false).await;
    let focused = tab_through(browser, 40).await;
    let names: Vec<&str> = focused.iter().map(|(name, _)| name.as_str()).collect();
    for wanted in [
        "a: ← Admin",
        "button: Disable… research-bot",
        "summary: Rotate the secret of research-bot",
        "summary: Edit endpoint of research-bot",
    ] {
        assert!(
            names.contains(&wanted),
            "{wanted} is not reached: {names:#?}"
        );
    }
    for (name, drawn) in &focused {
        assert!(drawn, "{name} has no visible focus");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_who_is_not_an_admin_is_refused_the_agents_page() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    operator(&app.db, "games", "ana").await;
    register(&app, "agent-a", &["games"], None, WebhookScheme::Chovy).await;

    let mut browser = signed_in(&app, "ana", PATH).await;
    let refusal = AgentsPage(&mut browser).page_error().await;
    assert!(
        refusal.starts_with("This page is for askloop's admins"),
        "{refusal}"
    );
    let shown: Value = browser
        .eval("[document.body.innerText.includes('agent-a'), !!document.querySelector('form.agent-form')]")
        .await;
    assert_eq!(
        shown,
        json!([false, false]),
        "nothing of the registry shows"
    );
    // Her header has no way to the admin pages.
    assert_eq!(
        browser
            .eval(&format!(
                "!!{}",
                link_in("document.querySelector('header')", "Agents")
            ))
            .await,
        json!(false)
    );
}
