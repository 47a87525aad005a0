"""remote-code-mask-warning: on 5.2.0 the mask helpers old remote code calls log their deprecation malformed.

The defect. 5.2.0's ``transformers.modeling_attn_mask_utils`` announces its deprecation with
``logger.warning_once(DEPRECATION_MESSAGE, FutureWarning)``: the warning class is taken as a %-format argument
of a message without placeholders, so formatting the record raises ``TypeError: not all arguments converted
during string formatting``. Python's default handlers print a "--- Logging error ---" traceback and go on; a
handler that re-raises (pytest's log capture, strict logging setups) makes the first ``AttentionMaskConverter``
call of old remote code (old Phi-3, DeepSeek-V2, MiniCPM masks) fail. 5.1.0 does not warn, 5.3.0 warns with
``warnings.warn(DEPRECATION_MESSAGE, FutureWarning)`` (measured 5.1.0, 5.2.0, 5.3.0).

Detection (``probe``): ``AttentionMaskConverter(is_causal=True)`` with a handler on the module's logger that
formats each record (as every handler does) must not raise.

Correction. That module's logger only: a ``warning_once`` call whose extra argument is a warning class (what
5.2.0's code passes) logs the message alone -- the deprecation notice still appears once, as upstream meant it.
"""

from __future__ import annotations

from typing import Any

TARGET = "transformers.modeling_attn_mask_utils:logger.warning_once"


def install(patcher: Any) -> None:
    def warning_once(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if (len(args) == 2 and not kwargs and isinstance(args[1], type) and issubclass(args[1], Warning)
                and "%" not in str(args[0])):
            return wrapped(args[0])
        return wrapped(*args, **kwargs)

    patcher.wrap(TARGET, warning_once)
