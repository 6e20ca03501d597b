//! Knowledge the dashboard cannot make contradict itself (docs/contract.md#knowledge), in a
//! real Chromium and on both stores:
//!
//! - the correction form starts from the current version, lets a person change the option, the
//!   words or both, refuses a correction that changes nothing beside the form, and shows the
//!   whole proposed version before "Send the correction";
//! - a double-clicked send files one correction, and sending again while one waits files nothing
//!   and says so (two concurrent GraphQL proposals file one, on both stores);
//! - the admin's review card shows the current and the proposed version side by side with the
//!   differences marked, the note and a link to the entry, never raw evidence, and its verdict
//!   says what a correction's verdict does;
//! - verified, "Use this answer" on a new question names the option the agent will receive,
//!   holds ten seconds with "Undo" (undone, nothing is sent), and then the agent receives the new
//!   option and the new words together; an entry whose option the question does not offer cannot
//!   be used;
//! - the knowledge page's search finds a paraphrase (any of its words, ranked), quotes and
//!   `-word` still narrow, "No entries match" is said once, and the search stays in the address.

use askloop_tests::answers::answer_input;
use askloop_tests::browser::{Browser, labelled};
use askloop_tests::fixtures::{open_niche, question_body};
use askloop_tests::pages::{self, Header, QueuePage, sign_in_to, signed_in};
use askloop_tests::people::{operator, person};
use askloop_tests::{Backend, TestApp, on_both_backends};
use entity::agent_answers;
use entity::contribution_events;
use entity::knowledge_corrections;
use entity::knowledge_entries::{self, KnowledgeStatus};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

use crate::review_pages::{assert_accessible, assert_no_sideways_scroll};

const TITLE: &str = "Which release date counts for the launch list?";
const OLD_WORDS: &str = "Count the early access date because storefronts show it first.";
const NEW_WORDS: &str = "Count the full release date because early access is a preview.";
const NOTE: &str = "The store's own list uses the 1.0 date";

/// Ask `external_id` in games titled [`TITLE`] with `options`; the question's id.
async fn ask(app: &TestApp, external_id: &str, options: Value) -> i64 {
    app.ask_with(question_body("games", external_id), |payload| {
        payload["title"] = json!(TITLE);
        payload["options"] = options;
    })
    .await
}

/// The options every question of these tests offers, but the mismatched one.
fn date_options() -> Value {
    json!([{"id": "ea", "label": "Early access"}, {"id": "full", "label": "1.0"}])
}

/// Who acts in a scene: their bearer tokens.
struct Cast {
    ana: String,
    bob: String,
}

/// games with operators ana and bob, admin root, and a current entry (ana's answer "Early
/// access" with [`OLD_WORDS`], verified by root): the entry's id.
async fn scene(app: &TestApp) -> i64 {
    scene_with_cast(app).await.0
}

/// [`scene`], with its people's tokens.
async fn scene_with_cast(app: &TestApp) -> (i64, Cast) {
    open_niche(&app.db, "games").await;
    let ana = operator(&app.db, "games", "ana").await;
    let bob = operator(&app.db, "games", "bob").await;
    let root = person(&app.db, "root", true).await;
    let first = ask(app, "q-1", date_options()).await;
    let answered = app
        .answer(
            &ana.token,
            answer_input(first, "ANSWERED", Some("ea"), Some(OLD_WORDS)),
        )
        .await;
    assert!(answered["errors"].is_null(), "{answered}");
    if answered["data"]["answerQuestion"]["contributionStatus"] == "PENDING" {
        app.decide_newest_contribution(&root.token, "verifyContribution", None)
            .await;
    }
    let cast = Cast {
        ana: ana.token,
        bob: bob.token,
    };
    (current_entry(app).await.id, cast)
}

/// The niche's one current entry.
async fn current_entry(app: &TestApp) -> knowledge_entries::Model {
    knowledge_entries::Entity::find()
        .filter(knowledge_entries::Column::Status.eq(KnowledgeStatus::Current))
        .one(&app.db)
        .await
        .expect("read")
        .expect("a current entry")
}

/// How many corrections there are, and how many correction contributions.
async fn filed(app: &TestApp) -> (u64, u64) {
    let corrections = knowledge_corrections::Entity::find()
        .count(&app.db)
        .await
        .expect("count");
    let contributions = contribution_events::Entity::find()
        .filter(contribution_events::Column::Source.eq("correction"))
        .count(&app.db)
        .await
        .expect("count");
    (corrections, contributions)
}

