//! F-2, F-3: the passkey ceremonies' server side — the single-use nonces, the challenge
//! of one exact action, the check of the person's assertion (by the domain's pure
//! verifier) and the enrolment of a new passkey. The confirm use case asks this before it
//! signs a step-up proof; the confirmation page runs the ceremonies in the browser.
//!
//! A nonce is issued for one person and one purpose (an action's confirmation, or an
//! enrolment), lives 60 seconds, and is spent on its first presentation whatever follows:
//! it is recorded as issued (until when) and spent through the store's single-use states
//! (decision 0077).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_domain::audit_chain::AuditEntry;
use countersign_domain::conversation::Principal;
use countersign_domain::enrolment::{ExpectedRegistration, read_registration};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ports::{Clock, ConfirmationLinks, Ids, Passkey, Passkeys, StoreError};
use countersign_domain::proposal::Proposal;
use countersign_domain::stepup::{
    Assertion, Binding, Evidence, Expected, StepUpError, verify_assertion,
};
use rand::RngCore as _;
use std::sync::Arc;

/// F-3: how long a ceremony's nonce lives.
pub const NONCE_SECONDS: i64 = 60;

/// Most passkeys one person may enrol for one tenant (each is listed and checked).
pub const MAX_PASSKEYS: usize = 10;

/// The ceremonies' settings and stores.
#[derive(Clone)]
pub struct StepUp {
    /// The people's passkeys.
    pub passkeys: Arc<dyn Passkeys>,
    /// Where nonces are recorded and spent.
    pub nonces: Arc<dyn ConfirmationLinks>,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// The audit records' ids.
    pub ids: Arc<dyn Ids>,
    /// The RP ID every credential is made for: the confirmation page's host (or a
    /// registrable suffix of it).
    pub rp_id: String,
    /// The origins a ceremony may run on: the confirmation page's.
    pub origins: Vec<String>,
}

countersign_domain::debug_showing!(StepUp { rp_id, origins });

/// What the browser needs for a ceremony (`navigator.credentials.get` or `create`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ceremony {
    /// The nonce, sent back with the answer.
    pub nonce: String,
    /// The challenge (base64url).
    pub challenge: String,
    /// The RP ID.
    pub rp_id: String,
    /// The person's credentials' ids (allowed for `get`, excluded for `create`).
    pub credentials: Vec<String>,
}

/// The person's answer to a `get` ceremony, as the page posts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepUpAnswer {
    /// The nonce the ceremony was begun with.
    pub nonce: String,
    /// The credential's id (base64url).
    pub credential_id: String,
    /// The assertion.
    pub assertion: Assertion,
}

/// Why a step-up (or an enrolment) is refused. Nothing was signed, nothing was executed,
/// and the proposal still waits.
#[derive(Debug, thiserror::Error)]
pub enum StepUpRefused {
    /// The nonce is unknown, expired, another purpose's, or already spent.
    #[error("the passkey check expired or was already used; try again")]
    Nonce,
    /// The credential is not one of this person's passkeys for this tenant.
    #[error("that passkey is not enrolled for you here")]
    NotEnrolled,
    /// The assertion (or the registration) fails a check.
    #[error("the passkey check failed: {0}")]
    Check(StepUpError),
    /// Another use of the same passkey moved its counter first (or it was revoked).
    #[error("the passkey was used or revoked meanwhile; try again")]
    Raced,
    /// The person has as many passkeys as allowed.
    #[error("you have {MAX_PASSKEYS} passkeys here already; remove one first")]
    TooMany,
    /// A store failed.
    #[error("a platform service is unavailable")]
    Unavailable(#[from] StoreError),
}

fn random_nonce() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Where a nonce of `who` for `purpose` (`confirm:<actionId>` or `enrol`) is recorded.
fn nonce_key(who: &Principal, purpose: &str, nonce: &str) -> Sha256Hex {
    Sha256Hex::digest(
        format!(
            "countersign-stepup-nonce\0{}\0{}\0{purpose}\0{nonce}",
            who.tenant, who.user
        )
        .as_bytes(),
    )
}

/// F-2: the purpose of a nonce that proves, with an enrolled passkey, the right to enrol
/// another.
const ADD: &str = "add";

/// The challenge of an `add` ceremony: tagged, so no action's challenge (nor any other
/// purpose's) can stand for it, and bound to the person and the nonce.
fn add_challenge(who: &Principal, nonce: &str) -> [u8; 32] {
    use sha2::Digest as _;
    let mut h = sha2::Sha256::new();
    for part in [
        "countersign-add-passkey",
        who.tenant.as_str(),
        who.user.as_str(),
        nonce,
    ] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part.as_bytes());
    }
    h.finalize().into()
}

