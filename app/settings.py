"""Every setting in one place. Environment variables are the names below prefixed `PARALAB_`
(`PARALAB_PORT=9000`); the command line (`paralab --port 9000`) overrides them."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

APP_DIR = Path(__file__).resolve().parent
REPO_ROOT = APP_DIR.parent          # the checkout; site-packages when installed from a wheel
STATIC_DIR = APP_DIR / "static"     # the page: ES modules, CSS, fonts, the interface's languages
TEMPLATES_DIR = APP_DIR / "templates"


def default_data_dir() -> Path:
    """`data/` in a checkout; installed from a wheel (no checkout around it), the user's data folder."""
    if (REPO_ROOT / "pyproject.toml").is_file():
        return REPO_ROOT / "data"
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "paralab"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PARALAB_", case_sensitive=False)

    HOST: str = "127.0.0.1"
    PORT: int = Field(8000, ge=0, le=65535)
    DATA_DIR: Path = Field(default_factory=default_data_dir)
    BACKEND: Literal["auto", "gloo", "nccl"] = "auto"    # auto: NCCL when CUDA has a GPU per rank
    MAX_RANKS: int = Field(16, ge=1, le=64)
    RUN_TIME_LIMIT_S: float = Field(60.0, gt=0)           # wall-clock limit of every run
    STEP_TIME_LIMIT_S: float = Field(1800.0, gt=0)        # … of a run in step mode (a person drives it)
    HANG_TIMEOUT_S: float = Field(10.0, gt=0)             # no progress inside a collective this long: hung
    JUDGE_CONCURRENCY: int = Field(2, ge=1)               # solutions judged at once
    ALLOW_UNSANDBOXED: bool = False                       # judge learner code even without bubblewrap
    ROOM_TTL_S: float = Field(86400.0, gt=0)             # a room idle this long expires
    MAX_CONCURRENT_RUNS: int = Field(2, ge=1)             # without a cluster (with one, its free CPUs/GPUs decide)
    CLUSTER: str = ""                                     # a Ray cluster for the runs (docs/cluster.md): ray://HOST:PORT, HOST:PORT or auto
    RUNS_IN_MEMORY: int = Field(200, ge=1)               # ended runs kept in memory (the rest reload from disk)
    MAX_QUEUED_RUNS: int = Field(50, ge=0)
    LOG_LEVEL: str = "info"
    # behind a proxy that serves the pages under a path and strips it before passing requests on
    # (jupyter-server-proxy: /user/NAME/paralab); the pages' own links and requests carry it
    ROOT_PATH: str = ""
    # jobs started outside the server (docs/torchrun.md): `paralab trace -- torchrun …`
    TRACE_TOKEN: str = ""                                 # set: a job's ranks must send it; needed with AUTH=on
    EXTERNAL_IDLE_S: float = Field(600.0, gt=0)           # a job silent this long, without its goodbyes, failed
    # the hosted lab (docs/hosted-lab.md): accounts, sessions, quotas. Off: the single-user lecture mode.
    AUTH: Literal["off", "on"] = "off"
    SECRET_KEY: str = ""                                  # signs session cookies; kept in DATA_DIR if unset
    ADMIN_USER: str = "admin"
    ADMIN_PASSWORD: str = ""                              # creates (or resets) the admin account at start
    MAX_RUNS_PER_USER: int = Field(2, ge=1)               # a user's runs queued or running at once
    MAX_RANKS_PER_STUDENT: int = Field(4, ge=1)
    MAX_SUBMISSIONS_PER_USER: int = Field(5, ge=1)        # a user's submissions queued or being judged
    # argon2id's cost (argon2-cffi's profiles): LOW_MEMORY is its default; CHEAPEST is for test suites only
    PASSWORD_HASH_PROFILE: Literal["RFC_9106_LOW_MEMORY", "RFC_9106_HIGH_MEMORY", "CHEAPEST"] = "RFC_9106_LOW_MEMORY"
    SIGNIN_MAX_FAILURES: int = Field(5, ge=1)             # wrong passwords for one name within the window: 429
    SIGNIN_MAX_FAILURES_PER_ADDRESS: int = Field(20, ge=1)  # … from one client address (a classroom may share one)
    SIGNIN_WINDOW_S: float = Field(300.0, gt=0)           # the sign-in rate limit's window
    # what the server refuses (docs/hosted-lab.md, "What the server refuses")
    MAX_BODY_BYTES: int = Field(512 * 1024, ge=1024)      # a request body (or websocket message) larger: 413
    MAX_STEP_RUNS_PER_USER: int = Field(1, ge=1)          # a hosted-lab user's step-mode runs in flight
    STEP_IDLE_LIMIT_S: float = Field(300.0, gt=0)         # a step-mode run waiting this long for a person: ended
    CONTROL_RATE_PER_S: float = Field(10.0, gt=0)         # step/pause/continue per run per second (bursts of 2×)
    MAX_RANK_OUTPUT_BYTES: int = Field(8 * 1024, ge=256, le=12 * 1024)  # the tail of each rank's prints kept (an event)
    # what one run may store: a user's own script could loop a collective until its time limit
    MAX_RUN_EVENTS: int = Field(50_000, ge=100)           # a run's ranks sending more: it fails (`error.kind` `limit`)
    MAX_RUN_TENSOR_BYTES: int = Field(256 * 1024 * 1024, ge=0)  # full tensors past this are not kept (previews are)
    ALLOWED_HOSTS: str = ""                               # names (besides IPs, localhost) by which a run of one's own code may come
    TRUSTED_PROXIES: str = ""                             # addresses whose X-Forwarded-For/-Proto are believed ("*": any)
    SECURE_COOKIES: Literal["auto", "on", "off"] = "auto"  # auto: Secure when the request came over HTTPS


    @field_validator("ROOT_PATH")
    @classmethod
    def _a_path(cls, value: str) -> str:
        value = value.rstrip("/")
        if not re.fullmatch(r"(/[^/?#\s]+)*", value):
            raise ValueError(f"the root path must be a path such as /user/ada/paralab (or empty), not {value!r}")
        return value


settings = Settings()
