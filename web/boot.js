// Starts askloop's dashboard. A file rather than an inline script, so the pages' Content-Security-
// Policy can allow scripts from askloop's own origin only.
import init from "/pkg/web.js";
init({ module_or_path: "/pkg/web_bg.wasm" });
