//! Model-call retry: waiting and trying again after a rate limit, a server failure or a broken
//! connection, as long as nothing has reached the caller yet.

use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use rand::RngExt;

use super::{Model, ModelError, ModelRequest, ModelResponse, ModelStreamEvent};
use crate::tool::BoxFuture;

/// How a model call is retried after a retryable [`ModelError`] (HTTP 429, 5xx, Anthropic 529, a
/// transport failure).
///
/// The wait before attempt `n + 1` is the provider's `retry-after` when it sent one; otherwise
/// `initial_backoff * 2^(n-1)` with jitter (a random point in its upper half), never more than
/// `max_backoff`. When the provider asks for a longer wait than `max_backoff`, the call is not
/// retried: the [`ModelError::RateLimited`] comes back at once with the provider's `retry_after`,
/// so the caller can decide. A streamed call is retried only until its first event has been
/// handed to the caller; after that an error ends the stream, because a retry would repeat text
/// the caller has already shown.
///
/// ```
/// use std::time::Duration;
/// use harnessx::model::ModelRetry;
///
/// let retry = ModelRetry {
///     max_attempts: 5,
///     initial_backoff: Duration::from_millis(200),
///     max_backoff: Duration::from_secs(20),
/// };
/// assert_eq!(ModelRetry::none().max_attempts, 1);
/// assert_eq!(ModelRetry::default().max_attempts, 3);
/// # let _ = retry;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelRetry {
    /// Attempts in all, the first one included. `1` (or `0`) means no retry.
    pub max_attempts: u32,
    /// The backoff before the second attempt; it doubles for each later one.
    pub initial_backoff: Duration,
    /// The longest wait between attempts, including a provider's `retry-after`.
    pub max_backoff: Duration,
}

impl Default for ModelRetry {
    /// Three attempts, starting at 500 ms, waiting at most 60 s.
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(60),
        }
    }
}

impl ModelRetry {
    /// One attempt only: every error comes back at once.
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// The wait before another attempt after `attempt` attempts failed with `error`, or `None`
    /// when the call must not be retried.
    pub(crate) fn delay(&self, attempt: u32, error: &ModelError) -> Option<Duration> {
        if !error.is_retryable() || attempt >= self.max_attempts {
            return None;
        }
        if let ModelError::RateLimited {
            retry_after: Some(after),
            ..
        } = error
        {
            return (*after <= self.max_backoff).then_some(*after);
        }
        let exp = attempt.saturating_sub(1).min(31);
        let full = self
            .initial_backoff
            .saturating_mul(1u32 << exp)
            .min(self.max_backoff);
        let half = full / 2;
        let jitter = if half.is_zero() {
            Duration::ZERO
        } else {
            let nanos = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
            Duration::from_nanos(rand::rng().random_range(0..=nanos))
        };
        Some(half + jitter)
    }
}

/// Runs `call` until it succeeds, fails for good, or runs out of attempts.
pub(crate) async fn complete_with_retry<'a, F>(
    retry: ModelRetry,
    call: F,
) -> Result<ModelResponse, ModelError>
where
    F: Fn() -> BoxFuture<'a, Result<ModelResponse, ModelError>>,
{
    let mut attempt = 1;
    loop {
        match call().await {
            Ok(response) => return Ok(response),
            Err(error) => match retry.delay(attempt, &error) {
                Some(wait) => {
                    tracing::debug!(%error, attempt, ?wait, "retrying the model call");
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                None => return Err(error),
            },
        }
    }
}

struct RetryState<'a, F> {
    open: F,
    current: BoxStream<'a, Result<ModelStreamEvent, ModelError>>,
    attempt: u32,
    delivered: bool,
    done: bool,
}

/// Opens the stream with `open`, and opens it again after a retryable error as long as no event
/// has been delivered. The stream ends after its first error.
pub(crate) fn stream_with_retry<'a, F>(
    retry: ModelRetry,
    open: F,
) -> BoxStream<'a, Result<ModelStreamEvent, ModelError>>
where
    F: Fn() -> BoxStream<'a, Result<ModelStreamEvent, ModelError>> + Send + 'a,
{
    let current = open();
    let state = RetryState {
        open,
        current,
        attempt: 1,
        delivered: false,
        done: false,
    };
    futures::stream::unfold(state, move |mut st| async move {
        if st.done {
            return None;
        }
        loop {
            match st.current.next().await {
                Some(Ok(event)) => {
                    st.delivered = true;
                    return Some((Ok(event), st));
                }
                Some(Err(error)) => {
                    let wait = if st.delivered {
                        None
                    } else {
                        retry.delay(st.attempt, &error)
                    };
                    match wait {
                        Some(wait) => {
                            tracing::debug!(%error, attempt = st.attempt, ?wait, "retrying the model stream");
                            tokio::time::sleep(wait).await;
                            st.attempt += 1;
                            st.current = (st.open)();
                        }
                        None => {
                            st.done = true;
                            return Some((Err(error), st));
                        }
                    }
                }
                None => return None,
            }
        }
    })
    .boxed()
}

/// Any [`Model`] with [`ModelRetry`] applied to its calls.
///
/// The HTTP providers already retry on their own (see their `with_retry`); wrap other models,
/// such as your own provider, with this.
///
/// ```
/// use std::time::Duration;
/// use harnessx::model::{ModelRetry, RetryingModel};
/// # #[cfg(feature = "providers")] {
/// use harnessx::model::OpenAiModel;
///
/// let model = OpenAiModel::new("gpt-4o-mini").with_retry(ModelRetry::none());
/// let retrying = RetryingModel::new(model, ModelRetry { max_attempts: 4, ..ModelRetry::default() });
/// assert_eq!(retrying.retry().max_attempts, 4);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct RetryingModel<M> {
    inner: M,
    retry: ModelRetry,
}