const PROPOSE: &str = r#"mutation($input: KnowledgeCorrectionInput!) {
  proposeKnowledgeCorrection(input: $input) { id optionId answer alreadyPending }
}"#;

/// Propose a correction of `entry` as `token`; the whole response.
async fn propose(
    app: &TestApp,
    token: &str,
    entry: i64,
    option: Option<&str>,
    answer: Option<&str>,
    note: Option<&str>,
) -> Value {
    app.graphql(
        Some(token),
        PROPOSE,
        json!({"input": {"entryId": entry.to_string(), "optionId": option, "answer": answer, "note": note}}),
    )
    .await
}

on_both_backends!(
    the_correction_under_review_is_read_by_admins_only,
    two_proposals_at_once_file_one_correction,
    a_correction_that_is_no_change_or_names_no_option_or_is_too_long_is_refused_and_files_nothing,
    a_search_finds_a_paraphrase_and_quotes_and_minus_still_narrow,
);

const REVIEW_READ: &str = r#"query($id: ID!) {
  correctionReview(contributionId: $id) { proposedBy note optionChanged answerChanged entry { id } }
}"#;

/// What the admin's card reads: the proposal beside its entry, for admins only; a malformed id
/// is refused, and a contribution that is not a correction reads as nothing.
async fn the_correction_under_review_is_read_by_admins_only(app: TestApp) {
    let (entry, Cast { bob, .. }) = scene_with_cast(&app).await;
    let root = person(&app.db, "lee", true).await;
    let filed = propose(&app, &bob, entry, Some("full"), None, Some(NOTE)).await;
    assert!(filed["errors"].is_null(), "{filed}");
    let contribution = contribution_events::Entity::find()
        .filter(contribution_events::Column::Source.eq("correction"))
        .one(&app.db)
        .await
        .expect("read")
        .expect("the correction's contribution");
    let id = contribution.id.to_string();

    let read = app
        .graphql(Some(&root.token), REVIEW_READ, json!({"id": id}))
        .await;
    assert!(read["errors"].is_null(), "{read}");
    assert_eq!(
        read["data"]["correctionReview"],
        json!({"proposedBy": "bob", "note": NOTE, "optionChanged": true,
               "answerChanged": false, "entry": {"id": entry.to_string()}})
    );
    // The proposer and other members may not read the review card.
    let refused = app
        .graphql(Some(&bob), REVIEW_READ, json!({"id": id}))
        .await;
    assert_eq!(
        askloop_tests::error_code(&refused),
        Some("FORBIDDEN"),
        "{refused}"
    );
    let signed_out = app.graphql(None, REVIEW_READ, json!({"id": id})).await;
    assert!(
        signed_out["data"]["correctionReview"].is_null(),
        "{signed_out}"
    );
    assert!(signed_out["errors"].is_array(), "{signed_out}");
    // Not an id; an answer's contribution, which is not a correction.
    let malformed = app
        .graphql(Some(&root.token), REVIEW_READ, json!({"id": "seven"}))
        .await;
    assert_eq!(
        askloop_tests::error_code(&malformed),
        Some("BAD_USER_INPUT"),
        "{malformed}"
    );
    let answer = contribution_events::Entity::find()
        .filter(contribution_events::Column::Source.ne("correction"))
        .one(&app.db)
        .await
        .expect("read")
        .expect("the answer's contribution");
    let none = app
        .graphql(
            Some(&root.token),
            REVIEW_READ,
            json!({"id": answer.id.to_string()}),
        )
        .await;
    assert!(none["errors"].is_null(), "{none}");
    assert!(none["data"]["correctionReview"].is_null(), "{none}");
}

/// A double click or two tabs: two proposals of one person at once file one correction and one
/// contribution; both answers name it, one saying it was already waiting. Another person's
/// proposal is their own.
async fn two_proposals_at_once_file_one_correction(app: TestApp) {
    let (entry, Cast { ana, bob }) = scene_with_cast(&app).await;
    let (one, two) = tokio::join!(
        propose(&app, &bob, entry, Some("full"), Some(NEW_WORDS), Some(NOTE)),
        propose(&app, &bob, entry, Some("full"), Some(NEW_WORDS), Some(NOTE)),
    );
    assert!(one["errors"].is_null(), "{one}");
    assert!(two["errors"].is_null(), "{two}");
    let (one, two) = (
        &one["data"]["proposeKnowledgeCorrection"],
        &two["data"]["proposeKnowledgeCorrection"],
    );
    assert_eq!(one["id"], two["id"], "{one} {two}");
    let mut pending = [one["alreadyPending"].clone(), two["alreadyPending"].clone()];
    pending.sort_by_key(|v| v.as_bool());
    assert_eq!(pending, [json!(false), json!(true)]);
    assert_eq!(filed(&app).await, (1, 1));
    // The option may be named by its label; another person files their own.
    let by_label = propose(&app, &ana, entry, Some("1.0"), None, None).await;
    assert!(by_label["errors"].is_null(), "{by_label}");
    assert_eq!(
        by_label["data"]["proposeKnowledgeCorrection"]["optionId"],
        "full"
    );
    assert_eq!(filed(&app).await, (2, 2));
}

