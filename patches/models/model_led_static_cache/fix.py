"""model-led-static-cache: LED with ``cache_implementation="static"`` attends to the static cache's unfilled zero slots
from the first generated token on (silently wrong).

The defect. ``LEDDecoder.forward`` builds its self-attention mask only when more than one decoder token is fed (``if
input_shape[-1] > 1``): with a dynamic cache a single new token may see every cached key, so no mask is needed. A
static cache holds ``max_cache_len`` slots from the first step, the unwritten ones zeros, and with no mask the
single new token weights them all (softmax over zero keys: a logit difference of 0.004-0.008 on a tiny model from
step 0, and a different greedy token on a real one). Measured wrong on 4.56.0-5.3.0 and 5.13.0-5.24.0 (see the
manifest's evidence); 4.53.3 and earlier pass (generate() keeps no static cache for LED), 5.5.0-5.12.1 raise a
TypeError before generating (left as it is: the patch is not installed there).

Detection. ``doctor --sweep``'s s2s-static-cache scenario on a tiny LED: a padded encoder batch, 5 greedy tokens
with a static cache, every row and step against a no-cache forward of that row alone.

Correction. ``LEDDecoderLayer.forward`` is wrapped: when upstream passes no self-attention mask and the layer's
self-attention cache is a static one, it passes the additive mask that hides the slots past the tokens written so
far (``fixes.models._static_self_attention``): exactly the keys the dynamic cache would hold. A mask upstream builds, a
dynamic cache or no cache go to upstream untouched. Where the release's static layer does not say where it writes,
it raises a clear error before the first token instead of a guess.
"""

from __future__ import annotations

from hf_genfix._patches.models.shared import static_self_attention as static

PATCH = "model-led-static-cache"
TARGET = "transformers.models.led.modeling_led:LEDDecoderLayer.forward"

install = static.installer(PATCH, "led", TARGET)
