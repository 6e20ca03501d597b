//! Single-key commands on the pages that have them (the queue, the review inbox).

use wasm_bindgen::JsCast;

/// Whether a key press lands where the person is typing: then keys type, they do not command.
pub fn typing_in(target: Option<web_sys::EventTarget>) -> bool {
    target
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|el| {
            let tag = el.tag_name().to_ascii_lowercase();
            let input_type = el.get_attribute("type").unwrap_or_default();
            tag == "textarea"
                || tag == "select"
                || (tag == "input"
                    && !matches!(input_type.as_str(), "radio" | "checkbox" | "button"))
                || el.get_attribute("contenteditable").is_some()
        })
}
