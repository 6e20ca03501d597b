//! `cargo xtask layers`: the check that keeps `api/src`'s layer order true.
//!
//! It parses every file under `api/src` with `syn`, collects every path that names another part
//! of the crate (`use crate::…` including grouped trees, `crate::…`, `super::…` and `self::…`
//! paths in code, and the same inside macro bodies, read token by token), and builds the graph
//! of file-level modules (`service::outbox`, `live::adopt`). It reports every cycle between
//! modules and every import that points up the layer order, each with file:line and the rule it
//! breaks. The layers and what each may import are `LAYERS` and `may_import` below, and they are
//! the rule list of `docs/architecture.md` ("Layers"); this check is what enforces it.
//!
//! Code under `#[cfg(test)]` is left out: a unit test may build its fixtures from anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// Where a module sits; the order of the main column is top (assembly) to bottom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    Assembly,
    Transports,
    RequestContext,
    Services,
    RulesAndData,
    Infrastructure,
    Background,
    PlainValues,
}

impl Layer {
    fn name(self) -> &'static str {
        match self {
            Layer::Assembly => "assembly",
            Layer::Transports => "transports",
            Layer::RequestContext => "request context",
            Layer::Services => "services",
            Layer::RulesAndData => "rules and data",
            Layer::Infrastructure => "infrastructure",
            Layer::Background => "background",
            Layer::PlainValues => "plain values",
        }
    }

    /// The rank in the main column (higher is further up); side columns have none.
    fn rank(self) -> Option<u8> {
        match self {
            Layer::Assembly => Some(5),
            Layer::Transports => Some(4),
            Layer::RequestContext => Some(3),
            Layer::Services => Some(2),
            Layer::RulesAndData => Some(1),
            _ => None,
        }
    }
}

/// Which top-level module of `api/src` belongs to which layer (the table in
/// `docs/architecture.md`). A module missing here fails the check, so a new one gets a place.
pub const LAYERS: &[(&str, Layer)] = &[
    ("crate", Layer::Assembly),
    ("main", Layer::Assembly),
    ("cli", Layer::Assembly),
    ("startup", Layer::Assembly),
    ("net", Layer::Assembly),
    ("net::serve", Layer::Assembly),
    ("rest", Layer::Transports),
    ("graphql", Layer::Transports),
    ("mcp", Layer::Transports),
    ("a2a", Layer::Transports),
    ("net::security_headers", Layer::Transports),
    ("state", Layer::RequestContext),
    ("auth", Layer::RequestContext),
    ("net::login_throttle", Layer::RequestContext),
    ("net::admission", Layer::RequestContext),
    ("service", Layer::Services),
    ("error", Layer::Services),
    ("domain", Layer::RulesAndData),
    ("db", Layer::RulesAndData),
    ("net::client_address", Layer::RulesAndData),
    ("live", Layer::Infrastructure),
    ("live::socket", Layer::Transports),
    ("live::adopt", Layer::Transports),
    ("live::shared", Layer::Transports),
    ("outbound", Layer::Infrastructure),
    ("worker", Layer::Background),
    ("config", Layer::PlainValues),
    ("metrics", Layer::PlainValues),
    ("telemetry", Layer::PlainValues),
];

/// Whether a module of layer `from` may import one of layer `to`, and if not, the rule broken.
pub fn may_import(from: Layer, to: Layer) -> Result<(), &'static str> {
    use Layer::*;
    if from == to {
        return Ok(());
    }
    match (from, to) {
        // Plain values are read by everyone and read only the pure rules.
        (_, PlainValues) => Ok(()),
        (PlainValues, RulesAndData) => Ok(()),
        (PlainValues, _) => Err("plain values import only the pure rules and data"),
        // Infrastructure sits beside the services: anyone from the services up uses it, and it
        // reads only rules, data and plain values.
        (Infrastructure, RulesAndData) => Ok(()),
        (Infrastructure, _) => Err("infrastructure imports no service, transport or assembly"),
        (Assembly | Transports | RequestContext | Services | Background, Infrastructure) => Ok(()),
        (RulesAndData, Infrastructure) => Err("rules and data import no infrastructure"),
        // The workers are started by assembly, and run services.
        (Assembly, Background) => Ok(()),
        (_, Background) => Err("only assembly starts the background workers"),
        (Background, Services | RulesAndData) => Ok(()),
        (Background, _) => Err("background workers run services and nothing above them"),
        (_, Assembly) => Err("nothing below assembly imports startup or cli"),
        _ => match (from.rank(), to.rank()) {
            (Some(a), Some(b)) if a > b => Ok(()),
            _ => Err("dependencies point down: this import points up the layer order"),
        },
    }
}

