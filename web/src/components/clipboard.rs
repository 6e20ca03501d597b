//! Copying a secret shown once (see `secret_once`) to the clipboard.

use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

/// Put `text` on the clipboard; false when the browser offers this page none (it does only to
/// secure contexts) or refuses.
pub async fn copy_to_clipboard(text: &str) -> bool {
    let Some(navigator) = web_sys::window().map(|w| w.navigator()) else {
        return false;
    };
    let offered = js_sys::Reflect::get(&navigator, &JsValue::from_str("clipboard"))
        .is_ok_and(|clipboard| !clipboard.is_undefined() && !clipboard.is_null());
    if !offered {
        return false;
    }
    JsFuture::from(navigator.clipboard().write_text(text))
        .await
        .is_ok()
}
