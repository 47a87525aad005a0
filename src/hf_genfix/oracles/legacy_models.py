"""Tiny remote-code models written the way six families of Hub repos were written for older transformers.

Each family is a folder of files, ``remote_repos/<family>/`` (package data): a ``configuration_<name>.py`` and a
``modeling_<name>.py`` next to a ``config.json`` whose ``auto_map`` points at them, which ``write_family`` copies
into a temporary folder so that ``trust_remote_code=True`` loads them as it loads a Hub repo. Each repo holds its
own copy of what it shares with the others (the rotary attention, the config), as Hub repos do; a family that
differs from another by names and a few lines is written as that difference (``variant.json``, ``repo_files``). They are ours (a
few hundred parameters, two layers so that per-layer cache indexing matters, no weights); what they take from the
real files is which transformers APIs they call and where (read in the public repositories, facts only):

- ``phi3``  (old Phi-3 ``modeling_phi3.py``): ``Cache`` / ``DynamicCache.from_legacy_cache`` in the model,
  ``get_usable_length`` in the model and in attention, ``to_legacy_cache`` on return,
  ``_prepare_4d_causal_attention_mask`` from ``transformers.modeling_attn_mask_utils``, ``rope_scaling["type"]``,
  a 4.40-style ``prepare_inputs_for_generation`` (``seen_tokens``, ``get_max_length()``), ``_reorder_cache``,
  no ``GenerationMixin`` among the bases;
- ``deepseek`` (DeepSeek-V2 ``modeling_deepseek.py``): the same cache calls, plus ``AttentionMaskConverter`` and
  ``_prepare_4d_attention_mask`` imports, ``is_torch_fx_available`` from ``transformers.utils.import_utils``,
  ``ALL_LAYERNORM_LAYERS`` / ``is_torch_greater_or_equal_than_1_13`` from ``transformers.pytorch_utils``,
  ``is_flash_attn_greater_or_equal_2_10`` from ``transformers.utils`` (gone on 5.4.0 only);
- ``minicpm`` (``modeling_minicpm.py``): as DeepSeek-V2, and ``_prepare_4d_causal_attention_mask_for_sdpa``
  for the sdpa path;
- ``internlm2`` (``modeling_internlm2.py``, first releases): tuple caches throughout -- ``past_key_values[0][0]
  .shape[2]`` in the model and in ``prepare_inputs_for_generation``, ``torch.cat`` onto ``past_key_value[0]`` in
  attention, per-layer ``(key, value)`` tuples returned; ``rope_scaling["type"]`` read by the config's
  validation and by the model;
- ``chatglm3`` (``modeling_chatglm.py``): a config with ``num_layers`` and no ``num_hidden_layers``,
  ``config.max_length`` / ``config.use_cache`` read from the config, tuple caches, a
  ``prepare_inputs_for_generation`` with ``is_first_forward``, and an ``_update_model_kwargs_for_generation``
  override that calls ``self._extract_past_from_model_output(outputs, standardize_cache_format=...)``.
- ``chatglm2`` (ChatGLM2's and the first ChatGLM3 releases' ``modeling_chatglm.py``): as ``chatglm3``, with the
  cache in their layout, ``[seq, batch, heads, dim]`` (concatenated on dim 0, the past length read from
  ``past_key_values[0][0].shape[0]``, ``_reorder_cache`` selecting on dim 1).

- ``qwen``, ``merged``, ``stacked``, ``bloom``: tuple-era Qwen-1 structure (``c_attn`` / ``c_proj``, a
  non-persistent buffer in the attention module, a GPT-2-style ``_init_weights`` that re-draws every
  ``c_proj.weight``) with the past of each layer held as Qwen-1's [batch, seq, heads, dim], merged heads
  [batch, seq, hidden], one stacked tensor [2, batch, heads, seq, dim], or Bloom's [batch * heads, dim, seq] key
  and [batch * heads, seq, dim] value.

The attention itself is the same small causal multi-head attention with rotary positions in every family, so
that the only thing that differs from one to the other is the API usage under test.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any, Iterator, Sequence

FAMILIES = ("phi3", "deepseek", "minicpm", "internlm2", "chatglm3", "chatglm2", "qwen", "merged", "stacked",
            "bloom")

REPOS = Path(__file__).with_name("remote_repos")  # remote_repos/<name>/: each tiny repo's files, as on the Hub


def repo_files(name: str) -> dict[str, str]:
    """``{file name: text}`` of the tiny remote repo ``remote_repos/<name>/``. A repo that is a variant of another
    (``variant.json``: the same code with other names and a few lines changed, as ``deepseek`` is of ``phi3``)
    is that repo's code with ``rename`` applied (file names and text) and then each ``edits`` pair (old text,
    new text; each old text occurs once), plus its own files (``config.json``)."""
    folder = REPOS / name
    if not folder.is_dir():
        known = sorted(p.name for p in REPOS.iterdir() if p.is_dir())
        raise KeyError(f"unknown remote repo {name!r}; known: {', '.join(known)}")
    files: dict[str, str] = {}
    variant = folder / "variant.json"
    if variant.exists():
        spec = json.loads(variant.read_text(encoding="utf-8"))
        for base_name, text in repo_files(spec["from"]).items():
            if not base_name.endswith(".py"):
                continue
            file_name = base_name
            for old, new in spec["rename"].items():
                file_name, text = file_name.replace(old, new), text.replace(old, new)
            for old, new in spec.get("edits", {}).get(file_name, []):
                if text.count(old) != 1:
                    raise ValueError(f"remote_repos/{name}/variant.json: {old!r} is not once in {file_name}")
                text = text.replace(old, new)
            files[file_name] = text
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.suffix in (".py", ".json") and path != variant:
            files[path.name] = path.read_text(encoding="utf-8")
    return files


def write_repo(name: str, directory: str | Path) -> Path:
    """Lay out the tiny remote repo ``remote_repos/<name>/`` (``repo_files``) in ``directory``, as a Hub repo is
    downloaded, each ``.py`` file headed by one fresh stamp per repo (transformers caches remote modules by
    content hash: a fresh module, and classes created under the patches in place now, for every repo written, so
    that a probe never reuses classes of an earlier state)."""
    import uuid

    files = repo_files(name)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    stamp = f"# hf_genfix repo {uuid.uuid4().hex}\n\n"
    for file_name, text in files.items():
        (directory / file_name).write_text(stamp + text if file_name.endswith(".py") else text, encoding="utf-8")
    return directory


def write_plain_tokenizer(directory: str | Path) -> Path:
    """Lay out the remote tokenizer repo ``remote_repos/plain_tokenizer`` (Qwen-1's ``tokenization_qwen.py`` shape:
    a direct ``PreTrainedTokenizer`` subclass whose texts get no special tokens, so it overrides none of
    ``build_inputs_with_special_tokens``, ``get_special_tokens_mask`` or ``create_token_type_ids_from_sequences``;
    pad and eos ``<|endoftext|>``, left padding)."""
    return write_repo("plain_tokenizer", directory)



def check_plain_remote_tokenizer() -> dict[str, Any]:
    """A remote tokenizer that adds no special tokens (Qwen-1's shape, ``write_plain_tokenizer``) encodes as its authors
    meant: each text's ids are its own tokens' ids, and a batch is those rows padded on the left with its pad id."""
    with remote_repo("plain") as path:
        rows, _, _, _ = _plain_batch(write_plain_tokenizer(path), "a remote tokenizer that adds no special tokens")
        return {"rows": rows}


def _plain_batch(repo: Path, what: str) -> tuple[list[list[int]], Any, Any, Any]:
    """(rows, ids, mask, tokenizer): the tokenizer of ``repo`` (``write_plain_tokenizer``'s shape) loaded remotely,
    two texts encoded alone and as a padded batch; a ``DefectObserved`` unless each text is its own tokens and the
    batch is those rows padded on the left (``ids``, ``mask``: that batch as tensors)."""
    from transformers import AutoTokenizer

    from .decode import UPSTREAM_ERRORS, defect_on_error
    from .generation import left_pad
    from .outcome import DefectObserved

    texts = ["hi there", "hello world again"]
    with defect_on_error(what, UPSTREAM_ERRORS):
        tokenizer = AutoTokenizer.from_pretrained(str(repo), trust_remote_code=True)
        rows = [tokenizer(text)["input_ids"] for text in texts]
        batch = tokenizer(texts, padding=True)
    expected_rows = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text)) for text in texts]
    if rows != expected_rows:
        raise DefectObserved(f"{what}: encodes {rows}, its tokens are {expected_rows}")
    ids, mask = left_pad(rows, pad_id=tokenizer.pad_token_id, device="cpu")
    for key, expected in (("input_ids", ids), ("attention_mask", mask)):
        if batch[key] != expected.tolist():
            raise DefectObserved(f"{what}: padded batch {key} {batch[key]}, expected {expected.tolist()}")
    return rows, ids, mask, tokenizer


def write_moe_repo(directory: str | Path) -> Path:
    """Lay out ``remote_repos/deepseek_moe`` (code and config, no weights): DeepSeek-V2's mixture of experts as its
    remote file lays it out, config.model_type "deepseek_v2" (also the type of transformers' own class from 5.0),
    one module per expert (mlp.experts.<i>.gate_proj / up_proj / down_proj). The routing is dense here: only the
    parameter layout matters."""
    return write_repo("deepseek_moe", directory)



def check_remote_moe_reload() -> dict[str, Any]:
    """A remote model of DeepSeek-V2's expert layout (``write_moe_repo``), saved next to its code and loaded back
    with ``from_pretrained``, gives the logits of the model it was saved from."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from .reference import assert_close

    _release_reloads()
    with remote_repo("moe") as path:
        repo = write_moe_repo(path)
        config = AutoConfig.from_pretrained(str(repo), trust_remote_code=True)
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(config, trust_remote_code=True).float().eval()
        model.save_pretrained(repo)
        what = "a remote model of DeepSeek-V2's expert layout, loaded back"
        again = _from_pretrained(repo, what).float().eval()
        ids = torch.tensor(EQUAL_ROWS)
        with torch.no_grad():
            diff = assert_close(again(input_ids=ids).logits, model(input_ids=ids).logits, what)
        return {"max_logit_diff": diff}


def sources(family: str) -> dict[str, str]:
    """``{file name: text}`` of the family's Python files (configuration, modeling, tokenization)."""
    if family not in FAMILIES:
        raise KeyError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}")
    return {name: text for name, text in repo_files(family).items() if name.endswith(".py")}


def write_family(family: str, directory: str | Path) -> Path:
    """Lay out the family's local remote-code repo (``remote_repos/<family>/``) in ``directory``."""
    if family not in FAMILIES:
        raise KeyError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}")
    return write_repo(family, directory)



def load_family(directory: str | Path, seed: int = 0) -> Any:
    """The family's model loaded as users load a Hub repo: ``AutoConfig.from_pretrained(trust_remote_code=True)``
    then ``AutoModelForCausalLM.from_config(trust_remote_code=True)`` (float32, eval, eager attention)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(str(directory), trust_remote_code=True)
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, trust_remote_code=True)
    return model.float().eval()


# Equal lengths for chatglm3: its position ids ignore padding unless its tokenizer supplies them (it does; the
# tiny repo has no tokenizer), so a left-padded batch is not a scenario its authors supported.
EQUAL_ROWS = ((17, 44, 91, 23, 5), (60, 12, 77, 38, 101))


def rows_for(family: str) -> tuple[tuple[int, ...], ...]:
    from .decode import DEFAULT_ROWS

    return EQUAL_ROWS if family.startswith("chatglm") else DEFAULT_ROWS


@contextlib.contextmanager
def remote_repo(stem: str, directory: str | Path | None = None) -> Iterator[Path]:
    """A fresh path ``<stem>_<random>`` for a tiny remote-code repo, in a temporary folder (or in ``directory``).
    Afterwards the temporary folder is gone, and so is the copy of the repo's code that ``trust_remote_code`` made
    in ``<HF_MODULES_CACHE>/transformers_modules/<folder name>`` (before, every ``hf-genfix doctor`` left about 44
    such folders behind)."""
    import tempfile
    import uuid

    with tempfile.TemporaryDirectory(prefix=f"genfix_{stem}_") as tmp:
        # A folder name of its own per call: two processes probing at once (tox p) would otherwise overwrite each
        # other's copies in the modules cache.
        path = Path(directory or tmp) / f"{stem}_{uuid.uuid4().hex[:12]}"
        try:
            yield path
        finally:
            forget_module_copy(path)


def forget_module_copy(repo: Path) -> None:
    """Remove ``<HF_MODULES_CACHE>/transformers_modules/<repo's folder name>`` (what loading the local repo with
    ``trust_remote_code`` copied there; 4.57 and 5.x name it so). The modules already imported stay usable."""
    import shutil
    import sys

    loader = sys.modules.get("transformers.dynamic_module_utils")
    if loader is None:  # nothing loaded remote code in this process
        return
    sanitize = getattr(loader, "_sanitize_module_name", lambda name: name)
    cache = Path(getattr(loader, "HF_MODULES_CACHE")) / getattr(loader, "TRANSFORMERS_DYNAMIC_MODULE_NAME",
                                                                "transformers_modules")
    for name in {repo.name, sanitize(repo.name)}:
        if name and (cache / name).is_dir():
            shutil.rmtree(cache / name, ignore_errors=True)


@contextlib.contextmanager
def _family_repo(family: str, directory: str | Path | None = None) -> Iterator[Path]:
    """The family's repo, written in a temporary folder (or ``directory``), gone afterwards (``remote_repo``)."""
    with remote_repo(family, directory) as path:
        yield write_family(family, path)


