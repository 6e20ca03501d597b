//! Knowledge search queries (docs/contract.md#knowledge), written for each store's full-text
//! engine from what a person or a question says: pure, so every odd input is tested here.
//!
//! Two kinds of query:
//! - **Search** — what a person types in a search box, in web-search syntax on both stores:
//!   `"a phrase"`, `-word` (without it), `or` between two terms, every other word required.
//! - **Likes** — a question looking for entries like it: *any* of its content words, ranked by
//!   relevance. Requiring every word finds almost no paraphrase.
//!
//! Nothing a user types reaches an engine's syntax: every term is quoted (FTS5) or reduced to
//! letters and digits (PostgreSQL's `tsquery`), so no query is refused by an engine — one with
//! no term left searches nothing.

use std::collections::{BTreeSet, HashMap};

use entity::knowledge_entries::KnowledgeStatus;

/// The longest search text, in characters; a longer one is refused.
pub use askloop_wire::knowledge::QUERY_MAX;

pub use askloop_wire::knowledge::{AgentSearch, KnowledgeSearchRequest, NewReuse, ReuseRequest};

/// The most terms a query keeps; words after these are ignored.
pub const TERMS_MAX: usize = 32;

/// Common English words that say nothing about what a question is about: a likes query leaves
/// them out (an entry holding only "the" and "how" is not like anything).
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "but", "by", "can", "could", "did", "do", "does", "for", "from", "get",
    "had", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "no",
    "not", "of", "on", "or", "our", "should", "so", "than", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "to", "was", "we", "were", "what", "when", "where", "which",
    "who", "why", "will", "with", "would", "you", "your",
];

/// One term of a search: a word or a phrase, wanted or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    /// Every word of it, in this order.
    Phrase(Vec<String>),
    /// Entries without it (`-word`, `-"a phrase"`).
    Not(Vec<String>),
    /// `or` between the terms either side of it.
    Or,
}

/// A person's search, parsed from web-search syntax; `None` when it holds no wanted term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Search {
    /// The terms in order.
    pub terms: Vec<Term>,
}

/// The longest word, in characters, that is a search term or counted under `knowledge_terms`. A
/// longer run of letters (a pasted token, a hash, a hostile question's filler) is no word anyone
/// searches for, and left in it would reach a B-tree index whose keys PostgreSQL caps at 2,704
/// bytes; 64 characters are at most 256 bytes.
pub const WORD_MAX: usize = 64;

/// The words of `text`: runs of letters and digits, lower-cased, of at most [`WORD_MAX`]
/// characters (a longer run is dropped, not cut: its first characters are not a word it holds).
/// Everything else (punctuation, quotes, operators, control characters) separates words.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && w.chars().nth(WORD_MAX).is_none())
        .map(str::to_lowercase)
        .collect()
}

/// The content words of `text` for a likes query: its words without the stop words and
/// one-letter words, each once, at most [`TERMS_MAX`].
pub fn content_words(text: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    words(text)
        .into_iter()
        .filter(|w| w.chars().count() > 1 && !STOP_WORDS.contains(&w.as_str()))
        .filter(|w| seen.insert(w.clone()))
        .take(TERMS_MAX)
        .collect()
}

/// Parse web-search syntax. Quotes that never close run to the end; a `-` before nothing, an
/// `or` at either end or beside another is dropped; a search of only exclusions has no wanted
/// term and is `None`.
pub fn parse_search(text: &str) -> Option<Search> {
    let mut terms = Vec::new();
    let mut rest = text;
    let mut count = 0usize;
    while count < TERMS_MAX {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || is_separator(c));
        if rest.is_empty() {
            break;
        }
        let negated = rest.starts_with('-');
        if negated {
            rest = &rest[1..];
        }
        let (raw, after) = if let Some(inside) = rest.strip_prefix('"') {
            match inside.find('"') {
                Some(end) => (&inside[..end], &inside[end + 1..]),
                None => (inside, ""),
            }
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            (&rest[..end], &rest[end..])
        };
        rest = after;
        let phrase = words(raw);
        if phrase.is_empty() {
            continue;
        }
        count += 1;
        if !negated && phrase.len() == 1 && phrase[0] == "or" && !raw.contains('"') {
            terms.push(Term::Or);
        } else if negated {
            terms.push(Term::Not(phrase));
        } else {
            terms.push(Term::Phrase(phrase));
        }
    }
    // An `or` needs a wanted term before it (an exclusion may sit between) and a term after.
    let mut tidy: Vec<Term> = Vec::with_capacity(terms.len());
    for term in terms {
        let wanted_before = tidy.iter().any(|t| matches!(t, Term::Phrase(_)));
        if term == Term::Or && (!wanted_before || tidy.last() == Some(&Term::Or)) {
            continue;
        }
        tidy.push(term);
    }
    while tidy.last() == Some(&Term::Or) {
        tidy.pop();
    }
    tidy.iter()
        .any(|t| matches!(t, Term::Phrase(_)))
        .then_some(Search { terms: tidy })
}

