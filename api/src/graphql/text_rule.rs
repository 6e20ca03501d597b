//! The one text rule on GraphQL (docs/security.md#text): before anything runs, every string an
//! operation hands a resolver — each argument written in the document, each variable's value
//! where an argument uses it, each variable's default, at any depth of lists and input objects —
//! is checked against [`TextKind::Lines`]. A string with NUL, another C0 control character than
//! tab and line breaks, or DEL refuses the whole request with `BAD_USER_INPUT`, naming the
//! argument as the library does (`input.body`, `niches[2]`), so no resolver, and no database,
//! ever sees one. The check reads the document, not the schema: a field or argument added later
//! is covered without being listed anywhere, and the schema keeps its plain `String`s.
//!
//! One-line texts (names, URLs, addresses) refuse tab and line breaks too; their parsers say so,
//! since only they know which texts are one line.

use std::sync::Arc;

use async_graphql::extensions::{Extension, ExtensionContext, ExtensionFactory, NextParseQuery};
use async_graphql::parser::types::{Directive, ExecutableDocument, Selection, SelectionSet};
use async_graphql::parser::{Pos, Positioned};
use async_graphql::{ErrorExtensions, Name, ServerResult, Variables};
use async_graphql_value::{ConstValue, Value};

use crate::domain::text::{ControlCharacter, TextKind};
use crate::error::ServiceError;

/// The extension that applies the rule on a schema.
pub struct TextRule;

impl ExtensionFactory for TextRule {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(TextRuleExtension)
    }
}

struct TextRuleExtension;

#[async_graphql::async_trait::async_trait]
impl Extension for TextRuleExtension {
    async fn parse_query(
        &self,
        ctx: &ExtensionContext<'_>,
        query: &str,
        variables: &Variables,
        next: NextParseQuery<'_>,
    ) -> ServerResult<ExecutableDocument> {
        let document = next.run(ctx, query, variables).await?;
        match first_refused(&document, variables) {
            Ok(()) => Ok(document),
            Err((refused, pos)) => Err(ServiceError::from(refused).extend().into_server_error(pos)),
        }
    }
}

/// A refused string, and where in the document the argument (or default) holding it is.
type Refusal = (ControlCharacter, Pos);

/// The first string in `document` (with `variables` where its arguments use them) that the
/// rule refuses. Every operation and every fragment is read, run or not: a refused string
/// anywhere in the request refuses it.
pub fn first_refused(document: &ExecutableDocument, variables: &Variables) -> Result<(), Refusal> {
    let walk = Walk { variables };
    for (_, operation) in document.operations.iter() {
        let operation = &operation.node;
        for definition in &operation.variable_definitions {
            let definition = &definition.node;
            if let Some(default) = &definition.default_value {
                let mut path = format!("${}", definition.name.node);
                if let Some(character) = walk.constant(&mut path, &default.node) {
                    return Err((refusal(path, character), default.pos));
                }
            }
            walk.directives(&definition.directives)?;
        }
        walk.directives(&operation.directives)?;
        walk.selections(&operation.selection_set.node)?;
    }
    for fragment in document.fragments.values() {
        walk.directives(&fragment.node.directives)?;
        walk.selections(&fragment.node.selection_set.node)?;
    }
    Ok(())
}

fn refusal(field: String, character: char) -> ControlCharacter {
    ControlCharacter {
        field,
        character,
        kind: TextKind::Lines,
    }
}

fn refused_in(text: &str) -> Option<char> {
    text.chars().find(|&c| TextKind::Lines.refuses(c))
}

struct Walk<'a> {
    variables: &'a Variables,
}

