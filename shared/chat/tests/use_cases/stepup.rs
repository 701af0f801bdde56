//! F-2, F-3, F-4: confirming a passkey operation with the person's passkey, on in-memory
//! ports: the step-up proof is signed only after every check passed, and each wrong
//! step-up is refused with nothing stored, signed or sent and the proposal still waiting.

use crate::harness::H;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_chat::ChatError;
use countersign_chat::stepup::{StepUp, StepUpAnswer, StepUpRefused};
use countersign_domain::conversation::Principal;
use countersign_domain::ids::{ActionId, MessageId, UserId};
use countersign_domain::proposal::ProposalState;
use countersign_domain::stepup::{STEPUP_PROOF_TYPE, StepUpError, split_claims};
use countersign_testkit::authenticator::{Authenticator, UP, UV};
use countersign_testkit::{Reply, action_answer};
use std::sync::Arc;

const RP: &str = "confirm.countersign.example";
const ORIGIN: &str = "https://confirm.countersign.example";

/// A harness whose chat runs the ceremonies, with `operation` a passkey operation and a
/// proposal of it waiting.
async fn waiting() -> (H, ActionId, MessageId) {
    let mut h = H::new().await;
    h.chat.step_up = Some(step_up(&h));
    h.passkey_for("reassign_session_car").await;
    let (action, presented) = h.propose().await;
    assert!(h.proposal(&action).needs_passkey);
    h.provider.answer(
        "execute_action",
        Reply::Result(action_answer(action.as_str(), "completed", Some("Moved."))),
    );
    (h, action, presented)
}

fn step_up(h: &H) -> StepUp {
    StepUp {
        passkeys: h.store.clone(),
        nonces: h.store.clone(),
        clock: h.clock.clone(),
        ids: h.ids.clone(),
        rp_id: RP.into(),
        origins: vec![ORIGIN.into()],
    }
}

/// Enrols `device` for `who` through the enrolment ceremony.
async fn enrol(h: &H, who: &Principal, device: &Authenticator) {
    let s = h.chat.step_up.as_ref().unwrap();
    let ceremony = s.begin_enrol(who).await.unwrap();
    let challenge = URL_SAFE_NO_PAD.decode(&ceremony.challenge).unwrap();
    let (client, data) = device.register(&challenge);
    s.finish_enrol(
        who,
        &ceremony.nonce,
        &client,
        &data,
        vec!["internal".into()],
    )
    .await
    .unwrap();
}

/// The answer `device` gives to a fresh ceremony for `action`.
async fn answer(h: &H, action: &ActionId, device: &mut Authenticator) -> StepUpAnswer {
    let s = h.chat.step_up.as_ref().unwrap();
    let ceremony = s.begin(&h.who, &h.proposal(action)).await.unwrap();
    let challenge = URL_SAFE_NO_PAD.decode(&ceremony.challenge).unwrap();
    StepUpAnswer {
        nonce: ceremony.nonce,
        credential_id: device.id_text(),
        assertion: device.assert(&challenge),
    }
}

async fn countersign(h: &H, presented: &MessageId, answer: &StepUpAnswer) -> Result<(), ChatError> {
    h.chat
        .post_countersigned(&h.who, &h.case, "confirm", Some(presented.clone()), answer)
        .await
        .map(|_| ())
}

/// F-3, F-4: the person's passkey over this very action confirms it once: one
/// `execute_action`, with a `support-action-stepup+jwt` proof whose evidence a tenant's
/// server verifies on its own from the proof's own claims.
#[tokio::test]
async fn f3_f4_a_passkey_countersigns_the_action_once_with_a_step_up_proof() {
    for mut device in [
        Authenticator::es256(1, RP, ORIGIN),
        Authenticator::ed25519(2, RP, ORIGIN),
    ] {
        let (h, action, presented) = waiting().await;
        enrol(&h, &h.who, &device).await;
        let answer = answer(&h, &action, &mut device).await;
        countersign(&h, &presented, &answer).await.unwrap();
        assert_eq!(h.state(&action), ProposalState::Completed);
        let executes: Vec<_> = h
            .provider
            .calls()
            .into_iter()
            .filter(|c| c.tool == "execute_action")
            .collect();
        assert_eq!(executes.len(), 1, "executed once");
        let proof = executes[0].proof.clone().unwrap();
        let parts: Vec<&str> = proof.split('.').collect();
        let header: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header["typ"], STEPUP_PROOF_TYPE);
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        let (base, evidence, amr) = split_claims(claims).unwrap();
        assert_eq!(amr, ["pop", "user", "mfa"]);
        assert_eq!(evidence.credential_id, device.id_text());
        let pinned = [device.public_key()];
        assert!(
            evidence
                .verify(&base, RP, &[ORIGIN.to_owned()], Some(&pinned))
                .is_ok()
        );
        assert!(proof.len() <= 6 * 1024, "{} bytes", proof.len());
        // The counter moved (or stayed 0 for a synced passkey) and the use is recorded.
        let kept = &h.store.passkeys_of(&h.who)[0];
        assert_eq!(kept.sign_count, device.count);
        assert!(kept.last_used_at.is_some());
    }
}