/// Refused in sentences, nothing filed: an option the question does not offer (by id or by
/// label), the entry's own option and words (no change), nothing at all, words or a note over
/// their caps.
async fn a_correction_that_is_no_change_or_names_no_option_or_is_too_long_is_refused_and_files_nothing(
    app: TestApp,
) {
    let (entry, Cast { bob, .. }) = scene_with_cast(&app).await;
    let too_long = "x".repeat(8001);
    let long_note = "y".repeat(2001);
    for (option, answer, note, says) in [
        (
            Some("nope"),
            None,
            None,
            "“nope” is not one of the question's options.",
        ),
        (
            Some("June edition"),
            Some(NEW_WORDS),
            None,
            "“June edition” is not one of the question's options.",
        ),
        (
            Some("ea"),
            None,
            Some(NOTE),
            "The correction changes nothing: choose another option, change the words, or both.",
        ),
        (
            Some("Early access"),
            Some(OLD_WORDS),
            None,
            "The correction changes nothing: choose another option, change the words, or both.",
        ),
        (
            None,
            Some("   "),
            Some(NOTE),
            "The correction changes nothing: choose another option, change the words, or both.",
        ),
        (
            None,
            Some(too_long.as_str()),
            None,
            "The corrected answer is longer than 8000 characters.",
        ),
        (
            Some("full"),
            None,
            Some(long_note.as_str()),
            "The note is longer than 2000 characters.",
        ),
    ] {
        let refused = propose(&app, &bob, entry, option, answer, note).await;
        assert_eq!(
            askloop_tests::error_code(&refused),
            Some("BAD_USER_INPUT"),
            "{option:?} {refused}"
        );
        let message = refused["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{option:?}: {message}");
    }
    assert_eq!(filed(&app).await, (0, 0));
}

const SEARCH: &str = r#"query($search: String) {
  knowledge(nicheSlug: "games", search: $search) { edges { node { id } } }
}"#;

