"""One decode step's inputs, the same on every transformers release: ``GenerationInputPrep`` and ``DecodeState``.

A hand-written decoding loop (speculative decoding, RL rollouts, serving code) keeps three things in step: the
tokens so far, the attention mask, and the cache. Each step feeds the model only the tokens the cache does not
hold yet, a mask covering cached + new tokens, and, for models that take them, position ids counted from the
mask (so that left padding does not shift positions). ``model.prepare_inputs_for_generation`` was meant to do
this, but its contract changed in almost every release (it needs ``cache_position`` up to 5.2, no longer trims
nor derives positions from 5.3, and its cache keyword became ``cache`` in 5.24); these helpers do not call it.

Example: a manual greedy loop that gives exactly what ``model.generate(ids, attention_mask=mask,
do_sample=False, max_new_tokens=8, eos_token_id=2, pad_token_id=0)`` gives (docs/decode-loop.md runs a
complete one; tests/prepare_inputs/test_helpers.py runs the document)::

    state = DecodeState(model, ids, mask, eos_token_id=2, pad_token_id=0)
    for _ in range(8):
        out = model(**state.inputs())
        state.advance(out, out.logits[:, -1, :].argmax(-1))
        if state.done:
            break
    state.input_ids  # == generate(...)
"""

from __future__ import annotations

import inspect
from typing import Any

_FORWARD_SPECS: dict[type, "_ForwardSpec"] = {}


# -- small, version-independent pieces (the prepare-inputs patches use them too) -------------------------------
def cache_length(cache: Any) -> int:
    """How many positions ``cache`` holds: a ``Cache`` object (any release; the decoder's self-attention part of
    an ``EncoderDecoderCache``), a legacy tuple of per-layer ``(key, value)``, ``(key, value, cross key, cross
    value)`` or of fused key-value tensors (gpt_bigcode on 4.x), or None."""
    if cache is None:
        return 0
    get = getattr(cache, "get_seq_length", None)
    if get is not None:
        return int(get())
    if isinstance(cache, (tuple, list)):
        if not cache:
            return 0
        first = cache[0]
        if isinstance(first, (tuple, list)):
            # The value tensor: (batch, heads, seq, dim), and (batch * heads, seq, dim) for bloom's legacy layout,
            # whose key is transposed (batch * heads, dim, seq). Encoder-decoder layers hold (self key, self value,
            # cross key, cross value): the cross-attention pair has the encoder's length.
            first = (first[1] if len(first) == 4 else first[-1]) if first else None
        return int(first.shape[-2]) if first is not None else 0
    raise TypeError(f"cannot tell how many positions a {type(cache).__name__} holds")


# What carries an image into a prefill: 5.x ``MULTIMODAL_INPUTS_TO_DROP_OUTSIDE_PREFILL``'s image keys and the
# pre-encoded features of 5.23+.
IMAGE_INPUTS = ("pixel_values", "pixel_values_videos", "image_patches", "mm_encoder_outputs", "high_res_pixel_values",
                "image_embeds")


def has_image_inputs(model_kwargs: dict) -> bool:
    """Whether generate()'s ``model_kwargs`` carry an image (a value under one of ``IMAGE_INPUTS``; a dict of
    features counts when any of its values is set)."""
    for key in IMAGE_INPUTS:
        value = model_kwargs.get(key)
        if value is not None and not (isinstance(value, dict) and not any(v is not None for v in value.values())):
            return True
    return False


def renames_keyword(func: Any, old: str) -> bool:
    """Whether ``func`` (a bound method, or one of the functions it wraps) is transformers' ``deprecate_kwarg``
    wrapper for the keyword ``old``: it takes it, renames it and warns."""
    func = getattr(func, "__func__", func)
    for _ in range(8):
        if func is None:
            return False
        # functools.wraps copies the decorated function's names: the code and its globals tell the decorator.
        code = getattr(func, "__code__", None)
        if (code is not None and code.co_name == "wrapped_func"
                and getattr(func, "__globals__", {}).get("__name__") == "transformers.utils.deprecation"
                and any(_cell(c) == old for c in (getattr(func, "__closure__", None) or ()))):
            return True
        func = getattr(func, "__wrapped__", None)
    return False


