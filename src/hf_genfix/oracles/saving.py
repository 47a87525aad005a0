"""Saved folders with and without hf_genfix: never a file that differs from upstream's unless the user asked.

hf_genfix changes objects that have a save path (a tokenizer's pad token and padding side, a remote-code model's
configuration, generation configuration and weights). Whatever it changes in memory, ``save_pretrained`` must
write the folder upstream writes for what the user did; a reload (``from_pretrained``) in the same process must
behave as the object did before the save. Each scenario here builds the object as a user does (load, then the
user's own steps), saves it, and returns the saved folder's files with what a reload does; ``compare_saves``
judges the pair (without hf_genfix, with it) as ``oracles.differential.compare`` does, on whole folders.

Used by ``tests/test_saved_folders.py`` and by ``hf-genfix doctor --sweep --differential`` (``run_scenarios``),
which counts the pairs with the generation scenarios.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import pickle
import shutil
import tempfile
import uuid
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator

from . import differential
from .outcome import DefectObserved

TEXTS = ["hello world, how are you today", "the fox"]


def folder_files(folder: str | Path) -> dict[str, bytes]:
    """``{relative path: bytes}`` of a saved folder (remote code's ``.py`` files included)."""
    folder = Path(folder)
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def folder_difference(a: dict[str, bytes], b: dict[str, bytes]) -> str:
    """Which files differ between two saved folders ("" when byte-identical), with the first JSON key that does."""
    if sorted(a) != sorted(b):
        return f"files {sorted(set(a) ^ set(b))} are in one folder only"
    for name in sorted(a):
        if a[name] != b[name]:
            return f"{name} differs{_json_difference(a[name], b[name])}"
    return ""


def _json_difference(x: bytes, y: bytes) -> str:
    try:
        u, v = json.loads(x), json.loads(y)
    except ValueError:
        return ""
    if not (isinstance(u, dict) and isinstance(v, dict)):
        return ""
    keys = sorted(k for k in set(u) | set(v) if u.get(k, "<absent>") != v.get(k, "<absent>"))
    shown = ", ".join(f"{k}: {u.get(k, '<absent>')!r} vs {v.get(k, '<absent>')!r}" for k in keys[:4])
    return f" ({len(keys)} key(s): {shown}{', ...' if len(keys) > 4 else ''})" if keys else ""


# -- a remote-code model written for 5.x (and 4.x): what a current Hub repo with its own code looks like ----------
def write_modern_remote_repo(directory: str | Path, repo: str = "modern", **config: Any) -> Path:
    """A tiny remote-code repo whose code is written for the current API (``remote_repos/modern``: a Llama
    subclass; ``modern_tied``: the same with 5.x's ``{target: source}`` ``_tied_weights_keys``); ``config`` entries
    are merged into its ``config.json``."""
    from .legacy_models import write_repo

    directory = write_repo(repo, directory)
    entries = {
        "model_type": "modern_remote", "architectures": ["ModernForCausalLM"],
        "auto_map": {"AutoConfig": "configuration_modern.ModernConfig",
                     "AutoModelForCausalLM": "modeling_modern.ModernForCausalLM"},
        "vocab_size": 128, "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4,
        "num_key_value_heads": 2, "num_hidden_layers": 2, "max_position_embeddings": 256,
        "bos_token_id": 0, "eos_token_id": 1,
    }
    entries.update(config)
    (directory / "config.json").write_text(json.dumps(entries, indent=1))
    return directory


# -- running a scenario twice (without hf_genfix, with it) ----------------------------------------------------------
class SaveRun:
    """What one run of a save scenario gets: fresh folders, the scenario's shared inputs, and the record of what
    was saved and how the reload behaves (compared between the two runs)."""

    def __init__(self, root: Path, shared: Any):
        self.root = root
        self.shared = shared
        self.records: list[dict[str, Any]] = []

    def folder(self, name: str) -> Path:
        path = self.root / _neutral(lambda: f"{name}-{uuid.uuid4().hex[:8]}")
        path.mkdir(parents=True)
        return path


def _neutral(draw: Callable[[], str]) -> str:
    """A folder name drawn by ``draw`` that contains no model type's name. A saved tokenizer's folder holds no
    config.json, and transformers then types it by its path (AutoConfig matches every model type's name against the
    whole path string): ``/tmp/tmpt...`` reads as "mpt", and 5.1.0 reloaded a GPT-2 tokenizer saved there as another
    class, one run in twenty -- a flaky 'worse' in 5.1.0's sweep (session 30). Only the random part is redrawn: a
    folder above it that names a type names it in both runs alike."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    for _ in range(100):
        name = draw()
        if not any(model_type in name for model_type in CONFIG_MAPPING_NAMES):
            return name
    raise RuntimeError("no folder name free of model type names in 100 draws")


@contextlib.contextmanager
def _neutral_tempdir(prefix: str) -> Iterator[Path]:
    """``tempfile.TemporaryDirectory(prefix=...)`` whose own name contains no model type's name (``_neutral``);
    every folder drawn is removed on the way out."""
    made: list[str] = []

    def draw() -> str:
        made.append(tempfile.mkdtemp(prefix=prefix))
        return os.path.basename(made[-1])

    try:
        _neutral(draw)
        yield Path(made[-1])
    finally:
        for folder in made:
            shutil.rmtree(folder, ignore_errors=True)


class SaveScenario:
    """``body(run)`` saves and reloads; ``prepare(directory)`` (optional) builds inputs both runs share (a remote
    repo: the same code, so that the saved ``.py`` files are the same bytes)."""

    def __init__(self, name: str, body: Callable[[SaveRun], Any], prepare: Callable[[Path], Any] | None = None):
        self.name, self.body, self.prepare = name, body, prepare


def differential_save(registry: Any, scenario: SaveScenario) -> dict[str, Any]:
    """Run ``scenario`` inside ``registry.disabled()`` (upstream) and as installed, and judge the pair with
    ``differential.compare`` (the saved folders and the reload's behaviour are the compared outputs):
    {"verdict", "detail", "upstream", "ours"}."""
    with _neutral_tempdir("genfix_save_") as root:
        with warnings.catch_warnings():  # the shared inputs are built quietly, as observe() runs the scenario
            warnings.simplefilter("ignore")
            # A name of its own: transformers copies a local repo's code to transformers_modules/<folder name>
            # (before its content-hash layout), which every process on the machine shares; a fixed name let two
            # sweeps at once (CI's parallel tox envs) overwrite each other's code: a flaky 'worse'.
            shared = scenario.prepare(root / f"shared_{uuid.uuid4().hex[:12]}") if scenario.prepare else None
        observations = []
        for label, context in (("upstream", registry.disabled), ("ours", _nothing)):
            run = SaveRun(root / label, shared)
            with context():
                obs = differential.observe(scenario.body, run)
            obs.outputs = run.records
            observations.append(obs)
    upstream, ours = observations
    verdict, detail = differential.compare(upstream, ours)
    if verdict == differential.WORSE and upstream.outcome == ours.outcome == differential.PASS:
        detail = "saved differently: " + _records_difference(upstream.outputs, ours.outputs)
    return {"verdict": verdict, "detail": detail, "upstream": upstream, "ours": ours}


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def _records_difference(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> str:
    for x, y in zip(a, b):
        text = folder_difference(x.get("files", {}), y.get("files", {}))
        if text:
            return f"{x['call']}: {text}"
        for key in sorted(set(x) | set(y)):
            if key != "files" and x.get(key) != y.get(key):
                return f"{x['call']}: {key} {x.get(key)!r} vs {y.get(key)!r}"
    return f"{len(a)} vs {len(b)} saves"


# -- tokenizers -----------------------------------------------------------------------------------------------------
def tokenizer_behaviour(tokenizer: Any) -> dict[str, Any]:
    """What a user sees of a tokenizer's padding: its pad token, side, and a padded batch (or the error)."""
    try:
        padded = tokenizer(TEXTS, padding=True)["input_ids"]
    except Exception as exc:  # noqa: BLE001 - "asking to pad but the tokenizer does not have a padding token"
        padded = type(exc).__name__
    return {"class": type(tokenizer).__name__, "pad_token": tokenizer.pad_token,
            "padding_side": tokenizer.padding_side, "padded": padded}


def _pad_eos(tok: Any) -> None:
    tok.pad_token = tok.eos_token


def _pad_id_eos(tok: Any) -> None:
    tok.pad_token_id = tok.eos_token_id


def _add_special_eos(tok: Any) -> None:
    tok.add_special_tokens({"pad_token": tok.eos_token})


def _other_then_eos(tok: Any) -> None:
    tok.pad_token = tok.bos_token or tok.unk_token or tok.eos_token
    tok.pad_token = tok.eos_token


def _pad_none(tok: Any) -> None:
    tok.pad_token = None


def _side_right(tok: Any) -> None:
    tok.padding_side = "right"


def _side_left(tok: Any) -> None:
    tok.padding_side = "left"


def _padded_call(tok: Any) -> None:
    try:
        tok(TEXTS, padding=True)  # leaves its padding in a fast backend, which tokenizer.json records
    except ValueError:
        pass  # no pad token (upstream): nothing to record


# The user's steps between loading and saving: name -> (from_pretrained keywords, step). The reload of what was
# saved must pad as the tokenizer did before the save; after "pad=None" (the user removed the pad token) the saved
# files hold no pad token, as a repo without one does, so only the reload alone is held to that (with config.json
# beside it, pad-token gives the pad as it does to every such repo).
TOKENIZER_ACTIONS: dict[str, tuple[dict[str, Any], Callable[[Any], None]]] = {
    "as-loaded": ({}, lambda tok: None),
    "padded-call": ({}, _padded_call),
    "pad=eos": ({}, _pad_eos),
    "pad_id=eos_id": ({}, _pad_id_eos),
    "add_special_tokens(pad=eos)": ({}, _add_special_eos),
    "pad=other,then=eos": ({}, _other_then_eos),
    "from_pretrained(pad_token=eos)": ({"pad_token": "<eos>"}, lambda tok: None),
    "pad=None": ({}, _pad_none),
    "padding_side=right": ({}, _side_right),
    "padding_side=left": ({}, _side_left),
}
_LIKE_A_FRESH_LOAD = ("pad=None",)

TRANSPORTS: dict[str, Callable[[Any], Any]] = {
    "same": lambda tok: tok,
    "deepcopy": copy.deepcopy,
    "copy": copy.copy,
    "pickle": lambda tok: pickle.loads(pickle.dumps(tok)),
}

TOKENIZER_LAYOUTS = ("llama3", "llama2", "mistral", "gpt2", "qwen2", "gemma")


def tokenizer_scenario(layout: str, action: str, transport: str = "same") -> SaveScenario:
    """Load the layout's repo, do ``action``, save (the tokenizer or its copy) alone; reload it alone, then with
    the model's ``config.json`` beside it (as ``model.save_pretrained`` leaves it). The reloads must pad as the
    saved tokenizer did (a ``DefectObserved`` otherwise)."""
    kwargs, step = TOKENIZER_ACTIONS[action]
    move = TRANSPORTS[transport]

    def body(run: SaveRun) -> dict[str, Any]:
        from transformers import AutoTokenizer

        from .tokenizers import layout_of, tokenizer_repo

        repo = tokenizer_repo(layout)
        options = {k: (layout_of(layout).eos if v == "<eos>" else v) for k, v in kwargs.items()}
        tok = AutoTokenizer.from_pretrained(str(repo), **options)
        step(tok)
        tok = move(tok)
        before = tokenizer_behaviour(tok)
        folder = run.folder("saved")
        tok.save_pretrained(folder)
        alone = tokenizer_behaviour(AutoTokenizer.from_pretrained(str(folder)))
        saved = folder_files(folder)
        run.records.append({"call": "tokenizer.save_pretrained", "files": saved})
        shutil.copy(repo / "config.json", folder)
        beside = tokenizer_behaviour(AutoTokenizer.from_pretrained(str(folder)))
        checks = [("alone", alone)] + ([] if action in _LIKE_A_FRESH_LOAD else [("with config.json", beside)])
        for name, after in checks:
            if after != before:
                raise DefectObserved(f"{layout} / {action} / {transport}: reloaded {name}, the tokenizer pads "
                                     f"otherwise than before the save: {before} -> {after}")
        return {"files": len(saved)}

    return SaveScenario(f"save/tokenizer/{layout}/{action}" + ("" if transport == "same" else f"/{transport}"), body)


def tokenizer_scenarios() -> list[SaveScenario]:
    """Every layout x every user action, and the copies (deepcopy, copy, pickle) of the tokenizers whose pad
    hf_genfix chooses, as loaded and after the user's own pad = eos."""
    out = [tokenizer_scenario(layout, action) for layout in TOKENIZER_LAYOUTS for action in TOKENIZER_ACTIONS]
    out += [tokenizer_scenario(layout, action, transport)
            for layout in ("llama3", "llama2", "gpt2") for action in ("as-loaded", "padded-call", "pad=eos")
            for transport in ("deepcopy", "copy", "pickle")]
    return out


# -- remote-code configurations and models --------------------------------------------------------------------------
def _logits(model: Any) -> Any:
    import torch

    with torch.no_grad():
        # No cache: this compares weights and configuration, not a cache path.
        return model(input_ids=torch.tensor([[5, 17, 33, 9, 61]]), use_cache=False).logits.detach().clone()


def _load_model(repo: Path, how: str) -> Any:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    if how == "from_pretrained":
        return AutoModelForCausalLM.from_pretrained(str(repo), trust_remote_code=True).float().eval()
    config = AutoConfig.from_pretrained(str(repo), trust_remote_code=True)
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config, trust_remote_code=True).float().eval()


def _checkpoint(write: Callable[[Path], Path]) -> Callable[[Path], Path]:
    """A remote repo with weights: the model built from its config (seed 0) saved beside it. Built as installed
    (old remote code does not build upstream on 5.x); both runs load the same files."""

    def prepare(directory: Path) -> Path:
        repo = write(directory)
        _load_model(repo, "from_config").save_pretrained(repo)
        return repo

    return prepare


def model_scenario(name: str, write: Callable[[Path], Path], how: str = "from_config",
                   transport: str = "same") -> SaveScenario:
    """Load a remote-code model as users do (``how``), save it (or its ``deepcopy``), reload the saved folder with
    ``from_pretrained``: the folder is compared, and the reload must give the logits of the saved model."""

    def body(run: SaveRun) -> dict[str, Any]:
        import torch

        model = _load_model(run.shared, how)
        if transport == "deepcopy":
            model = copy.deepcopy(model)
        before = _logits(model)
        folder = run.folder("saved")
        model.save_pretrained(folder)
        run.records.append({"call": "model.save_pretrained", "files": folder_files(folder)})
        for code in Path(run.shared).glob("*.py"):  # a model built by from_config is saved without its code on 4.x
            if not (folder / code.name).exists():
                shutil.copy(code, folder)
        after = _logits(_load_model(folder, "from_pretrained"))
        if not torch.equal(before, after):
            raise DefectObserved(f"{name}: the reloaded model's logits differ from the saved model's by "
                                 f"{float((before - after).abs().max()):.3g}")
        return {}

    prepare = _checkpoint(write) if how == "from_pretrained" else write
    suffix = "" if transport == "same" else f"/{transport}"
    return SaveScenario(f"save/model/{name}/{how}{suffix}", body, prepare)


def config_scenario(name: str, write: Callable[[Path], Path], transport: str = "same") -> SaveScenario:
    """``AutoConfig.from_pretrained(trust_remote_code=True)`` of a remote repo, saved (or its copy) and reloaded:
    the folder is compared, and the reload must save the same ``config.json`` again."""
    move = TRANSPORTS[transport]

    def body(run: SaveRun) -> dict[str, Any]:
        from transformers import AutoConfig

        config = move(AutoConfig.from_pretrained(str(run.shared), trust_remote_code=True))
        folder = run.folder("saved")
        config.save_pretrained(folder)
        run.records.append({"call": "config.save_pretrained", "files": folder_files(folder)})
        again = run.folder("again")
        AutoConfig.from_pretrained(str(folder), trust_remote_code=True).save_pretrained(again)
        if folder_files(again) != folder_files(folder):
            raise DefectObserved(f"{name}: the reloaded configuration saves otherwise: "
                                 f"{folder_difference(folder_files(folder), folder_files(again))}")
        return {}

    suffix = "" if transport == "same" else f"/{transport}"
    return SaveScenario(f"save/config/{name}{suffix}", body, write)


def _modern(**config: Any) -> Callable[[Path], Path]:
    return lambda directory: write_modern_remote_repo(directory, **config)


def _modern_tied(directory: Path) -> Path:
    return write_modern_remote_repo(directory, repo="modern_tied", tie_word_embeddings=True)


def _family(family: str) -> Callable[[Path], Path]:
    def write(directory: Path) -> Path:
        from .legacy_models import write_family

        return write_family(family, directory)

    return write


def remote_scenarios() -> list[SaveScenario]:
    """Remote-code repos: one written for the current API (plain, with ``use_cache`` and a 4.x-style
    ``rope_scaling`` in its ``config.json``, and on 5.x with tied weights in 5.x's mapping form), the legacy
    families of ``oracles.legacy_models`` and its remote MoE."""
    from .legacy_models import FAMILIES

    out = [
        model_scenario("modern", _modern(), "from_config"),
        model_scenario("modern", _modern(), "from_pretrained"),
        model_scenario("modern", _modern(), "from_config", "deepcopy"),
        model_scenario("modern+use_cache+rope_scaling",
                       _modern(use_cache=True, rope_scaling={"type": "linear", "factor": 2.0}), "from_config"),
        config_scenario("modern", _modern()),
        config_scenario("modern", _modern(), "pickle"),
    ]
    import transformers

    if int(transformers.__version__.split(".")[0]) >= 5:  # 5.x's {target: source} form (4.x reads a list)
        # tied weights omitted from the checkpoint (5.3 left them on the meta device: remote-code-tied-missing-keys)
        out.append(model_scenario("modern-tied", _modern_tied, "from_pretrained"))
    for family in FAMILIES:
        out.append(config_scenario(family, _family(family)))
        out.append(config_scenario(family, _family(family), "deepcopy"))
        out.append(model_scenario(family, _family(family), "from_config"))
        # from_pretrained: the loader's paths (init-buffers, init-weights, post-init, tied weights)
        out.append(model_scenario(family, _family(family), "from_pretrained"))
    # A remote MoE of DeepSeek-V2's layout (checkpoint conversions of the built-in deepseek_v2 type)
    out.append(model_scenario("deepseek-v2-moe", _moe, "from_pretrained"))
    return out


def _moe(directory: Path) -> Path:
    from .legacy_models import write_moe_repo

    return write_moe_repo(directory)


def all_scenarios() -> list[SaveScenario]:
    return tokenizer_scenarios() + remote_scenarios()


def run_scenarios(registry: Any = None, scenarios: list[SaveScenario] | None = None,
                  progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every save scenario, judged (``differential_save``): {"pairs": {name: {"verdict", "detail"}}, "counts",
    "summary"}; ``hf-genfix doctor --sweep --differential`` adds them to its count."""
    import hf_genfix

    registry = registry or hf_genfix._activation.registry()
    pairs = {}
    for scenario in scenarios or all_scenarios():
        pair = differential_save(registry, scenario)
        pairs[scenario.name] = {"verdict": pair["verdict"], "detail": pair["detail"]}
        if progress is not None and pair["verdict"] == differential.WORSE:
            progress(f"{scenario.name}: WORSE: {pair['detail']}")
    counts = differential.tally([p["verdict"] for p in pairs.values()])
    return {"pairs": pairs, "counts": counts, "summary": differential.summary_line(counts)}
