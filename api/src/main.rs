//! The `askloop` binary: everything it does lives in the library's `cli` module.

fn main() -> std::process::ExitCode {
    askloop::cli::main()
}
