"""Issue 12 on the real transformers installed: pickling patched callables and reloading patched modules."""

from __future__ import annotations

import copy
import pickle

import pytest

from conftest import run_json

pytest.importorskip("transformers")
pytest.importorskip("torch")


def _patches(obj) -> list[str]:
    """The hf_genfix patches on a callable as looked up (bound or not), outermost first."""
    found = []
    while obj is not None:
        parent = getattr(obj, "_self_parent", None) or obj
        pid = getattr(parent, "_self_genfix_patch", None)
        if pid is None:
            break
        found.append(pid)
        obj = getattr(obj, "__wrapped__", None)
    return found


def test_patched_callables_pickle_and_deepcopy_as_upstreams_do():
    import hf_genfix
    from hf_genfix.doctor import import_targets
    from hf_genfix.oracles import tiny_model
    from transformers import AutoTokenizer, GenerationMixin

    import_targets()
    installed = {s.id for s in hf_genfix.status() if s.state in ("applied", "forced")}
    model = tiny_model("llama")
    subjects = {
        "model.generate": model.generate,
        "model.prepare_inputs_for_generation": model.prepare_inputs_for_generation,
        "GenerationMixin.generate": GenerationMixin.generate,
        "AutoTokenizer.from_pretrained": AutoTokenizer.from_pretrained,
    }
    patched = {name: f for name, f in subjects.items() if _patches(f)}
    if "right-padding" in installed:
        assert "model.generate" in patched
    for name, f in subjects.items():
        again = pickle.loads(pickle.dumps(f))
        assert _patches(again) == _patches(f), name
        assert b"hf_genfix" not in pickle.dumps(f), name  # by reference: loads where hf_genfix is absent
        assert getattr(again, "__name__", None) == f.__name__, name
        bound = getattr(f, "__self__", None)
        if bound is model:
            assert type(again.__self__) is type(model) and again.__self__ is not model
        elif bound is not None:
            assert again.__self__ is bound  # a class: by reference
        assert _patches(copy.copy(f)) == _patches(f) == _patches(copy.deepcopy(f)), name
    deep = copy.deepcopy(model.generate)
    assert type(deep.__self__) is type(model) and deep.__self__ is not model


@pytest.mark.slow
def test_reloaded_generation_module_keeps_models_fixed():
    out = run_json("""
        import importlib, json
        import hf_genfix
        from hf_genfix.doctor import import_targets
        from hf_genfix._patcher import wrapped_by
        from hf_genfix.oracles import tiny_model
        from hf_genfix.oracles.padding import check_right_padded_generate, ragged_rows
        import_targets()
        if {s.id: s.state for s in hf_genfix.status()}.get("right-padding") != "applied":
            print(json.dumps({"skip": True}))
            raise SystemExit
        import transformers.generation.utils as gu
        import transformers.models.llama.modeling_llama as ml
        before = gu.GenerationMixin
        importlib.reload(gu)
        importlib.reload(ml)
        # A model built after the reload, from the reloaded modules.
        model = tiny_model("llama", model_class=ml.LlamaForCausalLM)
        check_right_padded_generate(model, ragged_rows([5, 3, 7, 2]), max_new_tokens=4)
        states = {s.id: s.state for s in hf_genfix.status()}
        print(json.dumps({"skip": False, "new class": gu.GenerationMixin is not before,
                          "patched": wrapped_by(vars(gu.GenerationMixin)["generate"], "right-padding"),
                          "state": states["right-padding"]}))
    """)
    if out["skip"]:
        pytest.skip("right-padding is not applied on this release")
    assert out == {"skip": False, "new class": True, "patched": True, "state": "applied"}
