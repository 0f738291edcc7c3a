"""gs_cgen.digest is hashlib's BLAKE2b, reached without loading OpenSSL."""
from __future__ import annotations

import hashlib
import subprocess
import sys

from gs_cgen.digest import blake2b, name_digest
from gs_cgen.plan.model import module_cookie


def test_same_digests_as_hashlib():
    for text in (b"", b"abc", "ns::f(int)".encode()):
        assert blake2b(text, digest_size=8).digest() == hashlib.blake2b(text, digest_size=8).digest()
    assert name_digest("ns::f(int)") == hashlib.blake2b(b"ns::f(int)", digest_size=12).hexdigest()
    assert len(name_digest("x")) == 24


def test_module_cookie_is_stable_and_63_bit():
    digest = hashlib.blake2b(b"0123abcd", digest_size=8).digest()
    assert module_cookie("/a", "0123abcd") == int.from_bytes(digest, "little") & (2**63 - 1)
    assert module_cookie("/a", "0123abcd") == module_cookie("/b", "0123abcd")
    assert module_cookie("/a", None) != module_cookie("/b", None)


def test_importing_it_leaves_hashlib_unloaded():
    code = "import sys, gs_cgen.digest; print('hashlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
