//! Execution after a confirmation: what is written before the call, what is sent
//! and how each answer settles the proposal.

use crate::harness::{H, SERVICE_TOKEN};
use countersign_domain::conversation::MessageKind;
use countersign_domain::proposal::ProposalState;
use countersign_domain::texts::{self, Language};
use countersign_testkit::{Fault, Reply, action_answer};
use serde_json::json;
use std::sync::{Arc, Mutex};

#[tokio::test]
async fn a35_the_proposal_is_stored_executing_with_its_confirmation_before_the_call() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    let seen = Arc::new(Mutex::new(None));
    let (store, tenant, case, id, seen2) = (
        h.store.clone(),
        h.who.tenant.clone(),
        h.case.clone(),
        action.clone(),
        seen.clone(),
    );
    h.provider.on_call(move |call| {
        if call.tool == "execute_action" {
            *seen2.lock().unwrap() = store.proposal(&tenant, &case, &id);
        }
    });
    let out = h.reply("confirm", &presented).await;
    let at_call = seen
        .lock()
        .unwrap()
        .clone()
        .expect("execute_action was called");
    assert_eq!(at_call.state, ProposalState::Executing);
    assert_eq!(at_call.confirmation_message_id.as_ref(), Some(&out[0].id));
}

#[tokio::test]
async fn a30_execute_sends_only_the_action_id_with_a_proof_and_the_integrations_token() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    h.reply("confirm", &presented).await;
    let calls = h.provider.calls_of("execute_action");
    assert_eq!(calls.len(), 1);
    let call = &calls[0];
    assert_eq!(
        serde_json::Value::Object(call.arguments.clone()),
        json!({"actionId": action.as_str()})
    );
    let proof = call.proof.as_deref().expect("a proof");
    assert_eq!(proof.split('.').count(), 3);
    assert_eq!(call.service_token, SERVICE_TOKEN);
    assert_eq!(call.user, "u_alice");
    // No other call ever carries a proof.
    assert!(
        h.provider
            .calls()
            .iter()
            .filter(|c| c.tool != "execute_action")
            .all(|c| c.proof.is_none())
    );
}

#[tokio::test]
async fn a41_each_final_answer_settles_the_proposal_with_its_result_message() {
    for (status, expected) in [
        ("completed", ProposalState::Completed),
        ("failed", ProposalState::Failed),
        ("conflict", ProposalState::Conflict),
        ("expired", ProposalState::Expired),
    ] {
        let h = H::new().await;
        let (action, presented) = h.propose().await;
        h.provider.answer(
            "execute_action",
            Reply::Result(action_answer(action.as_str(), status, Some("Done here."))),
        );
        let out = h.reply("confirm", &presented).await;
        assert_eq!(h.state(&action), expected, "{status}");
        let last = out.last().unwrap();
        assert_eq!(last.kind, MessageKind::Result);
        assert!(
            last.content.contains("Done here."),
            "{status}: {}",
            last.content
        );
    }
}

#[tokio::test]
async fn a41_an_is_error_answer_is_a_failure_and_its_text_is_not_shown() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    h.provider.answer(
        "execute_action",
        Reply::Result(
            json!({"isError": true, "content": [{"type": "text", "text": "secret stack trace"}]}),
        ),
    );
    let out = h.reply("confirm", &presented).await;
    assert_eq!(h.state(&action), ProposalState::Failed);
    assert!(!out.last().unwrap().content.contains("stack trace"));
}

#[tokio::test]
async fn a43_a_timeout_leaves_the_outcome_unknown_and_execute_is_never_resent() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    h.provider.answer("execute_action", Reply::Timeout);
    let out = h.reply("confirm", &presented).await;
    assert_eq!(h.state(&action), ProposalState::Unknown);
    assert_eq!(
        out.last().unwrap().content,
        texts::uncertainty_notice(Language::En)
    );
    h.say("and now?").await;
    h.reply("confirm", &presented).await;
    assert_eq!(h.provider.calls_of("execute_action").len(), 1);
}

#[tokio::test]
async fn a43_an_answer_outside_the_contract_or_not_final_is_unknown() {
    for answer in [
        json!({"structuredContent": {"contractVersion": 1, "actionId": "act_1", "status": "completed", "extra": 1}}),
        json!({"structuredContent": {"contractVersion": 1, "actionId": "other", "status": "completed"}}),
        action_answer("act_1", "executing", None),
    ] {
        let h = H::new().await;
        let (action, presented) = h.propose().await;
        h.provider
            .answer("execute_action", Reply::Result(answer.clone()));
        h.reply("confirm", &presented).await;
        assert_eq!(h.state(&action), ProposalState::Unknown, "{answer}");
    }
}

#[tokio::test]
async fn a_signer_outage_fails_the_action_before_anything_is_sent() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    h.signer.faults.once("sign", Fault::Unavailable);
    h.reply("confirm", &presented).await;
    assert_eq!(h.state(&action), ProposalState::Failed);
    assert!(h.provider.calls_of("execute_action").is_empty());
}