fn confirm_purpose(p: &Proposal) -> String {
    format!("confirm:{}", p.action_id)
}

/// The binding of `p` with `nonce`: the fields its challenge hashes (F-3).
pub fn binding<'a>(p: &'a Proposal, nonce: &'a str) -> Binding<'a> {
    Binding {
        tenant: p.tenant.as_str(),
        conversation: p.case.as_str(),
        action: p.action_id.as_str(),
        operation: p.operation.as_str(),
        arguments_hash: p.arguments_hash.as_str(),
        summary_hash: p.summary_hash.as_str(),
        presented_message: p.presented.message_id.as_str(),
        nonce,
    }
}

impl StepUp {
    /// Records a new nonce for `who` and `purpose`, living [`NONCE_SECONDS`].
    async fn issue(&self, who: &Principal, purpose: &str) -> Result<String, StoreError> {
        let nonce = random_nonce();
        let until = self.clock.now().plus_seconds(NONCE_SECONDS);
        self.nonces
            .open_page_session(&nonce_key(who, purpose, &nonce), until)
            .await?;
        Ok(nonce)
    }

    /// Spends `nonce` of `who` for `purpose`: it must have been issued so, be alive, and
    /// never presented before (it is spent now, whatever follows).
    async fn spend(
        &self,
        who: &Principal,
        purpose: &str,
        nonce: &str,
    ) -> Result<(), StepUpRefused> {
        if nonce.len() != 43 {
            return Err(StepUpRefused::Nonce);
        }
        let key = nonce_key(who, purpose, nonce);
        let Some(until) = self.nonces.page_session(&key).await? else {
            return Err(StepUpRefused::Nonce);
        };
        if self.clock.now() >= until {
            return Err(StepUpRefused::Nonce);
        }
        if !self
            .nonces
            .spend_state(&format!("stepup-{key}"), until)
            .await?
        {
            return Err(StepUpRefused::Nonce);
        }
        Ok(())
    }

    /// The person's passkeys' ids.
    async fn credential_ids(&self, who: &Principal) -> Result<Vec<String>, StoreError> {
        Ok(self
            .passkeys
            .passkeys(&who.tenant, &who.user)
            .await?
            .into_iter()
            .map(|p| p.id)
            .collect())
    }

    /// Begins confirming `p` with a passkey: a fresh nonce and the challenge of `p`.
    pub async fn begin(&self, who: &Principal, p: &Proposal) -> Result<Ceremony, StoreError> {
        let nonce = self.issue(who, &confirm_purpose(p)).await?;
        Ok(Ceremony {
            challenge: URL_SAFE_NO_PAD.encode(binding(p, &nonce).challenge()),
            nonce,
            rp_id: self.rp_id.clone(),
            credentials: self.credential_ids(who).await?,
        })
    }

    /// F-3: checks `answer` for `p`, by `who`: the nonce (spent now), the credential (one
    /// of `who`'s for this tenant), every check of the assertion over `p`'s challenge, and
    /// the counter moved once. The evidence the step-up proof carries.
    pub async fn verify(
        &self,
        who: &Principal,
        p: &Proposal,
        answer: &StepUpAnswer,
    ) -> Result<Evidence, StepUpRefused> {
        self.spend(who, &confirm_purpose(p), &answer.nonce).await?;
        let challenge = binding(p, &answer.nonce).challenge();
        let passkey = self.check_assertion(who, challenge, answer).await?;
        let id = URL_SAFE_NO_PAD
            .decode(&passkey.id)
            .map_err(|_| StepUpRefused::NotEnrolled)?;
        Ok(Evidence::of(
            &id,
            &passkey.key,
            &answer.assertion,
            &answer.nonce,
        ))
    }

    /// F-2: begins proving, with a passkey the person already has, that they may enrol
    /// another: a fresh nonce, the challenge of that purpose (never an action's), and the
    /// person's credentials to choose from.
    pub async fn begin_add(&self, who: &Principal) -> Result<Ceremony, StoreError> {
        let nonce = self.issue(who, ADD).await?;
        Ok(Ceremony {
            challenge: URL_SAFE_NO_PAD.encode(add_challenge(who, &nonce)),
            nonce,
            rp_id: self.rp_id.clone(),
            credentials: self.credential_ids(who).await?,
        })
    }