impl<M: Model> RetryingModel<M> {
    /// Wraps `inner`.
    pub fn new(inner: M, retry: ModelRetry) -> Self {
        Self { inner, retry }
    }

    /// The retry settings.
    pub fn retry(&self) -> ModelRetry {
        self.retry
    }

    /// The wrapped model.
    pub fn inner(&self) -> &M {
        &self.inner
    }
}

impl<M: Model> Model for RetryingModel<M> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn complete(&self, request: ModelRequest) -> BoxFuture<'_, Result<ModelResponse, ModelError>> {
        Box::pin(complete_with_retry(self.retry, move || {
            self.inner.complete(request.clone())
        }))
    }

    fn stream(&self, request: ModelRequest) -> BoxStream<'_, Result<ModelStreamEvent, ModelError>> {
        stream_with_retry(self.retry, move || self.inner.stream(request.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> ModelError {
        ModelError::Server {
            provider: "p".into(),
            status: 503,
            message: "busy".into(),
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let retry = ModelRetry {
            max_attempts: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
        };
        for (attempt, full) in [(1, 100), (2, 200), (3, 350), (9, 350)] {
            let d = retry.delay(attempt, &server()).unwrap();
            let full = Duration::from_millis(full);
            assert!(d >= full / 2 && d <= full, "attempt {attempt}: {d:?}");
        }
        assert_eq!(retry.delay(10, &server()), None);
    }

    #[test]
    fn retry_after_is_honoured_up_to_max_backoff() {
        let retry = ModelRetry::default();
        let limited = |secs| ModelError::RateLimited {
            provider: "p".into(),
            retry_after: Some(Duration::from_secs(secs)),
            message: "slow down".into(),
        };
        assert_eq!(retry.delay(1, &limited(7)), Some(Duration::from_secs(7)));
        assert_eq!(retry.delay(1, &limited(61)), None);
        let auth = ModelError::Auth {
            provider: "p".into(),
            status: 401,
            message: "bad key".into(),
        };
        assert_eq!(retry.delay(1, &auth), None);
        assert_eq!(ModelRetry::none().delay(1, &server()), None);
    }

    #[test]
    fn saturating_for_huge_attempts() {
        let retry = ModelRetry {
            max_attempts: u32::MAX,
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(2),
        };
        assert!(retry.delay(200, &server()).unwrap() <= Duration::from_secs(2));
    }

    /// Fails with a 503 until `failures` calls have failed; streams yield one delta first when
    /// `delta_before_error`.
    struct Flaky {
        calls: std::sync::atomic::AtomicU32,
        failures: u32,
        delta_before_error: bool,
    }

    impl Flaky {
        fn new(failures: u32, delta_before_error: bool) -> Self {
            Self {
                calls: std::sync::atomic::AtomicU32::new(0),
                failures,
                delta_before_error,
            }
        }

        fn calls(&self) -> u32 {
            self.calls.load(std::sync::atomic::Ordering::SeqCst)
        }

        fn attempt(&self) -> Result<ModelResponse, ModelError> {
            let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if n < self.failures {
                Err(server())
            } else {
                Ok(ModelResponse {
                    content: "ok".into(),
                    ..Default::default()
                })
            }
        }
    }

    impl Model for Flaky {
        fn name(&self) -> &str {
            "flaky"
        }

        fn complete(&self, _: ModelRequest) -> BoxFuture<'_, Result<ModelResponse, ModelError>> {
            Box::pin(async move { self.attempt() })
        }

        fn stream(&self, _: ModelRequest) -> BoxStream<'_, Result<ModelStreamEvent, ModelError>> {
            let result = self.attempt();
            let mut items = Vec::new();
            if self.delta_before_error {
                items.push(Ok(ModelStreamEvent::TextDelta {
                    text: "partial".into(),
                }));
            }
            items.push(result.map(|response| ModelStreamEvent::Completed { response }));
            futures::stream::iter(items).boxed()
        }
    }

    fn quick(max_attempts: u32) -> ModelRetry {
        ModelRetry {
            max_attempts,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(2),
        }
    }

    #[tokio::test]
    async fn retrying_model_retries_complete_until_it_succeeds_or_runs_out() {
        let model = RetryingModel::new(Flaky::new(2, false), quick(3));
        assert_eq!(model.name(), "flaky");
        let response = model.complete(ModelRequest::default()).await.unwrap();
        assert_eq!(response.content, "ok");
        assert_eq!(model.inner().calls(), 3);

        let model = RetryingModel::new(Flaky::new(5, false), quick(2));
        assert_eq!(model.complete(ModelRequest::default()).await, Err(server()));
        assert_eq!(model.inner().calls(), 2);
    }

    #[tokio::test]
    async fn retrying_model_retries_a_stream_only_before_its_first_event() {
        let model = RetryingModel::new(Flaky::new(1, false), quick(3));
        let items: Vec<_> = model.stream(ModelRequest::default()).collect().await;
        assert!(matches!(
            items.as_slice(),
            [Ok(ModelStreamEvent::Completed { .. })]
        ));
        assert_eq!(model.inner().calls(), 2);

        let model = RetryingModel::new(Flaky::new(1, true), quick(3));
        let items: Vec<_> = model.stream(ModelRequest::default()).collect().await;
        assert!(matches!(
            items.as_slice(),
            [
                Ok(ModelStreamEvent::TextDelta { .. }),
                Err(ModelError::Server { .. })
            ]
        ));
        assert_eq!(model.inner().calls(), 1);
    }
}
