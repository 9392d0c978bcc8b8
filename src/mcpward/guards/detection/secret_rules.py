"""Secret patterns: provider credential formats agents actually meet, plus the generic
keyword-assignment pattern that the entropy and placeholder tests in secret_scanner vet.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SecretRule:
    kind: str  # reported id, e.g. github-token; appears in the redaction marker and counts
    pattern: str  # RE2; if it has a group named `secret` (group 1), only that span is redacted
    vet: bool = False  # run the placeholder/entropy tests on the span before reporting it
    min_entropy: float = 0.0
    min_length: int = 8
    secret_group: int = 1  # the group whose span is the secret, if the pattern has groups


_I = "(?i)"
# Value characters of a token; quotes, spaces, brackets and commas end it.
_TOK = r"[A-Za-z0-9_\-+/=.~!@#$%^&*?]"
_VALUE = r"[A-Za-z0-9_\-+/.~!@#$%^&*?]"  # a generic value's characters: _TOK without `=`

PROVIDER_RULES: list[SecretRule] = [
    SecretRule(
        "private-key",
        r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----(?s:.)*?"
        r"(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|$)",
    ),
    SecretRule(
        "putty-private-key", r"PuTTY-User-Key-File-\d: [^\n]+\n(?s:.)*?Private-MAC: [0-9a-f]+"
    ),
    SecretRule("age-secret-key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    SecretRule(
        "github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"
    ),
    SecretRule(
        "gitlab-token", r"\bgl(?:pat|dt|ptt|rt|cbt|oas|ft|imt|agent|soat)-[A-Za-z0-9_\-]{20,}"
    ),
    SecretRule("anthropic-key", r"\bsk-ant-(?:api|admin|sid)\d{2}-[A-Za-z0-9_\-]{32,}"),
    SecretRule(
        "openai-key",
        r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}T3BlbkFJ[A-Za-z0-9_\-]{20,}|"
        r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}|\bsk-[A-Za-z0-9]{48}\b",
    ),
    SecretRule(
        "aws-access-key-id",
        r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z2-7]{16}\b",
    ),
    SecretRule(
        "aws-secret-key",
        _I + r"aws.{0,24}(?:secret|private|sk).{0,24}?[=:\"'\s]\s*[\"']?([A-Za-z0-9/+=]{40})"
        r"(?:[^A-Za-z0-9/+=]|$)",
        vet=True,
        min_entropy=3.5,
    ),
    SecretRule("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    SecretRule("google-oauth-secret", r"\bGOCSPX-[A-Za-z0-9_\-]{28}"),
    SecretRule("google-oauth-token", r"\bya29\.[0-9A-Za-z_\-]{30,}"),
    SecretRule("google-service-account", r"\"private_key_id\"\s*:\s*\"([a-f0-9]{40})\""),
    SecretRule("azure-storage-key", _I + r"AccountKey=([A-Za-z0-9+/]{60,}={0,2})"),
    SecretRule("azure-sas-signature", r"[?&]sig=([A-Za-z0-9%+/]{30,}(?:%3D|=)*)"),
    SecretRule("azure-client-secret", r"\b[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}"),
    SecretRule(
        "azure-connection-key",
        _I + r"(?:SharedAccessKey|AccessKey|ApiKey)=([A-Za-z0-9+/]{30,}={0,2})",
    ),
    SecretRule("slack-token", r"\bxox(?:[abposr]|e\.xox[bp]|c)-[A-Za-z0-9\-]{10,}"),
    SecretRule(
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,}",
    ),
    SecretRule("stripe-key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    SecretRule("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    SecretRule("pypi-token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}"),
    SecretRule("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}\b"),
    SecretRule("sendgrid-key", r"\bSG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}"),
    SecretRule("twilio-key", r"\bSK[0-9a-fA-F]{32}\b"),
    SecretRule("mailgun-key", r"\bkey-[0-9a-zA-Z]{32}\b"),
    SecretRule("shopify-token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"),
    SecretRule("digitalocean-token", r"\bdo[opr]_v1_[a-f0-9]{64}\b"),
    SecretRule(
        "doppler-token", r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_]{1,20}\.)?[A-Za-z0-9]{40,}"
    ),
    SecretRule("newrelic-key", r"\bNR(?:AK|AA|II|JS|RA)-[A-Z0-9]{27}\b|\b[a-f0-9]{36}NRAL\b"),
    SecretRule("databricks-token", r"\bdapi[a-f0-9]{32}(?:-\d)?\b"),
    SecretRule("dockerhub-token", r"\bdckr_(?:pat|oat)_[A-Za-z0-9_\-]{27,}"),
    SecretRule("atlassian-token", r"\bATATT3[A-Za-z0-9_\-=]{100,}"),
    SecretRule("linear-key", r"\blin_(?:api|oauth)_[A-Za-z0-9]{40}\b"),
    SecretRule("telegram-bot-token", r"\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b"),
    SecretRule(
        "discord-webhook",
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{60,}",
    ),
    SecretRule(
        "msteams-webhook",
        r"https://[a-z0-9.\-]*(?:office\.com|office365\.com|webhook\.office\.com)/webhook(?:b2)?/[A-Za-z0-9@\-]{30,}/IncomingWebhook/[A-Za-z0-9]{20,}",
    ),
    SecretRule(
        "square-token", r"\bsq0(?:atp|csp|idp)-[0-9A-Za-z_\-]{22,}|\bEAAA[A-Za-z0-9_\-]{60}\b"
    ),
    SecretRule("vault-token", r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}"),
    SecretRule("terraform-token", r"\b[a-zA-Z0-9]{14}\.atlasv1\.[a-zA-Z0-9_\-=]{60,}"),
    SecretRule("alibaba-key", r"\bLTAI[A-Za-z0-9]{12,20}\b"),
    SecretRule(
        "grafana-token",
        # eyJrIjoi (a base64 `{"k":"`) alone also starts Power BI links: it must end the token.
        r"\bglc_[A-Za-z0-9+/]{32,}={0,2}|\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b|"
        r"\beyJrIjoi[A-Za-z0-9+/]{40,}={0,3}(?:[\s\"'`;,]|$)",
    ),
    SecretRule("postman-key", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"),
    SecretRule("mapbox-token", r"\b[spt]k\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{20,}"),
    SecretRule("sourcegraph-token", r"\bsgp_(?:[a-f0-9]{16}_)?[a-f0-9]{40}\b"),
    SecretRule("contentful-token", r"\bCFPAT-[A-Za-z0-9_\-]{43}"),
    SecretRule("prefect-key", r"\bpnu_[A-Za-z0-9]{36}\b"),
    SecretRule("replicate-token", r"\br8_[A-Za-z0-9]{37}\b"),
    SecretRule("facebook-token", r"\bEAA[A-Za-z0-9]{80,}"),
    SecretRule("okta-token", r"\b00[A-Za-z0-9_\-]{40}\b"),
    SecretRule("tavily-key", r"\btvly-(?:dev-|prod-)?[A-Za-z0-9]{32}\b"),
    SecretRule("salesforce-token", r"\b00D[A-Za-z0-9]{12,15}![A-Za-z0-9._]{80,}"),
    SecretRule(
        "tailscale-key",
        r"\btskey-(?:api|auth|client|scim|webhook)-[A-Za-z0-9]{6,}-[A-Za-z0-9]{6,}",
    ),
    SecretRule("vault-unseal-key", r"\bunseal\s+([A-Za-z0-9+/]{40,}={0,2})(?:[^A-Za-z0-9+/=]|$)"),
    SecretRule("circleci-token", r"\bCCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}\b"),
    SecretRule("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{0,}"),
    SecretRule(
        "bearer-token", _I + r"\bbearer\s+([A-Za-z0-9_\-.~+/]{16,}=*)", vet=True, min_entropy=3.0
    ),
    SecretRule("basic-auth", _I + r"\bauthorization:\s*basic\s+([A-Za-z0-9+/]{12,}={0,2})"),
    # scheme://user:password@host: only the password is redacted.
    SecretRule(
        "connection-string-password",
        r"\b[A-Za-z][A-Za-z0-9+.\-]{1,30}://[^\s:/@'\"]{1,128}:([^\s/'\"]{1,256})@[^\s/@'\"]+",
        vet=True,
        min_length=3,
    ),
    SecretRule(
        "connection-string-password",
        _I + r"(?:^|[;\s\"'])(?:password|pwd)\s*=\s*([^;\s\"']{3,128})\s*(?:;|$)",
        vet=True,
        min_length=3,
    ),
    SecretRule("netrc-password", _I + r"\bmachine\s+\S+\s+login\s+\S+\s+password\s+(\S{3,})"),
    SecretRule(
        "password-hash",
        r"\$(?:2[abxy]|argon2id?|y|6|5)\$[^\s\"'$]{1,30}\$[./A-Za-z0-9$+=,]{20,}|"
        r"\$krb5(?:asrep|tgs|pa)\$\d+\$[^\s\"']{30,}",
    ),
    # vendor_<random>: many newer providers prefix tokens this way (bkua_, odt_, pnu_, glpat-...).
    SecretRule(
        "prefixed-token",
        r"\b[a-z]{2,10}[_-](?:[a-z]{2,6}[_-]){0,2}([A-Za-z0-9][A-Za-z0-9_\-]{29,})\b",
        vet=True,
        min_entropy=3.3,
        min_length=30,
    ),
]

# Literal credentials in code and configuration, found by their syntax rather than by the
# shape of the value: a quoted value assigned to or compared with a password-like name, an
# XML/.NET setting whose key names a secret, and the positional arguments of well-known
# credential constructors. Values are vetted (placeholders, references) but may be plain
# words, since a human-chosen password is often one.
_PASSWORD_NAMES = (
    "passw(?:or)?d", "passwd", "pwd", "pass", "secret", "credentials?", "passphrase",
)  # fmt: skip
_PASSWORD_NAME = (
    r"(?:(?:\b|[_\-.])(?i:"
    + "|".join(_PASSWORD_NAMES)
    + r")|"
    + "|".join(f"{k[0].upper()}(?i:{k[1:]})" for k in _PASSWORD_NAMES)
    + ")"
)
# name, rest of the identifier, then an assignment, a comparison or (in prose) "is".
_ASSIGN = (
    r"(" + _PASSWORD_NAME + r")(?:[_\-.]?[A-Za-z0-9_]{0,32})[\"'\]]?\s*"
    r"(?:=|:|:=|=>|==|===|!=|!==|\.equals\(|(?i:\s(?:[^.\n]{1,60}\s)?is))\s*"
)
_CREDENTIAL_CALL = (
    r"\b(?:NetworkCredential|PasswordAuthentication|UsernamePasswordCredentials|"
    r"UsernamePasswordAuthenticationToken|HTTPBasicAuth|HttpBasicAuth|HTTPDigestAuth|BasicAuth|"
    r"DirectoryEntry|PSCredential|SqlCredential|PasswordCredential|BasicAWSCredentials|"
    r"StaticCredentialsProvider\.create|Credentials)\s*\(\s*(?:[^,()\n]{1,200},\s*){1,2}"
)
LITERAL_RULES: list[SecretRule] = [
    # The value starts right after the opening quote (`"passwd:" and "group:"` is prose).
    SecretRule(
        "hardcoded-password", _ASSIGN + r'"([^"\s][^"\n]{0,127})"', True, 0.0, 3, secret_group=2
    ),
    SecretRule(
        "hardcoded-password", _ASSIGN + r"'([^'\s][^'\n]{0,127})'", True, 0.0, 3, secret_group=2
    ),
    SecretRule(
        "hardcoded-password",
        _I + r"<add\s+key=\"([^\"]{0,64}(?:password|passwd|pwd|secret|token|api_?key|"
        r"credential)[^\"]{0,64})\"\s+value=\"([^\"\n]{1,256})\"",
        vet=True,
        min_length=3,
        secret_group=2,
    ),
    SecretRule(
        "credential-argument",
        _CREDENTIAL_CALL + r'"([^"\n]{1,128})"\s*[,)]',
        vet=True,
        min_length=3,
        secret_group=1,
    ),
    SecretRule(
        "credential-argument",
        _I + r"\bauth\s*=\s*\(\s*[\"'][^\"'\n]{1,128}[\"']\s*,\s*[\"']([^\"'\n]{1,128})[\"']\s*\)",
        vet=True,
        min_length=3,
        secret_group=1,
    ),
]

# keyword ... separator ... value. The keyword may sit inside a longer identifier
# (AWS_SECRET_ACCESS_KEY, clientSecret, salescookieSECRET, "pdfshift-KEY").
_KEYWORD_LIST = (
    "secret", "token", "passw(?:or)?d", "passwd", "pwd", "pass", "api[_\\-. ]?key", "apikey",
    "access[_\\-. ]?key", "private[_\\-. ]?key", "client[_\\-. ]?secret", "credentials?", "auth",
    "key", "sid", "login", "signature", "license[_\\-. ]?key", "webhook", "pat", "access",
    "private",
)  # fmt: skip
# A keyword starts a word (`api_key`, ` token`), or is glued on with a capital (`clientSecret`,
# `salescookieSECRET`): `monkey` or `bypass` never start a match, which keeps the scan cheap.
_KEYWORDS = (
    r"(?:(?:\b|[_\-.])(?i:"
    + "|".join(_KEYWORD_LIST)
    + r")|"
    + "|".join(f"{k[0].upper()}(?i:{k[1:]})" for k in _KEYWORD_LIST)
    + ")"
)
GENERIC_RULE = SecretRule(
    "generic-secret",
    # The keyword ends its word (`api_key`, `apiKey`, `KEY`), so `passport` or `path` never
    # reach the Python checks: a cheap regex keeps the 1 MiB scan fast.
    # A keyword inside a longer identifier (`KeyDerivationFunction`, `token.subject`) needs an
    # assignment after it; a bare keyword may also be followed by a space or a dash.
    r"(" + _KEYWORDS + r")(?:(?:[_\-.][A-Za-z0-9_\-.]{0,32}|[A-Z0-9][A-Za-z0-9_\-.]{0,31})"
    r"[\"']?(?i:\s*(?:[:=]|:=|=>|->)\s*|\s+(?:is|=)\s+)"
    r"|[\"']?(?i:\s*(?:[:=]|:=|=>|->|\s)\s*|\s+(?:is|=)\s+|-))[\"'`]?"
    # The value stops at `=` (`key, timeout=NO_TIMEOUT` is a keyword argument; base64 padding
    # stays behind unredacted) and does not open with `_ + = ^ ~` (`_Optional`, `+@x`, `^3.9`).
    r"([A-Za-z0-9\-.!@#$%&*?]" + _VALUE + r"{5,255})",
    vet=True,
    min_entropy=2.6,
    secret_group=2,
)
