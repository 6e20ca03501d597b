//! Pages: each fetches what it shows.

/// Declares `$route`, a page loaded lazily: its code is a wasm chunk of its own, fetched the
/// first time someone opens the page, which then shows `<$view/>`. The chunk is named after
/// `$route` (`split___queue_route_view_…`), so every route's name is its own.
macro_rules! lazy_page {
    ($(#[$doc:meta])* $route:ident => $view:ident) => {
        $(#[$doc])*
        pub struct $route;

        #[leptos_router::lazy_route]
        impl leptos_router::LazyRoute for $route {
            fn data() -> Self {
                Self
            }

            fn view(_this: Self) -> leptos::prelude::AnyView {
                leptos::prelude::IntoAny::into_any(leptos::view! { <$view/> })
            }
        }
    };
}

pub mod activity;
pub mod admin;
pub mod agents;
pub mod knowledge;
pub mod login;
pub mod niches;
pub mod question;
pub mod queue;
pub mod revenue;
pub mod settings;
