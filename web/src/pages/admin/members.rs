//! Members & budgets: every niche with its members (add, suspend, reinstate) and its agent
//! budget, edited and shown in the niche's money ("25.30 USD"), never in minor units.

use std::collections::HashMap;

use leptos::prelude::*;

use crate::api::{self, ApiError, ErrorCode};
use crate::components::loaded::Loaded;
use crate::components::money::{money, parse_money};
use crate::components::notice::LimitNote;
use crate::operations::{AdminMembers, NicheBudget, admin_members, niche_budget};
use crate::vocab::{MemberRole, MemberStatus, NicheStatus};

use super::{Act, Command, FORBIDDEN, Outcome, desk};

/// The longest amount a budget field takes: more digits than the largest amount askloop keeps.
const AMOUNT_MAX: usize = 24;

/// The money every niche's budget is kept in.
const CURRENCY: &str = "USD";

/// The longest handle (the server's `HANDLE_MAX`): the "Add a member" field's limit.
const HANDLE_MAX: usize = 40;

/// The "Add a member" forms of every niche, kept by the section: what is typed in each survives
/// the list being read again, and a refusal stays in the form it answers, beside its field.
#[derive(Clone, Copy)]
struct Adding {
    /// Adds a member; the list is read again only when it worked (a refusal changes nothing).
    act: Act,
    /// The niche and the handle of the last add sent.
    sent: RwSignal<(String, String)>,
    /// What is typed in each niche's field, by slug; emptied when its add works.
    typed: RwSignal<HashMap<String, String>>,
}

impl Adding {
    fn new(refresh: impl Fn() + Copy + 'static) -> Self {
        let typed = RwSignal::new(HashMap::<String, String>::new());
        let act = Action::new_local(move |command: &Command| {
            let command = command.clone();
            async move {
                let slug = match &command {
                    Command::AddMember { slug, .. } => Some(slug.clone()),
                    _ => None,
                };
                let result = command.run().await;
                if result.is_ok() {
                    if let Some(slug) = slug {
                        typed.update(|t| {
                            t.remove(&slug);
                        });
                    }
                    refresh();
                }
                result
            }
        });
        Self {
            act,
            sent: RwSignal::new((String::new(), String::new())),
            typed,
        }
    }

    /// Why adding `handle` was refused, as a sentence about what was typed.
    fn refusal(handle: &str, err: &ApiError) -> String {
        let shown: String = handle.chars().take(HANDLE_MAX).collect();
        match err.code {
            ErrorCode::NotFound => format!(
                "No one has the handle \u{201c}{shown}\u{201d}: check its spelling, or ask them to sign up first."
            ),
            _ => err.to_string(),
        }
    }
}

/// A success of `done` clears what the others last said: a notice or a refusal does not outlive
/// the next thing that worked.
fn clears_on_success(done: Act, others: Vec<Act>) {
    Effect::new(move |_| {
        if matches!(done.value().get(), Some(Ok(_))) {
            for other in &others {
                if other.value().with_untracked(Option::is_some) {
                    other.value().set(None);
                }
            }
        }
    });
}

/// The Members & budgets section.
#[component]
pub fn MembersSection() -> impl IntoView {
    let read = LocalResource::new(|| api::run::<AdminMembers>(admin_members::Variables));
    let act = desk(move || read.refetch());
    let adding = Adding::new(move || read.refetch());
    clears_on_success(act, vec![adding.act]);
    clears_on_success(adding.act, vec![act]);
    view! {
        <section aria-labelledby="niches-title">
            <h2 id="niches-title">"Niches, members and budgets"</h2>
            <Outcome act=act/>
            <Loaded forbidden=FORBIDDEN>
                {move || read.get().map(|r| r.map(|r| {
                    r.all_niches.into_iter().map(|n| view! { <NicheMembers niche=n act=act adding=adding/> }).collect_view()
                }))}
            </Loaded>
        </section>
    }
}

