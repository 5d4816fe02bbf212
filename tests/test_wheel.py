"""Installed from a wheel (`pip install paralab`, `pip install git+…`: no checkout around it), paralab has
every file it reads — the page's modules and styles, its templates, each lesson's and problem's texts — and
serves and runs a lesson."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests import web
from tests.conftest import REPO, LiveServer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(out), str(REPO)], check=True, cwd=out)
    return next(out.glob("paralab-*.whl"))


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """The wheel installed into a folder of its own (its dependencies are this environment's)."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target",
                    str(target), str(wheel)], check=True)
    return target


def installed_env(target: Path, **extra: str) -> dict:
    """Python finds paralab in `target` first (the checkout's editable install is found after it)."""
    return {**os.environ, "PYTHONPATH": str(target), "PARALAB_LESSONS_PATH": "", **extra}


def test_the_wheel_holds_every_file_of_the_server_and_the_ranks(wheel):
    tracked = subprocess.run(["git", "ls-files", "app", "workers"], cwd=REPO, check=True, capture_output=True,
                             text=True).stdout.split()
    assert len(tracked) > 300
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    assert [path for path in tracked if path not in in_wheel] == []


def test_installed_from_the_wheel_it_serves_the_page_and_runs_a_lesson(installed, tmp_path):
    where = subprocess.run([sys.executable, "-c", "import app, workers; print(app.__file__, workers.__file__)"],
                           cwd=tmp_path, env=installed_env(installed), check=True, capture_output=True, text=True)
    assert where.stdout.split() == [str(installed / "app" / "__init__.py"), str(installed / "workers" / "__init__.py")]

    live = LiveServer(tmp_path / "data", repo=tmp_path, env=installed_env(installed))
    (tmp_path / "data").mkdir()
    live.start()
    try:
        index = web.get(live.url + "/")
        assert index.status_code == 200 and "Tensor-parallel MLP" in index.text
        assert web.get(live.url + "/lessons/tp_mlp").status_code == 200
        for asset in ("/static/js/lesson-page.js", "/static/css/paralab.css", "/static/i18n/zh.json"):
            assert web.get(live.url + asset).status_code == 200, asset
        lesson = web.get(live.url + "/api/lessons/tp_mlp?lang=zh").json()
        assert lesson["texts"]["zh"]["title"] == "张量并行 MLP"         # from its texts.zh.json
        assert "张量并行" in lesson["explanation"]                       # from its explain.zh.md
        run = live.run("tp_mlp", 2)
        assert run["status"] == "done", run
    finally:
        live.stop()


def test_installed_from_the_wheel_it_records_in_the_users_data_folder(installed, tmp_path):
    data_dir = subprocess.run([sys.executable, "-c", "from app.settings import Settings; print(Settings().DATA_DIR)"],
                              cwd=tmp_path, env=installed_env(installed, HOME=str(tmp_path), XDG_DATA_HOME=""),
                              check=True, capture_output=True, text=True).stdout.strip()
    assert data_dir == str(tmp_path / ".local" / "share" / "paralab")
