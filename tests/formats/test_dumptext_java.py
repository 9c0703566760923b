"""Kafka's StringDecoder text (``new String(bytes, UTF_8)``) against Java itself.

Keys and payloads that are not valid UTF-8 are printed by Kafka's dump tool as Java decodes
them: each malformed sequence becomes one U+FFFD, delimited Java's way (which is not always
Python's ``errors="replace"``). :func:`java_utf8` is checked against the JVM on every one- and
two-byte string, every three-byte string of bytes at the edges of UTF-8's ranges, and random
longer strings of them.
"""

from __future__ import annotations

import itertools
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from workbench.formats.dumptext_write import java_utf8

EDGES = [
    0x00,
    0x41,
    0x7F,
    0x80,
    0x8F,
    0x90,
    0x9F,
    0xA0,
    0xBF,
    0xC0,
    0xC1,
    0xC2,
    0xC3,
    0xDF,
    0xE0,
    0xE1,
    0xEC,
    0xED,
    0xEE,
    0xEF,
    0xF0,
    0xF1,
    0xF3,
    0xF4,
    0xF5,
    0xF7,
    0xF8,
    0xFF,
]


@pytest.mark.kafka
def test_java_utf8_is_javas_new_string():
    if shutil.which("java") is None:
        pytest.skip("no java on PATH")
    cases = [bytes([a, b]) for a in range(256) for b in range(256)]
    cases += [bytes(t) for t in itertools.product(EDGES, repeat=3)]
    rng = random.Random(9)
    cases += [bytes(rng.choice(EDGES) for _ in range(rng.randint(4, 8))) for _ in range(30000)]
    done = subprocess.run(
        ["java", str(Path(__file__).with_name("JavaUtf8.java"))],
        check=True,
        timeout=300,
        input=("\n".join(c.hex() for c in cases) + "\n").encode("ascii"),
        capture_output=True,
    )
    javas = done.stdout.decode("ascii").split("\n")[: len(cases)]
    ours = [java_utf8(c).encode("utf-16-be", "surrogatepass").hex() for c in cases]
    differ = [(c.hex(), j, o) for c, j, o in zip(cases, javas, ours, strict=True) if j != o]
    assert not differ, f"{len(differ)} of {len(cases)} differ, e.g. {differ[:5]}"


def test_java_utf8_examples():
    assert java_utf8(b"plain") == "plain"
    assert java_utf8(b"\xed\xa0\x80") == "\ufffd"  # a surrogate's encoding: one character for Java
    assert b"\xed\xa0\x80".decode("utf-8", "replace") == "\ufffd" * 3  # three for Python
    assert java_utf8(b"a\xf0\x9f\x98") == "a\ufffd"  # a truncated sequence at the end
    assert java_utf8(b"\xf0\x9f\x98\x80") == "\U0001f600"
