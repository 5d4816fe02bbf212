"""Installed from a wheel (`pip install paralab`, `pip install git+…`, the Docker image: no checkout around
it), paralab has every file it reads — the page's modules and styles, its templates, each lesson's and
problem's texts — serves and runs a lesson, and its judge's sandbox hides the wheel's reference solutions."""

from __future__ import annotations

import os
import shutil
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
    """Built from a copy of the checkout's files (tracked ones, and new ones git does not ignore): setuptools
    builds inside the source folder, and a build in the checkout's own `build/` met what another had left there
    ("File exists: build/bdist…/paralab-0.1.0.dist-info")."""
    source = tmp_path_factory.mktemp("source")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in listed:
        if name and (REPO / name).is_file():     # a tracked file deleted in the checkout is still listed
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(out), str(source)], check=True, cwd=out)
    return next(out.glob("paralab-*.whl"))


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A virtual environment with the wheel installed, and this environment's packages after it (torch…;
    paths only: their `.pth` files, this checkout's editable install among them, are not run)."""
    venv = tmp_path_factory.mktemp("venv")
    venv.chmod(0o755)   # as an installation is: the sandbox's unprivileged user reads its pyvenv.cfg
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-compile",
                    str(wheel)], check=True)
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "this-environment.pth").write_text("\n".join(p for p in sys.path if p.endswith(("site-packages", "dist-packages"))))
    return venv


@pytest.fixture(scope="module")
def installed(venv) -> Path:
    """Where the wheel put paralab: the virtual environment's site-packages."""
    return next((venv / "lib").glob("python3*/site-packages"))


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


@pytest.mark.sandbox
def test_installed_from_the_wheel_the_judge_hides_the_reference_solutions_it_carries(venv, installed, tmp_path):
    """The wheel's copy of a reference solution lies in site-packages, which the sandbox binds with the
    Python installation (as in the Docker image): learner code that reads it from there fails."""
    attack = REPO / "tests" / "problems" / "attack_import_reference.py"
    assert (installed / "workers" / "problems" / "fg_operators" / "reference.py").is_file()
    judged = subprocess.run([venv / "bin" / "python", "-m", "workers.judge", "fg_operators", str(attack)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=240)
    assert judged.returncode == 1, judged.stdout + judged.stderr
    assert "your code raised while loading" in judged.stdout
