"""FC409: a validation pass needs validation data.

verl validates before the first step by default (``trainer.val_before_train: true``) and every
``trainer.test_freq`` steps; the native loop does the same (``fsdpcfg/train/validate.py``). Both build the
validation set from ``data.val_files``.
"""

from __future__ import annotations

from collections.abc import Iterable

from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule

VAL_FILES, BEFORE, FREQ = "data.val_files", "trainer.val_before_train", "trainer.test_freq"


@rule(
    "FC409",
    "validation is asked for and data.val_files names the data",
    keys=(VAL_FILES, BEFORE, FREQ),
    example=("+recipe=qwen_grpo", "trainer.test_freq=2", "data.val_files=null"),
)
def validation_has_data(ctx: Context) -> Iterable[Finding]:
    """``trainer.val_before_train=true`` or ``trainer.test_freq > 0`` with no ``data.val_files``: verl builds its
    validation dataset from ``data.val_files`` at start-up (``verl/trainer/main_ppo.py`` ``create_rl_dataset``
    with ``config.data.val_files``) and fails there, after Ray and the workers started; the native loop would
    have nothing to validate on. Source: verl 0.9.1 ``main_ppo.py``, ``ray_trainer.py`` ``_validate``."""
    files = ctx.get(VAL_FILES)
    before, freq = ctx.get(BEFORE), ctx.get(FREQ)
    asked = [k for k, on in ((BEFORE, before is True), (FREQ, isinstance(freq, int) and freq > 0)) if on]
    if asked and (files is None or files == [] or files == ""):
        what = " and ".join(f"{k}={ctx.get(k)!r}" for k in asked)
        yield ctx.finding(
            "FC409",
            [VAL_FILES, *asked],
            f"{what} asks for validation, but {VAL_FILES} is not set",
            f"set {VAL_FILES} to the validation file(s), or turn validation off ({BEFORE}=false {FREQ}=-1)",
        )
