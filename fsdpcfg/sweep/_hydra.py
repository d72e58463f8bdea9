"""Run sweep points through Hydra's launcher plugins (basic, joblib, submitit), as ``hydra.main`` multirun does.

This is the part of ``Hydra.multirun`` + ``BasicSweeper.sweep`` that follows the expansion: compose Hydra's
multirun config (``hydra/launcher=...``, ``hydra.launcher.*``, ``hydra.sweep.*``) over fsdpcfg's config tree,
instantiate the configured launcher plugin and hand it the checked points. The launcher composes each job's
config itself (``config_loader.load_sweep_config``), makes its folder ``hydra.sweep.dir/hydra.sweep.subdir``
(``<sweep dir>/<job number>``), saves ``.hydra/`` there and calls the task function in its own process (joblib
worker, Slurm job) or in this one (basic). fsdpcfg expands and checks the points first (duplicates removed,
invalid points left out), which is why the sweeper step is not Hydra's.

No code a config names runs while a sweep is planned or dry-run: the multirun config is composed without
configuring logging from it (``hydra.hydra_logging``), the launcher plugin is built with no callbacks
(``hydra.callbacks``) and refused when its settings hold a ``_target_`` of their own (Hydra would build it with
the plugin). Only :meth:`HydraLaunch.launch`, the real sweep, does what ``hydra.main`` multirun does: it
configures ``hydra.hydra_logging``, builds ``hydra.callbacks`` and calls them, and Hydra's launcher configures
``hydra.job_logging`` in each job (``fsdpcfg check`` reports all three: rule FC740). Source: issue 22 item 1 (a
``--dry-run`` sweep built a recipe's ``builtins.open(path, "w")`` callback, which emptied the file, and
imported a module of the working folder).

Uses ``hydra._internal`` (``Hydra``, ``create_config_search_path``, ``Callbacks``): pinned by hydra-core<1.4.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from omegaconf import OmegaConf

from fsdpcfg import paths
from fsdpcfg.errors import ConfigError, did_you_mean

#: Hydra's launcher options that ship with fsdpcfg's extras, for error messages.
KNOWN_LAUNCHERS = ("basic", "joblib", "submitit_local", "submitit_slurm", "fsdpcfg_slurm")


def _first_line(e: BaseException) -> str:
    s = str(e).strip()
    return s.splitlines()[0] if s else type(e).__name__


def _available_launchers(kind: str) -> list[str]:
    from fsdpcfg.sweep.expand import config_loader

    try:
        return sorted(config_loader(kind).get_group_options("hydra/launcher"))
    except Exception:  # listing is only for the message
        return list(KNOWN_LAUNCHERS)


class HydraLaunch:
    """Hydra's multirun config and its launcher, composed before any point starts.

    Args:
        kind: the config tree (``ppo`` or ``sft``) whose ``conf/`` folder is Hydra's primary config.
        hydra_overrides: overrides of Hydra's config (``hydra/launcher=joblib``, ``hydra.launcher.n_jobs=2``).
        first_point: one checked point (the multirun config needs a task config to interpolate against).

    Raises:
        ConfigError: an unknown launcher option (the available ones listed), a launcher plugin that is not
            installed, a launcher setting Hydra rejects, or a ``_target_`` inside the launcher's settings.
    """

    def __init__(self, kind: str, hydra_overrides: list[str], first_point: list[str]) -> None:
        from hydra import version
        from hydra._internal.hydra import Hydra
        from hydra._internal.utils import create_config_search_path
        from hydra.core.global_hydra import GlobalHydra
        from hydra.errors import ConfigCompositionException, MissingConfigException
        from hydra.types import RunMode

        from fsdpcfg.compose import resolvers

        resolvers.register()
        version.setbase("1.3")  # job.chdir=False: relative paths mean the same in every job
        GlobalHydra.instance().clear()
        self.kind = kind
        search = create_config_search_path(f"file://{paths.conf_dir(kind)}")
        # the task name names each job's log (<job folder>/fsdpcfg.log), which a job folder may hold (fsdpcfg.paths)
        self.hydra = Hydra.create_main_hydra2(
            task_name=paths.HYDRA_JOB_LOG.removesuffix(".log"), config_search_path=search
        )
        try:
            self.cfg = self.hydra.compose_config(
                config_name="config",
                overrides=list(hydra_overrides) + first_point,
                run_mode=RunMode.MULTIRUN,
                with_log_configuration=False,  # configured by launch() only: a handler is code the config names
            )
        except MissingConfigException as e:
            opts = _available_launchers(kind)
            given = [o.split("=", 1)[1] for o in hydra_overrides if o.lstrip("+").startswith("hydra/launcher=")]
            close = did_you_mean(given[-1], opts) if given else []
            raise ConfigError(
                f"cannot compose Hydra's launcher config: {_first_line(e)}",
                key="hydra/launcher",
                value=given[-1] if given else None,
                fix=(f"did you mean hydra/launcher={close[0]}? " if close else "")
                + f"available: {', '.join(opts)} (submitit_*: pip install 'fsdpcfg[sweep]')",
            ) from None
        except Exception as e:  # ConfigCompositionException, omegaconf errors while merging
            from fsdpcfg.compose import raised_in_hydra

            # a plain AttributeError/ValueError raised inside OmegaConf's merge is about the input too
            # (`hydra.sweeper.params={...}` on the basic sweeper: a break-it probe's traceback)
            if not isinstance(e, ConfigCompositionException) and not (
                type(e).__module__.startswith(("hydra", "omegaconf")) or raised_in_hydra(e)
            ):
                raise
            raise ConfigError(
                f"cannot compose Hydra's multirun config: {_first_line(e)}",
                fix="check the hydra.* overrides: a launcher's settings are hydra.launcher.<option> "
                "(joblib: n_jobs, backend, prefer; submitit_slurm: partition, timeout_min, "
                "gpus_per_node, ...)",
            ) from None
        self._refuse_launcher_objects()

    def _refuse_launcher_objects(self) -> None:
        """Refuse a ``_target_`` inside the launcher's settings: Hydra would import and call it while it builds the
        plugin (``instantiate`` is recursive), in a dry run too.

        Raises:
            ConfigError: names the key, its value and the fix.
        """
        from fsdpcfg.keypath import targets

        for key, target in targets(OmegaConf.to_container(self.cfg.hydra.launcher, resolve=False), "hydra.launcher"):
            if key != "hydra.launcher._target_":  # the plugin's class: Hydra takes only an installed plugin
                raise ConfigError(
                    f"{key}={target!r}: Hydra would import and call it while it builds the launcher plugin; "
                    "fsdpcfg builds no object a config names while it plans a sweep",
                    key=key,
                    value=target,
                    fix="give the launcher's settings as plain values (hydra.launcher.<option>=VALUE)",
                )

    @property
    def sweep_dir(self) -> str:
        """``hydra.sweep.dir``: the folder holding one sub-folder per job."""
        return str(self.cfg.hydra.sweep.dir)

    @property
    def launcher_target(self) -> str:
        """The launcher plugin's class (``hydra.launcher._target_``)."""
        return str(self.cfg.hydra.launcher._target_)

    def instantiate(self, task_function: Callable[[Any], Any], *, callbacks: bool = False):
        """Instantiate the launcher plugin with ``task_function`` (imports the installed plugin; Hydra takes only
        a plugin class of ``hydra_plugins``). The config's ``hydra.callbacks`` are built only with
        ``callbacks`` (the real sweep, :meth:`launch`): a dry run builds none.

        Raises:
            ConfigError: the plugin cannot be instantiated (for example not installed).
        """
        from hydra._internal.callbacks import Callbacks
        from hydra.core.plugins import Plugins
        from hydra.types import HydraContext

        self.callbacks = Callbacks(self.cfg if callbacks else None)
        try:
            return Plugins.instance().instantiate_launcher(
                hydra_context=HydraContext(config_loader=self.hydra.config_loader, callbacks=self.callbacks),
                task_function=task_function,
                config=self.cfg,
            )
        except Exception as e:
            raise ConfigError(
                f"cannot start the launcher {self.launcher_target}: {_first_line(e)}",
                key="hydra/launcher",
                fix="install the launcher plugin: pip install 'fsdpcfg[sweep]'",
            ) from None

    def launch(self, points: Sequence[Sequence[str]], task_function: Callable[[Any], Any]) -> list[Any]:
        """Launch ``points`` (one job each, numbered from 0) and return Hydra's ``JobReturn`` of each, in order.

        Raises:
            ConfigError: the launcher cannot be instantiated, or the sweep folder holds files fsdpcfg did not write
                (``FolderNotOwned``, rule FC731: nothing of the sweep started).
        """
        from hydra.core.utils import configure_log

        from fsdpcfg.paths import check_folder, owned
        from fsdpcfg.redact import write_private
        from fsdpcfg.sweep.summary import SWEEP_DIR_KEY

        # the sweep folder must be new, empty or fsdpcfg's (rule FC731) before anything of the sweep starts
        check_folder(self.sweep_dir, SWEEP_DIR_KEY)
        # what hydra.main multirun does once the sweep starts: logging as hydra.hydra_logging says, the callbacks
        configure_log(self.cfg.hydra.hydra_logging, self.cfg.hydra.verbose)
        launcher = self.instantiate(task_function, callbacks=True)
        # as BasicSweeper.sweep does (unresolved), through the secret scrubber, into the folder now claimed
        write_private(owned(self.sweep_dir, "multirun.yaml", key=SWEEP_DIR_KEY), OmegaConf.to_yaml(self.cfg))
        self.callbacks.on_multirun_start(config=self.cfg, config_name="config")
        returns = list(launcher.launch([list(p) for p in points], initial_job_idx=0))
        self.callbacks.on_multirun_end(config=self.cfg, config_name="config")
        return returns
