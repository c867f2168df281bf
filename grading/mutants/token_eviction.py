"""Wrong and alternative answers for notebook 07 (see grading/mutants/__init__.py)."""

from grading.reference import Reference

ref = Reference("07_token_eviction")

ATTEND, STREAM, H2O = "task7_1_attend_kept", "task7_2_streaming_keep", "task7_3_h2o_keep"
SNAP, PYRAMID, DECODE = "task7_4_snapkv_keep", "task7_5_pyramid_budgets", "task7_6_decode_with_eviction"

WRONG: dict = {}
ALTERNATIVES: dict = {}
HIDDEN_ONLY: dict[str, dict[str, str]] = {}
