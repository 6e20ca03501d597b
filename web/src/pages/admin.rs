//! `/admin`: the admin desk in sections, each its own URL with its count in its tab — Review
//! (`/admin`, `/admin/review`), Members & budgets, Deliveries, Payouts, Revenue, Signals and
//! Audit — and a link to the agents page (`/admin/agents`). Every change goes through an admin
//! mutation, which checks for an admin on the server; these pages only decide what to show.
//! The desk is live for review: whatever section is open, the `reviewInbox` subscription reads
//! the tabs' counts again when something arrives for review or is decided, and the Review
//! section reads its items again.

mod audit;
mod deliveries;
mod members;
mod payouts;
mod revenue;
mod review;
mod signals;

use leptos::prelude::*;
use leptos_router::hooks::use_location;

use crate::api::{self, ApiError, ErrorCode};
use crate::components::title::page_title;
use crate::live::{self, LiveEvent};
use crate::operations::{
    AddMember, AdminCounts, MarkPayoutFailed, MarkPayoutPaid, Redeliver, ReinstateMember,
    ReviewInboxChanges, SchedulePayout, SetNicheBudget, SuspendMember, VerifyPayoutAddress,
    add_member, admin_counts, mark_payout_failed, mark_payout_paid, redeliver, reinstate_member,
    review_inbox_changes, schedule_payout, set_niche_budget, suspend_member, verify_payout_address,
};
use crate::vocab::MemberRole;

/// One section of the admin desk.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Section {
    Review,
    Members,
    Deliveries,
    Payouts,
    Revenue,
    Signals,
    Audit,
}

impl Section {
    const ALL: [Section; 7] = [
        Section::Review,
        Section::Members,
        Section::Deliveries,
        Section::Payouts,
        Section::Revenue,
        Section::Signals,
        Section::Audit,
    ];

    /// The section a path shows (`/admin` is Review).
    fn of(path: &str) -> Self {
        let last = path
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or_default();
        Self::ALL
            .into_iter()
            .find(|s| s.slug() == last)
            .unwrap_or(Section::Review)
    }

    fn slug(self) -> &'static str {
        match self {
            Section::Review => "review",
            Section::Members => "members",
            Section::Deliveries => "deliveries",
            Section::Payouts => "payouts",
            Section::Revenue => "revenue",
            Section::Signals => "signals",
            Section::Audit => "audit",
        }
    }

    /// Its name, in its tab and the document's title.
    fn name(self) -> &'static str {
        match self {
            Section::Review => "Review",
            Section::Members => "Members & budgets",
            Section::Deliveries => "Deliveries",
            Section::Payouts => "Payouts",
            Section::Revenue => "Revenue",
            Section::Signals => "Signals",
            Section::Audit => "Audit",
        }
    }

    /// What its tab counts, in words ("(3)", "(failed 2)"), once the counts are read.
    fn count(self, counts: &admin_counts::AdminCountsAdminCounts) -> Option<String> {
        match self {
            Section::Review => Some(format!("({})", counts.review)),
            Section::Deliveries => Some(format!("(failed {})", counts.failed_deliveries)),
            Section::Payouts => Some(format!("(owed {})", counts.owed)),
            Section::Signals => Some(format!("(new {})", counts.new_signals)),
            Section::Members | Section::Revenue | Section::Audit => None,
        }
    }
}

/// The numbers on the tabs, read once for the desk and again after every change.
#[derive(Clone, Copy)]
struct Counts(LocalResource<Result<admin_counts::ResponseData, ApiError>>);

impl Counts {
    /// The desk's counts, to read again after a change (call while a section is built).
    fn of_desk() -> Option<Self> {
        use_context::<Counts>()
    }

    /// Read the counts again (something changed).
    fn refresh(self) {
        self.0.refetch();
    }
}

/// How many times the review inbox changed (live) since the desk opened: the Review section
/// reads its items again on each.
#[derive(Clone, Copy)]
struct ReviewPulse(RwSignal<u64>);

impl ReviewPulse {
    /// The desk's pulse (call while a section is built).
    fn of_desk() -> Option<Self> {
        use_context::<ReviewPulse>()
    }

    /// Subscribe the caller to it.
    fn track(self) {
        self.0.track();
    }
}

