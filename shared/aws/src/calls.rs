//! Counts AWS calls per operation (`DynamoDB_20120810.TransactWriteItems`, `TrentService.Sign`,
//! …), read from each request's `X-Amz-Target` header just before it is sent, so retries
//! count as calls. Used by tests that hold the confirm path's call budget and by the
//! benchmark.

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// A shared, cloneable call counter. Attach it to any SDK client config with
/// `.interceptor(log.clone())`.
#[derive(Debug, Clone, Default)]
pub struct CallLog {
    calls: Arc<Mutex<BTreeMap<String, u64>>>,
}

impl CallLog {
    /// Calls so far, by operation (the part of `X-Amz-Target` after the dot).
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Forgets every call.
    pub fn reset(&self) {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }

    /// Total calls so far.
    pub fn total(&self) -> u64 {
        self.snapshot().values().sum()
    }
}

impl Intercept for CallLog {
    fn name(&self) -> &'static str {
        "CountersignCallLog"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let target = context
            .request()
            .headers()
            .get("x-amz-target")
            .unwrap_or("unknown");
        let op = target.rsplit('.').next().unwrap_or(target).to_owned();
        *self
            .calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(op)
            .or_default() += 1;
        Ok(())
    }
}
