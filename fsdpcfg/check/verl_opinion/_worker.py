"""The subprocess side of :mod:`fsdpcfg.check.verl_opinion`: run verl 0.9.1's own config-time checks on configs.

Usage (by :func:`fsdpcfg.check.verl_opinion.run_worker`, not by hand)::

    python -m fsdpcfg.check.verl_opinion._worker IN.json OUT.json   # one request, then exit
    python -m fsdpcfg.check.verl_opinion._worker --serve            # a request per stdin line (see serve)

``IN.json`` is ``{"jobs": [{"kind": "ppo"|"sft", "tree": {...}}, ...]}`` (trees as
:func:`fsdpcfg.check.to_verl.verl_tree` builds them), or jobs ``{"kind", "config_dir", "overrides"}`` naming an
exported ``config.yaml`` and the overrides its ``run_verl.sh`` adds, or jobs ``{"kind", "config_dir", "config_name",
"overrides"}`` that are a run script's command as verl's ``@hydra.main`` gets it (``config_dir`` its
``--config-path``, relative to ``verl/trainer/`` as Hydra reads it: ``config`` is verl's own; ``overrides`` the words
bash passes). For each job, exactly what verl does before any GPU work, in verl's order:

1. compose: the tree as a YAML whose defaults list is ``[ppo_trainer, _self_]`` (or
   ``sft_trainer_engine``) with ``pkg://verl.trainer.config`` on the search path: what ``python -m
   verl.trainer.main_ppo --config-path=DIR --config-name=config`` composes;
2. ``verl.utils.device.auto_set_device`` (main_ppo/sft_trainer ``main``);
3. RL: ``verl.utils.config.validate_config`` with ``use_reference_policy``/``use_critic`` derived by
   ``verl.trainer.ppo.utils.need_reference_policy``/``need_critic`` (main_ppo ``main``);
4. the config dataclasses the trainer and workers build, via ``omega_conf_to_dataclass`` on the resolved
   config (``OmegaConf.resolve`` as TaskRunner.run does): RL actor, rollout, ref (when used; rewritten as
   ``ActorRolloutRefWorker.init_model`` rewrites it), critic (when used), algorithm,
   rollout.checkpoint_engine; SFT engine, optim, checkpoint, profiler (SFTTrainer
   ``_build_config``). ``model`` (HFModelConfig) is not converted: it loads the tokenizer and the HF config
   from the model path and may run remote code.

Without vLLM installed (CPU machines), verl's LoRA-rank check in ``validate_config`` cannot import
``verl.workers.rollout.vllm_rollout.utils``; the worker then loads verl's own ``get_vllm_max_lora_rank``
from that file's source (its vLLM-less fallback table) so the check still runs as verl wrote it.

A config holding a ``_target_`` that is not one of verl's own config classes stops after step 1: verl's steps
2-4 would import and call it (``omega_conf_to_dataclass``), and fsdpcfg runs no code a config names. The
opinion then says so (``not_run``) instead of verl's verdict; ``fsdpcfg check`` reports the key (FC740).

It also reports, per job, the keys verl's config does not define (verl ignores them silently) and the
required values (``???``) left unset. Imports verl (~10 s once per process).
"""

from __future__ import annotations

import ast
import contextlib
import copy
import io
import json
import os
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

import yaml

from fsdpcfg import yamlio
from fsdpcfg.verlref import flatten

CONFIGS = {"ppo": "ppo_trainer", "sft": "sft_trainer_engine"}
#: mappings verl passes on or reads with ``.get`` (keys below them are read though its YAML lists none): ray.init's
#: kwargs (verl/trainer/main_ppo.py), the reward manager's and the custom reward function's kwargs
#: (verl/experimental/reward_loop/reward_manager/dapo.py, verl/trainer/ppo/reward.py get_custom_reward_fn), nsys's
#: options (Ray's runtime_env nsight: verl/trainer/main_ppo.py, verl/trainer/ppo/ray_trainer.py)
OPEN_MAPPINGS = (
    "ray_kwargs.ray_init",
    "reward.reward_kwargs",
    "reward.custom_reward_function.reward_kwargs",
    "global_profiler.global_tool_config.nsys.controller_nsight_options",
    "global_profiler.global_tool_config.nsys.worker_nsight_options",
)


