"""GitHub's user sign-in on the fake GitHub: the App's OAuth authorize/token endpoints and the user-token
endpoints the dashboard reads (who signed in, which of the App's installations and repositories they reach,
with their permissions).

    oauth = FakeOAuth(fake, callback="http://127.0.0.1:PORT/dashboard/callback")
    oauth.add_user("alice", {12345: {"acme/api": True, "acme/web": False}})   # True: may push
    oauth.next_login = "alice"   # who "approves" at the authorize page

``GET /login/oauth/authorize`` answers as GitHub does after the user approves: a redirect to the App's
callback with ``code`` and the ``state`` it was given. Codes are single-use; tokens are ``gho_…``.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import RedirectResponse

from support.fake_github import FakeGitHub

CLIENT_ID = "Iv1.fakeclientid"
CLIENT_SECRET = "fake-oauth-client-secret"


@dataclass
class FakeOAuth:
    fake: FakeGitHub
    callback: str
    client_id: str = CLIENT_ID
    client_secret: str = CLIENT_SECRET
    next_login: str | None = None
    users: dict[str, dict[int, dict[str, bool]]] = field(default_factory=dict)
    codes: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.fake.register(self._router())

    def add_user(self, login: str, installations: dict[int, dict[str, bool]]) -> None:
        self.users[login] = installations

    def _user(self, request: Request) -> str:
        header = request.headers.get("authorization", "")
        token = header.partition(" ")[2].strip()
        login = self.tokens.get(token)
        if login is None:
            raise HTTPException(401, detail="Bad credentials")
        return login

    def _router(self) -> APIRouter:
        router = APIRouter()

        @router.get("/login/oauth/authorize")
        async def authorize(client_id: str, state: str = "") -> Any:
            if client_id != self.client_id or self.next_login is None:
                raise HTTPException(404, detail="Not Found")
            code = secrets.token_hex(10)
            self.codes[code] = self.next_login
            return RedirectResponse(f"{self.callback}?{urlencode({'code': code, 'state': state})}", 302)

        @router.post("/login/oauth/access_token")
        async def access_token(request: Request) -> dict[str, Any]:
            form = await request.form()
            if form.get("client_id") != self.client_id or form.get("client_secret") != self.client_secret:
                return {"error": "incorrect_client_credentials"}
            login = self.codes.pop(str(form.get("code", "")), None)
            if login is None:
                return {"error": "bad_verification_code"}
            token = "gho_" + secrets.token_hex(16)
            self.tokens[token] = login
            return {"access_token": token, "token_type": "bearer", "scope": ""}

        @router.get("/user")
        async def user(request: Request) -> dict[str, Any]:
            login = self._user(request)
            return {"login": login, "id": abs(hash(login)) % 10**8, "type": "User"}

        @router.get("/user/installations")
        async def installations(request: Request) -> dict[str, Any]:
            login = self._user(request)
            ids = sorted(self.users.get(login, {}))
            return {
                "total_count": len(ids),
                "installations": [{"id": i, "app_id": self.fake.app_id} for i in ids],
            }

        @router.get("/user/installations/{installation_id}/repositories")
        async def repositories(installation_id: int, request: Request) -> dict[str, Any]:
            login = self._user(request)
            repos = self.users.get(login, {}).get(installation_id)
            if repos is None:
                raise HTTPException(404, detail="Not Found")
            return {
                "total_count": len(repos),
                "repositories": [
                    {"full_name": name, "permissions": {"pull": True, "push": push, "admin": False}}
                    for name, push in sorted(repos.items())
                ],
            }

        return router
