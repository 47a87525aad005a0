"""remote-code-reorder-cache with two beam searches on one model at the same time (a threaded server sharing one
model): the ``_reorder_cache`` it gives the instance stays until the last of them finished.

Oracle: each thread's beam search equals the same beam search without a cache, run alone beforehand. Both
threads are held inside their beam search (a stopping criterion waits); the first finishes while the second is
still held, then the second goes on. Before the count per instance, the first thread took the attribute off as
it finished and the second one's next step called the model's tuple-era method with the DynamicCache.
"""

from __future__ import annotations

import threading

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

PATCH = "remote-code-reorder-cache"
WAIT_S = 60


def test_two_concurrent_beam_searches_on_one_model(require_applied, tmp_path):
    require_applied(PATCH)
    from transformers import StoppingCriteria, StoppingCriteriaList

    from hf_genfix.oracles.legacy_models import EQUAL_ROWS, load_family, write_family

    model = load_family(write_family("phi3", tmp_path))
    ids = torch.tensor(EQUAL_ROWS)
    kwargs = dict(num_beams=2, do_sample=False, max_new_tokens=6, pad_token_id=0,
                  attention_mask=torch.ones_like(ids))
    with torch.no_grad():
        reference = model.generate(ids, use_cache=False, **kwargs)

    paused = {"first": threading.Event(), "second": threading.Event()}
    go_on = {"first": threading.Event(), "second": threading.Event()}

    class HoldAtStep(StoppingCriteria):
        """Holds its thread at the second decode step, until told to go on."""

        def __init__(self, name: str) -> None:
            self.name, self.calls = name, 0

        def __call__(self, input_ids, scores, **kw):
            self.calls += 1
            if self.calls == 2:
                paused[self.name].set()
                assert go_on[self.name].wait(WAIT_S), f"{self.name} was never told to go on"
            return torch.zeros(input_ids.shape[0], dtype=torch.bool)

    results: dict[str, object] = {}

    def run(name: str) -> None:
        try:
            with torch.no_grad():
                results[name] = model.generate(ids, stopping_criteria=StoppingCriteriaList([HoldAtStep(name)]),
                                               **kwargs)
        except Exception as exc:  # noqa: BLE001 - reported by the asserts below
            results[name] = exc

    threads = {name: threading.Thread(target=run, args=(name,)) for name in ("first", "second")}
    # Both inside their beam search, then the first finishes while the second is still in the middle of its own.
    threads["first"].start()
    assert paused["first"].wait(WAIT_S)
    threads["second"].start()
    assert paused["second"].wait(WAIT_S)
    go_on["first"].set()
    threads["first"].join(WAIT_S)
    go_on["second"].set()
    threads["second"].join(WAIT_S)

    for name in ("first", "second"):
        assert not isinstance(results[name], Exception), f"{name}: {results[name]!r}"
        assert torch.equal(results[name], reference), f"{name} beam search differs from the no-cache one"
    assert "_reorder_cache" not in vars(model)  # taken off once both finished
