"""Values after a secret keyword that are, by their syntax, something other than a secret.

Ordinary code and text put a keyword (`key`, `password`, `private`) before values of a few
families that a keyword-anchored rule would otherwise report: a type annotation, an IANA time
zone or another path of names, a version string, a Markdown-emphasised word, a docstring
field, the rest of a kebab-case name. Each test looks at the value, the text between the
keyword and the value (`context`) and the few characters after it (`after`). Values are at
most a few hundred characters, so the small backtracking patterns here cost nothing measurable.
"""

from __future__ import annotations

import re

# A Python annotation: `key: AllowedPrivateKeyTypes,`, `_PasswordType: TypeAlias = ...`,
# `private_key: x25519.X25519PrivateKey`, `api_key: SecretStr | None = None`.
_MODULE_PREFIX = re.compile(r"(?:[a-z_][a-z0-9_]*\.)+")
_CAMEL_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z][a-z]+|[A-Z]+|[a-z]+|\d+")
_TYPING_NAMES = frozenset(
    {"Any", "Optional", "Union", "Callable", "Literal", "Annotated", "TypeAlias", "ClassVar",
     "Final", "Sequence", "Mapping", "Iterable", "Iterator", "Awaitable", "Protocol",
     "TypeVar", "NewType", "NoneType", "SecretStr", "SecretBytes", "Self"}
)  # fmt: skip
# What may follow a type in an annotation: `,` `)` `=` `|` `[` `]` (after spaces).
_ANNOTATION_NEXT = re.compile(r"[ \t]*[,)=|\[\]]")

# IANA time zones: `Europe/Warsaw`, `America/Argentina/Buenos_Aires`, `US/Eastern`, `Etc/GMT+5`.
_TIME_ZONE = re.compile(
    r"(?:Africa|America|Antarctica|Arctic|Asia|Atlantic|Australia|Europe|Indian|Pacific|Etc|"
    r"US|Canada|Brazil|Chile|Mexico)(?:/[A-Z][A-Za-z0-9_+\-]*){1,2}"
)

# A path of names, the shape of any IANA zone name (`Not/AZone` in "No time zone found with key
# Not/AZone"), a menu or a category path (`Settings/Privacy/AdvancedOptions`): two or more
# segments of letters, each a name made of words. Secrets with a slash are base64 or random
# (digits, or case changing inside short fragments: `aB3x/Yz`), never words joined by `/`.
_NAME_PATH = re.compile(r"[A-Za-z][A-Za-z_\-]*(?:/[A-Za-z][A-Za-z_\-]*){1,3}")
_NAME_PATH_PART = re.compile(r"[A-Z]{1,4}|[A-Z][a-z]{2,}|[a-z]{3,}")

# Versions and version ranges: `1.2.1`, `^3.9`, `~1.0.0`, `>=2`, `v2.3.4-rc.1`, `1.x`.
_VERSION = re.compile(
    r"(?:\^|~=?|[<>]=?|[=!]=)\s*v?\d+(?:\.(?:\d+|[x*]))*(?:[-+.]?[a-z]+\.?\d*)?"
    r"|v?\d+(?:\.(?:\d+|[x*])){1,3}(?:[-+.]?[a-z]+\.?\d*)?"
)

# Markdown emphasis around a word: `**PRIVATE MODULE**` leaves `MODULE**` after `PRIVATE`.
_EMPHASIS = re.compile(
    r"(\*\*|__|~~)?[A-Za-z][A-Za-z'\-]*(\*\*|__|~~)"
    r"|(\*\*|__|~~)[A-Za-z][A-Za-z'\-]*"
    r"|\*[A-Za-z][A-Za-z'\-]*\*|_[A-Za-z][A-Za-z'\-]*_"
)

