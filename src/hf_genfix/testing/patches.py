"""The patch test harness: what every patch's own test checks, and the fixtures those tests share.

Each patch folder (``patches/<family>/<id>/``) holds its test, ``test_<id with _>.py``. Its class derives from
``PatchTests``, which gives it the checks every patch owes (in the way of dd-trace-py's patch test case):

- ``test_probe_proves_the_patch``: on a release inside the manifest's range the probe shows the defect with the
  patch switched off and passes with it on; outside it the patch is not installed and the probe passes without it
  (a defect there is a catalog error, unless the path is on file in ``patches/open-findings.json``).
- ``test_program_gets_the_patch`` (slow: a fresh interpreter): the patch's plain user program (``program.py``)
  gets it ``applied`` where the release is affected; elsewhere, forced on, it is decided (``forced`` or ``drift``):
  the same imports reach it on every release.

The class finds its patch from the folder it is defined in; a test adds its own checks as methods or beside it.

Loaded as a pytest plugin by this project's own configuration (``-p hf_genfix.testing.patches``), it also adds
``--genfix-dtype/--genfix-device/--genfix-attn`` (every test inside ``oracles.precision()``) and the fixtures
``require_applied``, ``tiny`` and ``patches_decided``. Nothing here is loaded in a user's test session.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import subprocess
import sys
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

__all__ = ["PatchTests", "assert_upstream_bitwise", "catalog_modules", "patch_of_file", "patches_decided",
           "require_applied", "run_program", "tiny"]


# -- the pytest plugin: options and fixtures ----------------------------------------------------------------------
_MODULES_FOLDER = pytest.StashKey[str]()


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("hf_genfix precision")
    group.addoption("--genfix-dtype", default=None,
                    help="build the oracles' tiny models in this dtype (float32, bfloat16, float16)")
    group.addoption("--genfix-device", default=None, help="build them on this device (cpu, cuda, ...)")
    group.addoption("--genfix-attn", default=None, help="with this attention kernel (eager, sdpa, flash_attention_2)")


def pytest_configure(config: Any) -> None:
    # transformers copies trust_remote_code modules to <HF_MODULES_CACHE>/transformers_modules/<repo folder name>;
    # two suites running at once (tox p) with same-named folders would overwrite each other's copies.
    # The folder is the session's own: pytest_unconfigure removes it (each run used to leave one in the temp dir).
    if "HF_MODULES_CACHE" not in os.environ:
        folder = tempfile.mkdtemp(prefix="hf_genfix_modules_")
        os.environ["HF_MODULES_CACHE"] = folder
        config.stash[_MODULES_FOLDER] = folder


def pytest_unconfigure(config: Any) -> None:
    folder = config.stash.get(_MODULES_FOLDER, None)
    if folder is None:
        return
    if os.environ.get("HF_MODULES_CACHE") == folder:
        del os.environ["HF_MODULES_CACHE"]
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True)
def _genfix_precision(request: Any) -> Any:
    """``--genfix-dtype/--genfix-device/--genfix-attn`` run every test inside ``oracles.precision()``: the probes
    and oracles then build their models that way (benchmarks/gpu_check.sh uses it on a GPU)."""
    options = [request.config.getoption(f"--genfix-{name}") for name in ("dtype", "device", "attn")]
    if not any(options):
        yield
        return
    from hf_genfix.oracles.precision import precision

    with precision(*options):
        yield


@pytest.fixture(scope="session")
def require_applied() -> Any:
    """``require_applied(patch_id)``: every target imported (so the registry has decided), then skip unless the
    patch is applied on this transformers (a patch's tests run where its defect is)."""

    def check(patch_id: str) -> None:
        import transformers

        import hf_genfix
        from hf_genfix.doctor import import_targets

        import_targets()
        state = next(s for s in hf_genfix.status() if s.id == patch_id).state
        if state != "applied":
            pytest.skip(f"{patch_id} is {state} on transformers {transformers.__version__}")

    return check


@pytest.fixture
def patches_decided() -> None:
    """Every patch decided (its target modules imported) before the test. A test module that imports this
    fixture and lists it in ``pytestmark``, or names it, gets it."""
    pytest.importorskip("transformers")
    from hf_genfix.doctor import import_targets

    import_targets()


@pytest.fixture(scope="session")
def tiny() -> Any:
    """``tiny(model_type, **overrides)``: the tiny model, or the test skipped where this release cannot build it."""
    from hf_genfix.oracles import ProbeSkipped, tiny_model

    def build(model_type: str, **overrides: Any) -> Any:
        try:
            return tiny_model(model_type, **overrides)
        except ProbeSkipped as exc:
            pytest.skip(str(exc))

    return build


def sweep_subject(model_type: str) -> Any:
    """The sweep's ``Subject(model_type)`` (its tiny model and rows), or the test skipped where this release cannot
    build it."""
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sweep import Subject

    try:
        return Subject(model_type)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


def assert_upstream_bitwise(model: Any, patch: str, ids: Any, **generate: Any) -> None:
    """Greedy ``generate()`` with ``patch`` and inside ``hf_genfix.disabled(patch)``: the same sequences and the same
    per-step logits, bit for bit (never worse than upstream where upstream is right)."""
    import torch

    import hf_genfix

    kwargs = dict(max_new_tokens=5, do_sample=False, pad_token_id=0, eos_token_id=None,
                  return_dict_in_generate=True, output_logits=True)
    kwargs.update(generate)
    with torch.no_grad():
        patched = model.generate(ids, **kwargs)
        with hf_genfix.disabled(patch):
            upstream = model.generate(ids, **kwargs)
    assert torch.equal(patched.sequences, upstream.sequences)
    assert all(torch.equal(a, b) for a, b in zip(patched.logits, upstream.logits))


def assert_image_upstream_bitwise(subject: Any, patch: str, prompts: Any, images: Any, **generate: Any) -> None:
    """``assert_upstream_bitwise`` for an image-text model of the sweep (``ImageTextSubject``): its loud weights, a
    batch of ``prompts`` with ``images``, 3 greedy tokens with ``patch`` and inside ``hf_genfix.disabled(patch)``;
    the same sequences and per-step logits, bit for bit."""
    import warnings

    import torch

    import hf_genfix
    from hf_genfix.oracles.sweep import imagetext as imagetext

    runs = []
    for off in (False, True):
        with imagetext.loud(subject.model), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with hf_genfix.disabled(patch) if off else warnings.catch_warnings():
                runs.append(imagetext._generate(subject, imagetext._inputs(subject, prompts, images),
                                                max_new_tokens=3, **generate))
    ours, upstream = runs
    assert torch.equal(ours.sequences, upstream.sequences)
    assert all(torch.equal(a, b) for a, b in zip(ours.logits, upstream.logits))


# -- the checks every patch owes ----------------------------------------------------------------------------------
_LAB_FILES = ("probe.py", "program.py", "__init__.py")


def catalog_modules() -> list[Path]:
    """The catalog's runtime modules: each patch's ``fix.py`` and each family's ``shared/<topic>.py``, the code a
    user's process runs. Not the lab's (``probe.py``, ``shared/*_probes.py``, ``program.py``), not the tests.
    One list for every test that reads the catalog's code (its imports, its helpers' warning attribution): two
    walks with their own filters drifted apart once (one read the probes, one did not)."""
    import hf_genfix._patches as package

    found: list[Path] = []
    for root in map(Path, package.__path__):
        found += [p for p in sorted(root.rglob("*.py")) if "__pycache__" not in p.parts
                  and p.name not in _LAB_FILES and not p.name.startswith("test_")
                  and not p.name.endswith("_probes.py")]
    return found


def patch_of_file(path: str | os.PathLike) -> str:
    """The id of the patch whose folder holds ``path`` (``patches/<family>/<id>/...``)."""
    from hf_genfix import catalog

    folder = Path(path).resolve().parent
    pid = folder.name.replace("_", "-")
    family = folder.parent.name.replace("_", "-")
    if family not in catalog.FAMILIES:
        raise ValueError(f"{path} is not in a patch's folder (patches/<family>/<id>/)")
    return pid


class PatchTests:
    """Derive a test class from this in a patch's own test file; the patch is the folder's."""

    @property
    def patch_id(self) -> str:
        return patch_of_file(inspect.getfile(type(self)))

    def test_probe_proves_the_patch(self) -> None:
        pytest.importorskip("torch")
        pytest.importorskip("transformers")
        import hf_genfix
        from hf_genfix import catalog
        from hf_genfix._registry import in_range, transformers_version
        from hf_genfix.catalog import open_finding_for_claims
        from hf_genfix.doctor import import_targets
        from hf_genfix.oracles import DefectObserved, ProbeSkipped

        manifest = catalog.manifest(self.patch_id)
        import_targets()
        version = transformers_version()
        probe = catalog.probe(manifest)
        affected = in_range(manifest.affected, version)
        state = _state(manifest.id)
        try:
            with hf_genfix.disabled(manifest.id):
                try:
                    figures = probe()
                    without = None
                except DefectObserved as exc:
                    without = exc
            if affected:
                assert state == "applied", f"{manifest.id} affected on {version} but {state}"
                assert without is not None, (
                    f"{manifest.id}: transformers {version} is inside {manifest.affected} but the probe passes "
                    f"without the patch ({figures})")
                probe()  # with the patch: must pass (DefectObserved fails the test with its message)
            else:
                assert state == "not-needed", state
                record = open_finding_for_claims(manifest.sweep, version) if without is not None else None
                if record is not None:
                    # Another defect of the same path, on file for this release (doctor's ``open`` verdict): not
                    # this patch's, and not a catalog error.
                    pytest.skip(f"{manifest.id}: open on transformers {version}: {record['what'][:120]}")
                assert without is None, (
                    f"catalog wrong: {manifest.id} shows its defect on transformers {version}, outside "
                    f"{manifest.affected}: {without}")
        except ProbeSkipped as exc:
            pytest.skip(f"{manifest.id}: {exc}")

    @pytest.mark.slow
    def test_program_gets_the_patch(self) -> None:
        transformers = pytest.importorskip("transformers")
        pytest.importorskip("torch")
        from hf_genfix import catalog
        from hf_genfix._registry import in_range

        manifest = catalog.manifest(self.patch_id)
        program = catalog.program(manifest)
        assert program is not None, f"{manifest.id}: no program.py in its folder"
        affected = in_range(manifest.affected, transformers.__version__)
        result = run_program(program)
        if "skip" in result:
            assert not affected, f"{manifest.id}: its program cannot be set up: {result['skip']}"
            pytest.skip(result["skip"])
        state, reason = result["states"][manifest.id]
        if affected:
            assert result["error"] is None, f"{program.path}: {result['error']}"
            assert state == "applied", f"{manifest.id} after {program.path}: {state} ({reason})"
        else:
            assert state in ("forced", "drift"), f"{manifest.id} (forced) after {program.path}: {state} ({reason})"


def _state(pid: str) -> str:
    import hf_genfix

    return next(s for s in hf_genfix.status() if s.id == pid).state


# -- running a patch's program in a fresh interpreter -------------------------------------------------------------
_CHILD = """
import json, sys
import hf_genfix, torch, transformers
# Seeded: a random model's greedy tokens are then the same on every run of a release (an image model that
# generates its own image token, say, fails every time or never, not once in 60 runs).
torch.manual_seed(0)
path, repo = sys.argv[1], sys.argv[2]
def applied(pid):
    return next(s for s in hf_genfix.status() if s.id == pid).state == "applied"
error = None
try:
    with open(path, encoding="utf-8") as f:
        namespace = {"__name__": "__hf_genfix_program__"}
        exec(compile(f.read(), path, "exec"), namespace)
    namespace["run"](repo, applied)
except Exception as exc:
    error = f"{type(exc).__name__}: {exc}"
print(json.dumps({"error": error, "states": {s.id: [s.state, s.reason] for s in hf_genfix.status()}}))
"""


def run_program(program: Any, timeout: int = 300) -> dict[str, Any]:
    """Run a patch's program (``catalog.program``) in a fresh interpreter: its imports after
    ``import hf_genfix, transformers``, then ``run(repo, applied)`` on the tiny repos; returns ``{"error", "states",
    "forced"}`` (or ``{"skip": why}`` where a repo it loads cannot be written on this release). The patches whose
    programs are this one (the same code) and whose range does not cover this release are switched on
    (``HF_GENFIX_<ID>=on``): the state then still says whether the program's imports reach them. One run per
    distinct program per session."""
    import transformers

    from hf_genfix import catalog
    from hf_genfix._config import env_name
    from hf_genfix._manifest import in_range

    root, missing = _repos()
    needs = [folder for folder in missing if f'"/{folder}"' in program.source]
    if needs:
        return {"skip": missing[needs[0]]}
    code = _code_of(program.source)
    sharing = [m for m in catalog.manifests() if _code_of(catalog.program(m).source) == code]
    forced = sorted(m.id for m in sharing if not in_range(m.affected, transformers.__version__))
    env = tuple(sorted((env_name(pid), "on") for pid in forced))
    path = str(catalog.patch_folder(program.patch) / "program.py")
    return dict(_run(code, path, str(root), env, timeout), forced=forced)


@functools.lru_cache(maxsize=None)
def _code_of(source: str) -> str:
    """A program's code without its docstring: what two patches' programs must share to share one run."""
    import ast

    tree = ast.parse(source)
    if tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Constant):
        tree.body = tree.body[1:]
    return ast.unparse(tree)


