//! The provider certification (H-1 … H-4): what a run checked, against which
//! configuration, and whether that configuration may enable actions.
//!
//! A run is made of [`Check`]s, each passed, failed or skipped with a reason a provider
//! engineer can act on. It is stored with the [`CertifiedSubject`] it checked: the
//! action-relevant fields of the configuration (URL, service token version, audience,
//! operations). H-4: enabling actions needs the latest run to have passed for a subject
//! equal to the configuration being saved; changing any of those fields voids it.

use crate::config::StoredMcpConfig;
use crate::language::{Language, Said};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// The action-relevant configuration a run checked (H-4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CertifiedSubject {
    /// The configuration version the run read (informative: not compared).
    pub config_version: u64,
    /// `serverUrl`.
    pub server_url: String,
    /// The proofs' audience (explicit, or the `serverUrl`).
    pub audience: String,
    /// The secret version of the service token.
    pub token_version: String,
    /// The operations, sorted.
    pub operations: Vec<String>,
}

impl CertifiedSubject {
    /// The subject of a stored configuration.
    pub fn of(stored: &StoredMcpConfig) -> Self {
        let c = &stored.config;
        let mut operations: Vec<String> = c
            .action_policy
            .operations
            .iter()
            .map(ToString::to_string)
            .collect();
        operations.sort();
        Self {
            config_version: stored.version,
            server_url: c.server_url.to_string(),
            audience: c.audience().to_owned(),
            token_version: stored.secret_version.clone(),
            operations,
        }
    }

    /// H-4: whether a run of `self` certifies `other` (every field but the version).
    pub fn covers(&self, other: &Self) -> bool {
        self.server_url == other.server_url
            && self.audience == other.audience
            && self.token_version == other.token_version
            && self.operations == other.operations
    }
}

/// How a check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    /// The provider did what the contract asks.
    Passed,
    /// It did not; the reason says what to change.
    Failed,
    /// Not run, or not judged: an earlier check it depends on failed, the provider gave no
    /// answer, or the administrator did not consent. Never a pass.
    Skipped,
}

/// One check of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    /// Stable id, e.g. `consultation.get_car.output` or `proof.alg_none`.
    pub id: String,
    /// The requirement it holds (`H-2`, `H-3`).
    pub requirement: String,
    /// The outcome.
    pub status: CheckStatus,
    /// What was seen, and for a failure what to change (English: the API's).
    pub reason: String,
    /// [`Check::reason`] in Portuguese (issue 50: the Portuguese panel's); absent from
    /// runs stored before it existed, which the panel shows in English.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason_pt: Option<String>,
}

impl Check {
    /// The reason in `lang` (English when a stored run has no Portuguese).
    pub fn reason_in(&self, lang: Language) -> &str {
        match (lang, &self.reason_pt) {
            (Language::Pt, Some(pt)) => pt,
            _ => &self.reason,
        }
    }
}

/// A stored run (H-1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Certification {
    /// When the run ended.
    pub at: Timestamp,
    /// The configuration it checked.
    pub subject: CertifiedSubject,
    /// The test user the calls were made for.
    pub test_user: String,
    /// Every check, in the order run.
    pub checks: Vec<Check>,
}

impl Certification {
    /// Passed when every check passed (none failed or skipped) and there was one.
    pub fn passed(&self) -> bool {
        !self.checks.is_empty() && self.checks.iter().all(|c| c.status == CheckStatus::Passed)
    }

    /// V-3: whether the provider accepted a bad proof in this run (executed it, or did not
    /// refuse it, or the action was no longer pending after it). Such a run suspends
    /// actions. A bad-proof check that could not be made is skipped, not failed.
    pub fn accepted_bad_proof(&self) -> bool {
        self.checks
            .iter()
            .any(|c| c.id.starts_with("proof.") && c.status == CheckStatus::Failed)
    }

    /// H-4: whether this run allows enabling actions for `subject`.
    pub fn certifies(&self, subject: &CertifiedSubject) -> bool {
        self.passed() && self.subject.covers(subject)
    }
}

