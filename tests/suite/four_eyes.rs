//! Four eyes: nobody judges or settles their own work or money. An admin's own contribution is
//! reviewed by another admin, and a payout to an admin is verified and settled by another
//! (`FORBIDDEN`, reason `SELF_REVIEW`); nothing changes when it is refused.

use askloop_tests::answers::answer_input;
use askloop_tests::fixtures::open_niche;
use askloop_tests::people::{Person, member, person};
use askloop_tests::{TestApp, error_code, on_both_backends};
use entity::contribution_events::{self, ContributionStatus};
use entity::niche_members::{MemberRole, MemberStatus};
use sea_orm::EntityTrait;
use serde_json::{Value, json};

/// Two admins, `root` also an operator of `games`.
async fn two_admins_one_answering(app: &TestApp) -> (Person, Person) {
    open_niche(&app.db, "games").await;
    let root = person(&app.db, "root", true).await;
    member(
        &app.db,
        "games",
        &root,
        MemberRole::Operator,
        MemberStatus::Active,
    )
    .await;
    let other = person(&app.db, "root2", true).await;
    (root, other)
}

fn assert_self_review(body: &Value) {
    assert_eq!(error_code(body), Some("FORBIDDEN"), "{body}");
    assert_eq!(
        body["errors"][0]["extensions"]["reason"], "SELF_REVIEW",
        "{body}"
    );
}

async fn contribution(app: &TestApp) -> contribution_events::Model {
    contribution_events::Entity::find()
        .all(&app.db)
        .await
        .expect("query")
        .pop()
        .expect("a contribution")
}

async fn an_admin_reviews_nobody_elses_work_but_their_own_waits_for_another(app: TestApp) {
    let (root, other) = two_admins_one_answering(&app).await;
    let question = app.ask("games", "q-1").await;
    let answered = app
        .answer(
            &root.token,
            answer_input(question, "ANSWERED", Some("ea"), None),
        )
        .await;
    assert_eq!(
        answered["data"]["answerQuestion"]["contributionStatus"], "PENDING",
        "{answered}"
    );
    let id = json!({"id": contribution(&app).await.id.to_string()});
    for mutation in [
        "mutation($id: ID!) { verifyContribution(id: $id) { status } }",
        "mutation($id: ID!) { rejectContribution(id: $id) { status } }",
    ] {
        let refused = app.graphql(Some(&root.token), mutation, id.clone()).await;
        assert_self_review(&refused);
        assert_eq!(contribution(&app).await.status, ContributionStatus::Pending);
    }
    let verified = app
        .verify(&other.token, id["id"].as_str().expect("an id"))
        .await;
    assert_eq!(
        verified["data"]["verifyContribution"]["status"], "VERIFIED",
        "{verified}"
    );
    let reversed = app
        .graphql(
            Some(&root.token),
            "mutation($id: ID!) { reverseContribution(id: $id) { status } }",
            id,
        )
        .await;
    assert_self_review(&reversed);
    assert_eq!(
        contribution(&app).await.status,
        ContributionStatus::Verified
    );
}

async fn an_admin_does_not_adjust_their_own_score(app: TestApp) {
    let (root, other) = two_admins_one_answering(&app).await;
    let adjust = "mutation($h: String!) { adjustContribution(nicheSlug: \"games\", handle: $h, points: 50, note: \"helped\") { status } }";
    let refused = app
        .graphql(Some(&root.token), adjust, json!({"h": "root"}))
        .await;
    assert_self_review(&refused);
    assert!(
        contribution_events::Entity::find()
            .all(&app.db)
            .await
            .expect("query")
            .is_empty()
    );
    let adjusted = app
        .graphql(Some(&other.token), adjust, json!({"h": "root"}))
        .await;
    assert!(adjusted["errors"].is_null(), "{adjusted}");
}

async fn a_payout_to_an_admin_is_verified_and_settled_by_another(app: TestApp) {
    let (root, other) = two_admins_one_answering(&app).await;
    let event = json!({"nicheSlug": "games", "externalId": "inv-1", "sourceType": "usage",
        "grossMinor": 10_000, "currency": "USD"});
    let booked = app
        .post_signed("/api/v1/internal/revenue-events", &event.to_string())
        .await;
    assert_eq!(booked.status(), 201);
    let address = json!({"a": "IBAN DE99 9999"});
    let saved = app
        .graphql(
            Some(&root.token),
            "mutation($a: String!) { setPayoutAddress(address: $a) { verified } }",
            address.clone(),
        )
        .await;
    assert!(saved["errors"].is_null(), "{saved}");
    let verify =
        "mutation($a: String!) { verifyPayoutAddress(handle: \"root\", address: $a) { verified } }";
    assert_self_review(
        &app.graphql(Some(&root.token), verify, address.clone())
            .await,
    );
    let verified = app.graphql(Some(&other.token), verify, address).await;
    assert_eq!(
        verified["data"]["verifyPayoutAddress"]["verified"], true,
        "{verified}"
    );
    let scheduled = app
        .graphql(
            Some(&other.token),
            "mutation { schedulePayout(handle: \"root\") { id amountMinor } }",
            json!({}),
        )
        .await;
    let payout = scheduled["data"]["schedulePayout"]["id"].clone();
    assert!(payout.is_string(), "{scheduled}");
    let paid =
        "mutation($id: ID!) { markPayoutPaid(id: $id, externalReference: \"wire-1\") { status } }";
    let failed = "mutation($id: ID!) { markPayoutFailed(id: $id, reason: \"bounced\") { status } }";
    for mutation in [paid, failed] {
        let refused = app
            .graphql(Some(&root.token), mutation, json!({"id": payout}))
            .await;
        assert_self_review(&refused);
    }
    let done = app
        .graphql(Some(&other.token), paid, json!({"id": payout}))
        .await;
    assert_eq!(done["data"]["markPayoutPaid"]["status"], "PAID", "{done}");
}

on_both_backends!(
    an_admin_reviews_nobody_elses_work_but_their_own_waits_for_another,
    an_admin_does_not_adjust_their_own_score,
    a_payout_to_an_admin_is_verified_and_settled_by_another,
);
