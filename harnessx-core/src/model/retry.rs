//! Model-call retry: waiting and trying again after a rate limit, a server failure, a timeout or
//! a broken connection, as long as nothing has reached the caller yet.
//!
//! This is the model's [`RetryPolicy`]; tools have their own, separate
//! [`ToolRetry`](crate::ToolRetry).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use rand::RngExt;

use super::{Model, ModelError, ModelRequest, ModelResponse, ModelStreamEvent};
use crate::tool::BoxFuture;

/// How a model call is retried after a retryable [`ModelError`] (HTTP 429, 5xx, Anthropic 529, a
/// timeout, a transport failure; see [`ModelErrorKind::is_retryable`](super::ModelErrorKind::is_retryable)).
///
/// The wait before attempt `n + 1` is the provider's `Retry-After` when it sent one (seconds or
/// an HTTP date, or `retry-after-ms`); otherwise `initial_backoff * 2^(n-1)` with jitter (a
/// random point in its upper half), never more than `max_backoff`. The call is not retried, and
/// the error comes back at once, when that wait is longer than `max_backoff` (a
/// [`ModelError::RateLimited`] keeps the provider's `retry_after`, so the caller can decide), or
/// when it would bring the waiting of this call past `max_total_delay`. A streamed call is
/// retried only until its first event has been handed to the caller; after that an error ends
/// the stream, because a retry would repeat text the caller has already shown.
///
/// Waiting goes through the policy's [`Sleeper`] (tokio's timer unless replaced), so a test can
/// see the waits without spending them.
///
/// ```
/// use std::time::Duration;
/// use harnessx::model::RetryPolicy;
///
/// let retry = RetryPolicy {
///     max_attempts: 5,
///     initial_backoff: Duration::from_millis(200),
///     max_total_delay: Duration::from_secs(30),
///     ..RetryPolicy::default()
/// };
/// assert_eq!(RetryPolicy::none().max_attempts, 1);
/// assert_eq!(RetryPolicy::default().max_attempts, 3);
/// # let _ = retry;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first one included. `1` (or `0`) means no retry.
    pub max_attempts: u32,
    /// The backoff before the second attempt; it doubles for each later one.
    pub initial_backoff: Duration,
    /// The longest wait between attempts, including a provider's `Retry-After`.
    pub max_backoff: Duration,
    /// The most time one call may spend waiting between its attempts, all waits together.
    pub max_total_delay: Duration,
    /// What waits between attempts.
    pub sleeper: Sleeper,
}

/// The former name of [`RetryPolicy`].
pub type ModelRetry = RetryPolicy;

impl Default for RetryPolicy {
    /// Three attempts, starting at 500 ms, waiting at most 60 s at a time and 120 s in all.
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(60),
            max_total_delay: Duration::from_secs(120),
            sleeper: Sleeper::default(),
        }
    }
}

impl RetryPolicy {
    /// One attempt only: every error comes back at once.
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// This policy with waits going through `sleeper`.
    ///
    /// ```
    /// use harnessx::model::{RetryPolicy, Sleeper};
    /// let policy = RetryPolicy::default().with_sleeper(Sleeper::new(|_| Box::pin(async {})));
    /// assert_ne!(policy, RetryPolicy::default());
    /// ```
    pub fn with_sleeper(mut self, sleeper: Sleeper) -> Self {
        self.sleeper = sleeper;
        self
    }

    /// The wait before another attempt after `attempt` attempts failed with `error`, having
    /// waited `waited` so far, or `None` when the call must not be retried.
    pub(crate) fn delay(
        &self,
        attempt: u32,
        waited: Duration,
        error: &ModelError,
    ) -> Option<Duration> {
        if !error.is_retryable() || attempt >= self.max_attempts {
            return None;
        }
        // `Retry-After` means the same on a 429 and a 503 (RFC 9110): wait what the provider
        // asked, unless that is longer than the policy's longest wait.
        let wait = match error {
            ModelError::RateLimited {
                retry_after: Some(after),
                ..
            }
            | ModelError::Server {
                retry_after: Some(after),
                ..
            } => (*after <= self.max_backoff).then_some(*after)?,
            _ => self.backoff(attempt),
        };
        (waited.saturating_add(wait) <= self.max_total_delay).then_some(wait)
    }