lazy_page! {
    /// `/admin/*` as a lazily loaded route: the desk's code is its own wasm chunk, fetched the first
    /// time someone opens one of its sections, so the operators' dashboard never downloads it.
    AdminRoute => AdminPage
}

/// The admin desk: its tabs, then the section the URL names.
#[component]
fn AdminPage() -> impl IntoView {
    let location = use_location();
    let section = Memo::new(move |_| Section::of(&location.pathname.get()));
    let counts = LocalResource::new(|| api::run::<AdminCounts>(admin_counts::Variables));
    provide_context(Counts(counts));
    let pulse = RwSignal::new(0_u64);
    provide_context(ReviewPulse(pulse));
    // Something arrived for review or was decided, here or by another admin: the counts and
    // the inbox are read again. (Re)connected, they are read again too: what changed while the
    // connection was away was not delivered. A refusal (not an admin) is shown by the counts.
    let dropped = RwSignal::new(false);
    live::subscribe::<ReviewInboxChanges>(
        review_inbox_changes::Variables,
        move |event| match event {
            LiveEvent::Connected | LiveEvent::Next(_) => {
                dropped.set(false);
                counts.refetch();
                pulse.update(|n| *n += 1);
            }
            LiveEvent::Dropped => dropped.set(true),
            LiveEvent::Failed(_) => {}
        },
    );
    page_title(move || format!("{} · Admin", section.get().name()));
    // Someone who is not an admin is told so, and offered none of the desk. (A memo: the desk
    // is built again only when this changes, never when the counts are merely read again.)
    let refused = Memo::new(move |_| {
        counts.get().and_then(|read| match read {
            Err(err) if err.code == ErrorCode::Forbidden => {
                Some((err.to_string(), err.reason.clone()))
            }
            _ => None,
        })
    });
    let refusal = move || {
        refused.get().map(|(words, reason)| {
            view! { <p class="error" role="alert" data-reason=reason>{FORBIDDEN}". "{words}</p> }
        })
    };
    view! {
        <main class="admin">
            <h1>"Admin"</h1>
            <Show when=move || refused.with(Option::is_none) fallback=refusal>
                {move || dropped.get().then(|| view! {
                    <p class="banner" role="status">"Connection lost. Reconnecting…"</p>
                })}
                <nav class="admin-tabs" aria-label="Admin sections">
                    <ul>
                        {Section::ALL.into_iter().map(|s| view! { <Tab section=s current=section counts=counts/> }).collect_view()}
                        <li><a href="/admin/agents">"Agents"</a></li>
                    </ul>
                </nav>
                {move || match section.get() {
                    Section::Review => view! { <review::ReviewSection/> }.into_any(),
                    Section::Members => view! { <members::MembersSection/> }.into_any(),
                    Section::Deliveries => view! { <deliveries::DeliveriesSection/> }.into_any(),
                    Section::Payouts => view! { <payouts::PayoutsSection/> }.into_any(),
                    Section::Revenue => view! { <revenue::RevenueSection/> }.into_any(),
                    Section::Signals => view! { <signals::SignalsSection/> }.into_any(),
                    Section::Audit => view! { <audit::AuditSection/> }.into_any(),
                }}
            </Show>
        </main>
    }
}

/// One section's tab: its name and count; `aria-current` on the section shown.
#[component]
fn Tab(
    section: Section,
    current: Memo<Section>,
    counts: LocalResource<Result<admin_counts::ResponseData, ApiError>>,
) -> impl IntoView {
    let count = move || {
        counts
            .get()
            .and_then(Result::ok)
            .and_then(|c| section.count(&c.admin_counts))
            .map(|words| view! { " "<span class="tab-count" data-count="">{words}</span> })
    };
    let here = move || (current.get() == section).then_some("page");
    view! {
        <li>
            <a href=format!("/admin/{}", section.slug()) aria-current=here data-section=section.slug()>
                {section.name()}{count}
            </a>
        </li>
    }
}

/// What a refusal on these pages says when the caller is not an admin.
const FORBIDDEN: &str = "This page is for askloop's admins";

