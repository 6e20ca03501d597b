//! The document's title: every page names itself ("Review · Admin — askloop"), so tabs,
//! history and screen readers tell pages apart.

use leptos::prelude::*;

/// What every title ends with.
const APP: &str = "askloop";

/// `page — askloop`, or `askloop` alone for an empty `page`.
pub fn titled(page: &str) -> String {
    let page = page.trim();
    if page.is_empty() {
        APP.to_owned()
    } else {
        format!("{page} — {APP}")
    }
}

/// Keep the document's title at `page()` (followed by " — askloop") while the calling component
/// is shown; it follows the signals `page` reads, so a count or a name loaded later shows.
pub fn page_title(page: impl Fn() -> String + 'static) {
    Effect::new(move |_| document().set_title(&titled(&page())));
}

#[cfg(test)]
mod tests {
    use super::titled;

    #[test]
    fn a_page_title_ends_with_the_apps_name() {
        assert_eq!(titled("(57) Indie games"), "(57) Indie games — askloop");
        assert_eq!(titled("  "), "askloop");
    }
}