/// The page's search as a member sends it: any of the plain words finds the entry (a
/// paraphrase), a quoted phrase the entry lacks or a `-word` it holds narrows it away.
async fn a_search_finds_a_paraphrase_and_quotes_and_minus_still_narrow(app: TestApp) {
    let (entry, Cast { bob, .. }) = scene_with_cast(&app).await;
    let found = |body: &Value| -> Vec<String> {
        assert!(body["errors"].is_null(), "{body}");
        body["data"]["knowledge"]["edges"]
            .as_array()
            .map(|edges| {
                edges
                    .iter()
                    .filter_map(|e| e["node"]["id"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    for (search, finds) in [
        ("what date should a launch list use for storefronts", true),
        ("launch calendar", true),
        ("\"storefronts show it first\" launch", true),
        ("\"storefronts hide it\" launch", false),
        ("launch -storefronts", false),
        ("calendar -\"early access\"", false),
        ("banana smoothie", false),
    ] {
        let body = app
            .graphql(Some(&bob), SEARCH, json!({ "search": search }))
            .await;
        let ids = found(&body);
        assert_eq!(
            ids.contains(&entry.to_string()),
            finds,
            "{search:?} found {ids:?}"
        );
    }
}

/// `/dashboard/niches/games/knowledge/:id`.
fn entry_path(id: i64) -> String {
    format!("/dashboard/niches/games/knowledge/{id}")
}

const FORM: &str = "document.querySelector('section.correction')";
const PREVIEW: &str = "document.querySelector('section.correction-preview')";
const SEND: &str = "document.querySelector('[data-action=send-correction]')";

/// Open the preview of the form as it is and wait for it.
async fn preview(browser: &mut Browser) {
    browser
        .click("document.querySelector('[data-action=preview-correction]')")
        .await;
    browser
        .wait_for(PREVIEW, "the proposed version's preview")
        .await;
}

/// Choose the correction's option `value` and write `words`.
async fn change(browser: &mut Browser, value: &str, words: &str) {
    browser
        .click(&format!(
            "document.querySelector('input[name=correction-option][value={value:?}]')"
        ))
        .await;
    browser
        .fill("document.querySelector('#correction-answer')", words)
        .await;
}

/// The card of question `id` in the queue.
fn card(id: i64) -> String {
    format!("document.querySelector('article.question:not(.done)[data-question-id=\"{id}\"]')")
}

/// The whole loop in one browser: bob corrects the option and the words (after a refused "no
/// change"), double-clicks send (one filed), sends again (nothing filed, said so); root reviews
/// the correction side by side and verifies it; bob then sees "Use this answer" name the new
/// option on a new question, undoes it (nothing sent), uses it on another and the agent receives
/// the new option with the new words; a question without that option cannot use it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrected_option_is_previewed_reviewed_side_by_side_and_reused_with_its_words() {
    pages::require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    let entry = scene(&app).await;
    let mut browser = signed_in(&app, "bob", &entry_path(entry)).await;
    browser
        .wait_for(
            &format!(
                "{FORM} && document.querySelector('#correction-answer').value === {OLD_WORDS:?}"
            ),
            "the correction form, starting from the current version",
        )
        .await;

    // Nothing changed: refused beside the form, nothing filed.
    browser
        .click("document.querySelector('[data-action=preview-correction]')")
        .await;
    browser
        .wait_for(
            "document.querySelector('#correction-problem [role=alert]')?.textContent.startsWith('The correction changes nothing')",
            "the refusal of a correction that changes nothing",
        )
        .await;
    assert_eq!(browser.eval(&format!("!!{PREVIEW}")).await, json!(false));

    // Another option and other words: the whole proposed version, before anything is sent.
    change(&mut browser, "full", NEW_WORDS).await;
    browser
        .fill(&labelled("Why (for the reviewer; optional)"), NOTE)
        .await;
    preview(&mut browser).await;
    let option = browser
        .text(&format!(
            "{PREVIEW}.querySelector('[data-fact=proposed-option]')"
        ))
        .await;
    assert_eq!(option, "1.0 (changed)");
    let words = browser
        .text(&format!(
            "{PREVIEW}.querySelector('[data-fact=proposed-answer]')"
        ))
        .await;
    assert!(words.contains(NEW_WORDS), "{words}");
    assert_eq!(filed(&app).await, (0, 0), "a preview sends nothing");
    for (width, height, mobile) in [(1280, 900, false), (390, 844, true)] {
        browser.viewport(width, height, mobile).await;
        let what = format!("the correction's preview at {width} px");
        assert_no_sideways_scroll(&mut browser, &what).await;
        assert_accessible(&mut browser, &what).await;
    }
    browser.viewport(1280, 900, false).await;

    // A double click files one.
    browser
        .eval(&format!(
            "(() => {{ const b = {SEND}; b.click(); b.click(); return true; }})()"
        ))
        .await;
    browser
        .wait_for(
            "document.querySelector('.correction-outcome [role=status]')?.textContent.startsWith('Proposed.')",
            "the correction proposed",
        )
        .await;
    assert_eq!(filed(&app).await, (1, 1));
    // The form starts again from the current version.
    assert_eq!(
        browser
            .eval(&format!(
                "[document.querySelector('#correction-answer').value, document.querySelector('input[name=correction-option]:checked')?.value, !!{PREVIEW}]"
            ))
            .await,
        json!([OLD_WORDS, "ea", false])
    );

    // Sending again while it waits files nothing, and says so.
    change(&mut browser, "full", "Yet other words for the same change.").await;
    preview(&mut browser).await;
    browser.click(SEND).await;
    browser
        .wait_for(
            "document.querySelector('.correction-outcome [data-already-pending]')",
            "the notice that a correction already waits",
        )
        .await;
    assert_eq!(filed(&app).await, (1, 1));

    // The admin reviews it side by side.
    let contribution = contribution_events::Entity::find()
        .filter(contribution_events::Column::Source.eq("correction"))
        .one(&app.db)
        .await
        .expect("read")
        .expect("the correction's contribution")
        .id
        .to_string();
    Header(&mut browser).sign_out().await;
    browser
        .wait_for("location.pathname === '/login'", "the login page")
        .await;
    sign_in_to(&mut browser, &app, "root", "/admin").await;
    let item = pages::AdminPage::review_item(&contribution);
    let compare = format!("{item}?.querySelector('table.correction-compare')");
    browser
        .wait_for(&compare, "the correction's side-by-side comparison")
        .await;
    let marked = browser
        .eval(&format!(
            "(() => {{ const t = {compare}; const all = s => [...t.querySelectorAll(s)].map(e => e.textContent.replace(/\\[(removed|added): |\\]/g, '').trim()).join(' | '); \
             return [all('tr[data-row=option] del'), all('tr[data-row=option] ins'), all('tr[data-row=answer] del'), all('tr[data-row=answer] ins'), \
               t.querySelector('[data-proposed=option]').textContent.replace(/\\[added: |\\]/g, '').trim()]; }})()"
        ))
        .await;
    assert_eq!(marked[0], "Early access", "{marked}");
    assert_eq!(marked[1], "1.0", "{marked}");
    assert_eq!(marked[4], "1.0 changed", "{marked}");
    let (removed, added) = (
        marked[2].as_str().unwrap_or_default(),
        marked[3].as_str().unwrap_or_default(),
    );
    assert!(removed.contains("storefronts show it first."), "{marked}");
    assert!(
        added.contains("full release") && added.contains("preview."),
        "{marked}"
    );
    assert!(
        !removed.contains("Count") && !added.contains("Count"),
        "an unchanged word is marked: {marked}"
    );
    let card_text = browser.text(&item).await;
    assert!(card_text.contains(NOTE), "{card_text}");
    assert!(
        card_text.contains("bob proposes a correction"),
        "{card_text}"
    );
    assert!(
        !card_text.contains("entryId"),
        "raw evidence shown: {card_text}"
    );
    assert_eq!(
        browser
            .eval(&format!(
                "{item}.querySelector('[data-entry-link]').getAttribute('href')"
            ))
            .await,
        json!(entry_path(entry))
    );
    for (width, height, mobile) in [(1280, 900, false), (390, 844, true)] {
        browser.viewport(width, height, mobile).await;
        let what = format!("a correction's review card at {width} px");
        assert_no_sideways_scroll(&mut browser, &what).await;
        assert_accessible(&mut browser, &what).await;
        browser
            .eval(&format!("{item}.scrollIntoView(); true"))
            .await;
        browser
            .screenshot(&format!("review-correction-{width}"))
            .await;
    }
    browser.viewport(1280, 900, false).await;
    browser
        .click(&format!("{item}.querySelector('[data-action=verify]')"))
        .await;
    browser
        .wait_for(
            "document.querySelector('.review-said [role=status]')?.textContent.startsWith(\"bob's correction — Verified: the correction is now the entry's current version\")",
            "the verdict's words for a correction",
        )
        .await;
    let corrected = current_entry(&app).await;
    assert_eq!(
        (
            corrected.option_id.as_deref(),
            corrected.option_label.as_deref(),
            corrected.answer.as_deref(),
            corrected.version
        ),
        (Some("full"), Some("1.0"), Some(NEW_WORDS), 2),
        "the new version holds the new option and words together"
    );

    // Reuse: named option, Undo sends nothing, then the agent receives both together.
    let undone = ask(&app, "q-2", date_options()).await;
    let used = ask(&app, "q-3", date_options()).await;
    let other = ask(
        &app,
        "q-4",
        json!([{"id": "june", "label": "June edition"}, {"id": "feb", "label": "February edition"}]),
    )
    .await;
    Header(&mut browser).sign_out().await;
    browser
        .wait_for("location.pathname === '/login'", "the login page")
        .await;
    sign_in_to(
        &mut browser,
        &app,
        "bob",
        "/dashboard/niches/games/questions",
    )
    .await;
    let block = |id: i64| format!("{}?.querySelector('section.already-answered')", card(id));

    QueuePage(&mut browser).open(other).await;
    browser
        .wait_for(
            &format!("{}?.querySelector('[data-cannot-use]')", block(other)),
            "an entry whose option this question does not offer",
        )
        .await;
    assert_eq!(
        browser
            .eval(&format!(
                "!!{}.querySelector('[data-kind=from_knowledge]')",
                block(other)
            ))
            .await,
        json!(false),
        "\"Use this answer\" is offered where the option does not fit"
    );

    QueuePage(&mut browser).open(undone).await;
    let use_it = |id: i64| format!("{}?.querySelector('[data-kind=from_knowledge]')", block(id));
    browser
        .wait_for(
            &use_it(undone),
            "\"Use this answer\" on the second question",
        )
        .await;
    assert_eq!(
        browser
            .text(&format!(
                "{}.querySelector('[data-receives]')",
                block(undone)
            ))
            .await,
        "The agent will receive the option 1.0 with these words."
    );
    browser.click(&use_it(undone)).await;
    let undo = |id: i64| format!("{}?.querySelector('.held button.undo')", card(id));
    browser
        .wait_for(&undo(undone), "the held reuse's Undo")
        .await;
    browser.click(&undo(undone)).await;
    browser
        .wait_for(&format!("!{}", undo(undone)), "the reuse undone")
        .await;

    // Held after the undone one, this one is sent when its ten seconds pass: once its answer
    // exists, the undone one's time has passed too.
    QueuePage(&mut browser).open(used).await;
    browser
        .wait_for(&use_it(used), "\"Use this answer\" on the third question")
        .await;
    browser.click(&use_it(used)).await;
    browser
        .wait_for(&undo(used), "the third question's held reuse")
        .await;
    assert!(
        answers_to(&app, used).await.is_empty(),
        "sent before its ten seconds"
    );
    browser
        .wait_for(
            &format!("!{}", card(used)),
            "the settled question's card to go",
        )
        .await;
    let answers = answers_to(&app, used).await;
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0].option_id.as_deref(), Some("full"));
    assert_eq!(answers[0].knowledge_entry_id, Some(corrected.id));
    assert!(
        answers_to(&app, undone).await.is_empty(),
        "the undone reuse was sent"
    );
    let told: Vec<Value> = app
        .events_for_agent("expert_answer.created")
        .await
        .into_iter()
        .filter(|p| p["questionId"] == json!(used))
        .collect();
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(
        (
            &told[0]["optionId"],
            &told[0]["optionLabel"],
            &told[0]["answer"]
        ),
        (&json!("full"), &json!("1.0"), &json!(NEW_WORDS)),
        "{told:?}"
    );
}

/// The answers stored for question `id`.
async fn answers_to(app: &TestApp, id: i64) -> Vec<agent_answers::Model> {
    agent_answers::Entity::find()
        .filter(agent_answers::Column::QuestionId.eq(id))
        .all(&app.db)
        .await
        .expect("read")
}

/// On the page: a paraphrase finds the entry, the search is in the address and a reload keeps
/// it, and a search that finds nothing says so once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_knowledge_page_finds_a_paraphrase_and_keeps_the_search_in_the_address() {
    pages::require_built_dashboard();
    let app = TestApp::spawn(Backend::Sqlite).await.expect("an app");
    scene(&app).await;
    let mut browser = signed_in(&app, "bob", "/dashboard/niches/games/knowledge").await;
    let search = labelled("Search the knowledge");
    browser.wait_for(&search, "the search box").await;
    let count = |words: &str| {
        format!(
            "document.querySelector('.result-count')?.textContent.trim() === {}",
            serde_json::to_string(words).unwrap_or_default()
        )
    };
    browser
        .fill(&search, "what should the launch calendar use")
        .await;
    browser
        .wait_for(
            &format!(
                "{} && new URLSearchParams(location.search).get('q') === 'what should the launch calendar use'",
                count("1 entry found")
            ),
            "the paraphrase's entry, and the search in the address",
        )
        .await;
    assert_eq!(
        browser
            .eval("[...document.querySelectorAll('ol.knowledge-list li a')].map(a => a.textContent.trim())")
            .await,
        json!([TITLE])
    );
    browser.reload().await;
    browser
        .wait_for(
            &format!(
                "{} && document.querySelector('#knowledge-search').value === 'what should the launch calendar use'",
                count("1 entry found")
            ),
            "the search kept by a reload",
        )
        .await;
    browser.fill(&search, "launch -storefronts").await;
    browser
        .wait_for(&count("No entries match"), "nothing found")
        .await;
    assert_eq!(
        browser
            .eval("document.body.innerText.split('No entries match').length - 1")
            .await,
        json!(1),
        "\"No entries match\" is said once"
    );
    for (width, height, mobile) in [(1280, 900, false), (390, 844, true)] {
        browser.viewport(width, height, mobile).await;
        let what = format!("the knowledge search at {width} px");
        assert_no_sideways_scroll(&mut browser, &what).await;
        assert_accessible(&mut browser, &what).await;
    }
}
