"""``fsdpcfg plot``: the curves drawn are the rows of each run's ``metrics.jsonl``, the PNG is written whole or not
at all, and every bad input is a usage message (fsdpcfg/runinfo/plot.py, fsdpcfg/cli/plot.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsdpcfg.cli.main import main
from fsdpcfg.paths import OWNED_MARK
from fsdpcfg.runinfo.plot import draw, read_curves

pytest.importorskip("matplotlib")

VAL = "val-core/openai/gsm8k/reward/mean@1"


def _run(folder: Path, steps: int, slope: float, *, val_every: int = 5) -> Path:
    """A run folder as the native loop leaves it: its mark and one metrics row per step, in verl's names."""
    folder.mkdir(parents=True)
    (folder / OWNED_MARK).write_text("")
    rows = []
    for s in range(1, steps + 1):
        row = {
            "step": s,
            "critic/rewards/mean": slope * s,
            "critic/rewards/max": 1.0,
            "response_length/mean": 30.0 - s,
            "actor/entropy": 2.5 - 0.1 * s,
            "actor/grad_norm": 0.5 * s,
            "timing_s/step": 4.0 + s % 2,
        }
        if s % val_every == 0:
            row |= {VAL: slope * s / 2, "val-aux/openai/gsm8k/reward/std@1": 0.1}
        rows.append(json.dumps(row))
    rows.insert(2, '{"step": 2, "critic/rewards/mean": 99')  # a half-written line (a killed run): skipped
    (folder / "metrics.jsonl").write_text("\n".join(rows) + "\n")
    return folder


def _lines(fig) -> dict[str, dict[str, tuple[list, list]]]:
    return {
        ax.get_title(): {ln.get_label(): (list(ln.get_xdata()), list(ln.get_ydata())) for ln in ax.get_lines()}
        for ax in fig.axes
        if ax.get_visible()
    }


def test_each_panel_draws_each_runs_rows(tmp_path):
    a, b = _run(tmp_path / "seed1" / "arith", 10, 0.05), _run(tmp_path / "seed2" / "arith", 6, 0.1, val_every=3)
    fig, titles = draw(read_curves([a, b]))
    assert titles == [
        "training reward",
        "validation",
        "response length (tokens)",
        "entropy",
        "grad norm",
        "step time (s)",
    ]  # no SFT loss panel: neither run has train/loss
    lines = _lines(fig)
    assert lines["training reward"] == {
        "seed1/arith": (list(range(1, 11)), [pytest.approx(0.05 * s) for s in range(1, 11)]),
        "seed2/arith": (list(range(1, 7)), [pytest.approx(0.1 * s) for s in range(1, 7)]),
    }
    val = lines[f"validation ({VAL})"]  # the std row is not a curve of its own
    assert val == {
        "seed1/arith": ([5, 10], [pytest.approx(0.125), pytest.approx(0.25)]),
        "seed2/arith": ([3, 6], [pytest.approx(0.15), pytest.approx(0.3)]),
    }
    assert lines["grad norm"]["seed2/arith"] == ([1, 2, 3, 4, 5, 6], [0.5, 1.0, 1.5, 2.0, 2.5, 3.0])


def test_one_run_gets_its_picture_in_its_folder_several_runs_and_a_sweep_need_one_file(tmp_path, monkeypatch, capsys):
    import matplotlib.image

    monkeypatch.chdir(tmp_path)
    a = _run(tmp_path / "runs" / "a", 5, 0.2)
    assert main(["plot", str(a)]) == 0
    png = matplotlib.image.imread(a / "curves.png")
    assert png.shape == (960, 1200, 4)  # 3 rows x 2 columns of 6 x 3.2 inches at 100 dpi
    assert f"wrote {a / 'curves.png'}: training reward, validation" in capsys.readouterr().out
    b = _run(tmp_path / "runs" / "b", 3, 0.1)
    assert main(["plot", str(a), str(b)]) == 0 and (tmp_path / "curves.png").is_file()
    sweep = tmp_path / "multirun"
    sweep.mkdir()
    points = [{"point": 0, "run_dir": str(a)}, {"point": 1, "run_dir": "1"}, {"point": 2, "run_dir": None}]
    (sweep / "sweep_summary.json").write_text(json.dumps({"points": points}))
    _run(sweep / "1", 5, 0.3)  # a relative run_dir is the sweep folder's; a point never started has none
    assert main(["plot", str(sweep), "-o", str(tmp_path / "sweep.png")]) == 0
    out = capsys.readouterr().out
    assert "runs: runs/a (to step 5), multirun/1 (to step 5)" in out  # a job folder's number alone tells little
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curves.png", "multirun", "runs", "sweep.png"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["nowhere"], "nowhere: no such folder"),
        (["empty"], "empty holds no metrics.jsonl"),
        (["torn"], "torn/metrics.jsonl has no row of a step yet"),
        (["run", "-o", "x.jpg"], "-o x.jpg: the picture is a PNG"),
        (["run", "-o", "run"], "-o run is a folder"),
        (["mine"], "mine holds files fsdpcfg did not write, so the picture is not written into it"),
    ],
)
def test_bad_input_is_a_usage_message_and_nothing_is_written(tmp_path, monkeypatch, capsys, args, words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "torn").mkdir()
    (tmp_path / "torn" / "metrics.jsonl").write_text('{"step": 1, "critic/rew')
    _run(tmp_path / "run", 3, 0.1)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "metrics.jsonl").write_text('{"step": 1, "loss": 0.5}\n')  # another tool's rows
    (mine / "config.yaml").write_text("lr: 0.1\n")
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert main(["plot", *args]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and "\n  -> " in err
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before


def test_a_failed_render_leaves_no_picture_and_no_temporary_file(tmp_path, monkeypatch):
    import matplotlib.figure

    run = _run(tmp_path / "run", 3, 0.1)

    def broken(self, *a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", broken)
    assert main(["plot", str(run)]) == 1
    assert sorted(p.name for p in run.iterdir()) == [OWNED_MARK, "metrics.jsonl"]


def test_a_users_picture_is_never_replaced_and_extreme_rows_are_left_out(tmp_path, monkeypatch, capsys):
    """Break-it pass: ``plot r1 r2`` replaced a user's ``./curves.png``; a 400-digit integer, a diverged run's
    +-1e308 and JSON nested past the stack tracebacked. A picture fsdpcfg drew in a run folder it made is redrawn."""
    monkeypatch.chdir(tmp_path)
    a, b = _run(tmp_path / "a", 3, 0.1), _run(tmp_path / "b", 3, 0.2)
    (tmp_path / "curves.png").write_text("MY PICTURE")
    assert main(["plot", str(a), str(b)]) == 2
    assert "curves.png exists and is not replaced" in capsys.readouterr().err
    assert (tmp_path / "curves.png").read_text() == "MY PICTURE"
    assert main(["plot", str(a)]) == 0 and main(["plot", str(a)]) == 0  # its own picture, drawn again
    with open(a / "metrics.jsonl", "a") as fh:
        fh.write(json.dumps({"step": 4, "critic/rewards/mean": 10**400}) + "\n")
        fh.write(json.dumps({"step": 5, "critic/rewards/mean": 1e308, "actor/grad_norm": -1e308}) + "\n")
        fh.write('{"step": 6, "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    fig, _ = draw(read_curves([a]))
    assert _lines(fig)["training reward"]["a"][0] == [1, 2, 3]  # the rows off the scale are left out
    assert main(["plot", str(a)]) == 0
