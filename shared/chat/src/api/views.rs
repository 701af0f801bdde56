//! The widget API's request and response bodies (the OpenAPI document's schemas), and how
//! a response words its proposals' instructions ([`Wording`]).

use super::*;

/// `POST /api/cases/{id}/messages` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PostMessage {
    /// The person's text (1–4000 characters, not only spaces).
    #[schema(min_length = 1, max_length = 4000, pattern = "\\S")]
    pub content: String,
    /// The id of the last assistant message this tab rendered; required for a
    /// confirmation to count.
    #[serde(default)]
    #[schema(value_type = Option<String>, pattern = "^msg_[0-7][0-9A-HJKMNP-TV-Z]{25}$")]
    pub reply_to_message_id: Option<MessageId>,
}

/// `GET /api/cases/{id}/messages` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only messages after this message id (exclusive).
    #[param(value_type = Option<String>, pattern = "^msg_[0-7][0-9A-HJKMNP-TV-Z]{25}$")]
    pub after: Option<MessageId>,
    /// At most this many (1–500, default 100).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<usize>,
}

/// A message as the widget renders it. A proposal carries the fixed confirm/cancel
/// instructions as a separate field: its `content` is the summary, literally.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageView {
    /// The message id (time-ordered).
    pub id: String,
    /// `user` or `assistant`.
    pub role: String,
    /// `text`, `proposal`, `instructions`, `result` or `notice`.
    pub kind: String,
    /// The text, exactly as stored.
    pub content: String,
    /// RFC 3339.
    pub created_at: String,
    /// For a user message: the message it replied to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to_message_id: Option<String>,
    /// For a proposal: the fixed confirm/cancel instructions in the case's language.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// How a response words its proposals' instructions: in the case's language, and, for the
/// one waiting proposal that needs the person's passkey, with a link to the confirmation
/// page (F-3) instead of "reply: confirm".
#[derive(Debug, Clone)]
pub(super) struct Wording {
    pub(super) lang: Language,
    pub(super) passkey: Option<(countersign_domain::ids::MessageId, String)>,
}

impl Wording {
    /// `lang`, with the passkey link when one of `messages` presents the waiting passkey
    /// proposal: a link is made only then (one write, off the confirm path). `known`: the
    /// case's proposals as a history page read them, so a page whose proposals need no
    /// passkey (or are settled) costs nothing more.
    pub(super) async fn of(
        chat: &Chat,
        (who, case): (&Principal, &CaseId),
        messages: &[Message],
        known: Option<&[ProposalView]>,
        lang: Language,
    ) -> Self {
        let waiting = |id: &countersign_domain::ids::MessageId| {
            known.is_none_or(|views| {
                views.iter().any(|v| {
                    v.needs_passkey
                        && v.state == "pending_confirmation"
                        && v.message_id == id.as_str()
                })
            })
        };
        let presented: Vec<&countersign_domain::ids::MessageId> = messages
            .iter()
            .filter(|m| m.kind == MessageKind::Proposal && waiting(&m.id))
            .map(|m| &m.id)
            .collect();
        let passkey = if presented.is_empty() {
            None
        } else {
            chat.step_up_link_for(who, case, &presented).await
        };
        Self { lang, passkey }
    }

    pub(super) fn instructions(&self, m: &Message) -> Option<String> {
        (m.kind == MessageKind::Proposal).then(|| match &self.passkey {
            Some((id, url)) if *id == m.id => texts::passkey_instructions(self.lang, url),
            _ => texts::confirm_instructions(self.lang).to_owned(),
        })
    }
}

impl MessageView {
    pub(super) fn new(m: &Message, wording: &Wording) -> Self {
        Self {
            id: m.id.to_string(),
            role: serde_name(&m.role),
            kind: serde_name(&m.kind),
            content: m.content.clone(),
            created_at: m.created_at.to_rfc3339(),
            reply_to_message_id: m.reply_to.as_ref().map(ToString::to_string),
            instructions: wording.instructions(m),
        }
    }
}

/// A domain enum's serde name (`assistant`, `proposal`, …), as the widget sees it.
pub(super) fn serde_name<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Where one proposal stands (S-3), by the message that presented it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProposalView {
    /// The proposal message (`kind: proposal`) this is about.
    pub message_id: String,
    /// `pending_confirmation`, `executing`, `completed`, `failed`, `conflict`, `expired`,
    /// `cancelled`, `unknown` or `superseded`. A pending proposal past `expiresAt` is
    /// expired, whatever this says.
    pub state: String,
    /// RFC 3339.
    pub expires_at: String,
    /// N-6: present and `true` when this proposal replaced an earlier one (show it on the
    /// card): it can be confirmed only 5 s after it was first shown.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replaced_earlier: bool,
    /// F-1, F-3: present and `true` when confirming it needs the person's passkey: a typed
    /// `confirm` is refused (`409 STEP_UP_REQUIRED`); the card offers the confirmation page
    /// (`POST /api/cases/{id}/step-up`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub needs_passkey: bool,
    /// Issue 50: present and `true` when an app the person connected (an MCP client)
    /// prepared it rather than the chat's assistant: the card says so.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub prepared_outside: bool,
}

