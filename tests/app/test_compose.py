"""docker-compose.yml validates (`docker-compose config -q`), refuses to start without its secrets,
and holds what the hosted lab needs: auth on, the data volume, a health check, the sandbox's security
options, an init as each container's pid 1, a GPU profile with NCCL and reserved NVIDIA devices, a
cluster profile with a Ray head and worker and the server pointed at the head. Skipped where
docker-compose is missing (the Makefile's `browser` target installs Debian's package, so CI has it)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COMPOSE = shutil.which("docker-compose")
pytestmark = pytest.mark.skipif(COMPOSE is None, reason="docker-compose is not installed")
SECRETS = {"PARALAB_ADMIN_PASSWORD": "compose-test-pw", "PARALAB_SECRET_KEY": "compose-test-key"}


def compose(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PARALAB_")}
    return subprocess.run([COMPOSE, "-f", str(REPO / "docker-compose.yml"), *args], capture_output=True, text=True,
                          cwd=REPO, env={**clean, **(env or {})}, timeout=60)


def test_the_compose_file_validates():
    done = compose("config", "-q", env=SECRETS)
    assert done.returncode == 0, done.stderr
    for profile in ("gpu", "cluster"):
        done = compose("--profile", profile, "config", "-q", env=SECRETS)
        assert done.returncode == 0, (profile, done.stderr)


def test_it_refuses_to_start_without_the_secrets():
    done = compose("config", "-q")
    assert done.returncode != 0 and "PARALAB_ADMIN_PASSWORD" in done.stdout + done.stderr


def test_the_services_hold_the_hosted_lab():
    yaml = pytest.importorskip("yaml")

    done = compose("--profile", "gpu", "config", env=SECRETS)
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load(done.stdout)
    cpu, gpu = config["services"]["paralab"], config["services"]["paralab-gpu"]
    for service in (cpu, gpu):
        assert service["environment"]["PARALAB_AUTH"] == "on"
        assert service["environment"]["PARALAB_ADMIN_PASSWORD"] == "compose-test-pw"
        assert any(str(v).startswith("paralab-data:/data") or (isinstance(v, dict) and v.get("source") == "paralab-data")
                   for v in service["volumes"])
        assert "/healthz" in " ".join(service["healthcheck"]["test"])
        assert "seccomp=unconfined" in service["security_opt"]
        assert service["init"] is True          # pid 1 reaps: the server is not the container's init
    assert cpu["environment"]["PARALAB_BACKEND"] == "gloo" and "profiles" not in cpu
    assert gpu["environment"]["PARALAB_BACKEND"] == "nccl" and gpu["profiles"] == ["gpu"]
    devices = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"]
    assert "paralab-data" in config["volumes"]


def test_the_cluster_profile_holds_a_ray_head_a_worker_and_the_server_pointed_at_the_head():
    yaml = pytest.importorskip("yaml")

    done = compose("--profile", "cluster", "config", env=SECRETS)
    assert done.returncode == 0, done.stderr
    services = yaml.safe_load(done.stdout)["services"]
    server, head, worker = services["paralab-cluster"], services["ray-head"], services["ray-worker"]
    for service in (server, head, worker):
        assert service["profiles"] == ["cluster"]
        assert service["build"]["args"]["PARALAB_EXTRAS"] == "[ray]"   # Ray client: one image, the same Ray
        assert "seccomp=unconfined" in service["security_opt"]           # the judge's bubblewrap on every node
        assert service["init"] is True
    assert len({server["image"], head["image"], worker["image"]}) == 1
    for node in (head, worker):             # no paralab server on a Ray node: the image's /healthz check is off
        assert node["healthcheck"].get("disable") or node["healthcheck"]["test"] == ["NONE"]
    head_command = " ".join(head["command"])
    assert head_command.startswith("ray start --head") and "--block" in head_command
    assert "--ray-client-server-port=10001" in head_command and "--port=6379" in head_command
    worker_command = " ".join(worker["command"])
    assert worker_command.startswith("ray start") and "--address=ray-head:6379" in worker_command
    assert "ray-head" in worker["depends_on"] and "ray-head" in server["depends_on"]
    assert server["environment"]["PARALAB_CLUSTER"] == "ray://ray-head:10001"
    assert server["environment"]["PARALAB_AUTH"] == "on" and "/healthz" in " ".join(server["healthcheck"]["test"])


def test_the_dockerfile_installs_the_extras_it_is_given():
    dockerfile = (REPO / "Dockerfile").read_text()
    assert 'ARG PARALAB_EXTRAS=""' in dockerfile and 'pip install --no-cache-dir ".${PARALAB_EXTRAS}"' in dockerfile
