//! on the local AWS emulator (KMS wraps the people's data keys): a person's
//! erasure leaves no plaintext of theirs in the table, the audit chain and a checkpoint
//! taken before it still verify, the receipt verifies against the audit keys, and a held
//! person survives both purge and erasure until the hold is lifted.
//! (A module of the `audit_chain` test binary: one binary less to link.)

use crate::common::{self, PublicDns, env, send};
use countersign_admin::api::AdminState;
use countersign_aws::dynamo::{DynamoStore, EnvelopeKeys, KmsWrap};
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_domain::conversation::{Case, CaseStatus};
use countersign_domain::ids::{CaseId, UserId};
use countersign_domain::ports::{
    AuditRecords as _, ConversationStore, Conversations as _, ProposalLock as _, SubjectKeys,
    Tenants as _,
};
use countersign_domain::proposal::ProposalState as S;
use countersign_domain::texts::Language;
use countersign_testkit::contract::Fixture;
use http::StatusCode;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Value, json};
use std::sync::Arc;

/// The env's store sealing with KMS-wrapped people's keys, and the admin API over it.
struct Sealed {
    store: DynamoStore,
    keys: Arc<EnvelopeKeys>,
    state: AdminState,
}

async fn sealed(env: &common::Env) -> Sealed {
    // I-1: people's keys are wrapped by the admin function's role (the subject key's
    // policy lets the functions alone).
    let sdk = countersign_aws::sdk::as_principal(
        &aws_config::load_from_env().await,
        countersign_aws::sdk::Principal::Admin,
    );
    let kms = countersign_aws::kms::KmsProofSigner::client(&sdk, None);
    let wrap = KmsWrap::new(kms, countersign_aws::settings::DEFAULT_SUBJECT_KEY_ALIAS);
    let keys = Arc::new(EnvelopeKeys::new(env.store.clone(), Arc::new(wrap)));
    let store = env.store.clone().with_subject_keys(keys.clone());
    let state = AdminState {
        stores: countersign_admin::api::AdminStores::split(
            Arc::new(store.clone()),
            Arc::new(store.clone()),
        )
        .with_subjects(Some(keys.clone())),
        leases: Arc::new(store.clone()),
        step_up: None,
        sessions: Arc::new(store.clone()),
        secrets: env.secrets.clone(),
        signer: env.signer.clone(),
        checkpoint_signer: env.checkpoint_signer.clone(),
        issuer: "https://support.example.com/mcp-actions".into(),
        url_policy: countersign_domain::config::UrlPolicy::default(),
        resolver: Arc::new(PublicDns),
        provider: env.provider.clone(),
        ids: Arc::new(UlidIds::default()),
        clock: Arc::new(SystemClock),
    };
    Sealed { store, keys, state }
}

impl Sealed {
    fn app(&self) -> axum::Router {
        countersign_admin::api::router(self.state.clone()).merge(
            countersign_admin::api::certification_router(self.state.clone()),
        )
    }

    /// A conversation of `user` with a proposal moved to `to` (through executing when
    /// `to` needs it), and a message that quotes the person.
    async fn conversation(&self, f: &Fixture, tenant: &Case, user: &UserId, to: S) -> CaseId {
        self.conversation_with(f, tenant, user, to).await.0
    }