def _loaded(family: str, repo: Path) -> Any:
    """``load_family``; a failure to load (an import or config error of the remote code) is a defect."""
    from .decode import UPSTREAM_ERRORS, defect_on_error

    with defect_on_error(f"{family}: loading the remote code fails", (ImportError, KeyError, *UPSTREAM_ERRORS)):
        return load_family(repo)


def check_family(family: str, directory: str | Path | None = None, max_new_tokens: int = 4,
                 loads: int = 1, rows: Sequence[Sequence[int]] | None = None) -> dict[str, Any]:
    """Write, load and check one family: greedy ``generate()`` on a batch equals greedy decoding by full no-cache
    forwards, and after the prefill each forward gets one new token and the cache (``check_legacy_generate``).
    ``loads=2`` checks the model of a second load of the repo in the process (auto classes register the first);
    ``rows`` replaces the family's batch (``EQUAL_ROWS``: no padding, an all-ones mask)."""
    from .legacy import check_legacy_generate

    with _family_repo(family, directory) as repo:
        for _ in range(loads):
            model = _loaded(family, repo)
        return check_legacy_generate(model, rows=rows or rows_for(family), max_new_tokens=max_new_tokens,
                                     tuple_seq_dim=_tuple_seq_dim(family))


def _tuple_seq_dim(family: str) -> int:
    """Where the sequence is in ``past_key_values[0][0]`` of the family's tuples (5.0.0 hands them over): Qwen-1's
    and merged heads' [batch, seq, ...], Bloom's key [batch * heads, dim, seq], ChatGLM2's [seq, batch, heads,
    dim], else [batch, heads, seq, dim]."""
    return {"qwen": 1, "merged": 1, "bloom": -1, "chatglm2": 0}.get(family, -2)


