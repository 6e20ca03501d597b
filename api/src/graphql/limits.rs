//! How much one GraphQL operation may ask for (docs/contract.md#graphql), checked before a
//! resolver runs:
//!
//! - **Nodes.** What a query could return, counted by async-graphql's complexity with the
//!   [`page`] and [`list`] costs that askloop's list fields declare: a field with `first` counts
//!   its page size times its selection, a list without a page argument counts
//!   [`ASSUMED_LIST_LEN`] items, every other field 1; nested pages multiply. Over
//!   `ASKLOOP_GRAPHQL_MAX_NODES` is `QUERY_TOO_COMPLEX`.
//! - **Selections.** Fields and fragment spreads, each fragment counted wherever it is spread:
//!   at most [`MAX_SELECTIONS`]. Counted here in linear time, with each fragment measured once,
//!   before the library walks the document, since its walks spread fragments afresh each time
//!   and a few lines of fragments spreading each other twice would keep them busy for seconds.
//! - **Depth.** At most [`MAX_DEPTH`] levels outside introspection. `__schema` and `__type` have
//!   their own bounds, [`MAX_INTROSPECTION_DEPTH`] levels and [`MAX_INTROSPECTION_LISTS`] nested
//!   lists: exactly what the standard introspection query needs (graphql-js's
//!   `getIntrospectionQuery`, which tools such as GraphiQL send), and no more, so introspection
//!   cannot be nested into an answer that grows with the schema's size to a power.
//!
//! Every refusal carries its code (`QUERY_TOO_DEEP`, `QUERY_TOO_COMPLEX`).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextPrepareRequest, NextValidation,
};
use async_graphql::parser::types::{
    DocumentOperations, ExecutableDocument, Field, Selection, SelectionSet,
};
use async_graphql::{Request, ServerError, ServerResult, ValidationResult, Value};

use super::error_door::{TOO_COMPLEX, TOO_DEEP};
use crate::service::questions::queue::{DEFAULT_PAGE, MAX_PAGE};

/// How deep a query may nest, outside introspection.
pub const MAX_DEPTH: usize = 12;
/// How deep introspection may nest: the standard introspection query's own depth (`__schema`,
/// `types`, `fields`, `args`, `type`, nine `ofType` and `name`).
pub const MAX_INTROSPECTION_DEPTH: usize = 15;
/// How many introspection lists may nest on one path: the standard query's `types`, `fields`,
/// `args`. A fourth (`types { fields { type { fields … } } }`) multiplies the answer once more by
/// the schema's size, and is refused.
pub const MAX_INTROSPECTION_LISTS: usize = 3;
/// How many fields and fragment spreads a query may select, each fragment counted wherever it is
/// spread.
pub const MAX_SELECTIONS: usize = 2_000;
/// How many nodes a query may return when `ASKLOOP_GRAPHQL_MAX_NODES` is unset (a setting, so
/// it lives in `config`).
pub use crate::config::DEFAULT_MAX_NODES;
/// How many items a list without a page argument is counted as (`niches`, `members`,
/// `answers`, `timeline`, `attempts`, …).
pub const ASSUMED_LIST_LEN: usize = DEFAULT_PAGE as usize;

/// The cost one field can reach: far past any limit, and low enough that adding up every field a
/// query can select never overflows.
const COST_CAP: usize = 1 << 40;

/// The cost of a field that returns a page of up to `first` items (the default page when
/// omitted), each costing `child_complexity`. A `first` outside 1..=100 is refused by the
/// resolver; here it is counted as its nearest bound.
pub fn page(first: Option<i32>, child_complexity: usize) -> usize {
    let size = first.map_or(DEFAULT_PAGE, |n| {
        u64::try_from(n).unwrap_or(0).min(MAX_PAGE)
    });
    items(
        usize::try_from(size).unwrap_or(usize::MAX),
        child_complexity,
    )
}

/// The cost of a list without a page argument: [`ASSUMED_LIST_LEN`] items.
pub fn list(child_complexity: usize) -> usize {
    items(ASSUMED_LIST_LEN, child_complexity)
}

fn items(count: usize, child_complexity: usize) -> usize {
    count
        .saturating_mul(child_complexity)
        .saturating_add(1)
        .min(COST_CAP)
}

/// The introspection fields that return lists.
const INTROSPECTION_LISTS: &[&str] = &[
    "types",
    "directives",
    "fields",
    "args",
    "inputFields",
    "interfaces",
    "possibleTypes",
    "enumValues",
];

fn is_introspection_root(name: &str) -> bool {
    name == "__schema" || name == "__type"
}