impl From<&ProposalOutcome> for ProposalView {
    fn from(o: &ProposalOutcome) -> Self {
        Self {
            message_id: o.presented.to_string(),
            state: o.state.as_str().to_owned(),
            expires_at: o.expires_at.to_rfc3339(),
            replaced_earlier: o.replaced,
            needs_passkey: o.needs_passkey,
            prepared_outside: o.prepared_outside,
        }
    }
}

/// Messages, in order: a page of the history, or what one posted message caused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Messages {
    /// The messages, oldest first.
    pub messages: Vec<MessageView>,
    /// Every proposal of the case as it stands now (S-3), oldest first: a proposal card
    /// shows its outcome and the time left. In a page of the history only (`GET`); the
    /// answer to a posted message leaves it out (it would cost the confirm path a read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposals: Option<Vec<ProposalView>>,
}

/// A case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaseView {
    /// The case id.
    pub case_id: String,
    /// `open` or `closed`.
    pub status: String,
    /// RFC 3339, on creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// The language of the case's fixed texts (S-4): `en` or `pt-BR`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// The id of the case's newest message (S-2): an open widget reads the messages only
    /// when this changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_message_id: Option<String>,
    /// Issue 50: the tenant's accent (`#rrggbb`), on creation and when asked
    /// (`?include=welcome`); absent when the tenant set none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accent: Option<String>,
    /// Issue 50: the tenant's welcome in the case's language, on creation and when asked
    /// (`?include=welcome`); absent when the tenant wrote none (the widget's own applies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub welcome: Option<WelcomeView>,
}

/// What the widget shows before the person's first message (issue 50).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WelcomeView {
    /// The greeting.
    pub greeting: String,
    /// The assistant's name (the widget's title); empty: the widget's default.
    pub assistant_name: String,
    /// Up to four prompts the person sends with one click.
    pub starters: Vec<String>,
}

impl From<countersign_domain::appearance::Welcome> for WelcomeView {
    fn from(w: countersign_domain::appearance::Welcome) -> Self {
        Self {
            greeting: w.greeting,
            assistant_name: w.assistant_name,
            starters: w.starters,
        }
    }
}

/// `GET /api/cases/{id}` query (issue 50).
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CaseQuery {
    /// `welcome`: add the tenant's accent and welcome (a restored widget's first read;
    /// never the poll's).
    pub include: Option<CaseInclude>,
}

/// What `GET /api/cases/{id}` may add to the case (issue 50).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CaseInclude {
    /// The tenant's accent and welcome in the case's language.
    Welcome,
}

/// `POST /api/cases` body (optional).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateCase {
    /// The person's language (S-4); the tenant's default when absent.
    pub language: Option<LanguageTag>,
}

/// A language of the chat's fixed texts (S-4), as a BCP 47 tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
pub enum LanguageTag {
    /// English.
    #[serde(rename = "en")]
    En,
    /// Brazilian Portuguese (`pt` is read as this too).
    #[serde(rename = "pt-BR", alias = "pt")]
    PtBr,
}

impl From<LanguageTag> for Language {
    fn from(tag: LanguageTag) -> Self {
        match tag {
            LanguageTag::En => Language::En,
            LanguageTag::PtBr => Language::Pt,
        }
    }
}

/// `POST /api/cases/{id}/mcp-token` body (optional).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpTokenRequest {
    /// How long the token is valid, in seconds (60 to 900; default 900).
    #[schema(minimum = 60, maximum = 900)]
    #[serde(default, deserialize_with = "countersign_http::optional_whole_number")]
    pub ttl_seconds: Option<i64>,
}

/// A gateway token: shown this once.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpToken {
    /// The bearer token for `POST /mcp`, bound to this person and this conversation.
    pub token: String,
    /// When it stops being accepted (RFC 3339).
    pub expires_at: String,
    /// The MCP endpoint's path on this API's host.
    pub mcp_path: String,
}

/// F-3: where the person confirms a passkey operation.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepUpLink {
    /// The platform's confirmation page for the waiting proposal (open it top-level, in a
    /// new tab: the passkey ceremony runs there, never inside the widget's frame).
    pub url: String,
    /// When the proposal (and the link) expires (RFC 3339).
    pub expires_at: String,
}