_RUNS: dict[tuple, dict[str, Any]] = {}  # (code, repo, environment) -> what the program's interpreter reported


def _run(code: str, path: str, repo: str, env: tuple, timeout: int) -> dict[str, Any]:
    if (code, repo, env) not in _RUNS:
        _RUNS[code, repo, env] = _fresh(path, repo, env, timeout)
    return _RUNS[code, repo, env]


def _fresh(path: str, repo: str, env: tuple, timeout: int) -> dict[str, Any]:
    from hf_genfix import _child

    environ = {k: v for k, v in os.environ.items() if not k.startswith("HF_GENFIX")}
    environ.update(dict(env), OMP_NUM_THREADS="1")
    proc = subprocess.run(_child.argv(sys.executable, "-c", _CHILD, path, repo), env=environ, capture_output=True,
                          text=True, timeout=timeout, cwd=tempfile.gettempdir())
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@functools.lru_cache(maxsize=None)
def _repos() -> tuple[Path, dict[str, str]]:
    """The tiny repos the programs load, written once per process: (their folder, folder -> why it could not be
    written on this release)."""
    root = Path(tempfile.mkdtemp(prefix="hf_genfix_programs_"))
    return root, write_repos(root)


def write_repos(root: Path) -> dict[str, str]:
    """Write what the programs load into ``root``; returns folder -> why it could not be written (the release
    lacks the model type). The child interpreters never import hf_genfix's oracles: this process writes."""
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.legacy_models import write_family, write_moe_repo, write_plain_tokenizer
    from hf_genfix.oracles.sliding import MODELS, WINDOW
    from hf_genfix.oracles.sliding_static import tiny_gemma3_vlm, tiny_gemma4_vlm
    from hf_genfix.oracles.sweep.core import _ssm_overrides
    from hf_genfix.oracles.sweep.families import build_image_text, build_seq2seq
    from hf_genfix.oracles.tiny import tiny_config, tiny_model
    from hf_genfix.oracles.tokenizers import special_ids, write_repo

    write_plain_tokenizer(root / "remote_plain_tokenizer")
    write_moe_repo(root / "remote_moe")
    for family in ("deepseek", "chatglm3", "internlm2", "minicpm"):
        write_family(family, root / f"remote_{family}")
    write_repo("llama3", root / "llama3")
    write_repo("mistral", root / "mistral-tok")
    write_repo("llama3", root / "checkpoint")
    tiny_model("llama", **special_ids("llama3")).save_pretrained(root / "checkpoint")
    missing: dict[str, str] = {}
    configs = {
        "llama": lambda: tiny_config("llama"),
        "phi3": lambda: tiny_config("phi3"),
        "rwkv": lambda: tiny_config("rwkv"),
        "gpt-neox": lambda: tiny_config("gpt_neox", attn_implementation="eager"),
        "mistral": lambda: tiny_config("mistral", sliding_window=WINDOW),
        "gemma2": lambda: tiny_config(MODELS["gemma2"][0], sliding_window=WINDOW, **MODELS["gemma2"][1]),
        "gemma4": lambda: tiny_config(MODELS["gemma4"][0], sliding_window=WINDOW, **MODELS["gemma4"][1]),
        "gemma3-vlm": lambda: tiny_gemma3_vlm().config,
        "gemma4-vlm": lambda: tiny_gemma4_vlm().config,
        "kosmos-2": lambda: build_image_text("kosmos-2").config,
        "fuyu": lambda: build_image_text("fuyu").config,
        "paligemma": lambda: build_image_text("paligemma").config,
        "idefics2": lambda: build_image_text("idefics2").config,
        "idefics3": lambda: build_image_text("idefics3").config,
        "smolvlm": lambda: build_image_text("smolvlm").config,
        "qwen2-vl": lambda: build_image_text("qwen2_vl").config,
        "llava": lambda: build_image_text("llava").config,
        "fsmt-direct": lambda: _fsmt_config(),
        "qwen2-5-vl": lambda: build_image_text("qwen2_5_vl").config,
        **{t: (lambda t=t: build_seq2seq(t).config)
           for t in ("led", "fsmt", "mvp", "nllb-moe", "seamless_m4t", "seamless_m4t_v2")},
        "falcon-h1": lambda: _buildable("falcon_h1", **_ssm_overrides("falcon_h1")),
        "mamba": lambda: _buildable("mamba"),
        "falcon-mamba": lambda: _buildable("falcon_mamba"),
        "mamba2": lambda: _buildable("mamba2"),
        "zamba": lambda: _buildable("zamba", use_mamba_kernels=False),
        # use_mem_rope: without it 5.0-5.3 cannot run a Zamba2 at all (no rotary_emb), so no program would reach it.
        "zamba2": lambda: _buildable("zamba2", use_mamba_kernels=False, use_mem_rope=True),
        "xglm": lambda: _buildable("xglm"),
        "openai-gpt": lambda: _buildable("openai-gpt"),
        "phimoe": lambda: tiny_config("phimoe", sliding_window=WINDOW),
        "qwen2-moe": lambda: tiny_config("qwen2_moe", sliding_window=WINDOW, use_sliding_window=True,
                                         max_window_layers=0, num_experts=4, moe_intermediate_size=16,
                                         shared_expert_intermediate_size=16),
        "jetmoe": lambda: tiny_config("jetmoe", kv_channels=8),
        "speech-to-text-2": lambda: tiny_config("speech_to_text_2"),
    }
    for folder, make in configs.items():
        try:
            make().save_pretrained(root / folder)
        except ProbeSkipped as exc:
            missing[folder] = str(exc)
    return missing


def _buildable(model_type: str, **overrides: Any) -> Any:
    """A tiny config, or ProbeSkipped where the release has no such model or cannot build its config (5.4.0's
    FalconH1Config fails its own validation)."""
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.tiny import tiny_config

    try:
        return tiny_config(model_type, **overrides)
    except ProbeSkipped:
        raise
    except Exception as exc:  # noqa: BLE001
        raise ProbeSkipped(f"{model_type}: {type(exc).__name__}") from exc


def _fsmt_config() -> Any:
    from hf_genfix import catalog

    return catalog.probe_module("model-fsmt-uncached-mask").tiny_fsmt().config