def check_family_forward(family: str) -> dict[str, Any]:
    """A plain forward, as a user calls it (``model(input_ids=...)``, no ``use_cache``), equals the no-cache
    reference's logits for each row."""
    import torch

    from .decode import defect_on_error
    from .reference import assert_close, reference_logits

    with _family_repo(family) as repo:
        model = _loaded(family, repo)
        worst = 0.0
        for row in rows_for(family):
            with defect_on_error(f"{family}: model(input_ids)"), torch.no_grad():
                logits = model(input_ids=torch.tensor([row])).logits[0]
            worst = max(worst, assert_close(logits, reference_logits(model, row), f"{family}: model(input_ids)"))
        return {"max_logit_diff": worst}


def check_family_tied(family: str) -> dict[str, Any]:
    """The family's model builds with its output embeddings tied to its input embeddings (what 4.x's
    ``tie_weights`` did for ``tie_word_embeddings``), and generates like the reference (``check_family``)."""
    from .outcome import DefectObserved

    with _family_repo(family) as repo:
        model = _loaded(family, repo)
        if model.get_output_embeddings().weight is not model.get_input_embeddings().weight:
            raise DefectObserved(f"{family}: tie_word_embeddings is set but the output embeddings are not tied")
    return check_family(family)


@contextlib.contextmanager
def _saved_and_loaded(family: str) -> Iterator[tuple[Any, Any]]:
    """(the family's model, the same model saved next to its code and loaded back with ``from_pretrained`` as a Hub
    repo is)."""
    _release_reloads()
    with _family_repo(family) as repo:
        model = _loaded(family, repo)
        model.save_pretrained(repo)
        yield model, _from_pretrained(repo, f"{family}: from_pretrained of its saved repo")


