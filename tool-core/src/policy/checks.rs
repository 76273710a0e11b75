//! The output checks in the attempts: what an inline tool wrote into the caller's buffer,
//! checked where it lies, and a result too large to give inline kept in the result store.
//! The checks themselves (schema, steering text, secrets) are `crate::output`'s; this is
//! where the plan meets them.

use std::sync::Arc;

use crate::error::ToolError;
use crate::outcome::ToolOutcome;
use crate::output::{Checked, OutputChecks};

use super::step::Ran;

/// The data an inline tool wrote into `buf` after `len`, checked: left in place when clean
/// (or only to be marked untrusted), else taken out as an outcome (to be stored, tallied as a
/// batch, or changed by the checks).
#[inline]
pub(crate) fn written(output: &OutputChecks, buf: &mut Vec<u8>, len: usize) -> Ran {
    let taken = |buf: &mut Vec<u8>| {
        String::from_utf8(buf.split_off(len))
            .ok()
            .and_then(|data| serde_json::value::RawValue::from_string(data).ok())
    };
    if output.is_large(buf.len() - len) || output.is_batch() {
        // To be stored, or a batch to tally: taken out of the buffer, as a value the plan can
        // keep.
        let outcome = match taken(buf) {
            Some(raw) => ToolOutcome::Success(raw),
            None => ToolOutcome::Error(ToolError::internal("the tool wrote data that is not JSON")),
        };
        return Ran::Outcome(output.outcome(outcome));
    }
    if output.is_clean_bytes(&buf[len..]) {
        return Ran::Written;
    }
    let checked = match std::str::from_utf8(&buf[len..]) {
        Ok(data) => output.data(data),
        Err(_) => Checked::Changed(ToolOutcome::Error(ToolError::internal(
            "the tool wrote data that is not UTF-8",
        ))),
    };
    match checked {
        Checked::Clean => Ran::Written,
        // Marked untrusted and nothing else: the data stays where it was written.
        Checked::CleanMark => match output.clean_mark() {
            Some((notes, fields)) => Ran::Marked(Arc::clone(notes), Arc::clone(fields)),
            None => Ran::Written,
        },
        Checked::Mark(notes) => Ran::Outcome(match taken(buf) {
            Some(raw) => ToolOutcome::Checked(raw, notes),
            None => ToolOutcome::Error(ToolError::internal("the tool wrote data that is not JSON")),
        }),
        Checked::Changed(outcome) => {
            buf.truncate(len);
            Ran::Outcome(outcome)
        }
    }
}

/// Whether a result must wait before the call can end: data to keep in the result store, or
/// a batch whose failed items may be retried.
pub(crate) fn waits(output: &OutputChecks, ran: &Ran) -> bool {
    output.is_batch()
        || matches!(ran, Ran::Outcome(o) if o.for_model().data().is_some_and(|d| output.is_large(d.get().len())))
}

/// A result too large to give inline, kept in the result store for the call's principal, if
/// any (data written in place stays where it is).
pub(crate) async fn spill(output: &OutputChecks, ran: Ran, owner: Option<&str>) -> Ran {
    match ran {
        // Storing is boxed: most results are not large, and the future of every call that
        // waits holds room for this one's.
        Ran::Outcome(outcome) if output.spills(&outcome) => {
            Ran::Outcome(Box::pin(output.spill(outcome, owner)).await)
        }
        other => other,
    }
}
