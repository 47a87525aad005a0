"""Patch manifests: the data half of a patch (``patches/<family>/<id>.toml``), read into ``Manifest``."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from ._config import manifest_dir
from ._errors import ManifestError

__all__ = ["Manifest", "ManifestError", "load_dir", "load_file", "parse"]


@dataclass(frozen=True)
class Manifest:
    id: str
    summary: str
    family: str
    targets: tuple[str, ...]
    affected: str
    fix: str
    probe: str
    evidence: Mapping[str, str]
    # version: a release (or a list of them, one per cause, each explained in reason); ref: where it was fixed
    fixed_upstream: Mapping[str, object] = field(default_factory=dict)
    sweep: tuple[str, ...] = ()  # the doctor --sweep scenarios whose failures this defect explains
    path: str = ""

    @property
    def target_modules(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t.split(":", 1)[0] for t in self.targets))

    @property
    def fixed_versions(self) -> tuple[str, ...]:
        """The release(s) that fixed the defect upstream, oldest first (empty: not fixed yet)."""
        version = self.fixed_upstream.get("version")
        return tuple(version) if isinstance(version, list) else (version,) if version else ()


def load_dir(directory: Path | str | None = None) -> list[Manifest]:
    directory = Path(directory if directory is not None else manifest_dir())
    # patches/<family>/<id>.toml, or a folder of loose manifests (tests, doctor fixtures); in the order of their
    # ids whatever the folders, the order the registry decides and stacks them in
    found = [*directory.glob("*.toml"), *directory.glob("*/*.toml")]
    manifests = [load_file(p) for p in sorted(found, key=lambda p: (p.name, str(p)))]
    seen: dict[str, str] = {}
    for m in manifests:
        if m.id in seen:
            raise ManifestError(f"{m.path}: id {m.id!r} already used by {seen[m.id]}")
        seen[m.id] = m.path
    return manifests


def load_file(path: Path | str) -> Manifest:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ManifestError(f"{path}: {exc}") from exc
    return parse(data, str(path))


def parse(data: Mapping[str, object], where: str = "<manifest>") -> Manifest:
    """A Manifest from a manifest's table; ``ManifestError`` where it does not follow docs/writing-a-patch.md
    (the checks: ``hf_genfix.catalog.check``)."""
    from .catalog import check

    check(data, where)
    return Manifest(
        id=data["id"],  # type: ignore[arg-type]
        summary=data["summary"].strip(),  # type: ignore[union-attr]
        family=data["family"],  # type: ignore[arg-type]
        targets=tuple(data["targets"]),  # type: ignore[arg-type]
        affected=data["affected"],  # type: ignore[arg-type]
        fix=data["fix"],  # type: ignore[arg-type]
        probe=data["probe"],  # type: ignore[arg-type]
        evidence=dict(data["evidence"]),  # type: ignore[arg-type]
        fixed_upstream=dict(data.get("fixed_upstream", {})),  # type: ignore[arg-type]
        sweep=tuple(data.get("sweep", [])),  # type: ignore[arg-type]
        path=where,
    )