def _from_pretrained(repo: Path, what: str) -> Any:
    """``AutoModelForCausalLM.from_pretrained(repo, trust_remote_code=True)``; an upstream error is the defect."""
    from transformers import AutoModelForCausalLM

    from .decode import defect_on_error
    from .outcome import ProbeSkipped

    try:
        with defect_on_error(what):
            return AutoModelForCausalLM.from_pretrained(str(repo), trust_remote_code=True)
    except NameError as exc:  # 4.51.0: from_pretrained refers to accelerate's init_empty_weights unimported
        raise ProbeSkipped(f"from_pretrained itself fails on this release: {exc}") from exc


def _release_reloads() -> None:
    """``ProbeSkipped`` where this release's ``from_pretrained`` fails on any saved model (4.51.0 without
    accelerate: NameError ``init_empty_weights``), checked before a remote family is built: otherwise a run that
    stops earlier (upstream's remote code failing to import, say) and a run that gets this far (hf_genfix's, past
    that import) fail at different places, and the differential calls the pair worse for an upstream defect that
    neither side can pass (4.51.0, remote-minicpm / remote-reload, session 27)."""
    import tempfile

    from .outcome import ProbeSkipped

    verdict = _RELOADS.get("verdict")
    if verdict is None:
        verdict = ""
        import torch
        from transformers import AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel

        config = GPT2Config(vocab_size=16, n_positions=8, n_embd=8, n_layer=1, n_head=2)
        with tempfile.TemporaryDirectory() as folder:
            torch.manual_seed(0)
            GPT2LMHeadModel(config).save_pretrained(folder)
            try:
                AutoModelForCausalLM.from_pretrained(folder)
            except NameError as exc:
                verdict = f"from_pretrained itself fails on this release: {exc}"
        _RELOADS["verdict"] = verdict
    if verdict:
        raise ProbeSkipped(verdict)


