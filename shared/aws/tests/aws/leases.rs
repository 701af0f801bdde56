//! V-7 on the emulator: a tenant's lease is taken once, refused to a second owner until
//! it is given back or expires, and given back only by its owner.

use crate::common::env;
use countersign_aws::system::SystemClock;
use countersign_domain::ports::{Clock, Lease, Leases};

#[tokio::test]
async fn v7_one_lease_per_tenant_and_kind_until_released_or_expired() {
    let env = env().await;
    let store = env.store();
    let (a, b) = (env.tenant(), env.tenant());
    let now = SystemClock.now();
    let until = now.plus_seconds(60);
    let kind = "certification run";
    assert_eq!(
        store.acquire(&a, kind, "one", now, until).await.unwrap(),
        Lease::Held
    );
    // A second owner waits until the lease's end at the latest.
    assert_eq!(
        store.acquire(&a, kind, "two", now, until).await.unwrap(),
        Lease::Busy {
            retry_after_secs: 60
        }
    );
    // Another tenant, or another kind, is not held up.
    assert_eq!(
        store.acquire(&b, kind, "two", now, until).await.unwrap(),
        Lease::Held
    );
    assert_eq!(
        store
            .acquire(&a, "checkpoint", "two", now, until)
            .await
            .unwrap(),
        Lease::Held
    );
    // Only the owner gives it back.
    store.release(&a, kind, "two").await.unwrap();
    assert!(matches!(
        store.acquire(&a, kind, "three", now, until).await.unwrap(),
        Lease::Busy { .. }
    ));
    store.release(&a, kind, "one").await.unwrap();
    assert_eq!(
        store.acquire(&a, kind, "three", now, until).await.unwrap(),
        Lease::Held
    );
    // An expired lease (its holder died) is taken over.
    let later = until.plus_seconds(1);
    assert_eq!(
        store
            .acquire(&a, kind, "four", later, later.plus_seconds(60))
            .await
            .unwrap(),
        Lease::Held
    );
}