/// Characters that begin no term: FTS5 and tsquery operators a person did not mean.
fn is_separator(c: char) -> bool {
    matches!(
        c,
        '(' | ')' | '*' | '^' | ':' | '&' | '|' | '!' | '<' | '>' | '+' | '{' | '}' | '[' | ']'
    )
}

/// A phrase as an FTS5 string: the words inside double quotes (a word holds no quote).
fn fts5_phrase(words: &[String]) -> String {
    format!("\"{}\"", words.join(" "))
}

impl Search {
    /// The search as an FTS5 query: wanted terms joined by AND (or OR where the person wrote
    /// `or`), then `NOT` each excluded term.
    pub fn fts5(&self) -> String {
        let mut wanted = String::new();
        let mut excluded = Vec::new();
        let mut or_next = false;
        for term in &self.terms {
            match term {
                Term::Or => or_next = true,
                Term::Phrase(words) => {
                    if !wanted.is_empty() {
                        wanted.push_str(if or_next { " OR " } else { " AND " });
                    }
                    or_next = false;
                    wanted.push_str(&fts5_phrase(words));
                }
                Term::Not(words) => excluded.push(fts5_phrase(words)),
            }
        }
        let mut query = format!("({wanted})");
        for not in excluded {
            query.push_str(" NOT ");
            query.push_str(&not);
        }
        query
    }

