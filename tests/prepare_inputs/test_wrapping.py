"""How the prepare-inputs patches sit on transformers: signatures unchanged, every override reached (classes
created later too), and the identical originals back when they are switched off."""

from __future__ import annotations

import contextlib
import inspect

import pytest

from prepare_inputs_models import ARCHITECTURES, model_of, patches_on

pytest.importorskip("torch")
pytest.importorskip("transformers")

PATCHES = ("prepare-inputs", "prepare-inputs-logits-to-keep", "legacy-cache")


@contextlib.contextmanager
def reverted():
    """Every patch taken off (disabled() would only switch the wrappers off in this thread), then back on."""
    import hf_genfix

    hf_genfix.revert()
    try:
        yield
    finally:
        hf_genfix.activate()


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_signature_is_unchanged(arch):
    # generate() reads inspect.signature(model.prepare_inputs_for_generation) (e.g. to validate model kwargs).
    import hf_genfix
    from transformers import GenerationMixin

    model = model_of(arch)
    with reverted():
        plain = inspect.signature(model.prepare_inputs_for_generation)
        generic = inspect.signature(GenerationMixin.prepare_inputs_for_generation)
    with hf_genfix.forced(*PATCHES):
        assert inspect.signature(model.prepare_inputs_for_generation) == plain
        assert inspect.signature(GenerationMixin.prepare_inputs_for_generation) == generic
        assert model.prepare_inputs_for_generation.__name__ == "prepare_inputs_for_generation"


def test_classes_created_later_are_wrapped_and_unwrapped():
    import hf_genfix
    from transformers import LlamaForCausalLM

    model_of("llama")

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
        return {"input_ids": input_ids, "past_key_values": past_key_values, **kwargs}

    with hf_genfix.forced(*PATCHES):
        later = type("LaterForCausalLM", (LlamaForCausalLM,), {
            "prepare_inputs_for_generation": prepare_inputs_for_generation, "__module__": "user_code"})
        # legacy-cache: defined outside transformers, written for past_key_values; no logits_to_keep=None default.
        on_later = set(patches_on(vars(later)["prepare_inputs_for_generation"]))
        # (5.2.0 also: prepare-inputs-full-ids-positions, whose defect is generate()'s, whoever prepares the inputs)
        assert {"legacy-cache", "prepare-inputs"} <= on_later <= {"legacy-cache", "prepare-inputs",
                                                                 "prepare-inputs-full-ids-positions"}
    with reverted():
        assert vars(later)["prepare_inputs_for_generation"] is prepare_inputs_for_generation


def test_transformers_overrides_are_wrapped_where_they_need_it():
    import hf_genfix

    phi3 = type(model_of("phi3"))
    llama = type(model_of("llama"))
    with reverted():
        original = vars(phi3)["prepare_inputs_for_generation"]
        generic = inspect.getattr_static(llama, "prepare_inputs_for_generation")
    with hf_genfix.forced(*PATCHES):
        on_phi3 = patches_on(vars(phi3)["prepare_inputs_for_generation"])
        assert "prepare-inputs" in on_phi3
        assert "legacy-cache" not in on_phi3  # transformers' own code knows its release's cache
        on_llama = patches_on(inspect.getattr_static(llama, "prepare_inputs_for_generation"))
        assert "prepare-inputs" in on_llama and "legacy-cache" not in on_llama
    with reverted():
        assert vars(phi3)["prepare_inputs_for_generation"] is original
        assert inspect.getattr_static(llama, "prepare_inputs_for_generation") is generic
