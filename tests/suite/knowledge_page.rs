//! A niche's knowledge in a real Chromium (docs/contract.md#knowledge): an operator reaches it
//! from the queue, searches as they type (a word of one answer finds that entry alone; a late
//! reply to an older keystroke never replaces a newer one's results; a word of none says so; the
//! status filter narrows it), opens the entry and sees its question, chosen option and words (as
//! text, never markup), who answered and verified it, and version 1; "Load more" brings a
//! search's next page; a reversed answer's entry says it was retracted and why, and the next
//! version's page lists both; a member of another niche is refused in an alert. Both pages pass
//! axe-core at desktop and phone widths, do not scroll sideways, label the search box and the
//! filter, and show where the keyboard's focus is.

use askloop_tests::answers::answer_input;
use askloop_tests::browser::{Browser, button_in, labelled, link, link_in, role};
use askloop_tests::fixtures::{open_niche, question_body};
use askloop_tests::pages::{self, Header, sign_in_to, signed_in};
use askloop_tests::people::{operator, person};
use askloop_tests::{Backend, TestApp};
use entity::agent_answers;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};

use crate::review_pages::{assert_accessible, assert_no_sideways_scroll, tab_through};

const QUEUE: &str = "/dashboard/niches/games/questions";
const KNOWLEDGE: &str = "/dashboard/niches/games/knowledge";

/// The title and answer words of the entry the operator looks for.
const TITLE: &str = "Which release date counts?";
const ANSWER: &str = "Count the early-access date: storefronts show it <b>first</b>.";

/// `/dashboard/niches/:slug/knowledge` and its entries, as a member uses them.
struct KnowledgePage<'a>(&'a mut Browser);

askloop_tests::page_object!(KnowledgePage);

impl KnowledgePage<'_> {
    const SEARCH: &'static str = "Search the knowledge";
    const STATUS: &'static str = "Status";
    const RESULTS: &'static str = "document.querySelector('.knowledge-results')";
    const ENTRY: &'static str = "document.querySelector('article.knowledge-entry')";

    /// Wait until the results say `count` (the live region's words, e.g. "1 entry found").
    async fn wait_for_count(&mut self, count: &str) {
        self.0
            .wait_for(
                &format!(
                    "{} && document.querySelector('.result-count').textContent.trim() === {}",
                    role("status", count),
                    serde_json::to_string(count).unwrap_or_default()
                ),
                &format!("the results to say \"{count}\""),
            )
            .await;
    }

    /// The titles of the results shown, in order.
    async fn titles(&mut self) -> Value {
        self.0
            .eval(&format!(
                "[...{}.querySelectorAll('ol.knowledge-list li a')].map(a => a.textContent.trim())",
                Self::RESULTS
            ))
            .await
    }

    /// Type `words` into the search box.
    async fn search(&mut self, words: &str) {
        self.0.fill(&labelled(Self::SEARCH), words).await;
    }

    /// The text of the entry's fact `fact` (`status`, `version`, `option`, `answer`, `who`,
    /// `when`).
    async fn fact(&mut self, fact: &str) -> String {
        self.0
            .text(&format!(
                "{}.querySelector('[data-fact={fact:?}]')",
                Self::ENTRY
            ))
            .await
    }
}

/// Ask `external_id` in games titled `title` through the signed intake; the question's id.
async fn ask(app: &TestApp, external_id: &str, title: &str) -> i64 {
    app.ask_with(question_body("games", external_id), |payload| {
        payload["title"] = json!(title);
    })
    .await
}

