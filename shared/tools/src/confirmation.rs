//! the confirmation page's link, shared by the gateway (which creates it when it
//! prepares a write) and the page (which opens it): its random id, the record it opens,
//! and where its proposal stands.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_domain::conversation::{MessageKind, Principal};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{ActionId, CaseId, TenantId};
use countersign_domain::ports::{
    ConfirmationLink, ConfirmationLinks, Conversations, ProposalOutcome, StoreError,
};
use countersign_domain::proposal::{Proposal, ProposalState};
use countersign_domain::time::Timestamp;
use rand::RngCore as _;

/// The page's path for link id `{id}`.
pub const PAGE_PATH: &str = "/confirm/{id}";

/// The longest id a URL may carry (a longer one is refused before any read).
pub const MAX_ID_LEN: usize = 64;

/// The store key of link `id`: its SHA-256 (the id itself is only ever in the URL).
pub fn id_hash(id: &str) -> Sha256Hex {
    Sha256Hex::digest(id.as_bytes())
}

/// Whether `id` has the shape of a link id (43 URL-safe characters, 256 random bits).
pub fn well_formed(id: &str) -> bool {
    id.len() == 43
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The page's URL for link `id` under `origin` (`https://host`, no trailing slash).
pub fn page_url(origin: &str, id: &str) -> String {
    format!("{}/confirm/{id}", origin.trim_end_matches('/'))
}

/// A link created for a proposal.
#[derive(Debug, Clone)]
pub struct CreatedLink {
    /// Its random id.
    pub id: String,
    /// What it opens.
    pub link: ConfirmationLink,
}

/// Creates the link to `proposal`'s confirmation page, for the person who owns it.
pub async fn create_link(
    links: &dyn ConfirmationLinks,
    proposal: &Proposal,
) -> Result<CreatedLink, StoreError> {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let id = URL_SAFE_NO_PAD.encode(bytes);
    let link = ConfirmationLink {
        tenant: proposal.tenant.clone(),
        user: proposal.user.clone(),
        case: proposal.case.clone(),
        action_id: proposal.action_id.clone(),
        operation: proposal.operation.clone(),
        presented: proposal.presented.message_id.clone(),
        summary_hash: proposal.summary_hash.clone(),
        arguments_hash: proposal.arguments_hash.clone(),
        expires_at: proposal.expires_at,
    };
    links.put_link(&id_hash(&id), &link).await?;
    Ok(CreatedLink { id, link })
}

/// The conversation's active proposal if it is `action_id` (what was just prepared).
pub async fn active_proposal(
    conversations: &dyn Conversations,
    who: &Principal,
    case: &CaseId,
    action_id: &ActionId,
) -> Result<Option<Proposal>, StoreError> {
    Ok(conversations
        .load(&who.tenant, case)
        .await?
        .filter(|v| v.case.is_owned_by(who))
        .and_then(|v| v.active)
        .filter(|p| &p.action_id == action_id))
}

/// The literal summary `link`'s proposal was presented with: the message it
/// replies to, byte for byte.
pub async fn summary(
    conversations: &dyn Conversations,
    link: &ConfirmationLink,
) -> Result<Option<String>, StoreError> {
    // The presentation is the message just before the one after it: read from the
    // message before it would need its id, so read the case from its start.
    let mut after = None;
    loop {
        let page = conversations
            .list_messages(&link.tenant, &link.case, after.as_ref(), 500)
            .await?;
        if let Some(m) = page.iter().find(|m| m.id == link.presented) {
            return Ok(Some(m.content.clone()));
        }
        match page.last() {
            Some(last) if page.len() == 500 => after = Some(last.id.clone()),
            _ => return Ok(None),
        }
    }
}

/// Where a link's proposal stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    /// Its state, `expired` for a pending proposal past its expiry (expiry is applied
    /// lazily by the store).
    pub state: ProposalState,
    /// When it expires (or expired).
    pub expires_at: Timestamp,
    /// Once it ran: the result message the person was shown.
    pub result: Option<String>,
    /// Its operation.
    pub operation: String,
}

/// Where `link`'s proposal stands at `now`; `None` if its conversation is gone.
pub async fn standing(
    conversations: &dyn Conversations,
    link: &ConfirmationLink,
    now: Timestamp,
) -> Result<Option<Standing>, StoreError> {
    standing_of(conversations, &link.tenant, &link.case, Some(now), |o| {
        o.presented == link.presented
    })
    .await
}

/// Where the case's proposal `pick` chooses stands (`None`: no such proposal); at `now`,
/// a pending one past its expiry reads `expired` (without `now`, as stored).
pub async fn standing_of(
    conversations: &dyn Conversations,
    tenant: &TenantId,
    case: &CaseId,
    now: Option<Timestamp>,
    pick: impl Fn(&ProposalOutcome) -> bool,
) -> Result<Option<Standing>, StoreError> {
    let outcomes = conversations.proposal_outcomes(tenant, case).await?;
    let Some(outcome) = outcomes.into_iter().find(|o| pick(o)) else {
        return Ok(None);
    };
    let mut state = outcome.state;
    if state == ProposalState::PendingConfirmation && now.is_some_and(|n| n >= outcome.expires_at) {
        state = ProposalState::Expired;
    }
    let result = if state.is_terminal() && state != ProposalState::Expired {
        conversations
            .list_messages(tenant, case, Some(&outcome.presented), 50)
            .await?
            .into_iter()
            .find(|m| m.kind == MessageKind::Result)
            .map(|m| m.content)
    } else {
        None
    };
    Ok(Some(Standing {
        state,
        expires_at: outcome.expires_at,
        result,
        operation: outcome.operation.to_string(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// a link id is 256 random bits in 43 URL-safe characters; anything else is not
    /// one (refused before a read).
    #[test]
    fn x3_link_ids_have_one_shape() {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        let id = URL_SAFE_NO_PAD.encode(bytes);
        assert!(well_formed(&id));
        for bad in ["", "abc", &format!("{id}x"), &id.replace(&id[..1], "%")] {
            assert!(!well_formed(bad), "{bad}");
        }
        assert_eq!(
            page_url("https://a.example/", &id),
            format!("https://a.example/confirm/{id}")
        );
    }
}
