"""Which host a bundle's runs were measured on, decided from evidence pqlab checks, never from what the bundle
says about itself.

A bundle made here carries a *host proof*: an HMAC-SHA256, keyed with a secret that never leaves this host
(:func:`host_key`), over the bundle's machine record, run list and every file's checksum
(:func:`host_proof`).  Anyone can copy this host's machine id, host id, hostname and CPU model into a
bundle, or an identity override naming this host; no one without the key can make a proof that verifies
here, and no edit of a file, of the machine record or of the run list keeps one valid.

On merge, :func:`claims` lists every field by which a bundle names this host, compared after Unicode
normalisation (NFKC), with surrounding whitespace removed and without case: the machine id and host id, the
identity override's value and host, each run's override, and the hostname with the CPU model (the two
:func:`pqlab.measure.machine.host_id` is made of).  A bundle that names this host is refused, with that
evidence and whether its proof verifies, unless the user says otherwise (``--override``); and only a bundle
whose proof verifies counts as this host's afterwards (:func:`pqlab.store.machines.run_host`): one merged on
the user's word alone stays the bundle's machine, shown as such.

The key: ``$PQLAB_HOST_KEY`` (a file path) or ``$XDG_CONFIG_HOME/pqlab/host.key`` (``~/.config/...``), 32
random bytes written once, readable by its owner only.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import unicodedata
from pathlib import Path

from pqlab.core.errors import BadInput

#: what a proof signs, besides the manifest's fields: a version, so a later format never verifies an earlier's
_CONTEXT = b"pqlab-bundle-host-proof-v1\n"
#: the fields of a manifest a proof covers (the files' entries hold every file's sha256 and size)
SIGNED = ("bundle_id", "machine", "runs", "files")


def key_path() -> Path:
    """Where this host's key is: ``$PQLAB_HOST_KEY``, else ``$XDG_CONFIG_HOME/pqlab/host.key``."""
    given = os.environ.get("PQLAB_HOST_KEY")
    if given:
        return Path(given)
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "pqlab" / "host.key"


def host_key() -> bytes:
    """This host's secret key, made on first need (32 random bytes, mode 0600, linked into place so two
    processes making it at once agree on one)."""
    path = key_path()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_hex(32).encode())
        try:
            os.link(tmp, path)  # fails if another process made it first: its key is the one
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
        data = path.read_bytes()
    except OSError as exc:
        raise BadInput(f"cannot read this host's pqlab key {path} ({exc.strerror or exc}): make it readable, "
                       "or set PQLAB_HOST_KEY to a file of your own") from None
    if len(data.strip()) < 32:
        raise BadInput(f"this host's pqlab key {path} is damaged ({len(data)} bytes): remove it (bundles "
                       "made here before will no longer count as this host's) and run again")
    return data.strip()


def _signed(manifest: dict) -> bytes:
    return _CONTEXT + json.dumps({k: manifest.get(k) for k in SIGNED}, sort_keys=True, default=str,
                                 separators=(",", ":")).encode()


def host_proof(manifest: dict) -> str:
    """The proof that `manifest` (its :data:`SIGNED` fields) was packed on this host."""
    return hmac.new(host_key(), _signed(manifest), hashlib.sha256).hexdigest()


def verifies(manifest: dict) -> bool:
    """True when the manifest's ``host_proof`` was made with this host's key over exactly these fields."""
    proof = manifest.get("host_proof")
    return isinstance(proof, str) and hmac.compare_digest(proof, host_proof(manifest))


def norm(value) -> str:
    """A name as a claim is compared: NFKC, surrounding whitespace removed, case folded."""
    return unicodedata.normalize("NFKC", str(value)).strip().casefold()


def _ids(here: dict) -> set[str]:
    return {norm(here[k]) for k in ("machine_id", "host_id") if here.get(k)}


def _named(value, here: dict) -> bool:
    """True when `value` is one of this host's ids (:func:`pqlab.store.bundle.this_host`), or one of them
    followed by ``+`` (a local identity such as notebook 07's ``<id>+generic-build``)."""
    v = norm(value)
    return bool(v) and any(v == i or v.startswith(f"{i}+") for i in _ids(here))


def claims(manifest: dict, metas: dict[str, dict], here: dict) -> list[str]:
    """Every field of a bundle (its manifest, and `metas`: run id -> metadata) that names the host `here`
    (:func:`pqlab.store.bundle.this_host`: its machine id, host id, hostname and CPU model), as one line
    each; empty when none does."""
    out = []

    def check(where: str, value) -> None:
        if isinstance(value, str) and _named(value, here):
            out.append(f"{where} {value.strip()!r:.80}")

    def machine_fields(where: str, m: dict) -> None:
        check(f"{where}machine_id", m.get("machine_id"))
        check(f"{where}host_id", m.get("host_id"))
        override = m.get("override", m.get("machine_id_override"))
        if isinstance(override, dict):
            check(f"{where}identity override's value", override.get("value"))
            check(f"{where}identity override's host", override.get("host_id"))
        cpu = m.get("cpu") if isinstance(m.get("cpu"), dict) else {}
        host, model = m.get("hostname"), cpu.get("model")
        if (isinstance(host, str) and isinstance(model, str) and norm(host) == norm(here["hostname"])
                and norm(model) == norm(here["cpu"])):
            out.append(f"{where}hostname {host.strip()!r:.60} and CPU {model.strip()!r:.60} (this host's)")

    machine_fields("its ", manifest.get("machine") or {})
    for run_id, meta in sorted(metas.items()):
        machine_fields(f"run {run_id}'s ", meta)
    return list(dict.fromkeys(out))
