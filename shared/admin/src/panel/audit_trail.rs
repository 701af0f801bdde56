//! The audit page (L-1 … L-3).

use super::*;

/// The audit trail, newest first, 20 records a page; with filters, up to five pages of the
/// trail are read to fill one page of matches (the link goes on from where it stopped).
pub(super) async fn audit_page(
    State(state): State<AdminState>,
    session: Session,
    uri: Uri,
) -> Response {
    let q = query(&uri);
    let mut cursor = q
        .get("cursor")
        .and_then(|c| AuditId::parse(c.as_str()).ok());
    let filters = audit_view::Filters {
        event: q.get("event").cloned().unwrap_or_default(),
        from: q.get("from").cloned().unwrap_or_default(),
        to: q.get("to").cloned().unwrap_or_default(),
    };
    let mut kept = Vec::new();
    for _ in 0..5 {
        let page = match state
            .stores
            .audit
            .list_audit(&session.tenant.id, cursor.as_ref(), 20)
            .await
        {
            Ok(page) => page,
            Err(e) => return unavailable(&store_down(e)),
        };
        kept.extend(page.items.into_iter().filter(|e| filters.keep(e)));
        cursor = page.next;
        if kept.len() >= 20 || cursor.is_none() || !filters.any() {
            break;
        }
    }
    let next = cursor.map(|c| format!("/admin/audit?cursor={c}&{}", filters.query()));
    // personal fields shown opened, or marked erased.
    for e in &mut kept {
        let keys = state.stores.subjects.as_ref();
        if let Some(opened) = crate::audit::opened(keys, &session.tenant.id, &e.changes).await {
            e.changes = opened;
        }
    }
    let items: Vec<_> = kept.iter().collect();
    html(
        StatusCode::OK,
        views::audit(&session, &items, next.as_deref(), &filters),
    )
}
