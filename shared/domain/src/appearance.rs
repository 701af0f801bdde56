//! How a tenant's chat greets people and looks (issue 50): a welcome per language (a
//! greeting, the assistant's name, up to four starter prompts) and an accent colour the
//! widget and the confirmation page use.
//!
//! Every text is the tenant's own and is shown to people as it is, so it passes the same
//! checker as a provider's summary (no invisible or direction-changing characters) and a
//! length bound; the accent must keep white text on it readable (WCAG AA, 4.5:1), because
//! the widget's header and primary buttons write white on it.

use crate::language::Language;
use crate::text::SafeText;
use serde::{Deserialize, Serialize};

/// At most this many starter prompts per language.
pub const MAX_STARTERS: usize = 4;
/// The longest greeting, in characters.
pub const MAX_GREETING: usize = 300;
/// The longest assistant name, in characters.
pub const MAX_NAME: usize = 40;
/// The longest starter prompt, in characters.
pub const MAX_STARTER: usize = 80;

/// The welcome a widget shows before the person's first message, in one language.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Welcome {
    /// The first thing the person reads ("Hi! How can we help?").
    pub greeting: String,
    /// The assistant's name, shown in the widget's header; empty: the widget's default.
    #[serde(default)]
    pub assistant_name: String,
    /// Up to four prompts the person can send with one click.
    #[serde(default)]
    pub starters: Vec<String>,
}

/// A tenant's appearance: the accent and the welcome per language (none set: the
/// widget's defaults).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Appearance {
    /// `#rrggbb`, lower case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accent: Option<String>,
    /// The English welcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub en: Option<Welcome>,
    /// The Portuguese welcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pt: Option<Welcome>,
}

impl Appearance {
    /// The welcome in `lang`, if the tenant wrote one.
    #[must_use]
    pub fn welcome(&self, lang: Language) -> Option<&Welcome> {
        match lang {
            Language::En => self.en.as_ref(),
            Language::Pt => self.pt.as_ref(),
        }
    }
}

/// Which value was refused, and why (both languages: the panel shows it in the
/// administrator's, the API in English).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppearanceError {
    /// The accent is not `#rrggbb`.
    AccentFormat,
    /// White text on the accent would be hard to read.
    AccentContrast,
    /// A greeting is missing while the name or starters are given, or too long.
    Greeting,
    /// The assistant's name is too long.
    Name,
    /// More than four starters, or one too long.
    Starters,
    /// A text holds a character that could hide or reorder what people read.
    Characters,
}

impl AppearanceError {
    /// The message in `lang`.
    #[must_use]
    pub fn message(self, lang: Language) -> &'static str {
        use AppearanceError as E;
        match (self, lang) {
            (E::AccentFormat, Language::En) => {
                "The accent must be a colour written #rrggbb, such as #2357c6."
            }
            (E::AccentFormat, Language::Pt) => {
                "A cor de destaque deve ser escrita #rrggbb, como #2357c6."
            }
            (E::AccentContrast, Language::En) => {
                "Choose a darker accent: white text on it must stay readable (contrast at least 4.5:1)."
            }
            (E::AccentContrast, Language::Pt) => {
                "Escolha uma cor de destaque mais escura: um texto branco sobre ela deve continuar legível (contraste de pelo menos 4,5:1)."
            }
            (E::Greeting, Language::En) => {
                "Write a greeting of 1 to 300 characters (it is needed when a name or starters are given)."
            }
            (E::Greeting, Language::Pt) => {
                "Escreva uma saudação de 1 a 300 caracteres (ela é necessária quando há nome ou sugestões)."
            }
            (E::Name, Language::En) => "The assistant's name can have at most 40 characters.",
            (E::Name, Language::Pt) => "O nome do assistente pode ter no máximo 40 caracteres.",
            (E::Starters, Language::En) => {
                "At most four starter prompts, each of at most 80 characters."
            }
            (E::Starters, Language::Pt) => {
                "No máximo quatro sugestões, cada uma com no máximo 80 caracteres."
            }
            (E::Characters, Language::En) => {
                "Remove invisible or direction-changing characters: people must read exactly what is shown."
            }
            (E::Characters, Language::Pt) => {
                "Remova caracteres invisíveis ou que mudam a direção do texto: as pessoas devem ler exatamente o que é mostrado."
            }
        }
    }
}

/// The accent as the tenant typed it, checked: `#rrggbb` (or `rrggbb`), lower-cased; the
/// empty text removes it.
pub fn parse_accent(raw: &str) -> Result<Option<String>, AppearanceError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    let hex = raw.strip_prefix('#').unwrap_or(raw);
    if hex.len() != 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(AppearanceError::AccentFormat);
    }
    let hex = hex.to_ascii_lowercase();
    let channel = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or(0);
    if contrast_with_white([channel(0), channel(2), channel(4)]) < 4.5 {
        return Err(AppearanceError::AccentContrast);
    }
    Ok(Some(format!("#{hex}")))
}

