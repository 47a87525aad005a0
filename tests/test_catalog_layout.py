"""A fix stands on the toolkit, the public helpers and its family's shared modules, and on nothing else.

Read from the files (no import): every runtime module of the catalog, each patch's ``fix.py`` and each family's
``shared/<topic>.py`` (not the probes, ``probe.py`` and ``shared/*_probes.py``, which are the lab's, nor the programs
and tests), imports from hf_genfix only

- ``hf_genfix.toolkit`` and ``hf_genfix.helpers`` (public names), and ``hf_genfix`` itself (public names);
- its own family's shared modules, ``hf_genfix._patches.<family>.shared``, public names only.

So no fix reaches into the oracles (the lab stands on the catalog, not the other way round), into another family,
into another patch's folder, or into the core's private modules (docs/writing-a-patch.md, "What a fix may import").
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATCHES = ROOT / "patches"


def _runtime_modules() -> list[Path]:
    from hf_genfix.testing.patches import catalog_modules  # the list tests/test_warnings_attribution.py reads too

    found = [p.resolve() for p in catalog_modules()]
    assert found and all(p.is_relative_to(PATCHES) for p in found), "the catalog is read from another checkout"
    return found


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                found.append((node.lineno, "." * node.level + (node.module or ""), [a.name for a in node.names]))
            else:
                found.append((node.lineno, node.module or "", [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names]
    return found


def _problem(path: Path, module: str, names: list[str]) -> str | None:
    family = path.relative_to(PATCHES).parts[0]
    private = [n for n in names if n.startswith("_") and n != "__future__"]
    if module.startswith("."):
        return "a relative import (name the module in full)"
    if not (module == "hf_genfix" or module.startswith("hf_genfix.")):
        return None
    parts = module.split(".")
    if module == "hf_genfix" or parts[1] in ("toolkit", "helpers"):
        return f"private name(s) {private}" if private else None
    if parts[1] == "_patches":
        if len(parts) < 3 or parts[2] != family:
            return "another family's code (code two families share belongs in hf_genfix.toolkit)"
        if len(parts) < 4 or parts[3] != "shared":
            return "another patch's folder (code two patches share belongs in the family's shared/)"
        return f"private name(s) {private}" if private else None
    if parts[1] in ("oracles", "testing"):
        return "the lab (a probe may use it; a fix may not)"
    return "hf_genfix's own modules (a fix imports hf_genfix.toolkit and hf_genfix.helpers)"


RUNTIME = _runtime_modules()


@pytest.mark.parametrize("path", RUNTIME, ids=[str(p.relative_to(PATCHES)) for p in RUNTIME])
def test_a_fix_imports_only_the_toolkit_the_helpers_and_its_family(path):
    problems = [f"line {line}: {module} {names}: {why}" for line, module, names in _imports(path)
                for why in [_problem(path, module, names)] if why]
    assert not problems, f"{path.relative_to(ROOT)}: " + "; ".join(problems)


def test_the_check_sees_every_fix_and_every_kind_of_problem(tmp_path):
    assert sum(p.name == "fix.py" for p in RUNTIME) == len(list(PATCHES.glob("*/*/manifest.toml")))
    fix = PATCHES / "models" / "model_xglm_positions" / "fix.py"
    assert _problem(fix, "hf_genfix.oracles", ["tiny_model"])
    assert _problem(fix, "hf_genfix._patches.padding.shared.pad_mark", ["MARK"])
    assert _problem(fix, "hf_genfix._patches.models.model_rwkv_batch.fix", ["install"])
    assert _problem(fix, "hf_genfix._patches.models.shared.ssm_continuation", ["_all_linear"])
    assert _problem(fix, "hf_genfix._record", [])
    assert _problem(fix, "hf_genfix", ["_record"])
    assert _problem(fix, "hf_genfix.toolkit", ["_record"])
    assert _problem(fix, ".shared", ["x"])
    assert _problem(fix, "hf_genfix._patches.models.shared.ssm_continuation", ["install_continuation"]) is None
    assert _problem(fix, "hf_genfix.toolkit", ["recorder"]) is None
    assert _problem(fix, "transformers.cache_utils", ["Cache"]) is None


def test_the_core_and_the_toolkit_know_no_patch_module():
    """Nothing under src/hf_genfix imports a patch's folder by name: the catalog hands them out by id."""
    found = []
    for path in sorted((ROOT / "src" / "hf_genfix").rglob("*.py")):
        for line, module, _names in _imports(path):
            parts = module.split(".")
            if len(parts) > 3 and parts[:2] == ["hf_genfix", "_patches"] and parts[3] != "shared":
                found.append(f"{path.relative_to(ROOT)}:{line}: {module}")
    assert not found, found


