"""Any device: fixes create their tensors on their input's device and add no host sync per decode step.

The sync count: every Python-level way a tensor's value reaches the host (``item``, ``tolist``, ``bool``,
``int``, ``float``, ``cpu``, ``numpy``, ``torch.equal``) is counted during a ``generate()`` with and without
hf_genfix. The per-step count is the slope between two lengths; hf_genfix must add 0 to it. The per-call
difference is printed (``-s``) and bounded.
"""

from __future__ import annotations

import ast
import contextlib
from pathlib import Path

import pytest

import hf_genfix

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

SRC = Path(__file__).resolve().parents[1] / "src" / "hf_genfix"
PATCHES = Path(__file__).resolve().parents[1] / "patches"
# (as_tensor is left out: given a tensor, as dense_mask is, it keeps its device.)
CREATORS = {"tensor", "arange", "zeros", "ones", "full", "empty", "rand", "randn", "randint"}
# Per generate() call, hf_genfix may sync this many more times than upstream (right-padding reads the mask:
# is the last column attended, is any row shifted, is the rotation contiguous; then keeps a CPU copy of a
# realigned batch to recognise its mask on the next turn: 3 copies; plus up to 4 per remembered batch of the
# same shape on a later call, at most 16 of them).
PER_CALL_LIMIT = 8


def _creations_without_device(path: Path) -> list[str]:
    """``torch.<creator>(...)`` calls without ``device=`` outside ``probe`` functions (a probe's inputs follow
    ``oracles.precision``'s default device)."""
    tree = ast.parse(path.read_text())
    found = []

    def visit(node: ast.AST, in_probe: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            in_probe = in_probe or node.name == "probe" or node.name.startswith("_probe")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CREATORS
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch" and not in_probe
                and not any(k.arg == "device" for k in node.keywords)):
            root = SRC if SRC in path.parents else PATCHES  # a fix or shared module of patches/, or a helper
            found.append(f"{path.relative_to(root)}:{node.lineno} torch.{node.func.attr}")
        for child in ast.iter_child_nodes(node):
            visit(child, in_probe)

    visit(tree, False)
    return found


def test_fixes_and_helpers_create_tensors_on_a_device():
    # helpers/padding.py builds what a tokenizer returns (CPU tensors, as tokenizers give them).
    allowed = {"helpers/padding.py"}
    found = []
    runtime = [p for p in sorted(PATCHES.rglob("*.py")) if p.name not in ("probe.py", "program.py")
               and not p.name.startswith("test_") and not p.name.endswith("_probes.py")]  # fixes, shared modules
    for path in runtime + sorted((SRC / "helpers").rglob("*.py")):
        if path.relative_to(SRC if SRC in path.parents else PATCHES).as_posix() not in allowed:
            found += _creations_without_device(path)
    assert not found, "tensors created without device=: " + ", ".join(found)


class SyncCounter:
    """Counts host syncs while active by wrapping the tensor methods that read a value back."""

    METHODS = ("item", "tolist", "__bool__", "__int__", "__float__", "__index__", "cpu", "numpy")

    def __init__(self):
        self.count = 0

    @contextlib.contextmanager
    def counting(self):
        saved = {name: getattr(torch.Tensor, name) for name in self.METHODS}
        saved_equal = torch.equal

        def wrap(original):
            def counted(tensor, *args, **kwargs):
                if tensor.device.type != "meta":
                    self.count += 1
                return original(tensor, *args, **kwargs)
            return counted

        def equal(a, b):
            self.count += 1
            return saved_equal(a, b)

        try:
            for name, original in saved.items():
                setattr(torch.Tensor, name, wrap(original))
            torch.equal = equal
            yield self
        finally:
            for name, original in saved.items():
                setattr(torch.Tensor, name, original)
            torch.equal = saved_equal


def _syncs(model, ids, mask, new_tokens, patched, **kwargs):
    from hf_genfix import catalog

    # right-padding remembers the last 16 batches it realigned and compares a call's mask with each (a cost per
    # call that grows with that history, up to 16): every measurement starts with none, so the two lengths
    # compare like with like.
    catalog.fix("right-padding")._realigned.clear()
    counter = SyncCounter()
    context = contextlib.nullcontext() if patched else hf_genfix.disabled()
    with context, torch.no_grad(), counter.counting():
        model.generate(ids, attention_mask=mask, max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                       do_sample=False, pad_token_id=0, **kwargs)
    return counter.count


def _scenario(name):
    """On the device (and in the dtype) of ``oracles.precision``: cpu here, cuda under benchmarks/gpu_check.sh."""
    from hf_genfix.oracles import left_pad, right_pad, tiny_model

    rows = [[5, 6, 7, 8, 9, 10], [11, 12, 13], [14, 15, 16, 17, 18, 19, 20, 21, 22]]
    if name == "left-padded":
        return tiny_model("llama"), *left_pad(rows)
    if name == "right-padded":
        return tiny_model("llama"), *right_pad(rows)
    # Decodes past the window (a static cache: the 4.56 static sliding-window patch wraps its layers).
    return tiny_model("mistral", sliding_window=8), *left_pad(rows)


@pytest.mark.parametrize("scenario", ["left-padded", "right-padded", "past-the-window", "static-past-the-window"])
def test_no_sync_per_decode_step(scenario, capsys):
    from hf_genfix.doctor import import_targets

    import_targets()
    model, ids, mask = _scenario(scenario)
    extra = {"cache_implementation": "static"} if scenario.startswith("static") else {}
    short, long = 3, 9
    counts = {patched: (_syncs(model, ids, mask, short, patched, **extra),
                        _syncs(model, ids, mask, long, patched, **extra))
              for patched in (False, True)}
    per_step = {p: (c[1] - c[0]) / (long - short) for p, c in counts.items()}
    per_call = {p: c[0] - per_step[p] * short for p, c in counts.items()}
    with capsys.disabled():
        print(f"\n{scenario}: host syncs per decode step upstream {per_step[False]:g}, with hf_genfix "
              f"{per_step[True]:g}; per generate() call upstream {per_call[False]:g}, with hf_genfix "
              f"{per_call[True]:g}")
    assert per_step[True] == per_step[False], counts
    assert per_call[True] - per_call[False] <= PER_CALL_LIMIT, counts


def test_the_counter_counts():
    """A test that cannot fail is a defect: the counter sees a sync it is shown."""
    counter = SyncCounter()
    with counter.counting():
        bool(torch.ones(2).sum() > 0)
        torch.arange(3).tolist()
    assert counter.count == 2