#[component]
fn NicheMembers(
    niche: admin_members::AdminMembersAllNiches,
    act: Act,
    adding: Adding,
) -> impl IntoView {
    let busy = act.pending();
    // The budget form has its own action: saving it re-reads its figures, not the whole list
    // (which would rebuild the form under the admin's hands), and what it says shows in it.
    let budget_act = desk(|| ());
    clears_on_success(budget_act, vec![act, adding.act]);
    let slug = niche.slug.clone();
    let handle_id = format!("add-{}", niche.slug);
    let limit_id = format!("add-limit-{}", niche.slug);
    let error_id = format!("add-error-{}", niche.slug);
    let role_id = format!("role-{}", niche.slug);
    let (role, set_role) = signal(MemberRole::Operator);
    let typed_slug = slug.clone();
    let handle = Signal::derive(move || {
        adding
            .typed
            .with(|t| t.get(&typed_slug).cloned().unwrap_or_default())
    });
    // What the last add said, when it was for this niche.
    let said_slug = slug.clone();
    let said = Memo::new(move |_| {
        let (for_slug, handle) = adding.sent.get();
        if for_slug != said_slug {
            return None;
        }
        adding.act.value().with(|v| {
            v.as_ref().map(|result| match result {
                Ok(done) => Ok(done.clone()),
                Err(err) => Err(Adding::refusal(&handle, err)),
            })
        })
    });
    let refused = move || said.with(|s| matches!(s, Some(Err(_))));
    let described = {
        let (limit_id, error_id) = (limit_id.clone(), error_id.clone());
        move || {
            if refused() {
                format!("{limit_id} {error_id}")
            } else {
                limit_id.clone()
            }
        }
    };
    let add_slug = slug.clone();
    let add = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let handle = handle.get_untracked().trim().to_owned();
        adding.sent.set((add_slug.clone(), handle.clone()));
        adding.act.dispatch(Command::AddMember {
            slug: add_slug.clone(),
            handle,
            role: role.get_untracked(),
        });
    };
    let input_slug = slug.clone();
    let on_input = move |ev: leptos::ev::Event| {
        let value = event_target_value(&ev);
        adding.typed.update(|t| {
            t.insert(input_slug.clone(), value);
        });
    };
    let members = niche
        .members
        .into_iter()
        .map(|m| {
            let status = MemberStatus::of(&m.status);
            let control = if status == MemberStatus::Active {
                view! { <SuspendMember slug=slug.clone() handle=m.handle.clone() act=act/> }.into_any()
            } else {
                let command = Command::Reinstate { slug: slug.clone(), handle: m.handle.clone() };
                view! {
                    <button type="button" class="secondary small" disabled=busy on:click=move |_| { act.dispatch(command.clone()); }>
                        "Reinstate"<span class="visually-hidden">" "{m.handle.clone()}</span>
                    </button>
                }.into_any()
            };
            view! {
                <tr data-member=m.handle.clone()>
                    <td data-label="Handle">{m.handle.clone()}</td>
                    <td data-label="Role">{MemberRole::of(&m.role).to_string()}</td>
                    <td data-label="Status">{status.to_string()}</td>
                    <td class="row-action">{control}</td>
                </tr>
            }
        })
        .collect_view();
    // How the niche's people agree over its several-answer questions (none yet: nothing shown).
    let agreement = niche.agreement.filter(|a| a.questions > 0).map(|a| {
        let alpha = a.alpha.map_or_else(
            || "not defined yet (one option chosen throughout)".to_owned(),
            |alpha| format!("{alpha:.2}"),
        );
        let people = a
            .people
            .into_iter()
            .map(|p| {
                let share = if p.answers > 0 { p.agreed * 100 / p.answers } else { 0 };
                format!("{} {share} % ({} of {})", p.handle, p.agreed, p.answers)
            })
            .collect::<Vec<_>>()
            .join(" · ");
        view! {
            <p class="agreement muted">
                {format!(
                    "Agreement over {} several-answer question{}: Krippendorff's alpha {alpha}. With the plurality: ",
                    a.questions,
                    if a.questions == 1 { "" } else { "s" }
                )}
                {people}
            </p>
        }
    });
    view! {
        <article class="card niche-admin" data-slug=niche.slug.clone()>
            <h3><bdi>{niche.name}</bdi>" "<code>{niche.slug.clone()}</code>" "<span class="status">{NicheStatus::of(&niche.status).to_string()}</span></h3>
            <div class="table-wrap" tabindex="0" role="region" aria-label=format!("Members of {}", niche.slug)>
                <table class="stack members">
                    <thead><tr><th scope="col">"Handle"</th><th scope="col">"Role"</th><th scope="col">"Status"</th><th scope="col"><span class="visually-hidden">"Change"</span></th></tr></thead>
                    <tbody>{members}</tbody>
                </table>
            </div>
            {agreement}
            <form class="inline add-member" on:submit=add>
                <label for=handle_id.clone()>"Add a member"</label>
                <input id=handle_id type="text" required maxlength=HANDLE_MAX.to_string() placeholder="handle"
                    autocomplete="off" spellcheck="false"
                    aria-invalid=move || refused().to_string() aria-describedby=described
                    prop:value=handle on:input=on_input/>
                <label for=role_id.clone() class="visually-hidden">"Role"</label>
                <select id=role_id on:change=move |ev| set_role.set(MemberRole::of(event_target_value(&ev)))>
                    <option value="operator" selected>"operator"</option>
                    <option value="specialist">"specialist"</option>
                    <option value="observer">"observer"</option>
                </select>
                <button type="submit" disabled=move || busy.get() || adding.act.pending().get()>"Add"</button>
                <LimitNote id=limit_id value=handle max=HANDLE_MAX/>
                {move || said.get().map(|said| match said {
                    Ok(done) => view! { <p class="notice" role="status">{done}</p> }.into_any(),
                    Err(why) => view! { <p class="error field-error" role="alert" id=error_id.clone()>{why}</p> }.into_any(),
                })}
            </form>
            <BudgetEditor slug=slug act=budget_act/>
        </article>
    }
}

