//! `Tenants`, `McpSettings`, `WidgetKeys`, `Certifications`, `AuditRecords`: the tenant's side.

use super::*;

#[async_trait]
impl Tenants for MemoryStore {
    async fn create_tenant(&self, tenant: &Tenant) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "create_tenant",
            || (),
            |s| {
                s.tenants.insert(tenant.id.clone(), tenant.clone());
                Ok(())
            },
        )
    }

    async fn get_tenant(&self, id: &TenantId) -> Result<Option<Tenant>, StoreError> {
        yield_now().await;
        self.read("get_tenant", |s| s.tenants.get(id).cloned())
    }

    async fn list_tenants(&self) -> Result<Vec<Tenant>, StoreError> {
        yield_now().await;
        self.read("list_tenants", |s| s.tenants.values().cloned().collect())
    }

    async fn tenant_by_admin_key_hash(
        &self,
        hash: &Sha256Hex,
    ) -> Result<Option<TenantId>, StoreError> {
        yield_now().await;
        self.read("tenant_by_admin_key_hash", |s| {
            s.tenants
                .values()
                .find(|t| &t.admin_key_hash == hash)
                .map(|t| t.id.clone())
        })
    }

    async fn set_admin_key_hash(
        &self,
        id: &TenantId,
        hash: &Sha256Hex,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "set_admin_key_hash",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let Some(t) = s.tenants.get_mut(id) else {
                    return Ok(TransitionOutcome::Conflict { current: None });
                };
                t.admin_key_hash = hash.clone();
                s.audit(id, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }

    async fn set_language(
        &self,
        id: &TenantId,
        language: Language,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "set_language",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let Some(t) = s.tenants.get_mut(id) else {
                    return Ok(TransitionOutcome::Conflict { current: None });
                };
                t.language = language;
                s.audit(id, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }

    async fn set_sign_in_url(
        &self,
        id: &TenantId,
        url: Option<&str>,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "set_sign_in_url",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let Some(t) = s.tenants.get_mut(id) else {
                    return Ok(TransitionOutcome::Conflict { current: None });
                };
                t.sign_in_url = url.map(str::to_owned);
                s.audit(id, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }

    async fn set_appearance(
        &self,
        id: &TenantId,
        appearance: &countersign_domain::appearance::Appearance,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "set_appearance",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let Some(t) = s.tenants.get_mut(id) else {
                    return Ok(TransitionOutcome::Conflict { current: None });
                };
                t.appearance = appearance.clone();
                s.audit(id, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }

    async fn set_retention_days(
        &self,
        id: &TenantId,
        days: countersign_domain::retention::RetentionDays,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "set_retention_days",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let Some(t) = s.tenants.get_mut(id) else {
                    return Ok(TransitionOutcome::Conflict { current: None });
                };
                t.retention_days = Some(days);
                s.audit(id, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }

    async fn set_hold(
        &self,
        id: &TenantId,
        hold: &countersign_domain::retention::Hold,
        on: bool,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "set_hold",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let Some(t) = s.tenants.get_mut(id) else {
                    return Ok(TransitionOutcome::Conflict { current: None });
                };
                t.holds.set(hold, on);
                s.audit(id, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }

    async fn set_purge_cursor(
        &self,
        id: &TenantId,
        cursor: Option<&str>,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "set_purge_cursor",
            || (),
            |s| {
                if let Some(t) = s.tenants.get_mut(id) {
                    t.purge_cursor = cursor.map(str::to_owned);
                }
                Ok(())
            },
        )
    }

    async fn set_erasing(
        &self,
        id: &TenantId,
        user: &countersign_domain::ids::UserId,
        pending: bool,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "set_erasing",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let Some(t) = s.tenants.get_mut(id) else {
                    return Ok(TransitionOutcome::Conflict { current: None });
                };
                if pending {
                    t.erasing.insert(user.clone());
                } else {
                    t.erasing.remove(user);
                }
                s.audit(id, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }
}

#[async_trait]
impl McpSettings for MemoryStore {
    async fn get_mcp_config(&self, id: &TenantId) -> Result<Option<StoredMcpConfig>, StoreError> {
        yield_now().await;
        self.read("get_mcp_config", |s| s.configs.get(id).cloned())
    }

    async fn put_mcp_config(
        &self,
        id: &TenantId,
        config: &StoredMcpConfig,
        expected: Option<u64>,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "put_mcp_config",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                if s.configs.get(id).map(|c| c.version) != expected {
                    return Ok(TransitionOutcome::Conflict { current: None });
                }
                s.configs.insert(id.clone(), config.clone());
                s.audit(id, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }

    async fn delete_mcp_config(
        &self,
        id: &TenantId,
        expected: u64,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "delete_mcp_config",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                if s.configs.get(id).map(|c| c.version) != Some(expected) {
                    return Ok(TransitionOutcome::Conflict { current: None });
                }
                s.configs.remove(id);
                s.audit(id, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }
}

#[async_trait]
impl WidgetKeys for MemoryStore {
    async fn put_widget_key(
        &self,
        tenant: &TenantId,
        key: &WidgetKey,
        audit: &AuditEntry,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "put_widget_key",
            || (),
            |s| {
                s.widget_keys
                    .entry(tenant.clone())
                    .or_default()
                    .insert(key.id.clone(), key.clone());
                s.audit(tenant, audit);
                Ok(())
            },
        )
    }

    async fn get_widget_key(
        &self,
        tenant: &TenantId,
        id: &WidgetKeyId,
    ) -> Result<Option<WidgetKey>, StoreError> {
        yield_now().await;
        self.read("get_widget_key", |s| {
            s.widget_keys.get(tenant).and_then(|k| k.get(id)).cloned()
        })
    }

    async fn list_widget_keys(&self, tenant: &TenantId) -> Result<Vec<WidgetKey>, StoreError> {
        yield_now().await;
        self.read("list_widget_keys", |s| {
            s.widget_keys
                .get(tenant)
                .map(|k| k.values().cloned().collect())
                .unwrap_or_default()
        })
    }

    async fn delete_widget_key(
        &self,
        tenant: &TenantId,
        id: &WidgetKeyId,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "delete_widget_key",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let removed = s.widget_keys.get_mut(tenant).and_then(|k| k.remove(id));
                if removed.is_none() {
                    return Ok(TransitionOutcome::Conflict { current: None });
                }
                s.audit(tenant, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }

    async fn retire_widget_key(
        &self,
        tenant: &TenantId,
        id: &WidgetKeyId,
        at: Timestamp,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "retire_widget_key",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let key = s.widget_keys.get_mut(tenant).and_then(|k| k.get_mut(id));
                match key {
                    Some(k) if k.retires_at.is_none() => k.retires_at = Some(at),
                    _ => return Ok(TransitionOutcome::Conflict { current: None }),
                }
                s.audit(tenant, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }
}

#[async_trait]
impl Certifications for MemoryStore {
    async fn put_certification(
        &self,
        tenant: &TenantId,
        run: &Certification,
        audit: &AuditEntry,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "put_certification",
            || (),
            |s| {
                s.certifications.insert(tenant.clone(), run.clone());
                s.audit(tenant, audit);
                Ok(())
            },
        )
    }

    async fn latest_certification(
        &self,
        tenant: &TenantId,
    ) -> Result<Option<Certification>, StoreError> {
        yield_now().await;
        self.read("latest_certification", |s| {
            s.certifications.get(tenant).cloned()
        })
    }
}

#[async_trait]
impl AuditRecords for MemoryStore {
    async fn list_audit(
        &self,
        tenant: &TenantId,
        before: Option<&AuditId>,
        limit: usize,
    ) -> Result<AuditPage, StoreError> {
        yield_now().await;
        self.read("list_audit", |s| {
            let newest_first: Vec<AuditEntry> = s
                .audit
                .get(tenant)
                .map(|a| {
                    a.values()
                        .rev()
                        .filter(|e| before.is_none_or(|b| &e.id < b))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            let more = newest_first.len() > limit;
            let items: Vec<AuditEntry> = newest_first.into_iter().take(limit).collect();
            let next = if more {
                items.last().map(|e| e.id.clone())
            } else {
                None
            };
            let links = s
                .records
                .get(tenant)
                .into_iter()
                .flatten()
                .filter(|r| items.iter().any(|e| e.id.as_str() == r.id))
                .filter_map(|r| {
                    let id = AuditId::parse(&r.id).ok()?;
                    Some((id, audit_chain::ChainLink::of(r, tenant.as_str())))
                })
                .collect();
            AuditPage { items, links, next }
        })
    }

    /// The chains as the DynamoDB store keeps them (L-2, L-3): every record with its chain
    /// fields, each chain's head, and the conversation chains as its index names them.
    async fn audit_trail(
        &self,
        tenant: &TenantId,
    ) -> Result<countersign_domain::ports::AuditTrail, StoreError> {
        yield_now().await;
        self.read("audit_trail", |s| {
            let heads = s.heads.get(tenant).cloned().unwrap_or_default();
            countersign_domain::ports::AuditTrail {
                records: s.records.get(tenant).cloned().unwrap_or_default(),
                indexed: heads
                    .keys()
                    .filter(|c| *c != audit_chain::TENANT_CHAIN)
                    .cloned()
                    .collect(),
                heads,
                unchained: 0,
            }
        })
    }
}
