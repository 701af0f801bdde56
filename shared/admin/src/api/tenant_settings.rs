//! The tenant's own settings (S-4).

use super::*;

/// The tenant's own settings (S-4).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TenantSettings {
    /// The tenant's display name (set by the operator).
    pub name: String,
    /// The default language of the chat's fixed texts, its widget and the model's
    /// instructions: `en` or `pt-BR`. A case keeps the language it was opened with.
    #[schema(example = "pt-BR")]
    pub language: String,
    /// where the confirmation page sends a person to sign in (your sign-in hand-off,
    /// widget guide “Confirmation page”); null until set.
    #[serde(rename = "signInUrl")]
    #[schema(example = "https://www.example.com/countersign/sign-in")]
    pub sign_in_url: Option<String>,
    /// days a conversation is kept after its last activity (1 to 3650); null until
    /// set (the deployment's default applies, if it has one).
    #[serde(rename = "retentionDays")]
    #[schema(example = 90)]
    pub retention_days: Option<u32>,
    /// Issue 50: the accent colour of the widget and the confirmation page (`#rrggbb`;
    /// white text on it stays readable); null until set.
    #[schema(example = "#0b5d3b")]
    pub accent: Option<String>,
    /// Issue 50: what the widget shows before the person's first message, per language;
    /// a language without one gets the widget's default.
    pub welcome: WelcomeSettings,
}

/// The welcome per language (issue 50). Read from a JSON object only (serde would take
/// an array for a struct).
#[derive(Debug, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, try_from = "ObjectOnly")]
pub struct WelcomeSettings {
    /// In English conversations.
    #[serde(default)]
    pub en: Option<WelcomeFields>,
    /// In Portuguese conversations.
    #[serde(default, rename = "pt-BR", alias = "pt")]
    pub pt: Option<WelcomeFields>,
}

/// One language's welcome (issue 50). All empty removes it.
#[derive(Debug, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase", try_from = "ObjectOnly")]
pub struct WelcomeFields {
    /// 1–300 characters ("Hi! How can we help?").
    pub greeting: String,
    /// At most 40 characters; empty: the widget's default ("Support").
    #[serde(default)]
    pub assistant_name: String,
    /// Up to four prompts of at most 80 characters the person sends with one click.
    #[serde(default)]
    pub starters: Vec<String>,
}

/// A JSON object, the only shape [`WelcomeSettings`] and [`WelcomeFields`] are read from.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct ObjectOnly(serde_json::Map<String, serde_json::Value>);

/// The same types without the object check, to read the checked object into.
mod plain {
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Settings {
        #[serde(default)]
        pub(super) en: Option<super::ObjectOnly>,
        #[serde(default, rename = "pt-BR", alias = "pt")]
        pub(super) pt: Option<super::ObjectOnly>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub(super) struct Fields {
        pub(super) greeting: String,
        #[serde(default)]
        pub(super) assistant_name: String,
        #[serde(default)]
        pub(super) starters: Vec<String>,
    }
}

impl TryFrom<ObjectOnly> for WelcomeSettings {
    type Error = serde_json::Error;
    fn try_from(o: ObjectOnly) -> Result<Self, Self::Error> {
        let p: plain::Settings = serde_json::from_value(serde_json::Value::Object(o.0))?;
        Ok(Self {
            en: p.en.map(WelcomeFields::try_from).transpose()?,
            pt: p.pt.map(WelcomeFields::try_from).transpose()?,
        })
    }
}

impl TryFrom<ObjectOnly> for WelcomeFields {
    type Error = serde_json::Error;
    fn try_from(o: ObjectOnly) -> Result<Self, Self::Error> {
        let p: plain::Fields = serde_json::from_value(serde_json::Value::Object(o.0))?;
        Ok(Self {
            greeting: p.greeting,
            assistant_name: p.assistant_name,
            starters: p.starters,
        })
    }
}

impl From<&countersign_domain::appearance::Welcome> for WelcomeFields {
    fn from(w: &countersign_domain::appearance::Welcome) -> Self {
        Self {
            greeting: w.greeting.clone(),
            assistant_name: w.assistant_name.clone(),
            starters: w.starters.clone(),
        }
    }
}

/// `PUT settings` body: each member absent (or null) is left as it is; at least one is
/// given.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantSettingsInput {
    /// The default language of new conversations.
    #[serde(default)]
    pub language: Option<LanguageInput>,
    /// the sign-in hand-off URL (`https`); the empty string removes it.
    #[serde(default, rename = "signInUrl")]
    pub sign_in_url: Option<String>,
    /// days a conversation is kept after its last activity, 1 to 3650.
    #[serde(
        default,
        rename = "retentionDays",
        deserialize_with = "countersign_http::optional_whole_number"
    )]
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 3650)]
    pub retention_days: Option<i64>,
    /// Issue 50: the accent (`#rrggbb`); the empty string removes it.
    #[serde(default)]
    pub accent: Option<String>,
    /// Issue 50: the welcome of each language given (the other kept as it is).
    #[serde(default)]
    pub welcome: Option<WelcomeSettings>,
}

