//! A niche's budget this month as GraphQL shows it (its state, entries and what each exchange
//! cost), and the admin mutation that sets the budget and bounties
//! (docs/contract.md#budgets-and-bounties).

use async_graphql::{Context, Enum, ID, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use entity::budget_entries;

use crate::domain::ledger::BudgetState as LedgerState;
use crate::graphql::enums::BudgetEntryKind;
use crate::graphql::error_door::GqlResultExt;
use crate::graphql::writer;
use crate::service::money::ledger_views::{self, BudgetView, NicheBudget};

/// How a budget stands.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
pub enum BudgetState {
    /// Plenty left, or no limit.
    Ample,
    /// Less than a fifth left.
    Tight,
    /// Nothing left.
    Exhausted,
}

impl From<LedgerState> for BudgetState {
    fn from(state: LedgerState) -> Self {
        match state {
            LedgerState::Ample => BudgetState::Ample,
            LedgerState::Tight => BudgetState::Tight,
            LedgerState::Exhausted => BudgetState::Exhausted,
        }
    }
}

/// One line of a niche's budget ledger.
#[derive(SimpleObject, Clone)]
pub struct BudgetEntry {
    /// What the line records.
    pub kind: BudgetEntryKind,
    /// How much, minor units.
    pub amount_minor: i64,
    /// The question whose bounty it is.
    pub question_id: ID,
    /// When.
    pub created_at: DateTime<Utc>,
}

impl From<budget_entries::Model> for BudgetEntry {
    fn from(e: budget_entries::Model) -> Self {
        Self {
            kind: e.kind.into(),
            amount_minor: e.amount_minor,
            question_id: ID(e.question_id.to_string()),
            created_at: e.created_at,
        }
    }
}

/// What one exchange reserved, cost and released over its life (reserved = actual + released +
/// still reserved, counting a charge given back as never charged).
#[derive(SimpleObject, Clone)]
pub struct ExchangeCost {
    /// The question or task.
    pub question_id: ID,
    /// Its title: UNTRUSTED text.
    pub title: String,
    /// A question or a task.
    pub kind: crate::graphql::enums::ExchangeKind,
    /// Its limit: a task's budget limit, a question's bounty.
    pub limit_minor: i64,
    /// Everything reserved for it (more than the limit if it was reopened and reserved again).
    pub reserved_minor: i64,
    /// What it actually cost: charged, less any charge given back.
    pub actual_minor: i64,
    /// Released back to the budget.
    pub released_minor: i64,
    /// Still reserved.
    pub outstanding_minor: i64,
}

impl From<ledger_views::ExchangeCost> for ExchangeCost {
    fn from(e: ledger_views::ExchangeCost) -> Self {
        Self {
            question_id: ID(e.question_id.to_string()),
            title: e.title,
            kind: e.kind.into(),
            limit_minor: e.limit,
            reserved_minor: e.reserved,
            actual_minor: e.actual,
            released_minor: e.released,
            outstanding_minor: e.outstanding,
        }
    }
}

/// A niche's agent budget this month.
#[derive(SimpleObject, Clone)]
pub struct Budget {
    /// The niche.
    pub niche_slug: String,
    /// The monthly limit; null is no limit.
    pub limit_minor: Option<i64>,
    /// Charged this month.
    pub spent_minor: i64,
    /// Reserved and not yet charged or released.
    pub reserved_minor: i64,
    /// What is left; null without a limit.
    pub remaining_minor: Option<i64>,
    /// Ample, tight or exhausted.
    pub state: BudgetState,
    /// When the month starts again.
    pub resets_at: DateTime<Utc>,
    /// The bounty a question gets unless it names its own.
    pub bounty_minor: i64,
    /// The largest bounty a question may carry.
    pub max_bounty_minor: i64,
    /// What one reuse of the niche's knowledge costs an agent (0: free).
    pub reuse_price_minor: i64,
    /// This month's entries, newest first.
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    pub entries: Vec<BudgetEntry>,
    /// The exchanges whose budget moved this month (at most 100), most recently moved first:
    /// limit, actual cost and released for each.
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    pub exchanges: Vec<ExchangeCost>,
    /// Spent this month on questions' bounties (charges less charges given back).
    pub question_spend_minor: i64,
    /// Spent this month on tasks' actual costs (charges less charges given back).
    pub task_spend_minor: i64,
    /// Spent this month on reuses of the niche's knowledge (less reuses given back).
    pub reuse_spend_minor: i64,
}

pub(super) fn budget_of(view: BudgetView) -> Budget {
    let state = view.budget;
    Budget {
        niche_slug: view.niche.slug,
        limit_minor: state.limit,
        spent_minor: state.spent,
        reserved_minor: state.reserved,
        remaining_minor: state.remaining(),
        state: state.state().into(),
        resets_at: view.resets_at,
        bounty_minor: view.niche.bounty_minor,
        max_bounty_minor: view.niche.max_bounty_minor,
        reuse_price_minor: view.niche.reuse_price_minor,
        entries: view.entries.into_iter().map(BudgetEntry::from).collect(),
        exchanges: view.exchanges.into_iter().map(ExchangeCost::from).collect(),
        question_spend_minor: view.spend.questions,
        task_spend_minor: view.spend.tasks,
        reuse_spend_minor: view.spend.reuses,
    }
}

/// Money mutations.
#[derive(Default)]
pub struct MoneyMutation;

#[Object]
impl MoneyMutation {
    /// Set a niche's monthly agent budget (null: no limit), its default bounty, its largest
    /// bounty and, when given, what one reuse of its knowledge costs an agent (admins only;
    /// audited).
    async fn set_niche_budget(
        &self,
        ctx: &Context<'_>,
        niche_slug: String,
        monthly_budget_minor: Option<i64>,
        bounty_minor: i64,
        max_bounty_minor: i64,
        reuse_price_minor: Option<i64>,
    ) -> Result<Budget> {
        let (db, caller) = writer(ctx)?;
        let view = ledger_views::set_niche_budget(
            db,
            caller.viewer(),
            &niche_slug,
            NicheBudget {
                monthly_budget_minor,
                bounty_minor,
                max_bounty_minor,
                reuse_price_minor,
            },
            Utc::now(),
        )
        .await
        .gql()?;
        Ok(budget_of(view))
    }
}