_RELOADS: dict[str, str] = {}  # "verdict": "" where a saved model loads back, else why it cannot (once per process)


def check_family_reload(family: str) -> dict[str, Any]:
    """The family's model, saved and loaded back with ``from_pretrained``, holds exactly every tensor that was saved
    and gives the logits of the model it was saved from."""
    import torch

    from .outcome import DefectObserved
    from .reference import assert_close

    with _saved_and_loaded(family) as (model, again):
        saved, loaded = model.state_dict(), again.state_dict()
        wrong = sorted(k for k, v in saved.items() if k not in loaded or not torch.equal(loaded[k].to(v), v))
        if wrong:
            worst = max((float((loaded[k].to(saved[k]) - saved[k]).abs().max()) for k in wrong if k in loaded),
                        default=float("nan"))
            raise DefectObserved(f"{family}: the model loaded back differs from the saved one in {len(wrong)} of "
                                 f"{len(saved)} tensors, e.g. {wrong[:3]} (max |diff| {worst:.3g})",
                                 tensors=wrong)
        ids = torch.tensor(rows_for(family)[:1])
        with torch.no_grad():
            expected = model(input_ids=ids, use_cache=False).logits
            diff = assert_close(again.float().eval()(input_ids=ids, use_cache=False).logits, expected,
                                f"{family}: the model loaded back")
        return {"max_logit_diff": diff, "tensors": len(saved)}


