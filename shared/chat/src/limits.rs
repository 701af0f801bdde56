//! The budgets a request spends before it does anything (V-7, N-5, decision 0021): the
//! person's new cases and messages, the tenant's widget API requests, the tenant's model
//! turns. Each is off when its limiter is not configured.

use crate::service::{Chat, ChatError};
use countersign_domain::conversation::Principal;
use countersign_domain::ports::Admission;

impl Chat {
    /// V-7: one unit of the person's budget of `what` (`cases` or `messages`) this minute,
    /// or `PersonLimited`. Keyed by tenant and person, so one person's flood spends
    /// nobody else's.
    pub(crate) async fn spend_person(
        &self,
        who: &Principal,
        what: &'static str,
    ) -> Result<(), ChatError> {
        let Some((limiter, limits)) = &self.person_limits else {
            return Ok(());
        };
        let per_minute = if what == "cases" {
            limits.cases_per_minute
        } else {
            limits.messages_per_minute
        };
        // Keyed by a digest of the person, never their id: the window item outlives an
        // erasure until its TTL (security review N10, confirm-path review N7).
        let person = countersign_domain::hash::Sha256Hex::digest(format!(
            "countersign person budget\n{}\n{}",
            who.tenant, who.user
        ));
        let bucket = format!("person:{what}:{}", &person.as_str()[..32]);
        let now = self.parts.clock.now();
        match limiter.take(&who.tenant, &bucket, per_minute, now).await? {
            Admission::Admitted => Ok(()),
            Admission::Limited { retry_after_secs } => {
                tracing::info!(tenant = %who.tenant, what, retry_after_secs, "V-7: person limit reached");
                Err(ChatError::PersonLimited {
                    what: if what == "cases" {
                        "new conversations"
                    } else {
                        "messages"
                    },
                    retry_after_secs,
                })
            }
        }
    }

    /// N-5 (decision 0063): one unit of the tenant's budget of widget API requests, or
    /// `RateLimited`: one tenant's widgets cannot take the whole of the capacity every
    /// tenant shares (the API's route throttles and the functions' reserved slots).
    pub async fn spend_request(&self, who: &Principal) -> Result<(), ChatError> {
        let Some((limiter, per_minute)) = &self.request_budget else {
            return Ok(());
        };
        let now = self.parts.clock.now();
        match limiter
            .take(&who.tenant, "requests", *per_minute, now)
            .await?
        {
            Admission::Admitted => Ok(()),
            Admission::Limited { retry_after_secs } => {
                tracing::info!(tenant = %who.tenant, retry_after_secs, "N-5: tenant request budget spent");
                Err(ChatError::RateLimited { retry_after_secs })
            }
        }
    }

    /// Decision 0021: one unit of the tenant's turn budget, or `RateLimited`.
    pub(crate) async fn spend_turn(&self, who: &Principal) -> Result<(), ChatError> {
        let Some((limiter, per_minute)) = &self.turn_budget else {
            return Ok(());
        };
        let now = self.parts.clock.now();
        match limiter.take(&who.tenant, "turns", *per_minute, now).await? {
            Admission::Admitted => Ok(()),
            Admission::Limited { retry_after_secs } => {
                tracing::info!(tenant = %who.tenant, retry_after_secs, "tenant turn budget spent");
                Err(ChatError::RateLimited { retry_after_secs })
            }
        }
    }
}