def _defaults_list(config: str) -> list[Any]:
    """verl's defaults list for the composition ``config`` (the one the export writes)."""
    from fsdpcfg.check.to_verl import verl_defaults_list

    return verl_defaults_list(config)


def _composition_of(defaults: Any, kind: str) -> str:
    """The composition an exported ``config.yaml``'s defaults list selects (the inverse of :func:`_defaults_list`)."""
    from fsdpcfg import verlref

    for name in verlref.COMPOSITIONS:
        if _defaults_list(name) == defaults:
            return name
    return CONFIGS[kind]


def _compose(config: str, tree: dict[str, Any] | None):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    doc = {"defaults": _defaults_list(config), "hydra": {"searchpath": ["pkg://verl.trainer.config"]}, **(tree or {})}
    with tempfile.TemporaryDirectory(prefix="fsdpcfg-verlcheck-") as d:
        Path(d, "config.yaml").write_text(yamlio.dump(doc))
        GlobalHydra.instance().clear()
        try:
            with initialize_config_dir(config_dir=d, version_base=None):
                return compose(config_name="config")
        finally:
            GlobalHydra.instance().clear()


_BASE: dict[str, Any] = {}


def _base(config: str):
    """verl's own config with nothing on top (composed once per process)."""
    from omegaconf import OmegaConf

    if config not in _BASE:
        cfg = _compose(config, None)
        raw = flatten(OmegaConf.to_container(cfg, resolve=False))
        open_ = OPEN_MAPPINGS + tuple(k for k, v in raw.items() if v == {})
        _BASE[config] = (raw, open_, set(OmegaConf.missing_keys(cfg)))
    return _BASE[config]


def _dataclass_field(key: str, base: dict[str, Any]) -> bool:
    """True when ``key`` is a field of the config dataclass its section names in ``_target_`` (verl's YAML
    omits some fields, e.g. ``fsdp_config.mixed_precision``; ``omega_conf_to_dataclass`` still reads them), of a
    dataclass such a field is annotated with (``actor.qat`` is a ``QATConfig``), or lies below a mapping-typed
    field."""
    import dataclasses
    import typing

    from hydra.utils import get_class

    from fsdpcfg.verlref.field_types import _kinds

    parts = key.split(".")
    for i in range(len(parts) - 1, 0, -1):
        target = base.get(".".join(parts[:i]) + "._target_")
        if not isinstance(target, str):
            continue
        try:
            cls: Any = get_class(target)
        except Exception:
            return False
        for j in range(i, len(parts)):
            try:
                hints = typing.get_type_hints(cls)
            except Exception:
                hints = {}
            f = {f.name: f for f in dataclasses.fields(cls)}.get(parts[j])
            if f is None:
                return False
            if j == len(parts) - 1:
                return True
            kinds, nested = _kinds(hints.get(f.name, f.type))
            if nested is not None and dataclasses.is_dataclass(nested):
                cls = nested
                continue
            return bool({"dict", "any"} & kinds)
        return False
    return False


def foreign_targets(tree: Any) -> list[tuple[str, Any]]:
    """``(key, value)`` of every ``_target_`` of ``tree`` (outside ``hydra``) that is not one of verl's own config
    classes (:func:`fsdpcfg.rules.config_code.verl_targets`); ``null`` targets are not code."""
    from fsdpcfg.keypath import targets
    from fsdpcfg.rules.config_code import verl_targets

    own = verl_targets()
    return [
        (k, v)
        for k, v in targets(tree)
        if k.split(".", 1)[0] != "hydra" and v is not None and not (isinstance(v, str) and v in own)
    ]


