//! The hash chain of a knowledge export (docs/contract.md#knowledge): JSON lines, each carrying
//! `prevHash` (the line before's `hash`; 64 zeros on the first) and `hash`, the SHA-256 of the
//! line's canonical form without `hash` — its keys sorted at every depth, no spaces. A changed
//! line no longer hashes to its `hash`; a removed or moved one breaks the next line's
//! `prevHash`; the last line's `hash` is the head, which names the whole file.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The `prevHash` of the first line.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// `value` written canonically: object keys sorted at every depth, no insignificant spaces.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn digest(record: &Map<String, Value>) -> String {
    hex::encode(Sha256::digest(
        canonical(&Value::Object(record.clone())).as_bytes(),
    ))
}

/// Seals records one after another, so a long export is written as it is read.
#[derive(Debug, Clone)]
pub struct Sealer {
    previous: String,
}

impl Default for Sealer {
    fn default() -> Self {
        Self {
            previous: GENESIS.to_owned(),
        }
    }
}

impl Sealer {
    /// The next line: `record` with `prevHash` and `hash`, canonical.
    pub fn line(&mut self, mut record: Map<String, Value>) -> String {
        record.remove("hash");
        record.insert("prevHash".into(), Value::String(self.previous.clone()));
        let hash = digest(&record);
        record.insert("hash".into(), Value::String(hash.clone()));
        self.previous = hash;
        canonical(&Value::Object(record))
    }

    /// The hash of the last line sealed: the head.
    pub fn head(&self) -> &str {
        &self.previous
    }
}

/// Chain `records` in order: each gains `prevHash` and `hash`; the lines, canonical, one each.
pub fn seal(records: impl IntoIterator<Item = Map<String, Value>>) -> Vec<String> {
    let mut sealer = Sealer::default();
    records.into_iter().map(|r| sealer.line(r)).collect()
}

/// Where a chain breaks: the line (1-based) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {why}")]
pub struct Break {
    /// The first line that does not hold.
    pub line: usize,
    /// Why it does not.
    pub why: String,
}

/// What a whole, unbroken chain is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// How many lines it has.
    pub lines: usize,
    /// The last line's hash (the genesis hash for an empty file).
    pub head: String,
}

/// Check `text`, a sealed export, line by line; the first line that does not hold names the
/// break. A final newline is allowed; an empty line elsewhere is a break.
pub fn verify(text: &str) -> Result<Verified, Break> {
    let mut previous = GENESIS.to_owned();
    let body = text.strip_suffix('\n').unwrap_or(text);
    if body.is_empty() {
        return Ok(Verified {
            lines: 0,
            head: previous,
        });
    }
    let mut count = 0;
    for (index, line) in body.split('\n').enumerate() {
        let at = |why: &str| Break {
            line: index + 1,
            why: why.to_owned(),
        };
        let Ok(parsed @ Value::Object(_)) = serde_json::from_str::<Value>(line) else {
            return Err(at("not a JSON object"));
        };
        // Only the canonical form is hashed, so only it is accepted: a key written twice (a
        // reader keeping the first would read text the chain never covered), other spacing,
        // key order or escapes are all a line that is not what its hash says.
        if canonical(&parsed) != line {
            return Err(at(
                "it is not in canonical form (a key written twice, or spacing, key order or \
                 escapes changed)",
            ));
        }
        let Value::Object(mut record) = parsed else {
            return Err(at("not a JSON object"));
        };
        let Some(Value::String(hash)) = record.remove("hash") else {
            return Err(at("no hash"));
        };
        match record.get("prevHash") {
            Some(Value::String(prev)) if *prev == previous => {}
            Some(Value::String(_)) => {
                return Err(at(
                    "its prevHash is not the line before's hash (a line was removed, added or moved)",
                ));
            }
            _ => return Err(at("no prevHash")),
        }
        if digest(&record) != hash {
            return Err(at(
                "its content does not hash to its hash (the line was changed)",
            ));
        }
        previous = hash;
        count += 1;
    }
    Ok(Verified {
        lines: count,
        head: previous,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn records() -> Vec<Map<String, Value>> {
        (1..=3)
            .map(|n| match json!({"entryId": n, "answer": format!("answer {n}"), "z": {"b": 1, "a": [2, 1]}}) {
                Value::Object(map) => map,
                _ => unreachable!("an object"),
            })
            .collect()
    }

    #[test]
    fn a_sealed_chain_verifies_and_names_its_head() {
        let lines = seal(records());
        let text = lines.join("\n") + "\n";
        let verified = verify(&text).expect("whole");
        assert_eq!(verified.lines, 3);
        let last: Value = serde_json::from_str(&lines[2]).expect("JSON");
        assert_eq!(last["hash"], verified.head.as_str());
        let first: Value = serde_json::from_str(&lines[0]).expect("JSON");
        assert_eq!(first["prevHash"], GENESIS);
        // Canonical: keys sorted at every depth.
        assert!(
            lines[0].starts_with(r#"{"answer":"answer 1","entryId":1,"hash":"#),
            "{}",
            lines[0]
        );
        assert!(
            lines[0].contains(r#""z":{"a":[2,1],"b":1}"#),
            "{}",
            lines[0]
        );
        assert_eq!(verify("").expect("empty").head, GENESIS);
    }

    #[test]
    fn a_changed_removed_or_moved_line_is_named() {
        let lines = seal(records());
        let changed = lines[1].replace("answer 2", "answer X");
        let text = [lines[0].clone(), changed, lines[2].clone()].join("\n");
        assert_eq!(verify(&text).expect_err("changed").line, 2);
        let removed = [lines[0].clone(), lines[2].clone()].join("\n");
        assert_eq!(verify(&removed).expect_err("removed").line, 2);
        let moved = [lines[1].clone(), lines[0].clone(), lines[2].clone()].join("\n");
        assert_eq!(verify(&moved).expect_err("moved").line, 1);
        let broken = [lines[0].clone(), "{not json".into()].join("\n");
        assert_eq!(verify(&broken).expect_err("not JSON").line, 2);
        // One byte anywhere in a line breaks that line.
        for at in 0..lines[2].len() {
            let mut bytes = lines[2].clone().into_bytes();
            bytes[at] ^= 0x01;
            let Ok(line) = String::from_utf8(bytes) else {
                continue;
            };
            let text = [lines[0].clone(), lines[1].clone(), line].join("\n");
            assert_eq!(verify(&text).map_err(|b| b.line), Err(3), "byte {at}");
        }
    }

    #[test]
    fn a_line_with_a_key_written_twice_or_not_canonical_is_refused() {
        let lines = seal(records());
        // The first value of a key written twice would be read by a reader that keeps the
        // first; the last (the one hashed) by serde_json. Either way the line is refused.
        let smuggled = lines[1].replacen('{', r#"{"answer":"SMUGGLED","#, 1);
        let text = [lines[0].clone(), smuggled, lines[2].clone()].join("\n");
        let refused = verify(&text).expect_err("a key written twice");
        assert_eq!(refused.line, 2);
        assert!(refused.why.contains("canonical"), "{}", refused.why);
        // The same content with a space, or its keys in another order, is not what was hashed.
        let spaced = lines[0].replacen(':', ": ", 1);
        assert_eq!(verify(&spaced).expect_err("spaced").line, 1);
        let escaped = lines[0].replacen("answer 1", r"\u0061nswer 1", 1);
        assert_eq!(verify(&escaped).expect_err("escaped").line, 1);
    }
}
