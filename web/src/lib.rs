//! askloop's operator dashboard: a client-side Leptos app served by `api` on the same origin.
//! It talks to the server only through `/graphql` (typed operations, `operations`) and one live
//! connection (`live`) that lasts as long as the page.
//!
//! One route table (`app`) moves between pages without reloading; every page is a real URL,
//! so deep links and reloads land on the same page (the server answers unknown paths with
//! `index.html`).

use wasm_bindgen::prelude::wasm_bindgen;

mod api;
mod app;
mod components;
mod decode;
mod live;
mod operations;
mod pages;
mod session;
mod vocab;

/// Entry point: mount the app on `<body>`.
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(app::App);
}