def _cell(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return None


def stated_new_tokens(
    width: int,
    cached: int,
    mask_width: int | None = None,
    position_ids: Any = None,
    cache_position: Any = None,
    from_start: bool = False,
) -> int | None:
    """How many of the last ``width`` input ids are new, as far as the call itself says; None when it does not.

    In order of authority: ``cache_position`` (one entry per new token); ``position_ids`` (narrower than the ids:
    they belong to the last ids; as wide: positions reaching past the ids' own width mean the ids follow the
    cache, positions within it mean the ids are the whole sequence); no cache, or no more ids than cached
    positions (they cannot be the whole sequence); ``from_start`` (the caller saw that the ids begin at position
    0, e.g. an encoder-decoder model's decoder start token in every row: the whole sequence); a mask as wide as
    cached + ids (the ids are new) or no wider than the ids (the mask of the whole sequence, perhaps not grown
    yet). Ids longer than the cache with none of these are the ambiguous call: None.
    """
    if cache_position is not None:
        count = int(cache_position.shape[-1])
        return count if 0 < count <= width else None
    if cached == 0:
        return width
    whole = width - cached if width > cached else width
    if position_ids is not None:
        count = int(position_ids.shape[-1])
        if count < width:
            return count
        if count > width:
            return None
        return width if int(position_ids[..., -1].max()) + 1 > width else whole
    if width <= cached:
        return width
    if from_start:
        return whole
    if mask_width is not None:
        if mask_width == cached + width:
            return width
        if mask_width <= width:
            return whole
    return None


def grow_mask(mask: Any, width: int) -> Any:
    """``mask`` extended with ones on the right to ``width`` columns (a new tensor; the caller's is untouched)."""
    import torch

    missing = width - mask.shape[-1]
    if missing <= 0:
        return mask
    return torch.cat([mask, mask.new_ones((mask.shape[0], missing))], dim=-1)


def positions_from_mask(mask: Any, last: int) -> Any:
    """Position ids of the last ``last`` columns: cumsum(mask) - 1, 0 at padding (what ``generate`` computes)."""
    positions = mask.long().cumsum(-1) - 1
    positions = positions.masked_fill(mask == 0, 0)
    return positions[:, -last:]


def prefill_chunks(model: Any, input_ids: Any, config: Any, model_kwargs: dict, positions: Any = None,
                   full_ids: bool = False) -> dict:
    """4.51 - 4.57's ``GenerationMixin._prefill_chunking`` loop, for the patches that correct it: the same chunks of
    ``input_ids[:, :-1]``, mask prefixes, ``cache_position``, compiled forward where the release compiles it, and
    the same returned ``model_kwargs``. Two changes, each asked for by one patch: ``positions`` (the mask-derived
    positions of the whole prompt) gives each chunk its slice as ``position_ids`` instead of its cache positions
    (padding-prefill-chunks); ``full_ids``: where the model cuts a chunk it is handed alone, it is handed the prompt
    up to the chunk's end instead, the full-ids contract of a model that slices by its cache's length
    (decoding-prefill-chunks-full-ids), and ``ValueError`` is raised where it feeds other than the chunk either way.
    A model that feeds the chunk it is handed gets upstream's call exactly."""
    import torch

    # Upstream raises the graph limit for flex attention's per-chunk graphs; kept so compiled runs behave alike.
    torch._dynamo.config.cache_size_limit = 64
    forward = model.forward
    criteria = getattr(model, "_valid_auto_compile_criteria", None)
    if criteria is None or criteria(model_kwargs, config):  # 4.51 compiles unconditionally, 4.52+ when valid
        forward = model.get_compiled_call(config.compile_config)
    mask = model_kwargs.pop("attention_mask", None)
    past = 0
    for piece in torch.split(input_ids[:, :-1], config.prefill_chunk_size, dim=-1):
        end = past + piece.shape[-1]
        if mask is not None:
            model_kwargs["attention_mask"] = mask[:, :end]
        model_kwargs["cache_position"] = torch.arange(past, end, dtype=torch.long, device=piece.device)
        model_kwargs["position_ids"] = (model_kwargs["cache_position"].unsqueeze(0) if positions is None
                                        else positions[:, past:end])
        inputs = model.prepare_inputs_for_generation(piece, **model_kwargs)
        if full_ids and past and _fed(inputs) != piece.shape[-1]:
            # The chunk alone was cut (the model slices by its cache's length): the ids up to the chunk's end.
            inputs = model.prepare_inputs_for_generation(input_ids[:, :end], **model_kwargs)
            if _fed(inputs) != piece.shape[-1]:
                raise ValueError(f"{type(model).__name__}.prepare_inputs_for_generation fed {_fed(inputs)} tokens "
                                 f"for a prefill chunk of {piece.shape[-1]} after {past} cached, given the chunk "
                                 f"or the ids up to it: its contract is neither cache_position nor the full ids")
        outputs = forward(**inputs, return_dict=True)
        model_kwargs["past_key_values"] = outputs.past_key_values
        past = end
    model_kwargs["attention_mask"] = mask
    model_kwargs["cache_position"] = model_kwargs["cache_position"][-1:] + 1
    model_kwargs.pop("position_ids", None)
    return model_kwargs


def _fed(inputs: Any) -> "int | None":
    """How many tokens ``prepare_inputs_for_generation``'s result feeds (None without ``input_ids``)."""
    ids = inputs.get("input_ids") if isinstance(inputs, dict) else None
    return None if ids is None else int(ids.shape[-1])


def cache_from_outputs(outputs: Any) -> Any:
    """The cache a forward returned: ``outputs.cache`` from 5.24, ``outputs.past_key_values`` before."""
    fields = getattr(type(outputs), "__dataclass_fields__", None) or ()
    if "cache" in fields:
        return outputs.cache
    return getattr(outputs, "past_key_values", None)


_PARAMETERS: dict[Any, tuple[tuple[str, ...], frozenset]] = {}


def parameters_of(method: Any) -> tuple[tuple[str, ...], frozenset]:
    """(names of the positional parameters, all parameter names) of ``method``, read once per function."""
    func = getattr(method, "__func__", method)
    found = _PARAMETERS.get(func)
    if found is None:
        try:
            params = inspect.signature(method).parameters.values()
        except (TypeError, ValueError):
            params = ()
        found = _PARAMETERS[func] = (
            tuple(p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)),
            frozenset(p.name for p in params),
        )
    return found


