"""remote-code-tied-missing-keys: on 5.3, a remote-code model with tied weights loads from a checkpoint that omits
the tied copy (every safetensors checkpoint ``save_pretrained`` writes) with that parameter left on the meta device:
its output head is garbage or NaN (silently wrong).

The defect. ``save_pretrained`` writes one copy of tied parameters: a model whose ``lm_head.weight`` is tied to
``model.embed_tokens.weight`` is saved without ``lm_head.weight``, and ``from_pretrained`` ties it back in
``tie_weights(missing_keys=...)``, which ties a target only while it is in ``missing_keys``. On 5.3.0
``mark_tied_weights_as_initialized`` first flags every tied target ``_is_hf_initialized`` (so the initialiser skips
it), then, for remote code only (module tying, 5.3's comment says), drops from ``missing_keys`` every key whose
parameter has that flag: the tied targets too. ``tie_weights`` then sees both names "present in the checkpoint",
warns that it will NOT tie them, and the target stays the meta tensor of the model's construction. The forward
reads it as whatever memory is there (a 5.x-style remote model, ``_tied_weights_keys = {"lm_head.weight":
"model.embed_tokens.weight"}``: its reload's logits off by 0.49; MiniCPM-style 4.x code, whose list form
``remote-code-tied-weights`` maps: NaN). Models of transformers itself are not remote code and keep their targets
missing: right. 5.4.0 keeps a key that is a known tied target (``key in self.all_tied_weights_keys``) in
``missing_keys``.

Detection (``probe``): a tiny remote-code Llama subclass declaring the mapping, built from its config, saved with
``save_pretrained`` and reloaded with ``from_pretrained(trust_remote_code=True)``: no parameter on the meta device,
the head tied to the input embeddings, and the reload's logits equal the saved model's.

Correction. ``mark_tied_weights_as_initialized`` is wrapped: the tied targets missing from the checkpoint before
the call (``loading_info.missing_keys & model.all_tied_weights_keys``) are put back into ``missing_keys`` after it,
for a remote-code model, which is 5.4.0's rule. Another model, or a load that misses no tied target, is untouched.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import recorder

TARGET = "transformers.modeling_utils:PreTrainedModel.mark_tied_weights_as_initialized"

record = recorder(__name__)


def install(patcher: Any) -> None:
    patcher.require(TARGET, "loading_info")
    patcher.wrap(TARGET, _mark_tied_weights_as_initialized)


def _mark_tied_weights_as_initialized(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    info = args[0] if args else kwargs.get("loading_info")
    missing = getattr(info, "missing_keys", None)
    tied = getattr(instance, "all_tied_weights_keys", None)
    if instance is None or not isinstance(missing, set) or not tied:
        return wrapped(*args, **kwargs)
    kept = {key for key in missing if key in tied}
    result = wrapped(*args, **kwargs)
    if not kept or not instance.is_remote_code():
        return result
    if record.on:
        record.seen()
    dropped = kept - info.missing_keys
    if dropped:
        info.missing_keys = info.missing_keys | dropped
        if record.on:
            record.changed("tied parameter(s) %s kept missing, to be tied to their source", sorted(dropped))
    return result
