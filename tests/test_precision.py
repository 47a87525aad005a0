"""oracles.precision: the dtype/device/tolerance setting every probe, oracle and check_generation follows."""

from __future__ import annotations

import pytest

import hf_genfix

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_genfix.oracles import DefectObserved, current, left_pad, precision, tiny_model, tolerance  # noqa: E402
from hf_genfix.oracles.precision import ATOLS, dtype_name  # noqa: E402


@pytest.fixture
def plain():
    """float32, CPU, eager: these tests say what the setting changes, whatever --genfix-* the run was given."""
    with precision("float32", "cpu", "eager"):
        yield


def test_setting_is_scoped_and_models_follow_it(plain):
    assert current().default and tolerance() == 1e-4
    with precision("bf16") as outer:
        assert outer.dtype == "bfloat16" and tolerance() == ATOLS["bfloat16"]
        assert next(tiny_model("llama").parameters()).dtype == torch.bfloat16
        with precision(device="cpu", attn="sdpa"):
            assert current().dtype == "bfloat16" and current().attn == "sdpa"
        assert current().attn == "eager"
        ids, mask = left_pad([[3, 4], [5]])
        assert ids.device.type == "cpu" and mask.tolist() == [[1, 1], [0, 1]]
    assert current().default
    assert next(tiny_model("llama").parameters()).dtype == torch.float32


@pytest.mark.parametrize("given, name", [("bf16", "bfloat16"), (torch.float16, "float16"), ("float32", "float32")])
def test_dtype_names(given, name):
    assert dtype_name(given) == name


def test_unknown_dtype_is_refused():
    with pytest.raises(ValueError, match="int8"):
        dtype_name("int8")
    from hf_genfix import doctor

    with pytest.raises(SystemExit) as exc:
        doctor.main(["--dtype", "int8"])
    assert exc.value.code == 2


def test_a_bfloat16_probe_still_sees_the_defect():
    from hf_genfix.doctor import import_targets
    from hf_genfix import catalog
    probe = catalog.probe_module('right-padding').probe

    import_targets()
    with precision("bfloat16"):
        with hf_genfix.disabled("right-padding"), pytest.raises(DefectObserved):
            probe()
        figures = probe()
    assert figures["max_logit_diff"] <= ATOLS["bfloat16"]


def test_check_generation_on_a_converted_copy(plain):
    from hf_genfix.testing import check_generation

    model = tiny_model("llama")
    report = check_generation(model, dtype="bfloat16", device="cpu", checks=["cache", "left-padding"])
    assert report.ok, str(report)
    assert next(model.parameters()).dtype == torch.float32  # the caller's model is not converted


def test_a_mixture_of_experts_runs_in_float64(plain):
    """The sweep's second look at a suspect rebuilds the model in float64; 5.x's MoE experts default to torch's
    grouped matmul, which has no float64 kernel, so a float64 oracle model runs its experts' eager loop."""
    from transformers import CONFIG_MAPPING

    if "qwen3_moe" not in CONFIG_MAPPING:
        pytest.skip("no Qwen3-MoE on this release")
    with precision("float64"):
        model = tiny_model("qwen3_moe")
        logits = model(torch.tensor([[3, 4, 5]])).logits
    assert logits.dtype == torch.float64 and bool(torch.isfinite(logits).all())