/// The WCAG 2 contrast ratio of white on `rgb`.
fn contrast_with_white(rgb: [u8; 3]) -> f64 {
    let linear = |c: u8| {
        let c = f64::from(c) / 255.0;
        if c <= 0.039_28 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    let l = 0.2126 * linear(rgb[0]) + 0.7152 * linear(rgb[1]) + 0.0722 * linear(rgb[2]);
    1.05 / (l + 0.05)
}

/// A welcome from the tenant's fields, checked; all empty: none (the widget's default).
/// Empty starters are dropped, so a form's unused boxes cost nothing.
pub fn welcome(
    greeting: &str,
    assistant_name: &str,
    starters: &[&str],
) -> Result<Option<Welcome>, AppearanceError> {
    let greeting = greeting.trim();
    let assistant_name = assistant_name.trim();
    let starters: Vec<String> = starters
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    if greeting.is_empty() && assistant_name.is_empty() && starters.is_empty() {
        return Ok(None);
    }
    if greeting.is_empty() || greeting.chars().count() > MAX_GREETING {
        return Err(AppearanceError::Greeting);
    }
    if assistant_name.chars().count() > MAX_NAME {
        return Err(AppearanceError::Name);
    }
    if starters.len() > MAX_STARTERS || starters.iter().any(|s| s.chars().count() > MAX_STARTER) {
        return Err(AppearanceError::Starters);
    }
    let single_line = |s: &str| !s.contains(['\n', '\r']);
    let all = std::iter::once(greeting)
        .chain(std::iter::once(assistant_name))
        .chain(starters.iter().map(String::as_str));
    for text in all {
        if !text.is_empty() && SafeText::check(text).is_err() {
            return Err(AppearanceError::Characters);
        }
    }
    if !single_line(assistant_name) || !starters.iter().all(|s| single_line(s)) {
        return Err(AppearanceError::Characters);
    }
    Ok(Some(Welcome {
        greeting: greeting.to_owned(),
        assistant_name: assistant_name.to_owned(),
        starters,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accent_is_hex_and_keeps_white_text_readable() {
        assert_eq!(parse_accent(" #2357C6 "), Ok(Some("#2357c6".into())));
        assert_eq!(parse_accent("0b5d3b"), Ok(Some("#0b5d3b".into())));
        assert_eq!(parse_accent(""), Ok(None));
        for bad in ["red", "#12345", "#1234567", "#gg0000", "rgb(0,0,0)"] {
            assert_eq!(
                parse_accent(bad),
                Err(AppearanceError::AccentFormat),
                "{bad}"
            );
        }
        // Yellow and light grey leave white text unreadable.
        for pale in ["#ffff00", "#cccccc", "#f0b429"] {
            assert_eq!(
                parse_accent(pale),
                Err(AppearanceError::AccentContrast),
                "{pale}"
            );
        }
    }

    #[test]
    fn a_welcome_is_checked_whole_and_empty_fields_mean_none() {
        assert_eq!(welcome(" ", "", &["", " "]), Ok(None));
        let w = welcome(
            " Hi! ",
            " Ana ",
            &["Where is my order?", "", "Change my address"],
        )
        .unwrap()
        .unwrap();
        assert_eq!(w.greeting, "Hi!");
        assert_eq!(w.assistant_name, "Ana");
        assert_eq!(w.starters, ["Where is my order?", "Change my address"]);
        assert_eq!(welcome("", "Ana", &[]), Err(AppearanceError::Greeting));
        assert_eq!(
            welcome(&"x".repeat(301), "", &[]),
            Err(AppearanceError::Greeting)
        );
        assert_eq!(
            welcome("Hi", &"n".repeat(41), &[]),
            Err(AppearanceError::Name)
        );
        assert_eq!(
            welcome("Hi", "", &["a", "b", "c", "d", "e"]),
            Err(AppearanceError::Starters)
        );
        assert_eq!(
            welcome("Hi", "", &[&"s".repeat(81)]),
            Err(AppearanceError::Starters)
        );
        assert_eq!(
            welcome("Hi\u{202e}", "", &[]),
            Err(AppearanceError::Characters)
        );
        assert_eq!(
            welcome("Hi", "", &["two\nlines"]),
            Err(AppearanceError::Characters)
        );
    }

    #[test]
    fn every_refusal_reads_in_both_languages() {
        use AppearanceError as E;
        for e in [
            E::AccentFormat,
            E::AccentContrast,
            E::Greeting,
            E::Name,
            E::Starters,
            E::Characters,
        ] {
            assert_ne!(e.message(Language::En), e.message(Language::Pt));
        }
    }

    #[test]
    fn the_welcome_of_a_language_is_its_own() {
        let a = Appearance {
            accent: None,
            en: welcome("Hi", "", &[]).unwrap(),
            pt: None,
        };
        assert_eq!(
            a.welcome(Language::En).map(|w| w.greeting.as_str()),
            Some("Hi")
        );
        assert_eq!(a.welcome(Language::Pt), None);
    }
}
