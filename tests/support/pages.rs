//! The dashboard's page objects, one set for every browser test: starting a browser and signing
//! in through the login form, each page as a person uses it — fields found by their labels,
//! buttons and links by their names, messages by their roles — and what every page does the
//! same way (wait for the status notice, read the page's error, read a secret shown once, choose
//! in a select, ask whether a secret shows anywhere), written once on `Browser`.
//!
//! A page object wraps the `&mut Browser` it drives and derefs to it (`page_object!`), so the
//! shared helpers are called on the page itself and the page holds only what is its own. Items
//! are picked out by the ids the app shows them with (`data-question-id`, `data-member`, …) only
//! where a person would pick them out by their content.

use serde_json::Value;

use crate::TestApp;
use crate::browser::{Browser, button, button_in, labelled, labelled_in, link, link_in, role};
use crate::people::PASSWORD;

/// Make the page object `$page<'_>` (a tuple struct around `&mut Browser`) deref to its
/// browser, so every helper on `Browser` is the page's too.
#[macro_export]
macro_rules! page_object {
    ($page:ident) => {
        impl ::std::ops::Deref for $page<'_> {
            type Target = $crate::browser::Browser;
            fn deref(&self) -> &Self::Target {
                self.0
            }
        }

        impl ::std::ops::DerefMut for $page<'_> {
            fn deref_mut(&mut self) -> &mut Self::Target {
                self.0
            }
        }
    };
}

impl Browser {
    /// Wait for the page's status message to say `words`.
    pub async fn wait_for_notice(&mut self, words: &str) {
        self.wait_for(&role("status", words), &format!("the notice \"{words}\""))
            .await;
    }

    /// The page's refusal or error (the alert in `main`), once it shows.
    pub async fn page_error(&mut self) -> String {
        let alert = "document.querySelector('main [role=alert]')";
        self.wait_for(alert, "the page's error").await;
        self.text(alert).await
    }

    /// The secret shown once in the field labelled `label`, once it is filled.
    pub async fn shown_once(&mut self, label: &str) -> String {
        let field = labelled(label);
        self.wait_for(
            &format!("{field}.value"),
            &format!("the {label} shown once"),
        )
        .await;
        self.eval(&format!("{field}.value"))
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Whether `secret` is anywhere in the page: its markup, its text or a field's value.
    pub async fn shows(&mut self, secret: &str) -> bool {
        let secret = serde_json::to_string(secret).unwrap_or_default();
        self.eval(&format!(
            "document.documentElement.outerHTML.includes({secret}) \
             || document.body.innerText.includes({secret}) \
             || [...document.querySelectorAll('input, textarea')].some(e => e.value.includes({secret}))"
        ))
        .await
        .as_bool()
        .expect("the page answers whether it shows the secret")
    }

    /// Choose the option whose value is `value` in the select `locator` finds, as picking it does.
    pub async fn choose(&mut self, locator: &str, value: &str) {
        self.wait_for(locator, locator).await;
        let value = serde_json::to_string(value).unwrap_or_default();
        self.eval(&format!(
            "(() => {{ const s = ({locator}); s.value = {value}; \
             s.dispatchEvent(new Event('change', {{ bubbles: true }})); return true; }})()"
        ))
        .await;
    }

    /// The value of the control `locator`.
    pub async fn value(&mut self, locator: &str) -> Value {
        self.eval(&format!("({locator}).value")).await
    }

    /// Whether the checkbox or radio `locator` is ticked.
    pub async fn ticked(&mut self, locator: &str) -> bool {
        self.eval(&format!("({locator}).checked"))
            .await
            .as_bool()
            .unwrap_or(false)
    }
}

/// The first button in `scope` whose name starts with `words`.
pub fn button_starting(scope: &str, words: &str) -> String {
    let words = serde_json::to_string(words).unwrap_or_default();
    format!(
        "[...({scope}).querySelectorAll('button')].find(b => b.textContent.replace(/\\s+/g, ' ').trim().startsWith({words}))"
    )
}

/// Counts the `WebSocket`s the page constructs, in `window.__sockets` (per document).
pub const COUNT_SOCKETS: &str = "(() => { const Native = window.WebSocket; window.__sockets = 0; \
    window.WebSocket = new Proxy(Native, { construct(target, args) { window.__sockets += 1; \
    return new target(...args); } }); })()";

/// Lets a test hold back what the live connection receives, as a slow network would: while
/// `window.__liveHeld` is true, every message a `WebSocket` receives waits; `window.__releaseLive()`
/// hands the waiting ones to the page in order. (Installed before the page's own listeners, so it
/// runs first and stops the others.)
pub const HOLD_LIVE: &str = "(() => { const Native = window.WebSocket; window.__liveHeld = false; \
    const waiting = []; window.__releaseLive = () => { window.__liveHeld = false; \
    while (waiting.length) { const [socket, data] = waiting.shift(); \
    socket.dispatchEvent(new MessageEvent('message', { data })); } }; \
    window.WebSocket = new Proxy(Native, { construct(target, args) { \
    const socket = new target(...args); socket.addEventListener('message', (event) => { \
    if (window.__liveHeld && event.isTrusted) { event.stopImmediatePropagation(); \
    waiting.push([socket, event.data]); } }); return socket; } }); })()";

/// A browser on `app`, 1280×900.
pub async fn browser() -> Browser {
    let mut browser = Browser::start().await;
    browser.viewport(1280, 900, false).await;
    browser
}

/// A browser signed in as `handle` (with the fixtures' password), on `path`.
pub async fn signed_in(app: &TestApp, handle: &str, path: &str) -> Browser {
    let mut browser = browser().await;
    sign_in_to(&mut browser, app, handle, path).await;
    browser
}

/// Sign `browser` in as `handle` through the login form, bound for `path`, and wait until it
/// is there.
pub async fn sign_in_to(browser: &mut Browser, app: &TestApp, handle: &str, path: &str) {
    browser.goto(&app.url(&format!("/login?next={path}"))).await;
    LoginPage(browser).sign_in(handle, PASSWORD).await;
    browser
        .wait_for(&format!("location.pathname === {path:?}"), path)
        .await;
}

/// Fail at once, saying what to run, when the dashboard has not been built (`cargo xtask test`
/// builds it before the suite).
pub fn require_built_dashboard() {
    assert!(
        crate::web_dist().join("index.html").is_file()
            && crate::web_dist().join("pkg/web_bg.wasm").is_file(),
        "the dashboard is not built: run the tests with `cargo xtask test`"
    );
}

/// `/login`.
pub struct LoginPage<'a>(pub &'a mut Browser);

