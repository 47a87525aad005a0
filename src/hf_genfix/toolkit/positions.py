"""A ``cache_position`` handed from an outer call to an inner one that the release calls without it.

Several releases compute the position of the new tokens in one function and forget to pass it to the one that
writes a static cache (GPT-NeoX's attention on 4.45-4.46, JetMoE's model on 4.56-4.57): ``StaticCache.update``
then writes at slots ``0 .. n-1``. The outer wrapper notes the position for the duration of its call in a context
variable (this thread or task only, nested calls each their own); the inner wrapper receives it when its caller
left it out -- the argument the release forgot, nothing else.
"""

from __future__ import annotations

import contextvars
from typing import Any

from . import bound_arguments, hidden_from_warnings


class PositionRelay:
    def __init__(self, name: str):
        self._position: contextvars.ContextVar = contextvars.ContextVar(name, default=None)

    def around(self, position: Any, wrapped: Any, args: tuple, kwargs: dict) -> Any:
        """Call the outer function with ``position`` noted for the inner calls it makes."""
        token = self._position.set(position)
        try:
            return wrapped(*args, **kwargs)
        finally:
            self._position.reset(token)

    def inner(self, wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        """Wrapper of the inner function: the noted position when the call gives none."""
        position = self._position.get()
        if position is not None and bound_arguments(wrapped, args, kwargs).get("cache_position") is None:
            kwargs = dict(kwargs, cache_position=position)
        return wrapped(*args, **kwargs)


# The wrappers call the release's functions from these frames: warnings.warn(stacklevel=...) in them must step over
# hf_genfix's frames to reach the user's line, as it does over every wrapper the Patcher installs.
PositionRelay.around = hidden_from_warnings(PositionRelay.around)  # type: ignore[method-assign]
PositionRelay.inner = hidden_from_warnings(PositionRelay.inner)  # type: ignore[method-assign]
