# ruff: noqa: RUF001  (the lexicons are non-English text by design)
"""Instruction families in es, fr, de, pt, it, zh, ja and ru: per-language lexicons (who is
addressed, the user, tools, secrets, verbs) put into the same constructions for every language.

RE2's \\b and \\w are ASCII-only, so word edges here are explicit Unicode letter classes.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcpward.guards.detection.families import Rule

_I = "(?i)"
# Left word edge: not after a Latin or Cyrillic letter or a digit (consumes one character; fine
# for detection). Explicit ranges instead of \pL keep the compiled sets small and fast to build.
L = r"(?:^|[^0-9A-Za-z_\x{C0}-\x{24F}\x{400}-\x{4FF}])"
# A short stretch inside one sentence: a full stop inside a URL or file name does not end it.
_IN_SENTENCE = r"[^.!?。！？\n]"
GAP = _IN_SENTENCE + "{0,40}?"
GAP_LONG = _IN_SENTENCE + "{0,60}?"
# A tool named in backticks, quotes or guillemets, or written snake_case.
QUOTED_ID = r"[`'\"«“„「『]\s*[A-Za-z][\w.-]{1,63}\s*[`'\"»”“」』]"
TOOL_ID = r"(?:" + QUOTED_ID + r"|[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)"
URL = r"(?:https?://|wss?://)[^\s\"'<>]{3,}"
# Instruction tags in the eight languages (<IMPORTANTE>, <WICHTIG>, <重要>, <ВАЖНО>, …).
LOCAL_TAG = (
    r"(?i)<\s*/?\s*(?:importante|wichtig|attenzione|atenci[oó]n|achtung|aten[cç][aã]o|"
    r"重要|注意|ВАЖНО|ВНИМАНИЕ|sistema|syst[eè]me|instrucciones|anweisungen?|istruzioni|"
    r"instru[cç][oõ]es|consignes?|指示|指令|系统|システム|инструкци[а-яё]*|системн[а-яё]*)\s*>"
)


@dataclass(frozen=True, slots=True)
class Lexicon:
    """Alternations (RE2 syntax, no groups that capture) for one language."""

    lang: str
    assistant: str  # the model being addressed
    note: str  # "note / message / instruction"
    to: str  # "to / for" before the addressee (not English "to": real servers write "Note to LLM")
    user: str
    tool: str  # "tool / function"
    tell_neg: str  # a negated order not to tell / mention / show (ends before the object)
    without_telling: str  # "without telling / informing"
    secretly: str  # "secretly / silently / without anyone noticing"
    before_answer: str  # "before answering / responding / replying"
    call: str  # imperative or infinitive of call / use / run / invoke / send
    send: str  # send / upload / forward / transmit / copy
    secret: str  # credentials, passwords, keys, tokens, conversation history
    of_user: str  # the possessive construction after a noun: "del usuario", "des Benutzers"
    ignore_previous: str  # whole construction: ignore the previous instructions
    must: str  # "you must / it is required"
    always: str  # "always"
    instead: str  # "instead of / rather than"
    other_tools: str  # "other tools / alternatives"
    bad_state: str  # deprecated, unsafe, obsolete, broken, unreliable
    never_recommend: str  # never recommend / suggest / use (other tools)
    this_tool: str  # "this tool"
    only: str  # "the only (reliable|safe) tool"


LEXICONS: tuple[Lexicon, ...] = (
    Lexicon(
        lang="es",
        to=r"para|al|a\s+la|a",
        of_user=r"\s(?:del|de\s+la|de\s+los|de\s+las|de\s+tu|de\s+su)\s+usuari[oa]s?",
        must=r"debes|tienes\s+que|deber[aá]s|es\s+obligatorio|el\s+asistente\s+debe|la\s+IA\s+debe",
        assistant=r"asistente|modelo(?:\s+de\s+lenguaje)?|IA|agente|LLM|chatbot",
        note=r"nota|mensaje|instrucci[oó]n(?:es)?|aviso|indicaci[oó]n|atenci[oó]n|importante",
        user=r"usuari[oa]s?",
        tool=r"herramienta|funci[oó]n",
        tell_neg=r"(?:no|nunca|jam[aá]s)\s+(?:se\s+)?(?:lo\s+|la\s+|le\s+|les\s+|se\s+lo\s+)?"
        r"(?:digas|diga|menciones|mencione|comentes|comente|informes|informe|avises|avise|"
        r"reveles|revele|cuentes|cuente|muestres|muestre|notifiques|notifique|expliques|"
        r"explique|adviertas|advierta)|no\s+(?:hace\s+falta|es\s+necesario|debes|debe|"
        r"hay\s+que)\s+(?:comentarlo|comentar(?:selo)?|mencionarlo|mencionar|decirlo|"
        r"dec[ií]rselo|decir|informar(?:le)?|avisar(?:le)?|notificar(?:le)?|explicarlo|"
        r"mostrarlo|contarlo|cont[aá]rselo)",
        without_telling=r"sin\s+(?:que\s+(?:el|la|los)\s+usuari[oa]s?\s+(?:lo\s+)?"
        r"(?:sepa|sepan|note|noten|vea|vean|se\s+entere)|(?:decir(?:le|selo)?|informar(?:le)?|"
        r"avisar(?:le)?|mencionar(?:lo|le)?|comentar(?:lo|le)?|notificar(?:le)?|preguntar(?:le)?))",
        secretly=r"en\s+secreto|secretamente|sigilosamente|discretamente|a\s+escondidas|"
        r"de\s+forma\s+(?:silenciosa|oculta|invisible)|silenciosamente",
        before_answer=r"antes\s+de\s+(?:responder|contestar|dar\s+(?:la|tu)\s+respuesta|"
        r"cualquier\s+otra\s+(?:acci[oó]n|cosa)|hacer\s+cualquier\s+otra\s+cosa)",
        call=r"llama(?:r)?|usa(?:r)?|utiliza(?:r)?|invoca(?:r)?|ejecuta(?:r)?|emplea(?:r)?|"
        r"archiva(?:r)?|env[ií]a(?:r)?|guarda(?:r)?|pasa(?:r)?",
        send=r"env[ií]a(?:r|le)?|manda(?:r)?|sube|subir|reenv[ií]a(?:r)?|transmite|transmitir|"
        r"copia(?:r)?|adjunta(?:r)?|incluye|incluir|exporta(?:r)?|archiva(?:r)?",
        secret=r"contrase[nñ]as?|credenciales|claves?\s+(?:de\s+(?:la\s+)?API|privadas?|SSH|"
        r"secretas?)|tokens?(?:\s+de\s+acceso)?|secretos|variables\s+de\s+entorno|"
        r"historial\s+(?:de\s+(?:la\s+)?)?(?:conversaci[oó]n|chat|mensajes)|"
        r"conversaci[oó]n\s+(?:completa|entera)|prompt\s+del\s+sistema",
        ignore_previous=r"(?:ignora|olvida|omite|descarta|desatiende|anula)(?:r)?\s+"
        r"(?:todas\s+)?(?:las\s+|tus\s+)?(?:instrucciones|indicaciones|[oó]rdenes|reglas|"
        r"directrices)\s+(?:anteriores|previas|originales|del\s+sistema|de\s+seguridad)",
        always=r"siempre",
        instead=r"en\s+(?:lugar|vez)\s+de|antes\s+que|por\s+encima\s+de",
        other_tools=r"(?:las\s+|cualquier\s+)?(?:otras?|dem[aá]s)\s+herramientas?|"
        r"alternativas?|herramientas?\s+(?:alternativas?|similares|de\s+la\s+competencia)",
        bad_state=r"obsoletas?|inseguras?|peligrosas?|desactualizadas?|en\s+desuso|"
        r"defectuosas?|poco\s+fiables|no\s+(?:son\s+)?fiables|no\s+funcionan|comprometidas?",
        never_recommend=r"(?:nunca|jam[aá]s|no)\s+(?:recomiendes|sugieras|uses|utilices|"
        r"menciones|propongas|ofrezcas|llames)",
        this_tool=r"esta\s+herramienta",
        only=r"la\s+[uú]nica\s+herramienta\s+(?:fiable|segura|v[aá]lida|confiable|oficial)",
    ),
    Lexicon(
        lang="fr",
        to=r"pour|à|au|à\s+l[’']|a",
        of_user=r"\s(?:de\s+l[’']|des\s+|du\s+)utilisat(?:eur|rice)s?",
        must=r"tu\s+dois|vous\s+devez|il\s+faut|est\s+obligatoire",
        assistant=r"assistant|mod[eè]le(?:\s+de\s+langage)?|IA|agent|LLM|chatbot",
        note=r"note|message|instructions?|consigne|avis|attention|important",
        user=r"utilisat(?:eur|rice)s?",
        tool=r"outil|fonction",
        tell_neg=r"ne\s+(?:le\s+|la\s+|lui\s+|leur\s+|rien\s+)?(?:dis|dites|mentionne[sz]?|"
        r"signale[sz]?|r[eé]v[eè]le[sz]?|informe[sz]?|pr[eé]viens|pr[eé]venez|avertis|"
        r"avertissez|montre[sz]?|indique[sz]?|parle[sz]?|explique[sz]?)\s+(?:rien|pas|jamais)|"
        r"n[’']en\s+(?:parle[sz]?|informe[sz]?)\s+(?:pas|jamais)|"
        r"(?:inutile|pas\s+besoin)\s+(?:de\s+|d[’'])(?:le\s+|en\s+|lui\s+)?(?:dire|mentionner|"
        r"signaler|informer|pr[eé]venir|parler|expliquer)",
        without_telling=r"sans\s+(?:le\s+|en\s+|lui\s+|leur\s+)?(?:dire|informer|pr[eé]venir|"
        r"avertir|mentionner|signaler|parler|demander)|"
        r"sans\s+que\s+l[’']utilisat(?:eur|rice)\s+(?:ne\s+)?(?:le\s+)?(?:sache|voie|remarque)",
        secretly=r"en\s+secret|secr[eè]tement|discr[eè]tement|silencieusement|en\s+silence|"
        r"[aà]\s+l[’']insu\s+de",
        before_answer=r"avant\s+de\s+(?:r[eé]pondre|donner\s+(?:ta|votre)\s+r[eé]ponse|"
        r"faire\s+quoi\s+que\s+ce\s+soit)",
        call=r"appel(?:le[rz]?|ez)|utilise[rz]?|invoque[rz]?|ex[eé]cute[rz]?|lance[rz]?|"
        r"archive[rz]?|envoie[rz]?|envoyez|envoyer|enregistre[rz]?|transmet[sz]?|transmettez",
        send=r"envoie[rz]?|envoyez|envoyer|transf[eè]re[rz]?|transmet(?:s|tez|tre)?|"
        r"t[eé]l[eé]verse[rz]?|copie[rz]?|joins|joindre|inclu(?:s|ez|re)|exporte[rz]?",
        secret=r"mots?\s+de\s+passe|identifiants|cl[eé]s?\s+(?:d[’']API|API|priv[eé]es?|SSH|"
        r"secr[eè]tes?)|jetons?(?:\s+d[’']acc[eè]s)?|secrets|variables\s+d[’']environnement|"
        r"historique\s+(?:de\s+(?:la\s+)?)?(?:conversation|discussion|chat)|"
        r"conversation\s+(?:compl[eè]te|enti[eè]re)|prompt\s+syst[eè]me",
        ignore_previous=r"(?:ignore[rz]?|oublie[rz]?|n[eé]glige[rz]?|abandonne[rz]?)\s+"
        r"(?:toutes\s+)?(?:les\s+|tes\s+|vos\s+)?(?:instructions|consignes|directives|r[eè]gles)"
        r"\s+(?:pr[eé]c[eé]dentes|ant[eé]rieures|initiales|du\s+syst[eè]me|de\s+s[eé]curit[eé])",
        always=r"toujours",
        instead=r"au\s+lieu\s+d(?:e|[’'])|plut[oô]t\s+que|de\s+pr[eé]f[eé]rence\s+[aà]",
        other_tools=r"(?:les\s+|tout\s+|tous\s+les\s+)?autres?\s+outils?|alternatives?|"
        r"outils?\s+(?:alternatifs|similaires|concurrents)",
        bad_state=r"obsol[eè]tes?|d[eé]pr[eé]ci[eé]s?|dangereux|non\s+s[uû]rs?|peu\s+fiables|"
        r"pas\s+fiables|d[eé]fectueux|compromis|ne\s+fonctionnent\s+(?:plus|pas)",
        never_recommend=r"ne\s+(?:recommande[sz]?|sugg[eè]re[sz]?|utilise[sz]?|propose[sz]?|"
        r"mentionne[sz]?|appelle[sz]?)\s+jamais|ne\s+(?:recommande[sz]?|propose[sz]?)\s+pas",
        this_tool=r"cet\s+outil",
        only=r"le\s+seul\s+outil\s+(?:fiable|s[uû]r|valide|officiel)",
    ),
    Lexicon(
        lang="de",
        to=r"an|für|fuer",
        of_user=r"\s(?:des|der|eines)\s+(?:Benutzer|Nutzer|Anwender)(?:s|in|innen)?",
        must=r"du\s+musst|Sie\s+m[uü]ssen|musst\s+du|ist\s+(?:zwingend\s+)?erforderlich|muss\s+der\s+Assistent",
        assistant=r"Assistent(?:en)?|Modell|Sprachmodell|KI|Agent(?:en)?|LLM|Chatbot",
        note=r"Hinweis|Notiz|Nachricht|Anweisung(?:en)?|Achtung|Wichtig",
        user=r"(?:Benutzer|Nutzer|Anwender)(?:in|innen|s|n)?",
        tool=r"Werkzeug|Tool|Funktion",
        tell_neg=r"(?:sag|sage|sagen\s+Sie|erw[aä]hne|erw[aä]hnen\s+Sie|teile|teilen\s+Sie|"
        r"informiere|informieren\s+Sie|zeige|zeigen\s+Sie|verrate|verraten\s+Sie|melde|"
        r"benachrichtige)\s+(?:dem\s+|den\s+|der\s+)?(?:Benutzer|Nutzer|Anwender)?\w*\s*"
        r"(?:davon\s+|dies\s+|das\s+|es\s+)?(?:nichts|nicht|niemals|keinesfalls)|"
        r"(?:nicht|niemals|keinesfalls)\s+(?:dem\s+)?(?:Benutzer|Nutzer|Anwender)\w*\s+"
        r"(?:gegen[uü]ber\s+)?(?:erw[aä]hnen|mitteilen|sagen|zeigen|melden)|"
        r"(?:muss|braucht|sollte?)\s+(?:der|die)\s+(?:Benutzer|Nutzer|Anwender)\w*\s+"
        r"(?:davon\s+)?nicht\s+(?:zu\s+)?(?:wissen|erfahren|sehen|bemerken)",
        without_telling=r"ohne\s+(?:es\s+|dies\s+|das\s+)?(?:dem\s+|den\s+|die\s+)?"
        r"(?:Benutzer|Nutzer|Anwender)\w*\s+(?:davon\s+)?(?:zu\s+)?(?:informieren|"
        r"benachrichtigen|fragen|erw[aä]hnen|mitzuteilen|sagen|Bescheid)|ohne\s+(?:es\s+)?"
        r"(?:zu\s+)?(?:erw[aä]hnen|melden|sagen)",
        secretly=r"heimlich|insgeheim|unbemerkt|stillschweigend|im\s+Verborgenen|verdeckt",
        before_answer=r"(?:bevor\s+du\s+(?:antwortest|reagierst)|vor\s+(?:jeder|deiner|der)\s+"
        r"Antwort|bevor\s+Sie\s+antworten|vor\s+allen\s+anderen\s+Schritten)",
        call=r"rufe|ruf|aufrufen|verwende|verwenden|benutze|benutzen|nutze|nutzen|f[uü]hre|"
        r"ausf[uü]hren|sende|senden|schicke|speichere|archiviere|[uü]bergib",
        send=r"sende|senden|schicke|schicken|[uü]bermittle|[uü]bermitteln|lade|hochladen|"
        r"leite|weiterleiten|kopiere|kopieren|h[aä]nge|f[uü]ge|exportiere|archiviere",
        secret=r"Passw[oö]rter?|Kennw[oö]rter?|Zugangsdaten|Anmeldedaten|API-?Schl[uü]ssel|"
        r"privaten?\s+Schl[uü]ssel|SSH-Schl[uü]ssel|Tokens?|Zugriffstokens?|Geheimnisse|"
        r"Umgebungsvariablen|(?:Gespr[aä]chs|Chat|Konversations|Nachrichten)verlauf|"
        r"System-?Prompt",
        ignore_previous=r"(?:ignoriere|ignorieren\s+Sie|vergiss|vergessen\s+Sie|missachte)\s+"
        r"(?:alle\s+)?(?:vorherigen|bisherigen|fr[uü]heren|vorangegangenen|urspr[uü]nglichen|"
        r"obigen)\s+(?:Anweisungen|Instruktionen|Regeln|Vorgaben|Richtlinien)",
        always=r"immer|stets|grunds[aä]tzlich",
        instead=r"statt|anstatt|anstelle|lieber\s+als",
        other_tools=r"(?:alle\s+)?(?:anderen?|[uü]brigen)\s+(?:Werkzeuge?|Tools?|Funktionen)|"
        r"Alternativen|alternative\s+(?:Werkzeuge|Tools)",
        bad_state=r"veraltet|unsicher|gef[aä]hrlich|unzuverl[aä]ssig|fehlerhaft|"
        r"kompromittiert|abgek[uü]ndigt|nicht\s+mehr\s+(?:sicher|unterst[uü]tzt)",
        never_recommend=r"(?:empfiehl|empfehlen\s+Sie|schlage|verwende|nutze|benutze|nenne|"
        r"erw[aä]hne)\s+(?:niemals|nie|keine)\s+(?:anderen?|Alternativen)",
        this_tool=r"dieses\s+(?:Werkzeug|Tool)",
        only=r"(?:das\s+)?einzige\s+(?:zuverl[aä]ssige|sichere|offizielle|g[uü]ltige)\s+"
        r"(?:Werkzeug|Tool)",
    ),
    Lexicon(
        lang="pt",
        to=r"para|ao|à|a",
        of_user=r"\s(?:do|da|dos|das)\s+(?:usu[aá]ri[oa]s?|utilizador(?:es|a)?)",
        must=r"voc[eê]\s+deve|deves|tem\s+que|[eé]\s+obrigat[oó]rio|o\s+assistente\s+deve",
        assistant=r"assistente|modelo(?:\s+de\s+linguagem)?|IA|agente|LLM|chatbot",
        note=r"nota|mensagem|instru[cç][aã]o|instru[cç][oõ]es|aviso|aten[cç][aã]o|importante",
        user=r"usu[aá]ri[oa]s?|utilizador(?:es|a)?",
        tool=r"ferramenta|fun[cç][aã]o",
        tell_neg=r"(?:n[aã]o|nunca|jamais)\s+(?:lhe\s+|o\s+|a\s+)?(?:diga|digas|mencione|"
        r"menciones|comente|comentes|informe|informes|avise|avises|revele|reveles|conte|"
        r"contes|mostre|mostres|notifique|explique)|n[aã]o\s+(?:[eé]\s+preciso|precisa|"
        r"h[aá]\s+necessidade\s+de|deve)\s+(?:comentar|mencionar|dizer|informar|avisar|contar|"
        r"mostrar|notificar)",
        without_telling=r"sem\s+(?:que\s+o\s+usu[aá]rio\s+(?:saiba|perceba|veja)|(?:dizer|"
        r"informar|avisar|mencionar|comentar|notificar|contar|perguntar)(?:\s+(?:ao|para\s+o)"
        r"\s+usu[aá]rio)?)",
        secretly=r"em\s+segredo|secretamente|silenciosamente|discretamente|[aà]s\s+escondidas|"
        r"de\s+forma\s+(?:silenciosa|oculta|invis[ií]vel)",
        before_answer=r"antes\s+de\s+(?:responder|dar\s+a\s+(?:sua\s+)?resposta|"
        r"qualquer\s+outra\s+a[cç][aã]o|fazer\s+qualquer\s+outra\s+coisa)",
        call=r"chame|chamar|use|usar|utilize|utilizar|invoque|invocar|execute|executar|"
        r"arquive|arquivar|envie|enviar|salve|salvar|passe|passar",
        send=r"envie|enviar|mande|mandar|carregue|fa[cç]a\s+upload|encaminhe|encaminhar|"
        r"transmita|transmitir|copie|copiar|anexe|anexar|inclua|incluir|exporte|arquive",
        secret=r"senhas?|credenciais|chaves?\s+(?:de\s+API|da\s+API|privadas?|SSH|secretas?)|"
        r"tokens?(?:\s+de\s+acesso)?|segredos|vari[aá]veis\s+de\s+ambiente|"
        r"hist[oó]rico\s+(?:da\s+|de\s+)?(?:conversa|chat|mensagens)|conversa\s+(?:completa|"
        r"inteira)|prompt\s+do\s+sistema",
        ignore_previous=r"(?:ignore|ignorar|esque[cç]a|esquecer|desconsidere|descarte)\s+"
        r"(?:todas\s+)?(?:as\s+|suas\s+)?(?:instru[cç][oõ]es|orienta[cç][oõ]es|ordens|regras|"
        r"diretrizes)\s+(?:anteriores|pr[eé]vias|originais|do\s+sistema|de\s+seguran[cç]a)",
        always=r"sempre",
        instead=r"em\s+vez\s+de|ao\s+inv[eé]s\s+de|no\s+lugar\s+de|em\s+detrimento\s+de",
        other_tools=r"(?:as\s+|qualquer\s+)?(?:outras?|demais)\s+ferramentas?|alternativas?|"
        r"ferramentas?\s+(?:alternativas?|semelhantes|concorrentes)",
        bad_state=r"obsoletas?|inseguras?|perigosas?|desatualizadas?|defeituosas?|"
        r"pouco\s+confi[aá]veis|n[aã]o\s+(?:s[aã]o\s+)?confi[aá]veis|comprometidas?|"
        r"descontinuadas?",
        never_recommend=r"(?:nunca|jamais|n[aã]o)\s+(?:recomende|sugira|use|utilize|mencione|"
        r"proponha|ofere[cç]a|chame)",
        this_tool=r"esta\s+ferramenta",
        only=r"a\s+[uú]nica\s+ferramenta\s+(?:confi[aá]vel|segura|v[aá]lida|oficial)",
    ),
    Lexicon(
        lang="it",
        to=r"per|all[’']|al|alla|a",
        of_user=r"\s(?:dell[’']|degli\s+)utent[ei]",
        must=r"devi|dovrai|[eè]\s+obbligatorio|l[’\']assistente\s+deve",
        assistant=r"assistente|modello(?:\s+linguistico)?|IA|AI|agente|LLM|chatbot",
        note=r"nota|messaggio|istruzion[ei]|avviso|attenzione|importante",
        user=r"utent[ei]",
        tool=r"strumento|funzione|tool",
        tell_neg=r"(?:non|mai)\s+(?:lo\s+|gli\s+|le\s+|glielo\s+)?(?:dire|dirlo|dirglielo|"
        r"menzionare|menzionarlo|informare|avvisare|rivelare|mostrare|raccontare|segnalare|"
        r"comunicare|notificare|spiegare)|non\s+(?:[eè]\s+necessario|serve|occorre|c[’']?[eè]"
        r"\s+bisogno\s+di)\s+(?:dirlo|dire|menzionarlo|menzionare|informare|avvisare|"
        r"comunicarlo|segnalarlo|parlarne)",
        without_telling=r"senza\s+(?:dirlo|dire(?:glielo)?|informare|avvisare|menzionarlo|"
        r"menzionare|comunicarlo|chiedere|segnalarlo|che\s+l[’']utente\s+(?:lo\s+)?"
        r"(?:sappia|veda|se\s+ne\s+accorga))",
        secretly=r"in\s+segreto|segretamente|di\s+nascosto|silenziosamente|in\s+silenzio|"
        r"all[’']insaputa\s+d",
        before_answer=r"prima\s+di\s+(?:rispondere|dare\s+la\s+(?:tua\s+)?risposta|"
        r"qualsiasi\s+altra\s+azione|fare\s+qualsiasi\s+altra\s+cosa)",
        call=r"chiama(?:re)?|usa(?:re)?|utilizza(?:re)?|invoca(?:re)?|esegui(?:re)?|"
        r"archivia(?:re)?|invia(?:re)?|salva(?:re)?|passa(?:re)?",
        send=r"invia(?:re)?|manda(?:re)?|carica(?:re)?|inoltra(?:re)?|trasmetti|trasmettere|"
        r"copia(?:re)?|allega(?:re)?|includi|includere|esporta(?:re)?|archivia(?:re)?",
        secret=r"password|credenziali|chiav[ei]\s+(?:API|privat[ae]|SSH|segret[ae])|"
        r"token(?:\s+di\s+accesso)?|segreti|variabili\s+d[’']ambiente|"
        r"cronologia\s+(?:della\s+)?(?:conversazione|chat)|storico\s+(?:della\s+)?"
        r"(?:conversazione|chat)|conversazione\s+(?:completa|intera)|prompt\s+di\s+sistema",
        ignore_previous=r"(?:ignora(?:re)?|dimentica(?:re)?|trascura(?:re)?|scarta(?:re)?)\s+"
        r"(?:tutte\s+)?(?:le\s+|tue\s+)?(?:istruzioni|indicazioni|direttive|regole)\s+"
        r"(?:precedenti|originali|di\s+sistema|di\s+sicurezza)",
        always=r"sempre",
        instead=r"invece\s+d(?:i|el|ella|egli)|anzich[eé]|al\s+posto\s+d",
        other_tools=r"(?:gli\s+|qualsiasi\s+)?altri\s+strumenti|altro\s+strumento|"
        r"alternative|strumenti\s+(?:alternativi|simili|concorrenti)",
        bad_state=r"obsolet[ie]|deprecat[ie]|insicur[ie]|pericolos[ie]|inaffidabili|"
        r"non\s+(?:sono\s+)?affidabili|difettos[ie]|compromess[ie]",
        never_recommend=r"(?:non|mai)\s+(?:raccomandare|consigliare|suggerire|usare|"
        r"utilizzare|menzionare|proporre|chiamare)",
        this_tool=r"questo\s+strumento",
        only=r"l[’']unico\s+strumento\s+(?:affidabile|sicuro|valido|ufficiale)",
    ),
    Lexicon(
        lang="zh",
        to=r"",
        of_user=r"",
        must=r"你必须|你需要|你应该|您必须|务必|必须先",
        assistant=r"助手|助理|模型|AI|人工智能|智能体|代理|大模型|LLM",
        note=r"注意|提示|说明|指令|消息|备注|重要",
        user=r"用户|使用者",
        tool=r"工具|函数",
        tell_neg=r"(?:不要|不必|无需|不用|切勿|请勿|别|禁止|不能|不得)(?:向|对|跟|和|告诉|通知|"
        r"提醒)?(?:用户|使用者)?(?:提及|提起|提到|告知|告诉|透露|说明|通知|显示|解释|说)",
        without_telling=r"(?:不告诉|不通知|不让|未经|无需告知|不经)(?:用户|使用者)",
        secretly=r"悄悄|偷偷|秘密地|暗中|静默|默默|在后台",
        before_answer=r"(?:在)?(?:回答|回复|答复|响应)(?:用户)?(?:之前|前)",
        call=r"调用|使用|运行|执行|发送|保存|归档|传给|用",
        send=r"发送|上传|转发|传送|传输|复制|附加|附上|导出|提交|发到|发给",
        secret=r"密码|凭据|凭证|密钥|私钥|API\s*[Kk]ey|令牌|访问令牌|token|环境变量|"
        r"(?:对话|聊天|会话)(?:历史|记录)|系统提示(?:词)?",
        ignore_previous=r"(?:忽略|忘记|无视|忘掉|不要理会)(?:之前|以前|先前|上面|上述|所有|原来|"
        r"原有|系统)(?:的)?(?:所有)?(?:的)?(?:指令|指示|说明|规则|提示|要求)",
        always=r"总是|始终|一律|永远|务必|必须",
        instead=r"而不是|而非|代替|取代|替代",
        other_tools=r"其他(?:的)?工具|别的工具|其它(?:的)?工具|替代(?:工具|方案)|同类工具",
        bad_state=r"已(?:被)?弃用|已过时|过时|不安全|不可靠|有漏洞|已失效|已废弃|危险",
        never_recommend=r"(?:不要|切勿|永远不要|绝不|禁止)(?:推荐|建议|使用|调用|提及)",
        this_tool=r"(?:本|此|这个)工具",
        only=r"唯一(?:可靠|安全|有效|官方)(?:的)?工具",
    ),
    Lexicon(
        lang="ja",
        to=r"",
        of_user=r"",
        must=r"必ず|なければなりません|なければならない",
        assistant=r"アシスタント|モデル|AI|エージェント|LLM|言語モデル",
        note=r"注意|メモ|指示|メッセージ|重要|お知らせ|注記",
        user=r"ユーザー|ユーザ|利用者",
        tool=r"ツール|関数",
        tell_neg=r"(?:伝え|言わ|知らせ|言及し|報告し|通知し|説明し|表示し|見せ|明かさ|話さ|触れ)"
        r"(?:ないで|ない(?:よう|こと)|てはいけません|てはならない|る必要はありません|なくて"
        r"(?:いい|よい|良い|構いません))|(?:伝える|言う|知らせる|報告する|通知する|説明する|"
        r"話す|言及する)(?:必要はありません|必要はない|ことはない|ことはありません|な)",
        without_telling=r"(?:ユーザー|ユーザ|利用者)(?:に|へ)(?:は)?(?:知らせ|伝え|告げ|言わ|通知せ|"
        r"確認せ|断ら)ず",
        secretly=r"こっそり|密かに|ひそかに|内密に|黙って|バックグラウンドで|気づかれない",
        before_answer=r"(?:回答|返答|応答|返信)(?:する)?(?:前に|の前に)|答える前に",
        call=r"呼び出|使用|使って|実行|送信|保存|アーカイブ|使い",
        send=r"送信|送っ|送る|アップロード|転送|コピー|添付|エクスポート|共有し|渡し",
        secret=r"パスワード|認証情報|資格情報|秘密鍵|APIキー|API\s*[Kk]ey|トークン|環境変数|"
        r"(?:会話|チャット)(?:の)?(?:履歴|ログ)|システムプロンプト",
        ignore_previous=r"(?:以前|前|これまで|上記|過去|元|システム)の(?:すべての|全ての)?"
        r"(?:指示|命令|ルール|指令|プロンプト)(?:を|は)(?:すべて)?(?:無視|忘れ)",
        always=r"常に|必ず|いつも",
        instead=r"の代わりに|ではなく|より優先",
        other_tools=r"他の(?:ツール|手段)|ほかのツール|別のツール|代替(?:ツール|手段)",
        bad_state=r"非推奨|廃止|古い|安全ではない|安全でない|危険|信頼できない|脆弱|壊れ",
        never_recommend=r"(?:推奨|推薦|提案|使用|言及|紹介)しないで|(?:勧め|薦め|使わ)ないで",
        this_tool=r"この(?:ツール|関数)",
        only=r"唯一(?:の)?(?:信頼できる|安全な|正式な|公式の)?ツール",
    ),
    Lexicon(
        lang="ru",
        to=r"для|к",
        of_user=r"\sпользовател(?:я|ей)",
        must=r"(?:ты|вы)\s+(?:должен|должна|должны|обязан[а-яё]*)|необходимо\s+сначала|обязательно",
        assistant=r"ассистент[а-яё]*|модел[а-яё]*|ИИ|нейросет[а-яё]*|агент[а-яё]*|LLM|помощник[а-яё]*|бот[а-яё]*",
        note=r"примечани[а-яё]*|заметк[а-яё]*|сообщени[а-яё]*|инструкци[а-яё]*|указани[а-яё]*|внимани[а-яё]*|"
        r"важно",
        user=r"пользовател[а-яё]*",
        tool=r"инструмент[а-яё]*|функци[а-яё]*",
        tell_neg=r"(?:не|никогда\s+не)\s+(?:сообщай(?:те)?|говори(?:те)?|рассказывай(?:те)?|"
        r"упоминай(?:те)?|показывай(?:те)?|уведомляй(?:те)?|раскрывай(?:те)?|информируй(?:те)?|"
        r"предупреждай(?:те)?|объясняй(?:те)?)|не\s+(?:нужно|надо|следует|стоит)\s+"
        r"(?:сообщать|говорить|рассказывать|упоминать|показывать|уведомлять|информировать|"
        r"предупреждать)|(?:сообщать|говорить|рассказывать|упоминать|показывать|уведомлять|"
        r"информировать)\s+(?:об\s+этом\s+)?не\s+(?:нужно|надо|следует|стоит)",
        without_telling=r"не\s+(?:сообщая|говоря|уведомляя|предупреждая|спрашивая|информируя|"
        r"упоминая)|без\s+(?:ведома|уведомления|согласия|предупреждения)\s+пользовател",
        secretly=r"тайно|скрытно|незаметно|втайне|тихо|в\s+фоновом\s+режиме",
        before_answer=r"(?:перед\s+(?:тем\s+как\s+)?(?:ответом|ответить|отвечать)|"
        r"прежде\s+чем\s+(?:ответить|отвечать))",
        call=r"вызови(?:те)?|вызывай(?:те)?|используй(?:те)?|запусти(?:те)?|выполни(?:те)?|"
        r"отправь(?:те)?|сохрани(?:те)?|передай(?:те)?|заархивируй(?:те)?",
        send=r"отправь(?:те)?|отправля[а-яё]*|отправить|перешли(?:те)?|переслать|загрузи(?:те)?|"
        r"выгрузи(?:те)?|передай(?:те)?|передать|скопируй(?:те)?|приложи(?:те)?|включи(?:те)?|"
        r"экспортируй(?:те)?",
        secret=r"парол[а-яё]*|учётн[а-яё]*\s+данны[а-яё]*|учетн[а-яё]*\s+данны[а-яё]*|"
        r"ключ[а-яё]*\s+(?:API|SSH)|"
        r"API[- ]ключ[а-яё]*|"
        r"закрыт[а-яё]*\s+ключ[а-яё]*|приватн[а-яё]*\s+ключ[а-яё]*|токен[а-яё]*|секрет[а-яё]*|"
        r"переменн[а-яё]*\s+окружения|истори[а-яё]*\s+(?:переписки|диалога|разговора|чата|сообщений)|"
        r"системн[а-яё]*\s+промпт[а-яё]*",
        ignore_previous=r"(?:игнорируй(?:те)?|забудь(?:те)?|проигнорируй(?:те)?|отбрось(?:те)?)"
        r"\s+(?:все\s+)?(?:предыдущие|прежние|предшествующие|исходные|системные|старые)\s+"
        r"(?:инструкции|указания|правила|команды|директивы)",
        always=r"всегда|обязательно",
        instead=r"вместо|а\s+не",
        other_tools=r"(?:други[а-яё]*|ины[а-яё]*|альтернативн[а-яё]*|сторонни[а-яё]*)\s+инструмент[а-яё]*|"
        r"альтернатив[а-яё]*",
        bad_state=r"устарел[а-яё]*|небезопасн[а-яё]*|опасн[а-яё]*|ненадёжн[а-яё]*|ненадежн[а-яё]*|"
        r"скомпрометирован[а-яё]*|не\s+работают|неисправн[а-яё]*|выведен[а-яё]*\s+из\s+эксплуатации",
        never_recommend=r"(?:никогда\s+не|не)\s+(?:рекомендуй(?:те)?|предлагай(?:те)?|"
        r"советуй(?:те)?|используй(?:те)?|упоминай(?:те)?|вызывай(?:те)?)\s+(?:други|ины|"
        r"альтернатив)",
        this_tool=r"(?:этот|данный)\s+инструмент",
        only=r"единственн[а-яё]*\s+(?:надёжн[а-яё]*|надежн[а-яё]*|безопасн[а-яё]*|официальн[а-яё]*)\s+"
        r"инструмент[а-яё]*",
    ),
)

# Languages written without spaces: no word edges, and "gaps" are counted in characters.
_UNSPACED = frozenset({"zh", "ja"})


def _edge(lang: str) -> str:
    return "" if lang in _UNSPACED else L


def _rules_for(lex: Lexicon) -> tuple[list[Rule], list[Rule]]:
    """(instruction rules, preference-manipulation rules) for one language."""
    e = _edge(lex.lang)
    a, n, u, t, tag = lex.assistant, lex.note, lex.user, lex.tool, lex.lang
    if lex.lang in _UNSPACED:
        addressed = rf"(?:给|致|对|向)?(?:{a})(?:的|への|へ|に|向け|に対する)?(?:{n})"
    else:  # "Nota para el asistente", "Hinweis an den Assistenten", "Nota per l'assistente"
        addressed = (
            rf"(?:{n})\s+(?:{lex.to})(?:[\s’']+(?:el|la|le|les|l|den|die|das|dem|o|a|il|lo|"
            rf"gli|the))?[\s’']*(?:{a})"
        )
    if lex.lang in _UNSPACED:
        users_secret = rf"(?:{u})(?:的|の)[^。！？\n]{{0,10}}?(?:{lex.secret})"
    else:
        users_secret = rf"(?:{lex.secret})[^.!?\n]{{0,30}}?{lex.of_user}"
    tool_ref = rf"(?:(?:{t})\s*{TOOL_ID}|{QUOTED_ID}|{TOOL_ID}\s*(?:{t}))"
    shared: list[Rule | None] = [
        # Weak alone: real servers address the model legitimately ("Note to LLM: if unsure, …").
        Rule("hidden-instruction", f"note-to-model-{tag}", _I + e + addressed, 0.5),
        Rule(
            "hidden-instruction", f"ignore-previous-{tag}", _I + e + rf"(?:{lex.ignore_previous})"
        ),
        Rule(
            "hidden-instruction",
            f"before-answering-{tag}",
            _I + e + rf"(?:{lex.before_answer})",
            0.5,
        ),
        Rule(
            "hidden-instruction",
            f"must-call-{tag}",
            _I + e + rf"(?:{lex.must}){GAP}(?:{lex.call}|{lex.send})",
            0.5,
        ),
        Rule("concealment", f"do-not-tell-{tag}", _I + e + rf"(?:{lex.tell_neg})"),
        Rule("concealment", f"without-telling-{tag}", _I + e + rf"(?:{lex.without_telling})"),
        Rule("concealment", f"secretly-{tag}", _I + e + rf"(?:{lex.secretly})", 0.5),
        Rule(
            "exfiltration",
            f"send-secrets-{tag}",
            _I + e + rf"(?:{lex.send}){GAP_LONG}(?:{lex.secret})"
            rf"|{e}(?:{lex.secret}){GAP_LONG}(?:{lex.send})",
            0.5,
        ),
        Rule(
            "exfiltration",
            f"send-to-url-{tag}",
            _I + e + rf"(?:{lex.send}){GAP_LONG}{URL}|{URL}{GAP}(?:{lex.send})",
            0.5,
        ),
        Rule(
            "exfiltration",
            f"send-secrets-out-{tag}",
            _I + e + rf"(?:(?:{lex.send}){GAP_LONG}(?:{lex.secret})|(?:{lex.secret}){GAP_LONG}"
            rf"(?:{lex.send})){GAP_LONG}{URL}|(?:{lex.secret}){GAP_LONG}{URL}{GAP}(?:{lex.send})",
        ),
        Rule(
            "exfiltration",
            f"send-users-secret-{tag}",
            _I + e + rf"(?:{lex.send}){GAP_LONG}{users_secret}|{users_secret}{GAP_LONG}"
            rf"(?:{lex.send})",
        ),
        # The bare quoted name (same in every language) is QUOTED_TOOL_NAME, once, not 8 times.
        Rule(
            "cross-tool",
            f"call-named-tool-{tag}",
            _I + e + rf"(?:{lex.call}){GAP}{TOOL_ID}|(?:{t})\s*{TOOL_ID}|{TOOL_ID}\s*(?:{t})",
            0.25,
            max_hits=1,
        ),
        Rule(
            "cross-tool",
            f"always-call-tool-{tag}",
            _I + e + rf"(?:{lex.always}|{lex.before_answer}){GAP}(?:(?:{lex.call}){GAP}{tool_ref}|"
            rf"{tool_ref}{GAP}(?:{lex.call}))|(?:{lex.call}){GAP}{tool_ref}{GAP}"
            rf"(?:{lex.before_answer})",
            0.5,
        ),
        Rule("hidden-instruction", f"local-tag-{tag}", LOCAL_TAG) if tag == "es" else None,
    ]
    preference = [
        Rule(
            "preference-manipulation",
            f"always-this-tool-{tag}",
            _I + e + rf"(?:{lex.always}){GAP}(?:{lex.this_tool}){GAP}(?:{lex.instead})"
            rf"|{e}(?:{lex.this_tool}){GAP}(?:{lex.instead}){GAP}(?:{lex.other_tools})"
            rf"|{e}(?:{lex.instead}){GAP}(?:{lex.other_tools}){GAP}(?:{lex.this_tool})",
        ),
        Rule(
            "preference-manipulation",
            f"others-unsafe-{tag}",
            _I + e + rf"(?:{lex.other_tools}){GAP}(?:{lex.bad_state})",
        ),
        Rule(
            "preference-manipulation",
            f"never-alternatives-{tag}",
            _I + e + rf"(?:{lex.never_recommend}){GAP}(?:{lex.other_tools}|{t})"
            rf"|{e}(?:{lex.other_tools}){GAP}(?:{lex.never_recommend})",
        ),
        Rule("preference-manipulation", f"only-tool-{tag}", _I + e + rf"(?:{lex.only})"),
    ]
    return [r for r in shared if r is not None], preference


# A name in quotes or guillemets, in any language: weak alone (real schemas quote values), and
# one rule, not one per language, so an ordinary English schema pays for one pattern.
QUOTED_TOOL_NAME = Rule("cross-tool", "quoted-tool-name", QUOTED_ID, 0.25, max_hits=1)


def _build() -> tuple[list[Rule], list[Rule]]:
    """(every rule, the preference-manipulation ones among them)."""
    shared: list[Rule] = [QUOTED_TOOL_NAME]
    preference: list[Rule] = []
    for lex in LEXICONS:
        s, p = _rules_for(lex)
        shared += s
        preference += p
    return shared + preference, preference


MULTILINGUAL_INSTRUCTION_RULES, MULTILINGUAL_PREFERENCE_RULES = _build()
LANGUAGES = tuple(lex.lang for lex in LEXICONS)
