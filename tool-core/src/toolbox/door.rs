//! The one door of a toolbox: every call, from every surface, is admitted or turned away
//! here before anything runs.
//!
//! A call names a tool in its caller's spelling (the registered name, or a provider's), in a
//! context, and perhaps as the answer to a request that offered some tools. The door finds
//! the tool, then asks in order: did the request offer it, does its condition hold, does the
//! prepare step show it. The first "no" is the [`Refusal`]; the model is answered the same
//! `unknown_tool` error for each, listing what it may call.

use std::sync::Arc;

use crate::arguments::Arguments;
use crate::context::ToolContext;
use crate::definition::ToolDefinition;
use crate::error::{Refusal, ToolError};
use crate::outcome::ToolOutcome;
use crate::provider::Offer;
use crate::tool::Tool;

use super::{Admitted, Spelling, Toolbox};

impl<'a> Admitted<'a> {
    /// The tool.
    #[must_use]
    pub fn tool(&self) -> &'a Arc<dyn Tool> {
        &self.toolbox.registry.in_order[self.index]
    }

    /// The tool's own definition (its registered name, policy and schema).
    #[must_use]
    pub fn definition(&self) -> &'a ToolDefinition {
        self.tool().definition()
    }

    /// The definition a model was shown: a toolset's rename or re-description of the tool,
    /// or its own.
    #[must_use]
    pub fn view(&self) -> &'a ToolDefinition {
        self.toolbox.registry.shown(self.index)
    }

    /// Runs the admitted call through the toolbox's policies, as [`Toolbox::call`](crate::Toolbox::call) does after
    /// its door: the door is not asked again.
    pub async fn call<'c>(
        &self,
        arguments: impl Into<Arguments<'c>>,
        ctx: &'c ToolContext,
    ) -> ToolOutcome
    where
        'a: 'c,
    {
        self.toolbox
            .call_admitted(self.index, arguments.into(), ctx)
            .await
    }

    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// Its place among the calls at once, for a call that outlives this value (an MCP task).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn take_slot(&mut self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.slot.take()
    }
}

impl std::fmt::Debug for Admitted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admitted")
            .field("tool", &self.definition().name())
            .field("view", &self.view().name())
            .finish()
    }
}

