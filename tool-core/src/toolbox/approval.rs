//! A person's decisions on calls that need approval, given through the toolbox: by the name a
//! tool was registered under, or (on [`ProviderToolbox`]) by a call parsed from a provider's
//! response, so that the decision binds the exact call the model will repeat.

use crate::arguments::Arguments;
use crate::context::ToolContext;
use crate::policy::{ApprovalError, Approvals, PendingApproval, Ticket, needs_approval};
use crate::provider::{Dialect, ToolCall};

use super::{ApprovalDesk, ProviderToolbox, Toolbox};

/// What a toolbox's decision tokens sign for.
const DECISION: &str = "toolsmith decision on a waiting request";

impl Toolbox {
    /// The toolbox as the person who decides approvals sees it: the calls waiting, and
    /// decisions by registered name.
    #[must_use]
    pub fn approvals(&self) -> ApprovalDesk<'_> {
        ApprovalDesk { toolbox: self }
    }
}

impl ApprovalDesk<'_> {
    /// The calls waiting for a person's approval, oldest first, when the toolbox's approver is
    /// an [`Approvals`] store (empty otherwise).
    #[must_use]
    pub fn pending(&self) -> Vec<PendingApproval> {
        self.signed(
            self.toolbox
                .approval_store()
                .map(Approvals::pending)
                .unwrap_or_default(),
        )
    }

    /// Each request with its [`token`](PendingApproval::token), signed with the toolbox
    /// state's key.
    fn signed(&self, mut requests: Vec<PendingApproval>) -> Vec<PendingApproval> {
        for request in &mut requests {
            let ticket = &request.ticket;
            let payload =
                serde_json::json!([ticket.principal, ticket.run, ticket.tool, ticket.hash]);
            request.token = crate::keys::sign(
                self.toolbox.state_key(),
                DECISION,
                payload.to_string().as_bytes(),
            );
        }
        requests
    }

    /// Records `verdict` on the request `token` names ([`PendingApproval::token`]): a
    /// decision that travelled through a UI or another process. The token is checked (signed
    /// with this toolbox state's key, unaltered) and the request must still wait.
    ///
    /// ```
    /// use toolsmith::policy::{Approvals, ApprovalStatus, Verdict};
    /// use toolsmith::{tool, ToolContext, Toolbox};
    ///
    /// /// Deletes a note. Destructive: it cannot be undone. Not for archiving.
    /// #[tool(effect = "destructive")]
    /// async fn delete_note(
    ///     /// The note.
    ///     id: u64,
    /// ) -> u64 {
    ///     id
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let approvals = Approvals::new();
    /// let toolbox = Toolbox::new().with(DeleteNote).with_approver(approvals.clone());
    /// let ctx = ToolContext::new().with_principal("ada").with_run_id("run-1");
    /// toolbox.call("delete_note", r#"{"id": 7}"#, &ctx).await;
    /// // The UI lists what waits for ada, and sends back a token with her decision.
    /// let token = toolbox.approvals().pending_for(Some("ada"))[0].token.clone();
    /// let altered = format!("{}{}", &token[..token.len() - 1], if token.ends_with('0') { '1' } else { '0' });
    /// assert!(toolbox.approvals().decide_signed(&altered, &Verdict::approve()).is_err());
    /// toolbox.approvals().decide_signed(&token, &Verdict::approve().by("ada")).unwrap();
    /// assert!(toolbox.call("delete_note", r#"{"id": 7}"#, &ctx).await.is_success());
    /// assert_eq!(approvals.records()[0].status, ApprovalStatus::Approved);
    /// # });
    /// ```
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Forged`] for a token forged, altered or signed with another key;
    /// [`ApprovalError::NotPending`] when the request no longer waits;
    /// [`ApprovalError::NoStore`] when the approver is not an [`Approvals`] store.
    pub fn decide_signed(
        &self,
        token: &str,
        verdict: &crate::policy::Verdict,
    ) -> Result<(), ApprovalError> {
        let ticket = self.ticket_of(token)?;
        let store = self
            .toolbox
            .approval_store()
            .ok_or(ApprovalError::NoStore)?;
        store.decide_waiting(&ticket, verdict)
    }

    /// The request `token` names, its signature checked under the toolbox state's key.
    fn ticket_of(&self, token: &str) -> Result<Ticket, ApprovalError> {
        let payload = crate::keys::verify(self.toolbox.state_key(), DECISION, token)
            .ok_or(ApprovalError::Forged)?;
        let (principal, run, tool, hash): (Option<String>, Option<String>, String, String) =
            serde_json::from_slice(&payload).map_err(|_| ApprovalError::Forged)?;
        Ok(Ticket {
            principal,
            run,
            tool,
            hash,
        })
    }

    /// The calls waiting for `principal`'s approval (`None`: calls made without one), oldest
    /// first, each with its signed [`token`](PendingApproval::token), from whichever store the
    /// toolbox's approver keeps them in: [`Approvals`] in this process's memory,
    /// `SharedApprovals` in Redis for a fleet (a UI on any replica lists every replica's), or
    /// the state's ([`State::with_approvals`](crate::state::State::with_approvals)).
    ///
    /// ```
    /// use toolsmith::policy::Verdict;
    /// use toolsmith::state::State;
    /// use toolsmith::{tool, ToolContext, Toolbox};
    ///
    /// /// Deletes a note. Destructive: it cannot be undone. Not for archiving.
    /// #[tool(effect = "destructive")]
    /// async fn delete_note(
    ///     /// The note.
    ///     id: u64,
    /// ) -> u64 {
    ///     id
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// // Approvals kept in the toolbox's state, shared by the two toolboxes on it.
    /// let state = State::memory().with_approvals().with_key("the app's key: 32 bytes or more of secret");
    /// let worker = Toolbox::new().with(DeleteNote).with_state(state.clone());
    /// let desk = Toolbox::new().with(DeleteNote).with_state(state);
    /// let ctx = ToolContext::new().with_principal("ada").with_run_id("run-1");
    /// assert!(!worker.call("delete_note", r#"{"id": 7}"#, &ctx).await.is_success());
    /// let waiting = desk.approvals().waiting_for(Some("ada")).await.unwrap();
    /// desk.approvals().decide_token(&waiting[0].token, &Verdict::approve().by("lin")).await.unwrap();
    /// assert!(worker.call("delete_note", r#"{"id": 7}"#, &ctx).await.is_success());
    /// # });
    /// ```
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Unavailable`] when the store cannot be reached.
    pub async fn waiting_for(
        &self,
        principal: Option<&str>,
    ) -> Result<Vec<PendingApproval>, ApprovalError> {
        let Some(approver) = self.toolbox.settings.approver.as_ref() else {
            return Ok(Vec::new());
        };
        let mut waiting = approver.list_waiting().await?;
        waiting.retain(|p| p.principal.as_deref() == principal);
        Ok(self.signed(waiting))
    }

    /// [`decide_signed`](Self::decide_signed) for any store the toolbox's approver keeps its
    /// requests in, Redis included: the token is checked, the request must still wait, and
    /// the verdict (with who decided and why) is recorded where every process reads it.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Forged`] for a token forged, altered or signed with another key;
    /// [`ApprovalError::NotPending`] when the request no longer waits (or the approver keeps
    /// no requests); [`ApprovalError::NoStore`] when the toolbox has no approver;
    /// [`ApprovalError::Unavailable`] when its store cannot be reached.
    pub async fn decide_token(
        &self,
        token: &str,
        verdict: &crate::policy::Verdict,
    ) -> Result<(), ApprovalError> {
        let ticket = self.ticket_of(token)?;
        let approver = self
            .toolbox
            .settings
            .approver
            .as_ref()
            .ok_or(ApprovalError::NoStore)?;
        let waiting = approver.list_waiting().await?;
        let pending = waiting
            .iter()
            .find(|p| p.ticket == ticket)
            .ok_or(ApprovalError::NotPending)?;
        approver.record_verdict(pending, verdict).await
    }

    /// The calls waiting for `principal`'s approval (`None`: calls made without one), oldest
    /// first: what a UI shows the person signed in.
    ///
    /// ```
    /// use toolsmith::policy::Approvals;
    /// use toolsmith::{tool, ToolContext, Toolbox};
    ///
    /// /// Deletes a note. Destructive: it cannot be undone. Not for archiving.
    /// #[tool(effect = "destructive", requires_approval)]
    /// async fn delete_note(
    ///     /// The note.
    ///     id: u64,
    /// ) -> u64 {
    ///     id
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let toolbox = Toolbox::new().with(DeleteNote).with_approver(Approvals::new());
    /// for (user, id) in [("ada", 1), ("bo", 2), ("ada", 3)] {
    ///     let ctx = ToolContext::new().with_principal(user);
    ///     toolbox.call("delete_note", format!(r#"{{"id": {id}}}"#), &ctx).await;
    /// }
    /// let ada: Vec<_> = toolbox.approvals().pending_for(Some("ada")).into_iter().map(|p| p.arguments["id"].clone()).collect();
    /// assert_eq!(ada, [1, 3]);
    /// assert_eq!(toolbox.approvals().pending_for(Some("bo")).len(), 1);
    /// assert!(toolbox.approvals().pending_for(None).is_empty());
    /// # });
    /// ```
    #[must_use]
    pub fn pending_for(&self, principal: Option<&str>) -> Vec<PendingApproval> {
        self.signed(
            self.toolbox
                .approval_store()
                .map(|store| store.pending_for(principal))
                .unwrap_or_default(),
        )
    }

    /// Approves one call of the tool registered as `name` with these arguments, by the
    /// context's principal (single-use unless the store is [`reusable`](Approvals::reusable)).
    ///
    /// # Errors
    ///
    /// [`ApprovalError`] for an unknown tool, a tool that needs no approval, arguments the
    /// tool would refuse, or a toolbox whose approver is not an [`Approvals`] store.
    ///
    /// ```
    /// use toolsmith::policy::Approvals;
    /// use toolsmith::{tool, ToolContext, Toolbox};
    ///
    /// /// Deletes a note. Destructive: it cannot be undone. Not for archiving.
    /// #[tool(effect = "destructive", requires_approval)]
    /// async fn delete_note(
    ///     /// The note.
    ///     id: u64,
    /// ) -> u64 {
    ///     id
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let toolbox = Toolbox::new().with(DeleteNote).with_approver(Approvals::new());
    /// let ctx = ToolContext::new().with_principal("ada");
    /// toolbox.approvals().approve("delete_note", r#"{"id": 7}"#, &ctx).unwrap();
    /// assert!(toolbox.call("delete_note", r#"{"id": 7}"#, &ctx).await.is_success());
    /// assert!(toolbox.approvals().approve("delete_nothing", "{}", &ctx).is_err());
    /// # });
    /// ```
    pub fn approve<'a>(
        &self,
        name: &str,
        arguments: impl Into<Arguments<'a>>,
        ctx: &ToolContext,
    ) -> Result<(), ApprovalError> {
        self.toolbox
            .record(name, None, &arguments.into(), ctx, None)
    }

    /// Declines calls of the tool registered as `name` with these arguments: they are
    /// refused with `approval_denied` and `reason`.
    ///
    /// # Errors
    ///
    /// As [`approve`](Self::approve).
    pub fn deny<'a>(
        &self,
        name: &str,
        arguments: impl Into<Arguments<'a>>,
        ctx: &ToolContext,
        reason: impl Into<String>,
    ) -> Result<(), ApprovalError> {
        self.toolbox
            .record(name, None, &arguments.into(), ctx, Some(reason.into()))
    }
}

