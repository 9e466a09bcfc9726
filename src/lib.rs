//! Examples, integration tests and benchmarks for harnessx.

use std::error::Error;
use std::fmt::Write;

/// An error as a person wants to read it: its own message, then each underlying cause on a line
/// of its own. The examples print a failure this way instead of the `Debug` form `main` uses.
///
/// ```
/// let io = std::io::Error::other("disk full");
/// assert_eq!(harnessx_suite::error_report(&io), "error: disk full");
/// ```
pub fn error_report(error: &(dyn Error + 'static)) -> String {
    let mut out = format!("error: {error}");
    let mut source = error.source();
    while let Some(cause) = source {
        let _ = write!(out, "\n  caused by: {cause}");
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Outer(std::io::Error);

    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("the model could not be reached")
        }
    }

    impl Error for Outer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn the_report_lists_the_message_then_every_cause() {
        let e = Outer(std::io::Error::other("connection refused"));
        assert_eq!(
            error_report(&e),
            "error: the model could not be reached\n  caused by: connection refused"
        );
    }

    #[test]
    fn a_harnessx_error_reads_as_its_message() {
        let registry = harnessx::ToolRegistry::new();
        let e = registry
            .register_with_schema(
                "bad name!",
                "x",
                serde_json::json!({"type": "object"}),
                harnessx::handler_fn(|_, _| async { Ok(harnessx::ToolOutput::text("")) }),
                harnessx::ToolOptions::new(),
            )
            .unwrap_err();
        let report = error_report(&e);
        assert_eq!(report, format!("error: {e}"));
        assert!(!report.contains("InvalidName"), "{report}");
    }
}
