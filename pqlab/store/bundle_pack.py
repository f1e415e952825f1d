"""Making a bundle: this machine's runs, their raw traces and the executed notebooks that belong to them,
packed with a manifest of their sizes and checksums into one archive (:func:`create_bundle`; the format:
:mod:`pqlab.store.bundle`)."""
from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import tarfile
from pathlib import Path

from pqlab import __version__
from pqlab.core import paths
from pqlab.core.files import atomic_write
from pqlab.core.integrity import sha256_file
from pqlab.measure import machine
from pqlab.store import identity
from pqlab.store.bundle_checks import FORMAT, FORMAT_VERSION, MANIFEST, PROFILES, RUN_PARTS, TOP, bundle_id
from pqlab.store.machines import MACHINES, _of_machine, _stored_metas


def _raw_dirs(run_id: str, machine_id: str, folder: Path) -> list[tuple[Path, str]]:
    """(folder, TOPIC/RUN) of the run's raw traces, in data/raw/ or among its machine's imported files."""
    roots = [paths.RAW, folder / MACHINES / machine_id / "raw"]
    return [(topic / run_id, f"{topic.name}/{run_id}") for root in roots if root.is_dir()
            for topic in sorted(root.iterdir()) if (topic / run_id).is_dir()]


def _files_to_pack(metas: list[Path], machine_id: str, folder: Path,
                   notebooks: list[Path]) -> dict[str, Path]:
    files: dict[str, Path] = {}
    for meta in metas:
        run_id = meta.name[: -len(".meta.json")]
        for part in RUN_PARTS:
            p = meta.with_name(run_id + part)
            if p.exists():
                files[f"{TOP}/runs/{p.name}"] = p
        for d, rel in _raw_dirs(run_id, machine_id, folder):
            for f in sorted(p for p in d.rglob("*") if p.is_file()):
                files[f"{TOP}/raw/{rel}/{f.relative_to(d).as_posix()}"] = f
    for nb in notebooks:
        files[f"{TOP}/notebooks/{nb.parent.name}/{nb.name}"] = nb
    return files


def _timestamp(text) -> float | None:
    try:
        return dt.datetime.fromisoformat(str(text)).timestamp()
    except ValueError:
        return None


def _exported_runs(stem: str, profile: str) -> set[str]:
    """The run ids the exports of notebook `stem` recorded (their ``NAME.export.json`` under the profile's
    export tree, tables and figures)."""
    root = paths.export_root(profile, paths.OUTPUT)
    ids: set[str] = set()
    for sidecar in [*(root / "data" / "tables" / stem).glob("*.export.json"),
                    *(root / "figures" / stem).glob("*.export.json")]:
        try:
            runs = json.loads(sidecar.read_text(encoding="utf-8")).get("runs") or []
        except (OSError, UnicodeDecodeError, ValueError, AttributeError):
            continue
        ids.update(str(r) for r in runs)
    return ids


def notebooks_of(runs: dict[str, dict], profile: str | None = None) -> list[Path]:
    """The executed notebooks of ``build/<profile>/`` (both profiles when None) that belong to `runs` (run
    id -> metadata), those a bundle of them packs.  A notebook belongs when papermill finished it (its
    metadata has an end time and no exception: one still running, as in a ``make reproduce`` under way, or
    failed, is left out) and its runs are among `runs`: the run ids its exports recorded (``*.export.json`` of
    its topic, the notebook's name), every one of them; for a notebook whose exports record no run, the runs
    whose ``study`` is its name (or starts with it and '-'), at least one, all started before the notebook was
    last written."""
    out = []
    for prof in [profile] if profile else PROFILES:
        for nb in sorted((paths.BUILD / prof).glob("[0-9][0-9]_*.ipynb")):
            try:
                record = json.loads(nb.read_text(encoding="utf-8"))["metadata"]["papermill"]
                finished = bool(record.get("end_time")) and not record.get("exception")
            except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
                finished = False
            if not finished:
                continue
            linked = _exported_runs(nb.stem, prof)
            if linked:
                if linked <= set(runs):
                    out.append(nb)
                continue
            studies = [str(m.get("study") or "") for m in runs.values()]
            started = [_timestamp(m.get("started_at")) for m, s in zip(runs.values(), studies)
                       if s == nb.stem or s.startswith(f"{nb.stem}-")]
            if started and None not in started and nb.stat().st_mtime > max(started):
                out.append(nb)
    return out


