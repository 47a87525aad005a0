"""``SlidingWindowPolicy``: one statement of what a sliding-window attention layer may see, used for the window
size, the cache alignment and the mask, so that the three cannot disagree.

With window ``W`` a query at absolute position ``q`` sees the keys at positions ``q - W + 1 .. q`` (itself
included, ``W`` keys) and nothing else -- except that a bidirectional block (the image tokens of Gemma-3/4) also
sees the *later* tokens of its own block, still never a key at or before ``q - W``. Formally, on a sliding layer::

    visible(q, k) = (k > q - W) and (k <= q or block[q] == block[k] >= 0)

and on a full-attention layer the first term is dropped. Padding keys (attention_mask 0) are never visible.

Nothing here ever makes a key visible to "repair" a row. A row with no visible key is a padding query (a real
token always sees itself); ``additive()`` gives such a row the dtype's minimum everywhere, the same convention as
transformers' eager masks, so its (discarded) output is finite. Seed 003's fallback ("if a row is fully masked,
unmask it") is not a fix: it is the defect -- attention to tokens outside the window.

Cache alignment: to compute ``n`` new queries after ``past`` tokens a sliding layer needs the keys
``max(0, past - W + 1) .. past + n - 1``, i.e. at most ``W - 1 + n`` of them (``kv_span``), and between steps it
needs to keep only the last ``W - 1`` (``keys_to_keep``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

SLIDING = "sliding_attention"
FULL = "full_attention"
# Layer kinds whose cache is a window of recent keys (a chunked layer is cached like a sliding one).
WINDOWED_KINDS = frozenset({SLIDING, "chunked_attention"})

MaskFunction = Callable[[Any, Any, Any, Any], Any]  # transformers' (batch_idx, head_idx, q_idx, kv_idx) -> bool


def text_config(config: Any) -> Any:
    """The decoder's config of ``config`` (the text config of a multimodal model, else ``config`` itself)."""
    get = getattr(config, "get_text_config", None)
    if get is None:
        return config
    try:
        return get(decoder=True)
    except TypeError:  # releases whose get_text_config takes no `decoder`
        return get()


def requested_cache(args: tuple, kwargs: dict) -> Any:
    """The ``cache_implementation`` a call of ``GenerationMixin._get_cache`` asks for (its first argument)."""
    return args[0] if args else kwargs.get("cache_implementation")


def serve_cache(args: tuple, kwargs: dict, served: str) -> tuple[tuple, dict]:
    """The arguments of a ``GenerationMixin._get_cache`` call with ``served`` in place of the name asked for (the
    patches that serve one cache implementation as another: the caller's other arguments untouched)."""
    if args:
        return (served,) + tuple(args[1:]), kwargs
    return args, dict(kwargs, cache_implementation=served)


