"""model-rwkv-batch: RWKV mixes the rows of a batch in every one-token step (silently wrong from the second token).

The defect. RWKV's token shift mixes each token's hidden state with the previous token's. In a one-token step with
a state (every decoding step after the prompt), ``RwkvSelfAttention.extract_key_value`` and
``RwkvFeedForward.forward`` take the previous token's hidden state from the recurrent state as ``shifted =
state[i][:, :, layer_id]``, of shape ``(batch, hidden)``, and compute ``hidden * mix + shifted * (1 - mix)`` with
``hidden`` of shape ``(batch, 1, hidden)`` and ``mix`` of shape ``(1, 1, hidden)``: ``shifted * (1 - mix)``
becomes ``(1, batch, hidden)`` and the sum ``(batch, batch, hidden)``, so row ``b`` of the output holds every row's
previous token. A batch of one is right (the shapes agree); any batch of 2 or more rows, padded or not, gives a
one-token step logits of shape ``(batch, batch, vocab)``, and ``generate()`` continues each row from a mixture:
the first generated token is right, every later one is computed from the wrong inputs. The multi-token path (the
prompt) puts the state into ``shifted[:, 0]`` of a ``(batch, seq, hidden)`` tensor and is right. Measured on every
release run, 4.40.2 to 5.24.0 (the two functions are unchanged over that range); no upstream issue found.

Detection. A tiny RWKV (hidden 32, 2 layers), two unpadded rows of 7 tokens, 6 greedy tokens: each row's logits
at every step against a no-cache forward of that row alone, and a one-token step with the state of a batch of 2
must return logits of shape (2, 1, vocab).

Correction. Both functions are wrapped in place. For a one-token step with a state and more than one row, the
wrapper runs upstream's own multi-token path on that token written twice -- there ``shifted[:, 0]`` is the state,
broadcast correctly, and the state is updated with the same token -- and keeps the first position of every
returned tensor. The recurrent (wkv) state is not touched by either function, so nothing runs twice. Batches of
one and multi-token calls go to upstream untouched.
"""

from __future__ import annotations

from typing import Any

ATTENTION = "transformers.models.rwkv.modeling_rwkv:RwkvSelfAttention.extract_key_value"
FEED_FORWARD = "transformers.models.rwkv.modeling_rwkv:RwkvFeedForward.forward"


def install(patcher: Any) -> None:
    for target in (ATTENTION, FEED_FORWARD):
        patcher.require(target, "hidden", "state")
        patcher.wrap(target, _one_token_step)


def _one_token_step(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    hidden = args[0] if args else kwargs["hidden"]
    state = args[1] if len(args) > 1 else kwargs.get("state")
    if state is None or hidden.size(1) != 1 or hidden.size(0) == 1:
        return wrapped(*args, **kwargs)
    rest = {k: v for k, v in kwargs.items() if k not in ("hidden", "state")}
    *outputs, state = wrapped(hidden.repeat(1, 2, 1), state, *args[2:], **rest)
    return (*(t[:, :1] for t in outputs), state)