/// `token` answers `question` with option `option` and `words`; `admin` verifies it unless it
/// was verified on arrival.
async fn answer_and_verify(
    app: &TestApp,
    token: &str,
    admin: &str,
    question: i64,
    option: &str,
    words: &str,
) {
    let answered = app
        .answer(
            token,
            answer_input(question, "ANSWERED", Some(option), Some(words)),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    // Once the niche trusts the answerer, the answer is verified on arrival.
    if answered["data"]["answerQuestion"]["contributionStatus"] == "PENDING" {
        app.decide_newest_contribution(admin, "verifyContribution", None)
            .await;
    }
}

/// One operator's visit to the knowledge, as named steps sharing one app and one browser.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_searches_the_knowledge_as_they_type_and_opens_an_entry() {
    pages::require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    // Who answers again once an answer is reversed (a member when the question arrives).
    let bob = operator(&app.db, "games", "bob").await;
    let root = person(&app.db, "root", true).await;
    let wanted = ask(&app, "q-1", TITLE).await;
    answer_and_verify(&app, &ana.token, &root.token, wanted, "ea", ANSWER).await;
    let other = ask(&app, "q-2", "Which price do reviewers quote?").await;
    answer_and_verify(
        &app,
        &ana.token,
        &root.token,
        other,
        "full",
        "The launch price on the 1.0 page.",
    )
    .await;
    let mut browser = signed_in(&app, "ana", QUEUE).await;
    let browser = &mut browser;

    the_knowledge_is_reached_from_the_queue(browser).await;
    typing_a_word_of_the_answer_finds_its_entry_alone(browser).await;
    a_late_reply_to_an_older_keystroke_never_overwrites_a_newer_one(browser).await;
    a_word_of_no_answer_and_another_status_find_nothing(browser).await;
    let entry = the_entry_shows_its_answer_as_text_and_version_1(browser).await;
    the_entry_page_passes_axe_at_both_widths(browser, &entry).await;
    the_search_page_passes_axe_at_both_widths(browser).await;
    the_search_box_and_filter_are_labelled_and_reached_by_keyboard(browser).await;
    let last =
        load_more_brings_the_next_page_of_a_search(&app, browser, &ana.token, &root.token).await;
    a_retracted_version_says_why_and_the_next_version_lists_both(
        &app,
        browser,
        &bob.token,
        &root.token,
        last,
    )
    .await;
    a_correction_proposed_here_and_verified_by_another_is_the_next_version(
        &app,
        browser,
        &root.token,
    )
    .await;
    a_member_of_another_niche_is_refused_in_an_alert(&app, browser).await;
}

/// From the queue's header to the knowledge, by its link: the newest verified first.
async fn the_knowledge_is_reached_from_the_queue(browser: &mut Browser) {
    browser
        .click(&link_in("document.querySelector('main')", "Knowledge"))
        .await;
    browser
        .wait_for(&format!("location.pathname === {KNOWLEDGE:?}"), KNOWLEDGE)
        .await;
    let mut page = KnowledgePage(browser);
    page.wait_for_count("2 entries found").await;
    assert_eq!(
        page.titles().await,
        json!(["Which price do reviewers quote?", TITLE])
    );
}

/// A word only one answer holds finds that entry, replacing the list in place.
async fn typing_a_word_of_the_answer_finds_its_entry_alone(browser: &mut Browser) {
    let mut page = KnowledgePage(browser);
    page.search("storefronts").await;
    page.wait_for_count("1 entry found").await;
    assert_eq!(page.titles().await, json!([TITLE]));
}

/// Holds the reply to any search for `storefronts` until `window.__release()`: `__held` counts
/// the requests held, and `__heldRead` turns true once the app has read the released reply
/// (a task after the one that read it, so every reaction to it has run).
const HOLD_STOREFRONTS: &str = "(() => { const native = window.fetch; window.__nativeFetch = native; \
    window.__held = 0; window.__heldRead = false; \
    const released = new Promise(ok => { window.__release = ok; }); \
    window.fetch = async (input, init) => { \
      const request = input instanceof Request ? input : new Request(input, init); \
      const body = await request.clone().text().catch(() => ''); \
      if (!body.includes('storefronts')) return native(request); \
      window.__held += 1; \
      const response = await native(request); \
      await released; \
      const text = response.text.bind(response); \
      response.text = async () => { const value = await text(); \
        setTimeout(() => { window.__heldRead = true; }, 0); return value; }; \
      return response; }; \
    return true; })()";