def name_positional(method: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """``(args[:1], kwargs)`` with the positional arguments after ``input_ids`` moved into ``kwargs`` under their
    parameter names in ``method``'s signature."""
    if len(args) <= 1:
        return args, kwargs
    names = parameters_of(method)[0][1:]
    if len(args) - 1 > len(names):
        return args, kwargs  # *args in the signature: nothing to name
    kwargs = dict(kwargs)
    for name, value in zip(names, args[1:]):
        kwargs.setdefault(name, value)
    return args[:1], kwargs


class _ForwardSpec:
    """What a model class's forward takes, read once per class."""

    def __init__(self, cls: type):
        try:
            params = inspect.signature(cls.forward).parameters
        except (TypeError, ValueError):
            params = {}
        self.cache_key = "cache" if "cache" in params else "past_key_values"
        self.cache_position = "cache_position" in params
        # Multi-axis (mrope) models build their own 3-D position ids from the tokens: leave them alone.
        self.positions = "position_ids" in params and not hasattr(cls, "get_rope_index")
        self.names = frozenset(params)


def forward_spec(model_or_cls: Any) -> _ForwardSpec:
    cls = model_or_cls if isinstance(model_or_cls, type) else type(model_or_cls)
    spec = _FORWARD_SPECS.get(cls)
    if spec is None:
        spec = _FORWARD_SPECS[cls] = _ForwardSpec(cls)
    return spec


# -- the public helpers ---------------------------------------------------------------------------------------
class GenerationInputPrep:
    """Builds one decode step's forward keyword arguments from the full ids, the cache and the mask.

    ``prep(input_ids, cache, attention_mask)`` returns a dict to call ``model(**inputs)`` with: the ids the cache
    does not hold yet, the mask grown to cover cached + new tokens (a mask the caller did not grow is completed
    with ones), position ids ``cumsum(mask) - 1`` of the new tokens (0 at padding) for models whose forward
    takes 2-D positions, the cache under the keyword this release's forward takes (``cache`` from 5.24,
    ``past_key_values`` before), ``cache_position`` where the forward names it, and ``use_cache``. It never
    calls ``model.prepare_inputs_for_generation`` and never modifies the caller's tensors.
    """

    def __init__(self, model: Any):
        self.model = model
        self.spec = forward_spec(model)

    def __call__(
        self,
        input_ids: Any,
        cache: Any = None,
        attention_mask: Any = None,
        position_ids: Any = None,
        use_cache: bool = True,
    ) -> dict[str, Any]:
        import torch

        cached = cache_length(cache)
        mask_width = attention_mask.shape[-1] if attention_mask is not None else None
        width = input_ids.shape[-1]
        new = stated_new_tokens(width, cached, mask_width, position_ids)
        if new is None:
            # Ids longer than the cache and no mask: this helper serves loops that keep the whole sequence.
            new = width - cached
        inputs: dict[str, Any] = {"input_ids": input_ids[:, -new:].contiguous(), "use_cache": use_cache}
        if attention_mask is not None:
            attention_mask = grow_mask(attention_mask, cached + new)
            inputs["attention_mask"] = attention_mask
        if position_ids is not None:
            inputs["position_ids"] = position_ids[..., -new:]
        elif attention_mask is not None and self.spec.positions:
            inputs["position_ids"] = positions_from_mask(attention_mask, new)
        if cache is not None:
            inputs[self.spec.cache_key] = cache
        if self.spec.cache_position:
            inputs["cache_position"] = torch.arange(cached, cached + new, device=input_ids.device)
        return inputs


class DecodeState:
    """The state of a hand-written decoding loop: ids, mask and cache advance together, and it is checked.

    ``inputs()`` gives the next forward's keyword arguments (through ``GenerationInputPrep``); ``advance(outputs,
    next_tokens)`` appends the chosen tokens, grows the mask by one column of ones and takes the cache the forward
    returned, after checking that the cache now holds exactly the sequence so far (a cache that fell behind or ran
    ahead would silently shift every later mask and position). Rows that produced ``eos_token_id`` continue with
    ``pad_token_id``, as ``generate`` does.
    """

    def __init__(
        self,
        model: Any,
        input_ids: Any,
        attention_mask: Any = None,
        cache: Any = None,
        eos_token_id: int | list[int] | None = None,
        pad_token_id: int | None = None,
    ):
        import torch

        self.prep = GenerationInputPrep(model)
        self.input_ids = input_ids
        self.attention_mask = attention_mask if attention_mask is not None else torch.ones_like(input_ids)
        if self.attention_mask.shape != input_ids.shape:
            raise ValueError(f"attention_mask {tuple(self.attention_mask.shape)} does not match input_ids "
                             f"{tuple(input_ids.shape)}")
        self.cache = cache
        self.prompt_width = input_ids.shape[-1]
        eos = [eos_token_id] if isinstance(eos_token_id, int) else list(eos_token_id or ())
        self._eos = torch.tensor(eos, dtype=torch.long, device=input_ids.device) if eos else None
        if self._eos is not None and pad_token_id is None:
            raise ValueError("eos_token_id needs a pad_token_id for the rows that have finished")
        self._pad = pad_token_id
        self.finished = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

    def inputs(self) -> dict[str, Any]:
        """Keyword arguments of the next forward: the tokens the cache lacks, the mask, positions, the cache."""
        return self.prep(self.input_ids, self.cache, self.attention_mask)

    def advance(self, outputs: Any, next_tokens: Any) -> Any:
        """Append ``next_tokens`` (one per row) after the forward that produced ``outputs``; returns the tokens
        appended (pad for finished rows)."""
        import torch

        cache = cache_from_outputs(outputs)
        if cache is not None:
            held = cache_length(cache)
            if held != self.input_ids.shape[-1]:
                raise AssertionError(
                    f"after the step the cache holds {held} positions but the sequence has "
                    f"{self.input_ids.shape[-1]} tokens: cache, mask and positions are out of step"
                )
        next_tokens = next_tokens.reshape(-1).to(self.input_ids.dtype)
        if self._eos is not None:
            next_tokens = torch.where(self.finished, torch.full_like(next_tokens, self._pad), next_tokens)
            self.finished = self.finished | torch.isin(next_tokens, self._eos.to(next_tokens.device))
        self.input_ids = torch.cat([self.input_ids, next_tokens[:, None]], dim=-1)
        self.attention_mask = grow_mask(self.attention_mask, self.attention_mask.shape[-1] + 1)
        self.cache = cache
        return next_tokens

    @property
    def new_tokens(self) -> Any:
        """The generated part of ``input_ids``."""
        return self.input_ids[:, self.prompt_width:]

    @property
    def done(self) -> bool:
        return bool(self.finished.all())
