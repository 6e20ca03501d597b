//! Ask askloop a question and wait for the answer, as an agent would.
//!
//! ```sh
//! ASKLOOP_URL=http://127.0.0.1:3000 ASKLOOP_SIGNING_SECRET=dev-secret \
//!   cargo run -p askloop-agent --example ask_and_wait -- games 'Which date?' 'Early access or 1.0?' \
//!   'ea=Early access' 'full=1.0'
//! ```
//!
//! - `ASKLOOP_URL`, `ASKLOOP_SIGNING_SECRET`: where askloop is and the secret to sign with.
//! - `ASKLOOP_AGENT`: a registered agent's slug (its own secret then signs); unset for the
//!   built-in default agent.
//! - The niche, title and question are the first three arguments, or `ASKLOOP_NICHE`,
//!   `ASKLOOP_TITLE`, `ASKLOOP_QUESTION`; further arguments are options, `id=label`.
//! - `ASKLOOP_EXTERNAL_ID`: the question's id (run again with the same one and it is the same
//!   question); `ASKLOOP_WAIT_SECONDS`: how long to wait for the answer (600 by default).
//!
//! It prints `asked: id=<id> externalId=<id> …`, then once answered `answer: <text>`,
//! `option: <id>`, `answered by: <handle>` and `review: <state>`, and exits 0. Anything else —
//! a refusal, no answer in time, a question dismissed, expired or sent back for research — is a
//! message on stderr and exit code 1 (2 for a usage error).

use std::process::ExitCode;
use std::time::Duration;

use askloop_agent::{Client, Error, Question, Status};

/// What the command line and the environment asked for.
struct Request {
    url: String,
    secret: String,
    agent: Option<String>,
    question: Question,
    wait: Duration,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn request() -> Result<Request, String> {
    let url = env("ASKLOOP_URL").ok_or("ASKLOOP_URL is not set (where askloop serves)")?;
    let secret = env("ASKLOOP_SIGNING_SECRET")
        .ok_or("ASKLOOP_SIGNING_SECRET is not set (the secret the agent signs with)")?;
    let mut args = std::env::args().skip(1);
    let mut field = |variable: &str| {
        args.next().or_else(|| env(variable)).ok_or(format!(
            "give the {variable} as an argument or in {variable}"
        ))
    };
    let niche = field("ASKLOOP_NICHE")?;
    let title = field("ASKLOOP_TITLE")?;
    let text = field("ASKLOOP_QUESTION")?;
    let mut question = Question::new(niche, title, text);
    for option in args {
        let (id, label) = option
            .split_once('=')
            .ok_or(format!("an option is id=label, not '{option}'"))?;
        question = question.option(id, label);
    }
    if let Some(id) = env("ASKLOOP_EXTERNAL_ID") {
        question = question.external_id(id);
    }
    let wait = match env("ASKLOOP_WAIT_SECONDS") {
        Some(seconds) => seconds
            .parse()
            .map(Duration::from_secs)
            .map_err(|_| format!("ASKLOOP_WAIT_SECONDS is not a number of seconds: {seconds}"))?,
        None => Duration::from_secs(600),
    };
    Ok(Request {
        url,
        secret,
        agent: env("ASKLOOP_AGENT"),
        question,
        wait,
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let request = match request() {
        Ok(request) => request,
        Err(usage) => {
            eprintln!("ask_and_wait: {usage}");
            return ExitCode::from(2);
        }
    };
    match ask_and_wait(request).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("ask_and_wait: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn ask_and_wait(request: Request) -> Result<(), String> {
    let mut askloop = Client::new(request.url, request.secret);
    if let Some(agent) = request.agent {
        askloop = askloop.agent(agent);
    }
    let asked = askloop
        .ask(&request.question)
        .await
        .map_err(|err| format!("askloop did not take the question: {err}"))?;
    println!(
        "asked: id={} externalId={} niche={} duplicate={} expiresAt={}",
        asked.id,
        asked.external_id,
        asked.niche,
        asked.duplicate,
        asked.expires_at.to_rfc3339()
    );
    println!(
        "waiting for the answer (up to {} s)",
        request.wait.as_secs()
    );
    let question = askloop
        .wait_for_answer(&asked.niche, &asked.external_id, request.wait)
        .await
        .map_err(|err| match err {
            Error::TimedOut { .. } => format!(
                "no answer within {} s; the question stays open (run again with \
                 ASKLOOP_EXTERNAL_ID={} to keep waiting)",
                request.wait.as_secs(),
                asked.external_id
            ),
            other => format!("waiting for the answer failed: {other}"),
        })?;
    match (question.status, question.answer) {
        (Status::Answered, Some(answer)) => {
            println!("answer: {}", answer.body.as_deref().unwrap_or("(no text)"));
            if let Some(option) = &answer.option_id {
                let label = request
                    .question
                    .options
                    .iter()
                    .find(|o| &o.id == option)
                    .map_or("", |o| o.label.as_str());
                println!("option: {option} {label}");
            }
            println!("answered by: {}", answer.answered_by);
            println!("review: {}", answer.review.as_str());
            if answer.review.is_discarded() {
                return Err("the answer was rejected in review: discard it".to_owned());
            }
            Ok(())
        }
        (Status::Researching, _) => Err(
            "people sent the question back for more research; add it with add_research and wait again"
                .to_owned(),
        ),
        (status, _) => Err(format!("the question ended {status:?} without an answer")),
    }
}
