//! Approval asked of the client's user through elicitation.

use rmcp::service::{ElicitationError, RoleServer};

use crate::policy::{ApprovalDecision, ApprovalPrompt, ApprovalRequest};

/// How long a person has to answer an approval form.
pub(super) const APPROVAL_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// Asks the client's user to approve a call, through elicitation.
pub(super) struct Elicit {
    pub(super) peer: rmcp::Peer<RoleServer>,
}

/// The approval form: one checkbox.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(super) struct ApprovalForm {
    /// Check to let this call run.
    pub(super) approve: bool,
}

rmcp::elicit_safe!(ApprovalForm);

impl ApprovalPrompt for Elicit {
    fn ask<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> crate::tool::BoxFuture<'a, Option<ApprovalDecision>> {
        Box::pin(async move {
            let def = request.definition;
            let arguments = request.redacted_arguments().to_string();
            let arguments = crate::echo::echo(&arguments);
            let what = def.title().unwrap_or_else(|| def.name());
            let message = format!(
                "The assistant wants to run \"{what}\" (`{}`), which needs your approval: {}\nArguments: {arguments}",
                def.name(),
                def.description()
            );
            let answer = self
                .peer
                .elicit_with_timeout::<ApprovalForm>(message, Some(APPROVAL_WAIT))
                .await;
            match answer {
                Ok(Some(ApprovalForm { approve: true })) => Some(ApprovalDecision::Approved),
                Ok(Some(ApprovalForm { approve: false })) | Err(ElicitationError::UserDeclined) => {
                    Some(ApprovalDecision::Denied("the user declined it".into()))
                }
                Err(ElicitationError::UserCancelled) => Some(ApprovalDecision::Denied(
                    "the user dismissed the approval request".into(),
                )),
                Ok(None) | Err(_) => {
                    tracing::debug!(
                        tool = def.name(),
                        "the client could not be asked for approval"
                    );
                    None
                }
            }
        })
    }
}
