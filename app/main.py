"""Assembles the app: settings, run manager, rooms, routers, static files, templates."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from app.hub import Hub
from app.rooms import RoomManager
from app.routes import export, lessons, pages, problems, rooms, runs, ws
from app.runs import RunManager
from app.settings import REPO_ROOT, Settings, settings as default_settings


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or default_settings

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await app.state.manager.start()
        await app.state.rooms.start()
        yield
        await app.state.rooms.stop()
        await app.state.manager.stop()

    app = FastAPI(title="paralab", version="1", lifespan=lifespan,
                  description="A live visual lab for distributed-training parallelism.")
    app.state.settings = settings
    hub = Hub()
    app.state.manager = RunManager(settings, hub)
    app.state.rooms = RoomManager(settings.DATA_DIR, hub, app.state.manager, settings.ROOM_TTL_S)
    app.state.judge_slots = asyncio.Semaphore(settings.JUDGE_CONCURRENCY)
    app.state.templates = Jinja2Templates(directory=str(REPO_ROOT / "templates"))
    app.mount("/static", StaticFiles(directory=str(REPO_ROOT / "static")), name="static")
    for module in (pages, lessons, runs, ws, rooms, export, problems):
        app.include_router(module.router)
    return app
