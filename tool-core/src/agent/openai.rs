//! [`ModelClient`]s over async-openai's types (feature `async-openai`): the loop's request
//! becomes a `CreateChatCompletionRequest` or a `CreateResponse`, and the response you get
//! from your `async_openai::Client` (or any server speaking the API) comes back as the
//! provider's JSON. The types only: the HTTP client, its credentials and retries are yours.
//!
//! ```
//! use toolsmith::agent::openai::Chat;
//! use toolsmith::agent::{Agent, Stop};
//! use toolsmith::{Dialect, ToolContext, Toolbox};
//! use async_openai::types::chat::{CreateChatCompletionRequest, CreateChatCompletionResponse};
//!
//! // In a program: `move |request| { let client = client.clone(); async move { client.chat().create(request).await } }`
//! let model = Chat::new("gpt-5-mini", |request: CreateChatCompletionRequest| async move {
//!     assert_eq!(request.model, "gpt-5-mini");
//!     let response: CreateChatCompletionResponse = toolsmith::serde_json::from_value(toolsmith::serde_json::json!({
//!         "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-5-mini",
//!         "choices": [{"index": 0, "finish_reason": "stop", "logprobs": null,
//!                      "message": {"role": "assistant", "content": "Hello."}}]
//!     })).unwrap();
//!     Ok::<_, std::convert::Infallible>(response)
//! });
//! let agent = Agent::new(Toolbox::new(), Dialect::OpenAiChat { strict: true }, model);
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let mut state = agent.start("Hi");
//! assert_eq!(agent.run(&mut state, &ToolContext::new()).await.unwrap(), Stop::Answered("Hello.".into()));
//! # });
//! ```

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;

use async_openai::types::chat::{CreateChatCompletionRequest, CreateChatCompletionResponse};
use async_openai::types::responses::{CreateResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::tool::BoxFuture;

use super::client::{ModelClient, ModelError, ModelRequest};

/// The loop's body with the model's name, read as async-openai's request type.
fn request_of<R: DeserializeOwned>(model: &str, request: &ModelRequest) -> Result<R, ModelError> {
    let mut body = request.body.clone();
    if let Some(object) = body.as_object_mut() {
        object.insert("model".into(), Value::String(model.to_owned()));
    }
    serde_json::from_value(body).map_err(|err| {
        ModelError::new(format!(
            "the request does not fit async-openai's type: {err}"
        ))
    })
}

fn response_of<R: Serialize>(response: &R) -> Result<Value, ModelError> {
    serde_json::to_value(response)
        .map_err(|err| ModelError::new(format!("the response does not serialize: {err}")))
}

/// An OpenAI API through a function that sends its request type `Req` and returns its
/// response type `Res`: the loop's request is read as `Req` (with the model's name), and the
/// `Res` you get back is handed to the loop as JSON. [`Chat`] and [`Responses`] name the two.
pub struct OpenAi<Req, Res, F> {
    model: String,
    send: F,
    types: PhantomData<fn(Req) -> Res>,
}

/// OpenAI Chat Completions through a function that sends a `CreateChatCompletionRequest`
/// (for [`Dialect::OpenAiChat`](crate::Dialect::OpenAiChat)).
pub type Chat<F> = OpenAi<CreateChatCompletionRequest, CreateChatCompletionResponse, F>;

/// OpenAI Responses through a function that sends a `CreateResponse` (for
/// [`Dialect::OpenAiResponses`](crate::Dialect::OpenAiResponses)).
pub type Responses<F> = OpenAi<CreateResponse, Response, F>;

impl<Req, Res, F> OpenAi<Req, Res, F> {
    /// Asks `model` through `send`.
    pub fn new(model: impl Into<String>, send: F) -> Self {
        Self {
            model: model.into(),
            send,
            types: PhantomData,
        }
    }
}

impl<Req, Res, F, Fut, E> ModelClient for OpenAi<Req, Res, F>
where
    Req: DeserializeOwned + Send + 'static,
    Res: Serialize + Send + 'static,
    F: Fn(Req) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Res, E>> + Send + 'static,
    E: fmt::Display,
{
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<Value, ModelError>> {
        let typed = request_of(&self.model, request);
        Box::pin(async move {
            let response = (self.send)(typed?)
                .await
                .map_err(|err| ModelError::new(err.to_string()))?;
            response_of(&response)
        })
    }
}

impl<Req, Res, F> fmt::Debug for OpenAi<Req, Res, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAi")
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}
