//! Fallback models: asking the next model when one fails in a way another model may not.

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;

use super::IntoModel;
use super::{Model, ModelError, ModelErrorKind, ModelRequest, ModelResponse, ModelStreamEvent};
use crate::tool::BoxFuture;

/// A [`Model`] that asks a list of models in turn: when one fails with an error of a kind it
/// names (by default [`ModelErrorKind::FALLBACK_DEFAULT`]: rate limits, server failures,
/// timeouts, transport failures and context overflow), the same request goes to the next one.
/// Any other error, or the last model's error, comes back as it is.
///
/// Each model applies its own [`RetryPolicy`](super::RetryPolicy) first (the HTTP providers retry
/// by themselves), so a model is left only once its retries are spent. A stream moves on only
/// before the failed model delivered anything, and reports the move as a
/// [`ModelStreamEvent::Fallback`], which a streamed agent run surfaces as
/// [`AgentEvent::ModelFallback`](crate::AgentEvent::ModelFallback); a `complete` call logs it
/// (`tracing`, at `warn`). Its [`name`](Model::name) is the first model's.
///
/// ```
/// use futures::StreamExt;
/// use harnessx::model::{FallbackModel, FunctionModel, Model, ModelErrorKind, ModelStreamEvent, TestModel};
/// use harnessx::{ModelError, ModelRequest};
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let busy = FunctionModel::try_new(|_, _| Err(ModelError::Server {
///     retry_after: None,
///     provider: "openai".into(), status: 503, message: "busy".into(),
/// }));
/// let model = FallbackModel::new(busy).with_fallback(TestModel::new().then_reply("Hi"));
/// let events: Vec<_> = model.stream(ModelRequest::default()).collect().await;
/// assert!(matches!(
///     &events[0],
///     Ok(ModelStreamEvent::Fallback { kind: ModelErrorKind::Server, .. })
/// ));
/// assert!(matches!(events.last(), Some(Ok(ModelStreamEvent::Completed { response })) if response.content == "Hi"));
/// # }
/// ```
#[derive(Clone)]
pub struct FallbackModel {
    models: Vec<Arc<dyn Model>>,
    fallback_on: Vec<ModelErrorKind>,
}

impl std::fmt::Debug for FallbackModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FallbackModel")
            .field("models", &self.model_names())
            .field("fallback_on", &self.fallback_on)
            .finish()
    }
}

impl FallbackModel {
    /// Starts with `primary`; add the models to try after it with [`with_fallback`](Self::with_fallback).
    pub fn new(primary: impl IntoModel) -> Self {
        Self {
            models: vec![primary.into_model()],
            fallback_on: ModelErrorKind::FALLBACK_DEFAULT.to_vec(),
        }
    }

    /// Adds a model to try after the ones already given.
    pub fn with_fallback(mut self, model: impl IntoModel) -> Self {
        self.models.push(model.into_model());
        self
    }

    /// Moves on after errors of these kinds only (replacing the default).
    ///
    /// ```
    /// use harnessx::model::{FallbackModel, ModelErrorKind, TestModel};
    /// let model = FallbackModel::new(TestModel::new())
    ///     .with_fallback(TestModel::new())
    ///     .fallback_on([ModelErrorKind::ContextOverflow]);
    /// assert_eq!(model.fallback_kinds(), [ModelErrorKind::ContextOverflow]);
    /// ```
    pub fn fallback_on(mut self, kinds: impl IntoIterator<Item = ModelErrorKind>) -> Self {
        self.fallback_on = kinds.into_iter().collect();
        self
    }

    /// The kinds of error it moves on after.
    pub fn fallback_kinds(&self) -> &[ModelErrorKind] {
        &self.fallback_on
    }

    /// The names of its models, in the order they are tried.
    pub fn model_names(&self) -> Vec<&str> {
        self.models.iter().map(|m| m.name()).collect()
    }

    /// Whether `error` from model `index` sends the request on to the next model.
    fn moves_on(&self, index: usize, error: &ModelError) -> bool {
        index + 1 < self.models.len() && self.fallback_on.contains(&error.kind())
    }

    fn notice(&self, index: usize, error: &ModelError) -> ModelStreamEvent {
        let (from, to) = (self.models[index].name(), self.models[index + 1].name());
        tracing::warn!(from, to, kind = %error.kind(), %error, "falling back to the next model");
        ModelStreamEvent::Fallback {
            from: from.to_owned(),
            to: to.to_owned(),
            kind: error.kind(),
            error: error.to_string(),
        }
    }
}

impl Model for FallbackModel {
    fn name(&self) -> &str {
        self.models[0].name()
    }

    /// The address all its models share; `None` when they differ, since which of them will
    /// answer is not known before the request.
    fn server_address(&self) -> Option<super::ServerAddress> {
        let first = self.models[0].server_address()?;
        self.models[1..]
            .iter()
            .all(|m| m.server_address().as_ref() == Some(&first))
            .then_some(first)
    }

    fn complete(&self, request: ModelRequest) -> BoxFuture<'_, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let mut index = 0;
            loop {
                match self.models[index].complete(request.clone()).await {
                    Err(error) if self.moves_on(index, &error) => {
                        self.notice(index, &error);
                        index += 1;
                    }
                    other => return other,
                }
            }
        })
    }

    fn stream(&self, request: ModelRequest) -> BoxStream<'_, Result<ModelStreamEvent, ModelError>> {
        struct State<'a> {
            index: usize,
            current: BoxStream<'a, Result<ModelStreamEvent, ModelError>>,
            delivered: bool,
            done: bool,
            request: ModelRequest,
        }
        let state = State {
            index: 0,
            current: self.models[0].stream(request.clone()),
            delivered: false,
            done: false,
            request,
        };
        futures::stream::unfold(state, move |mut st| async move {
            if st.done {
                return None;
            }
            let item = st.current.next().await?;
            match item {
                Ok(event) => {
                    if !matches!(event, ModelStreamEvent::Fallback { .. }) {
                        st.delivered = true;
                    }
                    Some((Ok(event), st))
                }
                Err(error) if !st.delivered && self.moves_on(st.index, &error) => {
                    let notice = self.notice(st.index, &error);
                    st.index += 1;
                    st.current = self.models[st.index].stream(st.request.clone());
                    Some((Ok(notice), st))
                }
                Err(error) => {
                    st.done = true;
                    Some((Err(error), st))
                }
            }
        })
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FunctionModel, TestModel};

    fn failing(error: ModelError) -> FunctionModel {
        FunctionModel::try_new(move |_, _| Err(error.clone())).with_name("failing")
    }

    fn overflow() -> ModelError {
        ModelError::ContextOverflow {
            provider: "openai".into(),
            status: 400,
            message: "too long".into(),
        }
    }

    #[tokio::test]
    async fn complete_moves_on_only_after_the_kinds_it_names() {
        let model = FallbackModel::new(failing(overflow()))
            .with_fallback(TestModel::new().then_reply("second"));
        assert_eq!(model.name(), "failing");
        let response = model.complete(ModelRequest::default()).await.unwrap();
        assert_eq!(response.content, "second");

        let auth = ModelError::Auth {
            provider: "openai".into(),
            status: 401,
            message: "bad key".into(),
        };
        let model = FallbackModel::new(failing(auth.clone()))
            .with_fallback(TestModel::new().then_reply("x"));
        assert_eq!(model.complete(ModelRequest::default()).await, Err(auth));

        let model = FallbackModel::new(failing(overflow()))
            .with_fallback(TestModel::new().then_reply("x"))
            .fallback_on([ModelErrorKind::Server]);
        assert_eq!(
            model.complete(ModelRequest::default()).await,
            Err(overflow())
        );

        // The last model's error comes back as it is.
        let model = FallbackModel::new(failing(overflow())).with_fallback(failing(overflow()));
        assert_eq!(
            model.complete(ModelRequest::default()).await,
            Err(overflow())
        );
    }

    #[tokio::test]
    async fn a_stream_reports_each_move_then_the_answer() {
        let model = FallbackModel::new(failing(overflow()))
            .with_fallback(failing(ModelError::Timeout {
                provider: "anthropic".into(),
                message: "slow".into(),
            }))
            .with_fallback(TestModel::new().then_reply("third"));
        let items: Vec<_> = model.stream(ModelRequest::default()).collect().await;
        let kinds: Vec<_> = items
            .iter()
            .filter_map(|i| match i {
                Ok(ModelStreamEvent::Fallback { from, to, kind, .. }) => {
                    Some((from.as_str(), to.as_str(), *kind))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("failing", "failing", ModelErrorKind::ContextOverflow),
                ("failing", "test", ModelErrorKind::Timeout)
            ]
        );
        assert!(matches!(
            items.last(),
            Some(Ok(ModelStreamEvent::Completed { response })) if response.content == "third"
        ));
    }
}
