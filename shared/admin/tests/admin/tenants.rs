//! Operator tasks against the local AWS emulator (C-1).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use countersign_admin::{keys, tenants};
use countersign_aws::dynamo::DynamoStore;
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_domain::ports::AuditRecords;
use countersign_domain::ports::Ids as _;
use countersign_domain::ports::Tenants;
use countersign_domain::texts::Language;

async fn store() -> DynamoStore {
    countersign_testkit::local_aws_endpoint();
    let sdk = aws_config::load_from_env().await;
    let table = format!("cs-admin-{}", ulid::Ulid::new().to_string().to_lowercase());
    let client = DynamoStore::client(&sdk, None);
    countersign_aws::bootstrap::ensure_table(&client, &table)
        .await
        .unwrap();
    DynamoStore::new(client, table)
}

/// C-1: registration stores only the key's hash; rotation invalidates the old key at
/// once; listing shows every tenant; bad names and unknown tenants are refused.
#[tokio::test]
async fn c1_register_rotate_and_list_tenants() {
    let store = store().await;
    let ids = UlidIds::default();
    let a = tenants::register(&store, &ids, &SystemClock, "  TrackShare  ", Language::Pt)
        .await
        .unwrap();
    let b = tenants::register(&store, &ids, &SystemClock, "Other Co", Language::En)
        .await
        .unwrap();
    let stored = store.get_tenant(&a.tenant.id).await.unwrap().unwrap();
    assert_eq!(stored.name, "TrackShare");
    assert_eq!(stored.language, Language::Pt);
    assert!(keys::matches(a.admin_key.expose(), &stored.admin_key_hash));
    assert_ne!(
        stored.admin_key_hash.as_str(),
        a.admin_key.expose(),
        "never the key itself"
    );
    assert!(
        !keys::matches(b.admin_key.expose(), &stored.admin_key_hash),
        "keys grant nothing on other tenants"
    );

    let new_key = tenants::rotate_admin_key(&store, &ids, &SystemClock, &a.tenant.id)
        .await
        .unwrap();
    // The rotation is audited: by the operator, naming the new key's fingerprint only.
    let audit = store.list_audit(&a.tenant.id, None, 10).await.unwrap();
    assert_eq!(audit.items.len(), 1);
    assert_eq!(audit.items[0].action, "adminKey.rotate");
    assert_eq!(audit.items[0].actor, "operator");
    let text = audit.items[0].changes.to_string();
    assert!(!text.contains(new_key.expose()) && !text.contains(a.admin_key.expose()));
    let stored = store.get_tenant(&a.tenant.id).await.unwrap().unwrap();
    assert!(keys::matches(new_key.expose(), &stored.admin_key_hash));
    assert!(
        !keys::matches(a.admin_key.expose(), &stored.admin_key_hash),
        "the old key stops working"
    );

    let mut listed: Vec<String> = store
        .list_tenants()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    listed.sort();
    assert_eq!(listed, vec!["Other Co", "TrackShare"]);

    for bad in ["", "   ", "a\u{0}b", &"x".repeat(101)] {
        assert!(matches!(
            tenants::register(&store, &ids, &SystemClock, bad, Language::En).await,
            Err(tenants::TenantError::InvalidName)
        ));
    }
    assert!(matches!(
        tenants::rotate_admin_key(&store, &ids, &SystemClock, &ids.tenant_id()).await,
        Err(tenants::TenantError::NotFound(_))
    ));
}
