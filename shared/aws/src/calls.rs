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
    /// O-3: also count each call in the process's metrics.
    metrics: bool,
}

impl CallLog {
    /// A counter that also emits `aws_calls_total{operation}` and, for DynamoDB writes
    /// and reads, `dynamodb_units_estimate_total{kind}` (O-3: the cost measurement).
    pub fn emitting() -> Self {
        Self {
            metrics: true,
            ..Self::default()
        }
    }

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
        if self.metrics {
            metrics::counter!("aws_calls_total", "operation" => op.clone()).increment(1);
            let body = context.request().body().bytes().unwrap_or_default();
            if let Some((kind, units)) = dynamodb_units(&op, body) {
                metrics::counter!("dynamodb_units_estimate_total", "kind" => kind).increment(units);
            }
        }
        *self
            .calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(op)
            .or_default() += 1;
        Ok(())
    }
}

/// O-3: DynamoDB capacity units a call consumes, estimated from its request: a write is
/// one unit per started KB of the item as sent (a transactional write two), a read one
/// unit (strongly consistent reads of items under 4 KB; a `Query` one unit per call, its
/// pages being small here). An estimate for the cost table, not a bill.
fn dynamodb_units(op: &str, body: &[u8]) -> Option<(&'static str, u64)> {
    let kb = |v: &serde_json::Value| (v.to_string().len() as u64).div_ceil(1024).max(1);
    match op {
        "GetItem" | "Query" | "Scan" => Some(("read", 1)),
        "BatchGetItem" | "TransactGetItems" => Some(("read", 2)),
        "DeleteItem" | "UpdateItem" => Some(("write", 1)),
        "PutItem" => {
            let v: serde_json::Value = serde_json::from_slice(body).ok()?;
            Some(("write", kb(&v["Item"])))
        }
        "TransactWriteItems" => {
            let v: serde_json::Value = serde_json::from_slice(body).ok()?;
            let items = v["TransactItems"].as_array()?;
            Some(("write", items.iter().map(|i| 2 * kb(i)).sum()))
        }
        _ => None,
    }
}
