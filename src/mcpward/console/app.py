"""The console's ASGI application: routes, admin authentication, CSRF checks and page rendering.

Reads go through `console.queries`, state changes through `console.actions`; nothing here touches
SQLite directly. Pages are server-rendered (Jinja2, autoescaped); the only script is static.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from mcpward.console import queries
from mcpward.console.actions import ActionRefused, review_hold, validate_hold
from mcpward.console.auth import SESSION_COOKIE, AdminAuth, ConsoleSession
from mcpward.console.security import ASGIApp, Receive, Scope, SecurityHeaders, Send
from mcpward.contracts.store import PinStore, PinStoreError
from mcpward.evidence.reviews import MAX_OPERATOR, ReviewAction
from mcpward.evidence.settings import EvidencePaths
from mcpward.evidence.source import LedgerSource
from mcpward.store.factory import StoreContext, open_pin_store, sqlite_context
from mcpward.store.pins_sqlite import DB_NAME

HERE = Path(__file__).parent
MAX_FORM_BYTES = 16 * 1024
LOGIN_COOKIE = "mcpward_console_login"
LOGIN_FAILURES_PER_MINUTE = 20
OPERATOR_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@-")
RESULTS = {
    "accepted": "Accepted and re-pinned.",
    "kept": "Kept held; the decision is recorded.",
    "CLEARED": "Validation: CLEARED. Released for the running gateway only; re-pin stays yours.",
    "FAILED": "Validation: FAILED. The hold stays; the evidence is added to it.",
    "UNAVAILABLE": "Validation: UNAVAILABLE. Nothing could be concluded; the hold stays.",
}

RequestProblem = Callable[[Iterable[tuple[bytes, bytes]]], str | None]


class FormTooLarge(Exception):
    pass


@dataclass(frozen=True, slots=True)
class ConsoleSettings:
    state_dir: Path
    evidence: EvidencePaths
    auth: AdminAuth
    request_problem: RequestProblem | None = None  # Host/Origin check when served standalone
    store: StoreContext | None = None  # the configured store (None: the state dir's SQLite)


async def _form(request: Request) -> dict[str, str]:
    """An urlencoded form, at most MAX_FORM_BYTES; the last value of a repeated field is ignored."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise FormTooLarge
    try:
        parsed = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=32)
    except (UnicodeDecodeError, ValueError):
        return {}
    return {k: v[0] for k, v in parsed.items()}


async def _bounded_form(request: Request) -> dict[str, str] | Response:
    """The request's form, or a 413 when it is larger than MAX_FORM_BYTES."""
    try:
        return await _form(request)
    except FormTooLarge:
        return PlainTextResponse("form too large", status_code=413)


def _operator(value: str | None) -> str | None:
    name = (value or "").strip()
    if not name:
        return "admin"
    if len(name) > MAX_OPERATOR or not set(name) <= OPERATOR_CHARS:
        return None
    return name