/// What a refused step-up leaves: nothing stored, signed or sent; the proposal waits.
async fn refused_leaves_it_waiting(
    h: &H,
    action: &ActionId,
    presented: &MessageId,
    answer: &StepUpAnswer,
    why: &str,
) -> StepUpRefused {
    let (messages, calls, signed) = (
        h.messages().len(),
        h.provider.calls().len(),
        h.signer.signed(),
    );
    let refused = countersign(h, presented, answer).await;
    let Err(ChatError::StepUpRefused(reason)) = refused else {
        panic!("{why}: {refused:?}");
    };
    let api = countersign_http::ApiError::from(ChatError::StepUpRefused(StepUpRefused::Nonce));
    assert_eq!(api.status(), axum::http::StatusCode::CONFLICT);
    assert_eq!(h.messages().len(), messages, "{why}: nothing stored");
    assert_eq!(h.provider.calls().len(), calls, "{why}: nothing sent");
    assert_eq!(h.signer.signed(), signed, "{why}: nothing signed");
    assert_eq!(h.state(action), ProposalState::PendingConfirmation, "{why}");
    reason
}

/// F-3: each wrong step-up is refused by the check it names, and the action still waits
/// for a right one (which then confirms it).
#[tokio::test]
async fn f3_each_wrong_step_up_is_refused_and_the_action_still_waits() {
    let (h, action, presented) = waiting().await;
    let device = Authenticator::es256(1, RP, ORIGIN);
    enrol(&h, &h.who, &device).await;
    let bob = Principal {
        tenant: h.who.tenant.clone(),
        user: UserId::parse("u_bob").unwrap(),
    };
    let bobs = Authenticator::es256(3, RP, ORIGIN);
    enrol(&h, &bob, &bobs).await;
    let check =
        |e: StepUpError| move |r: &StepUpRefused| matches!(r, StepUpRefused::Check(x) if *x == e);
    type Case = (
        &'static str,
        Box<dyn Fn(&mut Authenticator)>,
        Box<dyn Fn(&StepUpRefused) -> bool>,
    );
    let cases: Vec<Case> = vec![
        (
            "UV off",
            Box::new(|d| d.flags = UP),
            Box::new(check(StepUpError::UserVerification)),
        ),
        (
            "UP off",
            Box::new(|d| d.flags = UV),
            Box::new(check(StepUpError::UserPresence)),
        ),
        (
            "another origin",
            Box::new(|d| d.origin = "https://shop.example".into()),
            Box::new(check(StepUpError::Origin)),
        ),
        (
            "another RP ID",
            Box::new(|d| d.rp_id = "shop.example".into()),
            Box::new(check(StepUpError::RpId)),
        ),
        (
            "an unenrolled credential",
            Box::new(|d| *d = Authenticator::es256(9, RP, ORIGIN)),
            Box::new(|r| matches!(r, StepUpRefused::NotEnrolled)),
        ),
        (
            "another person's credential",
            Box::new(|d| *d = Authenticator::es256(3, RP, ORIGIN)),
            Box::new(|r| matches!(r, StepUpRefused::NotEnrolled)),
        ),
        (
            "a counter gone back",
            Box::new(|d| d.count = 0),
            Box::new(check(StepUpError::Counter)),
        ),
    ];
    for (why, spoil, expected) in cases {
        let mut d = device.clone();
        d.count = 5;
        spoil(&mut d);
        let a = answer(&h, &action, &mut d).await;
        let reason = refused_leaves_it_waiting(&h, &action, &presented, &a, why).await;
        assert!(expected(&reason), "{why}: {reason:?}");
    }
    let mut d = device.clone();
    d.count = 10;
    // A challenge for another action: an assertion over the right nonce and another binding.
    let good = answer(&h, &action, &mut d).await;
    let other = answer(&h, &action, &mut d).await;
    let mixed = StepUpAnswer {
        nonce: good.nonce.clone(),
        ..other
    };
    let reason =
        refused_leaves_it_waiting(&h, &action, &presented, &mixed, "another challenge").await;
    assert!(check(StepUpError::Challenge)(&reason), "{reason:?}");
    // A signature over other data.
    let mut forged = answer(&h, &action, &mut d).await;
    forged.assertion.signature = d.assert(b"something else").signature;
    let reason = refused_leaves_it_waiting(&h, &action, &presented, &forged, "forged").await;
    assert!(check(StepUpError::Signature)(&reason), "{reason:?}");
    // A replayed nonce: the spent `good` nonce, even with a fresh, valid assertion over it.
    let replay = StepUpAnswer {
        assertion: d.assert(
            &countersign_chat::stepup::binding(&h.proposal(&action), &good.nonce).challenge(),
        ),
        ..good.clone()
    };
    let reason = refused_leaves_it_waiting(&h, &action, &presented, &replay, "replayed").await;
    assert!(matches!(reason, StepUpRefused::Nonce), "{reason:?}");
    // An expired nonce (60 s).
    let late = answer(&h, &action, &mut d).await;
    h.clock.advance_secs(61);
    let reason = refused_leaves_it_waiting(&h, &action, &presented, &late, "expired").await;
    assert!(matches!(reason, StepUpRefused::Nonce), "{reason:?}");
    // A nonce made up by the caller.
    let made_up = StepUpAnswer {
        nonce: "A".repeat(43),
        ..answer(&h, &action, &mut d).await
    };
    let reason =
        refused_leaves_it_waiting(&h, &action, &presented, &made_up, "made-up nonce").await;
    assert!(matches!(reason, StepUpRefused::Nonce), "{reason:?}");
    // Then the person's own passkey, rightly: confirmed once.
    let right = answer(&h, &action, &mut d).await;
    countersign(&h, &presented, &right).await.unwrap();
    assert_eq!(h.state(&action), ProposalState::Completed);
}

