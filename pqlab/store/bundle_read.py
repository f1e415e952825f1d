"""Reading a bundle: its archive verified while it is extracted, member by member against its manifest, then
every run it carries read as the results store reads it (:func:`read_bundle`; the checks themselves:
:mod:`pqlab.store.bundle_checks`)."""
from __future__ import annotations

import gzip
import hashlib
import json
import tarfile
import zlib
from pathlib import Path, PurePosixPath

from pqlab.core.schema import SCHEMA_VERSION
from pqlab.store.bundle_checks import (
    MANIFEST,
    TOP,
    BundleError,
    Limits,
    check_manifest,
    check_run,
    mib,
    over_cap,
)

#: bytes a tar archive spends on one member beyond its data (header, extended header, padding), at most, and
#: on its end (the end-of-archive blocks and the last record's padding)
_PER_MEMBER, _TRAILER = 8192, 32768


class _Capped:
    """The decompressed archive, refused past `limit` bytes: a gzip bomb, an oversized header or anything
    beyond what the manifest declares stops here, whatever tarfile reads it for."""

    def __init__(self, raw, path, limit: int, why: str) -> None:
        self.raw, self.path, self.limit, self.why, self.used = raw, path, limit, why, 0

    def read(self, size: int = -1) -> bytes:
        room = self.limit - self.used + 1
        data = self.raw.read(room if size is None or size < 0 else min(size, room))
        self.used += len(data)
        if self.used > self.limit:
            raise BundleError(self.path, "size",
                              f"the archive unpacks to more than {mib(self.limit)}, more than "
                              f"{self.why}: a damaged or hostile bundle (a header or data that "
                              "no listed file accounts for)")
        return data


def _safe_member(name: str) -> bool:
    p = PurePosixPath(name)
    return not p.is_absolute() and p.parts[:1] == (TOP,) and ".." not in p.parts and len(p.parts) >= 3


def _read_manifest(path, tar: tarfile.TarFile, member: tarfile.TarInfo, limits: Limits) -> dict:
    if member.name != MANIFEST or not member.isfile():
        raise BundleError(path, "manifest", f"the first member is {member.name!r:.120}, not {MANIFEST}: "
                                            "not a pqlab bundle (a foreign archive)")
    if member.size > limits.manifest:
        raise over_cap(path, MANIFEST, member.size, "manifest", limits)
    try:
        manifest = json.loads(tar.extractfile(member).read(limits.manifest))
    except (ValueError, RecursionError) as exc:
        # JSONDecodeError, bad UTF-8, numbers too long, nesting too deep
        raise BundleError(path, "manifest", f"{MANIFEST} is not JSON ({type(exc).__name__}: "
                                            f"{' '.join(str(exc).split())[:200]})") from None
    return check_manifest(path, manifest, limits)


def _extract(path, tar: tarfile.TarFile, member: tarfile.TarInfo, manifest: dict, into: Path,
             seen: set) -> None:
    """One member, checked (a listed plain file of its declared size, read no further than that size) and
    written under `into` with its sha256 checked."""
    name = member.name
    if not member.isfile() or not _safe_member(name):
        raise BundleError(path, "member",
                          f"{name!r:.160} is not a plain file inside {TOP}/ (links, folders and paths "
                          "leaving the bundle are refused)")
    if name in seen:
        raise BundleError(path, "member", f"{name} appears twice")
    expected = manifest["files"].get(name)
    if not isinstance(expected, dict):
        raise BundleError(path, "member", f"{name!r:.160} is not listed in the manifest")
    if member.size != expected["bytes"]:
        raise BundleError(path, "size", f"{name} is {member.size} bytes in the archive, its manifest says "
                                        f"{expected['bytes']}: the bundle was modified or damaged")
    target = into / PurePosixPath(name).relative_to(TOP)
    target.parent.mkdir(parents=True, exist_ok=True)
    h, left = hashlib.sha256(), expected["bytes"]
    with tar.extractfile(member) as src, open(target, "wb") as dst:
        while left > 0:
            block = src.read(min(left, 1 << 20))
            if not block:
                break
            h.update(block)
            dst.write(block)
            left -= len(block)
    if left or h.hexdigest() != expected["sha256"]:
        raise BundleError(path, "checksum", f"{name} does not match its sha256 and size in the manifest "
                                            "(the bundle was modified or damaged)")
    seen.add(name)