    /// [`Self::conversation`], with its proposal.
    async fn conversation_with(
        &self,
        f: &Fixture,
        tenant: &Case,
        user: &UserId,
        to: S,
    ) -> (CaseId, countersign_domain::proposal::Proposal) {
        let case = Case {
            id: CaseId::from_ulid_text(&ulid::Ulid::new().to_string()).unwrap(),
            user: user.clone(),
            status: CaseStatus::Open,
            ..tenant.clone()
        };
        let store: &dyn ConversationStore = &self.store;
        store.create_case(&case, Language::En).await.unwrap();
        let said = f.message(
            &case.id,
            countersign_domain::conversation::Role::User,
            countersign_domain::conversation::MessageKind::Text,
            &format!("I am {user}"),
        );
        store.append_message(&case.tenant, &said).await.unwrap();
        let (p, m) = f.proposal(&case, &format!("act_{}", ulid::Ulid::new()));
        store.create_proposal(&p, &m).await.unwrap();
        // N-2: a completed proposal is confirmed through the confirm transaction itself
        // (its record is the one that used to be chained unsealed).
        if to == S::Completed {
            let write = f.confirm_write(&p, &p.presented.message_id);
            let outcome = store.confirm(&write).await.unwrap();
            assert_eq!(
                outcome,
                countersign_domain::ports::TransitionOutcome::Applied
            );
        }
        let path: &[(S, S)] = match to {
            S::Cancelled => &[(S::PendingConfirmation, S::Cancelled)],
            S::Executing => &[(S::PendingConfirmation, S::Executing)],
            S::Completed => &[(S::Executing, S::Completed)],
            _ => &[],
        };
        for (from, next) in path {
            store
                .transition(&case.tenant, &case.id, &p.action_id, *from, *next, None)
                .await
                .unwrap();
        }
        (case.id, p)
    }