class Console:
    """Holds the settings and renders; one instance per served console."""

    def __init__(self, settings: ConsoleSettings) -> None:
        self.settings = settings
        self.auth = settings.auth
        self.templates = Jinja2Templates(directory=str(HERE / "templates"))
        self.templates.env.filters["plain"] = queries.plain_value
        self._failures: deque[float] = deque()

    # -- plumbing ----------------------------------------------------------------------------

    @property
    def ledger_source(self) -> LedgerSource:
        return LedgerSource(self.settings.evidence, self.settings.store)

    @contextmanager
    def _store(self) -> Iterator[PinStore | None]:
        context = self.settings.store or sqlite_context(self.settings.state_dir)
        if not context.postgres and not (context.state_dir / DB_NAME).exists():
            yield None
            return
        store = open_pin_store(context, listen=False)
        try:
            yield store
        finally:
            store.close()

    def session(self, request: Request) -> ConsoleSession | None:
        authorization = request.headers.get("authorization")
        if authorization is not None:
            # a script: the admin token itself; a client (MCP) token never matches it
            if self.auth.bearer_matches(authorization):
                return ConsoleSession("bearer", "admin-bearer", float("inf"))
            return None
        return self.auth.read_session(request.cookies.get(SESSION_COOKIE))

    @staticmethod
    def base(request: Request) -> str:
        return str(request.scope.get("root_path", "")).rstrip("/")

    def render(
        self,
        request: Request,
        template: str,
        session: ConsoleSession | None,
        status: int = 200,
        **context: Any,
    ) -> Response:
        cookie_session = session is not None and session.session_id != "bearer"
        context.update(
            base=self.base(request),
            operator=session.operator if session else None,
            csrf=self.auth.csrf_token(session) if session and cookie_session else "",
        )
        return self.templates.TemplateResponse(request, template, context, status_code=status)

    def _denied(self, request: Request) -> Response:
        if request.method == "GET" and "authorization" not in request.headers:
            return RedirectResponse(f"{self.base(request)}/login", status_code=303)
        return PlainTextResponse(
            "admin credential required", status_code=401, headers={"www-authenticate": "Bearer"}
        )

    async def _checked_form(
        self, request: Request
    ) -> tuple[ConsoleSession, dict[str, str]] | Response:
        """The signed-in session and its CSRF-checked form, or the response refusing them."""
        session = self.session(request)
        if session is None:
            return self._denied(request)
        form = await _bounded_form(request)
        if isinstance(form, Response):
            return form
        if not self._csrf_ok(session, form):
            return PlainTextResponse("CSRF token missing or wrong", status_code=403)
        return session, form

    def _csrf_ok(self, session: ConsoleSession, form: dict[str, str]) -> bool:
        if session.session_id == "bearer":
            return True  # a bearer header is not ambient: a cross-site page cannot send it
        return self.auth.csrf_matches(session, form.get("csrf"))

    def _cookie_kwargs(self, request: Request) -> dict[str, Any]:
        return {
            "httponly": True,
            "samesite": "strict",
            "secure": request.url.scheme == "https",
            "path": self.base(request) or "/",
        }

    def _too_many_failures(self) -> bool:
        now = time.monotonic()
        while self._failures and now - self._failures[0] > 60:
            self._failures.popleft()
        return len(self._failures) >= LOGIN_FAILURES_PER_MINUTE

    # -- login -------------------------------------------------------------------------------

    async def login_page(self, request: Request) -> Response:
        return self._login_form(request, None, 200)

    def _login_form(self, request: Request, error: str | None, status: int) -> Response:
        nonce = self.auth.new_session("login")
        response = self.render(request, "login.html", None, status, error=error, nonce=nonce)
        response.set_cookie(LOGIN_COOKIE, nonce, max_age=600, **self._cookie_kwargs(request))
        return response

    async def login(self, request: Request) -> Response:
        if self._too_many_failures():
            return PlainTextResponse("too many failed logins; wait a minute", status_code=429)
        form = await _bounded_form(request)
        if isinstance(form, Response):
            return form
        cookie_nonce = request.cookies.get(LOGIN_COOKIE)
        nonce = self.auth.read_session(cookie_nonce)
        if nonce is None or form.get("nonce") != cookie_nonce:
            return self._login_form(request, "The login form expired; try again.", 400)
        operator = _operator(form.get("operator"))
        if operator is None:
            return self._login_form(request, "Your name: letters, digits and . _ @ - only.", 400)
        if not self.auth.token_matches(form.get("token")):
            self._failures.append(time.monotonic())
            return self._login_form(request, "That is not the admin token.", 401)
        response = RedirectResponse(f"{self.base(request)}/holds", status_code=303)
        response.set_cookie(
            SESSION_COOKIE,
            self.auth.new_session(operator),
            max_age=int(self.auth.ttl_s),
            **self._cookie_kwargs(request),
        )
        response.delete_cookie(LOGIN_COOKIE, path=self.base(request) or "/")
        return response

    async def logout(self, request: Request) -> Response:
        checked = await self._checked_form(request)
        if isinstance(checked, Response):
            return checked
        response = RedirectResponse(f"{self.base(request)}/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path=self.base(request) or "/")
        return response

    # -- pages -------------------------------------------------------------------------------

    async def holds(self, request: Request) -> Response:
        session = self.session(request)
        if session is None:
            return self._denied(request)
        result = RESULTS.get(request.query_params.get("result", ""))
        return await self._holds_page(request, session, result=result)

    async def _holds_page(
        self,
        request: Request,
        session: ConsoleSession,
        status: int = 200,
        result: str | None = None,
        error: str | None = None,
    ) -> Response:
        def load() -> list[queries.HoldView]:
            with self._store() as store:
                return [] if store is None else queries.open_holds(store, self.ledger_source)

        views = await run_in_threadpool(load)
        return self.render(
            request, "holds.html", session, status, holds=views, result=result, error=error
        )

    async def review(self, request: Request) -> Response:
        checked = await self._checked_form(request)
        if isinstance(checked, Response):
            return checked
        session, form = checked
        try:
            action = ReviewAction(form.get("action", ""))
        except ValueError:
            return await self._holds_page(request, session, 400, error="Unknown action.")

        def act() -> None:
            with self._store() as store:
                if store is None:
                    raise ActionRefused("there is no pin store yet")
                review_hold(
                    store,
                    self.ledger_source,
                    action=action,
                    upstream=form.get("upstream", ""),
                    item_kind=form.get("item_kind", ""),
                    item=form.get("item", ""),
                    expected_hash=form.get("expected_hash", ""),
                    operator=session.operator,
                    reason=form.get("reason"),
                )

        try:
            await run_in_threadpool(act)
        except (ActionRefused, PinStoreError) as exc:
            return await self._holds_page(request, session, 400, error=str(exc))
        done = "accepted" if action is ReviewAction.ACCEPT else "kept"
        return RedirectResponse(f"{self.base(request)}/holds?result={done}", status_code=303)

    async def validate(self, request: Request) -> Response:
        """Tier 3 on one held tool: `mcpward validate` in its own process, then the page."""
        checked = await self._checked_form(request)
        if isinstance(checked, Response):
            return checked
        session, form = checked
        store_context = self.settings.store
        config = store_context.config_path if store_context is not None else None

        def act() -> str:
            with self._store() as store:
                if store is None:
                    raise ActionRefused("there is no pin store yet")
                report = validate_hold(
                    store,
                    config,
                    upstream=form.get("upstream", ""),
                    item=form.get("item", ""),
                    expected_hash=form.get("expected_hash", ""),
                    operator=session.operator,
                )
            return str(report["verdict"])

        try:
            verdict = await run_in_threadpool(act)
        except (ActionRefused, PinStoreError) as exc:
            return await self._holds_page(request, session, 400, error=str(exc))
        target = f"{self.base(request)}/holds?{urlencode({'result': verdict})}"
        return RedirectResponse(target, status_code=303)

    async def pins(self, request: Request) -> Response:
        session = self.session(request)
        if session is None:
            return self._denied(request)

        def load() -> list[dict[str, Any]]:
            with self._store() as store:
                if store is None:
                    return []
                return queries.pins_by_upstream(store, self.ledger_source)

        upstreams = await run_in_threadpool(load)
        return self.render(request, "pins.html", session, upstreams=upstreams)

    async def receipts(self, request: Request) -> Response:
        session = self.session(request)
        if session is None:
            return self._denied(request)
        params = dict(request.query_params)
        try:
            query = queries.parse_receipt_filter(params)
        except queries.QueryError as exc:
            return self.render(
                request, "receipts.html", session, 400, error=str(exc), page=None, params=params
            )
        page = await run_in_threadpool(queries.receipts_page, self.ledger_source, query)
        keep = {k: v for k, v in params.items() if k != "page" and v}

        def link(number: int) -> str:
            return "?" + urlencode({**keep, "page": number})

        return self.render(
            request,
            "receipts.html",
            session,
            page=page,
            params=params,
            decisions=queries.DECISIONS,
            prev_link=link(page.page - 1) if page.page > 1 else None,
            next_link=link(page.page + 1) if page.page < page.pages else None,
            error=None,
        )

    async def ledger(self, request: Request) -> Response:
        session = self.session(request)
        if session is None:
            return self._denied(request)
        state = await run_in_threadpool(queries.ledger_state, self.ledger_source)
        return self.render(request, "ledger.html", session, ledger=state)

    async def public_key(self, request: Request) -> Response:
        session = self.session(request)
        if session is None:
            return self._denied(request)
        text = await run_in_threadpool(queries.public_key_text, self.ledger_source)
        if text is None:
            return PlainTextResponse("no public key yet", status_code=404)
        return PlainTextResponse(
            text, headers={"content-disposition": 'attachment; filename="signing.pub"'}
        )

    async def guards(self, request: Request) -> Response:
        session = self.session(request)
        if session is None:
            return self._denied(request)
        return self.render(request, "guards.html", session)

    async def guards_data(self, request: Request) -> Response:
        session = self.session(request)
        if session is None:
            return self._denied(request)
        data = await run_in_threadpool(queries.guard_activity, self.ledger_source)
        return JSONResponse(data)

    async def root(self, request: Request) -> Response:
        return await self.holds(request)


class _RequestCheck:
    """Refuses requests whose Host/Origin fail the standalone listener's policy (DNS rebinding)."""

    def __init__(self, app: ASGIApp, problem: RequestProblem) -> None:
        self.app = app
        self.problem = problem

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            reason = self.problem(scope.get("headers", []))
            if reason is not None:
                await PlainTextResponse(reason, status_code=403)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_console_app(settings: ConsoleSettings) -> ASGIApp:
    """The console as an ASGI app (mount it anywhere: links follow the ASGI root_path)."""
    console = Console(settings)
    routes = [
        Route("/", console.root, methods=["GET"]),
        Route("/login", console.login_page, methods=["GET"]),
        Route("/login", console.login, methods=["POST"]),
        Route("/logout", console.logout, methods=["POST"]),
        Route("/holds", console.holds, methods=["GET"]),
        Route("/holds/review", console.review, methods=["POST"]),
        Route("/holds/validate", console.validate, methods=["POST"]),
        Route("/pins", console.pins, methods=["GET"]),
        Route("/receipts", console.receipts, methods=["GET"]),
        Route("/ledger", console.ledger, methods=["GET"]),
        Route("/ledger/signing.pub", console.public_key, methods=["GET"]),
        Route("/guards", console.guards, methods=["GET"]),
        Route("/guards/data.json", console.guards_data, methods=["GET"]),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    app: ASGIApp = SecurityHeaders(Starlette(routes=routes))
    if settings.request_problem is not None:
        app = _RequestCheck(app, settings.request_problem)
    return app