    /// The exponential backoff with jitter after `attempt` attempts.
    fn backoff(&self, attempt: u32) -> Duration {
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
        half + jitter
    }
}

type SleepFn = dyn Fn(Duration) -> BoxFuture<'static, ()> + Send + Sync;

/// What a [`RetryPolicy`] waits with: tokio's timer by default, or a function of your own (to
/// record the waits in a test, or to wait on another clock). Two sleepers are equal when they
/// are the same one.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
/// use harnessx::model::Sleeper;
///
/// let waits = Arc::new(Mutex::new(Vec::new()));
/// let seen = Arc::clone(&waits);
/// let sleeper = Sleeper::new(move |d| {
///     seen.lock().unwrap().push(d);
///     Box::pin(async {})
/// });
/// # futures::executor::block_on(sleeper.sleep(Duration::from_secs(3)));
/// # assert_eq!(*waits.lock().unwrap(), [Duration::from_secs(3)]);
/// ```
#[derive(Clone)]
pub struct Sleeper(Option<Arc<SleepFn>>);

impl Sleeper {
    /// A sleeper that waits by calling `f`.
    pub fn new<F>(f: F) -> Self
    where
        F: Fn(Duration) -> BoxFuture<'static, ()> + Send + Sync + 'static,
    {
        Self(Some(Arc::new(f)))
    }

    /// Waits for `duration`.
    pub fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        match &self.0 {
            Some(f) => f(duration),
            None => Box::pin(tokio::time::sleep(duration)),
        }
    }
}

impl Default for Sleeper {
    /// tokio's timer.
    fn default() -> Self {
        Self(None)
    }
}

impl std::fmt::Debug for Sleeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Sleeper(custom)"
        } else {
            "Sleeper(tokio)"
        })
    }
}

