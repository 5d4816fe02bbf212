"""paralab from a course's JupyterHub (issue #15, point 6): the `jupyter_serverproxy_servers` entry
point, loaded through importlib.metadata from the metadata the build backend writes (what
`pip install -e .` installs), gives a command that starts paralab on the port jupyter-server-proxy
picks; its pages, served under `<base URL>paralab` by a proxy that strips that path (as
jupyter-server-proxy does), carry the path in every link and request."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests import web
from tests.app.prefix_proxy import PrefixProxy
from tests.conftest import free_port

REPO = Path(__file__).resolve().parents[2]
BASE_URL = "/user/ada/"                  # a JupyterHub user's server, as jupyter-server-proxy's {base_url}
PREFIX = "/user/ada/paralab"
LOAD = ("import json; from importlib.metadata import entry_points; "
        "found = [e for e in entry_points(group='jupyter_serverproxy_servers') if e.name == 'paralab']; "
        "print(json.dumps(found[0].load()()))")


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> dict:
    """The entry point's server process, as jupyter-server-proxy reads it."""
    metadata = tmp_path_factory.mktemp("paralab-metadata")
    built = subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q", "egg_info",
                            "--egg-base", str(metadata)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    data = tmp_path_factory.mktemp("paralab-jupyter-data")
    loaded = subprocess.run([sys.executable, "-c", LOAD], cwd=REPO, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(metadata), "PARALAB_DATA_DIR": str(data)})
    assert loaded.returncode == 0, loaded.stderr
    return json.loads(loaded.stdout)


@pytest.fixture(scope="module")
def started(config, tmp_path_factory):
    """The command started as jupyter-server-proxy starts it: {port} and {base_url} filled in."""
    port = free_port()
    command = [part.format(port=port, base_url=BASE_URL) for part in config["command"]]
    log_path = tmp_path_factory.mktemp("paralab-jupyter-log") / "server.log"
    log = open(log_path, "wb")
    process = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + config["timeout"]
    while True:                          # jupyter-server-proxy's readiness: any HTTP answer on the port
        assert process.poll() is None, log_path.read_text()[-2000:]
        try:
            if web.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, f"not ready in {config['timeout']} s"
        time.sleep(0.2)
    yield port
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=30)
    log.close()


@pytest.mark.slow                    # the package's metadata built, a server of its own
def test_the_entry_point_describes_a_server_jupyter_server_proxy_can_start(config):
    assert config["command"][:3] == [sys.executable, "-m", "app"]
    assert "{port}" in config["command"] and "127.0.0.1" in config["command"]
    assert config["command"][config["command"].index("--root-path") + 1] == "{base_url}paralab"
    assert config["absolute_url"] is False                # the proxy strips the path; paralab is told it
    assert config["timeout"] >= 30
    assert config["launcher_entry"]["title"] == "paralab" and Path(config["launcher_entry"]["icon_path"]).is_file()
    assert "--data-dir" in config["command"]                # the student's runs, in their home


@pytest.mark.slow                    # the package's metadata built, a server of its own
def test_its_index_answers_on_the_port_with_every_link_under_the_path(started):
    page = web.get(f"http://127.0.0.1:{started}/").text
    assert f'data-root="{PREFIX}"' in page
    assert f'"paralab/": "{PREFIX}/static/js/"' in page                   # the modules' import map
    links = re.findall(r'(?:href|src)="(/[^"]*)"', page)
    assert links and all(link.startswith(PREFIX + "/") for link in links), links
    assert f'href="{PREFIX}/lessons/collectives"' in page


@pytest.mark.slow                    # the package's metadata built, a server of its own
def test_through_the_prefix_the_page_its_files_and_the_api_answer(started):
    with PrefixProxy(PREFIX, started) as proxy:
        page = web.get(proxy.url + "/")
        assert page.status_code == 200 and f'data-root="{PREFIX}"' in page.text
        origin = proxy.url[: -len(PREFIX)]
        for link in set(re.findall(r'(?:href|src)="(/[^"]*)"', page.text)):
            assert web.get(origin + link).status_code == 200, link
        assert web.get(proxy.url + "/static/js/root.js").status_code == 200
        lessons = web.get(proxy.url + "/api/lessons").json()
        assert any(lesson["id"] == "collectives" for lesson in lessons)


def test_a_sign_in_redirect_keeps_the_path(tmp_path):
    app = create_app(Settings(DATA_DIR=tmp_path, ROOT_PATH=PREFIX + "/", AUTH="on", SECRET_KEY="k"))
    answer = TestClient(app).get("/problems", follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == f"{PREFIX}/login?next=%2Fproblems"


def test_a_root_path_that_is_no_path_is_refused_by_name():
    with pytest.raises(ValueError, match="root path must be a path such as /user/ada/paralab"):
        Settings(ROOT_PATH="user ada")
