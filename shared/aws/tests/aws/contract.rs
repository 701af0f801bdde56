//! The store contract (issue 27, `countersign_testkit::contract`) against the DynamoDB
//! store on the emulator: directly, and through [`Faulty`], the proxy that applies real
//! DynamoDB's rules the emulator does not (concurrent transactions on one item cancel each
//! other, client request tokens, in-flight holds). The in-memory store passes the same
//! rules in `shared/testkit/tests/contract.rs`.

use crate::common::env;
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
    async fn stored(&self, tenant: &TenantId, case: &CaseId, id: &ActionId) -> Option<Proposal> {
        self.store.proposal(tenant, case, id).await.unwrap()
    }
}

/// The store on a new table, talking to the emulator directly.
async fn direct() -> Arc<dyn Subject> {
    let env = env().await;
    Arc::new(OnDynamo {
        store: env.fresh_store().await,
        _proxy: None,
    })
}

/// The store on a new table, through the proxy that imitates real DynamoDB.
async fn proxied() -> Arc<dyn Subject> {
    let env = env().await;
    let (store, proxy) = crate::real_rules::through_proxy(&env).await;
    Arc::new(OnDynamo {
        store,
        _proxy: Some(proxy),
    })
}

mod on_the_emulator {
    countersign_testkit::store_contract!(super::direct);
}

mod through_the_fault_proxy {
    countersign_testkit::store_contract!(super::proxied);
}