def _install_lora_rank_fallback() -> str | None:
    """Make ``from verl.workers.rollout.vllm_rollout.utils import get_vllm_max_lora_rank`` work without
    vLLM, with verl's own function from that file's source. Returns a notice, or None when not needed."""
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        return None
    import verl

    src_path = Path(verl.__file__).parent / "workers" / "rollout" / "vllm_rollout" / "utils.py"
    tree = ast.parse(src_path.read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_vllm_max_lora_rank")
    ns: dict[str, Any] = {}
    exec("from typing import Literal, get_args", ns)
    exec(compile(ast.Module(body=[fn], type_ignores=[]), str(src_path), "exec"), ns)
    pkg = types.ModuleType("verl.workers.rollout.vllm_rollout")
    pkg.__path__ = []
    mod = types.ModuleType("verl.workers.rollout.vllm_rollout.utils")
    mod.get_vllm_max_lora_rank = ns["get_vllm_max_lora_rank"]  # type: ignore[attr-defined]
    sys.modules.setdefault("verl.workers.rollout.vllm_rollout", pkg)
    sys.modules.setdefault("verl.workers.rollout.vllm_rollout.utils", mod)
    return "vllm is not installed: verl's LoRA-rank check ran from its source with its built-in rank table"


def _ref_as_worker_sees_it(cfg):
    """The ref section as ``ActorRolloutRefWorker.init_model`` (verl/workers/engine_workers.py) rewrites it
    before ``omega_conf_to_dataclass``: the actor's mini batch, the log-prob keys renamed to ppo_* keys."""
    from omegaconf import open_dict

    ref = copy.deepcopy(cfg.actor_rollout_ref.ref)
    with open_dict(ref):
        ref.ppo_mini_batch_size = cfg.actor_rollout_ref.actor.ppo_mini_batch_size
        ref.ppo_micro_batch_size = ref.pop("log_prob_micro_batch_size", None)
        ref.ppo_micro_batch_size_per_gpu = ref.pop("log_prob_micro_batch_size_per_gpu", None)
        ref.use_dynamic_bsz = ref.pop("log_prob_use_dynamic_bsz", False)
        ref.ppo_max_token_len_per_gpu = ref.pop("log_prob_max_token_len_per_gpu", None)
    return ref


def _err(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return f"{type(e).__name__}: {text}"[:1500]


def _compose_dir(config_dir: str, overrides: list[str], config_name: str = "config"):
    """Compose ``config_dir/<config_name>.yaml`` with ``overrides``, as verl's command line
    ``--config-path=config_dir --config-name=config_name OVERRIDES`` does."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=config_dir, version_base=None):
            return compose(config_name=config_name, overrides=list(overrides))
    finally:
        GlobalHydra.instance().clear()


def _verl_config_dir(config_dir: str) -> str:
    """A ``--config-path`` as ``@hydra.main(config_path="config")`` in ``verl/trainer/*.py`` reads it: a relative
    path is relative to the folder of the trainer's file (``config`` is verl's own config folder)."""
    path = Path(config_dir).expanduser()
    if path.is_absolute():
        return str(path)
    import verl

    return str((Path(verl.__file__).parent / "trainer" / path).resolve())


def _added_keys(overrides: list[str], cfg: Any) -> list[str]:
    """The leaf keys the ``+key=``/``++key=`` words of ``overrides`` put into the composed ``cfg`` (a dict value
    gives each of its leaves): the keys a command line can add that verl's config may not define."""
    from omegaconf import DictConfig, OmegaConf

    out: list[str] = []
    for word in overrides:
        if not word.startswith("+") or "=" not in word:
            continue
        key = word.lstrip("+").split("=", 1)[0]
        if key.startswith("hydra.") or "@" in key or "/" in key:
            continue
        try:
            node = OmegaConf.select(cfg, key, throw_on_missing=False)
        except Exception:
            continue
        if isinstance(node, DictConfig):
            leaves = flatten(OmegaConf.to_container(node, resolve=False))
            out += [f"{key}.{k}" for k in leaves] or [key]
        else:
            out.append(key)
    return list(dict.fromkeys(out))


def check_one(
    kind: str,
    tree: dict[str, Any] | None = None,
    config_dir: str | None = None,
    overrides: list[str] | None = None,
    composition: str | None = None,
    config_name: str | None = None,
) -> dict[str, Any]:
    """Run verl's checks on one config and return the opinion as a JSON-able dict (see module doc).

    The config is ``tree`` composed on verl's defaults (of ``composition``: ``ppo_megatron_trainer`` ...;
    default the ``kind``'s FSDP one), or (``config_dir``) an exported ``config.yaml`` composed with command-line
    ``overrides`` exactly as verl's entry point composes it, or (``config_dir`` and ``config_name``) a run script's
    command: ``--config-path=config_dir --config-name=config_name OVERRIDES`` as verl's ``@hydra.main`` composes
    it (``composition``: the verl config whose keys it is measured against)."""
    from omegaconf import OmegaConf

    config = composition or CONFIGS[kind]
    res: dict[str, Any] = {
        "accepted": True,
        "stage": None,
        "error": None,
        "ignored_keys": [],
        "missing_keys": [],
        "notices": [],
        "seconds": 0.0,
        "not_run": None,
    }
    t0 = time.perf_counter()
    if config_dir is not None and config_name is not None:  # a run script's command
        config_dir = _verl_config_dir(config_dir)
        own = Path(config_dir, f"{config_name}.yaml")
        verls = Path(_verl_config_dir("config"))
        doc = yaml.safe_load(own.read_text()) if own.is_file() and Path(config_dir) != verls else {}
        doc = doc if isinstance(doc, dict) else {}
        tree = {k: v for k, v in doc.items() if k not in ("defaults", "hydra")}
        from fsdpcfg import verlref

        config = composition or (config_name if config_name in verlref.COMPOSITIONS else CONFIGS[kind])
    elif config_dir is not None:
        doc = yaml.safe_load(Path(config_dir, "config.yaml").read_text()) or {}
        tree = {k: v for k, v in doc.items() if k not in ("defaults", "hydra")}
        config = _composition_of(doc.get("defaults"), kind)
    base_keys, open_, base_missing = _base(config)

    def ignored(keys: Any) -> list[str]:
        return [
            k
            for k in keys
            if k not in base_keys
            and not any(k == p or k.startswith(p + ".") for p in open_)
            and not _dataclass_field(k, base_keys)
        ]

    res["ignored_keys"] = ignored(flatten(tree)) if tree else []

    def fail(stage: str, e: BaseException) -> dict[str, Any]:
        res.update(accepted=False, stage=stage, error=_err(e), seconds=round(time.perf_counter() - t0, 3))
        return res

    try:
        if config_dir is not None:
            cfg = _compose_dir(config_dir, overrides or [], config_name or "config")
        else:
            cfg = _compose(config, tree)
    except Exception as e:
        return fail("compose", e)
    if config_name is not None:
        res["ignored_keys"] += [k for k in ignored(_added_keys(overrides or [], cfg)) if k not in res["ignored_keys"]]
    res["missing_keys"] = sorted(set(OmegaConf.missing_keys(cfg)) - base_missing)
    foreign = foreign_targets(OmegaConf.to_container(cfg, resolve=False))
    if foreign:  # verl's next steps would import and call it: not run here (FC740 names it)
        key, target = foreign[0]
        more = f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else ""
        res["not_run"] = (
            f"{key}={target!r}{more} is not one of verl's config classes; verl's validate_config and config "
            "classes would import and call it, and fsdpcfg runs no code a config names"
        )
        res["seconds"] = round(time.perf_counter() - t0, 3)
        return res
    stage, error, notices = verl_checks(cfg, kind)
    res["notices"] += notices
    if stage is not None:
        res.update(accepted=False, stage=stage, error=error)
    res["seconds"] = round(time.perf_counter() - t0, 3)
    return res


def verl_checks(cfg: Any, kind: str) -> tuple[str | None, str | None, list[str]]:
    """Run verl's checks after its compose on the composed ``cfg`` (steps 2-4 of the module doc; ``cfg`` is
    changed as verl changes it: ``auto_set_device``). Returns ``(stage, error, notices)``: the stage verl
    stopped at and its error (both None when verl accepts), and what it printed or changed on the way."""
    from omegaconf import OmegaConf
    from verl.utils.config import omega_conf_to_dataclass, validate_config
    from verl.utils.device import auto_set_device

    notices: list[str] = []
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            before = cfg.trainer.device
            auto_set_device(cfg)
            if cfg.trainer.device != before:
                notices.append(f"auto_set_device: trainer.device {before} -> {cfg.trainer.device}")
        except Exception as e:
            return "auto_set_device", _err(e), notices
        if kind == "ppo":
            from verl.trainer.ppo.utils import need_critic, need_reference_policy

            try:
                import warnings

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    use_ref, use_critic = bool(need_reference_policy(cfg)), bool(need_critic(cfg))
                notice = _install_lora_rank_fallback()
                lora = cfg.actor_rollout_ref.model.get("lora_rank", 0) or 0
                if notice and lora > 0 and cfg.actor_rollout_ref.rollout.name == "vllm":
                    notices.append(notice)
                validate_config(cfg, use_reference_policy=use_ref, use_critic=use_critic)
            except Exception as e:
                return "validate_config", _err(e), notices
            sections = [
                "actor_rollout_ref.actor",
                "actor_rollout_ref.rollout",
                "algorithm",
                "actor_rollout_ref.rollout.checkpoint_engine",
            ]
            if use_ref:
                sections.append("actor_rollout_ref.ref")
            if use_critic:
                sections.append("critic")
        else:
            sections = ["engine", "optim", "checkpoint", "profiler"]
        try:
            resolved = copy.deepcopy(cfg)
            OmegaConf.resolve(resolved)
        except Exception as e:
            return "resolve", _err(e), notices
        for sec in sections:
            try:
                node = OmegaConf.select(resolved, sec)
                if sec == "actor_rollout_ref.ref":
                    node = _ref_as_worker_sees_it(resolved)
                omega_conf_to_dataclass(node)
            except Exception as e:
                return f"dataclass:{sec}", _err(e), notices
    notices += [line for line in out.getvalue().splitlines() if line.startswith(("WARNING", "NOTICE"))]
    return None, None, notices


def _import_verl() -> tuple[Any, float, str | None]:
    """Import verl: ``(module or None, seconds, error or None)``."""
    t0 = time.perf_counter()
    try:
        import verl
    except ImportError as e:
        return None, time.perf_counter() - t0, f"verl is not importable: {e}"
    return verl, time.perf_counter() - t0, None


def answer(inp: Path, out: Path, verl: Any, import_s: float) -> None:
    """Read jobs from ``inp``, write one opinion per job (and verl's version, ``import_s``) to ``out``."""
    jobs = json.loads(inp.read_text())["jobs"]
    results = [
        check_one(
            j.get("kind", "ppo"),
            j.get("tree"),
            j.get("config_dir"),
            j.get("overrides"),
            j.get("composition"),
            j.get("config_name"),
        )
        for j in jobs
    ]
    out.write_text(
        json.dumps({"verl_version": verl.__version__, "import_seconds": round(import_s, 3), "results": results})
    )


def main(argv: list[str]) -> int:
    """Read jobs from ``argv[0]``, write one opinion per job to ``argv[1]``; exit 0 unless verl is missing (3).
    With ``--serve``: :func:`serve`."""
    if argv == ["--serve"]:
        return serve()
    verl, import_s, error = _import_verl()
    if error is not None:
        Path(argv[1]).write_text(json.dumps({"error": error}))
        return 3
    answer(Path(argv[0]), Path(argv[1]), verl, import_s)
    return 0


def serve() -> int:
    """Import verl once, then answer requests until stdin closes: each stdin line is ``["IN.json", "OUT.json"]``,
    answered as :func:`main` answers one (``import_seconds`` is verl's import in the first answer, 0 after) and
    acknowledged by one line on stdout once ``OUT.json`` is written. What verl and the checks print goes to stderr,
    so the acknowledgements stay alone on stdout. Without verl: the first request's ``OUT.json`` gets the error and
    the process exits 3."""
    reply = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    verl, import_s, error = _import_verl()
    for line in sys.stdin:
        inp, out = (Path(p) for p in json.loads(line))
        if error is not None:
            out.write_text(json.dumps({"error": error}))
            return 3
        answer(inp, out, verl, import_s)
        import_s = 0.0
        reply.write("done\n")
    return 3 if error is not None else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