    /// F-2: checks `answer` to [`Self::begin_add`]'s ceremony, as [`Self::verify`] checks a
    /// confirmation (nonce spent, the person's own credential, every assertion check, the
    /// counter moved once); the caller then lets the page enrol one passkey.
    pub async fn verify_add(
        &self,
        who: &Principal,
        answer: &StepUpAnswer,
    ) -> Result<(), StepUpRefused> {
        self.spend(who, ADD, &answer.nonce).await?;
        self.check_assertion(who, add_challenge(who, &answer.nonce), answer)
            .await
            .map(|_| ())
    }

    /// The assertion `answer` over `challenge` by one of `who`'s passkeys, checked, and
    /// its counter moved once: the passkey it used.
    async fn check_assertion(
        &self,
        who: &Principal,
        challenge: [u8; 32],
        answer: &StepUpAnswer,
    ) -> Result<Passkey, StepUpRefused> {
        let passkey = self
            .passkeys
            .passkeys(&who.tenant, &who.user)
            .await?
            .into_iter()
            .find(|k| k.id == answer.credential_id)
            .ok_or(StepUpRefused::NotEnrolled)?;
        let expected = Expected {
            challenge,
            origins: &self.origins,
            rp_id: &self.rp_id,
            sign_count: Some(passkey.sign_count),
        };
        let verified = verify_assertion(&passkey.key, &answer.assertion, &expected)
            .map_err(StepUpRefused::Check)?;
        let now = self.clock.now();
        let moved = self
            .passkeys
            .record_passkey_use(
                &who.tenant,
                &who.user,
                &passkey.id,
                passkey.sign_count,
                verified.sign_count,
                now,
            )
            .await?;
        if !moved {
            return Err(StepUpRefused::Raced);
        }
        Ok(passkey)
    }

    /// F-2: begins enrolling a passkey for `who` (the caller has checked the fresh
    /// sign-in): a nonce whose bytes are the challenge, and the ids to exclude.
    pub async fn begin_enrol(&self, who: &Principal) -> Result<Ceremony, StoreError> {
        let nonce = self.issue(who, "enrol").await?;
        Ok(Ceremony {
            challenge: nonce.clone(),
            nonce,
            rp_id: self.rp_id.clone(),
            credentials: self.credential_ids(who).await?,
        })
    }

    /// F-2: checks what `create` returned for `who`'s enrolment nonce and keeps the new
    /// passkey.
    pub async fn finish_enrol(
        &self,
        who: &Principal,
        nonce: &str,
        client_data_json: &[u8],
        authenticator_data: &[u8],
        transports: Vec<String>,
    ) -> Result<Passkey, StepUpRefused> {
        self.spend(who, "enrol", nonce).await?;
        let challenge = URL_SAFE_NO_PAD
            .decode(nonce)
            .map_err(|_| StepUpRefused::Nonce)?;
        let expected = ExpectedRegistration {
            challenge: &challenge,
            origins: &self.origins,
            rp_id: &self.rp_id,
        };
        let read = read_registration(client_data_json, authenticator_data, &expected)
            .map_err(StepUpRefused::Check)?;
        if self.passkeys.passkeys(&who.tenant, &who.user).await?.len() >= MAX_PASSKEYS {
            return Err(StepUpRefused::TooMany);
        }
        let passkey = Passkey {
            id: read.id_text(),
            key: read.key,
            sign_count: read.sign_count,
            transports: transports
                .into_iter()
                .filter(|t| t.len() <= 16 && t.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'))
                .take(8)
                .collect(),
            created_at: self.clock.now(),
            last_used_at: None,
        };
        let record = self.record(who, "passkey.enrolled", &passkey.id);
        if !self
            .passkeys
            .add_passkey(&who.tenant, &who.user, &passkey, &record)
            .await?
        {
            // The same credential enrolled twice (a resubmitted form): refused, the first
            // stays as it was.
            return Err(StepUpRefused::Check(StepUpError::Malformed(
                "this passkey is already enrolled",
            )));
        }
        Ok(passkey)
    }
}

impl StepUp {
    /// F-2: the audit record of the person's own change of their passkeys (their id is a
    /// personal field, sealed under their key).
    fn record(&self, who: &Principal, action: &str, credential: &str) -> AuditEntry {
        AuditEntry {
            id: self.ids.audit_id(),
            at: self.clock.now(),
            actor: "person".into(),
            action: action.into(),
            changes: serde_json::json!({"person": who.user.as_str(), "credentialId": credential}),
        }
    }

    /// F-2: the person removes one of their passkeys; `false` when it was not theirs.
    pub async fn revoke(&self, who: &Principal, id: &str) -> Result<bool, StoreError> {
        let record = self.record(who, "passkey.revoked", id);
        self.passkeys
            .revoke_passkey(&who.tenant, &who.user, id, &record)
            .await
    }
}
