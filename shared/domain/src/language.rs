//! The two languages the platform writes in (S-4): English and Brazilian Portuguese, and
//! a text written in both ([`Said`], [`said!`]). Apart from the texts themselves
//! ([`crate::texts`]) so that every rule's message can name a language without the
//! chat's fixed texts.

/// The language of a tenant's fixed texts.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Language {
    /// English (default).
    #[default]
    #[serde(rename = "en")]
    En,
    /// Portuguese.
    #[serde(rename = "pt")]
    Pt,
}

impl Language {
    /// Both languages.
    pub const ALL: [Self; 2] = [Self::En, Self::Pt];

    /// The BCP 47 tag the APIs and the panel show (S-4): `en` or `pt-BR`.
    pub fn tag(self) -> &'static str {
        match self {
            Self::En => "en",
            Self::Pt => "pt-BR",
        }
    }

    /// The language a tag names: `en`, `pt-BR` (or `pt`), any case; `None` for any other.
    pub fn from_tag(tag: &str) -> Option<Self> {
        match tag.to_ascii_lowercase().as_str() {
            "en" => Some(Self::En),
            "pt-br" | "pt" => Some(Self::Pt),
            _ => None,
        }
    }
}

/// A rule's refusal or reason in both languages (issue 50: the panel speaks the
/// administrator's language). Its English is its `Display`, the text the APIs and the logs
/// keep, so only the Portuguese is written apart.
pub trait Translated: std::fmt::Display {
    /// The Portuguese text.
    fn portuguese(&self) -> String;

    /// The text in `lang`.
    fn message(&self, lang: Language) -> String {
        match lang {
            Language::En => self.to_string(),
            Language::Pt => self.portuguese(),
        }
    }

    /// Both texts, for a [`Said`] that quotes it.
    fn said(&self) -> Said {
        Said::new(self.to_string(), self.portuguese())
    }
}

/// A text the platform writes for an administrator or a provider engineer, in English (the
/// APIs', and the English panel's) and in Brazilian Portuguese (the Portuguese panel's):
/// issue 50, every refusal and every certification reason in the administrator's language.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Said {
    /// English.
    pub en: String,
    /// Brazilian Portuguese.
    pub pt: String,
}

impl Said {
    /// Both texts.
    pub fn new(en: impl Into<String>, pt: impl Into<String>) -> Self {
        Self {
            en: en.into(),
            pt: pt.into(),
        }
    }

    /// The text `of` writes in each language (a rule's `message(lang)`).
    pub fn each<S: Into<String>>(of: impl Fn(Language) -> S) -> Self {
        Self::new(of(Language::En), of(Language::Pt))
    }

    /// Words the platform did not write (the provider's own, a library's), shown as they
    /// are in both languages: only ever quoted inside a text of [`said!`].
    pub fn verbatim(text: impl Into<String>) -> Self {
        let text = text.into();
        Self {
            en: text.clone(),
            pt: text,
        }
    }

    /// The text in `lang`.
    #[must_use]
    pub fn get(&self, lang: Language) -> &str {
        match lang {
            Language::En => &self.en,
            Language::Pt => &self.pt,
        }
    }

    /// Several texts joined by `sep` in each language.
    #[must_use]
    pub fn join(parts: &[Self], sep: &str) -> Self {
        let pick = |lang| {
            parts
                .iter()
                .map(|p| p.get(lang))
                .collect::<Vec<_>>()
                .join(sep)
        };
        Self::new(pick(Language::En), pick(Language::Pt))
    }
}

/// A value a [`said!`] text is written with: the same words in both languages (a name, a
/// number, an id), or a [`Said`] (its own text in each).
pub trait InBoth {
    /// The value's words in `lang`.
    fn in_lang(&self, lang: Language) -> String;
}

impl<T: std::fmt::Display + ?Sized> InBoth for T {
    fn in_lang(&self, _: Language) -> String {
        self.to_string()
    }
}

impl InBoth for Said {
    fn in_lang(&self, lang: Language) -> String {
        self.get(lang).to_owned()
    }
}

/// A [`Said`] from an English and a Portuguese format string; `name = value` arguments are
/// each written in the text's own language ([`InBoth`]), other `{names}` are captured as
/// `format!` captures them.
#[macro_export]
macro_rules! said {
    ($en:literal, $pt:literal $(, $name:ident = $val:expr)* $(,)?) => {{
        #[allow(unused_imports)]
        use $crate::language::InBoth as _;
        $(let $name = &$val;)*
        $crate::language::Said::new(
            {
                $(let $name = $name.in_lang($crate::language::Language::En);)*
                format!($en)
            },
            {
                $(let $name = $name.in_lang($crate::language::Language::Pt);)*
                format!($pt)
            },
        )
    }};
}
