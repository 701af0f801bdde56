#![allow(clippy::unwrap_used)]
use super::*;
use countersign_domain::audit_chain::AuditEntry;
use countersign_domain::ports::{AuditRecords as _, Passkeys as _};
use countersign_testkit::contract::Fixture;
use countersign_testkit::{FakeSigner, MemorySecrets, MemoryStore, SeqIds, TestClock};
use std::sync::Arc;

struct NoLookups;

#[async_trait::async_trait]
impl countersign_domain::ports::Resolver for NoLookups {
    async fn resolve(&self, _: &str, _: u16) -> std::io::Result<Vec<std::net::IpAddr>> {
        Err(std::io::Error::other("no host is resolved in these tests"))
    }
}

/// F-2: the administrator lists a person's passkeys (only theirs) and revokes one, with an
/// audit record; revoking one the person does not have writes nothing.
#[tokio::test]
async fn f2_an_administrator_lists_and_revokes_a_persons_passkeys() {
    let clock = Arc::new(TestClock::default());
    let ids = Arc::new(SeqIds::new(clock.clone()));
    let store = Arc::new(MemoryStore::default());
    let lang = countersign_domain::texts::Language::En;
    let tenant = crate::tenants::register(&*store, &*ids, &*clock, "P", lang)
        .await
        .unwrap()
        .tenant;
    let state = crate::AdminState {
        stores: crate::state::AdminStores::split(store.clone(), store.clone()),
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
    let f = Fixture::default();
    let (alice, bob) = (
        UserId::parse("alice").unwrap(),
        UserId::parse("bob").unwrap(),
    );
    for (who, id) in [(&alice, "cred-a"), (&alice, "cred-b"), (&bob, "cred-c")] {
        let passkey = Passkey {
            id: id.into(),
            key: CredentialKey::Es256 {
                x: [1; 32],
                y: [2; 32],
            },
            sign_count: 0,
            transports: vec!["internal".into()],
            created_at: f.now(),
            last_used_at: None,
        };
        let record = AuditEntry {
            id: f.audit_id(),
            at: f.now(),
            actor: "person".into(),
            action: "passkey.enrolled".into(),
            changes: serde_json::json!({"person": who.as_str(), "credentialId": id}),
        };
        store
            .add_passkey(&tenant.id, who, &passkey, &record)
            .await
            .unwrap();
    }
    let listed = list(&state, &tenant, &alice).await.unwrap();
    assert_eq!(
        listed.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(),
        ["cred-a", "cred-b"]
    );
    assert_eq!(listed[0].algorithm, "ES256");
    assert!(revoke(&state, &tenant, &alice, "cred-a").await.unwrap());
    assert!(
        !revoke(&state, &tenant, &alice, "cred-c").await.unwrap(),
        "bob's, not alice's"
    );
    let left = list(&state, &tenant, &alice).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(list(&state, &tenant, &bob).await.unwrap().len(), 1);
    let audit = store.list_audit(&tenant.id, None, 10).await.unwrap();
    let revoked: Vec<_> = audit
        .items
        .iter()
        .filter(|e| e.action == "passkey.revoked")
        .collect();
    assert_eq!(revoked.len(), 1, "one record, for the one revocation");
    assert!(revoked[0].actor.starts_with("adminKey:"));
}
