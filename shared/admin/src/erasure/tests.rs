#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;

/// These tests resolve no host.
struct NoLookups;

#[async_trait::async_trait]
impl countersign_domain::ports::Resolver for NoLookups {
    async fn resolve(&self, _: &str, _: u16) -> std::io::Result<Vec<std::net::IpAddr>> {
        Err(std::io::Error::other("no host is resolved in these tests"))
    }
}
use countersign_domain::ports::{AuditRecords as _, Conversations as _, ProposalLock as _};
use countersign_domain::proposal::ProposalState as S;
use countersign_testkit::contract::Fixture;
use countersign_testkit::{FakeSigner, MemorySecrets, MemoryStore, SeqIds, TestClock};
use std::sync::Arc;

async fn state() -> (crate::AdminState, Arc<MemoryStore>, Tenant) {
    let clock = Arc::new(TestClock::default());
    let ids = Arc::new(SeqIds::new(clock.clone()));
    let store = Arc::new(MemoryStore::default());
    let lang = countersign_domain::texts::Language::En;
    let t = crate::tenants::register(&*store, &*ids, &*clock, "E", lang)
        .await
        .unwrap();
    let state = crate::AdminState {
        stores: crate::state::AdminStores::split(store.clone(), store.clone())
            .with_subjects(Some(store.clone())),
        leases: store.clone(),
        step_up: None,
        sessions: store.clone(),
        secrets: Arc::new(MemorySecrets::default()),
        signer: Arc::new(FakeSigner::default()),
        checkpoint_signer: Arc::new(FakeSigner::default()),
        issuer: "https://support.example.com/mcp-actions".into(),
        url_policy: countersign_domain::config::UrlPolicy::default(),
        resolver: Arc::new(NoLookups),
        provider: Arc::new(countersign_testkit::ScriptedProvider::default()),
        ids,
        clock,
    };
    (state, store, t.tenant)
}

/// A settled conversation of `tenant`'s person `user`.
async fn settled(store: &MemoryStore, f: &Fixture, tenant: &TenantId, user: &str) {
    use countersign_domain::conversation::{Case, CaseStatus};
    let ulid = ulid::Ulid::new().to_string();
    let case = Case {
        id: countersign_domain::ids::CaseId::from_ulid_text(&ulid).unwrap(),
        tenant: tenant.clone(),
        user: UserId::parse(user).unwrap(),
        status: CaseStatus::Open,
        created_at: f.now(),
    };
    let lang = countersign_domain::texts::Language::En;
    store.create_case(&case, lang).await.unwrap();
    let (p, m) = f.proposal(&case, &format!("act_{}", ulid.to_lowercase()));
    store.create_proposal(&p, &m).await.unwrap();
    let (from, to) = (S::PendingConfirmation, S::Cancelled);
    store
        .transition(tenant, &case.id, &p.action_id, from, to, None)
        .await
        .unwrap();
}

/// F-2: each (person, credential id) enrolled, with its audit record.
async fn enrol(store: &MemoryStore, f: &Fixture, tenant: &TenantId, people: &[(&UserId, &str)]) {
    use countersign_domain::ports::Passkeys as _;
    for (who, id) in people {
        let key = countersign_domain::ports::Passkey {
            id: (*id).into(),
            key: countersign_domain::stepup::CredentialKey::Ed25519 { x: [1; 32] },
            sign_count: 0,
            transports: Vec::new(),
            created_at: f.now(),
            last_used_at: None,
        };
        let record = countersign_domain::audit_chain::AuditEntry {
            id: f.audit_id(),
            at: f.now(),
            actor: "person".into(),
            action: "passkey.enrolled".into(),
            changes: serde_json::json!({"person": who.as_str(), "credentialId": id}),
        };
        assert!(store.add_passkey(tenant, who, &key, &record).await.unwrap());
    }
}

fn worker(state: &crate::AdminState) -> Worker {
    Worker::of(state)
}

async fn view(state: &crate::AdminState, tenant: &Tenant, id: &str) -> ErasureJobView {
    status(state, tenant, id).await.unwrap().unwrap()
}