/// The reply to an older search that arrives after a newer one's is not shown: the results stay
/// the newer search's.
async fn a_late_reply_to_an_older_keystroke_never_overwrites_a_newer_one(browser: &mut Browser) {
    let mut page = KnowledgePage(browser);
    page.search("").await;
    page.wait_for_count("2 entries found").await;
    page.eval(HOLD_STOREFRONTS).await;
    page.search("storefronts").await;
    page.wait_for(
        "window.__held === 1",
        "the search for storefronts to be sent",
    )
    .await;
    page.search("reviewers").await;
    page.wait_for_count("1 entry found").await;
    assert_eq!(
        page.titles().await,
        json!(["Which price do reviewers quote?"])
    );
    page.eval("window.__release(); true").await;
    page.wait_for("window.__heldRead", "the late reply to be read")
        .await;
    assert_eq!(
        page.titles().await,
        json!(["Which price do reviewers quote?"]),
        "the late reply for the older keystroke replaced the newer results"
    );
    assert_eq!(
        page.text("document.querySelector('.result-count')").await,
        "1 entry found"
    );
    page.eval("window.fetch = window.__nativeFetch; true").await;
}

/// A word no entry holds says so in the list and the live region; so does a status none has.
async fn a_word_of_no_answer_and_another_status_find_nothing(browser: &mut Browser) {
    let mut page = KnowledgePage(browser);
    page.search("zebra").await;
    page.wait_for_count("No entries match").await;
    // Said once: the count says it, the list adds nothing.
    assert_eq!(
        page.eval("document.body.innerText.split('No entries match').length - 1")
            .await,
        json!(1)
    );

    page.search("storefronts").await;
    page.wait_for_count("1 entry found").await;
    let status = labelled(KnowledgePage::STATUS);
    page.choose(&status, "retracted").await;
    page.wait_for_count("No entries match").await;
    page.choose(&status, "current").await;
    page.wait_for_count("1 entry found").await;
}

