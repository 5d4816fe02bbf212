# The paralab server as the hosted lab (docker-compose.yml). CPU torch by default; the `gpu` profile
# builds with TORCH_INDEX=https://download.pytorch.org/whl/cu124 for NCCL; the `cluster` profile with
# PARALAB_EXTRAS="[ray]" (the server and its Ray nodes then share this image).
FROM python:3.11-slim

ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ARG PARALAB_EXTRAS=""
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    PARALAB_HOST=0.0.0.0 PARALAB_PORT=8000 PARALAB_DATA_DIR=/data

# bubblewrap: the judge's sandbox for learner code (needs seccomp/apparmor unconfined, see compose)
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
RUN pip install --no-cache-dir --index-url "$TORCH_INDEX" torch
COPY pyproject.toml README.md ./
COPY app ./app
COPY workers ./workers
RUN pip install --no-cache-dir ".${PARALAB_EXTRAS}"  && useradd --create-home --uid 1000 paralab \
    && mkdir -p /data && chown paralab /data

USER paralab
VOLUME /data
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
  CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz').status != 200)"
# Without an init (docker run without --init), the server as pid 1 reaps what is orphaned (app/as_init.py).
CMD ["python", "-m", "app", "--host", "0.0.0.0", "--port", "8000", "--data-dir", "/data"]
