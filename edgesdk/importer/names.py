"""Names from model files are untrusted text: make them safe before they reach reports or generated C."""

from __future__ import annotations

import re

MAX_NAME_CHARS = 96


def sanitize_name(raw: str, max_chars: int = MAX_NAME_CHARS) -> str:
    """Printable ASCII only, no comment terminators or quotes, bounded length (for reports and C comments)."""
    text = "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in raw)
    text = text.replace("*/", "*_").replace("/*", "_*").replace("\\", "/").replace('"', "'")
    return text[:max_chars]


def c_identifier(raw: str, fallback: str = "t") -> str:
    """A C identifier derived from `raw` (letters, digits, underscores; never starting with a digit)."""
    ident = re.sub(r"[^0-9A-Za-z_]+", "_", raw).strip("_")[:48] or fallback
    if ident[0].isdigit():
        ident = f"{fallback}_{ident}"
    return ident