/// The entry: its question, chosen option and words shown as text, who answered and verified
/// it, and its one version. Returns its path.
async fn the_entry_shows_its_answer_as_text_and_version_1(browser: &mut Browser) -> String {
    browser.click(&link_in(KnowledgePage::RESULTS, TITLE)).await;
    browser
        .wait_for(
            &format!("location.pathname.startsWith('{KNOWLEDGE}/')"),
            "the entry page",
        )
        .await;
    browser
        .wait_for(KnowledgePage::ENTRY, "the entry to load")
        .await;
    let mut page = KnowledgePage(browser);
    assert_eq!(
        page.text(&format!("{}.querySelector('h1')", KnowledgePage::ENTRY))
            .await,
        TITLE
    );
    assert_eq!(page.fact("status").await, "current");
    assert_eq!(page.fact("version").await, "version 1");
    assert_eq!(page.fact("option").await, "Early access");
    assert_eq!(
        page.fact("answer").await,
        ANSWER,
        "the markup is shown as text"
    );
    assert_eq!(
        page.eval(&format!("!!{}.querySelector('b')", KnowledgePage::ENTRY))
            .await,
        json!(false),
        "no markup from the API is rendered"
    );
    assert_eq!(page.fact("who").await, "Answered by ana, verified by root");
    assert!(page.fact("when").await.starts_with("Verified "));
    let versions = page
        .eval(
            "[...document.querySelectorAll('ol.versions li')].map(li => \
             [li.querySelector('a').textContent.trim(), li.querySelector('a').getAttribute('aria-current'), \
              li.querySelector('.badge').textContent.trim()])",
        )
        .await;
    assert_eq!(versions, json!([["Version 1", "page", "current"]]));
    page.eval("location.pathname")
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// axe-core finds nothing serious on the entry page, at 1280 px and 390 px.
async fn the_entry_page_passes_axe_at_both_widths(browser: &mut Browser, entry: &str) {
    for (width, height, mobile) in [(1280, 900, false), (390, 844, true)] {
        browser.viewport(width, height, mobile).await;
        let what = format!("the entry page {entry} at {width} px");
        assert_no_sideways_scroll(browser, &what).await;
        assert_accessible(browser, &what).await;
        browser
            .screenshot(&format!("knowledge-entry-{width}"))
            .await;
    }
    browser.viewport(1280, 900, false).await;
}

/// Back to the search, by the entry page's link: axe-core finds nothing serious at either width.
async fn the_search_page_passes_axe_at_both_widths(browser: &mut Browser) {
    browser.click(&link("← Back to the knowledge")).await;
    browser
        .wait_for(&format!("location.pathname === {KNOWLEDGE:?}"), KNOWLEDGE)
        .await;
    KnowledgePage(browser)
        .wait_for_count("2 entries found")
        .await;
    for (width, height, mobile) in [(1280, 900, false), (390, 844, true)] {
        browser.viewport(width, height, mobile).await;
        let what = format!("the knowledge page at {width} px");
        assert_no_sideways_scroll(browser, &what).await;
        assert_accessible(browser, &what).await;
        browser
            .screenshot(&format!("knowledge-search-{width}"))
            .await;
    }
    browser.viewport(1280, 900, false).await;
}

/// The search box and the filter are found by their labels; Tab reaches them and each result
/// link in turn, and every control focused shows its focus.
async fn the_search_box_and_filter_are_labelled_and_reached_by_keyboard(browser: &mut Browser) {
    for label in [KnowledgePage::SEARCH, KnowledgePage::STATUS] {
        assert!(
            browser
                .eval(&format!("({}) instanceof HTMLElement", labelled(label)))
                .await
                .as_bool()
                .unwrap_or(false),
            "nothing is labelled {label:?}"
        );
    }
    let focused = tab_through(browser, 16).await;
    let names: Vec<&str> = focused.iter().map(|(name, _)| name.as_str()).collect();
    assert!(
        names.iter().any(|n| n.starts_with("input")),
        "the search box is not reached: {names:#?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("select")),
        "the status filter is not reached: {names:#?}"
    );
    for wanted in [
        "a: Which price do reviewers quote?".to_owned(),
        format!("a: {TITLE}"),
    ] {
        assert!(
            names.contains(&wanted.as_str()),
            "{wanted} is not reached: {names:#?}"
        );
    }
    for (name, drawn) in &focused {
        assert!(drawn, "{name} has no visible focus");
    }
}

/// More entries than a page holds: the first 20 are shown and say more can be loaded; "Load
/// more" brings the rest under them. Returns the last question asked.
async fn load_more_brings_the_next_page_of_a_search(
    app: &TestApp,
    browser: &mut Browser,
    token: &str,
    admin: &str,
) -> i64 {
    let mut last = 0;
    for n in 1..=21 {
        let question = ask(app, &format!("filler-{n}"), &format!("Filler question {n}")).await;
        answer_and_verify(
            app,
            token,
            admin,
            question,
            "ea",
            "Filler words, nothing more.",
        )
        .await;
        last = question;
    }
    let mut page = KnowledgePage(browser);
    page.search("filler").await;
    page.wait_for_count("20 entries shown; more can be loaded")
        .await;
    page.click(&button_in(KnowledgePage::RESULTS, "Load more"))
        .await;
    page.wait_for_count("21 entries found").await;
    let titles = page.titles().await;
    let titles = titles.as_array().expect("titles");
    assert_eq!(titles.len(), 21, "{titles:?}");
    assert!(
        page.eval(&format!(
            "!{}",
            button_in(KnowledgePage::RESULTS, "Load more")
        ))
        .await
        .as_bool()
        .unwrap_or(false),
        "no Load more once every entry is shown"
    );
    last
}

/// The last answer reversed retracts its entry; another operator's verified answer to the reopened
/// question is version 2. Its page lists both versions; version 1's says it was retracted, and
/// why.
async fn a_retracted_version_says_why_and_the_next_version_lists_both(
    app: &TestApp,
    browser: &mut Browser,
    token: &str,
    admin: &str,
    question: i64,
) {
    app.decide_newest_contribution(
        admin,
        "reverseContribution",
        Some("Not the filler we meant"),
    )
    .await;
    answer_and_verify(app, token, admin, question, "full", "Second thoughts.").await;
    let mut page = KnowledgePage(browser);
    page.search("\"second thoughts\"").await;
    page.wait_for_count("1 entry found").await;
    page.click(&link_in(KnowledgePage::RESULTS, "Filler question 21"))
        .await;
    page.wait_for(
        &format!(
            "{} && document.querySelectorAll('ol.versions li').length === 2",
            KnowledgePage::ENTRY
        ),
        "version 2's page",
    )
    .await;
    assert_eq!(page.fact("version").await, "version 2");
    let versions = "[...document.querySelectorAll('ol.versions li')].map(li => \
         [li.querySelector('a').textContent.trim(), li.querySelector('a').getAttribute('aria-current'), \
          li.querySelector('.badge').textContent.trim()])";
    assert_eq!(
        page.eval(versions).await,
        json!([
            ["Version 1", null, "retracted"],
            ["Version 2", "page", "current"]
        ])
    );
    page.click(&link_in(
        "document.querySelector('ol.versions')",
        "Version 1",
    ))
    .await;
    page.wait_for(
        "document.querySelector('article.knowledge-entry [data-fact=ended]')",
        "version 1's page",
    )
    .await;
    assert_eq!(page.fact("status").await, "retracted");
    let ended = page.fact("ended").await;
    assert!(ended.starts_with("Retracted"), "{ended}");
    assert!(ended.ends_with(": Not the filler we meant"), "{ended}");
    assert_eq!(
        page.eval(versions).await,
        json!([
            ["Version 1", "page", "retracted"],
            ["Version 2", null, "current"]
        ])
    );
    assert_accessible(&mut page, "a retracted entry").await;
}

/// On the current version's page the operator previews and sends a correction; it changes nothing until
/// someone else (an admin) verifies it, and then the entry's line has a third version, current,
/// and the one corrected says it was superseded. The form passes axe-core.
async fn a_correction_proposed_here_and_verified_by_another_is_the_next_version(
    app: &TestApp,
    browser: &mut Browser,
    admin: &str,
) {
    let mut page = KnowledgePage(browser);
    page.click(&link_in(
        "document.querySelector('ol.versions')",
        "Version 2",
    ))
    .await;
    let form = "document.querySelector('section.correction form')";
    page.wait_for(form, "the correction form on the current version")
        .await;
    assert_accessible(&mut page, "an entry with its correction form").await;
    page.fill(
        "document.querySelector('#correction-answer')",
        "Second thoughts, corrected: the filler counts twice.",
    )
    .await;
    page.fill(
        "document.querySelector('#correction-note')",
        "The store counts it twice",
    )
    .await;
    page.click("document.querySelector('section.correction button[type=submit]')")
        .await;
    page.wait_for(
        "document.querySelector('[data-action=send-correction]')",
        "the proposed version's preview",
    )
    .await;
    page.click("document.querySelector('[data-action=send-correction]')")
        .await;
    page.wait_for(
        "document.querySelector('section.correction [role=status]')?.textContent.startsWith('Proposed.')",
        "the correction proposed",
    )
    .await;
    app.decide_newest_contribution(admin, "verifyContribution", None)
        .await;
    page.reload().await;
    page.wait_for(
        &format!(
            "{} && document.querySelectorAll('ol.versions li').length === 3",
            KnowledgePage::ENTRY
        ),
        "the entry's three versions",
    )
    .await;
    assert_eq!(page.fact("status").await, "superseded");
    assert!(page.fact("ended").await.starts_with("Superseded"));
    assert_eq!(
        page.eval("!!document.querySelector('section.correction')")
            .await,
        json!(false),
        "only the current version takes a correction"
    );
    page.click(&link_in(
        "document.querySelector('ol.versions')",
        "Version 3",
    ))
    .await;
    page.wait_for(
        "document.querySelector('article.knowledge-entry [data-fact=answer]')?.textContent.includes('counts twice')",
        "version 3's page",
    )
    .await;
    assert_eq!(page.fact("status").await, "current");
    assert_eq!(page.fact("who").await, "Answered by ana, verified by root");
}

/// Someone who is not a member of the niche is refused in words, in the page's alert, and shown
/// no entry.
async fn a_member_of_another_niche_is_refused_in_an_alert(app: &TestApp, browser: &mut Browser) {
    open_niche(&app.db, "roofing").await;
    operator(&app.db, "roofing", "cara").await;
    Header(browser).sign_out().await;
    browser
        .wait_for("location.pathname === '/login'", "the login page")
        .await;
    sign_in_to(browser, app, "cara", KNOWLEDGE).await;
    let refusal = browser.page_error().await;
    assert!(
        refusal.starts_with("Only the niche's active members and admins read its knowledge"),
        "{refusal}"
    );
    assert!(
        !browser.shows(TITLE).await,
        "an entry is shown to a stranger"
    );
}

/// A second question like a verified entry's: another operator sees "Already answered?" on its
/// card in the queue with the entry (its title linked to its page, its option and words), the
/// queue with it passes axe-core at both widths, and "Use this answer" settles the question from
/// the entry: the card goes, and the answer stored names the entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_question_like_an_entry_is_settled_from_it_on_the_queue() {
    pages::require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    operator(&app.db, "games", "bob").await;
    let root = person(&app.db, "root", true).await;
    let first = ask(&app, "q-1", TITLE).await;
    answer_and_verify(&app, &ana.token, &root.token, first, "ea", ANSWER).await;
    let again = ask(&app, "q-2", TITLE).await;
    let mut browser = signed_in(&app, "bob", QUEUE).await;
    pages::QueuePage(&mut browser).open(again).await;
    let card = format!(
        "document.querySelector('article.question:not(.done)[data-question-id=\"{again}\"]')"
    );
    let block = format!("{card}?.querySelector('section.already-answered')");
    browser
        .wait_for(
            &format!("{block}?.querySelector('li[data-entry-id]')"),
            "\"Already answered?\" on the second question's card",
        )
        .await;
    assert_eq!(
        browser.text(&format!("{block}.querySelector('h3')")).await,
        "Already answered?"
    );
    let link = browser
        .eval(&format!(
            "(() => {{ const a = {block}.querySelector('li a'); return [a.textContent.trim(), a.getAttribute('href')]; }})()"
        ))
        .await;
    assert_eq!(link[0], TITLE, "{link}");
    assert!(
        link[1]
            .as_str()
            .is_some_and(|href| href.starts_with(&format!("{KNOWLEDGE}/"))),
        "{link}"
    );
    let shown = browser.text(&block).await;
    assert!(shown.contains("Early access"), "{shown}");
    assert!(
        shown.contains("storefronts show it <b>first</b>"),
        "{shown}"
    );
    for (width, height, mobile) in [(1280, 900, false), (390, 844, true)] {
        browser.viewport(width, height, mobile).await;
        let what = format!("the queue with \"Already answered?\" at {width} px");
        assert_no_sideways_scroll(&mut browser, &what).await;
        assert_accessible(&mut browser, &what).await;
        browser
            .screenshot(&format!("queue-already-answered-{width}"))
            .await;
    }
    browser.viewport(1280, 900, false).await;
    browser
        .click(&button_in(&block, &format!("Use this answer — {TITLE}")))
        .await;
    browser
        .wait_for(&format!("!{card}"), "the settled question's card to go")
        .await;
    let answers = agent_answers::Entity::find()
        .filter(agent_answers::Column::QuestionId.eq(again))
        .all(&app.db)
        .await
        .expect("read");
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert!(
        answers[0].knowledge_entry_id.is_some(),
        "the answer does not name its entry: {answers:?}"
    );
}
