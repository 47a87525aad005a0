"""decoding-assisted-recurrent-history: assisted decoding and prompt lookup on a model with recurrent states
(state-space and linear-attention layers) roll the state back to the wrong step after a rejected draft, and the
Mamba-1 mixers verify a draft from a zero state: silently wrong tokens and logits from the first verified token
(5.25.0, the first release that lets assisted decoding run on such a cache; see the manifest for the figures).

The defect. A recurrent state cannot be cropped like keys and values, so 5.25 makes the cache record history:
``_assisted_decoding`` calls ``cache.activate_past_recording(recurrent_states_to_keep=K)`` with ``K`` the draft
length at the start of the run, and every mixer then splits a forward of ``n`` tokens into a chunked scan of the
first ``n - min(K, n)`` tokens and one-token steps over the last ``min(K, n)``, whose states it hands to
``update_recurrent_state``. The layer stores ``[state before the forward] + those states[:-1]`` and
``crop(-k)`` takes entry ``-k``. That is right only when the one-token window covers the whole forward: otherwise
entry 0 is labelled as the state ``K`` tokens back while it is the state before the forward (the zero state in the
prompt's forward). Both forwards that matter are longer than ``K``:

- the first forward is the prompt plus ``K`` drafted tokens: rejecting all ``K`` (the first round's usual case)
  rolls back to the zero state;
- a verifying forward is the draft plus one token, ``K + 1`` when the draft is full, and the heuristic schedule of
  assisted decoding grows the draft by 2 after every fully accepted round, past ``K``, which is never updated.

And the chunked part of a Mamba-1 mixer (Mamba, Falcon-Mamba, Jamba) scans from a zero state even when the cache
holds one (upstream's own TODO in ``mamba_scan``), so every token of a verifying forward past the window forgets
the conversation.

Detection. ``probe()``: the sweep's prompt-lookup scenario on its tiny Mamba, every generated step against a
no-cache forward (0.00825 at step 1 without the patch).

Correction. ``Cache.get_recurrent_states_to_keep(layer_idx)`` is wrapped: while a layer records its past, the
window is one token wider than ``K`` for the prompt's forward (the prompt plus at most ``K`` drafted tokens, so the
entry a rejection can reach is a recorded one), and covers every token once the layer holds a state (every
upstream mixer takes ``min(window, seq_len)``), so the verifying forward runs the mixer's one-token path on each
token from the cached state and records each state. Nothing else changes: a cache that does not record its past,
the question for every layer (``layer_idx=None``) and any other cache are upstream's. The cost is one more
one-token step in the prompt's forward and, for a verifying forward longer than ``K``, one-token steps instead of
a chunked scan for its first tokens; the memory the same order as upstream's (one state per token of a draft).
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import recorder

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

TARGET = "transformers.cache_utils:Cache.get_recurrent_states_to_keep"
# The window once a layer holds a state: every token of the forward (each mixer takes min(window, seq_len)).
EVERY_TOKEN = 1 << 30
NOT_BITWISE = ("a verifying forward longer than the draft length goes through the mixer's one-token path where "
               "upstream scans its first tokens as one chunk: a different order of float operations")


def install(patcher: Any) -> None:
    patcher.require(TARGET, "layer_idx")
    patcher.wrap(TARGET, _window)


def _window(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    window = wrapped(*args, **kwargs)
    layer_idx = args[0] if args else kwargs.get("layer_idx")
    layers = getattr(instance, "layers", None)
    if not isinstance(window, int) or window <= 0 or not isinstance(layer_idx, int) or layers is None:
        record.unchanged()  # not recording its past, or asked for every layer: upstream's answer
        return window
    try:
        layer = layers[layer_idx]
    except (IndexError, TypeError):
        record.unchanged()
        return window
    return EVERY_TOKEN if _holds_state(layer) else window + 1


def _holds_state(layer: Any) -> bool:
    """Whether the layer's recurrent part has been filled (its conv window or its recurrent state)."""
    for name in ("has_previous_state", "is_recurrent_states_initialized"):
        flags = getattr(layer, name, None)
        if isinstance(flags, dict) and any(bool(v) for v in flags.values()):
            return True
    return False
