"""Names from model files are untrusted text: make them safe before they reach reports or generated C."""

from __future__ import annotations

import re

MAX_NAME_CHARS = 96


def sanitize_name(raw: str, max_chars: int = MAX_NAME_CHARS) -> str:
    """Text safe inside a C comment, a C string and a terminal line, of bounded length.

    Printable ASCII only (control characters, escape sequences and non-ASCII become '?'); no backslash (a
    line splice or an escape), no double quote, no comment opener or terminator, no trigraph ('??/' is a
    backslash in ISO C). The replacements run in this order so that none of them can create another
    forbidden sequence: a backslash becomes '/' before the '*/' and '/*' checks.
    """
    printable_ascii = raw.isascii() and raw.isprintable()  # the common case: every char in 32..126 already
    text = raw if printable_ascii else "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in raw)
    text = text.replace("\\", "/").replace('"', "'")
    while "*/" in text or "/*" in text:
        text = text.replace("*/", "*_").replace("/*", "_*")
    while "??" in text:
        text = text.replace("??", "?_")
    text = text[:max_chars]
    # A comment is closed by the template right after the text: a trailing '*' or '/' would touch it.
    return text[:-1] + "_" if text.endswith(("*", "/")) else text


# C keywords and macros of the headers generated code includes: a struct member with one of these names
# would not compile (or would be rewritten by the preprocessor).
C_KEYWORDS = frozenset("""
    auto break case char const continue default do double else enum extern float for goto if inline int long
    register restrict return short signed sizeof static struct switch typedef union unsigned void volatile
    while _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local
    NULL offsetof bool true false asm typeof
""".split())
_RESERVED_MACRO = re.compile(r"^(U?INT(\d+|PTR|MAX|_LEAST\d+|_FAST\d+)_(MIN|MAX|C)|SIZE_MAX|PTRDIFF_(MIN|MAX)"
                             r"|WCHAR_(MIN|MAX)|WINT_(MIN|MAX)|SIG_ATOMIC_(MIN|MAX)|EDGESDK_\w*|BOARD_\w*)$")


def c_identifier(raw: str, fallback: str = "t") -> str:
    """A C identifier derived from `raw` (letters, digits, underscores; never starting with a digit or an
    underscore, never a C keyword or a macro name of the headers the generated code includes)."""
    ident = re.sub(r"[^0-9A-Za-z_]+", "_", raw).strip("_")[:48] or fallback
    if ident[0].isdigit():
        ident = f"{fallback}_{ident}"
    if ident in C_KEYWORDS or _RESERVED_MACRO.match(ident) or ident.lower().startswith("edgesdk_"):
        ident = f"{fallback}_{ident}"
    return ident


class UniqueIdentifiers:
    """Hands out C identifiers derived from hints, each once (a clash gets _2, _3, ...)."""

    def __init__(self):
        self.used: set = set()

    def unique(self, hint: str) -> str:
        base = c_identifier(hint, "sym")
        name, n = base, 1
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.used.add(name)
        return name
