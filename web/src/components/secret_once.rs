//! A secret shown once (an agent's signing secret, a new API key, an operator webhook's signing
//! secret): read-only, labelled, copyable, with the warning that it will not be shown again. It
//! takes the focus when it appears, so the keyboard and the screen reader land on it. The pages
//! say what the secret is; this panel is the one place its markup and behaviour live.

use leptos::html;
use leptos::prelude::*;

use crate::components::clipboard::copy_to_clipboard;

/// The element ids one panel uses, so each page keeps the ids its labels and tests name.
#[derive(Clone, Copy)]
pub struct SecretIds {
    /// The heading's id (the section's `aria-labelledby`).
    pub title: &'static str,
    /// The warning's id (the field's `aria-describedby`).
    pub warning: &'static str,
    /// The read-only field's id (its label's `for`).
    pub field: &'static str,
}

/// Which heading the panel opens with, to fit the page's outline.
#[derive(Clone, Copy)]
pub enum HeadingLevel {
    /// A section of the page (`h2`).
    Two,
    /// A part of a section (`h3`).
    Three,
}

/// The panel: `title` and `label` name the secret, `warning` follows "It will not be shown
/// again.", `noun` ("secret", "key") names it on the button and in the copy message, and
/// `children`, when given, follow the copy status.
#[component]
pub fn SecretOnce(
    secret: String,
    ids: SecretIds,
    level: HeadingLevel,
    title: AnyView,
    warning: AnyView,
    label: AnyView,
    noun: &'static str,
    #[prop(optional)] secret_for: Option<String>,
    #[prop(optional)] children: Option<Children>,
) -> impl IntoView {
    let field = NodeRef::<html::Input>::new();
    let copied = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        if let Some(input) = field.get() {
            let _ = input.focus();
            input.select();
        }
    });
    let to_copy = secret.clone();
    let copy = move |_| {
        if let Some(input) = field.get_untracked() {
            input.select();
        }
        let to_copy = to_copy.clone();
        leptos::task::spawn_local(async move {
            copied.set(Some(if copy_to_clipboard(&to_copy).await {
                "Copied to the clipboard.".to_owned()
            } else {
                format!(
                    "The browser did not let the page copy it: the {noun} is selected, copy it yourself."
                )
            }));
        });
    };
    let heading = match level {
        HeadingLevel::Two => view! { <h2 id=ids.title>{title}</h2> }.into_any(),
        HeadingLevel::Three => view! { <h3 id=ids.title>{title}</h3> }.into_any(),
    };
    view! {
        <section class="secret-once" aria-labelledby=ids.title data-secret-for=secret_for>
            {heading}
            <p class="warning" id=ids.warning>
                <strong>"It will not be shown again."</strong>
                {warning}
            </p>
            <label for=ids.field>{label}</label>
            <div class="secret-field">
                <input
                    id=ids.field
                    type="text"
                    readonly
                    class="secret"
                    autocomplete="off"
                    spellcheck="false"
                    aria-describedby=ids.warning
                    node_ref=field
                    prop:value=secret
                    on:focus=move |_| {
                        if let Some(input) = field.get_untracked() {
                            input.select();
                        }
                    }
                />
                <button type="button" class="small" on:click=copy>{format!("Copy {noun}")}</button>
            </div>
            <p class="muted" role="status">{move || copied.get()}</p>
            {children.map(|children| children())}
        </section>
    }
}
