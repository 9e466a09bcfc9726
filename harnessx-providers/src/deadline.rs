//! The overall deadline of one model call: a whole answer within a fixed time, streamed or not,
//! however slowly (or steadily) the bytes trickle in.

use std::pin::Pin;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;

use super::{ModelError, ModelStreamEvent};

/// How long one model call may take, from sending its first request to the end of the answer,
/// retries and the waits between them included, unless the model is given another with
/// `with_deadline`: 10 minutes.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(600);

/// The error for an attempt that passed its deadline.
pub(crate) fn deadline_error(provider: &str, deadline: Duration) -> ModelError {
    ModelError::Timeout {
        provider: provider.to_owned(),
        message: format!(
            "no complete answer within the {} s deadline of a model call; give the model longer \
             with `with_deadline`, or ask for a shorter answer",
            deadline.as_secs_f64()
        ),
    }
}

/// `call`, or a [`ModelError::Timeout`] once `deadline` has passed.
pub(crate) async fn within<T>(
    provider: &str,
    deadline: Duration,
    call: impl Future<Output = Result<T, ModelError>>,
) -> Result<T, ModelError> {
    tokio::time::timeout(deadline, call)
        .await
        .unwrap_or_else(|_| Err(deadline_error(provider, deadline)))
}

struct State<'a> {
    inner: BoxStream<'a, Result<ModelStreamEvent, ModelError>>,
    timer: Pin<Box<tokio::time::Sleep>>,
    done: bool,
}

/// `stream`, ended by a [`ModelError::Timeout`] once `deadline` has passed since this call. The
/// deadline is checked before each item, so a server that keeps sending never outlasts it.
pub(crate) fn stream_within<'a>(
    provider: &'static str,
    deadline: Duration,
    stream: BoxStream<'a, Result<ModelStreamEvent, ModelError>>,
) -> BoxStream<'a, Result<ModelStreamEvent, ModelError>> {
    let state = State {
        inner: stream,
        timer: Box::pin(tokio::time::sleep(deadline)),
        done: false,
    };
    futures::stream::unfold(state, move |mut st| async move {
        if st.done {
            return None;
        }
        let item = tokio::select! {
            biased;
            () = &mut st.timer => Some(Err(deadline_error(provider, deadline))),
            item = st.inner.next() => item,
        };
        st.done = matches!(item, None | Some(Err(_)));
        item.map(|item| (item, st))
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_stream_that_never_ends_times_out_and_stops() {
        let endless =
            futures::stream::repeat_with(|| Ok(ModelStreamEvent::TextDelta { text: "a".into() }))
                .then(|item| async move {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    item
                })
                .boxed();
        let items: Vec<_> = stream_within("openai", Duration::from_secs(5), endless)
            .collect()
            .await;
        assert_eq!(items.len(), 5, "four deltas, then the timeout: {items:?}");
        assert_eq!(
            items.last().unwrap().as_ref().unwrap_err().to_string(),
            "the openai provider timed out: no complete answer within the 5 s deadline of a model \
             call; give the model longer with `with_deadline`, or ask for a shorter answer"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_past_its_deadline_times_out() {
        let slow = async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok::<_, ModelError>(1)
        };
        let e = within("anthropic", Duration::from_millis(1500), slow)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), super::super::ModelErrorKind::Timeout);
        assert!(e.to_string().contains("1.5 s deadline"), "{e}");
        assert_eq!(
            within("x", Duration::from_secs(1), async { Ok(7) }).await,
            Ok(7)
        );
    }
}
