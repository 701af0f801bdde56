//! Secrets by name and version, in memory.

use crate::faults::{Fault, Faults};
use async_trait::async_trait;
use countersign_domain::ports::{SecretError, SecretStore};
use countersign_domain::secret::SecretString;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// The secret store in memory. Versions are `v1`, `v2`, … per secret. `faults` plans
/// failures per method name (`put`, `get_current`, `get_version`, `delete`).
#[derive(Debug, Default)]
pub struct MemorySecrets {
    secrets: Mutex<HashMap<String, Vec<(String, SecretString)>>>,
    reads: AtomicUsize,
    /// Fault switches.
    pub faults: Faults,
}

impl MemorySecrets {
    fn check(&self, op: &str) -> Result<(), SecretError> {
        match self.faults.take(op) {
            Some(Fault::Unavailable | Fault::Timeout | Fault::LostResponse | Fault::Hang) => {
                Err(SecretError::Unavailable(
                    format!("in-memory secrets: planned fault in {op}").into(),
                ))
            }
            Some(Fault::Conflict) | None => Ok(()),
        }
    }

    /// How many reads (`get_current`, `get_version`) reached the store (tests of caches).
    pub fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl SecretStore for MemorySecrets {
    async fn put(&self, name: &str, value: &SecretString) -> Result<String, SecretError> {
        self.check("put")?;
        let mut all = self.secrets.lock().unwrap_or_else(PoisonError::into_inner);
        let versions = all.entry(name.to_owned()).or_default();
        let version = format!("v{}", versions.len() + 1);
        versions.push((version.clone(), value.clone()));
        Ok(version)
    }

    async fn get_current(&self, name: &str) -> Result<Option<(SecretString, String)>, SecretError> {
        self.check("get_current")?;
        self.reads.fetch_add(1, Ordering::SeqCst);
        let all = self.secrets.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(all
            .get(name)
            .and_then(|v| v.last())
            .map(|(version, value)| (value.clone(), version.clone())))
    }

    async fn get_version(
        &self,
        name: &str,
        version: &str,
    ) -> Result<Option<SecretString>, SecretError> {
        self.check("get_version")?;
        self.reads.fetch_add(1, Ordering::SeqCst);
        let all = self.secrets.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(all
            .get(name)
            .and_then(|v| v.iter().find(|(id, _)| id == version))
            .map(|(_, value)| value.clone()))
    }

    async fn delete(&self, name: &str) -> Result<(), SecretError> {
        self.check("delete")?;
        self.secrets
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
        Ok(())
    }
}
