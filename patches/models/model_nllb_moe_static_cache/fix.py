"""model-nllb-moe-static-cache: NLLB-MoE with ``cache_implementation="static"`` attends to the static cache's unfilled
zero slots from the first generated token on (silently wrong).

The defect. The decoder builds its self-attention mask with ``_prepare_4d_causal_attention_mask`` (or its SDPA twin)
from the past length, which gives no mask for a single new token without a decoder attention mask: right for a
dynamic cache, which holds only the written keys. A static cache holds ``max_cache_len`` slots from the first step,
the unwritten ones zeros, and the new token weights them all. Measured wrong on 4.56.0-4.57.6 (fixed there);
5.0.0-5.18.0 pass, 4.55.4 refuses a static cache.

Detection. ``doctor --sweep``'s s2s-static-cache scenario on a tiny NLLB-MoE: a padded encoder batch, greedy tokens
with a static cache, every row and step against a no-cache forward of that row alone.

Correction. ``NllbMoeDecoderLayer.forward`` is wrapped (``fixes.models._static_self_attention``): when upstream
passes no self-attention mask and the layer's self-attention cache is a static one, it passes the additive mask that
hides the slots past the tokens written so far, exactly the keys the dynamic cache would hold. A mask upstream
builds, a dynamic cache or no cache go to upstream untouched. Where the static layer does not say where it writes
(no ``cache_position`` given, no running count), it raises a clear error before the first token instead of a guess.
"""

from __future__ import annotations

from hf_genfix._patches.models.shared import static_self_attention as static

PATCH = "model-nllb-moe-static-cache"
TARGET = "transformers.models.nllb_moe.modeling_nllb_moe:NllbMoeDecoderLayer.forward"

install = static.installer(PATCH, "nllb-moe", TARGET)