def read_bundle(path: Path | str, into: Path | str, *, limits: Limits | None = None) -> dict:
    """Verify the bundle at `path` while extracting it into the folder `into`; returns its manifest.

    Raises :class:`BundleError` naming the file and the failed check (archive, manifest, format, name, size,
    member, checksum, completeness, schema, run, values: each run read as :func:`pqlab.store.results.load_run`
    reads it, its own recorded checksums included).  The manifest is checked whole (:func:`check_manifest`)
    before any other member is read, and nothing is written beyond the sizes it declares (`limits`: default
    :class:`~pqlab.store.bundle_checks.Limits`)."""
    path, into, limits = Path(path), Path(into), limits or Limits()
    if not path.is_file():
        raise BundleError(path, "archive", "no such file")
    manifest, seen = None, set()
    try:
        with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as gz:
            stream = _Capped(gz, path, limits.manifest + _PER_MEMBER + _TRAILER,
                             f"the {mib(limits.manifest)} cap on a manifest allows before it")
            with tarfile.open(fileobj=stream, mode="r|") as tar:
                for member in tar:
                    if manifest is None:
                        manifest = _read_manifest(path, tar, member, limits)
                        declared = sum(e["bytes"] for e in manifest["files"].values())
                        stream.limit = (stream.used + declared + _PER_MEMBER * len(manifest["files"])
                                        + _TRAILER)
                        stream.why = (f"the {declared} bytes of the {len(manifest['files'])} files its "
                                      "manifest lists")
                        continue
                    _extract(path, tar, member, manifest, into, seen)
            while stream.read(1 << 20):  # the rest of the gzip stream: its CRC is checked at its end
                pass
    except BundleError:
        raise
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise BundleError(path, "archive", f"not a complete gzip-compressed tar archive ({exc}): truncated, "
                                           "damaged or not a bundle") from None
    if manifest is None:
        raise BundleError(path, "manifest", f"the archive is empty (no {MANIFEST})")
    missing = sorted(set(manifest["files"]) - seen)
    if missing:
        raise BundleError(path, "completeness", f"{len(missing)} listed file(s) missing, first {missing[0]} "
                                                "(a truncated or incomplete bundle)")
    _check_runs(path, manifest, into / "runs")
    return manifest


def _check_runs(path, manifest: dict, runs: Path) -> None:
    from pqlab.store.results import load_run

    mid = manifest["machine"]["machine_id"]
    listed = sorted(r["run_id"] for r in manifest["runs"])
    present = sorted(p.name[: -len(".meta.json")] for p in runs.glob("*.meta.json"))
    if listed != present:
        raise BundleError(path, "manifest", f"its runs ({', '.join(listed)}) are not the runs in the bundle "
                                            f"({', '.join(present)})")
    for run_id in present:
        try:
            meta = json.loads((runs / f"{run_id}.meta.json").read_text(encoding="utf-8"))
        except (ValueError, RecursionError) as exc:
            raise BundleError(path, "run",
                              f"run {run_id}'s metadata is not JSON ({type(exc).__name__}): it was "
                              "damaged before it was bundled") from None
        if not isinstance(meta, dict):
            raise BundleError(path, "run",
                              f"run {run_id}'s metadata is a JSON {type(meta).__name__}, not an object")
        if meta.get("machine_id") != mid:
            raise BundleError(path, "manifest",
                              f"run {run_id} was recorded on machine {meta.get('machine_id')!r:.60}, "
                              f"the manifest says {mid!r}")
        version = meta.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool) or version > SCHEMA_VERSION:
            raise BundleError(path, "schema",
                              f"run {run_id} has schema version {version!r:.40}; this pqlab reads "
                              f"up to {SCHEMA_VERSION}: update pqlab to merge it")
        try:
            run = load_run(runs / run_id, warn=False)  # check_run refuses what it drops
        except Exception as exc:  # noqa: BLE001 - any reading failure refuses the bundle, named
            raise BundleError(path, "run", f"run {run_id} cannot be read ({type(exc).__name__}: "
                                           f"{' '.join(str(exc).split())})") from None
        check_run(path, run_id, meta, run)
