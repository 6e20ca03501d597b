//! `cargo xtask run [-- serve args]`: build the dashboard and the release server side by side,
//! then serve.

use crate::{build_web, cargo, status};

/// Build the dashboard and the server, then `askloop serve` with `args` (a leading `--` dropped).
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let mut server = cargo();
    server.args(["build", "--release", "--package", "askloop", "--bins"]);
    build_web::beside(server, "building askloop")?;
    let mut serve = cargo();
    serve.args(["run", "--release", "--package", "askloop", "--", "serve"]);
    serve.args(args.iter().filter(|a| a.as_str() != "--"));
    status(serve, "askloop")
}