impl Toolbox {
    /// The door every call goes through, on every surface: the tool `name` (in `spelling`)
    /// admitted for a call in `ctx` answering a request that offered `offer` (`None` for a
    /// call from the application's own code, which answers no request), or turned away.
    ///
    /// Turned away, in this order: no tool has the name ([`Refusal::Unknown`]); the offer
    /// does not hold it ([`Refusal::NotOffered`]); its condition does not hold in `ctx`
    /// ([`Refusal::Disabled`]); the prepare step hides it in `ctx` ([`Refusal::Hidden`]);
    /// the toolbox has as many calls admitted as
    /// [`Defaults::max_in_flight`](crate::policy::Defaults::max_in_flight) allows
    /// ([`Refusal::Busy`], a retryable `rate_limited` error: the admitted call holds its
    /// place until it is dropped). A call whose context carries a grant
    /// ([`ToolContext::grant`]) lacking a scope the tool needs is turned away before its place
    /// is taken ([`Refusal::Unauthorized`], a `permission_denied` error naming the scopes).
    /// Each error but busy is the `unknown_tool` error the model reads, listing what it may
    /// call in the caller's spelling; [`ToolError::refusal`] says which.
    ///
    /// ```
    /// use toolsmith::error::Refusal;
    /// use toolsmith::Spelling;
    /// use toolsmith::{tool, Dialect, ToolContext, Toolbox};
    ///
    /// /// Searches tickets. Read-only. Not for editing.
    /// #[tool(name = "tickets.search", effect = "read")]
    /// fn search(
    ///     /// Words to look for.
    ///     #[arg(length(min = 1, max = 100))]
    ///     query: String,
    /// ) -> Vec<u32> {
    ///     let _ = query;
    ///     vec![7]
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let toolbox = Toolbox::new().with(Search);
    /// let ctx = ToolContext::new();
    /// let openai = Spelling::Provider(Dialect::OpenAiChat { strict: true });
    /// let admitted = toolbox.admit("tickets_search", openai, &ctx, None).await.unwrap();
    /// assert_eq!(admitted.definition().name(), "tickets.search");
    /// let out = admitted.call(r#"{"query": "refund"}"#, &ctx).await;
    /// assert_eq!(out.into_result::<Vec<u32>>().unwrap(), [7]);
    ///
    /// let refused = toolbox.admit("tickets.search", openai, &ctx, None).await.unwrap_err();
    /// assert_eq!(refused.refusal(), Some(Refusal::Unknown));
    /// assert!(refused.message().contains("`tickets_search`"));
    /// # });
    /// ```
    ///
    /// # Errors
    ///
    /// The refusal, as the error the model reads.
    pub async fn admit(
        &self,
        name: &str,
        spelling: Spelling,
        ctx: &ToolContext,
        offer: Option<&Offer>,
    ) -> Result<Admitted<'_>, ToolError> {
        // Most calls are answered by the name alone: a known tool under no condition and no
        // prepare step (or answering an offer the prepare step made). Only the others, and
        // refusals, wait on a condition or list the tools, in a future of their own, so that
        // every caller's future stays small.
        if let Some(index) = self.find(name, spelling)
            && self.unconditional(index, offer)
            && offer.is_none_or(|offer| self.in_offer(index, name, spelling, offer))
        {
            return self.admitted(index, ctx);
        }
        Box::pin(self.admit_asking(name, spelling, ctx, offer)).await
    }

    /// [`admit`](Self::admit) for a call that asks a condition or the prepare step, or is
    /// turned away.
    async fn admit_asking(
        &self,
        name: &str,
        spelling: Spelling,
        ctx: &ToolContext,
        offer: Option<&Offer>,
    ) -> Result<Admitted<'_>, ToolError> {
        match self.door(name, spelling, ctx, offer).await {
            Ok(index) => self.admitted(index, ctx),
            Err(reason) => Err(self.turned_away(name, spelling, ctx, offer, reason).await),
        }
    }

    /// The call of the tool at `index`, past the door's questions, given a place among the
    /// calls at once when the toolbox bounds them; turned away busy when none is free.
    #[inline]
    fn admitted(&self, index: usize, ctx: &ToolContext) -> Result<Admitted<'_>, ToolError> {
        if let Some(grant) = ctx.grant()
            && !grant.allows(self.registry.in_order[index].definition().scopes())
        {
            return Err(self.unauthorized(index, ctx));
        }
        let slot = match &self.settings.in_flight {
            None => None,
            Some(places) => match Arc::clone(places).try_acquire_owned() {
                Ok(slot) => Some(slot),
                Err(_) => return Err(self.busy(index, ctx)),
            },
        };
        Ok(Admitted {
            toolbox: self,
            index,
            slot,
        })
    }

    /// The refusal of a call whose grant lacks a scope the tool needs: which ones, so that
    /// the caller can ask for them.
    #[cold]
    fn unauthorized(&self, index: usize, ctx: &ToolContext) -> ToolError {
        let def = self.registry.in_order[index].definition();
        let missing = ctx
            .grant()
            .map(|grant| grant.missing(def.scopes()))
            .unwrap_or_default();
        let mut err = ToolError::permission_denied(format!(
            "`{}` needs the scope{} `{}`, which the caller's authorization does not grant; the user must authorize them first.",
            self.registry.shown(index).name(),
            if missing.len() == 1 { "" } else { "s" },
            missing.join("`, `"),
        ))
        .turned_away(Refusal::Unauthorized);
        super::finish_error(&mut err, def.name(), ctx);
        err
    }

    /// The refusal of a call when the toolbox has as many calls admitted as it takes: the
    /// tool is there, so the model is told to retry in a moment.
    #[cold]
    fn busy(&self, index: usize, ctx: &ToolContext) -> ToolError {
        let calls = self.settings.defaults.max_in_flight.unwrap_or(1);
        let mut err = ToolError::rate_limited(format!(
            "The toolbox is running its limit of {calls} calls at once. Retry in a moment."
        ))
        .retry_after(std::time::Duration::from_secs(1))
        .turned_away(Refusal::Busy);
        let own = self.registry.in_order[index].definition().name();
        super::finish_error(&mut err, own, ctx);
        err
    }

    /// Whether the tool at `index` is offered without asking anything of the call's context:
    /// no condition of its own, and no prepare step or an offer the prepare step made.
    #[inline]
    fn unconditional(&self, index: usize, offer: Option<&Offer>) -> bool {
        let own = self.registry.in_order[index].definition().name();
        (self.registry.prepare.is_none() || offer.is_some_and(Offer::is_prepared))
            && (self.registry.enablement.is_empty() || !self.registry.enablement.contains_key(own))
    }

    /// Whether `offer` holds the tool at `index`, named `name` in `spelling`. The offer is in
    /// a provider's spelling; a registered name is spelled as the model was shown it.
    fn in_offer(&self, index: usize, name: &str, spelling: Spelling, offer: &Offer) -> bool {
        match spelling {
            Spelling::Provider(_) => offer.contains(name),
            Spelling::Registered => offer.contains(self.registry.shown(index).name()),
        }
    }

    /// The index of the tool `name` names in `spelling`, before any condition is asked.
    #[inline]
    pub(crate) fn find(&self, name: &str, spelling: Spelling) -> Option<usize> {
        self.find_own(name, spelling).map(|(index, _)| index)
    }

    /// [`find`](Self::find), with the tool's registered name.
    #[inline]
    pub(crate) fn find_own<'n>(
        &'n self,
        name: &'n str,
        spelling: Spelling,
    ) -> Option<(usize, &'n str)> {
        match spelling {
            Spelling::Registered => self.registry.by_name.get(name).map(|&i| (i, name)),
            Spelling::Provider(dialect) => {
                let own: &str = self.registry.names.exported[dialect.index()].get(name)?;
                self.registry.by_name.get(own).map(|&i| (i, own))
            }
        }
    }

    /// The door's questions; the index of the tool admitted.
    async fn door(
        &self,
        name: &str,
        spelling: Spelling,
        ctx: &ToolContext,
        offer: Option<&Offer>,
    ) -> Result<usize, Refusal> {
        let index = self.find(name, spelling).ok_or(Refusal::Unknown)?;
        if let Some(offer) = offer
            && !self.in_offer(index, name, spelling, offer)
        {
            return Err(Refusal::NotOffered);
        }
        let own = self.registry.in_order[index].definition().name();
        // Most toolboxes have no conditions: no lookup then.
        if !self.registry.enablement.is_empty()
            && let Some(enabled) = self.registry.enablement.get(own)
            && !enabled.enabled(ctx).await
        {
            return Err(Refusal::Disabled);
        }
        // The prepare step judges every tool at once; an offer it made already holds its
        // answer for this tool.
        if self.registry.prepare.is_some()
            && !offer.is_some_and(Offer::is_prepared)
            && self.registry.prepared(ctx).hides(index)
        {
            return Err(Refusal::Hidden);
        }
        Ok(index)
    }

    /// The `unknown_tool` error for a call turned away, listing what the caller may call in
    /// its spelling.
    async fn turned_away(
        &self,
        name: &str,
        spelling: Spelling,
        ctx: &ToolContext,
        offer: Option<&Offer>,
        reason: Refusal,
    ) -> ToolError {
        let offered = self.definitions_for(ctx).await;
        let names: Vec<String> = offered
            .iter()
            .map(|def| match spelling {
                Spelling::Registered => def.name().to_owned(),
                Spelling::Provider(dialect) => dialect.tool_name(def.name()),
            })
            .filter(|spelled| offer.is_none_or(|offer| offer.contains(spelled)))
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut err = self.registry.unknown(name, &names).turned_away(reason);
        super::finish_error(&mut err, name, ctx);
        err
    }
}
