"""A new Python backend is its module and one vocabulary line (issue 43; CONTRIBUTING.md's recipe, plus its
library in pyproject.toml): a toy one, added to a copy of the package exactly so, is listed, measured in
rounds by ``pqlab.bench``, its every output checked outside the timer, and its rows name it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: the whole backend: an encrypt-then-MAC cipher on the standard library, so the copy needs no new package
TOY_MODULE = ('''"""Toy-Cipher: SHA-256 keystream XOR with an HMAC-SHA-256 tag '''
              '''(a test's backend, not cryptography to use)."""
from __future__ import annotations

import functools
import hashlib
import hmac
import os

from pqlab.backends.base import Algorithm, register

NAME = "Toy-Cipher"


class ToyCipher(Algorithm):
    def __init__(self) -> None:
        super().__init__(NAME, "cipher", "symmetric", "toy", "toy 1.0 (the standard library)", "1.0", 1,
                         "raw key (32 bytes)", "a test backend")

    def generate(self) -> bytes:
        return os.urandom(32)

    def encryptor(self, key: bytes):
        return functools.partial(encrypt, key)

    def decryptor(self, key: bytes):
        return functools.partial(decrypt, key)


def _stream(key: bytes, nonce: bytes, n: int) -> bytes:
    blocks = (hashlib.sha256(key + nonce + i.to_bytes(8, "big")).digest() for i in range(n // 32 + 1))
    return b"".join(blocks)[:n]


def encrypt(key: bytes, message: bytes) -> bytes:
    nonce = os.urandom(16)
    body = nonce + bytes(a ^ b for a, b in zip(message, _stream(key, nonce, len(message))))
    return body + hmac.digest(key, body, "sha256")


def decrypt(key: bytes, data: bytes) -> bytes:
    body, tag = data[:-32], data[-32:]
    if not hmac.compare_digest(tag, hmac.digest(key, body, "sha256")):
        raise ValueError("toy tag mismatch")
    return bytes(a ^ b for a, b in zip(body[16:], _stream(key, body[:16], len(body) - 16)))


def register_all() -> None:
    register(NAME, "toy", ToyCipher)
''')
#: the one vocabulary line, after the last library backend's
VOCABULARY_LINE = '    Backend("toy", "pure Python", module="toy"),\n'


def test_a_new_backend_is_its_module_and_one_vocabulary_line(tmp_path):
    copy = tmp_path / "pqlab"
    shutil.copytree(ROOT / "pqlab", copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "backends" / "toy.py").write_text(TOY_MODULE, encoding="utf-8")
    vocabulary = copy / "core" / "vocabulary.py"
    lines = vocabulary.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith('Backend("ascon"'))
    vocabulary.write_text("".join(lines[: at + 1] + [VOCABULARY_LINE] + lines[at + 1:]), encoding="utf-8")
    changed = sorted(str(p.relative_to(copy)) for p in copy.rglob("*.py")
                     if not (ROOT / "pqlab" / p.relative_to(copy)).exists()
                     or p.read_bytes() != (ROOT / "pqlab" / p.relative_to(copy)).read_bytes())
    assert changed == ["backends/toy.py", "core/vocabulary.py"]

    code = ("import json, pqlab\n"
            "assert 'Toy-Cipher' in pqlab.names(backend='toy')\n"
            "run = pqlab.bench(['Toy-Cipher@toy'], budget_s=0.3, rounds=3, max_rounds=3, progress=False, "
            f"folder={str(tmp_path / 'runs')!r})\n"
            "m = run.measurements[run.measurements['algorithm'] == 'Toy-Cipher']\n"
            "print(json.dumps({'ops': sorted(m['operation']), 'backends': sorted(set(m['backend'])), "
            "'verified': bool(m['verified'].all()), 'rounds': sorted(set(m['rounds'].astype(int))), "
            "'implementation': sorted(set(m['implementation']))}))\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path), PQLAB_ROOT=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"ops": ["decrypt", "encrypt", "keygen"], "backends": ["toy"], "verified": True,
                   "rounds": [3], "implementation": ["toy 1.0 (the standard library)"]}
    listed = subprocess.run([sys.executable, "-m", "pqlab", "list", "--backend", "toy"], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0 and "Toy-Cipher" in listed.stdout, listed.stderr
