"""``hf-genfix doctor --sweep``: the general oracles over every architecture of the installed release.

The package's parts import one way, down to ``core``, and this module puts them together:

- ``core``: the scenario registry (``SCENARIOS``, ``scenario``, ``Subject``, the kinds), the decoder-only
  scenarios, the judging (verdicts, the differential's attribution, open findings, recall) and the report;
- the kinds and scenario sets that register themselves on import: ``families`` (encoder-decoder, image-text),
  ``imagetext`` (image-text models built in their own module), ``video`` (videos on M-RoPE models, against the
  positions of the definition), ``processors`` (a batch against each row alone),
  ``equivalences`` (inputs_embeds, every cache implementation), ``contrastive`` (contrastive search against its
  definition), ``inputs`` (a forward is a function of its
  inputs), ``continuations`` (continuations of a cache), ``remote`` (the tiny remote-code repos) and
  ``tokenizers`` (the local tokenizer repos) and ``bert_decoders`` (encoders built with ``is_decoder=True``).

``core``'s docstring says what the sweep does and how it judges. Its public names are this package's.
"""

# ruff: noqa: I001 - the imports below register scenarios, and their order is the order of every report
from __future__ import annotations

from . import core  # noqa: F401 - sweep.core: the judging's own helpers, for tests
from .core import *  # the sweep's public names

from . import families  # noqa: F401 - encoder-decoder and image-text kinds
from . import imagetext  # noqa: F401 - extends families' IMAGE_TEXT, so after it
from . import video  # noqa: F401 - videos on M-RoPE models against the definition's positions (issue 36)
from . import processors  # noqa: F401 - a batch against each row alone
from . import equivalences  # noqa: F401 - inputs_embeds, every cache implementation (issue 26)
from . import contrastive  # noqa: F401 - contrastive search against its definition (issue 36)
from . import inputs  # noqa: F401 - a forward is a function of its inputs (issue 36)
from . import continuations  # noqa: F401 - a second turn, a prefix cache reused, the own cache (issue 36)
from . import remote  # noqa: F401 - the tiny remote-code repos as a kind (issue 36)
from . import tokenizers  # noqa: F401 - the local tokenizer repos as a kind (issue 36)
from . import bert_decoders  # noqa: F401 - encoders built as decoders (is_decoder=True) as a kind (session 38)