impl Walk<'_> {
    fn selections(&self, set: &SelectionSet) -> Result<(), Refusal> {
        for item in &set.items {
            match &item.node {
                Selection::Field(field) => {
                    self.arguments(&field.node.arguments)?;
                    self.directives(&field.node.directives)?;
                    self.selections(&field.node.selection_set.node)?;
                }
                Selection::FragmentSpread(spread) => self.directives(&spread.node.directives)?,
                Selection::InlineFragment(inline) => {
                    self.directives(&inline.node.directives)?;
                    self.selections(&inline.node.selection_set.node)?;
                }
            }
        }
        Ok(())
    }

    fn directives(&self, directives: &[Positioned<Directive>]) -> Result<(), Refusal> {
        directives
            .iter()
            .try_for_each(|directive| self.arguments(&directive.node.arguments))
    }

    fn arguments(
        &self,
        arguments: &[(Positioned<Name>, Positioned<Value>)],
    ) -> Result<(), Refusal> {
        for (name, value) in arguments {
            let mut path = name.node.to_string();
            if let Some(character) = self.value(&mut path, &value.node) {
                return Err((refusal(path, character), value.pos));
            }
        }
        Ok(())
    }

    /// The first refused character in `value`, `path` left naming where it is.
    fn value(&self, path: &mut String, value: &Value) -> Option<char> {
        match value {
            Value::String(text) => refused_in(text),
            // A variable the request does not give takes its default, checked on its own.
            Value::Variable(name) => self
                .variables
                .get(name)
                .and_then(|given| self.constant(path, given)),
            Value::List(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, item)| descend(path, &format!("[{i}]"), |p| self.value(p, item))),
            Value::Object(fields) => fields.iter().find_map(|(key, item)| {
                descend(path, &format!(".{}", key.escape_default()), |p| {
                    refused_in(key).or_else(|| self.value(p, item))
                })
            }),
            _ => None,
        }
    }

    /// [`Walk::value`] for a value with no variables in it (a variable's, or a default).
    fn constant(&self, path: &mut String, value: &ConstValue) -> Option<char> {
        match value {
            ConstValue::String(text) => refused_in(text),
            ConstValue::List(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, item)| descend(path, &format!("[{i}]"), |p| self.constant(p, item))),
            ConstValue::Object(fields) => fields.iter().find_map(|(key, item)| {
                descend(path, &format!(".{}", key.escape_default()), |p| {
                    refused_in(key).or_else(|| self.constant(p, item))
                })
            }),
            _ => None,
        }
    }
}

/// `look` with `step` added to `path`; the step stays only when something was found there.
fn descend(
    path: &mut String,
    step: &str,
    look: impl FnOnce(&mut String) -> Option<char>,
) -> Option<char> {
    let len = path.len();
    path.push_str(step);
    let found = look(path);
    if found.is_none() {
        path.truncate(len);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(query: &str, variables: serde_json::Value) -> Option<(String, char)> {
        let document = async_graphql::parser::parse_query(query).expect("a query");
        let variables = Variables::from_json(variables);
        first_refused(&document, &variables)
            .err()
            .map(|(refused, _)| (refused.field, refused.character))
    }

    #[test]
    fn a_refused_character_is_named_by_the_argument_that_carries_it() {
        let answer = "mutation($input: AnswerInput!) { answerQuestion(input: $input) { points } }";
        assert_eq!(
            refused(
                answer,
                serde_json::json!({"input": {"questionId": "1", "body": "a\u{0}b"}})
            ),
            Some(("input.body".to_owned(), '\u{0}'))
        );
        assert_eq!(
            refused(
                r#"mutation { setAgentNiches(slug: "a", niches: ["ok", "b\u0001"]) { slug } }"#,
                serde_json::json!({})
            ),
            Some(("niches[1]".to_owned(), '\u{1}'))
        );
        assert_eq!(
            refused(
                "query($s: String = \"x\\u007f\") { niche(slug: $s) { slug } }",
                serde_json::json!({})
            ),
            Some(("$s".to_owned(), '\u{7f}'))
        );
        assert_eq!(
            refused(
                "query($s: String!) { ...F } fragment F on Query { niche(slug: $s) { slug } }",
                serde_json::json!({"s": "\u{1b}[31m"})
            ),
            Some(("slug".to_owned(), '\u{1b}'))
        );
    }

    #[test]
    fn tabs_line_breaks_and_every_other_character_pass() {
        let answer = "mutation($input: AnswerInput!) { answerQuestion(input: $input) { points } }";
        let body = "line one\r\n\tline two é 🦀 \u{85}\u{2028}";
        assert_eq!(
            refused(
                answer,
                serde_json::json!({"input": {"questionId": "1", "body": body}})
            ),
            None
        );
        // A variable the operation does not use reaches no resolver; validation refuses it.
        assert_eq!(
            refused(
                "query { viewer { handle } }",
                serde_json::json!({"x": "\u{0}"})
            ),
            None
        );
    }
}
