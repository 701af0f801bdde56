//! One `TransactWriteItems`, sent and read: what became of it (committed, cancelled,
//! refused, throttled, or unknown), and the backoff between lost races.

use super::*;

/// Exponential backoff with full jitter before retrying a lost race, so that contenders
/// spread out instead of colliding again: a random pause in [1, 10·2^attempt] ms, at most
/// 200 ms. (Losing a race on one conversation is rare in production; under a burst
/// this keeps the number of wasted transactions near linear instead of quadratic.)
pub(crate) async fn backoff(attempt: u32) {
    let cap = (10u64 << attempt.min(7)).min(200);
    let ms = u64::try_from(ulid::Ulid::new().random() % u128::from(cap)).unwrap_or(0) + 1;
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

pub(crate) enum Tx {
    Committed,
    Cancelled(Vec<CancellationReason>),
}

/// What became of a sent transaction.
pub(crate) enum Sent {
    /// DynamoDB answered: committed or cancelled.
    Known(Tx),
    /// Certainly not applied.
    Refused(StoreError),
    /// Not applied for want of capacity (throttled): worth sending again.
    Throttled(StoreError),
    /// No answer, or an answer that does not tell: it may or may not have committed.
    Unknown(StoreError),
}

pub(crate) fn code(r: Option<&CancellationReason>) -> &str {
    r.and_then(CancellationReason::code).unwrap_or("None")
}

pub(crate) fn failed(r: Option<&CancellationReason>) -> bool {
    code(r) == "ConditionalCheckFailed"
}

pub(crate) fn any_conflict(reasons: &[CancellationReason]) -> bool {
    reasons.iter().any(|r| {
        matches!(
            r.code(),
            Some("TransactionConflict" | "ThrottlingError" | "ProvisionedThroughputExceeded")
        )
    })
}

impl DynamoStore {
    pub(crate) async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<Tx, StoreError> {
        match self.send_tx(items, None).await {
            Sent::Known(tx) => Ok(tx),
            Sent::Refused(e) | Sent::Throttled(e) | Sent::Unknown(e) => Err(e),
        }
    }

    /// Sends one `TransactWriteItems`. `token` is the client request token: the caller
    /// reuses one only to resend the very same items after an outcome that did not prove
    /// "not applied" (DynamoDB answers `IdempotentParameterMismatch` to a token reused
    /// with other parameters). With a token the SDK does not retry: the caller's resend
    /// loop must see every attempt's answer, since a refusal that follows an unknown
    /// outcome proves nothing about the earlier attempt (issue 27).
    pub(crate) async fn send_tx(&self, items: Vec<TransactWriteItem>, token: Option<&str>) -> Sent {
        let request = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .set_client_request_token(token.map(str::to_owned));
        let sent = match token {
            Some(_) => {
                let once = aws_sdk_dynamodb::config::Builder::default()
                    .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled());
                request.customize().config_override(once).send().await
            }
            None => request.send().await,
        };
        let e = match sent {
            Ok(_) => return Sent::Known(Tx::Committed),
            Err(e) => e,
        };
        match &e {
            SdkError::ServiceError(se) => match se.err() {
                TransactWriteItemsError::TransactionCanceledException(c) => {
                    Sent::Known(Tx::Cancelled(c.cancellation_reasons().to_vec()))
                }
                // Refused for want of capacity, before anything was applied.
                TransactWriteItemsError::ProvisionedThroughputExceededException(_)
                | TransactWriteItemsError::RequestLimitExceeded(_)
                | TransactWriteItemsError::ThrottlingException(_) => {
                    Sent::Throttled(unavailable(e))
                }
                // Refused before anything was applied, as DynamoDB documents them.
                TransactWriteItemsError::IdempotentParameterMismatchException(_)
                | TransactWriteItemsError::ResourceNotFoundException(_) => {
                    Sent::Refused(unavailable(e))
                }
                // `ValidationException` (a 400 the model does not name) is a refusal;
                // `TransactionInProgressException` (the same token still running), an
                // `InternalServerError` or any other 5xx may still commit.
                other => {
                    use aws_sdk_dynamodb::error::ProvideErrorMetadata as _;
                    if other.code() == Some("ValidationException") {
                        Sent::Refused(unavailable(e))
                    } else {
                        Sent::Unknown(unavailable(e))
                    }
                }
            },
            SdkError::ConstructionFailure(_) => Sent::Refused(unavailable(e)),
            // Timeouts, lost connections, unreadable answers: it may have committed.
            _ => Sent::Unknown(unavailable(e)),
        }
    }
}