def check_family_reload_buffers(family: str) -> dict[str, Any]:
    """The family's model, saved and loaded back with ``from_pretrained``, has the buffers its ``__init__`` computes
    (not in the checkpoint) with the values of the model it was saved from.

    Only the buffers: on 5.0 - 5.12 (not 5.2) the loader also lets a 4.x ``_init_weights`` overwrite the loaded
    weights, a defect of its own (``remote-code-init-weights``, ``check_family_reload``)."""
    import torch

    from .outcome import DefectObserved

    with _saved_and_loaded(family) as (model, again):
        saved, loaded = dict(model.named_buffers()), dict(again.named_buffers())
        wrong = [k for k, v in saved.items() if k not in loaded or not torch.equal(loaded[k].to(v), v)]
        if wrong:
            worst = max(float((loaded[k].to(saved[k]) - saved[k]).abs().max()) for k in wrong if k in loaded)
            raise DefectObserved(f"{family}: after from_pretrained, buffers {wrong} differ from the saved model's "
                                 f"(max |diff| {worst:.3g})")
        return {"buffers": len(saved)}


def check_family_beam(family: str, num_beams: int = 2, max_new_tokens: int = 5) -> dict[str, Any]:
    """Beam search on the family's model (equal-length rows) gives the sequences of the same beam search without
    a cache, where every step is a full forward over the whole sequence."""
    import torch

    from .decode import defect_on_error
    from .outcome import DefectObserved

    with _family_repo(family) as repo:
        model = _loaded(family, repo)
        ids = torch.tensor(EQUAL_ROWS)
        kwargs = dict(num_beams=num_beams, do_sample=False, max_new_tokens=max_new_tokens, pad_token_id=0,
                      attention_mask=torch.ones_like(ids))
        what = f"{family}: generate(num_beams={num_beams})"
        with torch.no_grad():
            reference = model.generate(ids, use_cache=False, **kwargs)
            with defect_on_error(what):
                cached = model.generate(ids, use_cache=True, **kwargs)
        if not torch.equal(cached, reference):
            raise DefectObserved(f"{what} with its cache gives {cached.tolist()}, without it {reference.tolist()}")
        return {"sequences": cached.tolist()}


def greedy_reference(model: Any, row: Sequence[int], steps: int) -> list[int]:
    """The tokens greedy decoding picks after ``row``, each from a full no-cache forward over the sequence."""
    from .reference import reference_logits

    tokens = list(row)
    for _ in range(steps):
        tokens.append(int(reference_logits(model, tokens)[-1].argmax()))
    return tokens[len(row):]


