"""``BatchPaddingPolicy``: a batch of prompts ready for ``generate()``, and its replies decoded.

Batched generation with a decoder-only model needs three things that are easy to get wrong: the prompts padded on
the left (so that every row's last prompt token is in the last column), a pad id (many tokenizers have none), and
the replies cut where they begin. Under left padding every row's reply begins at the padded prompt width, not at
``attention_mask.sum()`` (the number of real prompt tokens, which is where the seed code of issue 3 cut).

The policy never changes the tokenizer: it pads the batch itself, on the left, with the tokenizer's pad token or,
when there is none, its eos token (the id ``generate()`` falls back to as well). It works the same with and
without hf_genfix's patches, on every release::

    policy = BatchPaddingPolicy(tokenizer)
    batch = policy.prepare(["translate: hello", "write a poem"])
    out = model.generate(**batch.inputs, **batch.generate_kwargs, max_new_tokens=64)
    replies = batch.decode(out)

or in one call: ``policy.generate(model, prompts, max_new_tokens=64)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["BatchPaddingPolicy", "PreparedBatch"]


@dataclass
class PreparedBatch:
    """Left-padded model inputs, the ``generate()`` keywords that go with them, and how to read the output."""

    inputs: dict[str, Any]  # input_ids, attention_mask (and any other per-token input the tokenizer gives)
    generate_kwargs: dict[str, Any]  # pad_token_id
    prompt_width: int  # where every row's reply begins in the returned sequences
    tokenizer: Any = field(repr=False, default=None)
    stop_ids: frozenset[int] = frozenset()

    def to(self, device: Any) -> "PreparedBatch":
        moved = {k: v.to(device) for k, v in self.inputs.items()}
        return PreparedBatch(moved, dict(self.generate_kwargs), self.prompt_width, self.tokenizer, self.stop_ids)

    def reply_ids(self, output: Any) -> list[list[int]]:
        """Each returned row's new tokens, up to and including the first stop (eos) token.

        ``output`` is what ``generate()`` returned (a tensor or an output with ``.sequences``); with
        ``num_return_sequences=n`` there are n rows per prompt, in order.
        """
        sequences = getattr(output, "sequences", output)
        replies = []
        for row in sequences[:, self.prompt_width:].tolist():
            for i, token in enumerate(row):
                if token in self.stop_ids:
                    row = row[: i + 1]
                    break
            replies.append(row)
        return replies

    def decode(self, output: Any, skip_special_tokens: bool = True, **decode_kwargs: Any) -> list[str]:
        """The replies as text (special tokens, and so pad and eos, skipped by default)."""
        return [
            self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens, **decode_kwargs)
            for ids in self.reply_ids(output)
        ]


class BatchPaddingPolicy:
    """Prepares prompts for batched ``generate()`` (left padding, a pad id) and decodes the replies.

    ``pad_token_id`` overrides the id used for padding (default: the tokenizer's pad token, else its eos token);
    ``stop_token_ids`` adds ids at which a reply ends (default: the tokenizer's eos token).
    """

    def __init__(self, tokenizer: Any, pad_token_id: int | None = None,
                 stop_token_ids: Iterable[int] | None = None):
        self.tokenizer = tokenizer
        self.pad_token_id = pad_token_id if pad_token_id is not None else _default_pad(tokenizer)
        stops = set(stop_token_ids or ())
        if getattr(tokenizer, "eos_token_id", None) is not None:
            stops.add(int(tokenizer.eos_token_id))
        self.stop_token_ids = frozenset(stops)

    def prepare(self, prompts: Sequence[str] | Sequence[Sequence[int]], device: Any = None,
                **tokenizer_kwargs: Any) -> PreparedBatch:
        """Tokenize ``prompts`` (or take them as token ids) and pad them on the left into tensors.

        ``tokenizer_kwargs`` go to the tokenizer (e.g. ``add_special_tokens=False``); padding and tensors are
        the policy's business, so ``padding``, ``padding_side`` and ``return_tensors`` are not accepted.
        """
        import torch

        refused = {"padding", "padding_side", "return_tensors"} & set(tokenizer_kwargs)
        if refused:
            raise TypeError(f"BatchPaddingPolicy.prepare pads on the left itself; do not pass {sorted(refused)}")
        if not len(prompts):
            raise ValueError("no prompts")
        features = self._features(prompts, tokenizer_kwargs)
        rows = features["input_ids"]
        width = max(len(r) for r in rows)
        inputs: dict[str, Any] = {}
        for key, values in features.items():
            fill = self.pad_token_id if key == "input_ids" else 0
            padded = [[fill] * (width - len(v)) + list(v) for v in values]
            inputs[key] = torch.tensor(padded, dtype=torch.long)
        inputs["attention_mask"] = torch.tensor(
            [[0] * (width - len(r)) + [1] * len(r) for r in rows], dtype=torch.long
        )
        batch = PreparedBatch(inputs, {"pad_token_id": self.pad_token_id}, width, self.tokenizer,
                              self.stop_token_ids)
        return batch.to(device) if device is not None else batch

    def generate(self, model: Any, prompts: Sequence[str] | Sequence[Sequence[int]],
                 skip_special_tokens: bool = True, **generate_kwargs: Any) -> list[str]:
        """``prepare`` on the model's device, ``model.generate``, ``decode``: one reply per returned row."""
        import torch

        batch = self.prepare(prompts, device=getattr(model, "device", None))
        kwargs = dict(batch.generate_kwargs)
        kwargs.update(generate_kwargs)
        with torch.no_grad():
            output = model.generate(**batch.inputs, **kwargs)
        return batch.decode(output, skip_special_tokens=skip_special_tokens)

    def _features(self, prompts: Sequence[Any], tokenizer_kwargs: Mapping[str, Any]) -> dict[str, list]:
        if all(not isinstance(p, str) for p in prompts):
            return {"input_ids": [[int(t) for t in p] for p in prompts]}
        if not all(isinstance(p, str) for p in prompts):
            raise TypeError("prompts must be all strings or all sequences of token ids")
        encoded = self.tokenizer(list(prompts), padding=False, **tokenizer_kwargs)
        # Per-token features only (e.g. token_type_ids); the mask is rebuilt from the lengths.
        lengths = [len(r) for r in encoded["input_ids"]]
        return {
            key: list(values)
            for key, values in encoded.items()
            if key != "attention_mask"
            and isinstance(values, list)
            and [len(v) if isinstance(v, (list, tuple)) else -1 for v in values] == lengths
        }


def _default_pad(tokenizer: Any) -> int:
    for name in ("pad_token_id", "eos_token_id"):
        value = getattr(tokenizer, name, None)
        # sentencepiece's "no pad" is -1: transformers 4.x MistralCommonTokenizer returns it as pad_token_id for
        # Mistral's v3 .model file, and an embedding lookup of -1 raises inside generate().
        if value is not None and int(value) >= 0:
            return int(value)
    raise ValueError(
        "the tokenizer has neither a pad nor an eos token: pass BatchPaddingPolicy(tokenizer, pad_token_id=...) "
        "with an existing token id (its value does not matter under the attention mask, it only fills the "
        "padding)"
    )