/// The layer of a module path like `service::outbox`: the layer of its longest prefix in
/// [`LAYERS`] (`net::serve` is placed on its own; `service::outbox` by `service`).
fn layer_of(module: &str) -> Option<Layer> {
    LAYERS
        .iter()
        .filter(|(name, _)| {
            module == *name
                || module
                    .strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with("::"))
        })
        .max_by_key(|(name, _)| name.len())
        .map(|(_, layer)| *layer)
}

/// One reference from a module to another, where it is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub file: PathBuf,
    pub line: usize,
}

/// The module a file defines: `service/outbox.rs` is `service::outbox`, `lib.rs` is `crate`.
pub fn module_of(relative: &Path) -> String {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.last_mut()
        && let Some(stem) = last.strip_suffix(".rs")
    {
        *last = stem.to_owned();
    }
    if parts.as_slice() == ["lib"] {
        return "crate".to_owned();
    }
    if parts.last().is_some_and(|last| last == "mod") {
        parts.pop();
    }
    parts.join("::")
}

/// Collects the crate paths one file names.
struct Collector<'a> {
    /// The file-level module, as segments (empty for the crate root).
    module: Vec<String>,
    /// How deep inside inline `mod x { … }` blocks the visitor is.
    inline_depth: usize,
    /// Every path found, resolved to absolute segments, with its line.
    found: Vec<(Vec<String>, usize)>,
    /// The lines that name sea-orm's `EntityTrait`, without which no entity is read.
    entity_reads: Vec<usize>,
    _file: &'a Path,
}

impl Collector<'_> {
    /// Resolves a path's leading `crate`/`super`/`self` to absolute segments; `None` for a path
    /// that names another crate or a local item.
    fn resolve(&self, segments: &[String]) -> Option<Vec<String>> {
        let first = segments.first()?;
        match first.as_str() {
            "crate" => Some(segments[1..].to_vec()),
            "super" | "self" => {
                let mut base = self.module.clone();
                let mut depth = self.inline_depth;
                let mut rest = segments;
                while let Some(head) = rest.first() {
                    match head.as_str() {
                        "super" => {
                            if depth > 0 {
                                depth -= 1;
                            } else {
                                base.pop()?;
                            }
                        }
                        "self" => {}
                        _ => break,
                    }
                    rest = &rest[1..];
                }
                base.extend(rest.iter().cloned());
                Some(base)
            }
            _ => None,
        }
    }

    fn record(&mut self, segments: &[String], line: usize) {
        if segments.first().is_some_and(|s| s == "sea_orm")
            && segments.iter().any(|s| s == "EntityTrait")
        {
            self.entity_reads.push(line);
        }
        if let Some(absolute) = self.resolve(segments) {
            self.found.push((absolute, line));
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, line: usize) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                self.use_tree(prefix, &path.tree, line);
                prefix.pop();
            }
            syn::UseTree::Name(name) => {
                prefix.push(name.ident.to_string());
                self.record(&prefix.clone(), line);
                prefix.pop();
            }
            syn::UseTree::Rename(rename) => {
                prefix.push(rename.ident.to_string());
                self.record(&prefix.clone(), line);
                prefix.pop();
            }
            syn::UseTree::Glob(_) => self.record(&prefix.clone(), line),
            syn::UseTree::Group(group) => {
                for item in &group.items {
                    let line = line_of(item_span(item)).max(line);
                    self.use_tree(prefix, item, line);
                }
            }
        }
    }

    /// Finds `crate :: a :: b` (and `super`/`self`) runs in a macro's tokens.
    fn tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut index = 0;
        while index < trees.len() {
            match &trees[index] {
                TokenTree::Group(group) => self.tokens(group.stream()),
                TokenTree::Ident(ident)
                    if matches!(ident.to_string().as_str(), "crate" | "super" | "self")
                        && is_path_separator(&trees, index + 1) =>
                {
                    let line = ident.span().start().line;
                    let mut segments = vec![ident.to_string()];
                    let mut next = index + 1;
                    while is_path_separator(&trees, next) {
                        match trees.get(next + 2) {
                            Some(TokenTree::Ident(part)) => {
                                segments.push(part.to_string());
                                next += 3;
                            }
                            _ => break,
                        }
                    }
                    self.record(&segments, line);
                    index = next;
                    continue;
                }
                _ => {}
            }
            index += 1;
        }
    }
}