/// F-1: without the ceremonies configured, a passkey operation cannot be confirmed at all
/// (never a plain proof); an operation that needs none ignores a step-up answer.
#[tokio::test]
async fn f1_no_ceremony_no_confirmation_and_none_operations_are_unchanged() {
    let (mut h, action, presented) = waiting().await;
    let mut device = Authenticator::es256(1, RP, ORIGIN);
    enrol(&h, &h.who, &device).await;
    let a = answer(&h, &action, &mut device).await;
    h.chat.step_up = None;
    let refused = countersign(&h, &presented, &a).await;
    assert!(
        matches!(refused, Err(ChatError::StepUpRequired)),
        "{refused:?}"
    );
    assert_eq!(h.state(&action), ProposalState::PendingConfirmation);
    assert_eq!(h.signer.signed(), 0);
}

/// F-2: enrolment checks what `create` returned against its own single-use nonce.
#[tokio::test]
async fn f2_an_enrolment_is_checked_and_its_nonce_is_single_use() {
    let (h, _, _) = waiting().await;
    let s = h.chat.step_up.as_ref().unwrap();
    let begun = s.begin_enrol(&h.who).await.unwrap();
    let challenge = URL_SAFE_NO_PAD.decode(&begun.challenge).unwrap();
    let mut no_uv = Authenticator::es256(1, RP, ORIGIN);
    no_uv.flags = UP;
    let (c, d) = no_uv.register(&challenge);
    let refused = s.finish_enrol(&h.who, &begun.nonce, &c, &d, vec![]).await;
    assert!(
        matches!(
            refused,
            Err(StepUpRefused::Check(StepUpError::UserVerification))
        ),
        "{refused:?}"
    );
    let (c, d) = Authenticator::es256(1, RP, ORIGIN).register(&challenge);
    let again = s.finish_enrol(&h.who, &begun.nonce, &c, &d, vec![]).await;
    assert!(
        matches!(again, Err(StepUpRefused::Nonce)),
        "spent on its first use: {again:?}"
    );
    let other = Principal {
        tenant: h.who.tenant.clone(),
        user: UserId::parse("u_bob").unwrap(),
    };
    let begun = s.begin_enrol(&h.who).await.unwrap();
    let (c, d) = Authenticator::es256(1, RP, ORIGIN)
        .register(&URL_SAFE_NO_PAD.decode(&begun.challenge).unwrap());
    let theirs = s.finish_enrol(&other, &begun.nonce, &c, &d, vec![]).await;
    assert!(
        matches!(theirs, Err(StepUpRefused::Nonce)),
        "another person's nonce: {theirs:?}"
    );
    assert!(h.store.passkeys_of(&h.who).is_empty() && h.store.passkeys_of(&other).is_empty());
    let _ = Arc::new(());
}

