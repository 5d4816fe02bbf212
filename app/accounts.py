"""Accounts of the hosted lab, in SQLite (stdlib sqlite3) at DATA_DIR/lab.sqlite3: users, classes with
their sign-up codes, and every submission with its verdict. Passwords are hashed with argon2-cffi.

One connection, guarded by a lock: requests, the judge's threads and the admin page all go through
it, and SQLite in WAL mode keeps a backup (`sqlite3 lab.sqlite3 .backup`) safe while it serves.
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from argon2 import PasswordHasher, profiles
from argon2.exceptions import InvalidHashError, VerificationError
from app.messages import Message, say

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
MIN_PASSWORD = 8

SCHEMA = """
CREATE TABLE IF NOT EXISTS classes (
    name TEXT PRIMARY KEY,
    code TEXT UNIQUE NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS users (
    name TEXT PRIMARY KEY,
    password_hash TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('admin', 'student')),
    class TEXT REFERENCES classes(name),
    created_at REAL NOT NULL,
    session_epoch INTEGER NOT NULL DEFAULT 0,  -- raised at each password change and sign-out: older sessions end
    uid TEXT                                   -- random, never reused: a session names it, not only the name
);
CREATE TABLE IF NOT EXISTS submissions (
    id TEXT PRIMARY KEY,
    user TEXT NOT NULL,
    problem TEXT NOT NULL,
    code TEXT NOT NULL,
    status TEXT NOT NULL,            -- queued, judging, passed, failed, refused, cancelled
    checks TEXT NOT NULL DEFAULT '[]',
    reason TEXT,
    note TEXT,                       -- what else the judge says: e.g. how much of a flood of output was dropped
    created_at REAL NOT NULL,
    started INTEGER,                 -- the order the judge took it in (1, 2, 3, …)
    finished_at REAL
);
CREATE INDEX IF NOT EXISTS submissions_user ON submissions(user, created_at);
CREATE TABLE IF NOT EXISTS progress (
    user TEXT PRIMARY KEY,
    lessons TEXT NOT NULL,           -- JSON: lesson id -> {"ran", "answered", "questions"} (see merge_progress)
    updated_at REAL NOT NULL
);
"""


class AccountError(ValueError):
    """Bad input: a name taken or malformed, a short password, an unknown class or code."""

    def __init__(self, message: Message):
        super().__init__(message.text)
        self.message = message


@dataclass(frozen=True)
class User:
    name: str
    role: str
    klass: str | None
    session_epoch: int = 0      # a session signed in under an older one has ended (the password changed)
    uid: str = ""               # this account's own id: a later account of the same name has another

    @property
    def admin(self) -> bool:
        return self.role == "admin"

    def public(self) -> dict:
        return {"name": self.name, "role": self.role, "class": self.klass}


class Accounts:
    def __init__(self, path: Path, hash_profile: str = "RFC_9106_LOW_MEMORY"):
        """`hash_profile`: one of argon2-cffi's parameter profiles (Settings.PASSWORD_HASH_PROFILE)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._lock = threading.Lock()
        self._hasher = PasswordHasher.from_parameters(getattr(profiles, hash_profile))
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(SCHEMA)
            self._add_session_epoch()
            self._add_uid()
            self._add_note()
            # the judge was cut off by a restart: those submissions will never finish
            self._db.execute("UPDATE submissions SET status='refused', reason='the server restarted before it was judged; submit again', "
                             "finished_at=? WHERE status IN ('queued', 'judging')", (time.time(),))

    def _add_session_epoch(self) -> None:
        """A database from before password changes lacks users.session_epoch (called under the lock)."""
        columns = {row["name"] for row in self._db.execute("PRAGMA table_info(users)")}
        if "session_epoch" not in columns:
            self._db.execute("ALTER TABLE users ADD COLUMN session_epoch INTEGER NOT NULL DEFAULT 0")

    def _add_note(self) -> None:
        """A database from before the judge's notes lacks submissions.note (called under the lock)."""
        columns = {row["name"] for row in self._db.execute("PRAGMA table_info(submissions)")}
        if "note" not in columns:
            self._db.execute("ALTER TABLE submissions ADD COLUMN note TEXT")

    def _add_uid(self) -> None:
        """A database from before user ids lacks users.uid: each existing user gets one (under the lock)."""
        columns = {row["name"] for row in self._db.execute("PRAGMA table_info(users)")}
        if "uid" not in columns:
            self._db.execute("ALTER TABLE users ADD COLUMN uid TEXT")
        for row in self._db.execute("SELECT name FROM users WHERE uid IS NULL").fetchall():
            self._db.execute("UPDATE users SET uid=? WHERE name=?", (_new_uid(), row["name"]))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _q(self, sql: str, args=()) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _change(self, sql: str, args=()) -> int:
        """Run an UPDATE or DELETE; how many rows it changed."""
        with self._lock:
            return self._db.execute(sql, args).rowcount

    # ---- users --------------------------------------------------------------------------------
    def create_user(self, name: str, password: str, role: str = "student", klass: str | None = None) -> User:
        if not NAME.match(name or ""):
            raise AccountError(say("account.bad_name", "a name is 1–64 letters, digits, or . _ @ -, starting with a letter or digit"))
        _check_password(password)
        if role not in ("admin", "student"):
            raise AccountError(say("account.bad_role", "role is admin or student"))
        if klass is not None and not self._q("SELECT 1 FROM classes WHERE name=?", (klass,)):
            raise AccountError(say("account.no_class", "no class '{name}'", name=klass))
        try:
            uid = _new_uid()
            self._q("INSERT INTO users (name, password_hash, role, class, created_at, uid) VALUES (?, ?, ?, ?, ?, ?)",
                    (name, self._hasher.hash(password), role, klass, time.time(), uid))
        except sqlite3.IntegrityError:
            raise AccountError(say("account.name_taken", "the name '{name}' is taken", name=name)) from None
        return User(name, role, klass, 0, uid)

    def set_password(self, name: str, password: str) -> None:
        """Store a new hash of the same password (argon2's parameters changed); sessions go on."""
        _check_password(password)
        self._q("UPDATE users SET password_hash=? WHERE name=?", (self._hasher.hash(password), name))

    def change_password(self, name: str, password: str) -> int:
        """A new password: every session signed in with the old one ends. Returns the new session
        epoch, for the session that made the change to go on with."""
        _check_password(password)
        rows = self._q("UPDATE users SET password_hash=?, session_epoch=session_epoch+1 WHERE name=? "
                       "RETURNING session_epoch", (self._hasher.hash(password), name))
        if not rows:
            raise AccountError(say("account.no_user", "no user '{name}'", name=name))
        return rows[0]["session_epoch"]

    def end_sessions(self, name: str) -> None:
        """Sign the user out everywhere: every session cookie issued so far stops working."""
        self._q("UPDATE users SET session_epoch=session_epoch+1 WHERE name=?", (name,))

    def delete_user(self, name: str) -> int:
        """Delete an account, every submission and its progress; how many submissions went with it."""
        with self._lock:
            with self._db:          # one transaction (the connection otherwise commits each statement)
                self._db.execute("BEGIN")
                gone = self._db.execute("DELETE FROM submissions WHERE user=?", (name,)).rowcount
                self._db.execute("DELETE FROM progress WHERE user=?", (name,))
                self._db.execute("DELETE FROM users WHERE name=?", (name,))
        return gone

    def ensure_admin(self, name: str, password: str) -> None:
        """The admin from the environment: created at the first start, its password kept in step (a
        changed one ends the admin's sessions; the same one leaves them be)."""
        if self.user(name) is None:
            self.create_user(name, password, "admin")
            return
        self._q("UPDATE users SET role='admin' WHERE name=?", (name,))
        if self.authenticate(name, password) is None:
            self.change_password(name, password)

    def user(self, name: str) -> User | None:
        rows = self._q("SELECT * FROM users WHERE name=?", (name,))
        return _user(rows[0]) if rows else None

    def users(self) -> list[dict]:
        return [{"name": r["name"], "role": r["role"], "class": r["class"], "created_at": r["created_at"]}
                for r in self._q("SELECT * FROM users ORDER BY name")]

    def authenticate(self, name: str, password: str) -> User | None:
        rows = self._q("SELECT * FROM users WHERE name=?", (name,))
        if not rows:
            self._hasher.hash(password or "x")      # the same time whether or not the name exists
            return None
        row = rows[0]
        try:
            self._hasher.verify(row["password_hash"], password or "")
        except (VerificationError, InvalidHashError):
            return None
        if self._hasher.check_needs_rehash(row["password_hash"]):
            self.set_password(name, password)
        return _user(row)

    # ---- classes ------------------------------------------------------------------------------
    def create_class(self, name: str) -> dict:
        if not NAME.match(name or ""):
            raise AccountError(say("account.bad_class_name", "a class name is 1–64 letters, digits, or . _ @ -"))
        code = "-".join(secrets.token_hex(2).upper() for _ in range(3))
        try:
            self._q("INSERT INTO classes VALUES (?, ?, ?)", (name, code, time.time()))
        except sqlite3.IntegrityError:
            raise AccountError(say("account.class_exists", "the class '{name}' exists", name=name)) from None
        return {"name": name, "code": code}

    def classes(self) -> list[dict]:
        return [{"name": r["name"], "code": r["code"],
                 "students": self._q("SELECT COUNT(*) AS n FROM users WHERE class=? AND role='student'", (r["name"],))[0]["n"]}
                for r in self._q("SELECT * FROM classes ORDER BY name")]

    def sign_up(self, code: str, name: str, password: str) -> User:
        typed = re.sub(r"[^0-9A-F]", "", (code or "").upper())   # as typed: case and dashes do not matter
        rows = [r for r in self._q("SELECT name, code FROM classes") if r["code"].replace("-", "") == typed and typed]
        if not rows:
            raise AccountError(say("account.no_signup_code", "no class has that sign-up code"))
        return self.create_user(name, password, "student", rows[0]["name"])

    # ---- submissions ----------------------------------------------------------------------------
    def progress(self, user: str) -> dict:
        """A learner's progress through the course: lesson id -> {ran, answered, questions}."""
        rows = self._q("SELECT lessons FROM progress WHERE user = ?", (user,))
        return json.loads(rows[0]["lessons"]) if rows else {}

    def merge_progress(self, user: str, lessons: dict) -> dict:
        """Add what another browser saw to what is kept (progress only grows: a run seen stays seen, an
        answered question stays answered), under the lock so two browsers' saves both count."""
        with self._lock:
            rows = self._db.execute("SELECT lessons FROM progress WHERE user = ?", (user,)).fetchall()
            kept = json.loads(rows[0]["lessons"]) if rows else {}
            for lesson, seen in lessons.items():
                kept[lesson] = merge_lesson_progress(kept.get(lesson), seen)
            self._db.execute("INSERT INTO progress (user, lessons, updated_at) VALUES (?, ?, ?) "
                             "ON CONFLICT(user) DO UPDATE SET lessons = excluded.lessons, updated_at = excluded.updated_at",
                             (user, json.dumps(kept, sort_keys=True), time.time()))
            return kept

    def add_submission(self, user: str, problem: str, code: str) -> str:
        sid = secrets.token_hex(6)
        self._q("INSERT INTO submissions (id, user, problem, code, status, created_at) VALUES (?, ?, ?, ?, 'queued', ?)",
                (sid, user, problem, code, time.time()))
        return sid

    def mark_judging(self, sid: str, started: int) -> None:
        self._q("UPDATE submissions SET status='judging', started=? WHERE id=?", (started, sid))

    def finish_submission(self, sid: str, status: str, checks: list, reason: str | None,
                          note: str | None = None) -> bool:
        """Give a submission its verdict, unless it has one already (cancelled first): whether it took."""
        return 1 == self._change("UPDATE submissions SET status=?, checks=?, reason=?, note=?, finished_at=? "
                                 "WHERE id=? AND status IN ('queued', 'judging')",
                                 (status, json.dumps(checks), reason, note, time.time(), sid))

    def max_started(self) -> int:
        return self._q("SELECT COALESCE(MAX(started), 0) AS n FROM submissions")[0]["n"]

    def submission(self, sid: str) -> dict | None:
        rows = self._q("SELECT * FROM submissions WHERE id=?", (sid,))
        return _submission(rows[0]) if rows else None

    def submissions(self, user: str | None = None, problem: str | None = None, limit: int = 50,
                    statuses: tuple[str, ...] | None = None) -> list[dict]:
        sql, args = "SELECT * FROM submissions WHERE 1=1", []
        if user is not None:
            sql += " AND user=?"; args.append(user)
        if problem is not None:
            sql += " AND problem=?"; args.append(problem)
        if statuses:
            sql += f" AND status IN ({','.join('?' * len(statuses))})"; args += statuses
        sql += " ORDER BY created_at DESC LIMIT ?"; args.append(limit)
        return [_submission(r) for r in self._q(sql, args)]

    def results(self, klass: str | None = None) -> list[dict]:
        """Per student and problem: attempts, whether and when it first passed, the last verdict."""
        sql = """SELECT u.name AS user, u.class AS class, s.problem AS problem, COUNT(s.id) AS attempts,
                        MAX(s.status = 'passed') AS passed,
                        MIN(CASE WHEN s.status = 'passed' THEN s.finished_at END) AS first_passed_at,
                        (SELECT status FROM submissions l WHERE l.user = u.name AND l.problem = s.problem
                          ORDER BY l.created_at DESC LIMIT 1) AS last_status
                 FROM users u JOIN submissions s ON s.user = u.name
                 WHERE s.status NOT IN ('queued', 'judging', 'cancelled')"""
        args: list = []
        if klass is not None:
            sql += " AND u.class = ?"; args.append(klass)
        sql += " GROUP BY u.name, s.problem ORDER BY u.class, u.name, s.problem"
        return [dict(r) for r in self._q(sql, args)]


def merge_lesson_progress(kept: dict | None, seen: dict) -> dict:
    kept = kept or {"ran": False, "answered": [], "questions": 0}
    return {"ran": bool(kept["ran"] or seen["ran"]), "answered": sorted(set(kept["answered"]) | set(seen["answered"])),
            "questions": max(kept["questions"], seen["questions"])}


def _check_password(password: str) -> None:
    """The one rule for a password, at sign-up, creation and every change."""
    if len(password or "") < MIN_PASSWORD:
        raise AccountError(say("account.short_password", "a password has at least {min} characters", min=MIN_PASSWORD))


def _user(row: sqlite3.Row) -> User:
    return User(row["name"], row["role"], row["class"], row["session_epoch"], row["uid"])


def _new_uid() -> str:
    return secrets.token_hex(16)


def _submission(row: sqlite3.Row) -> dict:
    out = dict(row)
    out["checks"] = json.loads(out["checks"] or "[]")
    return out
