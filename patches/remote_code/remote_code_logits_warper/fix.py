"""remote-code-logits-warper: ``self._get_logits_warper(generation_config)`` from old remote code, 4.42 - 4.44.

The defect. ChatGLM2/3's ``stream_generate`` (behind ``stream_chat``) and loops copied from it call
``self._get_logits_warper(generation_config)``, the signature of 4.41 and before. 4.42.0 made ``device`` a
required parameter: ``TypeError: _get_logits_warper() missing 1 required positional argument: 'device'``
(measured 4.42.4, 4.43.4, 4.44.2; the 4.42.0 and 4.43.0 wheels have the same signature). 4.45.0 removed the
method (``remote-code-model-methods`` restores it there).

Detection (``probe``): the tiny ChatGLM3-style remote repo's own ``stream_generate`` must decode greedily like
full no-cache forwards.

Correction. A call from remote code without ``device`` gets the model's device, which is what ``generate()``
passes (the device of the inputs, where the model is). Every other call is passed through untouched.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit.remote_code import called_from_remote_code

TARGET = "transformers.generation.utils:GenerationMixin._get_logits_warper"


def install(patcher: Any) -> None:
    patcher.require(TARGET, "generation_config", "device")

    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if instance is None or len(args) > 1 or "device" in kwargs or not called_from_remote_code():
            return wrapped(*args, **kwargs)
        return wrapped(*args, device=instance.device, **kwargs)

    patcher.wrap(TARGET, wrapper)