/// F-2 (recovery): the tenant's fallback, off by default. On, a person who has no passkey
/// confirms a passkey operation with a plain reply and a plain proof (the card said so);
/// once they have one it is needed again; a passkey store that cannot answer keeps it.
#[tokio::test]
async fn f2_the_tenants_fallback_lets_only_a_person_without_a_passkey_confirm_plainly() {
    let mut h = H::new().await;
    h.chat.step_up = Some(step_up(&h));
    h.passkey_for("reassign_session_car").await;
    let (action, presented) = h.propose().await;
    assert!(h.proposal(&action).needs_passkey, "off by default");
    h.reply("cancel", &presented).await;
    h.step_up_fallback(true).await;
    let (action, presented) = h.propose().await;
    assert!(
        !h.proposal(&action).needs_passkey,
        "no passkey: the fallback"
    );
    h.provider.answer(
        "execute_action",
        Reply::Result(action_answer(action.as_str(), "completed", Some("Moved."))),
    );
    h.reply("confirm", &presented).await;
    assert_eq!(h.state(&action), ProposalState::Completed);
    let proof = h
        .provider
        .calls()
        .into_iter()
        .rev()
        .find(|c| c.tool == "execute_action")
        .and_then(|c| c.proof)
        .unwrap();
    let header: serde_json::Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(proof.split('.').next().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_ne!(header["typ"], STEPUP_PROOF_TYPE, "a plain proof");
    // The store cannot say: the passkey stays needed.
    h.store
        .faults
        .once("passkeys", countersign_testkit::Fault::Unavailable);
    let (action, presented) = h.propose().await;
    assert!(h.proposal(&action).needs_passkey, "closed when unsure");
    h.reply("cancel", &presented).await;
    // With a passkey, it is needed again.
    enrol(&h, &h.who, &Authenticator::es256(1, RP, ORIGIN)).await;
    let (action, _) = h.propose().await;
    assert!(
        h.proposal(&action).needs_passkey,
        "a person with a passkey uses it"
    );
}

/// F-2: a passkey the person has proves they may add another — its assertion over the
/// `add` challenge: never an action's assertion, never another person's nonce, user
/// verification required, the nonce spent once; then it counts as a use (counter moved).
#[tokio::test]
async fn f2_an_enrolled_passkey_proves_the_right_to_add_another() {
    let (h, action, _) = waiting().await;
    let mut device = Authenticator::es256(1, RP, ORIGIN);
    enrol(&h, &h.who, &device).await;
    let s = h.chat.step_up.as_ref().unwrap();
    let add = |device: &mut Authenticator, nonce: String, challenge: &str| StepUpAnswer {
        nonce,
        credential_id: device.id_text(),
        assertion: device.assert(&URL_SAFE_NO_PAD.decode(challenge).unwrap()),
    };
    // An action's ceremony cannot stand for it (another purpose's nonce).
    let confirming = answer(&h, &action, &mut device).await;
    let refused = s.verify_add(&h.who, &confirming).await;
    assert!(matches!(refused, Err(StepUpRefused::Nonce)), "{refused:?}");
    // The `add` nonce with an action's challenge signed: the check names the challenge.
    let begun = s.begin_add(&h.who).await.unwrap();
    assert_eq!(begun.credentials, vec![device.id_text()]);
    let action_challenge = s
        .begin(&h.who, &h.proposal(&action))
        .await
        .unwrap()
        .challenge;
    let wrong = add(&mut device, begun.nonce.clone(), &action_challenge);
    let refused = s.verify_add(&h.who, &wrong).await;
    assert!(
        matches!(refused, Err(StepUpRefused::Check(StepUpError::Challenge))),
        "{refused:?}"
    );
    // Another person cannot use this person's nonce.
    let bob = Principal {
        tenant: h.who.tenant.clone(),
        user: UserId::parse("u_bob").unwrap(),
    };
    let begun = s.begin_add(&h.who).await.unwrap();
    let theirs = add(&mut device, begun.nonce.clone(), &begun.challenge);
    assert!(matches!(
        s.verify_add(&bob, &theirs).await,
        Err(StepUpRefused::Nonce)
    ));
    // Without user verification: refused.
    let begun = s.begin_add(&h.who).await.unwrap();
    device.flags = UP;
    let no_uv = add(&mut device, begun.nonce.clone(), &begun.challenge);
    device.flags = UP | UV;
    let refused = s.verify_add(&h.who, &no_uv).await;
    assert!(
        matches!(
            refused,
            Err(StepUpRefused::Check(StepUpError::UserVerification))
        ),
        "{refused:?}"
    );
    // Rightly: accepted once, and never again with the same nonce.
    let begun = s.begin_add(&h.who).await.unwrap();
    let right = add(&mut device, begun.nonce.clone(), &begun.challenge);
    s.verify_add(&h.who, &right).await.unwrap();
    assert!(matches!(
        s.verify_add(&h.who, &right).await,
        Err(StepUpRefused::Nonce)
    ));
    assert!(
        h.store.passkeys_of(&h.who)[0].last_used_at.is_some(),
        "a use"
    );
    assert_eq!(
        h.state(&action),
        ProposalState::PendingConfirmation,
        "the change waits"
    );
}
