//! The confirm transaction (ARCHITECTURE "confirm path", step 2) under real DynamoDB
//! semantics:
//!
//! - it touches only items of its own conversation (the case, the proposal, the new
//!   message) and the action's own entry in the tenant's unsettled index, so
//!   confirmations in different conversations never conflict — C-8 is held at
//!   preparation and at configuration change instead (decision 0019);
//! - each attempt has its own client request token; a token is reused only to resend the
//!   same items after an attempt whose outcome is unknown;
//! - after an unknown outcome the proposal is read back (consistently): if this request's
//!   own attempt value (N-1: random per confirm request, never an id another instance can
//!   mint) is the recorded one, the write committed and the caller carries on.

use super::chain::ChainRef;
use super::items::*;
use super::{DynamoStore, MAX_ATTEMPTS, Sent, Tx, any_conflict, backoff, failed, values};
use aws_sdk_dynamodb::types::TransactWriteItem;
use countersign_domain::audit_chain::Head;
use countersign_domain::ports::{AuditEntry, ConfirmWrite, StoreError, TransitionOutcome};
use countersign_domain::proposal::ProposalState;

/// How long the confirm items are resent under one token while their outcome is unknown
/// (issue 27: at least 5 s, longer than a transaction takes to commit or fail).
pub(super) const RESEND_FOR: std::time::Duration = std::time::Duration::from_secs(5);

/// What a read-back after an unknown outcome found.
enum ReadBack {
    /// This request's confirmation is recorded: the write committed.
    Ours,
    /// Still pending: the write did not (yet) commit.
    Pending,
    /// Another request moved it (or it is gone).
    Other(Option<ProposalState>),
}

impl DynamoStore {
    /// L-1: the domain's record of the confirmation (the same on every resend).
    fn confirm_entry(w: &ConfirmWrite) -> Result<AuditEntry, StoreError> {
        countersign_domain::life::confirmed(w).ok_or_else(|| corrupt("message id"))
    }

    /// The items of the confirm transaction, in a fixed order: case slot (0), proposal
    /// (1), confirming message (2), the tenant's unsettled index entry (3), then the
    /// confirmation's audit record and the conversation chain's head (L-1, L-2), built on
    /// `head` (known from the conversation's Query: no read of its own).
    fn confirm_items(
        &self,
        w: &ConfirmWrite,
        entry: &AuditEntry,
        head: &Head,
    ) -> Result<(Vec<TransactWriteItem>, Head), StoreError> {
        let chain = ChainRef::case(&w.tenant, &w.case);
        let (audit, next) = self.chain_items(&chain, head, std::slice::from_ref(entry))?;
        let pk = conv_pk(&w.tenant, &w.case);
        let items = vec![
            self.update(
                key(pk.as_str(), CASE_SK),
                "SET slot_state = :exec".to_owned(),
                "#status = :open AND slot_action = :aid AND slot_state = :pending",
                values([
                    (":open", s("open")),
                    (":aid", s(w.action_id.as_str())),
                    (":pending", s(ProposalState::PendingConfirmation.as_str())),
                    (":exec", s(ProposalState::Executing.as_str())),
                ]),
            )?,
            self.update(
                key(pk.as_str(), prop_sk(&w.action_id)),
                "SET #state = :exec, confirmation_message_id = :mid, confirm_attempt = :att"
                    .to_owned(),
                "#state = :pending AND presented_message_id = :pm",
                values([
                    (":pending", s(ProposalState::PendingConfirmation.as_str())),
                    (":exec", s(ProposalState::Executing.as_str())),
                    (":mid", s(w.message.id.as_str())),
                    (":att", s(w.attempt.as_str())),
                    (":pm", s(w.presented_message_id.as_str())),
                ]),
            )?,
            self.put_new(message_item(&w.tenant, &w.message))?,
            // The tenant's index of unsettled actions (its own item: confirmations in
            // different conversations still touch no common item), unconditionally: the
            // transaction's other conditions decide.
            self.put(super::unsettled_item(
                &w.tenant,
                &w.case,
                &w.action_id,
                w.message.created_at,
            ))?,
        ]
        .into_iter()
        .chain(audit)
        .collect();
        Ok((items, next))
    }

