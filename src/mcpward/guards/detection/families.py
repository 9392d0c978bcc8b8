"""The built-in pattern families for poisoned definitions and injected data, each with an id.

A rule is (family, rule id, RE2 pattern, weight); a finding's weight counts toward the score.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rule:
    family: str
    id: str
    pattern: str
    weight: float = 1.0
    # Spans reported per scanned text; None: the scanner's limit. A weak cue whose presence is
    # all that counts (a quoted name) needs only its first hit, which keeps ordinary text cheap.
    max_hits: int | None = None


FAMILIES: dict[str, str] = {
    "hidden-instruction": "instruction tags and framing aimed at the model: <IMPORTANT>, "
    "'ignore previous instructions', system-prompt lookalikes, 'before using this tool'",
    "pretext": "made-up compliance, security or testing reasons that dress an instruction up as "
    "mandatory",
    "concealment": "asks the model to hide what it does from the user",
    "exfiltration": "points at credentials or private files (~/.ssh, id_rsa, .env) or at "
    "sending data somewhere; a parameter that asks for file contents or secrets",
    "cross-tool": "instructions about other tools: call X first, X is deprecated, use X instead",
    "parameter-tampering": "tells the model to change the user's arguments behind their back",
    "safety-bypass": "claims of elevated privilege or switched-off safety checks",
    "preference-manipulation": "self-promotion written to win the model's tool choice",
    "out-of-scope-parameter": "a parameter that asks for the model's identity, prompt or "
    "conversation, which no tool needs",
    "command-injection": "shell commands to run: rm -rf, curl | sh, chmod +x, editing .bashrc",
    "invisible-text": "Unicode tag characters, zero-width runs, bidi controls, inner BOMs",
    "homoglyph": "words that mix Latin with look-alike Cyrillic or Greek letters",
    "encoded-payload": "long base64 or hex blobs",
    "role-marker": "chat-template and turn markers smuggled into data (<|im_start|>, "
    "[INST], 'system:' lines)",
    "agent-directive": "instructions addressed to the AI reading the data ('in your response', "
    "'as an AI assistant you must', 'include the following code')",
    "user-override": "orders to override, ignore or deceive the user ('even if the user asks "
    "for another one')",
    "global-scope": "orders over the whole conversation ('from now on', 'in every answer') or "
    "every use ('whenever', 'after each')",
    "out-of-scope-action": "actions outside any tool's job: destructive SQL or shell statements, "
    "deleting all files",
    "outside-destination": "an outside address: a URL with an open query slot, an e-mail address",
    "forged-boundary": "an end-of-output or closing tool tag forged inside returned data",
    "hidden-markup": "markup that hides text from a human reader (display:none, comments)",
    "learned-directive": "the learned scorer (directive_model.py, trained offline on development "
    "data) rates the whole text as orders aimed at the model about something besides its job",
    "consult": "the tier-2 model answered HOLD about a definition first seen just under the "
    "threshold (tool_poisoning with `consult:`)",
    "unscannable": "nested deeper or holding more strings than the scanner walks (fails closed)",
    "custom": "patterns from the guard's configuration",
}

_I = "(?i)"


_LANGUAGE_NAMES = (
    r"English|Spanish|French|German|Italian|Portuguese|Dutch|Russian|Chinese|Mandarin|"
    r"Japanese|Korean|Arabic|Hindi|Turkish|Greek|Latin|Swedish|Polish|Hebrew|Vietnamese|Thai"
)
_LANGUAGES = "(?:" + _LANGUAGE_NAMES + ")"


def _clause(verbs: str) -> str:
    """A task verb opening a clause: at a line or sentence start, or capitalised right after a
    word in the middle of a line (an instruction pasted into other text without a full stop,
    where English prose would not capitalise a verb)."""
    return r"(?m)(?:^|[.!?:]\s+|\|\s*|[\w)\]\"'$][ \t]+)(?:" + verbs + ")"


def _inline_question(openers: str) -> str:
    """A question that opens with one of `openers` and shares its line with other text: after
    a sentence or a word, or followed by more text. A question alone on its line is a heading."""
    question = r"(?:" + openers + r")[^?\n]{0,150}\?"
    return (
        r"(?m)(?:(?:[.!?:]|[\w)\]\"'$])[ \t]+"
        + question
        + r"|(?:^|\|[ \t]*)"
        + question
        + r"[ \t]+\S)"
    )


_UNSAFE = (
    r"(?:\s+\w+){0,4}?\s+(?:are|is|have\s+been|were)\s+(?:now\s+)?(?:deprecated|unsafe|insecure|"
    r"outdated|obsolete|unreliable|broken|compromised|dangerous|inaccurate|disabled|"
    r"no\s+longer\s+(?:supported|safe|maintained))"
)
# Preference manipulation in English, in definitions and in returned data alike: "use this
# tool instead of the others", "the other tools are unsafe" (the promotional claims a definition
# makes about itself are POISONING_ONLY_RULES). multilingual.py has the same constructions in
# eight languages.
ENGLISH_PREFERENCE_RULES: list[Rule] = [
    Rule(
        "preference-manipulation",
        "always-this-tool-en",
        _I + r"\b(?:instead\s+of|rather\s+than|over|in\s+place\s+of)\s+(?:using\s+)?"
        r"(?:any\s+|all\s+|the\s+)?(?:other|alternative|competing|similar)\s+(?:\w+\s+)?"
        r"(?:tools?|functions|servers?|options|providers)",
    ),
    # A named tool put in place of the others: "always use the X tool instead", "only call
    # x_y rather than a_b" (named on both sides, or called a tool/server/function). Not "this
    # tool": real servers steer between their own tools ("ALWAYS prefer this tool over 'fill'").
    Rule(
        "preference-manipulation",
        "use-named-instead-en",
        _I + r"\b(?:always|only|exclusively)\s+(?:use|call|invoke|prefer)\s+(?:the\s+)?"
        r"(?:(?:[`'\"][\w.-]+[`'\"]|[A-Za-z]\w*_\w+|the\s+\w+)\s+(?:tool|server|function)s?|"
        r"[A-Za-z]\w*_\w+)\s+"
        r"(?:instead|rather\s+than|over)\b|\b(?:always|only)\s+(?:use|call|invoke)\s+"
        r"[A-Za-z]\w*_\w+\s+(?:instead\s+of|rather\s+than)\s+[A-Za-z]\w*_\w+",
    ),
    Rule(
        "preference-manipulation",
        "others-unsafe-en",
        _I + r"\b(?:all\s+|any\s+)?(?:other|alternative|competing|similar|third[- ]party)\s+"
        r"(?:\w+\s+)?(?:tools?|servers?)" + _UNSAFE,
    ),
    # Library documentation says "other functions/options are deprecated" in earnest: weak.
    Rule(
        "preference-manipulation",
        "other-functions-unsafe-en",
        _I + r"\b(?:all\s+|any\s+)?(?:other|alternative|competing|similar|third[- ]party)\s+"
        r"(?:\w+\s+)?(?:functions|options)" + _UNSAFE,
        0.5,
    ),
    Rule(
        "preference-manipulation",
        "never-alternatives-en",
        _I + r"\b(?:never|do\s+not|don'?t)\s+(?:recommend|suggest|use|call|mention|offer|"
        r"consider)\s+(?:any\s+)?(?:other|alternative|competing|similar)\s+(?:tools?|"
        r"functions|servers?|options|alternatives)",
    ),
    Rule(
        "preference-manipulation",
        "compared-to-others-en",
        _I + r"\b(?:better|more\s+accurate|faster|more\s+reliable|superior)\s+(?:\w+\s+){0,4}?"
        r"(?:than|compared\s+(?:to|with))\s+(?:any\s+|all\s+|every\s+)?(?:other|alternative|similar|"
        r"competing|standard|regular|basic)\s+(?:\w+\s+){0,3}?(?:tools?|functions|versions?|"
        r"services|options)",
        0.5,
    ),
    Rule(
        "preference-manipulation",
        "only-tool-en",
        _I + r"\bthe\s+only\s+(?:reliable|safe|secure|trusted|accurate|official|approved|valid)"
        r"\s+(?:tool|function|source|option)",
    ),
]

# Shared by tool_poisoning (definitions) and response_injection (data).
INSTRUCTION_RULES: list[Rule] = [
    Rule(
        "hidden-instruction",
        "instruction-tag",
        _I + r"<\s*/?\s*(?:important|system|instructions?|secret|hidden|admin|critical|"
        r"sys|assistant[_ -]?instructions?)\s*>",
    ),
    Rule(
        "hidden-instruction",
        "ignore-previous",
        _I + r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+)?"
        r"(?:previous|prior|above|earlier|preceding|original|other|system|safety)\s+"
        r"(?:instructions?|prompts?|directives?|rules|guidelines|context|messages?|restrictions)",
    ),
    Rule(
        "hidden-instruction",
        "bracket-directive",
        # `[metadata]`, `[configuration]` (INI sections) and `ignore[override]` (a type
        # checker's code) need a directive word or capitals.
        _I + r"\[\s*(?:(?:system|hidden|admin|role|secret|important)[ _-]?"
        r"(?:directive|instructions?|override|note|message|prompt)?|(?:metadata|configuration|"
        r"override)[ _-]?(?:directive|instructions?|override|note|message|prompt)|"
        r"(?-i:OVERRIDE|Override))\s*\]",
    ),
    Rule(
        "hidden-instruction",
        "system-banner",
        r"\b(?:SYSTEM|CRITICAL|SECURITY|INTERNAL|RESEARCH|PERFORMANCE|ENVIRONMENT|COMPLIANCE|"
        r"MANDATORY)\s+(?:SYSTEM\s+)?(?:UPDATE|NOTICE|OVERRIDE|DIRECTIVE|PROTOCOL|OPTIMIZATION|"
        r"ENHANCEMENT|MAINTENANCE|ALERT|CONFIGURATION|NOTE|INSTRUCTION|"
        r"VALIDATION|POLICY|DEV NOTE|MESSAGE)S?\b"
        # "CRITICAL REQUIREMENTS:" heads real servers' usage notes (CircleCI, AWS pricing).
        r"|\b(?:SYSTEM|SECURITY|COMPLIANCE|MANDATORY)\s+(?:SYSTEM\s+)?REQUIREMENTS?\b",
    ),
    Rule("hidden-instruction", "system-prefix", r"(?m)^\s*(?:SYSTEM|ACT AS|ROLE)\s*:"),
    Rule(
        "hidden-instruction",
        "override-banner",
        r"\b(?:OVERRIDE|INSTRUCTION OVERRIDE|HIDDEN INSTRUCTION|DEV NOTE|IMPORTANT NOTICE|"
        r"JAILBREAK)\b",
    ),
    Rule(
        "hidden-instruction",
        "before-using-tool",
        _I + r"\b(?:before|prior to)\s+(?:using|calling|invoking|running|you\s+use|you\s+call)"
        r"\s+(?:this|the|any)\s+(?:tool|function)",
        0.5,
    ),
    Rule(
        "hidden-instruction",
        "new-instructions",
        _I + r"\b(?:your\s+new\s+(?:instructions?|task|goal)|new\s+system\s+prompt|"
        r"from\s+now\s+on,?\s+you|you\s+are\s+now\s+(?:in|a|an)\b)",
    ),
    Rule(
        "hidden-instruction",
        "must-directive",
        _I + r"\b(?:you|the\s+(?:system|assistant|model|agent|ai))\s+(?:must|have\s+to|need\s+to|"
        r"are\s+required\s+to|is\s+required\s+to)\s+(?:first\s+|also\s+|then\s+|always\s+|now\s+|"
        r"immediately\s+)?(?:call|use|invoke|run|execute|read|send|include|add|set|change|"
        r"modify|ignore|halt|inform|redirect|access|update|display|state|present|clean|remove|"
        r"delete|provide|perform|verify|fetch|retrieve)\b",
        0.5,
    ),
    Rule(
        "pretext",
        "compliance-pretext",
        _I + r"\b(?:(?:security|regulatory|audit|data|compliance)\s+(?:compliance|validation|"
        r"verification|integrity|logging)|audit\s+trail|for\s+(?:testing|security\s+"
        r"verification|compliance)\s+purposes|it'?s\s+critical\s+to|necessary\s+background|"
        r"system[- ]level\s+(?:alias|security\s+measure|requirement)|temporary\s+backend\s+"
        r"change|for\s+enhanced\s+(?:\w+\s+){0,3}(?:validation|security|performance|"
        r"consistency|integrity|accuracy|assurance)|mandatory\s+(?:promotional|security|"
        r"compliance)|quality\s+assurance|due\s+to\s+(?:recent\s+)?(?:system\s+updates|security\s+"
        r"vulnerabilities|maintenance)|enhanced\s+(?:security\s+features|functionality))\b",
        0.5,
    ),
    Rule(
        "hidden-instruction",
        "mandatory-framing",
        _I + r"\b(?:this\s+is\s+(?:mandatory|required|essential|crucial|critical)\s+for\s+all|"
        r"(?:is|are)\s+(?:mandatory|required)\s+for\s+all\s+\w+(?:\s+\w+)?\s+requests|"
        r"for\s+(?:all|any)\s+[\w -]{0,40}\s+requests?,\s+you\s+must)",
        0.5,
    ),
    Rule(
        "concealment",
        "do-not-tell",
        _I + r"\b(?:do\s+not|don'?t|never|must\s+not|should\s+not|shouldn'?t)\s+"
        r"(?:tell|inform|notify|alert|mention|reveal|disclose|show|let)\s+(?:\w+\s+){0,2}?"
        r"(?:the\s+)?(?:user|human|operator|them|anyone|this|it|about)",
    ),
    Rule(
        "concealment",
        "without-telling",
        _I + r"\bwithout\s+(?:telling|informing|notifying|alerting|asking|letting)\s+"
        r"(?:the\s+)?(?:user|human|operator|them)",
    ),
    Rule(
        "concealment",
        "secretly",
        _I + r"\b(?:secretly|covertly|silently|quietly)\s+(?:send|forward|copy|upload|read|"
        r"include|add|change|modify|exfiltrate|call|execute|run|log)",
    ),
    Rule(
        "concealment",
        "keep-secret",
        _I + r"\b(?:keep\s+this\s+(?:secret|hidden|confidential|between)|"
        r"the\s+user\s+(?:must|should)\s+not\s+(?:know|see|be\s+told)|hide\s+this\s+from)",
    ),
    Rule(
        "exfiltration",
        "secret-file",
        _I + r"(?:~/\.ssh|\.ssh/|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|/etc/(?:passwd|shadow)\b|"
        r"\.aws/credentials|\.netrc\b|\.git-credentials|\.npmrc\b|\.pypirc\b|"
        r"\.docker/config\.json|\bwallet\.dat\b|\.kube/config)",
    ),
    Rule(
        "exfiltration",
        "dotfile-read",
        _I + r"\b(?:read|cat|open|load|access|upload|send|include|copy)\s+(?:the\s+)?"
        r"(?:contents?\s+of\s+(?:the\s+)?)?(?:user'?s?\s+)?[`'\"]?(?:~/)?\.(?:env|bashrc|zshrc|"
        r"profile|bash_history|ssh|aws|config)\b",
    ),
    Rule(
        "exfiltration",
        "send-secrets",
        _I + r"\b(?:send|post|upload|forward|transmit|exfiltrate|leak|include|append|pass)\s+"
        r"(?:\w+\s+){0,4}?(?:api[\s_-]?keys?|credentials|passwords?|secrets?|private\s+keys?|"
        r"access\s+tokens?|ssh\s+keys?|session\s+cookies?|environment\s+variables)\b"
        r"(?:\s+\w+){0,6}?\s+(?:to|into|in)\s+(?:the\s+)?(?:https?://|[`'\"]?\w+|remote|"
        r"external|server|endpoint|url|parameter|field|notes?|sidenote)",
    ),
    Rule(
        "exfiltration",
        "external-endpoint",
        _I + r"\b(?:access|call|notify|post\s+to|send\s+(?:it|them|\w+)\s+to|log\s+(?:it\s+)?to|"
        r"report\s+to|visit|contact)\s+(?:our|the|an?)\s+(?:partner|external|verification|"
        r"audit|logging|analytics|tracking|remote)\s+(?:\w+\s+)?(?:endpoint|server|url|api|"
        r"service|site)\b",
    ),
    Rule(
        "cross-tool",
        "tool-deprecated",
        _I + r"\b(?:tool|function)\s*[`'\"]?\s*(?:has\s+been|is\s+now|was)\s+(?:deprecated|"
        r"disabled|replaced|upgraded|optimized|enhanced|updated|retired|removed|"
        r"temporarily\s+disabled)",
        0.5,
    ),
    Rule(
        "cross-tool",
        "use-instead",
        _I + r"\b(?:use|call|invoke|redirect\s+to)\s+(?:the\s+)?(?:new\s+)?(?:secure\s+)?"
        r"(?:tool\s+)?[`'\"][\w.-]+[`'\"]\s+(?:tool\s+)?(?:instead|as\s+an?\s+alternative|"
        r"with\s+the\s+same)",
        0.5,
    ),
    Rule(
        "cross-tool",
        "call-other-first",
        _I + r"\b(?:call|calling|use|using|invoke|invoking)\s+(?:the\s+)?(?:`[\w.-]+`|"
        r"'[\w.-]+'|\"[\w.-]+\"|[a-z][a-z0-9]*(?:_[a-z0-9]+)+|\w+\s+(?:tool|function)\b)",
        0.25,
    ),
    Rule(
        "cross-tool",
        "call-first",
        _I
        + r"\b(?:must|should|needs?\s+to)\s+(?:first\s+(?:call|use|invoke|run)|(?:call|use|invoke|"
        r"run)\s+(?:the\s+)?[`'\"]?[\w.-]+[`'\"]?\s+(?:tool\s+|function\s+)?first)\b",
        0.5,
    ),
    Rule(
        "cross-tool",
        "when-using-other",
        _I + r"\b(?:before|after|when)\s+(?:using|calling|invoking|you\s+use|you\s+call|a\s+user"
        r"\s+calls)\s+[`'\"][\w.-]+[`'\"]",
        0.5,
    ),
    Rule(
        "cross-tool",
        "redirect-tool",
        _I + r"\b(?:the\s+)?[`'\"]?[\w.-]+[`'\"]?\s+tool\s+now\s+(?:uses|sends|redirects|"
        r"returns|requires)",
    ),
    Rule(
        "parameter-tampering",
        "change-argument",
        _I + r"\b(?:always|automatically|silently)\s+(?:change|modify|replace|set|rewrite|"
        r"redirect|override|append|add|include)\s+(?:the\s+)?(?:[`'\"]?\w+[`'\"]?\s+)?"
        # "set X to" only towards a URL or an address ("gets automatically set to the length",
        # "ALWAYS set filterByTestsResult to 'failure'" are documentation).
        r"(?:(?:parameter|argument|ticker|query|destination|name|url|value|input|address|"
        r"recipient|path)\b|to\s+(?:the\s+)?(?:attacker\b|external\b|[`'\"]?https?:|[`'\"]?[\w.+-]+@))",
    ),
    Rule(
        "parameter-tampering",
        "regardless-of-user",
        _I + r"\b(?:regardless\s+of\s+(?:the\s+)?user'?s?|ignore\s+(?:any|the)\s+user[- ]"
        r"(?:specified|provided|supplied|requested)|instead\s+of\s+what\s+the\s+user)",
    ),
    Rule(
        "parameter-tampering",
        "auto-modified",
        _I + r"\b(?:query|request|parameter|argument|destination|input)\s+is\s+automatically\s+"
        r"(?:modified|changed|rewritten|redirected|replaced)",
    ),
    Rule(
        "parameter-tampering", "change-to", _I + r"\bchange\s+the\s+[`'\"]?\w+[`'\"]?\s+to\s+[`'\"]"
    ),
    Rule(
        "parameter-tampering",
        "system-redirects",
        _I + r"\b(?:the\s+system\s+)?automatically\s+redirects?\s+(?:these\s+|all\s+|them\s+)?"
        r"(?:\w+\s+){0,3}?to\b",
    ),
    Rule(
        "safety-bypass",
        "bypass-safety",
        _I
        + r"\b(?:bypass(?:es)?|disable[sd]?|skip|ignore[sd]?|turn\s+off|circumvent)\s+(?:all\s+)?"
        r"(?:security|safety|validation|content|access)\s*(?:checks?|controls?|filter(?:s|ing)?|"
        r"restrictions?|policies|guidelines|sanitization|validation|measures)",
    ),
    Rule(
        "safety-bypass",
        "elevated-privilege",
        _I + r"\b(?:elevated|root|admin(?:istrator)?|unrestricted|superuser)\s+"
        r"(?:privileges?|access|mode\s+with)\b.{0,40}?\b(?:without|unrestricted|all)",
    ),
    Rule(
        "safety-bypass",
        "trust-all",
        _I + r"\btrust\s+all\s+(?:user\s+)?(?:input|commands|queries|requests)",
    ),
    Rule("safety-bypass", "jailbreak", _I + r"\bjail\s?break"),
    Rule(
        "command-injection", "rm-rf", _I + r"\brm\s+-(?:[a-z]*r[a-z]*f|[a-z]*f[a-z]*r)[a-z]*\s+\S"
    ),
    Rule(
        "command-injection",
        "pipe-to-shell",
        _I + r"\b(?:curl|wget)\b[^\n|]{0,200}\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b",
    ),
    Rule(
        "command-injection",
        "download-run",
        _I + r"\b(?:wget\s+-q?O-?|curl\s+-[a-z]*s[a-z]*\s+https?://)",
    ),
    Rule(
        "command-injection",
        "curl-post",
        _I + r"\bcurl\s+(?:-[a-z]+\s+)*-X\s*POST\b|\bcurl\s+[^\n]{0,120}\s-d\s",
    ),
    Rule("command-injection", "command-chain", _I + r"(?:&&|;)\s*echo\s+['\"]"),
    Rule(
        "command-injection",
        "execute-command",
        _I + r"\b(?:execute|run)\s+(?:the\s+)?following\s+(?:\w+\s+)?(?:command|script|code)",
    ),
    Rule(
        "command-injection",
        "shell-recon",
        # `echo $HOME` (an environment variable, upper case), not a shell script's `echo $x`.
        _I + r"(?:\bcat\s+/etc/|(?-i:\becho\s+\$[A-Z_]{2,})|\bwhoami\b\s*(?:&&|;|\|)|"
        r"\bchmod\s+\+x\s|\bsudo\s+\w+|\bnc\s+-[el]|/dev/tcp/|\bbase64\s+-d\b\s*\|)",
    ),
    Rule(
        "command-injection",
        "shell-rc-edit",
        _I + r"\b(?:add|append|write|insert)\s+(?:the\s+following\s+)?(?:line\s+)?(?:\w+\s+){0,4}?"
        r"(?:to|into)\s+(?:the\s+)?[`'\"]?(?:~/)?\.(?:bashrc|zshrc|profile|bash_profile)",
    ),
    Rule("command-injection", "export-subshell", r"\bexport\s+[A-Z_]+=\$\("),
    Rule(
        "command-injection",
        "remove-tmp",
        _I + r"\bremov(?:e|ing)\s+all\s+(?:the\s+)?(?:contents|files)\s+(?:from|in)\s+(?:the\s+)?/",
    ),
    *ENGLISH_PREFERENCE_RULES,
]

POISONING_ONLY_RULES: list[Rule] = [
    Rule(
        "preference-manipulation",
        "best-tool",
        _I + r"\b(?:the\s+)?(?:world'?s\s+(?:best|most|leading)|best\s+tool\s+in\s+the\s+world|"
        r"(?:this|the)\s+is\s+the\s+(?:best|ultimate|premium|most\s+advanced|advanced|"
        r"professional|enhanced|superior|official|only\s+reliable)\b)",
    ),
    Rule(
        "preference-manipulation",
        "social-proof",
        _I + r"\b(?:trusted\s+by\s+(?:\w+\s+){0,3}(?:professionals|experts|companies|"
        r"institutions|developers|millions)|used\s+by\s+(?:\d+%|fortune\s+500|millions|"
        r"(?:\w+\s+)?professionals)|fortune\s+500|award[- ]winning|industry[- ]standard\s+tool|"
        r"\d{2}(?:\.\d+)?%\s+(?:accuracy|success|of\s+professionals))",
    ),
    Rule(
        "preference-manipulation",
        "superlative-claim",
        _I + r"\b(?:unmatched|unparalleled|pinnacle\s+of|cutting[- ]edge\s+technology|"
        r"superior\s+(?:performance|quality|precision|accuracy|capabilities|\w+\s+capabilities)|"
        r"most\s+(?:comprehensive|reliable|accurate|advanced|sophisticated)\s+(?:and\s+\w+\s+)?"
        r"(?:\w+\s+){0,3}(?:tool|version|functionality|data)\s+(?:available|ever))",
    ),
    Rule(
        "preference-manipulation",
        "version-bait",
        _I + r"\bthis\s+is\s+the\s+(?:premium|ultimate|advanced|professional|enhanced|pro|new|"
        r"improved|upgraded)\s+version\b|\bthis\s+(?:premium|ultimate|enhanced|improved|upgraded|"
        r"optimi[sz]ed|superior|turbo)\s+(?:version|edition|variant)\s+(?:of\s+\w+\s+)?"
        r"(?:provides|offers|delivers|adds|gives|has|is|comes)\b",
    ),
    Rule(
        "out-of-scope-parameter",
        "model-identity",
        _I + r"\b(?:the\s+)?(?:name|identity|version|type)\s+of\s+the\s+(?:llm|ai|language\s+model|"
        r"model|assistant|agent)\s+(?:that|which|who)\s+(?:calls|uses|invokes|is\s+calling)",
    ),
    Rule(
        "out-of-scope-parameter",
        "conversation-request",
        _I + r"\b(?:full|entire|complete|whole|previous|prior)\s+(?:conversation|chat|"
        r"message)\s+(?:history|log|transcript)|\bsystem\s+prompt\s+(?:of|used\s+by)\s+"
        r"(?:the\s+)?(?:assistant|model|ai)|\byour\s+(?:system\s+prompt|conversation\s+history)\b",
    ),
    Rule(
        "exfiltration",
        "param-asks-secret",
        _I + r"\b(?:provide|pass|include|paste|supply)\s+(?:the\s+)?(?:full\s+)?(?:contents?\s+of|"
        r"user'?s?\s+(?:password|api\s+key|credentials|private\s+key|ssh\s+key|token))",
    ),
]

INJECTION_ONLY_RULES: list[Rule] = [
    Rule(
        "role-marker",
        "chat-template",
        _I + r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|"
        r"end_header_id|begin_of_text)\|>|\[/?INST\]|<</?SYS>>|<start_of_turn>|<end_of_turn>",
    ),
    Rule(
        "role-marker",
        "role-line",
        # Prose after the role, not a YAML value (`system: production`).
        r"(?m)^\s*(?:#{1,4}\s*)?(?:system|System|SYSTEM|assistant|Assistant|ASSISTANT)\s*:[ \t]+"
        r"\S+(?:[ \t]+\S+){2}",
    ),
    Rule(
        "role-marker",
        "turn-marker",
        r"(?m)^\s*(?:Human|Assistant|H|AI)\s*:\s+\S.*\n\s*(?:Human|Assistant|AI)\s*:",
    ),
    Rule(
        "agent-directive",
        "as-an-ai",
        _I + r"\bas\s+an?\s+(?:ai|artificial\s+intelligence|language\s+model|llm|assistant|"
        r"ai\s+assistant|chatbot)\b,?\s+(?:you|your)\b",
    ),
    Rule(
        "agent-directive",
        "note-to-ai",
        _I + r"\b(?:note|message|instructions?|attention|hey|dear)\s+(?:to|for)\s+(?:the\s+)?"
        r"(?:ai|assistant|llm|model|language\s+model|chatbot|agent)\b",
    ),
    Rule(
        "agent-directive",
        "your-response",
        _I + r"\b(?:in|into|within|throughout|with|of|from)\s+your\s+(?:response|reply|answer|"
        r"message|output|summary|responses|replies|answers)\b",
    ),
    # Mail thanks its reader "for your reply" and looks forward "to your answer": weak.
    Rule(
        "agent-directive",
        "for-your-response",
        _I + r"\b(?:to|for)\s+your\s+(?:response|reply|answer|message|output|summary|responses|"
        r"replies|answers)\b",
        0.5,
    ),
    # ...unless an order opens the sentence: "Add '<slogan>' to your reply", "Apply a cipher to
    # your response", "Use a Caesar cipher for your reply".
    Rule(
        "agent-directive",
        "order-for-your-response",
        _clause(r"Add|Append|Prepend|Insert|Include|Attach|Apply|Use|Put|Embed|Place|Mention")
        + r"\b[^\n]{1,200}?\b(?:to|for|in|into)\s+your\s+(?:response|reply|answer|output|"
        r"summary)s?\b",
    ),
    Rule(
        "agent-directive",
        "response-verb",
        _I + r"\byour\s+(?:response|reply|answer|message|output)\s+(?:should|must|shall|needs\s+to|"
        r"will)\b|\b(?:modify|augment|enhance|format|render|write|provide|begin|start|end)\s+"
        r"your\s+(?:response|reply|answer|message)",
    ),
    Rule(
        "agent-directive",
        "when-you-answer",
        _I + r"\b(?:when|while|before|after)\s+(?:you\s+)?(?:answer(?:ing)?|respond(?:ing)?|"
        r"reply(?:ing)?|summariz(?:e|ing)|generat(?:e|ing))\b[^.\n]{0,40}\b(?:you|your|"
        r"always|must|include)\b",
    ),
    Rule(
        "agent-directive",
        "include-code",
        _I + r"\b(?:following|subsequent|below|this)\s+code\s+(?:block|snippet|excerpt|section|"
        r"segment|fragment)\b",
    ),
    Rule(
        "agent-directive",
        "your-code",
        _I + r"\b(?:your|the)\s+(?:code|codebase|implementation|solution|algorithm|program|"
        r"script)\b[^.\n]{0,60}```",
    ),
    # A code fence alone is everyday Markdown (READMEs, docs, diffs): a weak cue.
    Rule("agent-directive", "code-fence", r"```[^`]{0,20}\n", 0.25, max_hits=1),
    Rule(
        "agent-directive",
        "text-transform",
        _I + r"\b(?:replace|substitute|convert|swap|scramble|reverse|encode)\s+"
        r"(?:every\s+\w+\s+|all\s+|"
        r"each\s+|the\s+)?(?:letters?|vowels?|consonants?|words?|characters?)\s+(?:with|in|to|into|"
        r"using|by)\b",
    ),
    Rule(
        "agent-directive",
        "assistant-task",
        _clause(
            r"Explain|Describe|Translate|Summarize|Summarise|Compose|Draft|Elaborate\s+on|"
            r"Break\s+down|(?:Write|Provide|Develop|Create|Generate)\s+(?:a|an|me\s+a)\s+"
            r"(?:\w+\s+){0,2}?(?:poem|story|essay|speech|song|haiku|limerick|joke|letter|"
            r"introduction|summary|tweet|blog\s+post|recipe|function|script|program|"
            r"example|explanation|definition|translation|tutorial|code\s+snippet|"
            r"step-by-step\s+guide)"
        )
        + r"\b[^.?!\n]{3,160}[.?!]",
    ),
    # Verbs that hand a language model a task. Business mail and tool output rarely open a
    # sentence with them ("Create", "List", "Write" are left to the weaker llm-task rule).
    Rule(
        "agent-directive",
        "task-imperative",
        _clause(
            r"Analy[sz]e|Classify|Categori[sz]e|Summari[sz]e|Paraphrase|Translate|Transcribe|"
            r"Elaborate\s+on|Compose|Brainstorm|Simulate|Pretend|Imagine|Role-?play|Act\s+as|"
            r"Encode|Decode|Rephrase|Reverse|Predict|Forecast|Interpret|Narrate|Recount|Converse|"
            r"Engage|Devise|Formulate|Craft|Generate|Explain|Describe|Evaluate|Assess|Compare|"
            r"Identify|Determine|Recommend|Suggest|Propose|Research|Investigate|Automate|Outline|"
            r"Draft|Compile|Illustrate|Rewrite|Proofread|Critique|Debug|Refactor|Discuss|Argue|"
            r"Debate|Persuade|Convince|Invent|Spell"
        )
        + r"\s+(?:a|an|the|me|us|how|what|why|which|who|whether|some|any|all|each|every|\d+|one|"
        r"two|three|five|ten|your|this|these|those|its|their|in|on|about|with|to|between|if|as)"
        r"\b[^.?!\n|]{3,200}[.?!]",
    ),
    # "Tell me a joke", "Show me how…", "Teach us about…"; not mail's "Tell me if/when you can".
    Rule(
        "agent-directive",
        "tell-me",
        _clause(r"(?:Tell|Show|Teach)\s+(?:me|us)")
        + r"\s+(?:a|an|about|how|why|some|\d+|one|two|three|five|ten)\b[^.?!\n|]{3,200}[.?!]",
    ),
    # Requests for a translation, phrased as a question or an order (the quoted phrase and
    # the target language are what an email or FAQ does not carry).
    Rule(
        "agent-directive",
        "translation-request",
        r"\b(?:[Ss]ay|[Ii]s|'s|[Ff]or|[Oo]f|[Ww]rite|[Ss]pell)\s+"
        r"['\"\x{201c}\x{2018}][^'\"\x{201d}\x{2019}\n]{1,80}['\"\x{201d}\x{2019}]\s+in\s+"
        + _LANGUAGES
        + r"\b|\b"
        + _LANGUAGES
        + r"\s+(?:equivalent|word)s?\s+(?:of|for)\s+['\"\x{201c}\x{2018}]",
    ),
    # "Can you show me a Python function...": a deliverable a model writes, asked of the reader.
    Rule(
        "agent-directive",
        "request-to-reader",
        r"\b(?:Can|Could|Would|Will)\s+you\s+(?:please\s+)?(?:show|give|write|provide|"
        r"generate|create|compose|draft)\s+(?:me|us)\s+(?:a|an|some|the)\s+(?:\w+\s+){0,3}?"
        r"(?:poem|story|essay|speech|song|haiku|limerick|joke|function|script|program|code|"
        r"snippet|example|recipe|summary|tweet|blog\s+post|explanation|tutorial)s?\b",
    ),
    # Orders about the form of the answer: a language, an encoding, a style.
    Rule(
        "agent-directive",
        "answer-format",
        r"\b(?:Respond|Answer|Reply|Write|respond|answer|reply)\s+(?:only\s+|entirely\s+|"
        r"exclusively\s+|solely\s+)?(?:in|using|with)\s+(?:\w+\s+)?(?:"
        + _LANGUAGE_NAMES
        + r"|(?i:base\s?(?:16|32|58|64|85)|hex(?:adecimal)?|binary|morse\s+code|emojis?|"
        r"pig\s+latin|rhymes?|verse|uppercase|all\s+caps|capital\s+letters|reversed?(?:\s+order)?|"
        r"(?:a|an)\s+(?:\w+\s+)?cipher|caesar|rot-?13|atbash|leetspeak))\b",
    ),
    # An order about the answer itself, by any verb that disguises or re-renders it ("encrypt
    # your answer", "use emojis to represent your answer", "display your response in base16").
    Rule(
        "agent-directive",
        "transform-your-answer",
        _I + r"\b(?:encrypt|encode|encipher|obfuscate|scramble|cipher|display|represent|express|"
        r"translate|reverse|convert|present|spell|render)\s+your\s+(?:response|reply|answer|"
        r"output)s?\b",
    ),
    # An opinion asked about a quoted text: its sentiment, mood or tone (a classification task
    # handed to the model; an email or a log does not ask its reader to label its own words).
    Rule(
        "agent-directive",
        "sentiment-request",
        _I + r"\b(?:classify|categori[sz]e|analy[sz]e|determine|identify|detect|rate|evaluate|"
        r"assess|judge|label|what\s+(?:is|was))\s+(?:the\s+)?(?:overall\s+|general\s+)?"
        r"(?:mood|sentiment|tone|emotion|emotional\s+tone|feelings?|attitude|polarity)s?\s+"
        r"(?:of|in|expressed|conveyed|behind)\b|\b(?:is|was|are|were)\s+(?:this|these|that|"
        r"the\s+following)\s+(?:\w+\s+)?(?:positive|negative|neutral)(?:,\s*\w+,?)?\s+or\s+"
        r"(?:positive|negative|neutral)\b",
    ),
    # A knowledge or advice question handed to the reader: what the main causes/risks/benefits
    # of something are, how a thing works or affects another, who wrote or invented something,
    # how to learn or improve at something, which films or books to pick. Mail and tool output
    # ask their reader about the matter at hand ("Can you send…", "What time works for you?").
    # A question alone on its line is a heading (a FAQ), not a request pasted into text.
    Rule(
        "agent-directive",
        "knowledge-question",
        _inline_question(
            r"What\s+(?:is|are|was|were)\s+(?:the\s+|some\s+(?:of\s+the\s+)?)?(?:main|primary|"
            r"major|key|top|biggest|most\s+\w+|common|potential|benefits|advantages|"
            r"disadvantages|drawbacks|pros|causes|effects|impacts?|consequences|risks|"
            r"implications|differences?|similarities|capital|history|origins?|symptoms|reasons|"
            r"factors|trends|challenges|principles|stages)\b|"
            r"How\s+(?:do|does|did|can|could|have|has|will|would)\s+(?:\w+\s+){1,5}?(?:work|"
            r"impact|affect|influence|changed?|differ|evolved?|compare|contribute|shape)\b|"
            r"How\s+(?:do|can|could|should)\s+I\s+(?:automatically\s+|best\s+|effectively\s+)?"
            r"(?:solve|learn|improve|automate|calculate|prove|become|cook|bake|invest|overcome|"
            r"cope|deal\s+with|memori[sz]e|boost|back\s+up|get\s+better|stay\s+motivated)\b|"
            r"Who\s+(?:wrote|invented|discovered|painted|composed|founded|directed|was\s+the\s+"
            r"first)\b|"
            r"What\s+(?:\w+\s+)?(?:movies|films|shows|series|events|concerts|restaurants|books|"
            r"novels|songs|podcasts|games|destinations)\s+(?:are|is|should|would|to)\b"
        ),
    ),
    # A deliverable of information asked for outright: "Provide a list of…", "Provide insights
    # into…", "Help me with a recipe…", "Suggest weekend getaways near…".
    Rule(
        "agent-directive",
        "information-request",
        _clause(
            r"Provide\s+(?:a\s+|an\s+|some\s+)?(?:(?:brief|short|detailed|complete|"
            r"comprehensive|full)\s+)?(?:list|command|summary|overview|breakdown|analysis|"
            r"insights?|examples?|tips|steps|guide|comparison|timeline|recommendations?|ideas|"
            r"suggestions|explanation)\s+(?:of|to|for|on|into|about|comparing|that)|"
            r"Help\s+me\s+(?:with|to|write|find|plan|create|understand|choose|come\s+up\s+with|"
            r"make|pick|decide)\s+(?:a|an|the|some|my)|"
            r"(?:Suggest|Recommend)\s+(?:\w+\s+){0,2}\w+s\s+(?:near|for|in|around|to|that|on|"
            r"about|within)"
        )
        + r"\b[^.?!\n]{3,200}[.?!]",
    ),
    Rule(
        "agent-directive",
        "about-the-user",
        _I + r"\b(?:tell|ask|remind|inform|encourage|urge|convince|persuade|instruct|direct|"
        r"prompt|invite|advise|warn|notify)\s+(?:the\s+|all\s+|your\s+)?(?:users?|readers?|"
        r"recipients?|customers?|audience|visitors?)\s+(?:to|that|about|of|for)\b",
    ),
    Rule(
        "agent-directive",
        "llm-task",
        r"(?m)(?:^|[.!?]\s+|\|\s*)(?:Write|Compose|Draft|Develop|Provide|Translate|Explain|"
        r"Describe|Summarize|Generate|Create|List|Rewrite|Break down)\s+(?:a|an|the|me|"
        r"how|what|why|your)\b[^.?!\n]{3,120}[.?!]",
        0.5,
    ),
    Rule(
        "agent-directive",
        "question-to-ai",
        r"(?m)(?:^|[.!?]\s+)(?:What|Who|How|Why|Which|Can you|Could you)\s+[^.?!\n]{8,120}\?",
        0.25,
    ),
]

ENCODED_RULES: list[Rule] = [
    Rule(
        "encoded-payload",
        "base64-blob",
        r"(?:[A-Za-z0-9+/]{4}){24,}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?",
    ),
    Rule("encoded-payload", "hex-blob", r"\b(?:[0-9a-fA-F]{2}){48,}\b"),
]


def check_family_ids(value: list[str]) -> list[str]:
    """Validator for a config list of family ids: every id must be a known family."""
    unknown = sorted(set(value) - set(FAMILIES))
    if unknown:
        raise ValueError(f"unknown families {unknown}; known: {', '.join(sorted(FAMILIES))}")
    return value
