"""httpx's one-call functions (`web.get(url)`, `web.post(url, json=…)`, …) for talking to the suite's
own servers, without a new TLS context for each call.

`web.get()` and its kin build a client per call, and each client loads the CA bundle into a fresh
TLS context: about 50 ms of CPU, against 3 ms for the rest of a call here. The suite polls its
servers every 50–100 ms, so its polling loops alone kept one of two cores busy. Every server the suite
talks to is plain http on 127.0.0.1; the context is made once and shared."""

from __future__ import annotations

import functools
import ssl

import httpx

TLS = ssl.create_default_context()


def _with_shared_tls(call):
    @functools.wraps(call)
    def wrapped(*args, **kwargs):
        kwargs.setdefault("verify", TLS)
        return call(*args, **kwargs)
    return wrapped


get, post, put, patch, delete, request, stream = map(
    _with_shared_tls, (httpx.get, httpx.post, httpx.put, httpx.patch, httpx.delete, httpx.request, httpx.stream))
