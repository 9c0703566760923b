"""Text as Java prints it: file paths (``File.toString()``) and bytes decoded as ``new String(bytes, UTF_8)``."""

from __future__ import annotations

import os
import re


def java_file_path(path: str | os.PathLike[str]) -> str:
    """``path`` as ``java.io.File.toString()`` prints it (repeated and trailing ``/`` removed).

    Examples
    --------
    >>> java_file_path("a//b/00000000000000000000.log")
    'a/b/00000000000000000000.log'
    """
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogateescape")
    text = re.sub(r"/{2,}", "/", text)
    if len(text) > 1 and text.endswith("/"):
        text = text[:-1]
    return text


def java_utf8(data: bytes | bytearray | memoryview) -> str:
    r"""``new String(data, UTF_8)`` as Java 17 decodes it: each malformed sequence becomes one
    U+FFFD the way Java's decoder delimits it (not always Python's way: Java takes a surrogate
    encoding such as ``ED A0 80`` as one malformed character, and a truncated sequence at the
    end as one).

    Examples
    --------
    >>> java_utf8(b"ok \xc3\xbc")
    'ok ü'
    >>> java_utf8(b"\xed\xa0\x80!") == "\ufffd!", java_utf8(b"\xbf\xed\xaa") == "\ufffd" * 2
    (True, True)
    """
    raw = bytes(data)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out: list[str] = []
    repl = "\ufffd"
    n = len(raw)
    i = 0

    def cont(b: int) -> bool:
        return b & 0xC0 == 0x80

    while i < n:
        b1 = raw[i]
        i += 1
        if b1 < 0x80:
            out.append(chr(b1))
        elif 0xC2 <= b1 <= 0xDF:
            if i < n:
                b2 = raw[i]
                if not cont(b2):
                    out.append(repl)
                else:
                    out.append(chr(((b1 & 0x1F) << 6) | (b2 & 0x3F)))
                    i += 1
                continue
            out.append(repl)
            break
        elif 0xE0 <= b1 <= 0xEF:
            if i + 1 < n:
                b2, b3 = raw[i], raw[i + 1]
                if (b1 == 0xE0 and b2 & 0xE0 == 0x80) or not cont(b2) or not cont(b3):
                    out.append(repl)
                    if not ((b1 == 0xE0 and b2 & 0xE0 == 0x80) or not cont(b2)):
                        i += 1  # the first two bytes make one malformed sequence
                else:
                    c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                    out.append(repl if 0xD800 <= c <= 0xDFFF else chr(c))
                    i += 2
                continue
            if i < n and ((b1 == 0xE0 and raw[i] & 0xE0 == 0x80) or not cont(raw[i])):
                out.append(repl)
                continue
            out.append(repl)
            break
        elif 0xF0 <= b1 <= 0xF7:
            if i + 2 < n:
                b2, b3, b4 = raw[i], raw[i + 1], raw[i + 2]
                uc = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if not cont(b2) or not cont(b3) or not cont(b4) or not 0x10000 <= uc <= 0x10FFFF:
                    out.append(repl)
                    if (
                        b1 > 0xF4
                        or (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF)
                        or (b1 == 0xF4 and b2 & 0xF0 != 0x80)
                        or not cont(b2)
                    ):
                        pass
                    elif not cont(b3):
                        i += 1
                    else:
                        i += 2
                else:
                    out.append(chr(uc))
                    i += 3
                continue
            if b1 > 0xF4 or (
                i < n
                and (
                    (b1 == 0xF0 and not 0x90 <= raw[i] <= 0xBF)
                    or (b1 == 0xF4 and raw[i] & 0xF0 != 0x80)
                    or not cont(raw[i])
                )
            ):
                out.append(repl)
                continue
            i += 1
            out.append(repl)
            if i < n and not cont(raw[i]):
                continue
            break
        else:
            out.append(repl)
    return "".join(out)
