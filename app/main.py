"""Assembles the app: settings, run manager, rooms, routers, static files, templates."""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.exceptions import HTTPException as StarletteHTTPException
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from app import auth, i18n
from app.accounts import Accounts
from app.body_limit import BodyLimit
from app.cookies import SecureCookies
from app.csrf import CrossSiteGate
from app.external_runs import ExternalRuns
from app.hub import Hub
from app.local_origin import LocalOriginGate
from app.messages import http_error
from app.rooms import RoomManager
from app.root_path import RootPath, RoutedUnderRootPath
from app.routes import auth as auth_routes, export, lab, lessons, pages, problems, rooms, runs, submissions, ws
from app.routes import external, i18n as i18n_routes, progress as progress_routes, protocol as protocol_routes
from app.runs import RunManager
from app.submissions import Judge
from app.settings import STATIC_DIR, TEMPLATES_DIR, Settings, settings as default_settings
from app.signin_limit import SignInLimit
from app.validation import request_validation_error


def trusted_proxies(settings: Settings) -> list[str]:
    """PARALAB_TRUSTED_PROXIES as a list: only these may say, in X-Forwarded-For and X-Forwarded-Proto,
    who the client is and whether it came over HTTPS. Empty (the default): nobody."""
    return [host.strip() for host in settings.TRUSTED_PROXIES.split(",") if host.strip()]


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or default_settings

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await app.state.manager.start()
        await app.state.rooms.start()
        app.state.judge.start()
        yield
        await app.state.judge.stop()
        await app.state.rooms.stop()
        await app.state.manager.stop()

    app = FastAPI(title="paralab", version="1", lifespan=lifespan,
                  description="A live visual lab for distributed-training parallelism.")
    app.state.settings = settings
    if settings.ROOT_PATH:          # served under a path a proxy strips (app/root_path.py): innermost, added first
        app.add_middleware(RoutedUnderRootPath)
    app.add_exception_handler(RequestValidationError, request_validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    hub = Hub()
    app.state.manager = RunManager(settings, hub)
    app.state.external = ExternalRuns(app.state.manager, settings.EXTERNAL_IDLE_S)   # torchrun jobs
    app.state.rooms = RoomManager(settings.DATA_DIR, hub, app.state.manager, settings.ROOM_TTL_S)
    app.state.judge_slots = asyncio.Semaphore(settings.JUDGE_CONCURRENCY)
    # the hosted lab: accounts and the fair judge queue (docs/hosted-lab.md); sign-in only with PARALAB_AUTH=on
    app.state.accounts = Accounts(settings.DATA_DIR / "lab.sqlite3", settings.PASSWORD_HASH_PROFILE)
    app.state.judge = Judge(settings, app.state.accounts, app.state.judge_slots, runs=app.state.manager.store,
                            cluster=app.state.manager.cluster)
    app.state.signin_limit = SignInLimit(settings.SIGNIN_MAX_FAILURES, settings.SIGNIN_MAX_FAILURES_PER_ADDRESS,
                                         settings.SIGNIN_WINDOW_S)
    if auth.auth_on(settings):
        from starlette.middleware.sessions import SessionMiddleware
        if settings.PASSWORD_HASH_PROFILE == "CHEAPEST":
            logging.getLogger("paralab").warning("PARALAB_PASSWORD_HASH_PROFILE=CHEAPEST: passwords are hashed "
                                                 "for speed, not safety (meant for test suites only)")
        if settings.ADMIN_PASSWORD:
            app.state.accounts.ensure_admin(settings.ADMIN_USER, settings.ADMIN_PASSWORD)
        app.add_middleware(auth.AuthGate, accounts=app.state.accounts)
        app.add_middleware(SessionMiddleware, secret_key=auth.secret_key(settings), session_cookie=auth.SESSION_COOKIE,
                           max_age=14 * 24 * 3600, same_site="lax", https_only=False)
        app.add_middleware(SecureCookies, mode=settings.SECURE_COOKIES)
        app.add_middleware(CrossSiteGate, session_cookie=auth.SESSION_COOKIE)
    else:   # the single-user mode runs code as its user: no other web page may start or steer a run
        app.add_middleware(LocalOriginGate)
    # outermost, in both modes: the client's address and scheme (from a trusted proxy only), the body cap
    app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=trusted_proxies(settings))
    app.add_middleware(BodyLimit, max_bytes=settings.MAX_BODY_BYTES)
    if settings.ROOT_PATH:          # … and outermost, added last: every layer knows the path
        app.add_middleware(RootPath, root_path=settings.ROOT_PATH)
    app.state.templates = Jinja2Templates(directory=str(TEMPLATES_DIR), context_processors=[root_path, may_present])
    app.state.templates.env.globals["languages"] = i18n.switcher
    app.state.templates.env.globals["lesson_names"] = i18n.lesson_names
    app.state.templates.env.globals["accounts_on"] = auth.auth_on(settings)   # progress kept per account
    app.mount("/static", StaticFiles(directory=str(STATIC_DIR)), name="static")
    for module in (pages, lessons, runs, ws, rooms, export, problems, auth_routes, submissions, lab, protocol_routes,
                   external, progress_routes, i18n_routes):
        app.include_router(module.router)
    return app


def root_path(request) -> dict:
    """`root` in every page: the path the browser reaches this server under ("" at a site's root)."""
    return {"root": request.scope.get("root_path", "")}


def may_present(request) -> dict:
    """`may_present` in every page: whether the reader may open a lecture room (anyone in the lecture
    mode; in the hosted lab an admin: a student is not offered a button that answers 403)."""
    user = request.scope.get("paralab_user")
    return {"may_present": not auth.auth_on(request.app.state.settings) or bool(user and user.admin)}
