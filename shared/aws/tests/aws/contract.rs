//! The store contract (issue 27, `countersign_testkit::contract`) against the DynamoDB
//! store on the emulator: directly, and through [`Faulty`], the proxy that applies real
//! DynamoDB's rules the emulator does not (concurrent transactions on one item cancel each
//! other, client request tokens, in-flight holds). The in-memory store passes the same
//! rules in `shared/testkit/tests/contract.rs`.

use crate::faulty::Faulty;
use async_trait::async_trait;
use countersign_aws::dynamo::DynamoStore;
use countersign_domain::ids::{ActionId, CaseId, TenantId};
use countersign_domain::ports::{ConversationStore, RateLimiter, TenantStore};
use countersign_domain::proposal::Proposal;
use countersign_testkit::contract::Subject;
use std::sync::Arc;

/// The DynamoDB store, and the proxy its traffic goes through (kept alive with it).
struct OnDynamo {
    store: DynamoStore,
    _proxy: Option<Faulty>,
}

#[async_trait]
impl Subject for OnDynamo {
    fn conversations(&self) -> &dyn ConversationStore {
        &self.store
    }
    fn tenants(&self) -> &dyn TenantStore {
        &self.store
    }
    fn budgets(&self) -> &dyn RateLimiter {
        &self.store
    }
    fn links(&self) -> &dyn countersign_domain::ports::ConfirmationLinks {
        &self.store
    }
    fn passkeys(&self) -> &dyn countersign_domain::ports::Passkeys {
        &self.store
    }
    async fn stored(&self, tenant: &TenantId, case: &CaseId, id: &ActionId) -> Option<Proposal> {
        self.store.proposal(tenant, case, id).await.unwrap()
    }
    async fn holding(&self, needle: &str) -> Vec<String> {
        let text = |v: Option<&aws_sdk_dynamodb::types::AttributeValue>| {
            v.and_then(|v| v.as_s().ok()).cloned().unwrap_or_default()
        };
        self.store
            .scan_everything()
            .await
            .unwrap()
            .into_iter()
            .filter(|item| format!("{item:?}").contains(needle))
            .map(|item| {
                let (pk, sk) = (text(item.get("pk")), text(item.get("sk")));
                // A conversation chain's head (`A#AUDIT`) stays with its records.
                if sk.starts_with("AUDIT") || sk == "A#AUDIT" {
                    "audit".to_owned()
                } else if sk.starts_with("RETAIN#") {
                    "index".to_owned()
                } else if pk.starts_with("CONV#") {
                    "conversation".to_owned()
                } else {
                    format!("{pk} {sk}")
                }
            })
            .collect()
    }
}

/// A new table (the contract needs no key, secret or alias: its rules start from new
/// tenants), with the store's SDK client on `endpoint`.
pub(crate) async fn on_new_table(endpoint: Option<&str>) -> DynamoStore {
    countersign_testkit::local_aws_endpoint();
    let sdk = aws_config::load_from_env().await;
    let table = format!(
        "cs-contract-{}",
        ulid::Ulid::new().to_string().to_lowercase()
    );
    let direct = DynamoStore::client(&sdk, None);
    countersign_aws::bootstrap::ensure_table(&direct, &table)
        .await
        .unwrap();
    let client = match endpoint {
        None => direct,
        Some(url) => aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::config::Builder::from(&sdk)
                .endpoint_url(url)
                .build(),
        ),
    };
    DynamoStore::new(client, table)
}

/// The store on a new table, talking to the emulator directly.
async fn direct() -> Arc<dyn Subject> {
    Arc::new(OnDynamo {
        store: on_new_table(None).await,
        _proxy: None,
    })
}

/// The store on a new table, through the proxy that imitates real DynamoDB (each
/// transaction held 5 ms in flight, as `real_rules` does).
async fn proxied() -> Arc<dyn Subject> {
    let upstream = countersign_testkit::local_aws_endpoint();
    let proxy = Faulty::start(&upstream, std::time::Duration::from_millis(5)).await;
    Arc::new(OnDynamo {
        store: on_new_table(Some(proxy.url())).await,
        _proxy: Some(proxy),
    })
}

mod on_the_emulator {
    countersign_testkit::store_contract!(super::direct);
}

mod through_the_fault_proxy {
    countersign_testkit::store_contract!(super::proxied);
}