/// What a selection set asks for, relative to where it sits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shape {
    /// The most levels on one path outside introspection.
    pub depth: usize,
    /// The most levels on one path through `__schema` or `__type`.
    pub introspection_depth: usize,
    /// The most introspection lists nested on one path below `__schema` or `__type`.
    pub introspection_lists: usize,
    /// Fields and fragment spreads, each fragment counted wherever it is spread (saturating).
    pub selections: usize,
    /// The most fields named like introspection lists on one path; counted as lists once the
    /// path turns out to be under `__schema` or `__type` (a fragment on `__Type` does not know).
    named_lists: usize,
}

impl Shape {
    fn beside(self, other: Shape) -> Shape {
        Shape {
            depth: self.depth.max(other.depth),
            introspection_depth: self.introspection_depth.max(other.introspection_depth),
            introspection_lists: self.introspection_lists.max(other.introspection_lists),
            selections: self.selections.saturating_add(other.selections),
            named_lists: self.named_lists.max(other.named_lists),
        }
    }

    /// The shape of `field`, given the shape of its selection set.
    fn of_field(field: &Field, below: Shape) -> Shape {
        let name = field.name.node.as_str();
        let named_lists = below.named_lists + usize::from(INTROSPECTION_LISTS.contains(&name));
        let selections = below.selections.saturating_add(1);
        if is_introspection_root(name) {
            Shape {
                depth: 0,
                introspection_depth: 1 + below.depth.max(below.introspection_depth),
                introspection_lists: below.named_lists.max(below.introspection_lists),
                selections,
                named_lists,
            }
        } else {
            Shape {
                depth: 1 + below.depth,
                introspection_depth: if below.introspection_depth > 0 {
                    1 + below.introspection_depth
                } else {
                    0
                },
                introspection_lists: below.introspection_lists,
                selections,
                named_lists,
            }
        }
    }
}

/// How many selection sets and fragment spreads the measure follows on one path before it stops:
/// far past what the limits allow (the library refuses past 32), and shallow enough that a chain
/// of thousands of fragments each spreading the next cannot exhaust the stack.
const MAX_NESTING: usize = 64;

/// Measures a document, each fragment once.
struct Measure<'a> {
    document: &'a ExecutableDocument,
    measured: HashMap<&'a str, Shape>,
    measuring: HashSet<&'a str>,
    /// Selection sets and spreads entered on the current path.
    nesting: usize,
    /// Whether some path went past [`MAX_NESTING`] (and was cut short there).
    overflowed: bool,
}

impl<'a> Measure<'a> {
    fn selection_set(&mut self, set: &'a SelectionSet) -> Shape {
        if self.nesting >= MAX_NESTING {
            self.overflowed = true;
            return Shape::default();
        }
        self.nesting += 1;
        let shape = self.items(set);
        self.nesting -= 1;
        shape
    }

    fn items(&mut self, set: &'a SelectionSet) -> Shape {
        set.items.iter().fold(Shape::default(), |shape, item| {
            let part = match &item.node {
                Selection::Field(field) => {
                    let below = self.selection_set(&field.node.selection_set.node);
                    Shape::of_field(&field.node, below)
                }
                Selection::FragmentSpread(spread) => {
                    let mut part = self.fragment(spread.node.fragment_name.node.as_str());
                    part.selections = part.selections.saturating_add(1);
                    part
                }
                Selection::InlineFragment(inline) => {
                    self.selection_set(&inline.node.selection_set.node)
                }
            };
            shape.beside(part)
        })
    }

    fn fragment(&mut self, name: &'a str) -> Shape {
        if let Some(shape) = self.measured.get(name) {
            return *shape;
        }
        // An unknown fragment or a cycle is validation's to refuse; it adds nothing here.
        let Some(fragment) = self.document.fragments.get(name) else {
            return Shape::default();
        };
        if !self.measuring.insert(name) {
            return Shape::default();
        }
        let shape = self.selection_set(&fragment.node.selection_set.node);
        self.measuring.remove(name);
        self.measured.insert(name, shape);
        shape
    }
}

/// The shape of every operation in `document` together (the request preparation first cuts a
/// document of several operations down to the one it runs, when the request names it).
pub fn measure(document: &ExecutableDocument) -> Shape {
    let mut measure = Measure {
        document,
        measured: HashMap::new(),
        measuring: HashSet::new(),
        nesting: 0,
        overflowed: false,
    };
    let mut shape = document
        .operations
        .iter()
        .fold(Shape::default(), |shape, (_, operation)| {
            shape.beside(measure.selection_set(&operation.node.selection_set.node))
        });
    if measure.overflowed {
        shape.depth = shape.depth.max(MAX_NESTING);
    }
    shape
}

