"""Patch manifests: the data half of a patch (``patches/<id>.toml``)."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from ._config import RESERVED


class ManifestError(ValueError):
    """A manifest in patches/ that does not follow docs/writing-a-patch.md."""


_REQUIRED = ("id", "summary", "family", "targets", "affected", "fix", "probe", "evidence")
_OPTIONAL = ("fixed_upstream", "sweep")
_ID = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_CLAIM = re.compile(r"^[a-z0-9][\w-]*(/[\w*?\[\]-]+)?$")  # "scenario" or "scenario/model-type-glob"


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


def default_dir() -> Path:
    from ._activation import manifest_dir

    return Path(manifest_dir())


def load_dir(directory: Path | str | None = None) -> list[Manifest]:
    directory = Path(directory) if directory is not None else default_dir()
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
    def fail(msg: str) -> ManifestError:
        return ManifestError(f"{where}: {msg}")

    unknown = sorted(set(data) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise fail(f"unknown key(s) {unknown}; allowed: {sorted(_REQUIRED + _OPTIONAL)}")
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise fail(f"missing key(s) {missing}")
    pid = data["id"]
    if not isinstance(pid, str) or not _ID.match(pid):
        raise fail(f"id {pid!r} is not kebab-case")
    if pid.upper().replace("-", "_") in RESERVED:
        raise fail(f"id {pid!r} collides with the setting HF_GENFIX_{pid.upper()}")
    if where.endswith(".toml") and Path(where).stem != pid:
        raise fail(f"id {pid!r} does not match the file name")
    for key in ("summary", "affected", "fix", "probe"):
        if not isinstance(data[key], str) or not data[key].strip():
            raise fail(f"{key} must be a non-empty string")
    from .fixes import FAMILIES

    if data["family"] not in (*FAMILIES, "test"):
        raise fail(f"family {data['family']!r} is not one of {tuple(FAMILIES)}")
    targets = data["targets"]
    if not isinstance(targets, list) or not targets or not all(
        isinstance(t, str) and _TARGET.match(t) for t in targets
    ):
        raise fail("targets must be a non-empty list of 'module:Qualified.name' strings")
    for key in ("fix", "probe"):
        if not _CALLABLE.match(data[key]):
            raise fail(f"{key} {data[key]!r} is not 'module:function'")
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        SpecifierSet(data["affected"])
    except InvalidSpecifier as exc:
        raise fail(f"affected {data['affected']!r} is not a PEP 440 specifier: {exc}") from exc
    evidence = data["evidence"]
    if not isinstance(evidence, dict) or not {"scenario", "observed"} <= set(evidence):
        raise fail("evidence must be a table with at least 'scenario' and 'observed'")
    if not all(isinstance(v, str) and v.strip() for v in evidence.values()):
        raise fail("evidence values must be non-empty strings")
    fixed = data.get("fixed_upstream", {})
    _check_fixed(fixed, fail)
    claims = data.get("sweep", [])
    if not isinstance(claims, list) or not all(isinstance(c, str) and _CLAIM.match(c) for c in claims):
        raise fail("sweep must be a list of 'scenario' or 'scenario/model-type-glob' strings")
    return Manifest(
        id=pid,
        summary=data["summary"].strip(),
        family=data["family"],
        targets=tuple(targets),
        affected=data["affected"],
        fix=data["fix"],
        probe=data["probe"],
        evidence=dict(evidence),
        fixed_upstream=dict(fixed),
        sweep=tuple(claims),
        path=where,
    )


def _check_fixed(fixed: object, fail) -> None:
    """``[fixed_upstream]``: ``version`` is a release, or a list of releases (one per cause) explained in
    ``reason``; ``ref`` and ``reason`` are text. Tools compare these versions, so free text there breaks them."""
    from packaging.version import InvalidVersion, Version

    if not isinstance(fixed, dict) or (fixed and "version" not in fixed):
        raise fail("fixed_upstream must be a table with 'version' (and 'ref')")
    unknown = sorted(set(fixed) - {"version", "ref", "reason"})
    if unknown:
        raise fail(f"fixed_upstream: unknown key(s) {unknown}; allowed: ['reason', 'ref', 'version']")
    for key in ("ref", "reason"):
        if key in fixed and (not isinstance(fixed[key], str) or not fixed[key].strip()):
            raise fail(f"fixed_upstream.{key} must be a non-empty string")
    version = fixed.get("version")
    versions = version if isinstance(version, list) else [version]
    if version is not None and (not versions or not all(isinstance(v, str) for v in versions)):
        raise fail("fixed_upstream.version must be a version string or a non-empty list of them")
    for v in versions if version is not None else []:
        try:
            Version(v)
        except InvalidVersion:
            raise fail(f"fixed_upstream.version {v!r} is not a PEP 440 version (put the explanation in "
                       "fixed_upstream.reason)") from None
    if isinstance(version, list):
        if [Version(v) for v in versions] != sorted(Version(v) for v in versions):
            raise fail("fixed_upstream.version: list the releases oldest first")
        if "reason" not in fixed:
            raise fail("fixed_upstream.version lists several releases: say which fixes what in "
                       "fixed_upstream.reason")