    /// The search as text for PostgreSQL's `websearch_to_tsquery`, rebuilt from the parsed terms
    /// so both stores read the same thing.
    pub fn websearch(&self) -> String {
        self.terms
            .iter()
            .map(|term| match term {
                Term::Or => "or".to_owned(),
                Term::Phrase(words) if words.len() == 1 => words[0].clone(),
                Term::Phrase(words) => format!("\"{}\"", words.join(" ")),
                Term::Not(words) if words.len() == 1 => format!("-{}", words[0]),
                Term::Not(words) => format!("-\"{}\"", words.join(" ")),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A person's search on the knowledge page, read loosely: the plain words are ranked on any of
/// them (as an agent's search is: a paraphrase finds the entry), while a quoted phrase or word
/// must appear and a `-word` or `-"phrase"` must not. `or` between words changes nothing (any
/// word already counts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loose {
    /// The plain words: any of them.
    pub any: Vec<String>,
    /// Quoted phrases: each must appear.
    pub required: Vec<Vec<String>>,
    /// Excluded words and phrases.
    pub excluded: Vec<Vec<String>>,
}

/// Parse a search loosely ([`Loose`]): `None` when nothing is wanted. The plain words leave out
/// the stop words unless they are all there is.
pub fn parse_loose(text: &str) -> Option<Loose> {
    let mut plain = Vec::new();
    let mut required = Vec::new();
    let mut excluded = Vec::new();
    let mut rest = text;
    let mut count = 0usize;
    while count < TERMS_MAX {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || is_separator(c));
        if rest.is_empty() {
            break;
        }
        let negated = rest.starts_with('-');
        if negated {
            rest = &rest[1..];
        }
        let (raw, after, quoted) = if let Some(inside) = rest.strip_prefix('"') {
            match inside.find('"') {
                Some(end) => (&inside[..end], &inside[end + 1..], true),
                None => (inside, "", true),
            }
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            (&rest[..end], &rest[end..], false)
        };
        rest = after;
        let phrase = words(raw);
        if phrase.is_empty() {
            continue;
        }
        count += 1;
        if negated {
            excluded.push(phrase);
        } else if quoted {
            required.push(phrase);
        } else if !(phrase.len() == 1 && phrase[0] == "or") {
            plain.extend(phrase);
        }
    }
    let mut seen = BTreeSet::new();
    let content: Vec<String> = plain
        .iter()
        .filter(|w| w.chars().count() > 1 && !STOP_WORDS.contains(&w.as_str()))
        .filter(|w| seen.insert((*w).clone()))
        .cloned()
        .collect();
    let any = if content.is_empty() {
        let mut seen = BTreeSet::new();
        plain
            .into_iter()
            .filter(|w| seen.insert(w.clone()))
            .collect()
    } else {
        content
    };
    (!any.is_empty() || !required.is_empty()).then_some(Loose {
        any,
        required,
        excluded,
    })
}

impl Loose {
    /// The search as an FTS5 query: any of the plain words, AND each quoted phrase, then `NOT`
    /// each excluded one.
    pub fn fts5(&self) -> String {
        let mut wanted = Vec::new();
        if !self.any.is_empty() {
            wanted.push(format!("({})", fts5_any(&self.any)));
        }
        wanted.extend(self.required.iter().map(|p| fts5_phrase(p)));
        let mut query = format!("({})", wanted.join(" AND "));
        for not in &self.excluded {
            query.push_str(" NOT ");
            query.push_str(&fts5_phrase(not));
        }
        query
    }

    /// The search for PostgreSQL's `to_tsquery`: words are letters and digits only, so none is
    /// an operator; a phrase's words follow each other (`<->`).
    pub fn tsquery(&self) -> String {
        let phrase = |words: &[String]| format!("({})", words.join(" <-> "));
        let mut parts = Vec::new();
        if !self.any.is_empty() {
            parts.push(format!("({})", tsquery_any(&self.any)));
        }
        parts.extend(self.required.iter().map(|p| phrase(p)));
        parts.extend(self.excluded.iter().map(|p| format!("!{}", phrase(p))));
        parts.join(" & ")
    }
}

/// A likes query for FTS5: any of `words`, each quoted.
pub fn fts5_any(words: &[String]) -> String {
    words
        .iter()
        .map(|w| fts5_phrase(std::slice::from_ref(w)))
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// A likes query for PostgreSQL's `to_tsquery`: any of `words` (letters and digits only, so no
/// operator of tsquery's can be among them).
pub fn tsquery_any(words: &[String]) -> String {
    words.join(" | ")
}

/// The most entries one search ranks: the newest this many of its niche's entries (of the
/// status asked for) that match it. A search whose words a large share of the niche holds
/// ranks the newest of them, not all; its cost is bounded by this, not by the niche's size.
pub const RANKED_MAX: u64 = 1000;

/// How many low bits of a rowid in SQLite's index are the entry's id; the bits above them are
/// its niche and status ([`search_rowid`]).
pub const SEARCH_ID_BITS: u32 = 36;

/// The largest entry id SQLite's index can hold.
pub const SEARCH_ID_MAX: i64 = (1 << SEARCH_ID_BITS) - 1;

/// The number a status is in SQLite's index's rowids.
fn status_number(status: KnowledgeStatus) -> i64 {
    match status {
        KnowledgeStatus::Current => 0,
        KnowledgeStatus::Superseded => 1,
        KnowledgeStatus::Retracted => 2,
    }
}

/// An entry's rowid in SQLite's index: its niche and status above [`SEARCH_ID_BITS`], its id
/// below. Each niche's entries of one status are one range of rowids ([`search_rowids`]),
/// which FTS5 reads alone and newest first; an entry that changes status changes rowid.
pub fn search_rowid(niche_id: i64, status: KnowledgeStatus, entry_id: i64) -> i64 {
    ((niche_id * 4 + status_number(status)) << SEARCH_ID_BITS) | (entry_id & SEARCH_ID_MAX)
}

/// The rowids of niche `niche_id`'s entries of `status` in SQLite's index, first and last.
pub fn search_rowids(niche_id: i64, status: KnowledgeStatus) -> (i64, i64) {
    let first = search_rowid(niche_id, status, 0);
    (first, first | SEARCH_ID_MAX)
}

/// How much of a question's content `text` holds, in basis points: the share of `question`'s
/// content words that appear in `text`, compared by their stems. The engines rank; this says
/// whether a candidate is alike enough to offer (a niche's similarity threshold), in the same
/// terms on both stores.
pub fn likeness_bps(question: &[String], text: &str) -> i32 {
    if question.is_empty() {
        return 0;
    }
    let held: BTreeSet<String> = words(text).iter().map(|w| stem(w)).collect();
    let found = question.iter().filter(|w| held.contains(&stem(w))).count();
    i32::try_from(found * 10_000 / question.len()).unwrap_or(10_000)
}

/// The most words one entry is counted under.
pub const COUNTED_MAX: usize = 400;

/// A word held by at most this many of a niche's entries is always worth asking for.
pub const RARE_FLOOR: i64 = 200;

/// What of an entry is searched, the one definition every index and likeness reads: its title,
/// its question, and its answer's words (the chosen option's label, then the words). Never the
/// agent's context, which is untrusted and not copied into an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Searchable<'a> {
    /// The question's title (weighted highest).
    pub title: &'a str,
    /// The question as asked.
    pub question: &'a str,
    /// The chosen option's label and the answer's words, space-separated.
    pub answer: String,
}

impl<'a> Searchable<'a> {
    /// An entry's searchable text from its parts.
    pub fn of(
        title: &'a str,
        question: &'a str,
        option_label: Option<&str>,
        answer: Option<&str>,
    ) -> Self {
        let answer = [option_label, answer]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        Self {
            title,
            question,
            answer,
        }
    }

    /// The words it is counted under in its niche ([`counted_terms`]).
    pub fn terms(&self) -> Vec<String> {
        counted_terms(&[self.title, self.question, &self.answer])
    }

    /// All of it as one text, for likeness ([`likeness_bps`]).
    pub fn joined(&self) -> String {
        format!("{} {} {}", self.title, self.question, self.answer)
    }
}

/// The words an entry is counted under (`knowledge_terms`): the rough stems of the content words
/// of `texts`, each once, at most [`COUNTED_MAX`].
pub fn counted_terms(texts: &[&str]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    for word in texts.iter().flat_map(|text| words(text)) {
        if seen.len() >= COUNTED_MAX {
            break;
        }
        if word.chars().count() > 1 && !STOP_WORDS.contains(&word.as_str()) {
            seen.insert(stem(&word));
        }
    }
    seen.into_iter().collect()
}

/// The rough stem a likes query's word is counted under.
pub fn counted_term(word: &str) -> String {
    stem(word)
}

/// The most words a likes query asks the engine for in a niche of [`LIKES_FROM`] entries or more.
pub const LIKES_MAX: usize = 8;

/// From how many entries a niche's likes queries ask for at most [`LIKES_MAX`] words. In a
/// smaller niche a search ranks few entries whatever it asks for, and its word counts are too
/// small to say which of a question's words are the telling ones.
pub const LIKES_FROM: i64 = 1_000;

/// The words of a likes query worth asking the engine for: those held by at most
/// max([`RARE_FLOOR`], `total` / 1000) of the niche's `total` entries (`counts` by
/// [`counted_term`]; a word with no count is rare), and of those, in a niche of [`LIKES_FROM`]
/// entries or more, the [`LIKES_MAX`] rarest that some entry holds (a word no entry is counted
/// under comes after them: it can match only through the engine's own stemming). When none is
/// rare, the rarest alone. The query's order is
/// kept. A word in a large share of a niche says little about what a question is about, and
/// asking for it makes the engine rank a large share of the niche; each word asked for costs a
/// read of its list in every search, and the rarest say most about which entry is meant.
pub fn rare_words(words: &[String], counts: &HashMap<String, i64>, total: i64) -> Vec<String> {
    let cap = RARE_FLOOR.max(total / 1000);
    let count = |w: &String| counts.get(&stem(w)).copied().unwrap_or(0);
    let mut rare: Vec<(usize, &String)> = words
        .iter()
        .enumerate()
        .filter(|(_, w)| count(w) <= cap)
        .collect();
    if rare.is_empty() {
        return words
            .iter()
            .min_by_key(|w| count(w))
            .cloned()
            .into_iter()
            .collect();
    }
    if total >= LIKES_FROM && rare.len() > LIKES_MAX {
        rare.sort_by_key(|&(at, w)| {
            let n = count(w);
            (n == 0, n, at)
        });
        rare.truncate(LIKES_MAX);
        rare.sort_by_key(|&(at, _)| at);
    }
    rare.into_iter().map(|(_, w)| w.clone()).collect()
}

/// How many of a niche's `total` entries a likes query of `words` matches at most, by the word
/// counts (`counts` as for [`rare_words`]): the sum of its words' counts, at most `total`.
pub fn matches_at_most(words: &[String], counts: &HashMap<String, i64>, total: i64) -> i64 {
    let mut stems: Vec<String> = words.iter().map(|w| stem(w)).collect();
    stems.sort();
    stems.dedup();
    let sum = stems
        .iter()
        .map(|s| counts.get(s).copied().unwrap_or(0))
        .fold(0_i64, i64::saturating_add);
    sum.min(total.max(0))
}

/// From how many estimated matches ([`matches_at_most`]) PostgreSQL answers a search by walking
/// the niche's entries newest first rather than fetching every match the GIN index finds. A walk
/// reads about [`RANKED_MAX`] / share neighbouring rows, fetching the matches reads one scattered
/// row each; at a million entries the two cost the same near ten thousand matches.
pub const WALK_FROM: i64 = 10_000;

/// Whether a search estimated to match `matches` entries walks them newest first
/// ([`WALK_FROM`]); 0 is "not counted" and never walks.
pub fn walks_newest_first(matches: i64) -> bool {
    matches >= WALK_FROM
}

/// A rough English stem: common inflections removed, so "roofs", "roofing" and "roofed" meet.
/// For [`likeness_bps`] and the word counts; the engines stem with their own rules.
fn stem(word: &str) -> String {
    for suffix in ["ing", "ed", "es", "s"] {
        if let Some(base) = word.strip_suffix(suffix)
            && base.chars().count() >= 3
        {
            return base.to_owned();
        }
    }
    word.to_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_loose_search_ranks_any_plain_word_and_narrows_by_quotes_and_minus() {
        let loose = parse_loose(r#"when is the roof "flat membrane" -tar or felt"#).expect("terms");
        assert_eq!(loose.any, vec!["roof".to_owned(), "felt".to_owned()]);
        assert_eq!(
            loose.required,
            vec![vec!["flat".to_owned(), "membrane".to_owned()]]
        );
        assert_eq!(loose.excluded, vec![vec!["tar".to_owned()]]);
        assert_eq!(
            loose.fts5(),
            r#"(("roof" OR "felt") AND "flat membrane") NOT "tar""#
        );
        assert_eq!(
            loose.tsquery(),
            "(roof | felt) & (flat <-> membrane) & !(tar)"
        );
        assert_eq!(
            parse_loose("the how").map(|l| l.any),
            Some(vec!["the".to_owned(), "how".to_owned()])
        );
        assert_eq!(parse_loose("-tar"), None);
        assert_eq!(parse_loose(""), None);
    }

    use super::*;

    fn phrase(words: &[&str]) -> Term {
        Term::Phrase(words.iter().map(|w| (*w).to_owned()).collect())
    }

    #[test]
    fn a_word_longer_than_the_cap_is_no_term_of_any_query_or_count() {
        let long = "x".repeat(3_000);
        let at_cap = "y".repeat(WORD_MAX);
        let text = format!("roof {long} {at_cap} membrane");
        assert_eq!(words(&text), vec!["roof", at_cap.as_str(), "membrane"]);
        assert_eq!(
            content_words(&text),
            vec!["roof", at_cap.as_str(), "membrane"]
        );
        assert!(
            counted_terms(&[&text])
                .iter()
                .all(|t| t.chars().count() <= WORD_MAX)
        );
        assert_eq!(
            parse_search(&format!("\"{long}\" -{long} roof")),
            Some(Search {
                terms: vec![phrase(&["roof"])]
            })
        );
        assert_eq!(parse_search(&long), None);
    }

    #[test]
    fn a_search_walks_newest_first_only_when_its_words_are_counted_in_many_entries() {
        let words: Vec<String> = ["roofs", "roofing", "membrane", "unseen"]
            .iter()
            .map(|w| (*w).to_owned())
            .collect();
        let counts: HashMap<String, i64> =
            [("roof".to_owned(), 9_000), ("membrane".to_owned(), 700)]
                .into_iter()
                .collect();
        // "roofs" and "roofing" are one stem, counted once; "unseen" has no count.
        assert_eq!(matches_at_most(&words, &counts, 1_000_000), 9_700);
        assert_eq!(matches_at_most(&words, &counts, 5_000), 5_000);
        assert_eq!(matches_at_most(&[], &counts, 1_000_000), 0);
        assert!(!walks_newest_first(9_700));
        assert!(walks_newest_first(WALK_FROM));
        assert!(!walks_newest_first(0));
    }

    #[test]
    fn a_likes_query_keeps_its_rare_words_or_else_its_rarest() {
        let words: Vec<String> = ["roof", "membrane", "leaking", "seams"]
            .iter()
            .map(|w| (*w).to_owned())
            .collect();
        let counts: HashMap<String, i64> = [("roof", 900_000), ("membrane", 300), ("leak", 5_000)]
            .into_iter()
            .map(|(w, n)| (w.to_owned(), n))
            .collect();
        // In a niche of a million, 1000 is rare: "membrane" and the uncounted "seams" are kept.
        assert_eq!(
            rare_words(&words, &counts, 1_000_000),
            ["membrane", "seams"]
        );
        // In a small niche every word is rare.
        assert_eq!(rare_words(&words, &HashMap::new(), 50), words);
        // Only common words: the rarest alone.
        let common: HashMap<String, i64> = [
            ("roof", 900_000),
            ("membrane", 400_000),
            ("leak", 5_000),
            ("seam", 700_000),
        ]
        .into_iter()
        .map(|(w, n)| (w.to_owned(), n))
        .collect();
        assert_eq!(rare_words(&words, &common, 1_000_000), ["leaking"]);
        // Of more rare words than a query asks for, the rarest that some entry holds, in the
        // query's order; words no entry is counted under only fill what is left.
        let many: Vec<String> = (0..12).map(|i| format!("w{i}x")).collect();
        let mut counts: HashMap<String, i64> = [1, 2, 3, 5, 6, 7, 9]
            .into_iter()
            .map(|i| (format!("w{i}x"), 100 - i))
            .collect();
        counts.insert("w10x".into(), 5_000);
        assert_eq!(
            rare_words(&many, &counts, 10_000),
            ["w0x", "w1x", "w2x", "w3x", "w5x", "w6x", "w7x", "w9x"]
        );
        counts.insert("w0x".into(), 99);
        counts.insert("w4x".into(), 1);
        assert_eq!(
            rare_words(&many, &counts, 10_000),
            ["w0x", "w2x", "w3x", "w4x", "w5x", "w6x", "w7x", "w9x"],
            "of two words held as often, the earlier"
        );
        // A small niche asks for every word: its counts say too little to choose by.
        let common_left_out: Vec<String> = many.iter().filter(|w| *w != "w10x").cloned().collect();
        assert_eq!(rare_words(&many, &counts, LIKES_FROM - 1), common_left_out);
        assert_eq!(
            rare_words(&many, &HashMap::new(), LIKES_FROM).len(),
            LIKES_MAX
        );
        assert_eq!(
            counted_terms(&["Roofs leaking", "the roof is leaking"]),
            ["leak", "roof"]
        );
    }

    #[test]
    fn web_syntax_parses_phrases_exclusions_and_or() {
        let search = parse_search(r#"flat "roof membrane" -tar or felt"#).expect("terms");
        assert_eq!(
            search.terms,
            vec![
                phrase(&["flat"]),
                phrase(&["roof", "membrane"]),
                Term::Not(vec!["tar".into()]),
                Term::Or,
                phrase(&["felt"]),
            ]
        );
        assert_eq!(
            search.fts5(),
            r#"("flat" AND "roof membrane" OR "felt") NOT "tar""#
        );
        assert_eq!(search.websearch(), r#"flat "roof membrane" -tar or felt"#);
    }

    #[test]
    fn what_an_engine_would_refuse_becomes_plain_words_or_nothing() {
        for nothing in [
            "", "\"", "-", "(", ")", "-word", "or", "- - -", "\"\"", "*", "\0",
        ] {
            assert_eq!(parse_search(nothing), None, "{nothing:?}");
        }
        let odd = parse_search("roof) AND (\"tar NEAR/2 felt*").expect("terms");
        let fts = odd.fts5();
        // Every user word sits inside quotes; the only operators are askloop's.
        assert_eq!(fts, r#"("roof" AND "and" AND "tar near 2 felt")"#);
        assert_eq!(
            parse_search("a\0b").map(|s| s.terms),
            Some(vec![phrase(&["a", "b"])])
        );
        // An `or` with nothing wanted before it is dropped.
        assert_eq!(
            parse_search("or roof or").map(|s| s.terms),
            Some(vec![phrase(&["roof"])])
        );
        let long = "word ".repeat(5000);
        assert_eq!(parse_search(&long).map(|s| s.terms.len()), Some(TERMS_MAX));
    }

    #[test]
    fn a_likes_query_wants_any_content_word_once() {
        let words = content_words("How do I fix a leaking flat roof? The roof is flat.");
        assert_eq!(words, ["fix", "leaking", "flat", "roof"]);
        assert_eq!(
            fts5_any(&words),
            r#""fix" OR "leaking" OR "flat" OR "roof""#
        );
        assert_eq!(tsquery_any(&words), "fix | leaking | flat | roof");
        assert!(content_words("how is it? the & | ! :*").is_empty());
        assert!(
            tsquery_any(&content_words("x'); DROP TABLE users; --"))
                .chars()
                .all(|c| c.is_alphanumeric() || c == ' ' || c == '|')
        );
    }

    #[test]
    fn likeness_is_the_share_of_content_words_held_by_stem() {
        let question = content_words("leaking flat roofs after rain");
        assert_eq!(question, ["leaking", "flat", "roofs", "rain"]);
        assert_eq!(
            likeness_bps(&question, "Flat roof leaks in the rain"),
            10_000
        );
        assert_eq!(likeness_bps(&question, "A flat roof in the rain"), 7500);
        assert_eq!(likeness_bps(&question, "nothing alike"), 0);
        assert_eq!(likeness_bps(&[], "anything"), 0);
    }

    #[test]
    fn each_niche_and_status_is_one_range_of_the_sqlite_indexs_rowids() {
        let (first, last) = search_rowids(42, KnowledgeStatus::Current);
        let current = search_rowid(42, KnowledgeStatus::Current, 7);
        assert!(first < current && current < last);
        assert_eq!(current & SEARCH_ID_MAX, 7);
        // The same entry superseded, or another niche's, is outside the range.
        for other in [
            search_rowid(42, KnowledgeStatus::Superseded, 7),
            search_rowid(42, KnowledgeStatus::Retracted, 7),
            search_rowid(41, KnowledgeStatus::Current, 7),
            search_rowid(43, KnowledgeStatus::Current, 7),
        ] {
            assert!(other < first || other > last, "{other}");
            assert_eq!(other & SEARCH_ID_MAX, 7);
        }
    }

    #[test]
    fn an_entrys_searchable_text_is_its_title_question_and_answer_words_never_more() {
        let text = Searchable::of(
            "Roof pitch",
            "Which pitch?",
            Some("Steep"),
            Some("over 30°"),
        );
        assert_eq!(text.answer, "Steep over 30°");
        assert_eq!(text.joined(), "Roof pitch Which pitch? Steep over 30°");
        assert_eq!(
            Searchable::of("t", "q", None, Some("words")).answer,
            "words"
        );
        assert_eq!(Searchable::of("t", "q", Some("A"), None).answer, "A");
        assert_eq!(
            text.terms(),
            counted_terms(&["Roof pitch", "Which pitch?", "Steep over 30°"])
        );
    }
}
