"""OmegaConf resolvers that the config tree uses for paths: ``${fsdpcfg_home:...}``, ``${fsdpcfg_data:...}``,
``${fsdpcfg_pkg:...}``. They return absolute paths, so a saved or exported config needs no resolver."""

from __future__ import annotations

from omegaconf import OmegaConf

from fsdpcfg import paths


def register() -> None:
    """Register the resolvers once per process (idempotent)."""
    table = {
        "fsdpcfg_home": lambda rel="": str(paths.home_dir() / rel),
        "fsdpcfg_data": lambda rel="": str(paths.data_dir() / rel),
        "fsdpcfg_pkg": lambda rel="": str(paths.PACKAGE_DIR / rel),
    }
    for name, fn in table.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)