/// A document of several named operations, cut down to the one `operation_name` runs (with
/// every fragment), so that it alone is measured and validated: the others are never run, and
/// the library would otherwise evaluate their arguments with the run operation's variables
/// ("Variable first is not defined" for a `$first` only another operation declares). `None`
/// when there is nothing to cut (one operation, no name, or a name the document lacks — the
/// library then answers "Unknown operation").
fn only_the_operation_run(
    document: &ExecutableDocument,
    operation_name: Option<&str>,
) -> Option<ExecutableDocument> {
    let (DocumentOperations::Multiple(operations), Some(name)) =
        (&document.operations, operation_name)
    else {
        return None;
    };
    if operations.len() < 2 {
        return None;
    }
    let (name, operation) = operations.get_key_value(name)?;
    // The fragments it spreads, directly or through other fragments: a fragment left unused
    // would fail validation.
    // A selection nested past what measuring walks is not cut: the whole document then goes
    // to `measure`, which refuses it.
    let mut wanted = Vec::new();
    spreads_of(&operation.node.selection_set.node, &mut wanted, 0)?;
    let mut fragments = HashMap::new();
    while let Some(fragment) = wanted.pop() {
        if fragments.contains_key(&fragment) {
            continue;
        }
        if let Some(definition) = document.fragments.get(&fragment) {
            spreads_of(&definition.node.selection_set.node, &mut wanted, 0)?;
            fragments.insert(fragment, definition.clone());
        }
    }
    Some(ExecutableDocument {
        operations: DocumentOperations::Multiple(
            std::iter::once((name.clone(), operation.clone())).collect(),
        ),
        fragments,
    })
}

/// The names of the fragments `set` spreads, at any depth of its own (not through them);
/// `None` when it nests deeper than [`MAX_NESTING`]: the walk is recursive, and although the
/// parser already refuses selections nested past 64 levels, the walk does not rely on it.
fn spreads_of(
    set: &SelectionSet,
    found: &mut Vec<async_graphql::Name>,
    nesting: usize,
) -> Option<()> {
    if nesting > MAX_NESTING {
        return None;
    }
    for selection in &set.items {
        match &selection.node {
            Selection::Field(field) => {
                spreads_of(&field.node.selection_set.node, found, nesting + 1)?;
            }
            Selection::FragmentSpread(spread) => {
                found.push(spread.node.fragment_name.node.clone());
            }
            Selection::InlineFragment(inline) => {
                spreads_of(&inline.node.selection_set.node, found, nesting + 1)?;
            }
        }
    }
    Some(())
}

fn refusal(message: String, code: &'static str, limit: usize) -> ServerError {
    let mut error = ServerError::new(message, None);
    let extensions = error.extensions.get_or_insert_with(Default::default);
    extensions.set("code", Value::from(code));
    extensions.set("limit", Value::from(limit));
    error
}

/// The refusal `shape` earns, if any.
pub fn check(shape: &Shape) -> Result<(), ServerError> {
    if shape.depth > MAX_DEPTH {
        return Err(refusal(
            format!("Query is nested too deep: at most {MAX_DEPTH} levels."),
            TOO_DEEP,
            MAX_DEPTH,
        ));
    }
    if shape.introspection_depth > MAX_INTROSPECTION_DEPTH {
        return Err(refusal(
            format!("Introspection is nested too deep: at most {MAX_INTROSPECTION_DEPTH} levels."),
            TOO_DEEP,
            MAX_INTROSPECTION_DEPTH,
        ));
    }
    if shape.introspection_lists > MAX_INTROSPECTION_LISTS {
        return Err(refusal(
            format!(
                "Introspection nests too many lists: at most {MAX_INTROSPECTION_LISTS} on one path."
            ),
            TOO_DEEP,
            MAX_INTROSPECTION_LISTS,
        ));
    }
    if shape.selections > MAX_SELECTIONS {
        return Err(refusal(
            format!(
                "Query is too complex: at most {MAX_SELECTIONS} fields and fragment spreads, \
                 each fragment counted wherever it is spread."
            ),
            TOO_COMPLEX,
            MAX_SELECTIONS,
        ));
    }
    Ok(())
}

/// The extension that applies these limits; `max_nodes` is also the schema's complexity limit.
pub struct QueryLimits {
    max_nodes: usize,
    parsed: Arc<ParsedQueries>,
}

impl QueryLimits {
    /// The limits, with `max_nodes` (`ASKLOOP_GRAPHQL_MAX_NODES`).
    pub fn new(max_nodes: usize) -> Self {
        Self {
            max_nodes,
            parsed: Arc::default(),
        }
    }
}