crate::page_object!(LoginPage);

impl LoginPage<'_> {
    /// Wait for the form, fill it in and send it.
    pub async fn sign_in(self, handle: &str, password: &str) {
        let browser = self.0;
        browser.fill(&labelled("Handle"), handle).await;
        browser.fill(&labelled("Password"), password).await;
        browser.click(&button("Sign in")).await;
    }
}

/// The header on every page.
pub struct Header<'a>(pub &'a mut Browser);

crate::page_object!(Header);

impl Header<'_> {
    /// Sign out with the header's button.
    pub async fn sign_out(self) {
        self.0.click(&button("Sign out")).await;
    }
}

/// `/dashboard/niches`.
pub struct NichesPage<'a>(pub &'a mut Browser);

crate::page_object!(NichesPage);

impl NichesPage<'_> {
    /// The card of my membership in `slug`.
    pub fn card(slug: &str) -> String {
        format!("document.querySelector('article.card[data-slug={slug:?}]')")
    }

    /// Wait for my card in `slug`.
    pub async fn wait_for_card(&mut self, slug: &str) {
        self.0
            .wait_for(&Self::card(slug), &format!("the {slug} card"))
            .await;
    }

    /// The text of my card in `slug`.
    pub async fn card_text(&mut self, slug: &str) -> String {
        self.0.text(&Self::card(slug)).await
    }

    /// "Open the queue" on my card in `slug`.
    pub async fn open_queue(&mut self, slug: &str) {
        self.0
            .click(&link_in(&Self::card(slug), "Open the queue"))
            .await;
    }

    /// The entry for question `id` under "Your agent needs you".
    pub fn awaiting(id: i64) -> String {
        format!("document.querySelector('.awaiting li[data-question-id=\"{id}\"]')")
    }

    /// Wait until nothing is waiting for me.
    pub async fn wait_until_nothing_awaits(&mut self) {
        self.0
            .wait_for(
                "document.querySelector('.awaiting .empty')",
                "nothing waiting",
            )
            .await;
    }
}

/// `/dashboard/niches/:slug/questions`.
pub struct QueuePage<'a>(pub &'a mut Browser);

crate::page_object!(QueuePage);