/// A run's checks, in order.
#[derive(Debug, Default)]
pub struct Checks(Vec<Check>);

impl Checks {
    fn push(&mut self, id: impl Into<String>, req: &str, status: CheckStatus, reason: Said) {
        self.0.push(Check {
            id: id.into(),
            requirement: req.to_owned(),
            status,
            reason: reason.en,
            reason_pt: Some(reason.pt),
        });
    }

    /// Records a passed check.
    pub fn pass(&mut self, id: impl Into<String>, req: &str, reason: Said) {
        self.push(id, req, CheckStatus::Passed, reason);
    }

    /// Records a failed check.
    pub fn fail(&mut self, id: impl Into<String>, req: &str, reason: Said) {
        self.push(id, req, CheckStatus::Failed, reason);
    }

    /// Records a check not run.
    pub fn skip(&mut self, id: impl Into<String>, req: &str, reason: Said) {
        self.push(id, req, CheckStatus::Skipped, reason);
    }

    /// Records `Ok(reason)` as passed and `Err(reason)` as failed; returns whether it passed.
    pub fn record(&mut self, id: impl Into<String>, req: &str, r: Result<Said, Said>) -> bool {
        match r {
            Ok(reason) => {
                self.pass(id, req, reason);
                true
            }
            Err(reason) => {
                self.fail(id, req, reason);
                false
            }
        }
    }

    /// The checks.
    pub fn into_vec(self) -> Vec<Check> {
        self.0
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn subject() -> CertifiedSubject {
        CertifiedSubject {
            config_version: 3,
            server_url: "https://mcp.example.com/mcp".into(),
            audience: "https://mcp.example.com/mcp".into(),
            token_version: "v1".into(),
            operations: vec!["reassign_session_car".into()],
        }
    }

    fn run(statuses: &[CheckStatus]) -> Certification {
        Certification {
            at: Timestamp::parse_utc("2026-12-01T00:00:00Z").unwrap(),
            subject: subject(),
            test_user: "countersign-test:u_test".into(),
            checks: statuses
                .iter()
                .map(|s| Check {
                    id: "x".into(),
                    requirement: "H-3".into(),
                    status: *s,
                    reason: String::new(),
                    reason_pt: None,
                })
                .collect(),
        }
    }

    /// H-4: only a run where every check passed certifies; a skipped check is not a pass.
    #[test]
    fn h4_a_run_passes_only_when_every_check_passed() {
        assert!(run(&[CheckStatus::Passed, CheckStatus::Passed]).passed());
        assert!(!run(&[CheckStatus::Passed, CheckStatus::Failed]).passed());
        assert!(!run(&[CheckStatus::Passed, CheckStatus::Skipped]).passed());
        assert!(!run(&[]).passed());
    }

    /// V-3: only a failed bad-proof check suspends; a skipped one (no answer) or a failed
    /// consultation does not.
    #[test]
    fn v3_only_an_accepted_bad_proof_suspends() {
        let mut r = run(&[CheckStatus::Failed, CheckStatus::Skipped]);
        r.checks[0].id = "consultation.get_cars.call".into();
        r.checks[1].id = "proof.wrong_iss".into();
        assert!(!r.accepted_bad_proof());
        r.checks[1].status = CheckStatus::Failed;
        assert!(r.accepted_bad_proof());
    }

    /// H-4: changing the URL, token version, audience or operations voids a run; a new
    /// configuration version with the same action fields does not.
    #[test]
    fn h4_changing_an_action_relevant_field_voids_the_run() {
        let cert = run(&[CheckStatus::Passed]);
        let mut same = subject();
        same.config_version = 9;
        assert!(cert.certifies(&same));
        let changes: [fn(&mut CertifiedSubject); 4] = [
            |s| s.server_url = "https://other.example.com/mcp".into(),
            |s| s.audience = "https://mcp.example.com/other".into(),
            |s| s.token_version = "v2".into(),
            |s| s.operations.push("cancel_session".into()),
        ];
        for change in changes {
            let mut other = subject();
            change(&mut other);
            assert!(!cert.certifies(&other), "{other:?}");
        }
    }
}
