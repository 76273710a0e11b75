//! What an MCP client answers when its server asks something of it: the application's
//! [`Caller`] (its user's answers to elicitation forms; the progress the server reports),
//! when the toolset was given one.

use std::sync::Arc;

use rmcp::model::{
    ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    ErrorData, FormElicitationCapability, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};

use crate::caller::{Caller, Elicited};

/// The client side of a connection: declares elicitation (form) when it has a caller to ask,
/// and passes the server's questions and notices to it.
#[derive(Clone, Default)]
pub(super) struct Answering {
    pub(super) caller: Option<Arc<dyn Caller>>,
}

impl rmcp::ClientHandler for Answering {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        if self.caller.is_some() {
            info.capabilities.elicitation = Some(
                ElicitationCapability::default().with_form(FormElicitationCapability::default()),
            );
        }
        info
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let Some(caller) = &self.caller else {
            return Err(ErrorData::method_not_found::<
                rmcp::model::ElicitationCreateRequestMethod,
            >());
        };
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return Err(ErrorData::invalid_params(
                "only form elicitation is supported",
                None,
            ));
        };
        let schema = serde_json::to_value(&requested_schema)
            .map_err(|err| ErrorData::invalid_params(err.to_string(), None))?;
        match caller.elicit(None, &message, &schema).await {
            Ok(Elicited::Accepted(content)) => {
                Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
            }
            Ok(Elicited::Declined) => Ok(ElicitResult::new(ElicitationAction::Decline)),
            Ok(Elicited::Cancelled) => Ok(ElicitResult::new(ElicitationAction::Cancel)),
            Err(err) => Err(ErrorData::internal_error(err.to_string(), None)),
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        let Some(caller) = &self.caller else {
            return;
        };
        // A partial result (a toolsmith server's, under `_meta`) is handed over as one. rmcp
        // 3.11 moves the notification's extensions into the context before its `_meta`, so
        // the map is found there (looked for in each place it may be).
        let key = crate::caller::PARTIAL_META;
        let partial = params
            .meta
            .as_ref()
            .and_then(|meta| meta.get(key))
            .or_else(|| context.meta.get(key))
            .or_else(|| {
                context
                    .extensions
                    .get::<rmcp::model::NotificationMetaObject>()
                    .and_then(|meta| meta.get(key))
            });
        match partial {
            Some(value) => caller.partial(value).await,
            None => {
                caller
                    .progress(params.progress, params.total, params.message.as_deref())
                    .await;
            }
        }
    }
}