@dataclass(frozen=True)
class SlidingWindowPolicy:
    """What a sliding layer of window ``window`` may see, how many keys it must hold, and its mask."""

    window: int

    def __post_init__(self) -> None:
        if not isinstance(self.window, int) or isinstance(self.window, bool) or self.window < 1:
            raise ValueError(f"a sliding window is a positive number of tokens, not {self.window!r}")

    # -- from a model config ------------------------------------------------------------------------------------
    @classmethod
    def from_config(cls, config: Any) -> "SlidingWindowPolicy":
        """The policy of a model's sliding layers; ``ValueError`` when its config has no sliding window."""
        window = getattr(text_config(config), "sliding_window", None)
        if window is None:
            raise ValueError(f"{type(config).__name__} has no sliding_window")
        return cls(int(window))

    @staticmethod
    def layer_types(config: Any) -> list[str]:
        """The attention kind of every decoder layer, the model's own view (not what some cache class assumes).

        ``config.layer_types`` when the config has it (4.53+ for the hybrid models). Older configs describe the
        same layouts implicitly: Gemma-2 alternates sliding/full starting with sliding, Gemma-3 and Cohere-2 put a
        full layer every ``sliding_window_pattern`` layers, Qwen-2/3 slide from layer ``max_window_layers`` on when
        ``use_sliding_window``; any other config with a ``sliding_window`` slides everywhere (Mistral).
        """
        cfg = text_config(config)
        explicit = getattr(cfg, "layer_types", None)
        if explicit:
            return list(explicit)
        n = int(cfg.num_hidden_layers)
        if getattr(cfg, "sliding_window", None) is None:
            return [FULL] * n
        model_type = getattr(cfg, "model_type", "")
        if model_type == "gemma2":
            return [SLIDING if i % 2 == 0 else FULL for i in range(n)]
        pattern = getattr(cfg, "sliding_window_pattern", None)
        if model_type in ("gemma3_text", "cohere2") and pattern:
            return [SLIDING if (i + 1) % pattern else FULL for i in range(n)]
        if model_type.startswith(("qwen2", "qwen3")):
            if not getattr(cfg, "use_sliding_window", False):
                return [FULL] * n
            first = int(getattr(cfg, "max_window_layers", 0) or 0)
            return [SLIDING if i >= first else FULL for i in range(n)]
        return [SLIDING] * n

    @classmethod
    def cached_layer_types(cls, config: Any) -> list[str]:
        """``layer_types`` of the layers that own a KV cache: the last ``num_kv_shared_layers`` layers reuse the
        cache of an earlier layer (Gemma-3n, Gemma-4), and ``num_kv_shared_layers == 0`` means none do."""
        kinds = cls.layer_types(config)
        shared = int(getattr(text_config(config), "num_kv_shared_layers", 0) or 0)
        return kinds[: len(kinds) - shared] if shared > 0 else kinds

    @classmethod
    def is_hybrid(cls, config: Any) -> bool:
        """Whether the model mixes windowed and full-attention layers."""
        kinds = set(cls.layer_types(config))
        return bool(kinds & WINDOWED_KINDS) and bool(kinds - WINDOWED_KINDS)

    # -- cache alignment ----------------------------------------------------------------------------------------
    @property
    def keys_to_keep(self) -> int:
        """Keys a sliding layer must keep between steps: the next query sees ``W - 1`` earlier tokens."""
        return self.window - 1

    def keys_needed(self, query_length: int) -> int:
        """The most keys attention needs for ``query_length`` new queries once the window is full."""
        return self.window - 1 + int(query_length)

    def kv_span(self, past_length: int, query_length: int) -> tuple[int, int]:
        """(first absolute key position, number of keys) that ``query_length`` queries after ``past_length``
        cached tokens need on a sliding layer."""
        offset = max(0, int(past_length) - (self.window - 1))
        return offset, int(past_length) + int(query_length) - offset

    # -- masks as transformers mask functions (absolute positions) ---------------------------------------------
    def window_overlay(self) -> MaskFunction:
        """``k > q - W``: the window's lower edge; ANDed onto anything a sliding layer is allowed to see."""
        window = self.window

        def inside_window(batch_idx: Any, head_idx: Any, q_idx: Any, kv_idx: Any) -> Any:
            return kv_idx > q_idx - window

        return inside_window

    @staticmethod
    def block_ids(in_block: Any) -> Any:
        """Block ids ``(batch, seq)`` from a boolean "is an image token" tensor: the k-th run of True of a row is
        block k, every other token -1 (two images side by side are two blocks)."""
        import torch

        in_block = torch.as_tensor(in_block).bool()
        starts = in_block & ~torch.nn.functional.pad(in_block, (1, 0))[:, :-1]
        return torch.where(in_block, torch.cumsum(starts.long(), dim=1) - 1, torch.full_like(starts, -1, dtype=torch.long))

    @staticmethod
    def block_overlay(block_ids: Any) -> MaskFunction:
        """Same non-negative block (e.g. one image): bidirectional. Positions past ``block_ids``'s width (a static
        cache is wider than the prompt) belong to no block, so no padding of ``block_ids`` is needed."""
        import torch

        width = block_ids.shape[-1]

        def same_block(batch_idx: Any, head_idx: Any, q_idx: Any, kv_idx: Any) -> Any:
            q_block = block_ids[batch_idx, q_idx.clamp(max=width - 1)]
            k_block = block_ids[batch_idx, kv_idx.clamp(max=width - 1)]
            q_block = torch.where(q_idx < width, q_block, -1)
            k_block = torch.where(kv_idx < width, k_block, -1)
            return (q_block == k_block) & (q_block >= 0)

        return same_block

    # -- masks as tensors (the oracle's view; small shapes only) ------------------------------------------------
    def dense_mask(
        self,
        q_positions: Any,
        k_positions: Any,
        attention_mask: Any = None,
        block_ids: Any = None,
        sliding: bool = True,
    ) -> Any:
        """Boolean ``(batch, q, k)``: True where a query may attend to a key.

        ``q_positions`` / ``k_positions`` are absolute positions (1-D, or ``(batch, n)``); ``attention_mask``
        is the 2-D padding mask indexed by key position; ``block_ids`` ``(batch, seq)`` marks bidirectional
        blocks (-1 = ordinary token). ``sliding=False`` gives the full-attention layers' mask.
        """
        import torch

        q = torch.as_tensor(q_positions)
        k = torch.as_tensor(k_positions)
        batch = 1
        for t in (attention_mask, block_ids):
            if t is not None:
                batch = t.shape[0]
        q = q.expand(batch, -1) if q.dim() == 1 else q
        k = k.expand(batch, -1) if k.dim() == 1 else k
        qq, kk = q[:, :, None], k[:, None, :]
        visible = kk <= qq
        if block_ids is not None:
            b = torch.as_tensor(block_ids)
            rows = torch.arange(batch, device=b.device)[:, None]
            qb = b[rows, q.clamp(max=b.shape[-1] - 1)].masked_fill(q >= b.shape[-1], -1)
            kb = b[rows, k.clamp(max=b.shape[-1] - 1)].masked_fill(k >= b.shape[-1], -1)
            visible = visible | ((qb[:, :, None] == kb[:, None, :]) & (qb[:, :, None] >= 0))
        if sliding:
            visible = visible & (kk > qq - self.window)
        if attention_mask is not None:
            am = torch.as_tensor(attention_mask).bool()
            visible = visible & am[torch.arange(batch, device=am.device)[:, None], k][:, None, :]
        return visible

    @staticmethod
    def additive(mask: Any, dtype: Any = None) -> Any:
        """A boolean ``(batch, q, k)`` mask as the additive ``(batch, 1, q, k)`` float mask eager and sdpa
        attention take: 0 where visible, the dtype's minimum elsewhere (never -inf, so a padding query's row of
        no visible key stays finite; it is still attending to nothing it is allowed to see)."""
        import torch

        dtype = dtype or torch.float32
        out = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
        return out.masked_fill(~mask, torch.finfo(dtype).min)[:, None]