impl PartialEq for Sleeper {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Sleeper {}

/// Runs `call` until it succeeds, fails for good, or runs out of attempts.
#[doc(hidden)]
pub async fn complete_with_retry<'a, F>(
    retry: &RetryPolicy,
    call: F,
) -> Result<ModelResponse, ModelError>
where
    F: Fn() -> BoxFuture<'a, Result<ModelResponse, ModelError>>,
{
    let mut attempt = 1;
    let mut waited = Duration::ZERO;
    loop {
        match call().await {
            Ok(response) => return Ok(response),
            Err(error) => match retry.delay(attempt, waited, &error) {
                Some(wait) => {
                    tracing::debug!(%error, attempt, ?wait, "retrying the model call");
                    retry.sleeper.sleep(wait).await;
                    waited += wait;
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
    waited: Duration,
    delivered: bool,
    done: bool,
}

/// Opens the stream with `open`, and opens it again after a retryable error as long as no event
/// has been delivered. The stream ends after its first error.
#[doc(hidden)]
pub fn stream_with_retry<'a, F>(
    retry: RetryPolicy,
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
        waited: Duration::ZERO,
        delivered: false,
        done: false,
    };
    futures::stream::unfold(state, move |mut st| {
        let retry = retry.clone();
        async move {
        if st.done {
            return None;
        }
        loop {
            match st.current.next().await {
                Some(Ok(event)) => {
                    // A fallback notice is no answer text: retrying after it repeats nothing.
                    if !matches!(event, ModelStreamEvent::Fallback { .. }) {
                        st.delivered = true;
                    }
                    return Some((Ok(event), st));
                }
                Some(Err(error)) => {
                    let wait = if st.delivered {
                        None
                    } else {
                        retry.delay(st.attempt, st.waited, &error)
                    };
                    match wait {
                        Some(wait) => {
                            tracing::debug!(%error, attempt = st.attempt, ?wait, "retrying the model stream");
                            retry.sleeper.sleep(wait).await;
                            st.waited += wait;
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
        }
    })
    .boxed()
}

/// Any [`Model`] with a [`RetryPolicy`] applied to its calls.
///
/// The HTTP providers already retry on their own (see their `with_retry`); wrap other models,
/// such as your own provider, with this.
///
/// ```
/// use std::time::Duration;
/// use harnessx::model::{RetryPolicy, RetryingModel};
/// use harnessx::model::OpenAiModel;
///
/// let model = OpenAiModel::new("gpt-4o-mini").with_retry(RetryPolicy::none());
/// let retrying = RetryingModel::new(model, RetryPolicy { max_attempts: 4, ..RetryPolicy::default() });
/// assert_eq!(retrying.retry().max_attempts, 4);
/// ```
#[derive(Debug, Clone)]
pub struct RetryingModel<M> {
    inner: M,
    retry: RetryPolicy,
}

impl<M: Model> RetryingModel<M> {
    /// Wraps `inner`.
    pub fn new(inner: M, retry: RetryPolicy) -> Self {
        Self { inner, retry }
    }

    /// The retry settings.
    pub fn retry(&self) -> &RetryPolicy {
        &self.retry
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

    fn server_address(&self) -> Option<super::ServerAddress> {
        self.inner.server_address()
    }

    fn complete(&self, request: ModelRequest) -> BoxFuture<'_, Result<ModelResponse, ModelError>> {
        Box::pin(complete_with_retry(&self.retry, move || {
            self.inner.complete(request.clone())
        }))
    }

    fn stream(&self, request: ModelRequest) -> BoxStream<'_, Result<ModelStreamEvent, ModelError>> {
        stream_with_retry(self.retry.clone(), move || {
            self.inner.stream(request.clone())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> ModelError {
        ModelError::Server {
            provider: "p".into(),
            status: 503,
            retry_after: None,
            message: "busy".into(),
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let retry = RetryPolicy {
            max_attempts: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
            ..RetryPolicy::default()
        };
        for (attempt, full) in [(1, 100), (2, 200), (3, 350), (9, 350)] {
            let d = retry.delay(attempt, Duration::ZERO, &server()).unwrap();
            let full = Duration::from_millis(full);
            assert!(d >= full / 2 && d <= full, "attempt {attempt}: {d:?}");
        }
        assert_eq!(retry.delay(10, Duration::ZERO, &server()), None);
    }

    #[test]
    fn retry_after_is_honoured_up_to_max_backoff() {
        let retry = RetryPolicy::default();
        let limited = |secs| ModelError::RateLimited {
            provider: "p".into(),
            retry_after: Some(Duration::from_secs(secs)),
            message: "slow down".into(),
        };
        assert_eq!(
            retry.delay(1, Duration::ZERO, &limited(7)),
            Some(Duration::from_secs(7))
        );
        assert_eq!(retry.delay(1, Duration::ZERO, &limited(61)), None);
        // The same on a 503 that says when to come back.
        let unavailable = |secs| ModelError::Server {
            provider: "p".into(),
            status: 503,
            retry_after: Some(Duration::from_secs(secs)),
            message: "busy".into(),
        };
        assert_eq!(
            retry.delay(1, Duration::ZERO, &unavailable(7)),
            Some(Duration::from_secs(7))
        );
        assert_eq!(retry.delay(1, Duration::ZERO, &unavailable(61)), None);
        let auth = ModelError::Auth {
            provider: "p".into(),
            status: 401,
            message: "bad key".into(),
        };
        assert_eq!(retry.delay(1, Duration::ZERO, &auth), None);
        assert_eq!(
            RetryPolicy::none().delay(1, Duration::ZERO, &server()),
            None
        );
    }

    #[test]
    fn total_delay_is_capped() {
        let retry = RetryPolicy {
            max_attempts: 10,
            max_total_delay: Duration::from_secs(10),
            ..RetryPolicy::default()
        };
        let limited = ModelError::RateLimited {
            provider: "p".into(),
            retry_after: Some(Duration::from_secs(4)),
            message: "slow down".into(),
        };
        assert_eq!(
            retry.delay(1, Duration::from_secs(6), &limited),
            Some(Duration::from_secs(4))
        );
        assert_eq!(retry.delay(2, Duration::from_secs(7), &limited), None);
        let timeout = ModelError::Timeout {
            provider: "p".into(),
            message: "slow".into(),
        };
        assert!(retry.delay(1, Duration::ZERO, &timeout).is_some());
    }

    #[test]
    fn saturating_for_huge_attempts() {
        let retry = RetryPolicy {
            max_attempts: u32::MAX,
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(2),
            ..RetryPolicy::default()
        };
        assert!(retry.delay(200, Duration::ZERO, &server()).unwrap() <= Duration::from_secs(2));
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

    fn quick(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(2),
            ..RetryPolicy::default()
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