impl ExtensionFactory for QueryLimits {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(QueryLimitsExtension {
            max_nodes: self.max_nodes,
            parsed: self.parsed.clone(),
        })
    }
}

struct QueryLimitsExtension {
    max_nodes: usize,
    parsed: Arc<ParsedQueries>,
}

/// The most query texts [`ParsedQueries`] keeps; when full, it starts over.
pub const PARSED_QUERIES: usize = 256;

/// The longest query text [`ParsedQueries`] keeps.
pub const PARSED_QUERY_BYTES: usize = 16 * 1024;

/// Documents already parsed, by query text. Clients send the same few texts again and again
/// (the dashboard's queries, every subscriber's card selection): each is parsed once, and a
/// request gets a copy. A copy is smaller than a fresh parse, too — its lists are exactly as
/// long as they need to be and its names are shared — which matters for a subscription, whose
/// document lives as long as it does.
#[derive(Default)]
struct ParsedQueries(std::sync::Mutex<HashMap<String, ExecutableDocument>>);

impl ParsedQueries {
    fn get(&self, query: &str) -> Option<ExecutableDocument> {
        self.0.lock().ok()?.get(query).cloned()
    }

    fn keep(&self, query: &str, document: &ExecutableDocument) {
        if query.len() > PARSED_QUERY_BYTES {
            return;
        }
        if let Ok(mut kept) = self.0.lock() {
            if kept.len() >= PARSED_QUERIES {
                kept.clear();
            }
            kept.insert(query.to_owned(), document.clone());
        }
    }
}

#[async_graphql::async_trait::async_trait]
impl Extension for QueryLimitsExtension {
    /// Parse here, measure, and hand the parsed document on (so it is not parsed twice). A
    /// query that does not parse goes on unparsed: the library's parse refuses it, with its code.
    async fn prepare_request(
        &self,
        ctx: &ExtensionContext<'_>,
        mut request: Request,
        next: NextPrepareRequest<'_>,
    ) -> ServerResult<Request> {
        let name = request.operation_name.clone();
        let (document, fresh) = match self.parsed.get(&request.query) {
            Some(document) => (document, false),
            None => match request.parsed_query() {
                // The copy, not the parse, goes on: see `ParsedQueries`.
                Ok(document) => (document.clone(), true),
                // Not parsed again here: the library refuses it, with its code.
                Err(_) => return next.run(ctx, request).await,
            },
        };
        let selected = only_the_operation_run(&document, name.as_deref());
        check(&measure(selected.as_ref().unwrap_or(&document)))?;
        // Only a document within the limits is kept: refused ones would let a client fill the
        // keeper with documents askloop never runs.
        if fresh {
            self.parsed.keep(&request.query, &document);
        }
        request.set_parsed_query(selected.unwrap_or(document));
        next.run(ctx, request).await
    }

