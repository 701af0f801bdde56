//! What the certification form starts from (issue 28): sample arguments for each allowed
//! consultation, read from its approved input schema, and each check said in words.

use countersign_domain::config::McpConfig;
use countersign_domain::said;
use serde_json::{Map, Value};

/// Sample arguments per allowed consultation, from each one's approved input schema:
/// every required property with a value of its type — the schema's example, default or
/// first allowed value when it gives one, else an empty one to fill in — so the
/// administrator starts from the shape each tool needs rather than from `{}`.
pub(super) fn consultation_samples(config: &McpConfig) -> String {
    let mut samples = Map::new();
    for tool in &config.allowed_tools {
        let schema = config
            .approved
            .get(tool.as_str())
            .and_then(|form| serde_json::from_str::<Value>(form).ok())
            .and_then(|d| d.get("inputSchema").cloned())
            .unwrap_or(Value::Null);
        samples.insert(tool.as_str().to_owned(), sample_of(&schema));
    }
    serde_json::to_string_pretty(&Value::Object(samples)).unwrap_or_else(|_| "{}".into())
}

/// Issue 50: sample arguments per configured operation, from the `inputSchema` of the
/// server's tool named like it (decision 0024, the schema a preparation is checked
/// against), `{}` for one the server does not describe.
pub(super) fn operation_samples(
    config: &McpConfig,
    live: Option<&[countersign_domain::ports::ProviderTool]>,
) -> String {
    let mut samples = Map::new();
    for op in &config.action_policy.operations {
        let schema = live
            .unwrap_or_default()
            .iter()
            .find(|t| t.name.as_str() == op.as_str())
            .and_then(|t| t.descriptor.get("inputSchema"))
            .unwrap_or(&Value::Null);
        samples.insert(op.as_str().to_owned(), sample_of(schema));
    }
    serde_json::to_string(&Value::Object(samples)).unwrap_or_else(|_| "{}".into())
}

/// An object with each required property of `schema`.
fn sample_of(schema: &Value) -> Value {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties = schema.get("properties");
    let mut out = Map::new();
    for name in required {
        let property = properties.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
        out.insert(name.to_owned(), value_of(property));
    }
    Value::Object(out)
}

fn value_of(property: &Value) -> Value {
    let given = property
        .get("examples")
        .and_then(|e| e.get(0))
        .or_else(|| property.get("default"))
        .or_else(|| property.get("enum").and_then(|e| e.get(0)))
        .or_else(|| property.get("const"));
    if let Some(v) = given {
        return v.clone();
    }
    match property.get("type").and_then(Value::as_str) {
        Some("integer" | "number") => property.get("minimum").cloned().unwrap_or(Value::from(0)),
        Some("boolean") => Value::Bool(false),
        Some("array") => Value::Array(Vec::new()),
        Some("object") => sample_of(property),
        _ => Value::String(String::new()),
    }
}

/// What a check of the certification checked, in the administrator's words (its id stays
/// on the row for tooling), in the request's language (S-4).
pub(super) fn describe_check(id: &str) -> String {
    let parts: Vec<&str> = id.split('.').collect();
    let said = match parts.as_slice() {
        ["tools", "list"] => said!(
            "Your server lists its tools",
            "Seu servidor lista as ferramentas"
        ),
        ["consultation", name, "listed"] => said!(
            "{name} is listed by your server",
            "{name} é listada pelo seu servidor"
        ),
        ["consultation", name, "call"] => said!(
            "{name} answers the sample arguments as its output schema says",
            "{name} responde aos argumentos de exemplo como diz o seu esquema de saída"
        ),
        ["consultation", name, "other_person"] => said!(
            "{name} refuses the second person the first person's resource",
            "{name} recusa à segunda pessoa o recurso da primeira"
        ),
        ["consultation", name, "wrong_token"] => said!(
            "{name} refuses a call with a wrong service token",
            "{name} recusa uma chamada com um token de serviço errado"
        ),
        ["actions", "tools"] => said!(
            "Your server offers the action tools",
            "Seu servidor oferece as ferramentas de ação"
        ),
        ["actions", "wrong_token"] => said!(
            "The action tools refuse a wrong service token",
            "As ferramentas de ação recusam um token de serviço errado"
        ),
        ["actions", "status"] => said!(
            "The action status query answers",
            "A consulta de situação de ação responde"
        ),
        ["actions", "prepare", op] => said!(
            "{op} is prepared with a summary to show",
            "{op} é preparada com um resumo para mostrar"
        ),
        ["actions", "execute", op] => said!(
            "{op} is carried out with a valid proof (the consented test write)",
            "{op} é executada com uma prova válida (a escrita de teste consentida)"
        ),
        ["proof", what] => {
            let (en, pt) = proof_fault(what);
            said!("A proof {en} is refused", "Uma prova {pt} é recusada")
        }
        _ => return id.replace(['.', '_'], " "),
    };
    said.get(super::i18n::lang()).to_owned()
}

/// A bad proof's fault, in English and in Portuguese.
fn proof_fault(what: &str) -> (&'static str, &'static str) {
    match what {
        "none" => ("that is missing", "ausente"),
        "alg_none" => ("with no signature (alg none)", "sem assinatura (alg none)"),
        "embedded_jwk" => (
            "carrying its own key (jwk header)",
            "que traz a própria chave (cabeçalho jwk)",
        ),
        "jku" => (
            "pointing to another key set (jku header)",
            "que aponta para outro conjunto de chaves (cabeçalho jku)",
        ),
        "expired" => ("that has expired", "expirada"),
        "long_lifetime" => ("that lives too long", "com validade longa demais"),
        "other_key" => ("signed by another key", "assinada por outra chave"),
        "unknown_kid" => ("naming an unknown key", "que nomeia uma chave desconhecida"),
        "wrong_action_id" => ("for another action", "de outra ação"),
        "wrong_arguments_hash" => ("for other arguments", "de outros argumentos"),
        "wrong_aud" => ("for another audience", "de outra audiência"),
        "wrong_conversation" => ("from another conversation", "de outra conversa"),
        "wrong_iss" => ("from another issuer", "de outro emissor"),
        "wrong_operation" => ("for another operation", "de outra operação"),
        "wrong_sub" => ("for another person", "de outra pessoa"),
        "wrong_summary_hash" => ("for another summary", "de outro resumo"),
        "wrong_tenant" => ("for another tenant", "de outro tenant"),
        "wrong_typ" => ("of another type", "de outro tipo"),
        _ => ("with a fault", "com um defeito"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn required_properties_get_a_value_of_their_type() {
        let schema = json!({"type": "object", "required": ["sessionId", "limit", "full", "kind"],
            "properties": {"sessionId": {"type": "string"}, "limit": {"type": "integer", "minimum": 1},
                "full": {"type": "boolean"}, "kind": {"type": "string", "enum": ["a", "b"]},
                "optional": {"type": "string"}}});
        assert_eq!(
            sample_of(&schema),
            json!({"sessionId": "", "limit": 1, "full": false, "kind": "a"})
        );
        assert_eq!(sample_of(&json!({"type": "object"})), json!({}));
    }

    #[test]
    fn checks_are_said_in_words() {
        assert_eq!(
            describe_check("consultation.get_user_cars.wrong_token"),
            "get_user_cars refuses a call with a wrong service token"
        );
        assert_eq!(
            describe_check("proof.alg_none"),
            "A proof with no signature (alg none) is refused"
        );
        assert!(!describe_check("actions.execute.reassign_session_car").contains('.'));
    }
}
