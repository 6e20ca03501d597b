//! One `login` per request. Aliases let one mutation select `login` many times, and each would
//! check a password: a way around the sign-in throttle and a cheap way to keep the password
//! hasher busy. An operation that selects `login` more than once (directly, through aliases or
//! through fragments, whether or not a directive would skip some) is refused whole, with
//! `BAD_USER_INPUT`, before anything runs — so no password is checked at all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextParseQuery, NextPrepareRequest,
};
use async_graphql::parser::types::{
    DocumentOperations, ExecutableDocument, OperationType, Selection, SelectionSet,
};
use async_graphql::{ErrorExtensions, Pos, Request, ServerError, ServerResult, Variables};

use crate::error::ServiceError;

/// The mutation field that signs in.
const LOGIN: &str = "login";

/// The extension that enforces the rule on a schema.
pub struct OneLoginPerRequest;

impl ExtensionFactory for OneLoginPerRequest {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(OneLoginExtension::default())
    }
}

/// One per request: it remembers which operation the request names until the query is parsed.
#[derive(Default)]
struct OneLoginExtension {
    operation_name: Mutex<Option<String>>,
}

#[async_graphql::async_trait::async_trait]
impl Extension for OneLoginExtension {
    async fn prepare_request(
        &self,
        ctx: &ExtensionContext<'_>,
        request: Request,
        next: NextPrepareRequest<'_>,
    ) -> ServerResult<Request> {
        let request = next.run(ctx, request).await?;
        if let Ok(mut name) = self.operation_name.lock() {
            name.clone_from(&request.operation_name);
        }
        Ok(request)
    }

    async fn parse_query(
        &self,
        ctx: &ExtensionContext<'_>,
        query: &str,
        variables: &Variables,
        next: NextParseQuery<'_>,
    ) -> ServerResult<ExecutableDocument> {
        let document = next.run(ctx, query, variables).await?;
        let name = self
            .operation_name
            .lock()
            .ok()
            .and_then(|name| name.clone());
        match logins_selected(&document, name.as_deref()) {
            (count, Some(pos)) if count > 1 => Err(refusal(count, pos)),
            _ => Ok(document),
        }
    }
}

fn refusal(count: usize, pos: Pos) -> ServerError {
    ServiceError::BadInput(format!(
        "sign in once per request: this operation selects login {count} times"
    ))
    .extend()
    .into_server_error(pos)
}

/// How many times the operation the request runs selects `login`, and where the second one is.
/// An operation that cannot be chosen (no such name, or several without a name) counts none:
/// the request fails later for that reason.
fn logins_selected(document: &ExecutableDocument, name: Option<&str>) -> (usize, Option<Pos>) {
    let operation = match (&document.operations, name) {
        (DocumentOperations::Single(operation), _) => Some(operation),
        (DocumentOperations::Multiple(operations), Some(name)) => operations.get(name),
        (DocumentOperations::Multiple(operations), None) if operations.len() == 1 => {
            operations.values().next()
        }
        (DocumentOperations::Multiple(_), None) => None,
    };
    let Some(operation) = operation else {
        return (0, None);
    };
    if operation.node.ty != OperationType::Mutation {
        return (0, None);
    }
    let mut counter = Counter {
        document,
        fragments: HashMap::new(),
    };
    let mut found = Vec::new();
    counter.collect(&operation.node.selection_set.node, &mut found);
    (found.len(), found.get(1).copied())
}

/// Counts `login` selections at the top of a mutation. `login` is a field of the mutation root
/// only, so the selections under a field are never looked into; fragments are, once each
/// (their logins are remembered), and a fragment that spreads itself counts nothing more (the
/// validation that follows refuses it).
struct Counter<'a> {
    document: &'a ExecutableDocument,
    /// The logins each fragment selects; `None` while it is being counted.
    fragments: HashMap<&'a str, Option<Vec<Pos>>>,
}

impl<'a> Counter<'a> {
    fn collect(&mut self, selections: &'a SelectionSet, found: &mut Vec<Pos>) {
        for selection in &selections.items {
            if found.len() > 1 {
                return;
            }
            match &selection.node {
                Selection::Field(field) => {
                    if field.node.name.node == LOGIN {
                        found.push(field.pos);
                    }
                }
                Selection::InlineFragment(inline) => {
                    self.collect(&inline.node.selection_set.node, found);
                }
                Selection::FragmentSpread(spread) => {
                    let name = spread.node.fragment_name.node.as_str();
                    found.extend(self.fragment(name));
                }
            }
        }
    }

    fn fragment(&mut self, name: &'a str) -> Vec<Pos> {
        if let Some(known) = self.fragments.get(name) {
            return known.clone().unwrap_or_default();
        }
        let Some(fragment) = self.document.fragments.get(name) else {
            return Vec::new();
        };
        self.fragments.insert(name, None);
        let mut inside = Vec::new();
        self.collect(&fragment.node.selection_set.node, &mut inside);
        // Two are enough to refuse: no need to remember more.
        inside.truncate(2);
        self.fragments.insert(name, Some(inside.clone()));
        inside
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(query: &str, name: Option<&str>) -> usize {
        let document = async_graphql::parser::parse_query(query).expect("a query");
        logins_selected(&document, name).0
    }

    #[test]
    fn logins_are_counted_through_aliases_and_fragments() {
        let one = "mutation { login(handle: \"a\", password: \"b\") { token } }";
        assert_eq!(count(one, None), 1);
        let aliased = "mutation { a: login(handle: \"a\", password: \"b\") { token } \
                       b: login(handle: \"a\", password: \"c\") { token } }";
        assert_eq!(count(aliased, None), 2);
        let spread = "mutation { ...L ...L } \
                      fragment L on Mutation { login(handle: \"a\", password: \"b\") { token } }";
        assert_eq!(count(spread, None), 2);
        let inline = "mutation { login(handle: \"a\", password: \"b\") { token } \
                      ... on Mutation { x: login(handle: \"a\", password: \"c\") { token } } }";
        assert_eq!(count(inline, None), 2);
        let skipped = "mutation { a: login(handle: \"a\", password: \"b\") @skip(if: true) { token } \
                       b: login(handle: \"a\", password: \"c\") { token } }";
        assert_eq!(count(skipped, None), 2);
        let looping = "mutation { ...L } fragment L on Mutation { ...L }";
        assert_eq!(count(looping, None), 0);
    }

    #[test]
    fn only_the_operation_that_runs_counts() {
        let two = "mutation A { login(handle: \"a\", password: \"b\") { token } } \
                   mutation B { login(handle: \"a\", password: \"c\") { token } }";
        assert_eq!(count(two, Some("A")), 1);
        assert_eq!(count(two, Some("B")), 1);
        assert_eq!(count(two, None), 0);
        let query = "query { login { token } }";
        assert_eq!(count(query, None), 0);
    }
}
