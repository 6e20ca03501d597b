//! Keeps the README and `docs/` whole: every relative link names a file that exists (and, for a
//! `#fragment` into a Markdown page, a heading of that page), and every code fence is closed.
//! Runs with the workspace's tests (`cargo xtask test`), so a moved section cannot strand a link.

use std::fs;
use std::path::{Path, PathBuf};

/// One problem found in a Markdown page, named by the page and its line.
#[derive(Debug, PartialEq, Eq)]
pub struct Problem {
    /// The page, as given.
    pub page: PathBuf,
    /// The 1-based line the problem is on.
    pub line: usize,
    /// What is wrong.
    pub what: String,
}

/// The README and every Markdown page under `docs/`.
pub fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
                .collect()
        })
        .unwrap_or_default();
    docs.sort();
    pages.extend(docs);
    pages
}

/// Every broken relative link and unclosed code fence in `page`, whose text is `text`.
pub fn check(page: &Path, text: &str) -> Vec<Problem> {
    let dir = page.parent().unwrap_or(Path::new("."));
    let mut problems = Vec::new();
    let mut fence_opened_at = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        // A fence opens with an info string or none, but closes only on a line of backticks
        // alone (CommonMark): "``` more text" leaves the fence open to the end of the page.
        let trimmed = line.trim();
        match fence_opened_at {
            None if trimmed.starts_with("```") => {
                fence_opened_at = Some(number);
                continue;
            }
            Some(_) if trimmed.starts_with("```") && trimmed.chars().all(|c| c == '`') => {
                fence_opened_at = None;
                continue;
            }
            _ => {}
        }
        if fence_opened_at.is_some() {
            continue;
        }
        for target in link_targets(line) {
            if let Some(what) = broken(dir, page, text, &target) {
                problems.push(Problem {
                    page: page.to_owned(),
                    line: number,
                    what,
                });
            }
        }
    }
    if let Some(line) = fence_opened_at {
        problems.push(Problem {
            page: page.to_owned(),
            line,
            what: "a code fence opened here is never closed".to_owned(),
        });
    }
    problems
}

/// The targets of the inline links `[text](target)` on one line, outside inline code.
fn link_targets(line: &str) -> Vec<String> {
    // Inline code may show link syntax without being a link.
    let prose: String = line
        .split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 0)
        .map(|(_, part)| part)
        .collect::<Vec<_>>()
        .join(" ");
    let mut targets = Vec::new();
    let mut rest = prose.as_str();
    while let Some(start) = rest.find("](") {
        let after = &rest[start + 2..];
        let Some(end) = after.find(')') else { break };
        targets.push(after[..end].to_owned());
        rest = &after[end..];
    }
    targets
}

/// Why `target`, linked from `page` (in `dir`, with text `text`), does not resolve, if it does not.
fn broken(dir: &Path, page: &Path, text: &str, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (file, fragment) = match target.split_once('#') {
        Some((file, fragment)) => (file, Some(fragment)),
        None => (target, None),
    };
    let (linked, linked_text) = if file.is_empty() {
        (page.to_owned(), Some(text.to_owned()))
    } else {
        let linked = dir.join(file);
        if !linked.exists() {
            return Some(format!("`{target}`: {} does not exist", linked.display()));
        }
        let is_markdown = linked.extension().is_some_and(|ext| ext == "md");
        let linked_text = is_markdown.then(|| fs::read_to_string(&linked).unwrap_or_default());
        (linked, linked_text)
    };
    match (fragment, linked_text) {
        (Some(fragment), Some(linked_text))
            if !anchors(&linked_text).iter().any(|a| a == fragment) =>
        {
            Some(format!(
                "`{target}`: {} has no heading `#{fragment}`",
                linked.display()
            ))
        }
        _ => None,
    }
}