impl Toolbox {
    fn approval_store(&self) -> Option<&Approvals> {
        self.settings.approver.as_ref().and_then(|a| a.approvals())
    }

    /// Records a decision (an approval, or a denial with its reason) on one call.
    fn record(
        &self,
        name: &str,
        dialect: Option<Dialect>,
        arguments: &Arguments<'_>,
        ctx: &ToolContext,
        denial: Option<String>,
    ) -> Result<(), ApprovalError> {
        let (approvals, ticket) = self.ticket(name, dialect, arguments, ctx)?;
        // The audit record of the call it decides says what was decided, and why a denial.
        let note = crate::audit::ApprovalNote::of(denial.as_ref(), None, None);
        match denial {
            None => approvals.grant_approval(ticket, Some(note)),
            Some(reason) => approvals.grant_denial(ticket, reason, note),
        }
        Ok(())
    }

    /// What a decision binds: the tool (looked up by its registered name, or by `dialect`'s
    /// spelling), the principal and the hash of the canonical arguments.
    fn ticket(
        &self,
        name: &str,
        dialect: Option<Dialect>,
        arguments: &Arguments<'_>,
        ctx: &ToolContext,
    ) -> Result<(&Approvals, Ticket), ApprovalError> {
        let tool = match dialect {
            Some(dialect) => self.resolve(dialect, name),
            None => self.get(name),
        };
        let Some(tool) = tool else {
            let spell = |n: &str| dialect.map_or_else(|| n.to_owned(), |d| d.tool_name(n));
            return Err(ApprovalError::UnknownTool {
                name: name.to_owned(),
                needing_approval: self
                    .definitions()
                    .filter(|def| needs_approval(def))
                    .map(|def| spell(def.name()))
                    .collect(),
            });
        };
        let def = tool.definition();
        if !needs_approval(def) {
            return Err(ApprovalError::NotNeeded {
                tool: def.name().to_owned(),
            });
        }
        let hash = def
            .read_arguments(arguments, ctx)
            .map_err(|err| ApprovalError::InvalidArguments {
                tool: def.name().to_owned(),
                message: err.message().to_owned(),
            })?
            .hash()
            .to_owned();
        let approvals = self.approval_store().ok_or(ApprovalError::NoStore)?;
        let ticket = Ticket {
            principal: ctx.principal().map(str::to_owned),
            run: ctx.run_id().map(str::to_owned),
            tool: def.name().to_owned(),
            hash,
        };
        Ok((approvals, ticket))
    }
}

