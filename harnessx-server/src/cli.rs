//! The `harnessx` command line.

/// Runs the command line and returns the exit code.
pub fn main() -> std::process::ExitCode {
    std::process::ExitCode::SUCCESS
}
