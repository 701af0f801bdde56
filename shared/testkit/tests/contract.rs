//! The store contract (issue 27) against the in-memory store: the same rules the DynamoDB
//! store passes on the emulator (`shared/aws/tests/aws/contract.rs`), so a use-case test
//! on the in-memory store holds for the real one.
#![allow(clippy::unwrap_used)]

use countersign_testkit::MemoryStore;
use countersign_testkit::contract::Subject;
use std::sync::Arc;

async fn memory() -> Arc<dyn Subject> {
    Arc::new(MemoryStore::default())
}

countersign_testkit::store_contract!(memory);
