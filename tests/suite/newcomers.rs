//! Newcomers and habits (issue 31, item 8): a person in no niche is told how to join and admins
//! see who waits to join; "Your agent needs you" shows each niche's five most urgent and its
//! count; every page names itself in the document title; exact times follow the person's time
//! zone, and a zone that is not IANA is refused; sessions are named by browser and system; ending
//! one asks first; an operator webhook must be https:// (plain http:// only for an admin's, to a
//! local host or the deployment's own), on GraphQL and in the settings form; on a phone the
//! header folds into a menu the keyboard opens and Escape closes.
//!
//! With `ASKLOOP_SCREENSHOTS` naming a folder, the phone test leaves `phone-menu.png` there.

use askloop_tests::answers::sign_in;
use askloop_tests::browser::{Browser, button, labelled, link_in};
use askloop_tests::fixtures::open_niche;
use askloop_tests::pages::signed_in;
use askloop_tests::people::{member, operator, person};
use askloop_tests::{Backend, TestApp, error_code, on_both_backends};
use entity::niche_members::{MemberRole, MemberStatus};
use serde_json::{Value, json};

use crate::money_pages::{accessible_everywhere, keep_screenshot};

const REGISTER: &str = "mutation($niche: String!, $url: String!) { registerOperatorWebhook(nicheSlug: $niche, url: $url) { webhook { id url } } }";
const HOOKS: &str = "{ myOperatorWebhooks { url } }";
const CHROME: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
const FIREFOX: &str =
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0";

on_both_backends!(
    an_operator_webhook_must_use_https_unless_an_admins_goes_to_a_local_host,
    a_time_zone_that_is_not_iana_is_refused_and_changes_nothing,
    sessions_are_named_by_browser_and_system,
    what_waits_shows_each_niches_five_most_urgent_and_its_count,
    admins_see_who_waits_to_join_a_niche,
);

on_both_backends!(
    config: |c| c.public_origin = Some("http://askloop.example.org".into());
    an_admins_plain_http_webhook_may_go_to_the_deployments_own_host,
);

async fn register(app: &TestApp, token: &str, url: &str) -> Value {
    app.graphql(Some(token), REGISTER, json!({"niche": "games", "url": url}))
        .await
}