impl ProviderToolbox<'_> {
    /// Approves one call as the model sent it (the provider's name, its arguments as sent:
    /// a JSON string for OpenAI), for the context's principal. The model's repeat of the
    /// call then runs. When the call is already waiting in the toolbox's store (it ran and
    /// paused, under its id), the approval binds the arguments as the approval gate read them,
    /// after any repair or input guard: what was shown to the person is what runs.
    ///
    /// # Errors
    ///
    /// As [`ApprovalDesk::approve`]; an unknown tool's error lists names in this provider's
    /// spelling.
    ///
    /// ```
    /// use toolsmith::serde_json::json;
    /// use toolsmith::policy::Approvals;
    /// use toolsmith::{tool, Dialect, ToolCall, ToolContext, Toolbox};
    ///
    /// /// Deletes a ticket. Destructive: it cannot be undone. Not for closing tickets.
    /// #[tool(name = "tickets.delete", effect = "destructive", requires_approval)]
    /// async fn delete_ticket(
    ///     /// The ticket.
    ///     id: u64,
    /// ) -> u64 {
    ///     id
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let toolbox = Toolbox::new().with(DeleteTicket).with_approver(Approvals::new());
    /// let openai = toolbox.provider(Dialect::OpenAiChat { strict: true });
    /// let call = ToolCall { id: Some("call_9".into()), name: "tickets_delete".into(), arguments: json!("{\"id\": 7}") };
    /// let ctx = ToolContext::new();
    /// assert_eq!(openai.run(&call, &ctx).await.error().unwrap().code().as_str(), "approval_required");
    /// openai.approve(&call, &ctx).unwrap();
    /// assert!(openai.run(&call, &ctx).await.is_success());
    /// # });
    /// ```
    pub fn approve(&self, call: &ToolCall, ctx: &ToolContext) -> Result<(), ApprovalError> {
        if self.decide_waiting(call, ctx, None) {
            return Ok(());
        }
        let dialect = Some(self.dialect());
        self.toolbox()
            .record(&call.name, dialect, &call.arguments(), ctx, None)
    }

    /// Decides the call waiting in the toolbox's store for this call (its id and principal),
    /// as the approval gate read it: a repaired or guard-rewritten call is approved as it will
    /// run, not as the model wrote it. `false` when none waits.
    fn decide_waiting(&self, call: &ToolCall, ctx: &ToolContext, denial: Option<&str>) -> bool {
        let (Some(id), Some(approvals), Some(tool)) = (
            call.id.as_deref(),
            self.toolbox().approval_store(),
            self.resolve(&call.name),
        ) else {
            return false;
        };
        let name = tool.definition().name();
        let Some(waiting) = approvals.pending().into_iter().find(|p| {
            p.call_id.as_deref() == Some(id)
                && p.tool == name
                && p.principal.as_deref() == ctx.principal()
        }) else {
            return false;
        };
        match denial {
            None => approvals.approve(&waiting),
            Some(reason) => approvals.deny(&waiting, reason),
        }
        true
    }

    /// Declines calls like this one: the model's repeat is refused with `approval_denied` and
    /// `reason`.
    ///
    /// # Errors
    ///
    /// As [`approve`](Self::approve).
    pub fn deny(
        &self,
        call: &ToolCall,
        ctx: &ToolContext,
        reason: impl Into<String>,
    ) -> Result<(), ApprovalError> {
        let reason = reason.into();
        if self.decide_waiting(call, ctx, Some(&reason)) {
            return Ok(());
        }
        let dialect = Some(self.dialect());
        self.toolbox()
            .record(&call.name, dialect, &call.arguments(), ctx, Some(reason))
    }
}
