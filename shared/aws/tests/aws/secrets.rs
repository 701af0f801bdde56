//! The Secrets Manager secret store against the emulator.

use crate::common::env;
use countersign_aws::secrets::SecretsManagerStore;
use countersign_domain::ports::SecretStore;
use countersign_domain::secret::SecretString;

/// Put creates then versions; the current and any given version read back; delete is
/// idempotent (C-3, C-8).
#[tokio::test]
async fn secret_versions_put_read_and_delete() {
    let env = env().await;
    let store = SecretsManagerStore::new(
        SecretsManagerStore::client(&env.sdk, None),
        env.settings.secret_prefix.clone(),
    );
    let name = "ten_x/mcp-service-token";
    assert_eq!(store.get_current(name).await.unwrap(), None);
    let v1 = store
        .put(name, &SecretString::new("token-one"))
        .await
        .unwrap();
    let v2 = store
        .put(name, &SecretString::new("token-two"))
        .await
        .unwrap();
    assert_ne!(v1, v2);
    let (current, version) = store.get_current(name).await.unwrap().unwrap();
    assert_eq!(
        (current.expose(), version.as_str()),
        ("token-two", v2.as_str())
    );
    assert_eq!(
        store
            .get_version(name, &v1)
            .await
            .unwrap()
            .unwrap()
            .expose(),
        "token-one"
    );
    assert_eq!(
        store
            .get_version(name, &v2)
            .await
            .unwrap()
            .unwrap()
            .expose(),
        "token-two"
    );
    store.delete(name).await.unwrap();
    assert_eq!(store.get_current(name).await.unwrap(), None);
    store.delete(name).await.unwrap();
}