    /// The library words its complexity refusal without numbers; say which limit it was.
    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        next.run(ctx).await.map_err(|errors| {
            errors
                .into_iter()
                .map(|error| {
                    if error.message == super::error_door::LIBRARY_TOO_COMPLEX {
                        refusal(
                            format!(
                                "Query could return more than {} nodes: a field with `first` \
                                 counts its page size ({DEFAULT_PAGE} when omitted) times its \
                                 selection, a list without `first` counts {ASSUMED_LIST_LEN} \
                                 items, and nested pages multiply.",
                                self.max_nodes
                            ),
                            TOO_COMPLEX,
                            self.max_nodes,
                        )
                    } else {
                        error
                    }
                })
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_graphql::parser::parse_query;

    fn shape(query: &str) -> Shape {
        measure(&parse_query(query).expect("parses"))
    }

    #[test]
    fn a_kept_document_is_the_parse_and_the_keeper_stays_bounded() {
        let kept = ParsedQueries::default();
        let query = "query Card($slug: String!) { questionQueue(nicheSlug: $slug) { kind } }";
        let parsed = parse_query(query).expect("parses");
        assert!(kept.get(query).is_none());
        kept.keep(query, &parsed);
        let copy = kept.get(query).expect("kept");
        assert_eq!(
            format!("{copy:?}"),
            format!("{parsed:?}"),
            "the same document"
        );
        assert_eq!(measure(&copy).selections, measure(&parsed).selections);

        // Too long a text is not kept.
        let long = format!("{{ a }}{}", " ".repeat(PARSED_QUERY_BYTES));
        kept.keep(&long, &parse_query(&long).expect("parses"));
        assert!(kept.get(&long).is_none());

        // Full, it starts over rather than grow.
        for i in 0..PARSED_QUERIES {
            let text = format!("{{ a{i} }}");
            kept.keep(&text, &parse_query(&text).expect("parses"));
            assert!(kept.0.lock().expect("lock").len() <= PARSED_QUERIES);
        }
        assert!(
            kept.get("{ a0 }").is_none(),
            "the oldest went when it filled"
        );
        assert!(
            kept.get(&format!("{{ a{} }}", PARSED_QUERIES - 1))
                .is_some()
        );
    }

    #[test]
    fn depth_counts_fields_outside_introspection_only() {
        let s = shape("{ a { b { c } } __schema { types { fields { name } } } }");
        assert_eq!(s.depth, 3);
        assert_eq!(s.introspection_depth, 4);
        assert_eq!(s.introspection_lists, 2);
        assert_eq!(s.selections, 7);
    }

    #[test]
    fn fragments_count_wherever_they_are_spread_and_are_measured_once() {
        let s = shape(
            "query { ...B ...B } fragment B on Query { ...A ...A } fragment A on Query { x { y } }",
        );
        // Each spread of B: 1 + (2 spreads of A: 2 × (1 + 2 fields)).
        assert_eq!(s.selections, 2 * (1 + 2 * 3));
        assert_eq!(s.depth, 2);
        let mut bomb = String::from("query { ...F40 } fragment F0 on Query { x }");
        for i in 1..=40 {
            bomb.push_str(&format!(
                " fragment F{i} on Query {{ ...F{p} ...F{p} }}",
                p = i - 1
            ));
        }
        let started = std::time::Instant::now();
        let s = shape(&bomb);
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert!(s.selections > MAX_SELECTIONS);
        assert!(check(&s).is_err());
    }

    #[test]
    fn a_fragment_on_an_introspection_type_counts_its_lists_under_introspection_only() {
        let s = shape(
            "{ __type(name: \"Query\") { ...T } } fragment T on __Type { fields { type { fields { type { fields { name } } } } } }",
        );
        assert_eq!(s.introspection_lists, 3);
        let s = shape(
            "{ __schema { types { ...T } } } fragment T on __Type { fields { type { fields { name } } } }",
        );
        assert_eq!(s.introspection_lists, 3);
        let s = shape(
            "{ __schema { types { ...T } } } fragment T on __Type { fields { type { fields { type { fields { name } } } } } }",
        );
        assert_eq!(s.introspection_lists, 4);
        assert!(check(&s).is_err());
    }

    #[test]
    fn a_long_chain_of_fragments_is_cut_short_and_refused() {
        let mut chain = String::from("query { ...F0 }");
        for i in 0..5_000 {
            chain.push_str(&format!(" fragment F{i} on Query {{ ...F{} }}", i + 1));
        }
        chain.push_str(" fragment F5000 on Query { x }");
        // On a thread with a small stack, as a runtime's worker has.
        let s = std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn(move || shape(&chain))
            .expect("a thread")
            .join()
            .expect("measured without running out of stack");
        assert!(s.depth > MAX_DEPTH);
        assert!(check(&s).is_err());
    }

    #[test]
    fn the_operation_run_keeps_only_the_fragments_it_spreads() {
        let document = async_graphql::parser::parse_query(
            "query A { ...Used } query B { ...Other } \
             fragment Used on Query { ...Deeper } fragment Deeper on Query { x } \
             fragment Other on Query { y }",
        )
        .expect("parses");
        let cut = only_the_operation_run(&document, Some("A")).expect("cut to A");
        assert_eq!(cut.operations.iter().count(), 1);
        let mut kept: Vec<&str> = cut.fragments.keys().map(|name| name.as_str()).collect();
        kept.sort_unstable();
        assert_eq!(kept, ["Deeper", "Used"]);
        assert!(only_the_operation_run(&document, None).is_none());
        assert!(only_the_operation_run(&document, Some("Missing")).is_none());
    }

    #[test]
    fn a_cycle_or_an_unknown_fragment_is_left_to_validation() {
        let s =
            shape("{ ...A ...Nope } fragment A on Query { x ...B } fragment B on Query { ...A }");
        assert!(s.selections >= 1);
    }

    #[test]
    fn page_and_list_costs_multiply_and_stay_bounded() {
        assert_eq!(page(None, 2), 1 + 20 * 2);
        assert_eq!(page(Some(100), 3), 301);
        assert_eq!(page(Some(1_000_000), 3), 301);
        assert_eq!(page(Some(-5), 3), 1);
        assert_eq!(list(2), 41);
        assert_eq!(page(Some(100), usize::MAX), COST_CAP);
    }
}
