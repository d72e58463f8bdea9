"""Build hook: an installed (non-editable) fsdpcfg carries the config tree.

``conf/``, ``recipes/`` and ``schemas/`` live at the top of the repository (Hydra reads the first two there in a
checkout). A wheel gets copies under ``fsdpcfg/_tree/conf`` (with ``conf/recipe`` as a real folder of the
recipes, not the checkout's symlink), ``fsdpcfg/_tree/recipes`` and ``fsdpcfg/_tree/schemas`` (the JSON Schema
files for editors); ``fsdpcfg.paths`` and ``fsdpcfg.catalog.schema_files`` find them there. Everything else is
in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildPyWithTree(build_py):
    """``build_py`` that also copies ``conf/``, ``recipes/`` and ``schemas/`` into ``fsdpcfg/_tree`` of the build."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout's own conf/ and recipes/
        tree = Path(self.build_lib) / "fsdpcfg" / "_tree"
        for name in ("conf", "recipes", "schemas"):
            src, dst = ROOT / name, tree / name
            if src.is_dir():
                if dst.exists():
                    shutil.rmtree(dst)
                shutil.copytree(src, dst, symlinks=False, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildPyWithTree})