/// Something an admin does in a section: one mutation each.
#[derive(Clone)]
enum Command {
    AddMember {
        slug: String,
        handle: String,
        role: MemberRole,
    },
    Suspend {
        slug: String,
        handle: String,
    },
    Reinstate {
        slug: String,
        handle: String,
    },
    Redeliver {
        id: String,
    },
    VerifyAddress {
        handle: String,
        address: String,
    },
    SchedulePayout {
        handle: String,
        currency: String,
    },
    MarkPaid {
        id: String,
        reference: String,
    },
    MarkFailed {
        id: String,
        reason: String,
    },
    SetBudget {
        slug: String,
        monthly: Option<i64>,
        bounty: i64,
        max_bounty: i64,
        reuse_price: i64,
    },
}

impl Command {
    /// Send the mutation; what to tell the admin when it worked.
    async fn run(self) -> Result<String, ApiError> {
        Ok(match self {
            Self::AddMember { slug, handle, role } => {
                let done = format!("{handle} is now a member of {slug}.");
                api::send::<AddMember>(add_member::Variables { slug, handle, role }).await?;
                done
            }
            Self::Suspend { slug, handle } => {
                let done = format!("{handle} is suspended in {slug}.");
                api::send::<SuspendMember>(suspend_member::Variables { slug, handle }).await?;
                done
            }
            Self::Reinstate { slug, handle } => {
                let done = format!("{handle} is active again in {slug}.");
                api::send::<ReinstateMember>(reinstate_member::Variables { slug, handle }).await?;
                done
            }
            Self::Redeliver { id } => {
                api::send::<Redeliver>(redeliver::Variables { id }).await?;
                "Queued to be sent again; the agent sees the same envelope id.".to_owned()
            }
            Self::VerifyAddress { handle, address } => {
                let done = format!("{handle}'s payout address is verified.");
                api::send::<VerifyPayoutAddress>(verify_payout_address::Variables {
                    handle,
                    address,
                })
                .await?;
                done
            }
            Self::SchedulePayout { handle, currency } => {
                let done = format!("A payout to {handle} in {currency} is scheduled.");
                api::send::<SchedulePayout>(schedule_payout::Variables { handle, currency })
                    .await?;
                done
            }
            Self::MarkPaid { id, reference } => {
                api::send::<MarkPayoutPaid>(mark_payout_paid::Variables { id, reference }).await?;
                "Marked paid.".to_owned()
            }
            Self::MarkFailed { id, reason } => {
                api::send::<MarkPayoutFailed>(mark_payout_failed::Variables { id, reason }).await?;
                "Marked failed: its money is owed again.".to_owned()
            }
            Self::SetBudget {
                slug,
                monthly,
                bounty,
                max_bounty,
                reuse_price,
            } => {
                let done = format!("The budget of {slug} is saved.");
                api::send::<SetNicheBudget>(set_niche_budget::Variables {
                    slug,
                    monthly,
                    bounty,
                    max_bounty,
                    reuse_price: Some(reuse_price),
                })
                .await?;
                done
            }
        })
    }
}

/// A section's one way to change things: its pending state disables every button.
type Act = Action<Command, Result<String, ApiError>>;

/// A section's action: run the command, then re-read the section (`refresh`) and the tabs'
/// counts, whatever happened, so the page shows things as they are now.
fn desk(refresh: impl Fn() + Copy + 'static) -> Act {
    let counts = Counts::of_desk();
    Action::new_local(move |command: &Command| {
        let command = command.clone();
        async move {
            let result = command.run().await;
            refresh();
            if let Some(counts) = counts {
                counts.refresh();
            }
            result
        }
    })
}

/// What the last change did, said where the section starts (a status or an alert).
#[component]
fn Outcome(act: Act) -> impl IntoView {
    move || {
        act.value().get().map(|result| match result {
            Ok(text) => view! { <p class="notice" role="status">{text}</p> }.into_any(),
            Err(err) => view! { <p class="error" role="alert">{err.to_string()}</p> }.into_any(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Section;

    #[test]
    fn each_path_names_its_section_and_the_desk_itself_is_review() {
        assert_eq!(Section::of("/admin"), Section::Review);
        assert_eq!(Section::of("/admin/"), Section::Review);
        assert_eq!(Section::of("/admin/audit"), Section::Audit);
        assert_eq!(Section::of("/admin/members"), Section::Members);
        for s in Section::ALL {
            assert_eq!(Section::of(&format!("/admin/{}", s.slug())), s);
        }
    }
}