impl QueuePage<'_> {
    /// The row of waiting question `id` (not the line that says what my own action did).
    pub fn card(id: i64) -> String {
        format!("document.querySelector('article.question:not(.done)[data-question-id=\"{id}\"]')")
    }

    /// Open question `id`'s row in place, when it is not open yet.
    pub async fn open(&mut self, id: i64) {
        let card = Self::card(id);
        self.0.wait_for(&card, "the question's row").await;
        self.0
            .eval(&format!(
                "(() => {{ const row = {card}; const toggle = row.querySelector('button.row-toggle'); \
                 if (toggle && toggle.getAttribute('aria-expanded') !== 'true') toggle.click(); return true; }})()"
            ))
            .await;
        self.0
            .wait_for(
                &format!("{card}.querySelector('form.answer')"),
                "the opened card",
            )
            .await;
    }

    /// Wait for question `id`'s card.
    pub async fn wait_for_card(&mut self, id: i64, what: &str) {
        self.0.wait_for(&Self::card(id), what).await;
    }

    /// Wait until question `id`'s card has gone.
    pub async fn wait_for_card_to_leave(&mut self, id: i64, what: &str) {
        self.0.wait_for(&format!("!{}", Self::card(id)), what).await;
    }

    /// Wait for the calm "nothing is waiting" state.
    pub async fn wait_until_empty(&mut self) {
        self.0
            .wait_for(
                "document.querySelector('.waiting .empty')",
                "the empty queue",
            )
            .await;
    }

    /// How many cards the page shows.
    pub async fn card_count(&mut self) -> i64 {
        self.0
            .eval("document.querySelectorAll('article.question:not(.done)').length")
            .await
            .as_i64()
            .unwrap_or(-1)
    }

    /// Pick the option labelled `label` on question `id`.
    pub async fn choose(&mut self, id: i64, label: &str) {
        self.open(id).await;
        self.0.click(&labelled_in(&Self::card(id), label)).await;
    }

    /// Type `words` into question `id`'s answer.
    pub async fn write(&mut self, id: i64, words: &str) {
        self.open(id).await;
        self.0
            .fill(&labelled_in(&Self::card(id), "Your answer"), words)
            .await;
    }

    /// What is typed in question `id`'s answer.
    pub async fn written(&mut self, id: i64) -> String {
        self.0
            .eval(&format!(
                "{}.value",
                labelled_in(&Self::card(id), "Your answer")
            ))
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Press one of question `id`'s buttons ("Answer", "Not enough context", "Ask the agent to
    /// research more").
    pub async fn press(&mut self, id: i64, name: &str) {
        self.open(id).await;
        self.0.click(&button_in(&Self::card(id), name)).await;
    }

    /// The refusal shown on question `id`'s form, once there is one.
    pub async fn refusal(&mut self, id: i64) -> String {
        let alert = format!("{}.querySelector('form [role=alert]')", Self::card(id));
        self.0
            .wait_for(
                &format!("{alert}.textContent.length > 0"),
                "the refusal next to the form",
            )
            .await;
        self.0.text(&alert).await
    }

    /// The page's status message, once there is one.
    pub async fn notice(&mut self) -> String {
        let status = "(document.querySelector('article.question.done p[role=status]') || document.querySelector('main p.notice[role=status]'))";
        self.0.wait_for(status, "the notice").await;
        self.0.text(status).await
    }

    /// The connection banner's text, once it shows.
    pub async fn banner(&mut self) -> String {
        let banner = role("status", "Connection lost");
        self.0
            .wait_for(&banner, "the dropped-connection banner")
            .await;
        self.0.text(&banner).await
    }

    /// The entry for question `id` under "Settled".
    pub fn settled(id: i64) -> String {
        format!("document.querySelector('.settled li[data-question-id=\"{id}\"]')")
    }

    /// Back to the niches page with the page's own link.
    pub async fn back_to_niches(&mut self) {
        self.0.click(&link("← Your niches")).await;
    }
}

/// `/admin`.
pub struct AdminPage<'a>(pub &'a mut Browser);

crate::page_object!(AdminPage);

