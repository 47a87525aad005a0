"""Patch manifests: the data half of a patch (``patches/<family>/<id>/manifest.toml``), read into ``Manifest``.

In the catalog a patch's folder gives its id, its family and where its code is: ``patches/models/model_xglm_positions/``
is the patch ``model-xglm-positions`` of the family ``models``, whose fix is that folder's ``fix.py`` (``install``)
and whose probe is its ``probe.py`` (``probe``); its manifest names none of them. A loose manifest (a file
``<name>.toml``: the tests' fixtures, doctor's) names them itself (``id``, ``family``, ``fix``, ``probe``).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from ._config import RESERVED, manifest_dir
from ._errors import ManifestError

__all__ = ["FAMILIES", "FROM_PATH", "MANIFEST", "Manifest", "ManifestError", "check", "in_range", "load_dir",
           "load_file", "load_object", "ordered", "parse", "parse_version"]


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
    # the patches whose wrappers this one's wrap (stacked on top of theirs where both wrap one target): the order
    # the registry decides and installs them in
    after: tuple[str, ...] = ()
    path: str = ""

    @property
    def target_modules(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t.split(":", 1)[0] for t in self.targets))

    @property
    def fixed_versions(self) -> tuple[str, ...]:
        """The release(s) that fixed the defect upstream, oldest first (empty: not fixed yet)."""
        version = self.fixed_upstream.get("version")
        return tuple(version) if isinstance(version, list) else (version,) if version else ()


MANIFEST = "manifest.toml"  # a patch folder's manifest: patches/<family>/<id>/manifest.toml


def load_dir(directory: Path | str | None = None) -> list[Manifest]:
    """The manifests of a catalog (``<family>/<id>/manifest.toml``) or of a folder of loose manifests (tests,
    doctor fixtures: ``*.toml``, ``*/*.toml``), in the order the registry decides and stacks them in: by id,
    except that a patch comes after every patch its ``after`` names."""
    directory = Path(directory if directory is not None else manifest_dir())
    found = [*directory.glob(f"*/*/{MANIFEST}"), *directory.glob("*.toml"), *directory.glob("*/*.toml")]
    manifests = [load_file(p) for p in found]
    seen: dict[str, str] = {}
    for m in manifests:
        if m.id in seen:
            raise ManifestError(f"{m.path}: id {m.id!r} already used by {seen[m.id]}")
        seen[m.id] = m.path
    return ordered(manifests)


def ordered(manifests: list[Manifest]) -> list[Manifest]:
    """By id, each patch after the patches its ``after`` names (``ManifestError`` on an unknown id or a cycle)."""
    by_id = {m.id: m for m in manifests}
    for m in manifests:
        unknown = [pid for pid in m.after if pid not in by_id]
        if unknown:
            raise ManifestError(f"{m.path}: after names unknown patch(es) {unknown}")
    done: list[Manifest] = []
    placed: set[str] = set()
    waiting = sorted(by_id)
    while waiting:
        ready = next((pid for pid in waiting if set(by_id[pid].after) <= placed), None)
        if ready is None:
            raise ManifestError(f"after: a cycle among {waiting}")
        waiting.remove(ready)
        placed.add(ready)
        done.append(by_id[ready])
    return done


def load_file(path: Path | str) -> Manifest:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ManifestError(f"{path}: {exc}") from exc
    return parse(data, str(path))


def parse(data: Mapping[str, object], where: str = "<manifest>") -> Manifest:
    """A Manifest from a manifest's table; ``ManifestError`` where it does not follow docs/writing-a-patch.md
    (the checks: ``check``)."""
    if Path(where).name == MANIFEST:
        data = _from_folder(data, Path(where))
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
        after=tuple(data.get("after", [])),  # type: ignore[arg-type]
        path=where,
    )


# What a patch folder's path gives, and its manifest therefore never says.
FROM_PATH = ("id", "family", "fix", "probe")


def _from_folder(data: Mapping[str, object], path: Path) -> dict[str, object]:
    """A catalog manifest's table with what its folder gives: ``patches/<family>/<id>/manifest.toml``."""
    said = [key for key in FROM_PATH if key in data]
    if said:
        raise ManifestError(f"{path}: {', '.join(said)}: a patch's folder gives them (patches/<family>/<id>/), "
                            "its manifest does not say them")
    folder, family = path.parent.name, path.parent.parent.name
    code = f"hf_genfix._patches.{family}.{folder}"
    return dict(data, id=folder.replace("_", "-"), family=family.replace("_", "-"), fix=f"{code}.fix:install",
                probe=f"{code}.probe:probe")


def load_object(spec: str) -> object:
    """The object a ``module:name`` reference names (a manifest's ``fix`` and ``probe``): the one loader."""
    import importlib

    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


# family -> what it covers, in a user's words; the order is the order of `hf-genfix list` and the docs.
FAMILIES: dict[str, str] = {
    "padding": "batches of prompts of different lengths: which side is padded, the pad token, padded prefill chunks",
    "prepare-inputs": "the decode step: what prepare_inputs_for_generation feeds the model at each step, "
                      "tuple-style caches",
    "sliding-window": "models with sliding-window attention: the caches they build, chunked prefill, images, drafts",
    "decoding": "the generation loop: drafting and assisted decoding, prompt lookup, logits processors, beam search",
    "remote-code": "models and tokenizers loaded with trust_remote_code=True, written for an older transformers",
    "models": "one model type's own defect, in its modeling code rather than in generate()",
}


_REQUIRED = ("id", "summary", "family", "targets", "affected", "fix", "probe", "evidence")
_OPTIONAL = ("fixed_upstream", "sweep", "after")
_ID = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_CLAIM = re.compile(r"^[a-z0-9][\w-]*(/[\w*?\[\]@-]+)?$")  # "scenario" or "scenario/model-type-glob" (or layout)


def check(data: Mapping[str, object], where: str = "<manifest>") -> None:
    """Raise ``ManifestError`` where a manifest's table does not follow docs/writing-a-patch.md."""

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
    if where.endswith(".toml") and Path(where).name != "manifest.toml" and Path(where).stem != pid:
        raise fail(f"id {pid!r} does not match the file name")
    for key in ("summary", "affected", "fix", "probe"):
        if not isinstance(data[key], str) or not data[key].strip():
            raise fail(f"{key} must be a non-empty string")
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
    after = data.get("after", [])
    if not isinstance(after, list) or not all(isinstance(a, str) and _ID.match(a) and a != pid for a in after):
        raise fail("after must be a list of other patches' ids")
    claims = data.get("sweep", [])
    if not isinstance(claims, list) or not all(isinstance(c, str) and _CLAIM.match(c) for c in claims):
        raise fail("sweep must be a list of 'scenario' or 'scenario/model-type-glob' strings")


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


def in_range(specifier: str, version: str) -> bool | None:
    """Whether ``version`` is inside ``specifier``, gating pre-releases, dev and local builds by release number;
    None when ``version`` is not a PEP 440 version (a source build reporting "main", "5.30.0-custom").

    A release candidate, a development snapshot or a local build of X is treated as X: they carry (or are about
    to carry) X's code, and the specifiers in patches/ name releases.
    """
    from packaging.specifiers import SpecifierSet

    parsed = parse_version(version)
    if parsed is None:
        return None
    return SpecifierSet(specifier).contains(type(parsed)(parsed.base_version), prereleases=True)


def parse_version(version: str | None) -> Any:
    """A packaging Version; None for no version or one that is not PEP 440."""
    if version is None:
        return None
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version)
    except InvalidVersion:
        return None
