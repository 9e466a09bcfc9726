//! What the examples share: the model they talk to, and how a failure is reported.

use std::future::Future;
use std::process::ExitCode;
use std::sync::Arc;

use harnessx::Model;

/// An example's error: any error, reported by [`report`].
pub type Error = Box<dyn std::error::Error>;

/// The model: a real provider when `HARNESSX_MODEL` (e.g. `openai:gpt-4o-mini`,
/// `anthropic:claude-sonnet-4-5`) and its key or base URL are set, else `script`, which runs
/// offline.
pub fn model_or(script: impl Model + 'static) -> Result<Arc<dyn Model>, Error> {
    match harnessx::model::from_env()? {
        Some(model) => Ok(model),
        None => Ok(Arc::new(script)),
    }
}

/// Runs an example: a failure prints as its message and its causes (not as the `Debug` form of
/// the error) and exits with a failure code.
pub async fn report(run: impl Future<Output = Result<(), Error>>) -> ExitCode {
    match run.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", harnessx::error::error_chain(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}
