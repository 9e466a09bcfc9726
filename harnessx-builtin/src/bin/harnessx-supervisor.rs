//! `harnessx-supervisor PROGRAM [ARGS...]`: runs a command as a child-subreaper supervisor so
//! that none of the processes it starts outlives it, nor the process that started the
//! supervisor. See `harnessx_builtin::bash::supervise`; a `LocalSandbox` uses it through
//! `LocalSandbox::with_supervisor`.

fn main() {
    std::process::exit(harnessx_builtin::bash::supervise(
        std::env::args_os().skip(1),
    ));
}
