//! The agent side of the loop: `askloop sign`, `askloop ask` and `askloop withdraw`.

use std::io::Read;
use std::path::PathBuf;

use askloop_wire::Field;
use clap::Args;
use serde_json::Value;

use crate::config::Config;
use crate::domain::agents::AGENT_HEADER;
use crate::domain::intake::{AnswersRequest, AskOption, AskRequest, ExchangeKind, Identifier};
use crate::domain::signing::SIGNATURE_HEADER;
use crate::domain::withdraw::WithdrawRequest;

/// Arguments of `askloop sign`.
#[derive(Debug, Args)]
pub struct SignArgs {
    /// Sign as of this unix time instead of now.
    #[arg(long)]
    at: Option<i64>,
}

/// Arguments of `askloop ask`.
#[derive(Debug, Args)]
pub struct AskArgs {
    /// Where askloop is.
    #[arg(long, env = "ASKLOOP_URL", default_value = "http://127.0.0.1:3000")]
    url: String,
    /// A JSON file with the whole body, sent byte for byte (the flags below are then ignored).
    #[arg(long, conflicts_with_all = ["niche", "title", "question"])]
    file: Option<PathBuf>,
    /// The niche's slug.
    #[arg(long, required_unless_present = "file")]
    niche: Option<String>,
    /// The question's title.
    #[arg(long, required_unless_present = "file")]
    title: Option<String>,
    /// The question itself.
    #[arg(long, required_unless_present = "file")]
    question: Option<String>,
    /// What the agent found so far.
    #[arg(long)]
    context: Option<String>,
    /// The agent's own id for the question (a repeat is recognised as a duplicate).
    #[arg(long)]
    external_id: Option<String>,
    /// Which agent is asking (the body's free-text `agentId`).
    #[arg(long)]
    agent_id: Option<String>,
    /// Ask as this registered agent (sent as X-Askloop-Agent); CHOVY_SIGNING_SECRET must then
    /// hold that agent's secret.
    #[arg(long)]
    agent: Option<String>,
    /// low, normal or high.
    #[arg(long)]
    urgency: Option<String>,
    /// An option as id=label; repeat for more.
    #[arg(long = "option", value_parser = parse_option)]
    options: Vec<(String, String)>,
    /// The bounty offered, in minor units.
    #[arg(long)]
    bounty_minor: Option<i64>,
    /// How long the question may wait, in seconds.
    #[arg(long)]
    expires_in: Option<i64>,
    /// Hand people a task instead of asking a question: `--question` says what to do, and the
    /// agent is charged what it actually cost, up to `--budget-limit-minor`.
    #[arg(long, requires = "budget_limit_minor", conflicts_with_all = ["bounty_minor", "options"])]
    task: bool,
    /// A task's budget limit, in minor units.
    #[arg(long, requires = "task")]
    budget_limit_minor: Option<i64>,
    /// What a task should deliver.
    #[arg(long, requires = "task")]
    deliverable: Option<String>,
    /// Ask this many people (2 to 7) instead of one; the question needs options.
    #[arg(long, conflicts_with = "task")]
    answers: Option<i64>,
    /// With --answers: the share of the answers one option needs for a consensus (0.5–1.0).
    #[arg(long, requires = "answers")]
    agreement: Option<f64>,
}

fn parse_option(raw: &str) -> Result<(String, String), String> {
    raw.split_once('=')
        .map(|(id, label)| (id.to_owned(), label.to_owned()))
        .filter(|(id, label)| !id.is_empty() && !label.is_empty())
        .ok_or_else(|| format!("'{raw}' is not id=label"))
}

/// Print the signature header for stdin's bytes.
pub fn sign(config: &Config, args: SignArgs) -> anyhow::Result<()> {
    let mut body = Vec::new();
    std::io::stdin().read_to_end(&mut body)?;
    let at = args.at.unwrap_or_else(|| chrono::Utc::now().timestamp());
    let header = config
        .signing
        .sign_header(&body, at)
        .ok_or_else(|| anyhow::anyhow!("CHOVY_SIGNING_SECRET is not set"))?;
    println!("{header}");
    Ok(())
}

