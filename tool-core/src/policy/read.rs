//! The step that reads a call's arguments once: validated, made canonical (`null` for an
//! optional parameter read as absent, defaults applied) and hashed. Every later step and the
//! tool itself see that one form; a call whose arguments are invalid ends here, before it
//! can reach a person, a store or a budget.

use std::sync::Arc;

use crate::tool::Tool;

use super::step::{Call, Flow, Next, Step};

/// The step, for a tool whose calls some step reads (an audit sink, an approval, an
/// idempotency key).
pub(crate) struct ReadArguments {
    pub(crate) tool: Arc<dyn Tool>,
}

impl Step for ReadArguments {
    /// In place: reading is synchronous.
    fn run<'a>(&'a self, mut call: Call<'a>, next: Next<'a>) -> Flow<'a> {
        if let Err(err) = call.read_once(self.tool.definition()) {
            return Flow::refused(err);
        }
        next.run(call)
    }
}
