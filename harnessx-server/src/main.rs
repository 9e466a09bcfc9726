//! The `harnessx` command: `serve`, `run`, `runs`, `answer`.

fn main() -> std::process::ExitCode {
    harnessx_server::cli::main()
}