def test_the_catalog_hands_out_a_patch_by_its_id():
    from hf_genfix import catalog

    m = catalog.manifest("model-xglm-positions")
    # the catalog shipped with the installed hf_genfix: this tree's patches/ in a checkout, a copy in a wheel (tox)
    assert catalog.patch_folder(m) == Path(catalog.manifest_dir()) / "models" / "model_xglm_positions"
    assert (PATCHES / "models" / "model_xglm_positions" / "manifest.toml").is_file()
    assert catalog.fix("model-xglm-positions").__name__ == "hf_genfix._patches.models.model_xglm_positions.fix"
    assert callable(catalog.probe("model-xglm-positions"))
    program = catalog.program("model-xglm-positions")
    assert program.path == "models/model_xglm_positions/program.py"
    assert program.imports == "from transformers import XGLMForCausalLM"  # what doctor's plain program imports
    with pytest.raises(KeyError, match="no hf_genfix patch 'no-such-patch'"):
        catalog.manifest("no-such-patch")


def test_a_recorder_knows_its_patch_from_its_folder():
    import hf_genfix
    from hf_genfix.toolkit import patch_of_module, recorder

    assert patch_of_module("hf_genfix._patches.padding.right_padding.fix") == "right-padding"
    for bad in ("hf_genfix._patches.padding.shared.pad_mark", "hf_genfix.toolkit", "mypkg.fix"):
        with pytest.raises(ValueError):
            patch_of_module(bad)
    record = recorder("hf_genfix._patches.models.model_xglm_positions.fix")
    assert record.patch_id == "model-xglm-positions" and not record.on
    with hf_genfix.recording() as rec:
        assert record.on
        record.seen()
        record.changed("moved %d tokens", 3)
    assert rec.lines == ["model-xglm-positions: moved 3 tokens"]
    assert rec.counts["model-xglm-positions"] == (1, 1)
    assert recorder("model-rwkv-batch").patch_id == "model-rwkv-batch"  # a shared module passes its patcher's id


LAB = [p for p in sorted(PATCHES.rglob("*.py")) if "__pycache__" not in p.parts
       and (p.name == "probe.py" or p.name.endswith("_probes.py"))]


@pytest.mark.parametrize("path", LAB, ids=[str(p.relative_to(PATCHES)) for p in LAB])
def test_a_probe_stays_in_its_folder_and_its_family(path):
    """A probe may use the lab (the oracles), the catalog and the toolkit, its own fix and its family's shared
    modules; another patch (its fix, its probe) is reached through ``hf_genfix.catalog``, never by module name."""
    family, own = path.relative_to(PATCHES).parts[:2]
    problems = []
    for line, module, _names in _imports(path):
        parts = module.split(".")
        if parts[0] != "hf_genfix" or len(parts) < 2:
            continue
        if parts[1] == "_patches" and (len(parts) < 4 or parts[2] != family or parts[3] not in ("shared", own)):
            problems.append(f"line {line}: {module}: another family's or another patch's code")
        elif parts[1] != "_patches" and parts[1].startswith("_"):
            problems.append(f"line {line}: {module}: the core's private module")
    assert not problems, f"{path.relative_to(ROOT)}: " + "; ".join(problems)