impl AdminPage<'_> {
    /// The members table of niche `slug`.
    fn niche(slug: &str) -> String {
        format!("document.querySelector('.niche-admin[data-slug={slug:?}]')")
    }

    /// The row of `handle` in niche `slug`'s members.
    pub fn member(slug: &str, handle: &str) -> String {
        format!(
            "{}.querySelector('tr[data-member={handle:?}]')",
            Self::niche(slug)
        )
    }

    /// Press the button named `name` (its visible words and the hidden ones naming whom).
    pub async fn press(&mut self, name: &str) {
        self.0.click(&button(name)).await;
    }

    /// Add `handle` to niche `slug` with the niche's form.
    pub async fn add_member(&mut self, slug: &str, handle: &str) {
        let niche = Self::niche(slug);
        self.0
            .fill(&labelled_in(&niche, "Add a member"), handle)
            .await;
        self.0.click(&button_in(&niche, "Add")).await;
    }

    /// Fill niche `slug`'s budget form (amounts as people type them, "25.30") and save it.
    pub async fn set_budget(&mut self, slug: &str, monthly: &str, bounty: &str, largest: &str) {
        let niche = Self::niche(slug);
        for (label, value) in [
            ("Monthly limit in USD (empty for no limit)", monthly),
            ("Bounty per question in USD", bounty),
            ("Largest bounty in USD", largest),
        ] {
            self.0.fill(&labelled_in(&niche, label), value).await;
        }
        self.0.click(&button_in(&niche, "Save budget")).await;
    }

    /// Type `price` into niche `slug`'s reuse price (saved with the rest of its budget form).
    pub async fn fill_reuse_price(&mut self, slug: &str, price: &str) {
        let niche = Self::niche(slug);
        self.0
            .fill(
                &labelled_in(
                    &niche,
                    "Reuse price in USD (what an agent pays to rely on an entry)",
                ),
                price,
            )
            .await;
    }

    /// Where niche `slug`'s budget stands this month, as its card says.
    pub fn budget_month(slug: &str) -> String {
        format!("{}.querySelector('[data-budget-month]')", Self::niche(slug))
    }

    /// How many members niche `slug` lists.
    pub async fn member_count(&mut self, slug: &str) -> i64 {
        self.0
            .eval(&format!(
                "{}.querySelectorAll('tbody tr').length",
                Self::niche(slug)
            ))
            .await
            .as_i64()
            .unwrap_or(-1)
    }
}

impl AdminPage<'_> {
    /// The tab of admin section `slug` (`review`, `members`, …).
    pub fn tab(slug: &str) -> String {
        format!("document.querySelector('nav.admin-tabs a[data-section={slug:?}]')")
    }

    /// Open admin section `slug` by its tab and wait until the tab says it is the current page.
    pub async fn open_section(&mut self, slug: &str) {
        let tab = Self::tab(slug);
        self.0.wait_for(&tab, &format!("the {slug} tab")).await;
        self.0.click(&tab).await;
        self.0
            .wait_for(
                &format!("location.pathname === '/admin/{slug}' && {tab}.getAttribute('aria-current') === 'page'"),
                &format!("the {slug} section"),
            )
            .await;
    }

    /// The review item of contribution `id`.
    pub fn review_item(id: &str) -> String {
        format!("document.querySelector('article.review[data-contribution-id={id:?}]')")
    }

    /// Wait for contribution `id`'s review item and return its text.
    pub async fn review_text(&mut self, id: &str) -> String {
        let item = Self::review_item(id);
        self.0
            .wait_for(&item, &format!("the review item of contribution {id}"))
            .await;
        self.0.text(&item).await
    }
}

/// `/dashboard/niches/:slug/questions/:id`.
pub struct QuestionPage<'a>(pub &'a mut Browser);

crate::page_object!(QuestionPage);

impl QuestionPage<'_> {
    /// The path of question `id` in niche `slug`.
    pub fn path(slug: &str, id: i64) -> String {
        format!("/dashboard/niches/{slug}/questions/{id}")
    }

    /// Wait until the question has loaded (its timeline is there).
    pub async fn wait_until_loaded(&mut self) {
        self.0
            .wait_for(
                "document.querySelector('.question-page ol.timeline li')",
                "the question page's timeline",
            )
            .await;
    }

    /// The text of the section headed `heading`.
    pub async fn section(&mut self, heading: &str) -> String {
        let heading = serde_json::to_string(heading).unwrap_or_default();
        self.0
            .text(&format!(
                "[...document.querySelectorAll('.question-page section')].find(s => \
                 s.querySelector('h2') && s.querySelector('h2').textContent.trim() === {heading})"
            ))
            .await
    }
}

/// Check a secret shown once the way every page shows one: the field labelled `label` (a
/// locator from [`labelled`]) is read-only and focused, the page warns that it will not be shown
/// again, and the button named `copy` says what copying did (a headless browser may refuse the
/// clipboard). Returns the secret.
pub async fn assert_secret_shown_once(browser: &mut Browser, field: &str, copy: &str) -> String {
    assert_eq!(
        browser
            .eval(&format!(
                "[{field}.readOnly, document.activeElement === {field}]"
            ))
            .await,
        serde_json::json!([true, true]),
        "read-only, and focused"
    );
    let warning = browser
        .text("document.querySelector('section.secret-once')")
        .await;
    assert!(warning.contains("It will not be shown again."), "{warning}");
    browser.click(&button(copy)).await;
    browser
        .wait_for(
            &format!(
                "{} || {}",
                role("status", "Copied to the clipboard."),
                role("status", "The browser did not let the page copy it")
            ),
            "what copying did",
        )
        .await;
    browser
        .eval(&format!("{field}.value"))
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
}