fn is_path_separator(trees: &[TokenTree], at: usize) -> bool {
    matches!(
        (trees.get(at), trees.get(at + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == ':' && b.as_char() == ':'
    )
}

fn item_span(tree: &syn::UseTree) -> proc_macro2::Span {
    match tree {
        syn::UseTree::Path(path) => path.ident.span(),
        syn::UseTree::Name(name) => name.ident.span(),
        syn::UseTree::Rename(rename) => rename.ident.span(),
        syn::UseTree::Glob(glob) => glob.star_token.spans[0],
        syn::UseTree::Group(group) => group.brace_token.span.open(),
    }
}

fn line_of(span: proc_macro2::Span) -> usize {
    span.start().line
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .meta
                .require_list()
                .is_ok_and(|list| list.tokens.to_string() == "test")
    })
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if is_test_only(&item.attrs) {
            return;
        }
        let line = line_of(item.use_token.span);
        self.use_tree(&mut Vec::new(), &item.tree, line);
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if is_test_only(&item.attrs) {
            return;
        }
        if item.content.is_some() {
            self.inline_depth += 1;
            syn::visit::visit_item_mod(self, item);
            self.inline_depth -= 1;
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_test_only(&item.attrs) {
            syn::visit::visit_item_fn(self, item);
        }
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if !is_test_only(&item.attrs) {
            syn::visit::visit_item_impl(self, item);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if path.leading_colon.is_none() && segments.len() > 1 {
            let line = path.segments.first().map_or(0, |s| line_of(s.ident.span()));
            self.record(&segments, line);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }
}

/// The crate paths a file's source names, as absolute segments with their lines.
#[cfg(test)]
fn paths_in(source: &str, module: &str, file: &Path) -> anyhow::Result<Vec<(Vec<String>, usize)>> {
    Ok(collect(source, module, file)?.found)
}

/// What one file names: its crate paths and the lines where it reads an entity itself.
fn collect<'a>(source: &str, module: &str, file: &'a Path) -> anyhow::Result<Collector<'a>> {
    let parsed = syn::parse_file(source).with_context(|| format!("parsing {}", file.display()))?;
    let module = if module == "crate" {
        Vec::new()
    } else {
        module.split("::").map(str::to_owned).collect()
    };
    let mut collector = Collector {
        module,
        inline_depth: 0,
        found: Vec::new(),
        entity_reads: Vec::new(),
        _file: file,
    };
    collector.visit_file(&parsed);
    Ok(collector)
}

/// The module a resolved path lands in: its longest prefix that is a known module.
fn target_module(modules: &BTreeSet<String>, path: &[String]) -> Option<String> {
    (1..=path.len())
        .rev()
        .map(|len| path[..len].join("::"))
        .find(|candidate| modules.contains(candidate))
}

