//! The shared signing vectors (a copy of the contract's `signing.json`): every one must hold.

use askloop::domain::signing::{SigningKeys, sign};
use serde_json::Value;

fn vectors() -> Vec<Value> {
    let text = include_str!("../vectors/signing.json");
    let doc: Value = serde_json::from_str(text).expect("vectors parse");
    doc["vectors"]
        .as_array()
        .expect("a list of vectors")
        .clone()
}

#[test]
fn every_verification_vector_holds() {
    let mut checked = 0;
    for v in vectors().iter().filter(|v| v.get("header").is_some()) {
        let name = v["name"].as_str().unwrap_or("?");
        let keys = SigningKeys::new(Some(v["secret"].as_str().unwrap_or_default().into()), None);
        let outcome = keys.verify(
            Some(v["header"].as_str().unwrap_or_default()),
            v["body"].as_str().unwrap_or_default().as_bytes(),
            v["now"].as_i64().expect("now"),
        );
        if v["ok"].as_bool() == Some(true) {
            assert!(outcome.is_ok(), "vector {name}: {outcome:?}");
        } else {
            let reason = outcome.expect_err(name).to_string();
            assert_eq!(Some(reason.as_str()), v["reason"].as_str(), "vector {name}");
        }
        checked += 1;
    }
    assert!(
        checked >= 20,
        "only {checked} verification vectors were found"
    );
}

#[test]
fn every_signing_vector_produces_the_pinned_header() {
    let mut checked = 0;
    for v in vectors()
        .iter()
        .filter(|v| v.get("expect_header").is_some())
    {
        let header = sign(
            v["secret"].as_str().unwrap_or_default(),
            v["body"].as_str().unwrap_or_default().as_bytes(),
            v["sign_at"].as_i64().expect("sign_at"),
        );
        assert_eq!(
            Some(header.as_str()),
            v["expect_header"].as_str(),
            "{}",
            v["name"]
        );
        checked += 1;
    }
    assert!(checked >= 1);
}