#[tokio::test]
async fn an_unreadable_service_token_fails_the_action_before_anything_is_sent() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    // A fresh use-case instance: no token cached from the preparation.
    h.secrets.faults.set_down(true);
    let chat = countersign_chat::Chat::new(countersign_chat::ChatParts {
        integration: Arc::new(countersign_tools::integration::IntegrationService::new(
            h.store.clone(),
            h.secrets.clone(),
            h.provider.clone(),
        )),
        ..h.chat.parts.clone()
    });
    chat.post(&h.who, &h.case, "confirm", Some(presented))
        .await
        .unwrap();
    assert_eq!(h.state(&action), ProposalState::Failed);
    assert!(h.provider.calls_of("execute_action").is_empty());
}

/// Issue 13 / A-43: a handshake that fails happens before anything is sent, so the action
/// is certainly not executed: the proposal is `failed` (not `unknown`), and no proof was
/// ever signed — the proof is made only once the request is about to go.
#[tokio::test]
async fn a43_a_failed_handshake_is_a_plain_failure_and_nothing_is_signed() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    h.provider.faults.once("open", Fault::Unavailable);
    h.reply("confirm", &presented).await;
    assert_eq!(h.state(&action), ProposalState::Failed);
    assert_eq!(
        h.signer.signed(),
        0,
        "no proof before the handshake succeeded"
    );
    assert!(h.provider.calls_of("execute_action").is_empty());
}

/// A log line (tests of what the operator is told).
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Issue 13 / A-43: when an execute answer breaks the contract, the outcome is `unknown`
/// and the log says which rules it broke — never the values the provider sent.
#[tokio::test]
async fn a43_an_invalid_execute_answer_is_logged_by_rule_without_its_values() {
    // A process-wide subscriber: a thread-local one misses events whose call sites another
    // test thread cached as uninteresting. Lines are picked out by this test's action id.
    static LOG: std::sync::OnceLock<Log> = std::sync::OnceLock::new();
    let log = LOG.get_or_init(|| {
        let log = Log::default();
        let writer = log.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let _ = tracing::subscriber::set_global_default(subscriber);
        log
    });
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    let payload = json!({"contractVersion": 1, "actionId": action.as_str(),
                         "status": "done-for-alice@example.com", "owner": "alice@example.com"});
    h.provider.answer(
        "execute_action",
        Reply::Result(
            json!({"content": [{"type": "text", "text": payload.to_string()}],
                             "structuredContent": payload}),
        ),
    );
    h.reply("confirm", &presented).await;
    assert_eq!(h.state(&action), ProposalState::Unknown);
    let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    let ours: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(action.as_str()))
        .collect();
    assert!(
        ours.iter()
            .any(|l| l.contains("breaks the contract") && l.contains("status")),
        "{ours:?}"
    );
    assert!(!text.contains("alice@example.com"), "{text}");
}

/// The claims of the proof the provider received with `execute_action`.
fn sent_claims(h: &H) -> serde_json::Value {
    use base64::Engine as _;
    let call = h
        .provider
        .calls_of("execute_action")
        .pop()
        .expect("executed");
    let proof = call.proof.expect("a proof");
    let payload = proof.split('.').nth(1).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// A-32 (issue 27): the proof's `aud` is the tenant's explicit audience when one is saved,
/// else the server URL — read from the proof the provider actually received.
#[tokio::test]
async fn a32_the_proof_audience_is_the_saved_one_else_the_server_url() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    h.provider.answer(
        "execute_action",
        Reply::Result(action_answer(action.as_str(), "completed", None)),
    );
    h.reply("confirm", &presented).await;
    assert_eq!(sent_claims(&h)["aud"], "https://provider.example.com/mcp");

    let h = H::new().await;
    h.set_audience("https://provider.example.com/actions").await;
    let (action, presented) = h.propose().await;
    h.provider.answer(
        "execute_action",
        Reply::Result(action_answer(action.as_str(), "completed", None)),
    );
    h.reply("confirm", &presented).await;
    assert_eq!(
        sent_claims(&h)["aud"],
        "https://provider.example.com/actions"
    );
}

/// B-2: every call made for the person — the turn's `tools/list`, `prepare_action`,
/// `execute_action` — tells the provider the conversation's language (`X-MCP-Language`),
/// so a provider (the bridge) can answer the summary in it.
#[tokio::test]
async fn b2_the_provider_is_told_the_conversations_language() {
    for (language, tag) in [(Language::En, "en"), (Language::Pt, "pt-BR")] {
        let h = H::new().await.in_language(language).await;
        let (_, presented) = h.propose().await;
        h.reply("confirm", &presented).await;
        let calls = h.provider.calls();
        assert!(
            calls.iter().any(|c| c.tool == "prepare_action")
                && calls.iter().any(|c| c.tool == "execute_action"),
            "{calls:?}"
        );
        for c in &calls {
            assert_eq!(c.language.as_deref(), Some(tag), "{}", c.tool);
        }
    }
}