/// What the check found.
#[derive(Debug, Default)]
pub struct Report {
    pub modules: usize,
    pub edges: Vec<Edge>,
    pub cycles: Vec<Vec<String>>,
    pub upward: Vec<(Edge, &'static str)>,
    pub unplaced: Vec<String>,
    /// Transport files that read an entity through sea-orm themselves (file, line), where a
    /// service should: the same rule on every surface needs the read in the service.
    pub transport_reads: Vec<(PathBuf, usize)>,
}

/// Builds the report from each module's source (module name, file, text).
pub fn check(files: &[(String, PathBuf, String)]) -> anyhow::Result<Report> {
    let modules: BTreeSet<String> = files.iter().map(|(module, _, _)| module.clone()).collect();
    let mut edges = Vec::new();
    let mut transport_reads = Vec::new();
    for (module, file, source) in files {
        let collected = collect(source, module, file)?;
        if layer_of(module) == Some(Layer::Transports) {
            transport_reads.extend(
                collected
                    .entity_reads
                    .iter()
                    .map(|line| (file.clone(), *line)),
            );
        }
        for (path, line) in collected.found {
            let Some(to) = target_module(&modules, &path) else {
                continue;
            };
            // A file naming its own items, or the crate root (which only declares modules),
            // is no dependency.
            if &to == module || to == "crate" {
                continue;
            }
            let edge = Edge {
                from: module.clone(),
                to,
                file: file.clone(),
                line,
            };
            if !edges
                .iter()
                .any(|e: &Edge| e.from == edge.from && e.to == edge.to)
            {
                edges.push(edge);
            }
        }
    }
    let mut report = Report {
        modules: modules.len(),
        transport_reads,
        ..Report::default()
    };
    for module in &modules {
        if layer_of(module).is_none() {
            report.unplaced.push(module.clone());
        }
    }
    for edge in &edges {
        if let (Some(from), Some(to)) = (layer_of(&edge.from), layer_of(&edge.to))
            && let Err(rule) = may_import(from, to)
        {
            report.upward.push((edge.clone(), rule));
        }
    }
    report.cycles = cycles(&modules, &edges);
    report.edges = edges;
    Ok(report)
}

/// Every strongly connected group of two or more modules (Tarjan's algorithm), sorted.
fn cycles(modules: &BTreeSet<String>, edges: &[Edge]) -> Vec<Vec<String>> {
    let names: Vec<&String> = modules.iter().collect();
    let index_of: BTreeMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); names.len()];
    for edge in edges {
        next[index_of[edge.from.as_str()]].push(index_of[edge.to.as_str()]);
    }
    struct Walk<'a> {
        next: &'a [Vec<usize>],
        counter: usize,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        groups: Vec<Vec<usize>>,
    }
    impl Walk<'_> {
        fn visit(&mut self, v: usize) {
            self.index[v] = Some(self.counter);
            self.low[v] = self.counter;
            self.counter += 1;
            self.stack.push(v);
            self.on_stack[v] = true;
            for &w in &self.next[v] {
                match self.index[w] {
                    None => {
                        self.visit(w);
                        self.low[v] = self.low[v].min(self.low[w]);
                    }
                    Some(index) if self.on_stack[w] => self.low[v] = self.low[v].min(index),
                    Some(_) => {}
                }
            }
            if Some(self.low[v]) == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack[w] = false;
                    group.push(w);
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    self.groups.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        next: &next,
        counter: 0,
        index: vec![None; names.len()],
        low: vec![0; names.len()],
        stack: Vec::new(),
        on_stack: vec![false; names.len()],
        groups: Vec::new(),
    };
    for v in 0..names.len() {
        if walk.index[v].is_none() {
            walk.visit(v);
        }
    }
    let mut groups: Vec<Vec<String>> = walk
        .groups
        .into_iter()
        .map(|group| {
            let mut group: Vec<String> = group.into_iter().map(|i| names[i].clone()).collect();
            group.sort();
            group
        })
        .collect();
    groups.sort();
    groups
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// Runs the check on `<root>/api/src`, prints what it found and the summary, and fails on any
/// cycle, upward import or module without a layer.
pub fn run(root: &Path) -> anyhow::Result<()> {
    let src = root.join("api/src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths)?;
    paths.sort();
    let mut files = Vec::new();
    for path in paths {
        let relative = path.strip_prefix(&src).context("a file outside api/src")?;
        let source = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        files.push((
            module_of(relative),
            path.strip_prefix(root).unwrap_or(&path).to_path_buf(),
            source,
        ));
    }
    let report = check(&files)?;
    for module in &report.unplaced {
        println!(
            "layers: {module} has no layer (add it to xtask/src/layers.rs and docs/architecture.md)"
        );
    }
    for group in &report.cycles {
        println!("layers: cycle between {}", group.join(", "));
        for edge in report
            .edges
            .iter()
            .filter(|e| group.contains(&e.from) && group.contains(&e.to))
        {
            println!(
                "  {}:{}: {} -> {}",
                edge.file.display(),
                edge.line,
                edge.from,
                edge.to
            );
        }
    }
    for (edge, rule) in &report.upward {
        println!(
            "layers: {}:{}: {} ({}) -> {} ({}): {rule}",
            edge.file.display(),
            edge.line,
            edge.from,
            layer_of(&edge.from).map_or("?", Layer::name),
            edge.to,
            layer_of(&edge.to).map_or("?", Layer::name),
        );
    }
    for (file, line) in &report.transport_reads {
        println!(
            "layers: {}:{line}: a transport reads an entity itself (sea_orm::EntityTrait); ask a \
             service instead",
            file.display()
        );
    }
    println!(
        "layers: {} cycles, {} upward imports, {} entity reads in transports ({} modules, {} edges)",
        report.cycles.len(),
        report.upward.len(),
        report.transport_reads.len(),
        report.modules,
        report.edges.len()
    );
    if !report.cycles.is_empty()
        || !report.upward.is_empty()
        || !report.unplaced.is_empty()
        || !report.transport_reads.is_empty()
    {
        bail!("the layer order is broken (see docs/architecture.md, \"Layers\")");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(sources: &[(&str, &str)]) -> Vec<(String, PathBuf, String)> {
        sources
            .iter()
            .map(|(module, source)| {
                (
                    (*module).to_owned(),
                    PathBuf::from(format!("{}.rs", module.replace("::", "/"))),
                    (*source).to_owned(),
                )
            })
            .collect()
    }

    fn targets(module: &str, source: &str) -> Vec<String> {
        paths_in(source, module, Path::new("x.rs"))
            .unwrap()
            .into_iter()
            .map(|(path, _)| path.join("::"))
            .collect()
    }

    #[test]
    fn a_file_path_names_its_module() {
        assert_eq!(module_of(Path::new("service/outbox.rs")), "service::outbox");
        assert_eq!(module_of(Path::new("service.rs")), "service");
        assert_eq!(module_of(Path::new("lib.rs")), "crate");
    }

    #[test]
    fn grouped_use_trees_name_every_leaf() {
        let found = targets(
            "rest::intake",
            "use crate::{domain::intake, service::{outbox, queue::*}};",
        );
        assert_eq!(
            found,
            ["domain::intake", "service::outbox", "service::queue"]
        );
    }

    #[test]
    fn super_climbs_from_the_file_module_and_from_inline_modules() {
        assert_eq!(
            targets("service::outbox", "use super::agents::X;"),
            ["service::agents::X"]
        );
        let inline = "mod inner { fn f() { super::super::db::go(); } }";
        assert_eq!(targets("service::outbox", inline), ["service::db::go"]);
    }

    #[test]
    fn paths_in_code_and_in_macros_count() {
        let source =
            "fn f() { let x = crate::db::begin(); println!(\"{}\", crate::config::NAME); }";
        assert_eq!(targets("service::a", source), ["db::begin", "config::NAME"]);
    }

    #[test]
    fn test_only_code_is_left_out() {
        let source = "#[cfg(test)] mod tests { use crate::graphql::X; }";
        assert!(targets("service::a", source).is_empty());
    }

    #[test]
    fn a_cycle_is_reported_once_with_its_members() {
        let report = check(&files(&[
            ("service", ""),
            ("service::a", "use crate::service::b::X;"),
            ("service::b", "use crate::service::a::Y;"),
        ]))
        .unwrap();
        assert_eq!(report.cycles, [["service::a", "service::b"]]);
        assert!(report.upward.is_empty());
    }

    #[test]
    fn an_upward_import_is_reported_with_its_line_and_rule() {
        let report = check(&files(&[
            ("graphql", ""),
            ("service", ""),
            ("service::a", "\nuse crate::graphql::Schema;"),
        ]))
        .unwrap();
        let (edge, rule) = &report.upward[0];
        assert_eq!(
            (edge.from.as_str(), edge.to.as_str(), edge.line),
            ("service::a", "graphql", 2)
        );
        assert!(rule.contains("point"));
    }

    #[test]
    fn the_side_columns_keep_their_rules() {
        assert!(may_import(Layer::Infrastructure, Layer::Services).is_err());
        assert!(may_import(Layer::Services, Layer::Infrastructure).is_ok());
        assert!(may_import(Layer::Transports, Layer::Background).is_err());
        assert!(may_import(Layer::Assembly, Layer::Background).is_ok());
        assert!(may_import(Layer::PlainValues, Layer::Transports).is_err());
        assert!(may_import(Layer::RulesAndData, Layer::Services).is_err());
    }

    #[test]
    fn a_module_placed_on_its_own_wins_over_its_folder() {
        assert_eq!(layer_of("net::serve"), Some(Layer::Assembly));
        assert_eq!(layer_of("net::admission"), Some(Layer::RequestContext));
        assert_eq!(layer_of("net::client_address"), Some(Layer::RulesAndData));
        assert_eq!(layer_of("service::outbox"), Some(Layer::Services));
        assert_eq!(layer_of("network"), None, "a prefix is a whole segment");
    }

    #[test]
    fn a_transport_that_reads_an_entity_itself_is_named_and_a_service_may() {
        let read =
            "use sea_orm::EntityTrait;\nfn f() { let _ = <E as sea_orm::EntityTrait>::find(); }";
        let report =
            check(&files(&[("rest::views", read), ("service::outbox", read)])).expect("parsed");
        assert_eq!(
            report.transport_reads,
            vec![
                (PathBuf::from("rest/views.rs"), 1),
                (PathBuf::from("rest/views.rs"), 2)
            ]
        );
        let enum_value = "fn f() { let _ = sea_orm::ActiveEnum::to_value(&x); }";
        let report = check(&files(&[("graphql::knowledge", enum_value)])).expect("parsed");
        assert!(
            report.transport_reads.is_empty(),
            "a value conversion reads nothing"
        );
    }

    #[test]
    fn a_module_without_a_layer_is_named() {
        let report = check(&files(&[("newthing", "")])).unwrap();
        assert_eq!(report.unplaced, ["newthing"]);
    }
}