/// R-2, N-3: the request only records and queues (nothing is purged until the worker
/// runs); asking again answers the same job; the worker purges the person's
/// conversations, counts their legacy records and signs the receipt; a person never
/// seen is a job done with `nothingStored` that wrote nothing; a held person is
/// refused.
#[tokio::test]
async fn n3_r2_an_erasure_is_queued_then_carried_out_off_the_request() {
    use countersign_domain::ports::Retention as _;
    let (state, store, tenant) = state().await;
    let f = Fixture::default();
    settled(&store, &f, &tenant.id, "alice").await;
    let alice = UserId::parse("alice").unwrap();
    let bob = UserId::parse("bob").unwrap();
    // F-2: alice's passkey goes with her; bob's stays.
    enrol(
        &store,
        &f,
        &tenant.id,
        &[(&alice, "cred-alice"), (&bob, "cred-bob")],
    )
    .await;
    let job = request(&state, &tenant, &alice).await.unwrap();
    assert_eq!(job.status, JobStatus::Queued);
    let listed = store.retained(&tenant.id, None, 10).await.unwrap();
    assert_eq!(listed.items.len(), 1, "nothing purged on the request path");
    let again = request(&state, &tenant, &alice).await.unwrap();
    assert_eq!(again.id, job.id, "one job per person while it is queued");
    let run = run_queued(
        &worker(&state),
        Budget::lasting(std::time::Duration::from_secs(60)),
    )
    .await
    .unwrap();
    assert_eq!((run.index_ready, run.finished, run.stopped), (true, 1, 0));
    let done = view(&state, &tenant, &job.id).await;
    assert_eq!(done.status, "done");
    let e = done.erasure.expect("the erasure");
    assert_eq!(e.conversations.purged, 1);
    // The memory store seals nothing: `proposal.prepared` and the erasure's own
    // `subject.erasure_started` name the person in clear there.
    // (And the passkey's enrolment record, F-2.)
    assert_eq!(e.legacy_records, 3);
    assert_eq!(e.audit_personal_data, "unreadable except legacyRecords");
    assert!(!e.receipt.is_empty());
    let passkeys = |who: &UserId| {
        store.passkeys_of(&countersign_domain::conversation::Principal {
            tenant: tenant.id.clone(),
            user: who.clone(),
        })
    };
    assert!(passkeys(&alice).is_empty(), "F-2: erased with the person");
    assert_eq!(passkeys(&bob).len(), 1, "another person's passkey stays");
    assert!(
        store
            .retained(&tenant.id, None, 10)
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let nobody = UserId::parse("nobody").unwrap();
    let records = store.audit_trail(&tenant.id).await.unwrap().records.len();
    let unknown = request(&state, &tenant, &nobody).await.unwrap();
    run_queued(
        &worker(&state),
        Budget::lasting(std::time::Duration::from_secs(60)),
    )
    .await
    .unwrap();
    let unknown = view(&state, &tenant, &unknown.id).await;
    assert_eq!(unknown.nothing_stored, Some(true));
    assert_eq!(
        store.audit_trail(&tenant.id).await.unwrap().records.len(),
        records,
        "nothing written for someone never seen"
    );
    let mut held = tenant.clone();
    held.holds.set(&Hold::Person(alice.clone()), true);
    assert!(matches!(
        request(&state, &held, &alice).await,
        Err(ErasureError::Held)
    ));
}

/// N-3: a run out of budget stops part-way with a record (`subject.erasure_started`,
/// the person marked as erasing, the job `running` with its progress) and the next
/// run resumes where it stopped and finishes.
#[tokio::test]
async fn n3_a_partial_run_leaves_a_record_and_the_next_resumes() {
    let (state, store, tenant) = state().await;
    let f = Fixture::default();
    for _ in 0..3 {
        settled(&store, &f, &tenant.id, "bob").await;
    }
    let bob = UserId::parse("bob").unwrap();
    let job = request(&state, &tenant, &bob).await.unwrap();
    let short = Budget {
        purges: 1,
        ..Budget::lasting(std::time::Duration::from_secs(60))
    };
    let run = run_queued(&worker(&state), short).await.unwrap();
    assert_eq!((run.finished, run.stopped), (0, 1));
    let part = view(&state, &tenant, &job.id).await;
    assert_eq!(
        (part.status.as_str(), part.purged, part.runs),
        ("running", 1, 1)
    );
    let now = store.get_tenant(&tenant.id).await.unwrap().unwrap();
    assert!(now.erasing.contains(&bob), "marked as erasing");
    let trail = store.audit_trail(&tenant.id).await.unwrap();
    assert!(
        trail
            .records
            .iter()
            .any(|r| r.action == "subject.erasure_started")
    );
    let run = run_queued(
        &worker(&state),
        Budget::lasting(std::time::Duration::from_secs(60)),
    )
    .await
    .unwrap();
    assert_eq!(run.finished, 1);
    let done = view(&state, &tenant, &job.id).await;
    assert_eq!(
        (done.status.as_str(), done.purged, done.runs),
        ("done", 3, 2)
    );
    assert_eq!(done.erasure.unwrap().conversations.purged, 3);
    let now = store.get_tenant(&tenant.id).await.unwrap().unwrap();
    assert!(!now.erasing.contains(&bob));
}

/// N-3: a tenant may queue only so many erasures; more are refused (429 `BUSY`) and
/// another tenant's are not.
#[tokio::test]
async fn n3_erasures_are_capped_per_tenant() {
    let (state, store, tenant) = state().await;
    for i in 0..QUEUED_PER_TENANT {
        let who = UserId::parse(format!("p{i}")).unwrap();
        request(&state, &tenant, &who).await.unwrap();
    }
    let one_more = UserId::parse("one-more").unwrap();
    assert!(matches!(
        request(&state, &tenant, &one_more).await,
        Err(ErasureError::Admin(AdminError::QueueFull {
            what: "erasure",
            ..
        }))
    ));
    let lang = countersign_domain::texts::Language::En;
    let other = crate::tenants::register(&*store, &*state.ids, &*state.clock, "O", lang)
        .await
        .unwrap();
    assert!(request(&state, &other.tenant, &one_more).await.is_ok());
}