    /// The audit API verifies the tenant's trail, and the trail extends `checkpoint` (an
    /// answer of `POST …/audit/checkpoints` taken earlier): nothing it covered was removed
    /// or rewritten.
    async fn verifies_extending(
        &self,
        tenant: &countersign_domain::ids::TenantId,
        key: &str,
        checkpoint: &Value,
    ) {
        let (status, v) = send(
            self.app(),
            "GET",
            &format!("/api/admin/tenants/{tenant}/audit/verification"),
            Some(key),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(v["verified"], true, "{v}");
        let trail = self.store.audit_trail(tenant).await.unwrap();
        let heads: std::collections::BTreeMap<String, countersign_domain::audit_chain::Head> =
            checkpoint["heads"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| {
                    (
                        h["chain"].as_str().unwrap().to_owned(),
                        countersign_domain::audit_chain::Head {
                            seq: h["seq"].as_u64().unwrap(),
                            hash: h["hash"].as_str().unwrap().to_owned(),
                        },
                    )
                })
                .collect();
        assert_eq!(
            countersign_domain::audit_chain::extends(tenant.as_str(), &trail.records, &heads),
            None
        );
    }

    /// N-3: asks for an erasure (202 and the job), runs the worker once, and answers the
    /// job as its status route reads it then.
    async fn erase(&self, key: &str, base: &str, body: &str) -> Value {
        let (status, job) = send(
            self.app(),
            "POST",
            &format!("{base}/erasures"),
            Some(key),
            Some(body.to_owned()),
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{job}");
        assert_eq!(job["status"], "queued", "{job}");
        let worker = countersign_admin::erasure::Worker::of(&self.state);
        let budget =
            countersign_admin::erasure::Budget::lasting(std::time::Duration::from_secs(120));
        countersign_admin::erasure::run_queued(&worker, budget)
            .await
            .unwrap();
        let id = job["jobId"].as_str().unwrap();
        let (status, job) = send(
            self.app(),
            "GET",
            &format!("{base}/erasures/{id}"),
            Some(key),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{job}");
        job
    }

    /// Every item of the table whose text holds `needle`, as its key.
    async fn holding(&self, needle: &str) -> Vec<String> {
        self.store
            .scan_everything()
            .await
            .unwrap()
            .into_iter()
            .filter(|i| format!("{i:?}").contains(needle))
            .map(|i| format!("{:?} {:?}", i.get("pk"), i.get("sk")))
            .collect()
    }
}

fn template(tenant: &countersign_domain::ports::Tenant) -> Case {
    Case {
        id: CaseId::from_ulid_text(&ulid::Ulid::new().to_string()).unwrap(),
        tenant: tenant.id.clone(),
        user: UserId::parse("nobody").unwrap(),
        status: CaseStatus::Open,
        created_at: Fixture::default().now(),
    }
}

/// The claims of `jws` if it verifies with a key of the audit keys set (`typ` checked).
async fn verified_receipt(app: axum::Router, jws: &str) -> Value {
    let header = jsonwebtoken::decode_header(jws).unwrap();
    assert_eq!(
        header.typ.as_deref(),
        Some("countersign-erasure-receipt+jwt")
    );
    let (status, keys) = send(
        app,
        "GET",
        "/.well-known/countersign-audit-keys.json",
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let jwk = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kid"].as_str() == header.kid.as_deref())
        .expect("the receipt's kid is in the audit keys");
    let decoding =
        DecodingKey::from_rsa_components(jwk["n"].as_str().unwrap(), jwk["e"].as_str().unwrap())
            .unwrap();
    let mut validation = Validation::new(Algorithm::RS256);
    validation.validate_exp = false;
    validation.required_spec_claims.clear();
    jsonwebtoken::decode::<Value>(jws, &decoding, &validation)
        .unwrap()
        .claims
}

/// the person's personal fields never enter the chain in clear; after the erasure
/// (finished once their executing action is resolved) no item of the table holds their
/// id or text, the chain and a checkpoint taken before still verify, the export shows the
/// fields erased, the receipt verifies against the audit keys, and a replay finds nothing stored.
#[tokio::test]
async fn r2_an_erased_person_leaves_no_plaintext_and_the_trail_still_verifies() {
    let env = env(false).await;
    let s = sealed(&env).await;
    let a = env.tenant("Erasure").await;
    let (key, tenant) = (a.admin_key.expose(), a.tenant.clone());
    let base = format!("/api/admin/tenants/{}", tenant.id);
    let f = Fixture::default();
    let person = UserId::parse(format!("erase-me-{}", ulid::Ulid::new())).unwrap();
    let other = UserId::parse(format!("keep-me-{}", ulid::Ulid::new())).unwrap();
    let t = template(&tenant);
    // N-2, N-3: confirmed and completed, so its confirmation's record is in its chain.
    let settled = s.conversation(&f, &t, &person, S::Completed).await;
    let running = s.conversation(&f, &t, &person, S::Executing).await;
    let kept = s.conversation(&f, &t, &other, S::Cancelled).await;

    // Sealed before they are chained: no audit record holds the person's id in clear.
    let trail = s.store.audit_trail(&tenant.id).await.unwrap();
    assert!(
        trail
            .records
            .iter()
            .any(|r| r.changes.contains("\"sealed\""))
    );
    assert!(
        !trail
            .records
            .iter()
            .any(|r| r.changes.contains(person.as_str())),
        "a personal field was chained in clear"
    );
    let (status, checkpoint) = send(
        s.app(),
        "POST",
        &format!("{base}/audit/checkpoints"),
        Some(key),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{checkpoint}");

    let body = json!({"person": person.as_str()}).to_string();
    let job = s.erase(key, &base, &body).await;
    assert_eq!(job["status"], "done", "{job}");
    let erased = &job["erasure"];
    assert_eq!(erased["conversations"]["purged"], 1, "{job}");
    assert_eq!(erased["conversations"]["unresolved"], 1, "{job}");
    assert_eq!(erased["auditPersonalData"], "pending", "{erased}");
    assert_eq!(erased["legacyRecords"], 0, "{erased}");
    let claims = verified_receipt(s.app(), erased["receipt"].as_str().unwrap()).await;
    // The receipt commits to the person, never names them (N-2).
    assert_eq!(
        claims["personDigest"],
        countersign_admin::erasure::person_digest(&tenant.id, &person)
    );
    assert!(!job.to_string().contains(person.as_str()), "{job}");
    assert_eq!(claims["tenantId"], tenant.id.as_str());
    assert!(claims["backups"]["until"].is_string());
    // R-2, P-3: the executing action's conversation is kept, no reconciliation started.
    assert!(s.store.load(&tenant.id, &running).await.unwrap().is_some());
    assert!(s.store.load(&tenant.id, &settled).await.unwrap().is_none());

    // Resolved: the purge's pass finishes the erasure.
    let view = s.store.load(&tenant.id, &running).await.unwrap().unwrap();
    let action = view.active.unwrap().action_id;
    s.store
        .transition(
            &tenant.id,
            &running,
            &action,
            S::Executing,
            S::Completed,
            None,
        )
        .await
        .unwrap();
    let now_tenant = s.store.get_tenant(&tenant.id).await.unwrap().unwrap();
    assert!(now_tenant.erasing.contains(&person));
    let entry = |action: &str, changes: Value| {
        use countersign_domain::ports::Ids as _;
        countersign_domain::ports::AuditEntry {
            id: UlidIds::default().audit_id(),
            at: f.now(),
            actor: "platform".into(),
            action: action.to_owned(),
            changes,
        }
    };
    let finished = countersign_admin::erasure::finish_pending(
        &s.store,
        &s.store,
        s.keys.as_ref(),
        &now_tenant,
        entry,
        f.now(),
        std::time::Instant::now() + std::time::Duration::from_secs(60),
    )
    .await
    .unwrap();
    assert_eq!(finished, 1);
    assert!(!s.keys.has_key(&tenant.id, &person).await.unwrap());

    // N-2: after confirm, purge and erasure, a scan of the whole table finds nothing of
    // theirs — no item, no id, no text, in clear anywhere (the audit records and the done
    // job with its receipt included).
    let mine = format!("I am {person}");
    for needle in [
        person.as_str(),
        settled.as_str(),
        running.as_str(),
        mine.as_str(),
    ] {
        assert_eq!(s.holding(needle).await, Vec::<String>::new(), "{needle}");
    }
    assert!(
        !s.holding(other.as_str()).await.is_empty(),
        "another person's data stays"
    );
    assert!(s.store.load(&tenant.id, &kept).await.unwrap().is_some());

    // The chain verifies, and still extends the checkpoint taken before the erasure.
    s.verifies_extending(&tenant.id, key, &checkpoint).await;
    // The export shows the person's fields as erased (and another's opened).
    let export = countersign_admin::audit::export(&s.store, s.keys.as_ref(), &tenant.id)
        .await
        .unwrap();
    let opened: Vec<&Value> = export["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r.get("opened"))
        .collect();
    assert!(opened.iter().any(|o| o["erased"] == true), "{export}");
    assert!(
        opened.iter().any(|o| o["userId"] == other.as_str()),
        "{export}"
    );
    // Replayed: nothing of them is left, and nothing is written.
    let again = s.erase(key, &base, &body).await;
    assert_eq!(again["nothingStored"], true, "{again}");
}

/// a held person survives the purge and an erasure (409 `LEGAL_HOLD`, nothing
/// removed) until the hold is lifted; a held conversation of an erased person is kept and
/// reported. Bad holds and erasures are typed 400s that change nothing.
#[tokio::test]
async fn r3_a_held_person_survives_purge_and_erasure_until_lifted() {
    let env = env(false).await;
    let s = sealed(&env).await;
    let a = env.tenant("Holds").await;
    let (key, tenant) = (a.admin_key.expose(), a.tenant.clone());
    let base = format!("/api/admin/tenants/{}", tenant.id);
    let f = Fixture::default();
    let person = UserId::parse(format!("held-{}", ulid::Ulid::new())).unwrap();
    let t = template(&tenant);
    let first = s.conversation(&f, &t, &person, S::Cancelled).await;
    let second = s.conversation(&f, &t, &person, S::Cancelled).await;
    let hold = |kind: &str, id: &str, held: bool| {
        Some(json!({"kind": kind, "id": id, "held": held}).to_string())
    };
    let (status, holds) = send(
        s.app(),
        "PUT",
        &format!("{base}/holds"),
        Some(key),
        hold("person", person.as_str(), true),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{holds}");
    assert_eq!(
        holds["holds"],
        json!([{"kind": "person", "id": person.as_str()}])
    );

    // The purge, with every conversation long due, keeps them.
    let days = countersign_domain::retention::RetentionDays::new(1).unwrap();
    let later = f.now().plus_seconds(3 * 86_400);
    let report =
        countersign_admin::retention::purge_tenant(&s.store, &tenant.id, days, later, None, 10)
            .await
            .unwrap();
    assert_eq!((report.purged, report.held), (0, 2), "{report:?}");
    let erase = Some(json!({"person": person.as_str()}).to_string());
    let (status, refused) = send(
        s.app(),
        "POST",
        &format!("{base}/erasures"),
        Some(key),
        erase.clone(),
    )
    .await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("LEGAL_HOLD")),
        "{refused}"
    );
    assert!(
        s.keys.has_key(&tenant.id, &person).await.unwrap(),
        "the key stays"
    );
    assert!(s.store.load(&tenant.id, &first).await.unwrap().is_some());

    // Bad input changes nothing.
    for (body, field) in [
        (hold("planet", "x", true), None),
        (hold("person", "two words", true), Some("id")),
        (hold("conversation", "act_1", true), Some("id")),
        (Some(json!({"kind": "person", "id": "x"}).to_string()), None),
    ] {
        let (status, e) = send(s.app(), "PUT", &format!("{base}/holds"), Some(key), body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{e}");
        if let Some(field) = field {
            assert_eq!(e["error"]["field"], field, "{e}");
        }
    }
    let (status, e) = send(
        s.app(),
        "POST",
        &format!("{base}/erasures"),
        Some(key),
        Some(json!({"person": ""}).to_string()),
    )
    .await;
    assert_eq!(
        (status, e["error"]["field"].as_str()),
        (StatusCode::BAD_REQUEST, Some("person")),
        "{e}"
    );
    let never = s
        .erase(key, &base, &json!({"person": "never-seen"}).to_string())
        .await;
    assert_eq!(never["nothingStored"], true, "{never}");

    // Lifted, with the second conversation held on its own: the erasure takes the first,
    // reports the second, and waits for its hold.
    let (status, _) = send(
        s.app(),
        "PUT",
        &format!("{base}/holds"),
        Some(key),
        hold("conversation", second.as_str(), true),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = send(
        s.app(),
        "PUT",
        &format!("{base}/holds"),
        Some(key),
        hold("person", person.as_str(), false),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let job = s.erase(key, &base, erase.as_deref().unwrap()).await;
    let erased = &job["erasure"];
    assert_eq!(erased["conversations"]["purged"], 1, "{job}");
    assert_eq!(erased["conversations"]["held"], 1, "{job}");
    assert_eq!(erased["auditPersonalData"], "pending");
    assert!(s.store.load(&tenant.id, &first).await.unwrap().is_none());
    assert!(s.store.load(&tenant.id, &second).await.unwrap().is_some());
    // Each hold's change is in the trail, the person's id sealed.
    let (_, page) = send(
        s.app(),
        "GET",
        &format!("{base}/audit?limit=20"),
        Some(key),
        None,
    )
    .await;
    let items = page["items"].as_array().unwrap();
    let placed: Vec<&Value> = items
        .iter()
        .filter(|r| r["action"] == "hold.placed")
        .collect();
    assert_eq!(placed.len(), 2, "{page}");
    assert!(
        items
            .iter()
            .all(|r| !r["changes"].to_string().contains(person.as_str())),
        "stored as chained: sealed"
    );
    assert!(
        items
            .iter()
            .any(|r| r["opened"]["person"] == person.as_str()),
        "{page}"
    );
}

/// R-1 (decision 0055), N-2: a purged conversation — confirmed and completed — leaves none
/// of its text, ids or items in the table — its id, its action's id, its messages' ids, its confirmation link, a hold's
/// mention of it — while its audit chain (records sealed under the conversation's key,
/// head moved out of its partition, index entry without the case) still verifies and
/// extends a checkpoint taken before the purge; the export shows its records' conversation
/// fields as purged and another conversation's as they are.
#[tokio::test]
async fn r1_a_purged_conversation_leaves_none_of_its_ids_and_the_trail_still_verifies() {
    use countersign_domain::hash::Sha256Hex;
    use countersign_domain::ports::{ConfirmationLink, ConfirmationLinks as _, Retention as _};
    let env = env(false).await;
    let s = sealed(&env).await;
    let a = env.tenant("Purge").await;
    let (key, tenant) = (a.admin_key.expose(), a.tenant.clone());
    let base = format!("/api/admin/tenants/{}", tenant.id);
    let f = Fixture::default();
    let person = UserId::parse(format!("driver-{}", ulid::Ulid::new())).unwrap();
    let t = template(&tenant);
    // N-2: confirmed and completed, so the confirmation's record is in its chain too.
    let (case, p) = s.conversation_with(&f, &t, &person, S::Completed).await;
    let kept = s.conversation(&f, &t, &person, S::Cancelled).await;
    let confirmation = s
        .store
        .proposal(&tenant.id, &case, &p.action_id)
        .await
        .unwrap()
        .unwrap()
        .confirmation_message_id
        .unwrap();
    let secret = format!("purge-me-{}", ulid::Ulid::new());
    let said = f.message(
        &case,
        countersign_domain::conversation::Role::User,
        countersign_domain::conversation::MessageKind::Text,
        &secret,
    );
    let store: &dyn ConversationStore = &s.store;
    store.append_message(&tenant.id, &said).await.unwrap();
    let link = Sha256Hex::digest(ulid::Ulid::new().to_string());
    s.store
        .put_link(
            &link,
            &ConfirmationLink {
                tenant: tenant.id.clone(),
                user: person.clone(),
                case: case.clone(),
                action_id: p.action_id.clone(),
                operation: p.operation.clone(),
                presented: p.presented.message_id.clone(),
                summary_hash: p.summary_hash.clone(),
                arguments_hash: p.arguments_hash.clone(),
                expires_at: p.expires_at,
            },
        )
        .await
        .unwrap();
    // A hold on the conversation, placed and lifted: two records of the tenant's chain.
    for held in [true, false] {
        let body = json!({"kind": "conversation", "id": case.as_str(), "held": held});
        let (status, out) = send(
            s.app(),
            "PUT",
            &format!("{base}/holds"),
            Some(key),
            Some(body.to_string()),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{out}");
    }
    let ids = [
        case.as_str(),
        p.action_id.as_str(),
        p.presented.message_id.as_str(),
        confirmation.as_str(),
        said.id.as_str(),
        link.as_str(),
        secret.as_str(),
    ];
    for id in ids {
        assert!(!s.holding(id).await.is_empty(), "{id} is stored before");
    }
    // Sealed before they are chained: no record names the conversation in clear.
    let trail = s.store.audit_trail(&tenant.id).await.unwrap();
    assert!(
        !trail
            .records
            .iter()
            .any(|r| r.changes.contains(case.as_str()) || r.chain.contains(case.as_str())),
        "a conversation field was chained in clear"
    );
    let (status, checkpoint) = send(
        s.app(),
        "POST",
        &format!("{base}/audit/checkpoints"),
        Some(key),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{checkpoint}");

    let outcome = s.store.purge(&tenant.id, &case, None).await.unwrap();
    assert!(
        matches!(
            outcome,
            countersign_domain::ports::PurgeOutcome::Purged { .. }
        ),
        "{outcome:?}"
    );
    for id in ids {
        assert_eq!(s.holding(id).await, Vec::<String>::new(), "{id} is left");
    }
    assert!(s.store.load(&tenant.id, &kept).await.unwrap().is_some());

    // The chain verifies and extends the checkpoint taken before the purge.
    s.verifies_extending(&tenant.id, key, &checkpoint).await;
    let trail = s.store.audit_trail(&tenant.id).await.unwrap();
    let purged_chain =
        countersign_domain::audit_chain::conversation_chain(tenant.id.as_str(), case.as_str());
    assert!(
        trail.heads.contains_key(&purged_chain),
        "its head was moved, not lost"
    );
    assert!(trail.indexed.contains(&purged_chain));
    assert!(
        checkpoint["heads"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["chain"] == purged_chain.as_str()),
        "the checkpoint covered the purged conversation's chain"
    );
    // The export: the purged conversation's fields are shown purged; the kept one's open.
    let export = countersign_admin::audit::export(&s.store, s.keys.as_ref(), &tenant.id)
        .await
        .unwrap();
    let records = export["records"].as_array().unwrap();
    let of = |chain: &str| -> Vec<&Value> {
        records
            .iter()
            .filter(|r| r["chain"] == chain)
            .filter_map(|r| r.get("opened"))
            .collect()
    };
    let purged = of(&purged_chain);
    assert!(!purged.is_empty(), "{export}");
    assert!(purged.iter().all(|o| o["purged"] == true), "{export}");
    let live_chain =
        countersign_domain::audit_chain::conversation_chain(tenant.id.as_str(), kept.as_str());
    assert!(
        of(&live_chain).iter().any(|o| o["caseId"] == kept.as_str()),
        "{export}"
    );
    let holds: Vec<&Value> = records
        .iter()
        .filter(|r| r["action"].as_str().is_some_and(|a| a.starts_with("hold.")))
        .filter_map(|r| r.get("opened"))
        .collect();
    assert_eq!(holds.len(), 2, "{export}");
    assert!(
        holds.iter().all(|o| o["conversation"] == "[purged]"),
        "{export}"
    );
}

/// N-3 (security review N1): the erasure of someone never seen costs the same reads on a
/// tenant with 10 conversations as on one with 1,000 — the worker finds a person's
/// conversations through their own index, never by listing the tenant's — counted through
/// the SDK interceptor, per call kind.
#[tokio::test]
async fn n3_an_unknown_persons_erasure_costs_the_same_reads_whatever_the_tenant_holds() {
    use countersign_domain::ports::PersonIndex as _;
    use futures::StreamExt as _;
    let env = env(false).await;
    let s = sealed(&env).await;
    let sdk = aws_config::load_from_env().await;
    let calls = countersign_aws::calls::CallLog::default();
    let counted = DynamoStore::new(DynamoStore::client(&sdk, Some(&calls)), s.store.table());
    let mut reads = Vec::new();
    for (name, conversations) in [("Small", 10), ("Large", 1000)] {
        let a = env.tenant(name).await;
        let t = template(&a.tenant);
        let store = &s.store;
        futures::stream::iter(0..conversations)
            .map(|i| {
                let case = Case {
                    id: CaseId::from_ulid_text(&ulid::Ulid::new().to_string()).unwrap(),
                    user: UserId::parse(format!("person-{i}")).unwrap(),
                    ..t.clone()
                };
                async move { store.create_case(&case, Language::En).await.unwrap() }
            })
            .buffer_unordered(16)
            .collect::<Vec<()>>()
            .await;
        // The index is complete before the count (the backfill's pages are not a job's).
        assert!(s.store.backfill_person_index(10_000).await.unwrap());
        let mut state = s.state.clone();
        state.stores = countersign_admin::api::AdminStores::split(
            Arc::new(counted.clone()),
            Arc::new(counted.clone()),
        )
        .with_subjects(Some(s.keys.clone()));
        let nobody = UserId::parse(format!("nobody-{}", ulid::Ulid::new())).unwrap();
        let job = countersign_admin::erasure::request(&state, &a.tenant, &nobody)
            .await
            .unwrap();
        calls.reset();
        let worker = countersign_admin::erasure::Worker::of(&state);
        let budget =
            countersign_admin::erasure::Budget::lasting(std::time::Duration::from_secs(60));
        let run = countersign_admin::erasure::run_queued(&worker, budget)
            .await
            .unwrap();
        assert_eq!(run.finished, 1, "{run:?}");
        let done = countersign_admin::erasure::status(&state, &a.tenant, &job.id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(done.nothing_stored, Some(true), "{done:?}");
        reads.push((conversations, calls.snapshot()));
    }
    let (small, large) = (&reads[0].1, &reads[1].1);
    assert_eq!(small, large, "10 vs 1,000 conversations: {reads:?}");
    assert!(
        small.values().sum::<u64>() <= 12,
        "a handful of calls: {small:?}"
    );
}