/// An amount typed into a budget field, in minor units, or why not.
fn amount(label: &str, typed: &str) -> Result<i64, String> {
    parse_money(typed).ok_or_else(|| {
        format!(
            "{label}: \"{}\" is not an amount of {CURRENCY}; write it like 25.30 (0 or more, at most two decimals)",
            typed.trim()
        )
    })
}

/// Minor units as the field shows them: 2530 as "25.30".
fn typed(minor: i64) -> String {
    money(minor, CURRENCY)
        .trim_end_matches(CURRENCY)
        .trim()
        .to_owned()
}

/// A niche's agent budget: where this month stands, and its limit and bounties to edit.
#[component]
fn BudgetEditor(slug: String, act: Act) -> impl IntoView {
    let busy = act.pending();
    let read_slug = slug.clone();
    let budget = LocalResource::new(move || {
        let slug = read_slug.clone();
        async move { api::run::<NicheBudget>(niche_budget::Variables { slug }).await }
    });
    // Re-read this month's figures after every change the section makes.
    Effect::new(move |_| {
        if act.version().get() > 0 {
            budget.refetch();
        }
    });
    let ids = ["monthly", "bounty", "max-bounty", "reuse-price"]
        .map(|field| format!("budget-{field}-{slug}"));
    let error_id = format!("budget-error-{slug}");
    let monthly = RwSignal::new(String::new());
    let bounty = RwSignal::new(String::new());
    let max_bounty = RwSignal::new(String::new());
    let reuse_price = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<String>);
    // The fields start from the stored settings once they are read.
    Effect::new(move |_| {
        if let Some(Ok(read)) = budget.get() {
            let b = read.budget;
            monthly.set(b.limit_minor.map(typed).unwrap_or_default());
            bounty.set(typed(b.bounty_minor));
            max_bounty.set(typed(b.max_bounty_minor));
            reuse_price.set(typed(b.reuse_price_minor));
        }
    });
    let save_slug = slug.clone();
    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let typed_monthly = monthly.get_untracked();
        let parsed = (|| {
            let monthly = match typed_monthly.trim() {
                "" => None,
                typed => Some(amount("The monthly limit", typed)?),
            };
            Ok::<_, String>(Command::SetBudget {
                slug: save_slug.clone(),
                monthly,
                bounty: amount("The bounty", &bounty.get_untracked())?,
                max_bounty: amount("The largest bounty", &max_bounty.get_untracked())?,
                reuse_price: amount("The reuse price", &reuse_price.get_untracked())?,
            })
        })();
        match parsed {
            Ok(command) => {
                problem.set(None);
                act.dispatch(command);
            }
            Err(why) => problem.set(Some(why)),
        }
    };
    let standing = move || {
        budget.get().map(|read| match read {
            Ok(read) => {
                let b = read.budget;
                let left = b
                    .remaining_minor
                    .map_or_else(|| "no limit".to_owned(), |r| money(r, CURRENCY));
                view! {
                    <p class="budget-month" data-budget-month="">
                        "This month: spent "{money(b.spent_minor, CURRENCY)}" (on reuses "{money(b.reuse_spend_minor, CURRENCY)}"), reserved "{money(b.reserved_minor, CURRENCY)}", left "{left}
                    </p>
                }
                .into_any()
            }
            Err(err) => view! { <p class="error">{err.to_string()}</p> }.into_any(),
        })
    };
    let [monthly_id, bounty_id, max_id, reuse_id] = ids;
    let invalid = move || problem.with(Option::is_some).to_string();
    let described = {
        let error_id = error_id.clone();
        move || problem.with(Option::is_some).then(|| error_id.clone())
    };
    let field = move |id: String, label: String, value: RwSignal<String>, required: bool| {
        let described = described.clone();
        let limit_id = format!("{id}-limit");
        let named = {
            let limit_id = limit_id.clone();
            move || match described() {
                Some(error_id) => format!("{limit_id} {error_id}"),
                None => limit_id.clone(),
            }
        };
        view! {
            <label for=id.clone()>{label}</label>
            <span class="money-field">
                <input id=id type="text" inputmode="decimal" autocomplete="off" required=required
                    maxlength=AMOUNT_MAX.to_string()
                    aria-invalid=invalid aria-describedby=named
                    prop:value=value on:input=move |ev| value.set(event_target_value(&ev))/>
                " "<span class="unit" aria-hidden="true">{CURRENCY}</span>
            </span>
            <LimitNote id=limit_id value=value max=AMOUNT_MAX/>
        }
    };
    view! {
        <form class="budget-editor" on:submit=save aria-label=format!("Budget of {slug}") novalidate>
            <h4>"Agent budget"</h4>
            {standing}
            {field(monthly_id, format!("Monthly limit in {CURRENCY} (empty for no limit)"), monthly, false)}
            {field(bounty_id, format!("Bounty per question in {CURRENCY}"), bounty, true)}
            {field(max_id, format!("Largest bounty in {CURRENCY}"), max_bounty, true)}
            {field(reuse_id, format!("Reuse price in {CURRENCY} (what an agent pays to rely on an entry)"), reuse_price, true)}
            {move || problem.get().map(|why| view! { <p class="error form-error" role="alert" id=error_id.clone()>{why}</p> })}
            <Show when=move || problem.with(Option::is_none)>
                <Outcome act=act/>
            </Show>
            <button type="submit" disabled=busy>"Save budget"</button>
        </form>
    }
}