# reST/Sphinx docstring fields: `... the password.\n\n:return:` or `:param name:`.
_DOCSTRING_FIELDS = frozenset(
    {"param", "parameter", "arg", "argument", "key", "keyword", "kwarg", "kwargs", "type",
     "raises", "raise", "except", "exception", "return", "returns", "rtype", "yield", "yields",
     "ytype", "var", "ivar", "cvar", "vartype", "meta", "note", "seealso", "example",
     "examples", "deprecated", "versionadded", "versionchanged"}
)  # fmt: skip


def _quoted(context: str) -> bool:
    return context.endswith(('"', "'", "`"))


def _type_name(value: str, context: str, after: str) -> bool:
    """An unquoted type after `:` or `->`: a known typing name, a dotted `module.CamelCase`
    name, or a CamelCase name of two words or more that an annotation continues."""
    separator = context.rstrip()
    if _quoted(context) or not separator.endswith((":", "->")):
        return False
    prefix = _MODULE_PREFIX.match(value)
    name = value[prefix.end() :] if prefix else value
    if name in _TYPING_NAMES:
        return True
    parts = _CAMEL_PARTS.findall(name.lstrip("_"))
    if not parts or not parts[0][0].isupper() or "".join(parts) != name.lstrip("_"):
        return False
    words = [p for p in parts if p[0].isupper() and p[1:].islower() and len(p) >= 3]
    # Every part a word of three letters or more, an acronym or digits after an acronym
    # (`X25519PrivateKey`, `HTTPResponse`); `AbCdEf123456` or `Summer2024` are not.
    for index, part in enumerate(parts):
        if part.isdigit() and (index == 0 or not parts[index - 1].isupper()):
            return False
        if part[0].isupper() and not part.isupper() and len(part) < 3:
            return False
        if part.islower():
            return False
    if len(words) < 2:
        return False
    return prefix is not None or bool(_ANNOTATION_NEXT.match(after))


def _name_path(value: str) -> bool:
    """Every segment of the path is words (`Zone`, `zone`), with at most short acronyms (`A`,
    `US`) before them and `_` or `-` between them; each segment holds at least one word."""
    if not _NAME_PATH.fullmatch(value):
        return False
    for segment in value.split("/"):
        parts = [p for word in re.split(r"[_\-]", segment) for p in _CAMEL_PARTS.findall(word)]
        if not all(_NAME_PATH_PART.fullmatch(p) for p in parts):
            return False
        if not any(len(p) >= 3 and not p.isupper() for p in parts):
            return False
    return True


def _emphasis(value: str, context: str) -> bool:
    return not _quoted(context) and bool(_EMPHASIS.fullmatch(value))


def _docstring_field(value: str, context: str) -> bool:
    """The keyword ended a sentence and the separator `:` opens the next line's field."""
    last_line = context.rsplit("\n", 1)
    return (
        len(last_line) == 2
        and last_line[1].strip() == ":"
        and value.split(":", 1)[0].lower() in _DOCSTRING_FIELDS
    )


def _name_continued(value: str, context: str) -> bool:
    """`signature-v4-multi-region`: a dash glues the value to the keyword, and the value is
    lower-case words and short tags, the rest of one kebab-case name, not a token."""
    if not context.endswith("-") or value.lower() != value:
        return False
    parts = [p for p in re.split(r"[-_.]", value) if p]
    words = [p for p in parts if p.isalpha() and len(p) >= 3]
    return len(words) >= 2 and all(p.isalpha() or len(p) <= 3 for p in parts)


def other_value_family(value: str, context: str, after: str = "") -> str | None:
    """The family a keyword's value belongs to when it is not a secret, or None.

    `value` is the candidate (surrounding punctuation stripped), `context` the text from the
    keyword up to the value (separator and opening quote included), `after` the text right
    after the value.
    """
    if _type_name(value, context, after):
        return "type-annotation"
    if _TIME_ZONE.fullmatch(value):
        return "time-zone"
    if _name_path(value):
        return "name-path"
    if _VERSION.fullmatch(value):
        return "version"
    if _emphasis(value, context):
        return "markdown-emphasis"
    if _docstring_field(value, context):
        return "docstring-field"
    if _name_continued(value, context):
        return "kebab-case-name"
    return None