def create_bundle(out: Path | str | None = None, *, profile: str | None = None, notebooks: bool = True,
                  folder: Path | str | None = None, replace: bool = True) -> Path:
    """Pack this machine's runs (those recorded under :func:`pqlab.measure.machine.machine_id`; with
    `profile`, those of ``make reproduce PROFILE=profile`` only), their raw traces and, with `notebooks`, the
    executed notebooks of ``build/<profile>/`` that belong to them (:func:`notebooks_of`) into one archive;
    returns its path (default ``build/bundles/`` of the output tree, ``PQLAB_OUTPUT``).  Its manifest carries
    this host's proof (:func:`pqlab.store.identity.host_proof`).  A run whose metadata is not readable is
    left out with a warning naming it."""
    if profile is not None and profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}: choose {' or '.join(PROFILES)}")
    folder = Path(folder or paths.RESULTS)
    info = machine.collect(liboqs=False)
    mid = info["machine_id"]
    stored = _stored_metas(folder)
    found = _of_machine(stored, mid, profile)
    if not found:
        others = sorted({str(m.get("machine_id", "?")) for _, m in stored})
        raise ValueError(f"no runs of machine {mid}{f' with profile {profile}' if profile else ''} in "
                         f"{folder} (runs there are from: {', '.join(others) or 'none'}): run `make reproduce"
                         f"{f' PROFILE={profile}' if profile else ''}` first")
    metas, run_metas = [p for p, _ in found], [m for _, m in found]
    books = notebooks_of({p.name[: -len(".meta.json")]: m for p, m in found}, profile) if notebooks else []
    files = _files_to_pack(metas, mid, folder, books)
    checks = {name: {"sha256": sha256_file(p), "bytes": p.stat().st_size}
              for name, p in sorted(files.items())}
    bid = bundle_id(mid, checks)
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "bundle_id": bid,
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "created_by": f"pqlab {_version()}", "profile": profile,
        "machine": {"machine_id": mid, "override": info["machine_id_override"],
                    "host_id": (info["machine_id_override"] or {}).get("host_id", mid),
                    **{k: info.get(k) for k in ("hostname", "arch", "cpu", "counter", "frequency",
                                                "hypervisor", "os", "kernel", "python")}},
        "libraries": {"packages": info["packages"], "openssl": info["openssl"],
                      "liboqs": _unique_dicts(m.get("liboqs") for m in run_metas)},
        "commit": info["git"], "schema_versions": sorted({m.get("schema_version") for m in run_metas}),
        "runs": [{k: m.get(k) for k in ("run_id", "study", "schema_version", "started_at", "status",
                                        "profile")}
                 for m in run_metas],
        "files": checks,
    }
    manifest["host_proof"] = identity.host_proof(manifest)  # what shows, on merge here, it was made here
    out = Path(out) if out else (paths.OUTPUT / "build" / "bundles"
                                 / f"pqlab-{mid}-{profile or 'all'}-{bid}.tar.gz")

    def write(tmp: str) -> None:
        with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz, \
                tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            _add(tar, MANIFEST, (json.dumps(manifest, indent=2, default=str) + "\n").encode())
            for name, path in sorted(files.items()):
                _add(tar, name, path.read_bytes())

    return atomic_write(out, write, replace=replace)  # replace=False: a file that appeared meanwhile is kept


def _version() -> str:

    return __version__


def _unique_dicts(items) -> list:
    out = []
    for item in items:
        if item and item not in out:
            out.append(item)
    return out


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:

    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.mode = len(data), 0, 0o644
    tar.addfile(ti, io.BytesIO(data))
