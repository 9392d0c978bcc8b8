# ruff: noqa: RUF001  (the lexicons are non-English text by design)
"""Concepts that make a directive in a tool definition hostile, in eleven languages plus a
language-independent part, and how their co-occurrence is scored.

A tool description says what the tool does. Poisoning adds orders to the model about other
behaviour: other tools or servers, the user (overriding or deceiving them), the whole
conversation, secrecy, earlier instructions, an outside address tied to the user's data, an
action outside the tool's job. Each concept is one RE2 pattern over every language (a *marker*:
weight 0, never a finding on its own); `concept_findings` turns the markers of one definition into
findings of the scoring families, so the score adds concepts up instead of matching phrasings.

Word edges: RE2's \\b is ASCII-only; Latin and Cyrillic alternatives take an explicit left edge,
CJK, Korean and Arabic (which glue particles and prefixes to words) none.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mcpward.guards.detection.families import Rule
from mcpward.guards.detection.multilingual import L

MARKER_FAMILY = "concept-marker"
_I = "(?i)"
_G = r"[^.!?。！？\n]{0,30}?"  # a short stretch inside one sentence


def _any(*parts: str) -> str:
    return "|".join(p for p in parts if p)


R_EDGE = r"(?:$|[^0-9A-Za-z_\x{C0}-\x{24F}\x{400}-\x{4FF}])"


def _edged(spaced: str, unspaced: str = "", right: bool = False) -> str:
    """Spaced-script alternatives after a left word edge (and before a right one if `right`),
    unspaced ones as they are."""
    out = [rf"{L}(?:{spaced}){R_EDGE if right else ''}"] if spaced else []
    if unspaced:
        out.append(rf"(?:{unspaced})")
    return _I + "|".join(out)


# --- concept lexicons: (spaced scripts: en es fr de pt it ru; unspaced: zh ja ko ar) ---------

# Another tool or server, or "the rest": what a description about its own job has no need of.
OTHER = _edged(
    _any(
        # en
        r"(?:every|all|any|the)\s+other\s+(?:\w+\s+)?(?:tools?|servers?|ones|options|search(?:es)?)|"
        r"another\s+(?:\w+\s+)?(?:tool|server)|other\s+servers?|the\s+(?:rest|others)\b|"
        r"(?:tools?|\w+\s+tool)\s+of\s+(?:the|another|any)\s+[\w-]+\s+server|"
        r"[\w-]+\s+server'?s\s+(?:\w+\s+)?tools?",
        # es
        r"(?:las\s+|cualquier\s+|todas\s+las\s+)?(?:otras?|dem[aá]s)\s+herramientas?|"
        r"otros?\s+servidor(?:es)?|las\s+dem[aá]s|herramienta\s+de\s+\w+\s+de\s+otro|"
        r"(?:del|de\s+otro)\s+servidor",
        # fr
        r"(?:les\s+|tous\s+les\s+|tout\s+)?autres?\s+(?:outils?|serveurs?)|les\s+autres|"
        r"tous\s+les\s+autres|(?:du|d[’']un\s+autre)\s+serveur",
        # de
        r"(?:jedes|alle|die)\s+anderen?\s+(?:Werkzeug|Tool|Server|Funktion)\w*|die\s+anderen|"
        r"eines\s+anderen\s+Servers|anderer\s+Server|\w+-Server(?:s)?\b",
        # pt / it
        r"outr[oa]s?\s+(?:ferramentas?|servidor(?:es)?)|as\s+outras|os\s+outros|do\s+servidor|"
        r"altri\s+strumenti|altro\s+(?:strumento|server)|gli\s+altri|del\s+server|"
        r"(?:qualsiasi|ogni)\s+altro\s+strumento",
        # ru
        r"(?:други[хме]?|ины[хме]?|остальны[хме]?|любого\s+другого|любой\s+другой)"
        r"(?:\s+инструмент[а-яё]*|\s+сервер[а-яё]*)?|друго(?:го|м)\s+сервер[а-яё]*",
    ),
    _any(
        r"其他(?:所有)?(?:的)?(?:工具|服务器|服务)|其它(?:的)?工具|别的工具|其他服务器|服务器的",
        r"他の(?:どの)?(?:ツール|サーバー)|別の(?:ツール|サーバー)|ほかの(?:ツール|サーバー)|サーバーの",
        r"다른\s*(?:모든\s*)?(?:도구|서버|툴)|서버의",
        r"الأدوات\s+الأخرى|أدوات\s+أخرى|أداة\s+أخرى|خادم\s+آخر|الخوادم\s+الأخرى",
    ),
)

# Outranking the alternatives: better than, superior to, use it first, ignore the others.
PREFERENCE = _edged(
    _any(
        r"(?:better|superior|more\s+(?:accurate|reliable|complete|trustworthy))\s+(?:than|to)\s+"
        r"(?:any|all|every|the)|beats\s+(?:every|all|any)|outperforms|"
        r"(?:disregard|ignore|skip|forget)\s+(?:the\s+rest|the\s+others|all\s+others)",
        r"(?:mejor|superior)\s+que\s+(?:cualquier|todas|las)|ignora\s+las\s+dem[aá]s",
        r"sup[eé]rieur\s+[aà]\s+tous|meilleur\s+que\s+(?:tous|les)|oublie\s+les\s+autres|"
        r"ignore\s+les\s+autres",
        r"besser\s+als\s+(?:jedes|alle|die)|ignoriere\s+die\s+anderen",
        r"melhor\s+(?:ferramenta\s+de\s+todas|que\s+(?:qualquer|todas|as))|ignore\s+as\s+outras|"
        r"superiore\s+a\s+(?:qualsiasi|tutti)|ignora\s+gli\s+altri|"
        r"migliore\s+di\s+(?:qualsiasi|tutti)",
        r"лучше\s+(?:любого|всех|других)|игнорируй\s+остальны[а-яё]*",
    ),
    _any(
        r"比其他(?:所有)?(?:的)?(?:工具)?都(?:好|强|准确|可靠)|忽略其他(?:的)?工具",
        r"他の(?:どの)?ツールよりも?(?:優れ|良い|正確)|他のツールは無視",
        r"다른\s*(?:모든\s*)?도구보다\s*(?:뛰어|좋|낫|정확)|다른\s*도구는\s*무시",
        r"أفضل\s+من\s+(?:جميع|كل)|تجاهل\s+الأدوات\s+الأخرى",
    ),
)

# Overriding, ignoring or deceiving the user: "even if the user asks for another one".
USER_OVERRIDE = _edged(
    _any(
        r"even\s+(?:if|when|though)\s+the\s+user|regardless\s+of\s+(?:what|which|whether|the\s+"
        r"user)|ignor\w*\s+(?:the\s+user'?s?\s+)?(?:request|question)|whatever\s+the\s+user|no\s+matter\s+what\s+the\s+user|(?:ignore|disregard|"
        r"override)\s+the\s+user'?s?\s+(?:request|choice|instructions?|preferences?|wish)",
        r"aunque\s+el\s+usuario|incluso\s+si\s+el\s+usuario|sin\s+importar\s+(?:lo\s+que|qu[eé])|"
        r"independientemente\s+de\s+lo\s+que|diga\s+lo\s+que\s+diga|ignora\s+(?:la\s+)?"
        r"(?:petici[oó]n|solicitud|pregunta)|ignore\s+o\s+pedido|ignora\s+la\s+richiesta|"
        r"ignore\s+la\s+(?:demande|requ[eê]te)|ignoriere\s+die\s+(?:Anfrage|Bitte|Frage)|"
        r"игнорируй\s+(?:просьбу|запрос|вопрос)",
        r"m[eê]me\s+si\s+l[’']utilisat|quel(?:le)?s?\s+que\s+soi(?:t|ent)|peu\s+importe\s+ce\s+que|"
        r"quoi\s+que\s+(?:dise|demande|choisisse)",
        r"auch\s+wenn\s+(?:der|die)\s+(?:Benutzer|Nutzer|Anwender)|selbst\s+wenn\s+(?:der|die)|"
        r"unabh[aä]ngig\s+davon|egal,?\s+(?:was|welche)",
        r"mesmo\s+(?:que|se)\s+o\s+(?:usu[aá]rio|utilizador)|independentemente\s+d[oe]|"
        r"n[aã]o\s+importa\s+o\s+que|seja\s+qual\s+for",
        r"anche\s+se\s+l[’']utente|indipendentemente\s+da|qualunque\s+cosa|a\s+prescindere",
        r"даже\s+если\s+пользовател|независимо\s+от|что\s+бы\s+ни|вне\s+зависимости",
    ),
    _any(
        r"忽略用户|即使用户|即便用户|无论用户|不管用户|不论用户|忽略用户(?:的)?(?:请求|要求|选择)",
        r"(?:ユーザー|利用者)が[^。！？\n]{0,20}?(?:ても|でも)|に関係なく|にかかわらず",
        r"사용자가[^.!?\n]{0,20}?(?:더라도|해도)|관계없이|상관없이",
        r"حتى\s+لو\s+(?:طلب|اختار|قال)|مهما\s+(?:اختار|طلب|قال)|بغض\s+النظر|بصرف\s+النظر",
    ),
)

# Scope over the whole conversation (strong) and over every use (weak).
SCOPE = _edged(
    _any(
        r"(?:for\s+)?the\s+rest\s+of\s+(?:the|this)\s+(?:conversation|session|chat)|"
        r"from\s+(?:now|this\s+point)\s+on|every\s+(?:later|future|subsequent)\s+(?:turn|message|"
        r"answer|request)|all\s+future\s+(?:turns|messages|answers|requests|conversations)",
        r"(?:durante\s+)?el\s+resto\s+de\s+la\s+conversaci[oó]n|a\s+partir\s+de\s+ahora|"
        r"de\s+ahora\s+en\s+adelante",
        r"(?:pour\s+)?le\s+reste\s+de\s+la\s+conversation|d[eé]sormais|dor[eé]navant|"
        r"[aà]\s+partir\s+de\s+maintenant",
        r"ab\s+sofort|von\s+nun\s+an|ab\s+jetzt|weiteren\s+Verlauf|restlichen\s+(?:Gespr[aä]ch|"
        r"Verlauf)",
        r"a\s+partir\s+de\s+agora|daqui\s+(?:em|para)\s+(?:diante|frente)|resto\s+da\s+conversa",
        r"d[’']ora\s+in\s+poi|da\s+ora\s+in\s+poi|da\s+adesso|resto\s+della\s+conversazione",
        r"отныне|с\s+этого\s+момента|впредь|до\s+конца\s+(?:разговора|диалога|беседы|сессии)",
    ),
    _any(
        r"从现在(?:起|开始)|今后|此后|(?:本次|整个)对话",
        r"今後|これから(?:は|ずっと)|以降(?:の|は)?(?:すべて|全て)|会話の(?:最後|終わり)まで",
        r"지금부터|앞으로\s*모든|이후\s*모든|대화가\s*끝날\s*때까지|이\s*대화의",
        r"من\s+الآن|طوال\s+المحادثة|بقية\s+المحادثة|هذه\s+المحادثة",
    ),
)
SCOPE_WEAK = _edged(
    _any(
        r"(?:whenever|every\s+time|each\s+time)\s+(?:the\s+user|a\s+user|you|another|any|the\s+"
        r"\w+\s+tool)|after\s+(?:each|every)\s+(?:query|call|request|answer|response|message|"
        r"turn|search)|before\s+any\s+other",
        r"cada\s+vez\s+que|siempre\s+que|al\s+terminar\s+cada|cada\s+consulta",
        r"chaque\s+fois|d[eè]s\s+que|[aà]\s+chaque",
        r"immer\s+wenn|jedes\s+Mal|bei\s+jede[rm]|nach\s+jede[rm]",
        r"sempre\s+que|toda\s+vez\s+que|(?:ao\s+final|depois)\s+de\s+cada|ogni\s+volta|"
        r"(?:alla\s+fine|dopo)\s+di\s+ogni",
        r"каждый\s+раз|после\s+каждого|всякий\s+раз|при\s+каждом",
    ),
    _any(
        r"每当|每次|只要用户",
        r"たびに|毎回|するたび",
        r"때마다|매번|끝나면",
        r"كلما|في\s+كل\s+مرة|بعد\s+كل",
    ),
)

# The model's own answers to the user: a tool's description has no say over them.
ANSWERS = _edged(
    _any(
        r"(?:each|every|all)\s+(?:of\s+)?your\s+(?:answers|responses|replies)|your\s+(?:every|next|"
        r"final)\s+(?:answer|response|reply)|(?:end|start|begin)\s+(?:each|every)\s+(?:of\s+your\s+)?"
        r"(?:answers?|repl(?:y|ies)|responses?)",
        r"tus\s+respuestas|cada\s+respuesta|tes\s+r[eé]ponses|vos\s+r[eé]ponses|chaque\s+r[eé]ponse|"
        r"jede\s+Antwort|deine\s+Antworten|jeder\s+Antwort|suas\s+respostas|todas\s+as\s+respostas|"
        r"cada\s+resposta|tue\s+risposte|ogni\s+risposta|кажд[а-яё]+\s+ответ[а-яё]*|"
        r"(?:сво|тво)[а-яё]+\s+ответ[а-яё]*|во\s+всех\s+ответах",
    ),
    _any(
        r"每(?:一)?(?:个|条)?(?:回答|回复|答复)|你的(?:回答|回复)|所有(?:的)?(?:回答|回复)",
        r"(?:すべて|全て|各)の?(?:回答|返答|応答)|回答の(?:最後|末尾)",
        r"(?:모든|각)\s*(?:답변|응답|대답)|답변\s*끝",
        r"(?:كل|جميع)\s+(?:إجابة|الإجابات|رد|الردود)|إجاباتك|ردودك",
    ),
)

# Private files an ordinary tool does not read on the side.
PRIVATE_FILE = (
    r"(?:^|[\s\"'(`])(?:~/)?\.env\b|\.ssh/|\bid_(?:rsa|ed25519)\b|\.aws/credentials|/etc/shadow"
)

# Secrecy: hiding what is done from the user.
SECRECY = _edged(
    _any(
        r"(?:hidden|secret|confidential|internal)\s+(?:note|instruction|rule|step|directive)|"
        r"confidential\s*:|keep\s+(?:the\s+user\s+|it\s+|this\s+)?(?:unaware|hidden|secret|quiet)|"
        r"without\s+(?:mentioning|telling|showing|informing|letting|notifying)|"
        r"(?:no\s+need\s+to|do\s+not|don'?t|never)\s+(?:show|mention|reveal|tell|inform|display|"
        r"disclose)\s+(?:this|it|that|anything|the\s+user|to\s+the\s+user)|"
        r"behind\s+the\s+user'?s\s+back|between\s+us",
        r"nota\s+(?:oculta|secreta|confidencial|interna)|en\s+secreto|sin\s+(?:mostr|dec|"
        r"mencion|avis|inform|coment)[a-z]*(?:selo|lo)?|(?:no|nunca)\s+(?:se\s+lo\s+|le\s+)?"
        r"(?:muestres|digas|menciones|reveles|comentes)|discretamente|silenciosamente|"
        r"a\s+escondidas|sin\s+que\s+(?:el\s+usuario|nadie)",
        r"note\s+(?:cach[eé]e|secr[eè]te|confidentielle|interne)|en\s+secret|secr[eè]tement|"
        r"discr[eè]tement|en\s+silence|silencieusement|sans\s+(?:le\s+|lui\s+|en\s+)?(?:dire|"
        r"mentionner|signaler|montrer|pr[eé]venir|parler)|ne\s+(?:le\s+|lui\s+|leur\s+)?"
        r"(?:dis|signale|mentionne|montre|r[eé]v[eè]le)[sz]?\s+(?:rien|pas|surtout|jamais)|"
        r"[aà]\s+l[’']insu",
        r"vertraulich|geheim|heimlich|unbemerkt|stillschweigend|bleibt\s+unter\s+uns|"
        r"ohne\s+dass\s+(?:der|die|es)|(?:nicht|niemals|nie)\s+(?:erw[aä]hnen|zeigen|verraten|"
        r"mitteilen|sagen)",
        r"nota\s+(?:oculta|secreta|confidencial|interna|nascosta|segreta|riservata)|"
        r"istruzione\s+riservata|em\s+segredo|secretamente|silenciosamente|sem\s+(?:mostrar|"
        r"dizer|mencionar|avisar|informar|comentar)|(?:n[aã]o|nunca)\s+(?:mostre|diga|mencione|"
        r"comente|revele|conte)|sem\s+que\s+o\s+usu[aá]rio",
        r"in\s+segreto|segretamente|di\s+nascosto|silenziosamente|in\s+silenzio|senza\s+(?:dire|"
        r"avvisare|mostrare|menzionare|informare)|non\s+(?:dire|mostrare|menzionare|rivelare|"
        r"farne\s+parola)",
        r"тайно|скрытно|незаметно|втайне|не\s+(?:говори|сообщай|показывай|упоминай|рассказывай)|"
        r"секретн[а-яё]*|конфиденциальн[а-яё]*|без\s+ведома",
    ),
    _any(
        r"不要(?:让|向|对|告诉)?用户|不要(?:告诉|透露|显示|展示|提及)|悄悄|偷偷|秘密|暗中|静默|隐藏(?:的)?"
        r"(?:说明|指令|备注)|内部备注|机密|不让用户|用户不知情",
        r"(?:ユーザー|利用者)(?:に|には)(?:は)?(?:絶対に)?(?:伝え|知らせ|見せ|言わ|表示し)(?:ない|ず)|"
        r"内密|こっそり|密かに|ひそかに|黙って|内部メモ|秘密|気づかれ",
        r"알리지\s*(?:말|마)|말하지\s*(?:말|마)|보여주지\s*(?:말|마)|몰래|비밀|은밀|모르게|눈치채지|"
        r"내부\s*메모|기밀",
        r"سرية|سري\s|سرًا|سراً|خفية|دون\s+علم|بدون\s+علم|لا\s+(?:تخبر|تُخبر|تذكر|تظهر|تُظهر|تعرض)|"
        r"ملاحظة\s+(?:مخفية|داخلية)",
    ),
)

# Overriding earlier instructions: "this rule overrides earlier instructions".
_RULES_EN = r"(?:instructions?|directives?|guidelines|prompts?)\b"
OVERRIDE = _edged(
    _any(
        r"(?:overrides?|supersedes?|takes?\s+precedence\s+over|ha(?:s|ve)\s+priority\s+over|"
        r"(?:is\s+)?more\s+important\s+than|prevails?\s+over|replaces?|outranks?)\s+"
        r"(?:all\s+|any\s+|the\s+|your\s+)?(?:\w+\s+){0,2}?" + _RULES_EN,
        r"(?:prioridad|prevalece|anula|reemplaza|sustituye|por\s+encima|m[aá]s\s+importante)"
        + _G
        + r"(?:instrucci|indicaci|[oó]rdenes|directrices)",
        r"(?:remplace|pr[eé]vaut|prime\s+sur|priorit|annule|plus\s+important)"
        + _G
        + r"(?:instructions|consignes|directives)",
        r"(?:Vorrang|Priorit[aä]t|ersetzt|[uü]berschreibt|wichtiger\s+als)"
        + _G
        + r"(?:Anweisungen|Vorgaben|Instruktionen|Richtlinien)",
        r"(?:prioridade|prevalece|substitui|anula|sobrep[oõ]e|mais\s+importante)"
        + _G
        + r"(?:instru[cç][oõ]es|ordens|diretrizes)",
        r"(?:prevale|priorit[aà]|sostituisce|annulla|pi[uù]\s+importante)"
        + _G
        + r"(?:istruzioni|direttive|indicazioni)",
        r"(?:важнее|приоритет|отменяет|заменяет|главнее)" + _G + r"(?:инструкци|указани|команд)",
    ),
    _any(
        r"(?:优先于|高于|覆盖|取代|替代|凌驾于)[^。！？\n]{0,12}?(?:指令|指示|说明|要求)",
        r"(?:指示|命令|指令|プロンプト)[^。！？\n]{0,15}?(?:より優先|を上書き|に優先|を無効)",
        r"(?:지침|지시|명령|프롬프트)[^.!?\n]{0,15}?(?:보다\s*우선|무시|대체|에\s*우선)",
        r"(?:تتقدم\s+على|تلغي|تحل\s+محل|الأولوية|أولوية\s+على|أهم\s+من|تتجاوز)[^.!?\n]{0,30}?"
        r"(?:التعليمات|الإرشادات|الأوامر)",
    ),
)

# An action outside any ordinary tool's job: destructive statements and commands.
DESTRUCTIVE = (
    r"(?i)\b(?:DROP\s+(?:TABLE|DATABASE|SCHEMA)\s+[\w.`\"]+|DELETE\s+FROM\s+[\w.`\"]+\s*(?:;|$|"
    r"WHERE\s+1\s*=\s*1)|TRUNCATE\s+(?:TABLE\s+)?[\w.`\"]+\s*;|rm\s+-(?:rf|fr|r)\s+[~/.\w]|"
    r"mkfs\b|format\s+c:|del\s+/[sqf]\b|shred\s+-)"
)
DESTRUCTIVE_WORDS = _edged(
    _any(
        r"(?:delete|remove|wipe|erase)\s+(?:all|every)\s+(?:\w+\s+){0,2}?(?:files|data|records|"
        r"emails|messages|backups)",
        r"(?:borra|elimina)\s+todos\s+los\s+(?:archivos|ficheros|datos)|"
        r"supprime\s+(?:en\s+silence\s+)?tous\s+les\s+fichiers|l[oö]sche\s+alle\s+(?:Dateien|Daten)|"
        r"(?:apague|exclua)\s+todos\s+os\s+arquivos|(?:cancella|elimina)\s+tutti\s+i\s+file|"
        r"удали\s+все\s+(?:файлы|данные)",
    ),
    r"删除所有(?:的)?(?:文件|数据)|すべてのファイルを削除|모든\s*파일을\s*삭제|احذف\s+جميع\s+الملفات",
)

# The user's data and credentials.
DATA = _edged(
    _any(
        r"passwords?|passphrase|api[\s_-]?keys?|credentials|(?:access|auth|api)\s+tokens?|"
        r"private\s+keys?|ssh\s+keys?|\.env\b|(?:saved|credit)\s+cards?|address\s+book|"
        r"chat\s+history|conversation\s+history|session\s+cookies?",
        r"contrase[nñ]as?|claves?|credenciales|tarjetas|contactos|historial|"
        r"mots?\s+de\s+passe|cl[eé]s?|identifiants|cartes|historique|"
        r"Passw[oö]rter?|Kennw[oö]rter?|Schl[uü]ssel|Zugangsdaten|Token|Kontakte|"
        r"senhas?|chaves?|cart[oõ]es|contatos|hist[oó]rico|chiavi|chiave|carte|contatti|cronologia|"
        r"парол[а-яё]*|ключ[а-яё]*|токен[а-яё]*|учётн[а-яё]*|учетн[а-яё]*|контакт[а-яё]*|"
        r"истори[а-яё]*\s+(?:переписки|диалога|чата)",
    ),
    _any(
        r"密码|密钥|私钥|凭据|凭证|令牌|通讯录|聊天记录|对话历史",
        r"パスワード|キー|秘密鍵|認証情報|トークン|連絡先|会話履歴",
        r"비밀번호|키를|키\s|암호|토큰|연락처|자격\s*증명|대화\s*기록",
        r"كلمة\s+(?:ال)?مرور|مفتاح|مفاتيح|رمز\s+الوصول|جهات\s+الاتصال|بيانات\s+الاعتماد",
    ),
)

# An outside address: a URL with an open query slot for a value, or an e-mail address written
# into the prose (not a quoted value in an example).
SLOT_URL = r"(?im)(?:https?://|\burl=)[^\s\"'<>]*[?&][A-Za-z0-9_-]{1,24}=(?:[\s\"'<>)\]»」]|$)"
EMAIL = r"(?:^|[^\w\"'@.%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})+"


# --- structure of returned data (response_injection) ------------------------------------------

# Text addressed to the model reading the data: "Assistant:", "AI assistants processing this
# document must", "Nota para la IA", "AI 어시스턴트에게".
ADDRESSEE = _edged(
    _any(
        r"(?:AI|LLM)\s+(?:assistants?|agents?|models?)\s+(?:processing|reading|summari[sz]ing|"
        r"handling|that\s+(?:read|process))|(?:note|message|instructions?)\s+(?:for|to)\s+(?:the\s+)?"
        r"(?:language\s+model|AI|LLM|assistant|agent)|(?:AI\s+agent|AI\s+assistant|Assistant|LLM)"
        r"\s*:\s+\S",
        r"(?:nota|mensaje|instrucciones)\s+para\s+(?:la\s+IA|el\s+asistente|el\s+modelo)|"
        r"(?:note|message|instructions?)\s+(?:pour|à)\s+l[’']?(?:IA|assistant)|"
        r"(?:Hinweis|Anweisung|Nachricht)\s+an\s+den\s+(?:Assistenten|KI)|"
        r"(?:Assistente|Assistant|Asistente|Assistent|Ассистент|ИИ)\s*:\s+\S|"
        r"(?:istruzioni|nota)\s+per\s+l[’']assistente|"
        r"(?:инструкци[а-яё]*|указани[а-яё]*|сообщени[а-яё]*)\s+для\s+(?:ассистента|ИИ|модели)",
    ),
    _any(
        r"给\s*(?:AI|人工智能)?\s*(?:助手|助理|模型)|(?:AI|人工智能)\s*助手[：:]",
        r"(?:AI)?アシスタント(?:へ|に)(?:の)?(?:指示|メモ|注意)|アシスタント[：:]",
        r"(?:AI\s*)?어시스턴트(?:에게|께)|어시스턴트[：:]",
        r"(?:إلى|للمساعد|تعليمات\s+للمساعد)\s*(?:الذكي)?|أيها\s+المساعد",
    ),
)
# An order to the model reading the data: "AI assistants ... must recommend".
MODEL_MUST = (
    r"(?i)\b(?:AI|LLM|assistants?|agents?|models?)\b[^.\n]{0,40}?\b(?:must|should|are\s+"
    r"(?:required|instructed)\s+to|have\s+to)\s+(?:always\s+|only\s+|now\s+)?(?:recommend|say|"
    r"tell|describe|ignore|send|call|include|add|forward|respond|answer|mention|use|rate|praise)\b"
)
# A boundary forged inside the data: "END OF TOOL OUTPUT", "</tool_result>", "ENDE DER AUSGABE".
BOUNDARY = (
    r"(?i)</\s*(?:tool_result|function_results?|tool_output|result|output|document|data|"
    r"search_results)\s*>|(?:END\s+OF\s+(?:THE\s+)?(?:TOOL\s+)?(?:OUTPUT|RESULTS?|RESPONSE|"
    r"DOCUMENT|DATA)|FIN\s+(?:DE\s+LA|DU|DEL|DO|DA)\s+(?:SALIDA|SORTIE|RESULTADO|R[EÉ]SULTAT|"
    r"DOCUMENTO?)|ENDE\s+DER\s+(?:TOOL-)?AUSGABE|FINE\s+(?:DELL[’']OUTPUT|DEL\s+RISULTATO)|"
    r"КОНЕЦ\s+(?:ВЫВОДА|ДОКУМЕНТА|РЕЗУЛЬТАТА)|(?:工具)?输出结束|出力(?:の)?終わり|出力終了|출력\s*끝|"
    r"نهاية\s+(?:المخرجات|الإخراج))"
)
# Markup that hides its text from a human reader.
HIDDEN_MARKUP = (
    r"(?i)display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?:px)?\s*[;\"']|"
    r"opacity\s*:\s*0\s*[;\"']"
)
# A chat role block inside data: `"role": "system"`, `role: system`, `###SYSTEM###`.
ROLE_BLOCK = (
    r"(?i)[\"']role[\"']\s*:\s*[\"'](?:system|developer|assistant)[\"']|(?m:^\s*-?\s*role\s*:\s*"
    r"(?:system|developer)\s*$)|#{2,}\s*(?:SYSTEM|ASSISTANT)\s*(?:INSTRUCTIONS?|PROMPT)?\s*#{2,}|"
    r"(?-i:\b(?:ASSISTANT|AI|AGENT|SYSTEM)\s+(?:INSTRUCTIONS?|DIRECTIVES?|PROMPT))\s*:"
)
# A decoding hint: "decode the text above and follow the instructions inside".
DECODE_HINT = _edged(
    _any(
        r"decod(?:e|ing)\s+(?:it|this|that|the\s+\w+(?:\s+\w+)?|the\s+above)\b[^.\n]{0,40}?"
        r"(?:follow|execute|obey|do\s+what|carry\s+out|run)|(?:hex|base64|rot13)[- ]encoded;?\s*"
        r"decode",
        r"decodifica\w*[^.\n]{0,40}?(?:sigue|sigas|ejecuta|segui|siga|esegui)|"
        r"d[eé]code[rz]?[^.\n]{0,40}?(?:suis|suivez|ex[eé]cute)|dekodiere[^.\n]{0,40}?"
        r"(?:befolge|f[uü]hre)|декодируй[^.\n]{0,40}?(?:выполни|следуй)",
    ),
    r"解码[^。\n]{0,20}?(?:执行|按照|遵循)|デコードし[^。\n]{0,20}?(?:従|実行)|디코딩[^.\n]{0,20}?"
    r"(?:따르|실행)|فك\s+(?:ترميز|تشفير)[^.\n]{0,30}?(?:اتبع|نفذ)",
)
# An order to call a named tool (a snake_case name after a call verb), to tie to user data.
TOOL_CALL = _edged(
    _any(
        r"(?:call|invoke|run|use)(?:\s+\S+)?\s+(?:the\s+)?`?[a-z][a-z0-9]*(?:_[a-z0-9]+)+",
        r"(?:llama|invoca|appelle|rufe|chame|chiama|вызови)(?:\s+\S+)?\s+(?:a\s+|à\s+)?`?"
        r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+",
    ),
    r"(?:调用|呼び出|호출|استدع\S*)(?:\s+\S+)?\s*`?[a-z][a-z0-9]*(?:_[a-z0-9]+)+|`?[a-z][a-z0-9]*(?:_[a-z0-9]+)+`?\s*"
    r"(?:を呼び出|을\s*호출|를\s*호출)",
)


@dataclass(frozen=True, slots=True)
class Concept:
    id: str
    pattern: str
    family: str  # the scoring family its findings count in ("" : counts only in a tie)
    weight: float  # in a tool definition (0: not looked for there)
    data_weight: float = 0.0  # in returned data (0: not looked for there)


CONCEPTS: tuple[Concept, ...] = (
    Concept("other-tools", OTHER, "cross-tool", 0.25),
    Concept("outranks-others", PREFERENCE, "preference-manipulation", 0.5),
    Concept("overrides-user", USER_OVERRIDE, "user-override", 0.5, 0.5),
    Concept("whole-conversation", SCOPE, "global-scope", 0.5, 0.5),
    Concept("every-use", SCOPE_WEAK, "global-scope", 0.25),
    Concept("your-answers", ANSWERS, "agent-directive", 0.5, 0.5),
    Concept("private-file", PRIVATE_FILE, "out-of-scope-action", 0.5, 0.5),
    Concept("secrecy", SECRECY, "concealment", 0.75, 0.5),
    Concept("overrides-instructions", OVERRIDE, "hidden-instruction", 1.0, 1.0),
    Concept("destructive-statement", DESTRUCTIVE, "out-of-scope-action", 0.5, 0.5),
    Concept("destructive-request", DESTRUCTIVE_WORDS, "out-of-scope-action", 0.5, 0.5),
    Concept("user-data", DATA, "", 0.0, 0.0),  # counts only tied to an address or a call
    Concept("open-url-slot", SLOT_URL, "outside-destination", 0.5, 0.5),
    Concept("email-address", EMAIL, "outside-destination", 0.25),
    Concept("addressed-to-model", ADDRESSEE, "agent-directive", 0.0, 0.5),
    Concept("model-must", MODEL_MUST, "hidden-instruction", 0.0, 0.5),
    Concept("forged-boundary", BOUNDARY, "forged-boundary", 0.0, 0.5),
    Concept("hidden-markup", HIDDEN_MARKUP, "hidden-markup", 0.0, 0.5),
    Concept("role-block", ROLE_BLOCK, "role-marker", 0.0, 0.5),
    Concept("decode-and-follow", DECODE_HINT, "encoded-payload", 0.0, 1.0),
    Concept("tool-call", TOOL_CALL, "", 0.0, 0.0),  # counts only tied to user data
)
_BY_ID = {c.id: c for c in CONCEPTS}
TIE_CHARS = 160  # user data and an address (or a call) this close, in one field: data sent out
_ADDRESSES = ("open-url-slot", "email-address")


def marker_rules(for_data: bool = False) -> list[Rule]:
    """The markers a definition (or returned data) is read for; ties need both of their ends."""
    wanted = {c.id for c in CONCEPTS if (c.data_weight if for_data else c.weight) > 0}
    # (in data only a URL's open slot is an address: e-mail addresses fill logs and mail)
    wanted |= {"user-data", "open-url-slot"} | ({"tool-call"} if for_data else {"email-address"})
    return [
        Rule(MARKER_FAMILY, c.id, c.pattern, 0.0, max_hits=8) for c in CONCEPTS if c.id in wanted
    ]


MARKER_RULES = marker_rules()
DATA_MARKER_RULES = marker_rules(for_data=True)
CONCEPT_RULE_PREFIX = "concept-"


@dataclass(frozen=True, slots=True)
class Marker:
    concept: str
    path: str
    start: int
    end: int


def _near(m: Marker, others: Sequence[Marker], after: bool = False) -> bool:
    """Another marker in the same field within TIE_CHARS (`after`: `m` follows it)."""
    return any(
        o.path == m.path
        and (
            0 <= m.start - o.start <= TIE_CHARS
            if after
            else min(abs(o.start - m.end), abs(m.start - o.end)) <= TIE_CHARS
        )
        for o in others
    )


def scored(
    markers: Iterable[Marker], for_data: bool = False
) -> list[tuple[str, str, float, Marker]]:
    """(family, rule id, weight, marker) for the markers that count: every concept with a family
    and a weight where it was found, user data within TIE_CHARS of an outside address in the same
    field, and (in data) user data within TIE_CHARS of an order to call a named tool."""
    listed: Sequence[Marker] = list(markers)
    out = []
    # In data, e-mail addresses are everywhere (logs, commits, mail headers): only a URL's open
    # query slot is an outside destination there.
    addresses = [
        m
        for m in listed
        if m.concept in _ADDRESSES and (m.concept == "open-url-slot" or not for_data)
    ]
    calls = [m for m in listed if m.concept == "tool-call"]
    for m in listed:
        concept = _BY_ID[m.concept]
        weight = concept.data_weight if for_data else concept.weight
        if concept.family and weight > 0:
            out.append((concept.family, CONCEPT_RULE_PREFIX + m.concept, weight, m))
        elif m.concept == "user-data":
            if _near(m, addresses):
                out.append(("exfiltration", "concept-data-to-address", 0.5, m))
            if for_data and _near(m, calls, after=True):
                out.append(("exfiltration", "concept-call-with-user-data", 1.0, m))
        elif m.concept == "private-file" and for_data and _near(m, calls, after=True):
            out.append(("exfiltration", "concept-call-with-user-data", 1.0, m))
    return out


# --- orders about another tool (tool_shadowing) -------------------------------------------------

# Words that make a mention of another server's tool an order about it: when/always/before/
# instead, copy/forward/bcc, "is broken/deprecated". A plain mention ("pass the path to
# fs__read_file") is how tools of different servers legitimately work together.
ORDER_CUES = _edged(
    _any(
        r"(?:always|whenever|every\s+time|each\s+time|before|after\s+(?:each|every|any)|instead|must|"
        r"never|do\s+not|don'?t|bcc|cc|copy|forward|redirect|deprecated|broken|unsafe|insecure|"
        r"obsolete|disabled|secretly|silently|regardless|automatically|has\s+been\s+(?:optimi[sz]ed|"
        r"updated|replaced|upgraded|changed|moved)|now\s+(?:uses|sends|requires|redirects))\b",
        r"siempre|cada\s+vez|antes\s+de|en\s+(?:lugar|vez)|debes|nunca|copia|reenv[ií]a|obsolet[ao]|"
        r"rota|insegur[ao]|toujours|chaque|avant|au\s+lieu|dois|jamais|copie|transf[eè]re|"
        r"obsol[eè]te|cass[eé]e?",
        r"immer|jede[rnms]?|bevor|statt|musst|niemals|nie|(?:Blind)?[Kk]opie|weiterleiten|veraltet|"
        r"defekt|sempre|cada|antes|em\s+vez|deve|c[oó]pia|encaminh[ae]|quebrad[ao]|ogni|prima\s+di|"
        r"invece|devi|mai|inoltra|rott[ao]",
        r"всегда|кажд[а-яё]*|при\s+каждом|перед\s|вместо|должен|никогда|копи[юя]|пересыл[а-яё]*|"
        r"устарел[а-яё]*|сломан[а-яё]*",
    ),
    r"总是|始终|每次|每当|之前|之后|代替|而不是|必须|不要|抄送|密送|转发|已弃用|损坏|常に|必ず|たびに|"
    r"前に|代わりに|ではなく|しないで|BCC|転送|非推奨|壊れ|항상|때마다|전에|대신|반드시|하지\s*마|"
    r"참조|전달|고장|دائم|كل\s+مرة|قبل|بدلا|يجب|نسخة|مخفية|أعد\s+توجيه|معطل",
    right=True,
)