fn refused_for_plain_http(body: &Value) -> bool {
    error_code(body) == Some("BAD_USER_INPUT")
        && body["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("must use https://"))
}

async fn an_operator_webhook_must_use_https_unless_an_admins_goes_to_a_local_host(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    for url in [
        "http://hooks.example.com/askloop",
        "HTTP://hooks.example.com/askloop",
    ] {
        let refused = register(&app, &ana.token, url).await;
        assert!(refused_for_plain_http(&refused), "{url}: {refused}");
    }
    // An admin's plain http:// to a public host is refused too.
    let refused = register(&app, &root.token, "http://hooks.example.com/root").await;
    assert!(refused_for_plain_http(&refused), "{refused}");
    // Nothing was registered.
    for who in [&ana, &root] {
        let hooks = app.graphql(Some(&who.token), HOOKS, json!({})).await;
        assert_eq!(hooks["data"]["myOperatorWebhooks"], json!([]), "{hooks}");
    }
    let made = register(&app, &ana.token, "https://hooks.example.com/askloop").await;
    assert!(made["errors"].is_null(), "{made}");
    let made = register(&app, &root.token, "http://127.0.0.1:9/hooks").await;
    assert!(made["errors"].is_null(), "an admin's local host: {made}");
    // A member's local host stays refused, for being local.
    let local = register(&app, &ana.token, "http://127.0.0.1:9/hooks").await;
    assert_eq!(error_code(&local), Some("BAD_USER_INPUT"), "{local}");
}

async fn an_admins_plain_http_webhook_may_go_to_the_deployments_own_host(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    let own = "http://askloop.example.org/hooks/askloop";
    let made = register(&app, &root.token, own).await;
    assert!(made["errors"].is_null(), "{made}");
    let refused = register(&app, &ana.token, own).await;
    assert!(refused_for_plain_http(&refused), "{refused}");
}

const QUIET: &str =
    "mutation($zone: String!) { setQuietHours(timeZone: $zone, includeHigh: false) { timeZone } }";
const ZONE: &str = "{ viewer { timeZone } myMailSettings { timeZone } }";

async fn a_time_zone_that_is_not_iana_is_refused_and_changes_nothing(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let before = app.graphql(Some(&ana.token), ZONE, json!({})).await;
    assert_eq!(before["data"]["viewer"]["timeZone"], "UTC", "{before}");
    for zone in ["Mars/Olympus_Mons", "CEST", "+02:00", ""] {
        let refused = app
            .graphql(Some(&ana.token), QUIET, json!({"zone": zone}))
            .await;
        assert_eq!(
            error_code(&refused),
            Some("BAD_USER_INPUT"),
            "{zone}: {refused}"
        );
        assert!(
            refused["errors"][0]["message"]
                .as_str()
                .is_some_and(|m| m.contains("is not an IANA time zone")),
            "{refused}"
        );
    }
    assert_eq!(app.graphql(Some(&ana.token), ZONE, json!({})).await, before);
    let saved = app
        .graphql(Some(&ana.token), QUIET, json!({"zone": "Europe/Paris"}))
        .await;
    assert!(saved["errors"].is_null(), "{saved}");
    let after = app.graphql(Some(&ana.token), ZONE, json!({})).await;
    assert_eq!(
        after["data"]["viewer"]["timeZone"], "Europe/Paris",
        "{after}"
    );
}

async fn sessions_are_named_by_browser_and_system(app: TestApp) {
    open_niche(&app.db, "games").await;
    operator(&app.db, "games", "ana").await;
    let chrome = sign_in(&app, "ana", CHROME).await;
    sign_in(&app, "ana", FIREFOX).await;
    sign_in(&app, "ana", "my-script/1.0").await;
    let listed = app
        .graphql(
            Some(&chrome),
            "{ mySessions { device userAgent clientAddress current } }",
            json!({}),
        )
        .await;
    assert!(listed["errors"].is_null(), "{listed}");
    let sessions = listed["data"]["mySessions"]
        .as_array()
        .expect("a list")
        .clone();
    let named = |ua: &str| {
        sessions
            .iter()
            .find(|s| s["userAgent"] == ua)
            .map(|s| (s["device"].clone(), s["clientAddress"].clone()))
    };
    assert_eq!(
        named(CHROME),
        Some((json!("Chrome on Linux"), json!("127.0.0.1")))
    );
    assert_eq!(
        named(FIREFOX).map(|n| n.0),
        Some(json!("Firefox on Windows"))
    );
    assert_eq!(
        named("my-script/1.0").map(|n| n.0),
        Some(json!("Unknown browser"))
    );
}

const BY_NICHE: &str = "query($n: Int!) { awaitingMeByNiche(perNiche: $n) { niche { slug } waitingCount questions { id } } }";

async fn what_waits_shows_each_niches_five_most_urgent_and_its_count(app: TestApp) {
    open_niche(&app.db, "games").await;
    open_niche(&app.db, "roofing").await;
    let ana = operator(&app.db, "games", "ana").await;
    member(
        &app.db,
        "roofing",
        &ana,
        MemberRole::Operator,
        MemberStatus::Active,
    )
    .await;
    for n in 0..7 {
        app.ask("games", &format!("g-{n}")).await;
    }
    app.ask("roofing", "r-0").await;
    let read = app
        .graphql(Some(&ana.token), BY_NICHE, json!({"n": 5}))
        .await;
    assert!(read["errors"].is_null(), "{read}");
    let parts = read["data"]["awaitingMeByNiche"]
        .as_array()
        .expect("a list")
        .clone();
    let part = |slug: &str| {
        parts
            .iter()
            .find(|p| p["niche"]["slug"] == slug)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(part("games")["waitingCount"], 7);
    assert_eq!(part("games")["questions"].as_array().map(Vec::len), Some(5));
    assert_eq!(part("roofing")["waitingCount"], 1);
    for bad in [0, 21] {
        let refused = app
            .graphql(Some(&ana.token), BY_NICHE, json!({"n": bad}))
            .await;
        assert_eq!(error_code(&refused), Some("BAD_USER_INPUT"), "{refused}");
    }
    let nobody = app.graphql(None, BY_NICHE, json!({"n": 5})).await;
    assert_eq!(error_code(&nobody), Some("UNAUTHENTICATED"), "{nobody}");
}

const WAITING: &str = "{ waitingToJoin { handle pendingIn } }";

async fn admins_see_who_waits_to_join_a_niche(app: TestApp) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let root = person(&app.db, "root", true).await;
    person(&app.db, "cat", false).await;
    let dan = person(&app.db, "dan", false).await;
    member(
        &app.db,
        "games",
        &dan,
        MemberRole::Operator,
        MemberStatus::Pending,
    )
    .await;
    let read = app.graphql(Some(&root.token), WAITING, json!({})).await;
    assert!(read["errors"].is_null(), "{read}");
    let mut waiting = read["data"]["waitingToJoin"]
        .as_array()
        .expect("a list")
        .clone();
    waiting.sort_by_key(|w| w["handle"].as_str().unwrap_or_default().to_owned());
    assert_eq!(
        waiting,
        vec![
            json!({"handle": "cat", "pendingIn": []}),
            json!({"handle": "dan", "pendingIn": ["games"]}),
        ]
    );
    let refused = app.graphql(Some(&ana.token), WAITING, json!({})).await;
    assert_eq!(error_code(&refused), Some("FORBIDDEN"), "{refused}");
}

/// Press `key` as a keyboard does (keyDown with its text, then keyUp).
async fn press(browser: &mut Browser, key: &str, code: u32, text: &str) {
    browser
        .call(
            "Input.dispatchKeyEvent",
            json!({"type": "keyDown", "key": key, "code": key, "windowsVirtualKeyCode": code, "text": text}),
        )
        .await;
    browser
        .call(
            "Input.dispatchKeyEvent",
            json!({"type": "keyUp", "key": key, "code": key, "windowsVirtualKeyCode": code}),
        )
        .await;
}

async fn title(browser: &mut Browser, what: &str) -> String {
    let mut seen = Vec::new();
    for _ in 0..100 {
        let title = browser.eval("document.title").await;
        let title = title.as_str().unwrap_or_default().to_owned();
        if title.ends_with(" — askloop") {
            return title;
        }
        if seen.last() != Some(&title) {
            seen.push(title);
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{what}: no page title, only {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_is_told_how_to_join_and_an_admin_sees_who_waits() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    person(&app.db, "cat", false).await;
    person(&app.db, "root", true).await;
    let mut browser = signed_in(&app, "cat", "/dashboard/niches").await;
    browser
        .wait_for(
            "document.querySelector('.newcomer li.niche[data-slug=games]')",
            "how to join, with the niches taking questions",
        )
        .await;
    let said = browser
        .eval("document.querySelector('.newcomer').innerText")
        .await;
    let said = said.as_str().unwrap_or_default();
    assert!(said.contains("You are not in a niche yet"), "{said}");
    assert!(said.contains("Ask an askloop admin to add you"), "{said}");
    assert!(said.contains("cat"), "{said}");
    assert!(!said.contains("Nothing is waiting for you"), "{said}");
    assert_eq!(
        browser
            .eval("document.querySelector('.waiting-to-join')")
            .await,
        Value::Null,
        "only admins see who waits"
    );

    // Each page names itself.
    let mut titles = vec![title(&mut browser, "the niches page's title").await];
    for path in [
        "/dashboard/revenue",
        "/dashboard/settings",
        "/dashboard/niches/games/knowledge",
    ] {
        browser.goto(&app.url(path)).await;
        browser
            .wait_for(&format!("location.pathname === {path:?}"), path)
            .await;
        browser
            .wait_for(
                &format!("!{:?}.includes(document.title)", titles.join("|")),
                "a title of its own",
            )
            .await;
        titles.push(title(&mut browser, path).await);
    }
    assert_eq!(
        titles,
        vec![
            "Your niches — askloop",
            "Your revenue — askloop",
            "Settings — askloop",
            "Knowledge · games — askloop",
        ]
    );
    accessible_everywhere(&mut browser, "the settings page").await;
    browser.goto(&app.url("/dashboard/niches")).await;
    browser
        .wait_for(
            "document.querySelector('.newcomer .niches')",
            "the newcomer's page",
        )
        .await;
    accessible_everywhere(&mut browser, "the newcomer's niches page").await;

    // An admin signing in lands on the review inbox; their niches page is one step away.
    let mut admin = signed_in(&app, "root", "/admin/review").await;
    admin.goto(&app.url("/dashboard/niches")).await;
    admin
        .wait_for(
            "document.querySelector('.waiting-to-join li[data-waiting=cat]')",
            "cat, waiting to join, on the admin's niches page",
        )
        .await;
    let login = {
        let mut fresh = askloop_tests::pages::browser().await;
        fresh.goto(&app.url("/login")).await;
        title(&mut fresh, "the sign-in page's title").await
    };
    assert_eq!(login, "Sign in — askloop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_phone_header_folds_into_a_menu_the_keyboard_opens_and_escape_closes() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    operator(&app.db, "games", "ana").await;
    let mut browser = signed_in(&app, "ana", "/dashboard/niches").await;
    browser.viewport(390, 844, true).await;
    let toggle = button("☰ Menu");
    browser.wait_for(&toggle, "the menu button").await;
    let settings_link = link_in("document.querySelector('.account')", "Settings");
    let visible = |el: &str| format!("!!({el}) && ({el}).getClientRects().length > 0");
    assert_eq!(browser.eval(&visible(&settings_link)).await, json!(false));
    assert_eq!(
        browser
            .eval(&format!("{toggle}.getAttribute('aria-expanded')"))
            .await,
        "false"
    );
    // One row: the header is no taller than its button and padding.
    let height = browser
        .eval("document.querySelector('header.top').getBoundingClientRect().height")
        .await
        .as_f64()
        .unwrap_or(1000.0);
    assert!(height < 70.0, "the closed header is {height} px tall");

    // Open by keyboard: focus the button, Enter.
    browser.eval(&format!("{toggle}.focus(); true")).await;
    press(&mut browser, "Enter", 13, "\r").await;
    browser
        .wait_for(&visible(&settings_link), "the account links, shown")
        .await;
    assert_eq!(
        browser
            .eval(&format!("{toggle}.getAttribute('aria-expanded')"))
            .await,
        "true"
    );
    browser.press_tab().await;
    let focused = browser
        .eval("document.activeElement.textContent.trim()")
        .await;
    assert_eq!(focused, "Niches", "Tab goes into the menu's links");
    keep_screenshot(&mut browser, "phone-menu").await;
    accessible_everywhere(&mut browser, "the niches page with the phone menu open").await;
    browser.viewport(390, 844, true).await;

    // Escape closes it and gives the focus back to the button.
    browser
        .eval("document.querySelector('.account a').focus(); true")
        .await;
    press(&mut browser, "Escape", 27, "").await;
    browser
        .wait_for(
            &format!("{toggle}.getAttribute('aria-expanded') === 'false'"),
            "the menu, closed by Escape",
        )
        .await;
    assert_eq!(browser.eval(&visible(&settings_link)).await, json!(false));
    assert_eq!(
        browser
            .eval(&format!("document.activeElement === {toggle}"))
            .await,
        json!(true)
    );
    // Following a link closes it too.
    press(&mut browser, "Enter", 13, "\r").await;
    browser
        .wait_for(&visible(&settings_link), "the menu again")
        .await;
    browser.click(&settings_link).await;
    browser
        .wait_for("location.pathname === '/dashboard/settings'", "settings")
        .await;
    browser
        .wait_for(
            &format!("{toggle}.getAttribute('aria-expanded') === 'false'"),
            "the menu, closed by the new page",
        )
        .await;
    // At desktop width there is no menu button, and the links show.
    browser.viewport(1280, 900, false).await;
    assert_eq!(browser.eval(&visible(&toggle)).await, json!(false));
    assert_eq!(browser.eval(&visible(&settings_link)).await, json!(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settings_page_names_sessions_asks_before_ending_one_and_refuses_plain_http_and_unknown_zones()
 {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    operator(&app.db, "games", "ana").await;
    let laptop = sign_in(&app, "ana", FIREFOX).await;
    let mut browser = signed_in(&app, "ana", "/dashboard/settings").await;
    browser
        .wait_for(
            "document.querySelector('li[data-current=true]') && document.querySelector('#hook-url') && document.querySelector('#time-zone')",
            "the settings page",
        )
        .await;
    // This browser (headless Chrome on Linux) and the laptop, by browser, system and address.
    let this = browser
        .eval("document.querySelector('li[data-current=true] h3').textContent.replace(/\\s+/g, ' ').trim()")
        .await;
    assert_eq!(this, "Chrome on Linux · 127.0.0.1 this device");
    let other = "[...document.querySelectorAll('li[data-session]')].find(li => li.querySelector('h3').textContent.trim() === 'Firefox on Windows · 127.0.0.1')";
    browser.wait_for(other, "the laptop's session").await;

    // Ending it asks first; keeping it changes nothing.
    browser
        .click(&format!("{other}.querySelector('button')"))
        .await;
    browser
        .wait_for(
            &format!("document.activeElement === {}", button("Yes, end it")),
            "the confirmation, focused",
        )
        .await;
    let me = app
        .graphql(Some(&laptop), "{ viewer { user { handle } } }", json!({}))
        .await;
    assert_eq!(
        me["data"]["viewer"]["user"]["handle"], "ana",
        "still signed in"
    );
    browser.click(&button("Keep it")).await;
    browser
        .wait_for(
            &format!("document.activeElement === {other}.querySelector('button')"),
            "the focus back on End session",
        )
        .await;
    browser
        .click(&format!("{other}.querySelector('button')"))
        .await;
    browser.click(&button("Yes, end it")).await;
    browser
        .wait_for(
            "[...document.querySelectorAll('.notice')].some(n => n.textContent.includes('That session is ended'))",
            "the session, ended",
        )
        .await;
    let me = app
        .graphql(Some(&laptop), "{ viewer { user { handle } } }", json!({}))
        .await;
    assert_eq!(error_code(&me), Some("UNAUTHENTICATED"), "{me}");
    // "Sign out everywhere else" asks first too.
    browser.click(&button("Sign out everywhere else")).await;
    browser
        .wait_for(
            &format!(
                "document.activeElement === {}",
                button("Yes, sign out the others")
            ),
            "the confirmation for every other session",
        )
        .await;
    browser.click(&button("Keep them")).await;

    // A plain http:// webhook is refused next to its field, and stays typed.
    browser
        .fill(&labelled("Webhook URL"), "http://hooks.example.com/askloop")
        .await;
    browser.click(&button("Register webhook")).await;
    browser
        .wait_for("document.querySelector('#hook-url-error')", "the refusal")
        .await;
    let refused = browser
        .eval("document.querySelector('#hook-url-error').textContent")
        .await;
    assert!(
        refused.to_string().contains("must use https://"),
        "{refused}"
    );
    assert_eq!(
        browser
            .eval(&format!("{}.value", labelled("Webhook URL")))
            .await,
        "http://hooks.example.com/askloop"
    );
    let hooks = app.graphql(Some(&laptop), HOOKS, json!({})).await;
    assert_eq!(error_code(&hooks), Some("UNAUTHENTICATED"));
    browser
        .fill(
            &labelled("Webhook URL"),
            "https://hooks.example.com/askloop",
        )
        .await;
    browser.click(&button("Register webhook")).await;
    browser
        .wait_for(
            "[...document.querySelectorAll('.notice')].some(n => n.textContent.includes('The webhook for games is registered'))",
            "the https webhook, registered",
        )
        .await;

    // The time zone is picked from a list of IANA zones; one not in it is refused next to it.
    let zones = browser
        .eval("[...document.querySelectorAll('#time-zones option')].map(o => o.value)")
        .await;
    let zones = zones.as_array().expect("a list").clone();
    assert!(zones.len() > 300, "{} zones", zones.len());
    assert!(zones.contains(&json!("Europe/Paris")) && zones.contains(&json!("UTC")));
    assert_eq!(
        browser
            .eval(&format!("{}.getAttribute('list')", labelled("Time zone")))
            .await,
        "time-zones"
    );
    browser
        .fill(&labelled("Time zone"), "Mars/Olympus_Mons")
        .await;
    browser.click(&button("Save quiet hours")).await;
    browser
        .wait_for(
            "document.querySelector('#time-zone-error')",
            "the zone, refused",
        )
        .await;
    let refused = browser
        .eval("document.querySelector('#time-zone-error').textContent")
        .await;
    assert!(
        refused.to_string().contains("is not an IANA time zone"),
        "{refused}"
    );

    // A zone from the list is saved, and exact times on the page follow it.
    browser.fill(&labelled("Time zone"), "Asia/Tokyo").await;
    browser.click(&button("Save quiet hours")).await;
    browser
        .wait_for(
            "[...document.querySelectorAll('time[title]')].every(t => t.title.endsWith('Asia/Tokyo'))",
            "exact times in Tokyo's time",
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_home_page_shows_each_niches_five_most_urgent_with_a_link_to_the_rest() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    operator(&app.db, "games", "ana").await;
    for n in 0..7 {
        app.ask("games", &format!("g-{n}")).await;
    }
    let mut browser = signed_in(&app, "ana", "/dashboard/niches").await;
    let part = "document.querySelector('.awaiting-niche[data-slug=games]')";
    browser
        .wait_for(
            &format!("{part} && {part}.querySelectorAll('li[data-question-id]').length === 5"),
            "games' five most urgent",
        )
        .await;
    let count = browser
        .eval(&format!(
            "{part}.querySelector('[data-waiting-count]').textContent"
        ))
        .await;
    assert_eq!(count, "7 waiting");
    let rest = link_in(part, "All 7 waiting in Niche games");
    browser.wait_for(&rest, "the link to the rest").await;
    assert_eq!(
        browser.eval(&format!("{rest}.getAttribute('href')")).await,
        "/dashboard/niches/games/questions"
    );
    // Each question links to its own page.
    let first = browser
        .eval(&format!(
            "{part}.querySelector('li[data-question-id] a').getAttribute('href')"
        ))
        .await;
    assert!(
        first
            .as_str()
            .is_some_and(|h| h.starts_with("/dashboard/niches/games/questions/")),
        "{first}"
    );
    // A new question keeps the list at five and the count follows, live.
    app.ask("games", "g-7").await;
    browser
        .wait_for(
            &format!("{part}.querySelector('[data-waiting-count]').textContent === '8 waiting'"),
            "the count, live",
        )
        .await;
    assert_eq!(
        browser
            .eval(&format!(
                "{part}.querySelectorAll('li[data-question-id]').length"
            ))
            .await,
        5
    );
    accessible_everywhere(&mut browser, "the niches page with a niche's five").await;
}