/// The tenant's appearance with `body`'s changes, checked whole (issue 50).
fn appearance_of(
    tenant: &Tenant,
    body: &TenantSettingsInput,
) -> Result<countersign_domain::appearance::Appearance, ApiError> {
    use countersign_domain::appearance::{parse_accent, welcome};
    use countersign_domain::texts::Language::En;
    let mut a = tenant.appearance.clone();
    if let Some(raw) = &body.accent {
        a.accent = parse_accent(raw).map_err(|e| ApiError::validation("accent", e.message(En)))?;
    }
    let checked = |field: &str, w: &WelcomeFields| {
        let starters: Vec<&str> = w.starters.iter().map(String::as_str).collect();
        welcome(&w.greeting, &w.assistant_name, &starters)
            .map_err(|e| ApiError::validation(field, e.message(En)))
    };
    if let Some(w) = &body.welcome {
        if let Some(en) = &w.en {
            a.en = checked("welcome.en", en)?;
        }
        if let Some(pt) = &w.pt {
            a.pt = checked("welcome.pt-BR", pt)?;
        }
    }
    Ok(a)
}

/// A language of the chat's fixed texts (S-4), as a BCP 47 tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
pub enum LanguageInput {
    /// English.
    #[serde(rename = "en")]
    En,
    /// Brazilian Portuguese (`pt` is read as this too).
    #[serde(rename = "pt-BR", alias = "pt")]
    PtBr,
}

pub(super) fn settings_view(tenant: &Tenant) -> TenantSettings {
    TenantSettings {
        name: tenant.name.clone(),
        language: tenant.language.tag().to_owned(),
        sign_in_url: tenant.sign_in_url.clone(),
        retention_days: tenant.retention_days.map(RetentionDays::days),
        accent: tenant.appearance.accent.clone(),
        welcome: WelcomeSettings {
            en: tenant.appearance.en.as_ref().map(WelcomeFields::from),
            pt: tenant.appearance.pt.as_ref().map(WelcomeFields::from),
        },
    }
}

/// The tenant's settings (S-4).
#[utoipa::path(get, path = "/api/admin/tenants/{id}/settings", tag = "tenant", security(("adminKey" = [])),
    params(TenantPath),
    responses((status = 200, body = TenantSettings), GuardErrors))]
pub(super) async fn get_settings(TenantAdmin(tenant): TenantAdmin) -> Json<TenantSettings> {
    Json(settings_view(&tenant))
}

/// Sets the tenant's default language (S-4), audited as `tenant.language`, its sign-in
/// hand-off URL, audited as `tenant.sign_in_url`, and its retention, audited as
/// `tenant.retention_days`, and its accent and welcome (issue 50), audited as
/// `tenant.appearance`; every value is checked before anything is saved. New cases take the language; open
/// cases keep theirs.
#[utoipa::path(put, path = "/api/admin/tenants/{id}/settings", tag = "tenant", security(("adminKey" = [])),
    params(TenantPath), request_body = TenantSettingsInput,
    responses((status = 200, body = TenantSettings), (status = 400, body = ErrorBody), (status = 413, body = ErrorBody), GuardErrors))]
pub(super) async fn put_settings(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
    Json(body): Json<TenantSettingsInput, MAX_BODY_BYTES>,
) -> Result<Json<TenantSettings>, ApiError> {
    if body.language.is_none()
        && body.sign_in_url.is_none()
        && body.retention_days.is_none()
        && body.accent.is_none()
        && body.welcome.is_none()
    {
        return Err(ApiError::validation(
            "language",
            "name at least one setting to change: language, signInUrl, retentionDays, accent or welcome",
        ));
    }
    let appearance = appearance_of(&tenant, &body)?;
    let retention = match body.retention_days {
        Some(days) => Some(
            RetentionDays::new(days)
                .map_err(|e| ApiError::validation("retentionDays", e.to_string()))?,
        ),
        None => None,
    };
    // Checked before anything is written: a bad URL saves nothing.
    let sign_in_url = match &body.sign_in_url {
        Some(raw) => Some(
            crate::tenants::parse_sign_in_url(raw, state.url_policy)
                .map_err(|m| ApiError::validation("signInUrl", format!("signInUrl: {m}")))?,
        ),
        None => None,
    };
    let language = body.language.map(|language| match language {
        LanguageInput::En => countersign_domain::texts::Language::En,
        LanguageInput::PtBr => countersign_domain::texts::Language::Pt,
    });
    let change = crate::tenants::SettingsChange {
        language,
        sign_in_url,
        retention_days: retention,
        appearance: Some(appearance),
    };
    let tenant = crate::tenants::save_settings(&state, &tenant, change).await?;
    Ok(Json(settings_view(&tenant)))
}
