"""Student-supplied text made inert for a page: file names, source lines, kernel output.

HTML escaping (the templates' autoescape) stops markup; this stops what escaping lets through:
control characters (a terminal escape, a form feed) become visible Control Pictures, and the
Unicode controls that reorder or hide text (bidirectional overrides, "Trojan Source") become a
visible [U+XXXX] mark, so a line shows what the compiler saw.
"""
from __future__ import annotations

import unicodedata

# Bidirectional embeddings, overrides and isolates, and the marks: they make text display in
# another order than it is stored.
_REORDERING = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
_MAX_CHARS = 200_000


def shown(text: object, *, keep_newlines: bool = True) -> str:
    """`text` with every control or reordering character replaced by a visible stand-in."""
    text = str(text)[:_MAX_CHARS]
    out = []
    for ch in text:
        code = ord(ch)
        if ch == "\t" or (ch == "\n" and keep_newlines):
            out.append(ch)
        elif code < 0x20:
            out.append(chr(0x2400 + code))  # U+2400.. Control Pictures: \x1b shows as a small ESC
        elif code == 0x7F:
            out.append("\u2421")
        elif code in _REORDERING or (unicodedata.category(ch) in ("Cc", "Cs", "Co", "Cn") and code >= 0x80):
            out.append(f"[U+{code:04X}]")
        else:
            out.append(ch)
    return "".join(out)


def one_line(text: object, limit: int = 200) -> str:
    """shown() on a single line (newlines made visible too), cut to `limit` characters."""
    value = shown(text, keep_newlines=False)
    return value if len(value) <= limit else value[: limit - 1] + "\u2026"
