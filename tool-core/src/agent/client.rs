//! The model client an [`Agent`](super::Agent) talks to: one async trait, and a scripted one
//! for tests.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::dialect::Dialect;
use crate::tool::BoxFuture;

/// One request to a model, in its provider's shape.
///
/// `body` holds the conversation (`messages` for OpenAI Chat and Anthropic, `input` for
/// OpenAI Responses, `contents` for Gemini) and the tool block's fields (`tools`,
/// `tool_choice`, ...). The client adds what is its own business: the model's name, the
/// system prompt, the token limit, credentials.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ModelRequest {
    /// The provider's dialect.
    pub dialect: Dialect,
    /// The request body, without the model's name.
    pub body: Value,
    /// Which model request of the run this is (0 for the first).
    pub turn: u32,
    /// HTTP headers the request needs ([`ToolBlock::headers`](crate::provider::ToolBlock::headers):
    /// Anthropic's beta features for hosted tools). Empty for most requests.
    pub headers: Vec<(String, String)>,
}

/// Why a model could not be asked. The run's state is unchanged: run it again to retry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelError {
    /// What went wrong, for the operator.
    pub message: String,
}

impl ModelError {
    /// An error with this message.
    #[must_use]
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the model could not be asked: {}", self.message)
    }
}

impl std::error::Error for ModelError {}

/// Sends a request to a model and returns its response, as the provider's JSON (a chat
/// completion, a Responses `response`, an Anthropic message, a Gemini
/// `GenerateContentResponse`). Implement it over any HTTP client or SDK; see
/// [`openai`](super::openai) for async-openai's (feature `async-openai`).
///
/// ```
/// use toolsmith::agent::{ModelClient, ModelError, ModelRequest};
/// use toolsmith::serde_json::{json, Value};
/// use toolsmith::tool::BoxFuture;
///
/// struct Echo;
/// impl ModelClient for Echo {
///     fn complete<'a>(&'a self, request: &'a ModelRequest) -> BoxFuture<'a, Result<Value, ModelError>> {
///         let said = request.body["messages"][0]["content"].clone();
///         Box::pin(async move {
///             Ok(json!({"choices": [{"message": {"role": "assistant", "content": said}}]}))
///         })
///     }
/// }
/// ```
pub trait ModelClient: Send + Sync + 'static {
    /// The model's response to `request`.
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<Value, ModelError>>;

    /// The name of the model this client asks, when it knows it: the `chat` span's
    /// `gen_ai.request.model` ([`telemetry`](crate::telemetry)). `None` by default.
    fn model(&self) -> Option<&str> {
        None
    }
}

impl<T: ModelClient + ?Sized> ModelClient for Arc<T> {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<Value, ModelError>> {
        (**self).complete(request)
    }

    fn model(&self) -> Option<&str> {
        (**self).model()
    }
}

/// A model that answers from a script: each request gets the next response, in order. It
/// keeps every request it received, for a test to look at.
///
/// ```
/// use toolsmith::agent::ScriptedModel;
/// use toolsmith::serde_json::json;
/// let model = ScriptedModel::new([json!({"choices": [{"message": {"role": "assistant", "content": "hi"}}]})]);
/// assert_eq!(model.remaining(), 1);
/// ```
#[derive(Clone, Default)]
pub struct ScriptedModel {
    inner: Arc<Mutex<Script>>,
}

#[derive(Default)]
struct Script {
    responses: VecDeque<Value>,
    requests: Vec<ModelRequest>,
    /// Answer each request by its turn (`responses[request.turn]`) instead of in order.
    by_turn: bool,
}

impl ScriptedModel {
    /// A model that gives `responses`, one per request.
    #[must_use]
    pub fn new(responses: impl IntoIterator<Item = Value>) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Script {
                responses: responses.into_iter().collect(),
                requests: Vec::new(),
                by_turn: false,
            })),
        }
    }

    /// A model that answers each request by the run's turn it is for
    /// ([`ModelRequest::turn`]): the first request of a run gets `responses[0]`, its fifth
    /// `responses[4]`, in whichever process asks and however often. A run resumed in
    /// another process, or asked again after a crash, gets the answer for the turn it is at,
    /// as a real model asked the same conversation would give; a request past the script is
    /// an error.
    ///
    /// ```
    /// use toolsmith::agent::{Agent, ScriptedModel, Stop};
    /// use toolsmith::serde_json::json;
    /// use toolsmith::{Dialect, ToolContext, Toolbox};
    /// let answers = [json!({"choices": [{"message": {"role": "assistant", "content": "hi"}}]})];
    /// // Two processes, one script: each answers the run's first request alike.
    /// let (one, two) = (ScriptedModel::by_turn(answers.clone()), ScriptedModel::by_turn(answers));
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// for model in [one, two] {
    ///     let agent = Agent::new(Toolbox::new(), Dialect::OpenAiChat { strict: false }, model.clone());
    ///     let stop = agent.run(&mut agent.start("Say hi."), &ToolContext::new()).await.unwrap();
    ///     assert_eq!(stop, Stop::Answered("hi".into()));
    ///     // Asked for the same turn again, it answers the same.
    ///     assert_eq!(model.remaining(), 0);
    /// }
    /// # });
    /// ```
    #[must_use]
    pub fn by_turn(responses: impl IntoIterator<Item = Value>) -> Self {
        let model = Self::new(responses);
        model.lock().by_turn = true;
        model
    }

    /// Adds a response at the end of the script.
    pub fn push(&self, response: Value) {
        self.lock().responses.push_back(response);
    }

    /// The requests received so far.
    #[must_use]
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.lock().requests.clone()
    }

    /// How many responses are left: in order, those not given yet; by turn, those for turns
    /// after the latest one asked for.
    #[must_use]
    pub fn remaining(&self) -> usize {
        let script = self.lock();
        if !script.by_turn {
            return script.responses.len();
        }
        let asked = script
            .requests
            .iter()
            .map(|r| r.turn as usize + 1)
            .max()
            .unwrap_or(0);
        script.responses.len().saturating_sub(asked)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl ModelClient for ScriptedModel {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<Value, ModelError>> {
        let mut script = self.lock();
        script.requests.push(request.clone());
        let next = if script.by_turn {
            script
                .responses
                .get(request.turn as usize)
                .cloned()
                .ok_or_else(|| {
                    ModelError::new(format!(
                        "the script has no response for turn {}",
                        request.turn
                    ))
                })
        } else {
            script
                .responses
                .pop_front()
                .ok_or_else(|| ModelError::new("the script has no more responses"))
        };
        Box::pin(async move { next })
    }
}

impl fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("remaining", &self.remaining())
            .finish_non_exhaustive()
    }
}