/// Sign and post a question; print the answer; fail unless askloop stored it.
pub async fn ask(config: &Config, args: AskArgs) -> anyhow::Result<()> {
    let body: Vec<u8> = match &args.file {
        Some(path) => {
            let bytes = std::fs::read(path)
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
            serde_json::from_slice::<Value>(&bytes)
                .map_err(|e| anyhow::anyhow!("{} is not JSON: {e}", path.display()))?;
            bytes
        }
        None => serde_json::to_vec(&body_from_flags(&args))?,
    };
    post_signed(
        config,
        &args.url,
        "/api/v1/internal/expert-questions",
        args.agent.as_deref(),
        body,
        "the question",
    )
    .await
}

/// Arguments of `askloop withdraw`.
#[derive(Debug, Args)]
pub struct WithdrawArgs {
    /// Where askloop is.
    #[arg(long, env = "ASKLOOP_URL", default_value = "http://127.0.0.1:3000")]
    url: String,
    /// askloop's id of the question; or give --external-id.
    #[arg(
        long,
        required_unless_present = "external_id",
        conflicts_with = "external_id"
    )]
    question_id: Option<i64>,
    /// The agent's own id of the question; or give --question-id.
    #[arg(long)]
    external_id: Option<String>,
    /// The niche's slug, needed only when the external id was used in several niches.
    #[arg(long)]
    niche: Option<String>,
    /// Why (at most 500 characters): kept in the audit log and sent with the event.
    #[arg(long)]
    reason: Option<String>,
    /// Withdraw as this registered agent (sent as X-Askloop-Agent); CHOVY_SIGNING_SECRET must
    /// then hold that agent's secret.
    #[arg(long)]
    agent: Option<String>,
}

/// Sign and post a withdrawal; print the answer; fail unless askloop took it (a question
/// already settled or withdrawn is taken: the printed outcome says which).
pub async fn withdraw(config: &Config, args: WithdrawArgs) -> anyhow::Result<()> {
    let body = WithdrawRequest {
        question_id: args
            .question_id
            .map(|id| Identifier::Number(id.into()))
            .into(),
        external_id: args.external_id,
        niche_slug: args.niche,
        reason: args.reason,
    };
    post_signed(
        config,
        &args.url,
        "/api/v1/internal/expert-questions/withdraw",
        args.agent.as_deref(),
        serde_json::to_vec(&body)?,
        "the withdrawal",
    )
    .await
}

/// Sign `body` and post it to `path` on `url`; print the status and the response; fail unless
/// askloop answered 2xx.
async fn post_signed(
    config: &Config,
    url: &str,
    path: &str,
    agent: Option<&str>,
    body: Vec<u8>,
    what: &str,
) -> anyhow::Result<()> {
    let header = config
        .signing
        .sign_header(&body, chrono::Utc::now().timestamp())
        .ok_or_else(|| anyhow::anyhow!("CHOVY_SIGNING_SECRET is not set"))?;
    let url = format!("{}{path}", url.trim_end_matches('/'));
    let mut request = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .header(SIGNATURE_HEADER, header);
    if let Some(agent) = agent {
        request = request.header(AGENT_HEADER, agent);
    }
    let response = request
        .body(body)
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("cannot reach {url}: {e}"))?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    println!("{} {text}", status.as_u16());
    if status.is_success() {
        Ok(())
    } else {
        anyhow::bail!("askloop refused {what} ({status})")
    }
}

/// The flags as the intake's typed request, in an event envelope (`{"payload": …}`), which
/// the intake reads like the bare fields.
fn body_from_flags(args: &AskArgs) -> AskRequest {
    let mut request = AskRequest {
        niche_slug: args.niche.clone().into(),
        title: args.title.clone().into(),
        question: args.question.clone().into(),
        options: Field::Given(
            args.options
                .iter()
                .map(|(id, label)| Field::Given(AskOption::new(id, label)))
                .collect(),
        ),
        context: args.context.clone().into(),
        external_id: args.external_id.clone().map(Into::into).into(),
        agent_id: args.agent_id.clone().map(Into::into).into(),
        urgency: args.urgency.clone().into(),
        bounty_minor: args.bounty_minor.into(),
        expires_in_seconds: args.expires_in.into(),
        budget_limit_minor: args.budget_limit_minor.into(),
        deliverable: args.deliverable.clone().into(),
        answers: args
            .answers
            .map(|wanted| AnswersRequest {
                wanted: Field::Given(wanted),
                agreement: args.agreement.into(),
                ..AnswersRequest::default()
            })
            .into(),
        ..AskRequest::default()
    };
    if args.task {
        request.kind = Field::Given(ExchangeKind::Task.as_str().to_owned());
    }
    request.in_envelope()
}
