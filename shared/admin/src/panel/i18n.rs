//! The panel in the administrator's language (S-4): English or Brazilian Portuguese,
//! switched by a link on every page and remembered in a cookie for a year; until one is
//! chosen, `Accept-Language` decides. A request's language is set once by [`middleware`]
//! (a task-local), so every view reads it without it being passed through each call.
//!
//! Texts are looked up by their English wording: [`t`] gives the Portuguese one when the
//! request's language is Portuguese, and a unit test checks that every `t("…")` in the
//! panel's sources has one, so a new English text cannot ship untranslated. The use
//! cases' refusals carry both languages (`Said`; the configuration rules' reasons and
//! field labels come from the domain, decision 0048 as revisited by 0078): the API
//! answers the English, the panel the administrator's; the API's `code`s never change.

use crate::state::AdminError;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use countersign_domain::texts::Language;

tokio::task_local! {
    static LANG: Language;
}

/// The cookie that remembers the administrator's choice (not a secret; readable by the
/// panel only: `HttpOnly`, `SameSite=Lax`).
pub const COOKIE: &str = "countersign-panel-lang";

/// The language of the request being answered (English outside one).
pub fn lang() -> Language {
    LANG.try_with(|l| *l).unwrap_or(Language::En)
}

/// `en` in the request's language.
pub fn t(en: &'static str) -> &'static str {
    match lang() {
        Language::En => en,
        Language::Pt => portuguese(en).unwrap_or(en),
    }
}

/// The language of a request: the remembered choice, else `Accept-Language`, else English.
pub fn of_request(headers: &HeaderMap) -> Language {
    let chosen = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .and_then(|(_, v)| Language::from_tag(v));
    chosen.unwrap_or_else(|| {
        if countersign_http::language::prefers_portuguese(headers) {
            Language::Pt
        } else {
            Language::En
        }
    })
}

/// Sets the request's language for everything that answers it.
pub async fn middleware(req: Request, next: Next) -> Response {
    let lang = of_request(req.headers());
    LANG.scope(lang, next.run(req)).await
}

/// `GET /admin/language?to=pt-BR|en`: remembers the choice and goes back to the page it
/// was made on (its same-origin `Referer`; the panel's home otherwise). A plain link, so
/// it works without script; it changes nothing but the cookie.
pub async fn switch(
    axum::extract::State(state): axum::extract::State<crate::state::AdminState>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    let to = uri
        .query()
        .into_iter()
        .flat_map(|q| url::form_urlencoded::parse(q.as_bytes()))
        .find(|(k, _)| k == "to")
        .and_then(|(_, v)| Language::from_tag(&v));
    let Some(to) = to else {
        return (StatusCode::BAD_REQUEST, "to: en or pt-BR").into_response();
    };
    let back = back_to(&headers).unwrap_or_else(|| "/admin".to_owned());
    let mut res = axum::response::Redirect::to(&back).into_response();
    // Secure outside the local stack (plain http on loopback), like the session's.
    let secure = if super::session::local(&state) {
        ""
    } else {
        "; Secure"
    };
    let cookie = format!(
        "{COOKIE}={}; Path=/admin; Max-Age=31536000; HttpOnly; SameSite=Lax{secure}",
        to.tag()
    );
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        res.headers_mut().insert(header::SET_COOKIE, v);
    }
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

/// The panel page the switch was clicked on: a path under `/admin` of the same host, never
/// another site (no open redirect).
fn back_to(headers: &HeaderMap) -> Option<String> {
    let referer = headers.get(header::REFERER)?.to_str().ok()?;
    let host = headers.get(header::HOST)?.to_str().ok()?;
    let url = url::Url::parse(referer).ok()?;
    let same_host = match url.port() {
        Some(p) => format!("{}:{p}", url.host_str()?) == host,
        None => url.host_str()? == host,
    };
    let path = url.path();
    let ours = path == "/admin" || path.starts_with("/admin/");
    (same_host && ours && !path.starts_with("/admin/language")).then(|| match url.query() {
        Some(q) => format!("{path}?{q}"),
        None => path.to_owned(),
    })
}

/// An error of the use cases as the panel shows it.
pub fn error(e: &AdminError) -> String {
    if lang() == Language::En {
        return e.to_string();
    }
    match e {
        AdminError::ProviderUnreachable(cause) => format!(
            "não foi possível ler o tools/list do seu servidor para verificar as ferramentas permitidas ({cause}); nada foi salvo"
        ),
        AdminError::Busy {
            what,
            retry_after_secs,
        } => format!(
            "já há uma execução ({what}) em andamento para este tenant; tente de novo em {retry_after_secs} s"
        ),
        AdminError::PlatformBusy {
            what,
            retry_after_secs,
        } => format!(
            "a plataforma já está com o máximo de execuções ({what}) ao mesmo tempo, somando todos os tenants; nada foi iniciado: tente de novo em {retry_after_secs} s"
        ),
        AdminError::QueueFull {
            what,
            retry_after_secs,
        } => format!(
            "este tenant já tem o máximo de pedidos ({what}) na fila; nada foi registrado: tente de novo em {retry_after_secs} s"
        ),
        AdminError::SigningUnavailable => {
            "as ações não podem ser ativadas: a plataforma não tem uma chave de assinatura instalada".into()
        }
        AdminError::CertificationRequired => {
            "as ações não podem ser ativadas: rode antes a certificação destas configurações, e ela precisa passar (uma mudança da URL do servidor, do token de serviço, da audiência ou das operações pede uma nova execução)".into()
        }
        AdminError::StepUpNotCertified(op) => format!(
            "{op} ainda não pode exigir uma passkey: uma operação só passa a exigir passkey depois de uma certificação que enviou provas com step-up, e a certificação ainda não as envia"
        ),
        AdminError::NotConfigured => {
            "salve antes a configuração MCP: a certificação verifica a configuração salva".into()
        }
        AdminError::NoCertification => "nenhuma certificação foi executada ainda".into(),
        AdminError::Conflict => {
            "a configuração mudou enquanto isso; recarregue e tente de novo".into()
        }
        AdminError::NoSuchAction => {
            "não existe essa ação pendente de resolução (ela pode ter sido resolvida enquanto isso)".into()
        }
        AdminError::StillRunning(secs) => format!(
            "a ação começou há menos de {secs} segundos e ainda pode estar em execução; tente mais tarde"
        ),
        AdminError::NoSuchCredential => "não existe essa credencial do widget".into(),
        AdminError::AlreadyReplaced(at) => format!(
            "esta credencial já foi substituída; o período de carência termina em {at}"
        ),
        AdminError::Unfinished(_) => {
            "as configurações foram salvas e estão em vigor: nenhuma proposta preparada com as antigas pode ser executada; algumas dessas propostas ainda não foram canceladas com um aviso à pessoa; salve de novo para concluir".into()
        }
        AdminError::Unavailable { .. } => {
            "um serviço da plataforma está indisponível; nada foi alterado".into()
        }
        // Invalid and NotConsultations carry both languages and are placed by field
        // (`errors_of`); anything else is the English text.
        other => other.to_string(),
    }
}

/// Each English panel text with its Portuguese.
const PORTUGUESE: &[(&str, &str)] = &[
    (" (test user ", " (pessoa de teste "),
    (" at ", " em "),
    (
        " match these filters on this page of the trail",
        " corresponde a estes filtros nesta página da trilha",
    ),
    (
        " on this host: follow it and key rotations need nothing from you",
        " neste host: siga-o e as rotações de chave não exigem nada de você",
    ),
    (" s ago)", " s atrás)"),
    (" · Countersign admin", " · Administração Countersign"),
    (
        " — it does not cover the settings saved now: run it again",
        " — ela não cobre as configurações salvas agora: rode-a de novo",
    ),
    ("(no longer listed)", "(não é mais listada)"),
    (", action ", ", ação "),
    (", configuration version ", ", versão da configuração "),
    (", confirmed ", ", confirmada em "),
    (", conversation ", ", conversa "),
    (", created ", ", criada em "),
    ("1 hour", "1 hora"),
    ("24 hours", "24 horas"),
    ("7 days", "7 dias"),
    (
        "A new credential with the same allowed origins is created and its secret shown once. This one keeps working for the grace period you choose, so your site keeps working while you deploy the new secret to your backend; then it is refused and removed.",
        "Uma nova credencial com as mesmas origens permitidas é criada e seu segredo é mostrado uma vez. Esta continua funcionando pelo período de carência que você escolher, para o seu site seguir funcionando enquanto você instala o novo segredo no seu backend; depois ela é recusada e removida.",
    ),
    (
        "A platform service is unavailable; nothing was changed. Try again shortly.",
        "Um serviço da plataforma está indisponível; nada foi alterado. Tente de novo em instantes.",
    ),
    (
        "Actions are suspended: the latest certification run saw your server accept a bad proof. Fix the proof checks it names, then run the certification again.",
        "As ações estão suspensas: a última certificação viu o seu servidor aceitar uma prova inválida. Corrija as verificações de prova que ela aponta e rode a certificação de novo.",
    ),
    (
        "Actions enabled (writes need the person's confirmation)",
        "Ações ativadas (as escritas precisam da confirmação da pessoa)",
    ),
    (
        "Actions stop and pending proposals are cancelled",
        "As ações param e as propostas pendentes são canceladas",
    ),
    (
        "Actions whose result your server never confirmed. Their conversations cannot start another action or be closed until settled. Check your own system, then record what it shows: the person is told, and nothing is executed again.",
        "Ações cujo resultado o seu servidor nunca confirmou. As conversas delas não podem iniciar outra ação nem ser encerradas até a resolução. Verifique no seu próprio sistema e registre o que ele mostra: a pessoa é avisada e nada é executado de novo.",
    ),
    ("Admin key", "Chave de administração"),
    ("Administrator (key", "Administrador (chave"),
    ("Allowed origins", "Origens permitidas"),
    (
        "Allowed origins, one per line (e.g. https://shop.example.com)",
        "Origens permitidas, uma por linha (ex.: https://loja.exemplo.com.br)",
    ),
    ("Approve this change", "Aprovar esta mudança"),
    ("Approved", "Aprovada"),
    (
        "Approved: the tool is offered again as your server lists it now.",
        "Aprovada: a ferramenta volta a ser oferecida como o seu servidor a lista agora.",
    ),
    ("Audience", "Audiência"),
    ("Audit trail", "Trilha de auditoria"),
    (
        "Back to the Tenant MCP settings",
        "Voltar às configurações do MCP do tenant",
    ),
    ("Back", "Voltar"),
    ("Cancel", "Cancelar"),
    ("Certification", "Certificação"),
    ("Changed since approved", "Mudou desde a aprovação"),
    ("Changes", "Mudanças"),
    ("Chat language", "Idioma do chat"),
    ("Sign-in hand-off URL", "URL de entrada (hand-off)"),
    (
        "When an assistant outside the chat prepares a change, the person confirms it on the platform's confirmation page. ",
        "Quando um assistente fora do chat prepara uma alteração, a pessoa a confirma na página de confirmação da plataforma. ",
    ),
    (
        "The page sends them here to sign in, with return_to and nonce; your backend signs them in and sends them to return_to with ?token= a widget token for the same person carrying that nonce, valid at most 5 minutes (widget guide, “Confirmation page”). ",
        "A página a envia para cá para entrar, com return_to e nonce; o seu backend faz a entrada e a envia para return_to com ?token= um token de widget da mesma pessoa contendo esse nonce, válido por no máximo 5 minutos (guia do widget, “Confirmation page”). ",
    ),
    (
        "Leave it empty to have people confirm in the chat only.",
        "Deixe vazio para que as pessoas confirmem apenas no chat.",
    ),
    ("Retention (days)", "Retenção (dias)"),
    ("Accent colour", "Cor de destaque"),
    (
        "The latest certification run on these settings failed: fix on your server what it names, then run it again.",
        "A última execução da certificação nestas configurações falhou: corrija no seu servidor o que ela aponta e rode-a de novo.",
    ),
    (": cannot be a consultation", ": não pode ser uma consulta"),
    (
        "Your server's tools/list could not be read: check its URL, its service token and that it is up.",
        "Não foi possível ler o tools/list do seu servidor: confira a URL, o token de serviço e se ele está no ar.",
    ),
    (
        "Your server's tools are loaded: choose the consultations, then save.",
        "As ferramentas do seu servidor foram carregadas: escolha as consultas e salve.",
    ),
    (
        "is allowed, but your server's own description says never to allow it:",
        "está permitida, mas a descrição do próprio servidor diz para nunca permiti-la:",
    ),
    (
        "Untick it unless you are sure it reaches only the person's own data.",
        "Desmarque-a, a não ser que tenha certeza de que ela só alcança os dados da própria pessoa.",
    ),
    (
        "Its server says never to allow it.",
        "O servidor dela diz para nunca permiti-la.",
    ),
    ("Passed: ", "Passou: "),
    ("Failed: ", "Falhou: "),
    ("Did not pass: ", "Não passou: "),
    (" checks passed, ", " verificações passaram, "),
    (" failed, ", " falharam, "),
    (" skipped.", " foram puladas."),
    (
        "This run covers the saved settings: people can start countersigning changes as soon as you enable actions.",
        "Esta execução cobre as configurações salvas: as pessoas podem começar a confirmar alterações assim que você ativar as ações.",
    ),
    ("Enable actions now", "Ativar as ações agora"),
    ("Overview", "Visão geral"),
    (
        "(save your MCP server first)",
        "(salve antes o seu servidor MCP)",
    ),
    ("Your MCP server", "O seu servidor MCP"),
    ("Not connected yet.", "Ainda não conectado."),
    (
        "On: people can countersign changes.",
        "Ativadas: as pessoas podem confirmar alterações.",
    ),
    (
        "Off: the assistant only consults.",
        "Desativadas: o assistente só consulta.",
    ),
    ("Last certification", "Última certificação"),
    ("Not run yet.", "Ainda não executada."),
    ("Passed", "Passou"),
    ("Failed", "Falhou"),
    (
        "it does not cover the saved settings",
        "ela não cobre as configurações salvas",
    ),
    ("See the result", "Ver o resultado"),
    (
        "Your server checks each proof against these three values (provider guide, §6 “The proof”).",
        "O seu servidor confere cada prova com estes três valores (guia do provedor, §6 “The proof”).",
    ),
    ("Erase…", "Apagar…"),
    ("Erase ", "Apagar "),
    (
        "? This cannot be undone: every conversation of this person is deleted, and their personal data in the audit trail becomes unreadable. A receipt signed with your audit checkpoint key is made.",
        "? Isto não pode ser desfeito: todas as conversas desta pessoa são apagadas, e os dados pessoais dela na trilha de auditoria ficam ilegíveis. É gerado um recibo assinado com a sua chave de checkpoint de auditoria.",
    ),
    ("Erase this person", "Apagar esta pessoa"),
    ("Keep them", "Manter a pessoa"),
    ("Download", "Baixar"),
    (
        "Give the test person's user id, as your site names them.",
        "Informe o id de usuário da pessoa de teste, como o seu site o nomeia.",
    ),
    (
        "Write a JSON object here (an argument name and value in braces), or leave it empty.",
        "Escreva aqui um objeto JSON (um nome de argumento e o valor entre chaves), ou deixe vazio.",
    ),
    (
        "Each entry is a tool's name with a JSON object of its arguments.",
        "Cada item é o nome de uma ferramenta com um objeto JSON dos seus argumentos.",
    ),
    (
        "Each entry is an operation's name with a JSON object of its arguments.",
        "Cada item é o nome de uma operação com um objeto JSON dos seus argumentos.",
    ),
    (
        "Give the second test person's user id, as your site names them.",
        "Informe o id de usuário da segunda pessoa de teste, como o seu site o nomeia.",
    ),
    (
        "Name configured operations, separated by commas.",
        "Indique operações configuradas, separadas por vírgulas.",
    ),
    (
        "The colour of the widget's header and main buttons and of the confirmation page, written #rrggbb. White text is written on it, so it must be dark enough to read. Empty keeps the default blue; your page may still choose another for its widget.",
        "A cor do cabeçalho e dos botões principais do widget e da página de confirmação, escrita #rrggbb. Um texto branco é escrito sobre ela, então ela deve ser escura o bastante para ser lida. Vazia mantém o azul padrão; a sua página ainda pode escolher outra para o widget.",
    ),
    (
        "Welcome in English conversations",
        "Boas-vindas nas conversas em inglês",
    ),
    (
        "Welcome in Portuguese conversations",
        "Boas-vindas nas conversas em português",
    ),
    ("Greeting", "Saudação"),
    ("Assistant's name", "Nome do assistente"),
    (
        "Starter prompts: up to four questions the person can send with one click.",
        "Sugestões: até quatro perguntas que a pessoa envia com um clique.",
    ),
    ("Starter", "Sugestão"),
    (
        "The widget shows the greeting and the starters before the person's first message; all empty keeps the widget's own greeting.",
        "O widget mostra a saudação e as sugestões antes da primeira mensagem da pessoa; tudo vazio mantém a saudação do próprio widget.",
    ),
    (
        "Retention: a whole number of days from 1 to 3650.",
        "Retenção: um número inteiro de dias de 1 a 3650.",
    ),
    (
        "A conversation is deleted this many days after its last message: its messages, its case and its settled proposals. ",
        "Uma conversa é apagada este número de dias após a sua última mensagem: as mensagens, o caso e as propostas encerradas. ",
    ),
    (
        "A conversation whose change is waiting, running or unconfirmed is kept until that is settled, then counted from the settlement. ",
        "Uma conversa cuja alteração está aguardando, em execução ou sem confirmação é mantida até isso se resolver, e então contada a partir da resolução. ",
    ),
    (
        "From 1 to 3650 days; empty keeps the platform's default.",
        "De 1 a 3650 dias; vazio mantém o padrão da plataforma.",
    ),
    (
        "Its audit records stay, so the trail still verifies, but no longer say which conversation, change or message they were about. ",
        "Os registros de auditoria dela ficam, para que a trilha continue verificável, mas não dizem mais de qual conversa, mudança ou mensagem tratavam. ",
    ),
    (
        "Checks the saved settings against your server: each consultation with your sample arguments (and refused with a wrong service token), every operation prepared, every bad proof refused, and — with your consent — one action per operation executed with a valid proof for the synthetic test person.",
        "Verifica as configurações salvas contra o seu servidor: cada consulta com os seus argumentos de exemplo (e recusada com um token de serviço errado), cada operação preparada, cada prova inválida recusada e — com o seu consentimento — uma ação por operação executada com uma prova válida para a pessoa de teste sintética.",
    ),
    (
        "Choose English or Português (Brasil).",
        "Escolha English ou Português (Brasil).",
    ),
    (
        "Choose what your system shows.",
        "Escolha o que o seu sistema mostra.",
    ),
    (
        "Configure your tenant integration: sign in with your tenant admin key (",
        "Configure a integração do seu tenant: entre com a chave de administração do tenant (",
    ),
    (
        "Consultations the model may call",
        "Consultas que o modelo pode chamar",
    ),
    (
        "Consultations whose sample arguments name the first person's resource (comma-separated)",
        "Consultas cujos argumentos de exemplo nomeiam um recurso da primeira pessoa (separadas por vírgula)",
    ),
    ("Copy", "Copiar"),
    ("Create a credential", "Criar uma credencial"),
    ("Create", "Criar"),
    ("Created", "Criada em"),
    ("Credential ", "Credencial "),
    ("English", "English"),
    ("Event", "Evento"),
    ("Filter", "Filtrar"),
    ("From (day)", "De (dia)"),
    (
        "I consent: this run executes one action per operation for this synthetic person (a real write in my system, with a valid proof).",
        "Eu consinto: esta execução realiza uma ação por operação para esta pessoa sintética (uma escrita real no meu sistema, com uma prova válida).",
    ),
    ("Install on your server", "Instale no seu servidor"),
    ("Issuer", "Emissor"),
    (
        "It may still be running: it can be settled 120 s after its confirmation.",
        "Ela ainda pode estar em execução: pode ser resolvida 120 s depois da confirmação.",
    ),
    ("It was completed", "Foi concluída"),
    ("It was not carried out", "Não foi realizada"),
    ("JWKS", "JWKS"),
    (
        "Keep the old credential working for",
        "Manter a credencial antiga funcionando por",
    ),
    (
        "Last status answer from your server: ",
        "Última resposta de situação do seu servidor: ",
    ),
    ("Latest run ", "Última execução "),
    (
        "Load tools from your server",
        "Carregar as ferramentas do seu servidor",
    ),
    ("New credential ", "Nova credencial "),
    ("No records", "Nenhum registro"),
    (
        "No unsettled actions.",
        "Nenhuma ação pendente de resolução.",
    ),
    ("Now", "Agora"),
    ("Older", "Mais antigos"),
    (
        "One tool name per line (or load the tools from your server)",
        "Um nome de ferramenta por linha (ou carregue as ferramentas do seu servidor)",
    ),
    (
        "Operations (comma-separated)",
        "Operações (separadas por vírgula)",
    ),
    (
        "People who have no passkey (never created one, or lost it) may confirm these operations without one (their proof then carries no step-up)",
        "Quem não tem passkey (nunca criou ou a perdeu) pode confirmar estas operações sem ela (a prova dela então não leva step-up)",
    ),
    (
        "People with a passkey for your company now:",
        "Pessoas com passkey para a sua empresa agora:",
    ),
    (
        "Everyone else must sign in through your site and create one before they can confirm an operation that needs it.",
        "Todas as outras precisam entrar pelo seu site e criar uma antes de poder confirmar uma operação que a exija.",
    ),
    (
        "I understand: an operation I add here cannot be confirmed without a passkey",
        "Entendo: uma operação que eu incluir aqui não pode ser confirmada sem passkey",
    ),
    (
        "People without a passkey will have to create one before they can confirm this operation. Tick “I understand” below the field to go ahead.",
        "Quem não tem passkey terá de criar uma antes de poder confirmar esta operação. Marque “Entendo” abaixo do campo para continuar.",
    ),
    (
        "Operations that need the person's passkey (comma-separated; none by default)",
        "Operações que exigem a passkey da pessoa (separadas por vírgula; nenhuma por padrão)",
    ),
    (
        "Pages using this credential stop working at once: every token signed with its secret is refused, and the secret is deleted. This cannot be undone.",
        "As páginas que usam esta credencial param de funcionar na hora: todo token assinado com o segredo dela é recusado, e o segredo é apagado. Isso não pode ser desfeito.",
    ),
    ("Person ", "Pessoa "),
    ("Platform operator", "Operador da plataforma"),
    ("Platform", "Plataforma"),
    ("Português (Brasil)", "Português (Brasil)"),
    (
        "Proof audience (optional; default: the server URL)",
        "Audiência da prova (opcional; padrão: a URL do servidor)",
    ),
    ("Public key", "Chave pública"),
    ("Published keys", "Chaves publicadas"),
    (
        "Recorded. The person was told, and the conversation is unblocked.",
        "Registrado. A pessoa foi avisada e a conversa foi liberada.",
    ),
    ("Refused", "Recusado"),
    ("Remove the connector", "Remover o conector"),
    ("Remove", "Remover"),
    (
        "Replace a widget credential",
        "Substituir uma credencial do widget",
    ),
    ("Replace it", "Substituir"),
    ("Replaced: works until ", "Substituída: funciona até "),
    ("Replace…", "Substituir…"),
    ("Result", "Resultado"),
    (
        "Revoke a widget credential",
        "Revogar uma credencial do widget",
    ),
    ("Revoke it", "Revogar"),
    ("Revoke…", "Revogar…"),
    ("Run the certification", "Rodar a certificação"),
    (
        "Sample arguments per consultation (JSON object by tool name): fill in values that exist for the test person; each tool's required arguments are listed",
        "Argumentos de exemplo por consulta (objeto JSON por nome de ferramenta): preencha valores que existam para a pessoa de teste; os argumentos obrigatórios de cada ferramenta estão listados",
    ),
    (
        "Sample arguments per operation (JSON object by operation name): every operation is prepared",
        "Argumentos de exemplo por operação (objeto JSON por nome de operação): toda operação é preparada",
    ),
    (
        "Save the settings, install the key on your server, then run the certification below: actions can be enabled once it passes on the saved settings.",
        "Salve as configurações, instale a chave no seu servidor e rode a certificação abaixo: as ações podem ser ativadas quando ela passar nas configurações salvas.",
    ),
    ("Save", "Salvar"),
    ("Saved.", "Salvo."),
    (
        "Second synthetic person (optional): must be refused the first person's resources",
        "Segunda pessoa sintética (opcional): deve ter recusados os recursos da primeira pessoa",
    ),
    ("Sections", "Seções"),
    ("Server URL", "URL do servidor"),
    ("Service token", "Token de serviço"),
    ("Settings", "Configurações"),
    ("Sign in", "Entrar"),
    ("Sign out", "Sair"),
    ("Status", "Situação"),
    (
        "Store this secret in your backend now: it is shown this once (a reload does not show it again).",
        "Guarde este segredo no seu backend agora: ele é mostrado só esta vez (recarregar a página não o mostra de novo).",
    ),
    (
        "Synthetic test person (X-MCP-User-Id): an account of your system made for tests, its id starting with countersign-test:",
        "Pessoa de teste sintética (X-MCP-User-Id): uma conta do seu sistema feita para testes, com id começando por countersign-test:",
    ),
    ("Tenant MCP", "MCP do tenant"),
    (
        "That admin key is not valid.",
        "Essa chave de administração não é válida.",
    ),
    (
        "That credential's secret was shown once, right after it was created. If it was not stored, replace the credential.",
        "O segredo dessa credencial foi mostrado uma vez, logo após a criação. Se ele não foi guardado, substitua a credencial.",
    ),
    (
        "The connector was removed; actions stopped.",
        "O conector foi removido; as ações pararam.",
    ),
    (
        "The language of new conversations: the widget's texts, the platform's notices and ",
        "O idioma das novas conversas: os textos do widget, os avisos da plataforma e ",
    ),
    ("The person in the chat", "A pessoa no chat"),
    (
        "The platform has no signing key installed: actions cannot be enabled.",
        "A plataforma não tem uma chave de assinatura instalada: as ações não podem ser ativadas.",
    ),
    (
        "This request did not come from the panel's own pages and was refused; nothing was changed.",
        "Esta requisição não veio das páginas do próprio painel e foi recusada; nada foi alterado.",
    ),
    ("To (day)", "Até (dia)"),
    ("Unavailable", "Indisponível"),
    ("Unsettled actions", "Ações pendentes de resolução"),
    ("What was checked", "O que foi verificado"),
    ("What we saw", "O que vimos"),
    ("What", "O quê"),
    ("When (UTC)", "Quando (UTC)"),
    ("Who", "Quem"),
    ("Widget credentials", "Credenciais do widget"),
    (
        "Your server now describes these tools differently from what was approved. Each is withheld from the model and MCP clients until you approve the change.",
        "O seu servidor agora descreve estas ferramentas de um jeito diferente do aprovado. Cada uma fica fora do alcance do modelo e dos clientes MCP até você aprovar a mudança.",
    ),
    (
        "and the assistant's instructions. A conversation already open keeps its language; ",
        "e as instruções do assistente. Uma conversa já aberta mantém o seu idioma; ",
    ),
    (
        "no time: refuse it at once",
        "nenhum tempo: recusar na hora",
    ),
    ("none yet", "nenhuma ainda"),
    ("none", "nenhum"),
    ("required", "obrigatório"),
    (
        "the confirm/cancel instructions (",
        "as instruções de confirmar/cancelar (",
    ),
    ("unchanged (write-only)", "inalterado (somente escrita)"),
    (
        "your web page may choose another language per person (widget guide, “Language”).",
        "a sua página pode escolher outro idioma por pessoa (guia do widget, “Language”).",
    ),
    // Certification verdicts and check results.
    ("passed", "passou"),
    ("failed", "falhou"),
    ("skipped", "pulada"),
    // The audit trail's event filter.
    ("All events", "Todos os eventos"),
    ("MCP settings", "Configurações MCP"),
    ("Tenant settings", "Configurações do tenant"),
    ("Actions", "Ações"),
    ("Proposals", "Propostas"),
    ("Checkpoints", "Checkpoints"),
    (" conversations deleted, ", " conversas apagadas, "),
    (" items removed.", " itens removidos."),
    (
        "A legal hold is on this person; lift it before erasing them.",
        "Há uma retenção legal sobre esta pessoa; suspenda-a antes de apagá-la.",
    ),
    (
        "A legal hold keeps a person's conversations (or one conversation) from being deleted: neither the retention purge nor an erasure removes what it covers until you lift it. Placing and lifting a hold is recorded in the audit trail.",
        "Uma retenção legal impede que as conversas de uma pessoa (ou uma conversa) sejam apagadas: nem a limpeza por retenção nem um apagamento removem o que ela cobre até você suspendê-la. Colocar e suspender uma retenção fica registrado na trilha de auditoria.",
    ),
    (
        "Audit trail personal data: ",
        "Dados pessoais na trilha de auditoria: ",
    ),
    (
        "Backups may hold it until ",
        "Os backups podem guardá-los até ",
    ),
    ("Conversation ", "Conversa "),
    (
        "Deletes every conversation of the person and makes their personal data in the audit trail unreadable (their key is destroyed; the trail and your checkpoints still verify). Conversations with a change still waiting, running or unconfirmed are kept until it is settled, then deleted. A held person cannot be erased. You get a receipt signed with the audit checkpoint key: keep it. Backups (point-in-time recovery) may hold the deleted data for 35 days.",
        "Apaga todas as conversas da pessoa e torna ilegíveis os seus dados pessoais na trilha de auditoria (a chave dela é destruída; a trilha e os seus checkpoints continuam verificáveis). Conversas com uma alteração ainda aguardando, em execução ou não confirmada são mantidas até que ela seja resolvida e depois apagadas. Uma pessoa sob retenção legal não pode ser apagada. Você recebe um recibo assinado com a chave de checkpoint da auditoria: guarde-o. Os backups (recuperação point-in-time) podem guardar os dados apagados por 35 dias.",
    ),
    ("Erase a person", "Apagar uma pessoa"),
    ("Passkeys", "Passkeys"),
    (
        "People enrol a passkey on the confirmation page, after a fresh sign-in through your site, to confirm operations you set to need one. Revoke one that is lost or not theirs: they can enrol a new one the same way. Each revocation is recorded in the audit trail.",
        "As pessoas cadastram uma passkey na página de confirmação, depois de entrar de novo pelo seu site, para confirmar as operações que você configurou para exigi-la. Revogue uma que foi perdida ou não é da pessoa: ela pode cadastrar outra do mesmo jeito. Cada revogação fica registrada na trilha de auditoria.",
    ),
    ("Show passkeys", "Mostrar passkeys"),
    (
        "This person has no passkey.",
        "Esta pessoa não tem passkey.",
    ),
    ("enrolled", "cadastrada em"),
    ("last used", "último uso em"),
    ("Revoke", "Revogar"),
    ("Passkey revoked.", "Passkey revogada."),
    ("Erase", "Apagar"),
    ("Erasure receipt", "Recibo do apagamento"),
    ("Erasure", "Apagamento"),
    ("Status: ", "Situação: "),
    ("requested ", "pedido em "),
    (
        "The erasure runs within about a minute of being asked. Reload this page to see where it stands.",
        "O apagamento é feito cerca de um minuto depois do pedido. Recarregue esta página para ver em que ponto está.",
    ),
    (
        " conversations deleted so far.",
        " conversas apagadas até agora.",
    ),
    (
        "Nothing is stored for this person: unknown here, or erased already. Nothing was written.",
        "Nada está guardado sobre esta pessoa: desconhecida aqui, ou já apagada. Nada foi gravado.",
    ),
    ("Refused: ", "Recusado: "),
    ("No such erasure.", "Apagamento não encontrado."),
    (
        "Give a person's user id, or a conversation id (case_…).",
        "Informe o id de usuário de uma pessoa ou o id de uma conversa (case_…).",
    ),
    (
        "Give the person's user id, as your site names them.",
        "Informe o id de usuário da pessoa, como o seu site a identifica.",
    ),
    ("Hold on", "Retenção sobre"),
    ("Holds and erasure", "Retenções e apagamento"),
    ("Id", "Id"),
    (
        "Kept for now (deleted once they can be): ",
        "Mantidas por enquanto (apagadas assim que possível): ",
    ),
    ("Legal holds", "Retenções legais"),
    ("Lift", "Suspender"),
    ("No legal holds.", "Nenhuma retenção legal."),
    (
        "Nothing is stored for this person: unknown here, or erased already.",
        "Nada está guardado desta pessoa: desconhecida aqui, ou já apagada.",
    ),
    ("Person (your user id)", "Pessoa (o seu id de usuário)"),
    ("Place hold", "Colocar retenção"),
    ("Receipt (JWS)", "Recibo (JWS)"),
    ("a conversation (case_…)", "uma conversa (case_…)"),
    (
        "a person (your user id)",
        "uma pessoa (o seu id de usuário)",
    ),
];

/// The Portuguese of an English panel text.
fn portuguese(en: &str) -> Option<&'static str> {
    PORTUGUESE.iter().find(|(e, _)| *e == en).map(|(_, pt)| *pt)
}

#[cfg(test)]
mod tests;