/// The anchors of `text`: those a Markdown renderer gives its headings (lower case, punctuation
/// dropped, spaces become hyphens: the scheme GitHub uses for `#fragment` links), and those
/// written out as `<a id="…"></a>`.
fn anchors(text: &str) -> Vec<String> {
    let mut in_fence = false;
    let prose: Vec<&str> = text
        .lines()
        .filter(|line| {
            if line.trim_start().starts_with("```") {
                in_fence = !in_fence;
                return false;
            }
            !in_fence
        })
        .collect();
    let written = prose.iter().flat_map(|line| {
        line.split("<a id=\"")
            .skip(1)
            .filter_map(|rest| rest.split_once('"').map(|(id, _)| id.to_owned()))
    });
    let headings = prose
        .iter()
        .filter(|line| line.starts_with('#'))
        .map(|line| {
            line.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    '-' | '_' => Some(c),
                    c if c.is_alphanumeric() => Some(c),
                    _ => None,
                })
                .collect()
        });
    headings.chain(written).collect()
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;

    use super::{anchors, check, pages};

    #[test]
    fn every_relative_link_in_the_readme_and_docs_resolves_and_every_fence_closes() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("xtask sits in the workspace");
        let pages = pages(root);
        assert!(pages.len() > 1, "the README and docs/ are found: {pages:?}");
        let problems: Vec<_> = pages
            .iter()
            .flat_map(|page| {
                let text = fs::read_to_string(page).expect("a readable page");
                check(page, &text)
            })
            .collect();
        assert!(problems.is_empty(), "broken documentation: {problems:#?}");
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("askloop-links-{name}-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("a scratch folder");
        fs::write(dir.join("other.md"), "# Other page\n\n## Its part\n").expect("a page");
        dir.join("page.md")
    }

    #[test]
    fn a_link_to_a_missing_file_is_reported_with_its_line() {
        let page = scratch("missing");
        let problems = check(
            &page,
            "# Page\n\nSee [gone](gone.md) and [here](other.md).\n",
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].line, 3);
        assert!(problems[0].what.contains("gone.md"), "{problems:?}");
    }

    #[test]
    fn a_fragment_naming_no_heading_is_reported() {
        let page = scratch("fragment");
        let text =
            "# Page\n\n[ok](other.md#its-part) [ok](#page) [bad](other.md#nothing) [bad](#nope)\n";
        let problems = check(&page, text);
        let whats: Vec<&str> = problems.iter().map(|p| p.what.as_str()).collect();
        assert_eq!(problems.len(), 2, "{whats:?}");
        assert!(whats[0].contains("#nothing"), "{whats:?}");
        assert!(whats[1].contains("#nope"), "{whats:?}");
    }

    #[test]
    fn an_unclosed_code_fence_is_reported_where_it_opens() {
        let page = scratch("fence");
        let problems = check(
            &page,
            "# Page\n\n```sh\nok\n```\n\n```\n[not a link](gone.md)\n",
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].line, 7);
        assert!(problems[0].what.contains("never closed"), "{problems:?}");
    }

    #[test]
    fn a_fence_closed_by_a_line_with_more_text_is_still_open() {
        let page = scratch("trailing");
        let problems = check(&page, "# Page\n\n```sh\ncargo test\n``` More prose.\n");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].line, 3);
    }

    #[test]
    fn links_inside_inline_code_and_web_addresses_are_left_alone() {
        let page = scratch("code");
        let text = "`[x](gone.md)` and [site](https://example.com/x) and [mail](mailto:a@b)\n";
        assert!(check(&page, text).is_empty());
    }

    #[test]
    fn headings_become_anchors_as_a_renderer_makes_them() {
        assert_eq!(
            anchors(
                "# The two commands\n## Fan-out benchmark\n```\n# not a heading\n```\n### 50 answers, at once!\n"
            ),
            [
                "the-two-commands",
                "fan-out-benchmark",
                "50-answers-at-once"
            ]
        );
        assert_eq!(
            anchors("6. <a id=\"adopted-subscriptions\"></a>**Adopted subscriptions**\n"),
            ["adopted-subscriptions"]
        );
    }
}