/// "Suspend", asking first: what suspending does, then "Yes, suspend" or "Cancel" (Esc). The
/// question takes the focus; cancelling changes nothing and gives it back to "Suspend".
#[component]
fn SuspendMember(slug: String, handle: String, act: Act) -> impl IntoView {
    let busy = act.pending();
    let asking = RwSignal::new(false);
    let ask_ref = NodeRef::<leptos::html::Button>::new();
    let confirm_ref = NodeRef::<leptos::html::Div>::new();
    let prompt_id = format!("suspend-{slug}-{handle}");
    let cancel = move || {
        asking.set(false);
        request_animation_frame(move || {
            if let Some(button) = ask_ref.get_untracked() {
                let _ = button.focus();
            }
        });
    };
    let ask = move |_| {
        asking.set(true);
        request_animation_frame(move || {
            if let Some(question) = confirm_ref.get_untracked() {
                let _ = question.focus();
            }
        });
    };
    let command = Command::Suspend {
        slug: slug.clone(),
        handle: handle.clone(),
    };
    let question = format!(
        "Suspend {handle} from {slug}? They stop receiving its questions and cannot answer \
         them until they are reinstated; what they answered before stays."
    );
    let (hidden, yes_hidden, no_hidden) = (handle.clone(), handle.clone(), handle.clone());
    view! {
        <Show
            when=move || asking.get()
            fallback=move || {
                let hidden = hidden.clone();
                view! {
                    <button type="button" class="secondary small" node_ref=ask_ref disabled=busy on:click=ask>
                        "Suspend"<span class="visually-hidden">" "{hidden}</span>
                    </button>
                }
            }
        >
            <div class="member-confirm" role="group" aria-labelledby=prompt_id.clone() tabindex="-1" node_ref=confirm_ref
                on:keydown=move |ev: leptos::ev::KeyboardEvent| {
                    if ev.key() == "Escape" {
                        ev.prevent_default();
                        cancel();
                    }
                }>
                <p id=prompt_id.clone()>{question.clone()}</p>
                <button type="button" class="danger small" disabled=busy on:click={
                    let command = command.clone();
                    move |_| {
                        asking.set(false);
                        act.dispatch(command.clone());
                    }
                }>
                    "Yes, suspend"<span class="visually-hidden">" "{yes_hidden.clone()}</span>
                </button>
                " "
                <button type="button" class="secondary small" on:click=move |_| cancel()>
                    "Cancel"<span class="visually-hidden">" suspending "{no_hidden.clone()}</span>
                </button>
            </div>
        </Show>
    }
}
