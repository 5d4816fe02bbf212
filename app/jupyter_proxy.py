"""paralab from a course's JupyterHub: the `jupyter_serverproxy_servers` entry point (pyproject.toml)
that jupyter-server-proxy reads to start paralab beside a student's Jupyter server and proxy it, with
a launcher tile, at `<the server's base URL>paralab/` (docs/hosted-lab.md, docs/cluster.md).

jupyter-server-proxy strips `<base URL>paralab` from each request before passing it on
(`absolute_url: False`), so paralab routes as at a site's root; it is told that path
(`--root-path`, PARALAB_ROOT_PATH) so that its pages' links and requests carry it. The student's own
server is the user: the single-user mode (no accounts), on 127.0.0.1 only. A course's cluster
reaches it through the environment Jupyter passes on (PARALAB_CLUSTER, RAY_ADDRESS).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from app.settings import STATIC_DIR

__all__ = ["setup_paralab"]

NAME = "paralab"                                     # the entry point's name: the path under the base URL
ICON = STATIC_DIR / "img" / "paralab.svg"
START_TIMEOUT_S = 60                                 # a first start on a busy node imports FastAPI and more


def setup_paralab() -> dict:
    """The server process jupyter-server-proxy starts: `{port}` and `{base_url}` are its own to fill."""
    return {
        "command": [sys.executable, "-m", "app", "--host", "127.0.0.1", "--port", "{port}",
                    "--root-path", "{base_url}" + NAME, "--data-dir", str(data_dir())],
        "timeout": START_TIMEOUT_S,
        "absolute_url": False,
        "new_browser_tab": True,           # a lecture's page wants the whole window (and its keys)
        "launcher_entry": {"title": "paralab", "icon_path": str(ICON), "category": "Notebook"},
    }


def data_dir() -> Path:
    """Where the student's runs are recorded: PARALAB_DATA_DIR, else ~/.local/share/paralab."""
    return Path(os.environ.get("PARALAB_DATA_DIR") or Path.home() / ".local" / "share" / "paralab")
