//! The `askloop` binary: everything it does lives in the library's `cli` module.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
fn main() -> std::process::ExitCode {
    askloop::cli::main()
}
