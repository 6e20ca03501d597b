//! `askloop knowledge export|verify`: a niche's knowledge as JSON lines chained by SHA-256, and
//! the check of such a file (docs/contract.md#knowledge).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;

use crate::config::Config;
use crate::domain::chain::{self, Sealer};
use crate::error::ServiceError;
use crate::service::knowledge;
use crate::startup;

#[derive(Debug, Subcommand)]
pub enum KnowledgeCommand {
    /// Write a niche's current knowledge entries, oldest first, as JSON lines with their
    /// provenance, each carrying prevHash and hash (SHA-256); the last line's hash is the head.
    Export {
        /// The niche.
        #[arg(long)]
        niche: String,
        /// Write here instead of standard output (written whole, or not at all).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check an export's chain: print its head, or name the first line that does not hold.
    Verify {
        /// The export.
        file: PathBuf,
    },
}

pub async fn run(config: Config, command: KnowledgeCommand) -> anyhow::Result<()> {
    match command {
        KnowledgeCommand::Export { niche, out } => export(&config, &niche, out).await,
        KnowledgeCommand::Verify { file } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let verified = chain::verify(&text)
                .map_err(|broken| anyhow::anyhow!("{}: {broken}", file.display()))?;
            println!(
                "{}: {} entries, the chain holds; head {}",
                file.display(),
                verified.lines,
                verified.head
            );
            Ok(())
        }
    }
}

async fn export(config: &Config, niche: &str, out: Option<PathBuf>) -> anyhow::Result<()> {
    let db = startup::connect_for_a_command(config).await?;
    // A file is written beside its name and moved into place when whole, so an export cut
    // short leaves no file that looks complete.
    let partial = out.as_ref().map(|path| {
        let mut name = path.clone().into_os_string();
        name.push(".partial");
        PathBuf::from(name)
    });
    let mut sink: Box<dyn Write> = match &partial {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot write {}", path.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let mut sealer = Sealer::default();
    let written = knowledge::export(&db, niche, |record| {
        writeln!(sink, "{}", sealer.line(record))
            .map_err(|err| ServiceError::Internal(anyhow::anyhow!("writing the export: {err}")))
    })
    .await;
    let written = match written {
        Ok(written) => written,
        Err(err) => {
            drop(sink);
            if let Some(path) = &partial {
                let _ = std::fs::remove_file(path);
            }
            return Err(err.into());
        }
    };
    sink.flush().context("writing the export")?;
    drop(sink);
    let summary = format!(
        "exported {written} entries of '{}'; head {}",
        niche.to_lowercase(),
        sealer.head()
    );
    match (partial, out) {
        (Some(partial), Some(out)) => {
            std::fs::rename(&partial, &out)
                .with_context(|| format!("cannot move the export to {}", out.display()))?;
            println!("{summary} ({})", out.display());
        }
        _ => eprintln!("{summary}"),
    }
    Ok(())
}
