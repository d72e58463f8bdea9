"""fsdpcfg: declarative configuration, pre-flight checks and launch for FSDP/FSDP2 post-training.

The pipeline runs in one direction, one subpackage per stage:
``compose`` (Hydra) -> ``schema`` (Pydantic) and ``rules`` (static checks) -> ``plan`` -> ``launch`` -> ``train``.
Nothing on the compose/schema/rules/plan path imports torch, transformers or verl.
"""

import os as _os
import sys as _sys

__version__ = "0.1.0"

# `python -m fsdpcfg` (and torchrun's `-m fsdpcfg.train`) put the working folder first on sys.path, so a
# `secrets.py`, `json.py` or `yaml.py` there would be imported in place of the library's module and run (a break-it
# probe: a user's `secrets.py` ran in `check`). While `-m` imports this package, sys.argv[0] is "-m": the folder
# then goes to the end of the path, where a module of the user's own (a `model.external_lib`) is still found but
# never shadows one of the standard library or the installed packages.
if _sys.argv[:1] == ["-m"] and _sys.path and _sys.path[0] in ("", _os.getcwd()):
    _sys.path.append(_sys.path.pop(0))