def check_family_stream(family: str, max_new_tokens: int = 4) -> dict[str, Any]:
    """The ChatGLM families' own sampling loop, ``stream_generate`` (what ``stream_chat`` runs), greedy on an
    equal-length batch: what it yields last equals greedy decoding by full no-cache forwards."""
    import torch

    from .decode import defect_on_error
    from .outcome import DefectObserved

    with _family_repo(family) as repo:
        model = _loaded(family, repo)
        ids = torch.tensor(EQUAL_ROWS)
        what = f"{family}: stream_generate"
        with defect_on_error(what):
            *_, last = model.stream_generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                             max_new_tokens=max_new_tokens)
        got = last[:, ids.shape[1]:].tolist()
        expected = [greedy_reference(model, row, max_new_tokens) for row in EQUAL_ROWS]
        if got != expected:
            raise DefectObserved(f"{what} gives {got}, greedy no-cache decoding {expected}")
        return {"stream_sequences": got}


def check_family_plain_tokenizer(family: str, max_new_tokens: int = 4) -> dict[str, Any]:
    """Qwen-1's repos ship their tokenizer beside the model (``tokenization_qwen.py``: a slow tokenizer that adds no
    special tokens; ``write_plain_tokenizer``'s shape, written into the family's repo): each text encodes as its own
    tokens, a padded batch is those rows padded on the left (``_plain_batch``), and ``generate()`` from that batch
    equals the no-cache reference of each unpadded row."""
    from .decode import defect_on_error
    from .generation import check_rows_against_reference, generate_steps

    with _family_repo(family) as repo:
        write_plain_tokenizer(repo)
        model = _loaded(family, repo)
        rows, ids, mask, tokenizer = _plain_batch(repo, f"{family}: its remote tokenizer")
        what = f"{family}: generate from its tokenizer's batch"
        with defect_on_error(what):
            run = generate_steps(model, ids, mask, max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id)
        figures = check_rows_against_reference(model, rows, run, what)
        return {**figures, "rows": rows}


def check_family_tokenizer(family: str, max_new_tokens: int = 4) -> dict[str, Any]:
    """The ChatGLM families' tokenizer encodes a batch as its authors meant (each row's own encoding, padded on
    the left, with position ids counting its real tokens), and ``generate()`` from that batch, position ids
    included, equals the no-cache reference of each unpadded row."""
    from transformers import AutoTokenizer

    from .decode import UPSTREAM_ERRORS, defect_on_error
    from .generation import check_rows_against_reference, generate_steps, left_pad
    from .outcome import DefectObserved

    texts = ["hi there", "hello world again"]
    with _family_repo(family) as repo:
        model = _loaded(family, repo)
        what = f"{family}: its remote tokenizer"
        with defect_on_error(what, (AssertionError, *UPSTREAM_ERRORS)):
            tokenizer = AutoTokenizer.from_pretrained(str(repo), trust_remote_code=True)
            rows = [tokenizer(text)["input_ids"] for text in texts]
            batch = tokenizer(texts, padding=True, return_tensors="pt")
        ids, mask = left_pad(rows, pad_id=tokenizer.pad_token_id, device="cpu")
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        for key, expected in (("input_ids", ids), ("attention_mask", mask), ("position_ids", positions)):
            if batch[key].tolist() != expected.tolist():
                raise DefectObserved(f"{what}: padded batch {key} {batch[key].tolist()}, expected "
                                     f"{expected.tolist()}")
        what = f"{family}: generate from its tokenizer's batch"
        with defect_on_error(what):
            run = generate_steps(model, batch["input_ids"], batch["attention_mask"], max_new_tokens=max_new_tokens,
                                 pad_token_id=tokenizer.pad_token_id, position_ids=batch["position_ids"])
        figures = check_rows_against_reference(model, rows, run, what)
        return {**figures, "rows": rows}