    /// P-2's lock: of any number of concurrent calls at most one is `Applied`.
    pub(super) async fn confirm_tx(
        &self,
        w: &ConfirmWrite,
    ) -> Result<TransitionOutcome, StoreError> {
        let chain = ChainRef::case(&w.tenant, &w.case);
        // N-2: the confirmation's record is sealed like every other record (its conversation
        // and person fields under their keys) before it is chained — once, so that a resend
        // of the same request carries the very same items.
        let sealed = self
            .sealed(&w.tenant, std::slice::from_ref(&Self::confirm_entry(w)?))
            .await?;
        let entry = sealed
            .first()
            .ok_or_else(|| corrupt("confirmation record"))?;
        for attempt in 0..MAX_ATTEMPTS {
            // A fresh token per attempt: an attempt that follows a definite cancellation
            // is a new request, not a resend.
            let token = ulid::Ulid::new().to_string();
            let head = self.head(&chain).await?;
            let (items, next) = self.confirm_items(w, entry, &head)?;
            let head_index = items.len() - 1;
            let reasons = match self.send_resending(w, &items, &token).await? {
                Ok(Tx::Committed) => {
                    self.remember_head(&chain, next);
                    return Ok(TransitionOutcome::Applied);
                }
                Ok(Tx::Cancelled(reasons)) => reasons,
                Err(current) => return Ok(TransitionOutcome::Conflict { current }),
            };
            // Another record of this conversation came first: build on its head.
            if self.head_moved(&chain, &reasons, head_index) {
                backoff(attempt).await;
                continue;
            }
            if !reasons.iter().any(|r| failed(Some(r))) && any_conflict(&reasons) {
                backoff(attempt).await;
                continue;
            }
            let current = match reasons.get(1) {
                Some(r) if failed(Some(r)) => match r.item().and_then(state_of) {
                    Some(state) => Some(state),
                    // A cancellation without the item: read what won.
                    None => self.proposal_state(w).await?,
                },
                // The proposal matched; the case or slot did not.
                _ => Some(ProposalState::PendingConfirmation),
            };
            return Ok(TransitionOutcome::Conflict { current });
        }
        // Conflicts every time (a crowd of confirmations on a slow table): report what
        // the proposal is now, so the caller can tell "another won" from "try again".
        let current = self.proposal_state(w).await?;
        tracing::warn!(?current, "the confirm write kept conflicting");
        Ok(TransitionOutcome::Conflict { current })
    }

    /// The proposal's state now (a consistent read); `None` when it is gone.
    async fn proposal_state(&self, w: &ConfirmWrite) -> Result<Option<ProposalState>, StoreError> {
        let item = self
            .get(conv_pk(&w.tenant, &w.case), prop_sk(&w.action_id))
            .await?;
        Ok(item.as_ref().and_then(state_of))
    }

    /// A-35, P-2: sends the confirm items under `token`. Every answer that does not prove
    /// "not applied" is unknown (issue 27): the same items are resent under the same token for
    /// [`RESEND_FOR`] (a resend of a committed write is answered with success, one of a
    /// write still running with `TransactionInProgress`, one of a write lost on the way is
    /// applied), and a refusal that follows an unknown answer proves nothing. When the
    /// time is up the proposal is read back: the commit, the state another request left
    /// (`Err`), or the last error when it is still pending.
    async fn send_resending(
        &self,
        w: &ConfirmWrite,
        items: &[TransactWriteItem],
        token: &str,
    ) -> Result<Result<Tx, Option<ProposalState>>, StoreError> {
        let until = tokio::time::Instant::now() + self.resend_for;
        // Whether an earlier attempt's outcome is unknown: from then on no refusal proves
        // that nothing was applied.
        let mut uncertain = false;
        let mut resends = 0;
        let error = loop {
            let error = match self.send_tx(items.to_vec(), Some(token)).await {
                Sent::Known(tx) => return Ok(Ok(tx)),
                Sent::Refused(e) if !uncertain => return Err(e),
                // Throttled before anything was applied: send again (what the SDK's own
                // retries would do), and give up at the deadline.
                Sent::Throttled(e) if !uncertain => {
                    if tokio::time::Instant::now() >= until {
                        return Err(e);
                    }
                    backoff(resends).await;
                    resends += 1;
                    continue;
                }
                Sent::Refused(e) | Sent::Throttled(e) | Sent::Unknown(e) => e,
            };
            if !uncertain {
                tracing::warn!(error = %error, "the confirm write's outcome is unknown: resending it");
            }
            if tokio::time::Instant::now() >= until {
                break error;
            }
            uncertain = true;
            backoff(resends).await;
            resends += 1;
        };
        match self.read_back(w).await {
            Ok(ReadBack::Ours) => Ok(Ok(Tx::Committed)),
            Ok(ReadBack::Other(current)) => {
                tracing::info!(?current, "another request settled the proposal first");
                Ok(Err(current))
            }
            Ok(ReadBack::Pending) | Err(_) => Err(error),
        }
    }

    /// One consistent read of the proposal after an unknown outcome.
    async fn read_back(&self, w: &ConfirmWrite) -> Result<ReadBack, StoreError> {
        let item = self
            .get(conv_pk(&w.tenant, &w.case), prop_sk(&w.action_id))
            .await?;
        let Some(item) = item else {
            return Ok(ReadBack::Other(None));
        };
        let state = state_of(&item);
        // N-1: decided by this request's own attempt value, never by the message id.
        let recorded = opt_s(&item, "confirm_attempt");
        Ok(match state {
            Some(ProposalState::PendingConfirmation) => ReadBack::Pending,
            _ if recorded == Some(w.attempt.as_str()) => ReadBack::Ours,
            other => ReadBack::Other(other),
        })
    }
}
