//! The pinned npm packages xtask installs under `target/tools`, each in a folder of its own
//! named after its package and version, the first time something needs it.
//!
//! The dashboard's wasm is shrunk as `wasm-opt -Oz` would, byte for byte, by
//! `xtask/shrink-wasm.mjs` over the JavaScript API of the npm package `binaryen` (Debian's older
//! binaryen produces a bundle that breaks at run time). The browser tests check pages with
//! axe-core, the npm package `axe-core` (the tests find it under `target/tools`, or at
//! `ASKLOOP_AXE`). A delivery askloop signed with the Standard Webhooks scheme is checked by that
//! scheme's own npm library, `standardwebhooks` (from `target/tools`, or
//! `ASKLOOP_STANDARDWEBHOOKS`). askloop's MCP server is driven by a client other than its own
//! code, the official TypeScript SDK `@modelcontextprotocol/sdk` (the tests run
//! `tests/mcp-client/check.mjs` with node against it, from `target/tools` or `ASKLOOP_MCP_SDK`).
//! Its websocket is driven the same way by the official `graphql-ws` client, with the `graphql`
//! it needs (`tests/graphql-ws-client/check.mjs`, from `target/tools` or `ASKLOOP_GRAPHQL_WS`).
//! The committed `openapi.json` is validated as OpenAPI 3.1 by `@apidevtools/swagger-parser`
//! (from `target/tools` or `ASKLOOP_SWAGGER_PARSER`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

use crate::status;

const BINARYEN: &str = "binaryen@132.0.0";
/// The accessibility checker the browser tests inject into pages (its `axe.min.js`); the suite's
/// `tests/support/axe.rs` names the same version.
const AXE: &str = "axe-core@4.14.1";
/// The Standard Webhooks library that verifies a real delivery in the suite;
/// `tests/support/standard_webhooks.rs` names the same version.
const STANDARD_WEBHOOKS_PACKAGE: &str = "standardwebhooks@1.1.1";
/// The official MCP TypeScript SDK, the client of askloop's MCP server in the suite's
/// interoperability test; `tests/support/mcp.rs` names the same version.
const MCP_SDK_PACKAGE: &str = "@modelcontextprotocol/sdk@1.32.2";
/// The official graphql-transport-ws client, which the suite's `tests/suite/graphql_ws.rs` drives
/// askloop's websocket with (and names the same version); installed with the `graphql` it needs.
const GRAPHQL_WS_PACKAGE: &str = "graphql-ws@6.4.2";
/// The `graphql` release installed beside graphql-ws (its peer dependency), pinned too.
const GRAPHQL_PACKAGE: &str = "graphql@16.15.0";
/// An OpenAPI validator independent of the code that writes askloop's document; the suite's
/// `tests/suite/openapi.rs` names the same version.
const SWAGGER_PARSER_PACKAGE: &str = "@apidevtools/swagger-parser@13.1.0";

/// A file of a pinned npm package, installed into `target/tools/<package>-<version>`.
pub(crate) struct NpmTool {
    /// `name@version`.
    package: &'static str,
    /// The file wanted, under the prefix's `node_modules`.
    file: &'static [&'static str],
    /// What needs it, for the error when npm is missing.
    needed_by: &'static str,
    /// Other packages (`name@version`) installed beside it, into the same folder.
    with: &'static [&'static str],
}

/// binaryen's JavaScript API, which `xtask/shrink-wasm.mjs` drives.
pub(crate) const BINARYEN_JS: NpmTool = NpmTool {
    package: BINARYEN,
    file: &["binaryen", "index.js"],
    needed_by: "the dashboard's size optimiser",
    with: &[],
};

pub(crate) const AXE_CORE: NpmTool = NpmTool {
    package: AXE,
    file: &["axe-core", "axe.min.js"],
    needed_by: "the browser tests' accessibility checks",
    with: &[],
};

pub(crate) const STANDARD_WEBHOOKS: NpmTool = NpmTool {
    package: STANDARD_WEBHOOKS_PACKAGE,
    file: &["standardwebhooks", "package.json"],
    needed_by: "the test that verifies a delivery with the Standard Webhooks library",
    with: &[],
};

pub(crate) const MCP_SDK: NpmTool = NpmTool {
    package: MCP_SDK_PACKAGE,
    file: &["@modelcontextprotocol", "sdk", "package.json"],
    needed_by: "the test that drives askloop's MCP server with the official TypeScript SDK",
    with: &[],
};

pub(crate) const GRAPHQL_WS: NpmTool = NpmTool {
    package: GRAPHQL_WS_PACKAGE,
    file: &["graphql-ws", "package.json"],
    needed_by: "the test that drives askloop's websocket with the official graphql-ws client",
    with: &[GRAPHQL_PACKAGE],
};

pub(crate) const SWAGGER_PARSER: NpmTool = NpmTool {
    package: SWAGGER_PARSER_PACKAGE,
    file: &["@apidevtools", "swagger-parser", "package.json"],
    needed_by: "the test that validates openapi.json as OpenAPI 3.1",
    with: &[],
};

impl NpmTool {
    /// The npm prefix it is installed under: `name-version`, a scope's `@` and `/` dropped
    /// (`@modelcontextprotocol/sdk@1.32.2` → `modelcontextprotocol-sdk-1.32.2`).
    pub(crate) fn prefix(&self, target_dir: &Path) -> PathBuf {
        target_dir.join("tools").join(
            self.package
                .trim_start_matches('@')
                .replace(['@', '/'], "-"),
        )
    }

    /// Where the file is once installed.
    pub(crate) fn path(&self, target_dir: &Path) -> PathBuf {
        self.file.iter().fold(
            self.prefix(target_dir).join("node_modules"),
            |path, part| path.join(part),
        )
    }

    /// The file, installed from npm the first time it is needed.
    pub(crate) fn install(&self, target_dir: &Path) -> anyhow::Result<PathBuf> {
        let tools = self.prefix(target_dir);
        let file = self.path(target_dir);
        if file.is_file() {
            return Ok(file);
        }
        eprintln!(
            "xtask: installing {} from npm into {}",
            self.package,
            tools.display()
        );
        std::fs::create_dir_all(&tools)
            .with_context(|| format!("cannot create {}", tools.display()))?;
        let mut install = Command::new("npm");
        install
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&tools)
            .arg(self.package)
            .args(self.with);
        status(install, &format!("`npm install {}`", self.package))
            .with_context(|| format!("{} needs npm (Debian package `npm`)", self.needed_by))?;
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{MCP_SDK, STANDARD_WEBHOOKS, SWAGGER_PARSER};

    #[test]
    fn an_npm_tool_is_installed_in_a_folder_named_after_its_package() {
        let target = Path::new("/target");
        assert_eq!(
            STANDARD_WEBHOOKS.prefix(target),
            Path::new("/target/tools/standardwebhooks-1.1.1")
        );
        assert_eq!(
            MCP_SDK.prefix(target),
            Path::new("/target/tools/modelcontextprotocol-sdk-1.32.2")
        );
        assert_eq!(
            SWAGGER_PARSER.prefix(target),
            Path::new("/target/tools/apidevtools-swagger-parser-13.1.0")
        );
    }
}
