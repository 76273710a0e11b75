//! The agent loop, around a model client you supply: send the tool block and the
//! conversation, answer the calls, append, and go again until the model answers in text or a
//! limit is reached; pause when a call waits for a person, and resume from the saved state,
//! in this process or another. An [`AgentTool`] makes a whole loop one tool of another agent.
//!
//! The loop is optional: it is built from the one-turn API
//! ([`ProviderToolbox::respond_to`](crate::ProviderToolbox::respond_to),
//! [`request_for`](crate::ProviderToolbox::request_for)), which stays the core.
//!
//! ```
//! use toolsmith::agent::{Agent, ScriptedModel, Stop};
//! use toolsmith::serde_json::json;
//! use toolsmith::{tool, Dialect, ToolContext, Toolbox};
//!
//! /// Gets the current weather in a city. Read-only. Not for forecasts.
//! #[tool(effect = "read")]
//! fn get_weather(
//!     /// The city.
//!     #[arg(length(min = 1, max = 60))]
//!     city: String,
//! ) -> String {
//!     format!("21 °C in {city}")
//! }
//!
//! let model = ScriptedModel::new([
//!     json!({"role": "assistant", "content": [
//!         {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}],
//!         "usage": {"input_tokens": 50, "output_tokens": 10}}),
//!     json!({"role": "assistant", "content": [{"type": "text", "text": "It is 21 °C in Paris."}],
//!         "usage": {"input_tokens": 80, "output_tokens": 9}}),
//! ]);
//! let agent = Agent::new(Toolbox::new().with(GetWeather), Dialect::Anthropic { strict: false }, model.clone());
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let mut state = agent.start("Weather in Paris?");
//! let stop = agent.run(&mut state, &ToolContext::new().with_run_id("run-1")).await.unwrap();
//! assert_eq!(stop, Stop::Answered("It is 21 °C in Paris.".into()));
//! assert_eq!(state.turns(), 2);
//! assert_eq!(state.usage().total(), 149);
//! // The second request held the call and its result.
//! assert_eq!(model.requests()[1].body["messages"].as_array().unwrap().len(), 3);
//! # });
//! ```

mod budget;
mod checkpoints;
mod children;
mod client;
mod conversation;
mod delegate;
mod durable;
mod earlier;
mod error;
mod journal;
#[cfg(feature = "async-openai")]
pub mod openai;
mod owner;
mod progress;
mod run;
mod state;
mod tasks;
mod token;
mod trim;

pub use crate::policy::Verdict;
pub use client::{ModelClient, ModelError, ModelRequest, ScriptedModel};
pub use delegate::AgentTool;
pub use error::AgentError;
pub use journal::{Journal, Step};
pub use run::{Agent, AgentEvent, Limit, Limits, Stop};
pub use state::{PendingCall, RunState, RunStep, Usage};
pub use trim::Trim;
