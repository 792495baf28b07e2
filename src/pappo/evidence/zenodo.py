"""Deposit the evidence bundle on Zenodo through its REST API (standard library only).

Flow (`upload`): create a draft deposition, PUT the zip into the draft's bucket and compare the
md5 Zenodo reports with the local one, set the metadata (`.zenodo.json`), then publish when
asked. Any failure after the draft exists deletes the draft, so nothing is left half-made, and
a later step never runs after an earlier one failed. Errors are `PappoError`s that say which
step failed and what to do.

The token (caller reads it from `ZENODO_TOKEN`, see `token_from_env`) travels only in the
`Authorization: Bearer` header; it is never logged, and it is scrubbed from any text Zenodo
sends back before that text reaches a message. Base URLs: `BASE_URLS` (`--sandbox` picks
https://sandbox.zenodo.org, whose tokens differ from zenodo.org's).
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pappo.io import PappoError, file_digest

BASE_URLS = {"zenodo": "https://zenodo.org", "sandbox": "https://sandbox.zenodo.org"}
TOKEN_ENV = "ZENODO_TOKEN"
log = logging.getLogger(__name__)


def base_url(sandbox: bool) -> str:
    return BASE_URLS["sandbox" if sandbox else "zenodo"]


def token_from_env(env: Mapping[str, str] | None = None, name: str = TOKEN_ENV) -> str:
    """The access token from the environment, or a PappoError saying how to get one."""
    token = (os.environ if env is None else env).get(name, "").strip()
    if not token:
        raise PappoError(
            f"{name} is not set: create a personal access token with the deposit:write and "
            f"deposit:actions scopes (zenodo.org or sandbox.zenodo.org: Account > Applications) "
            f"and export {name}=<token>"
        )
    return token


def load_metadata(repo_root: Path) -> dict[str, Any]:
    """`.zenodo.json` as the deposit's metadata."""
    path = Path(repo_root) / ".zenodo.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise PappoError(f"{path}: cannot read the deposit metadata ({e})") from None
    if not isinstance(data, dict):
        raise PappoError(f"{path}: the deposit metadata must be a JSON object")
    return data


class _Api:
    """One authorised JSON call at a time; every failure becomes a PappoError for a person."""

    def __init__(self, base: str, token: str, timeout: float) -> None:
        self.base, self.token, self.timeout = base.rstrip("/"), token, timeout

    def scrub(self, text: str) -> str:
        return text.replace(self.token, "<token>") if self.token else text

    def call(
        self,
        method: str,
        url: str,
        what: str,
        body: Any = None,
        content_type: str = "application/json",
        length: int | None = None,
    ) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        if length is not None:
            headers["Content-Length"] = str(length)
        req = urllib.request.Request(url, data=body, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            raise PappoError(self._refused(what, e.code, _body(e))) from None
        except TimeoutError:
            raise PappoError(self._timeout(what)) from None
        except urllib.error.URLError as e:
            if isinstance(e.reason, TimeoutError):
                raise PappoError(self._timeout(what)) from None
            raise PappoError(
                f"{what}: cannot reach {self.base} ({self.scrub(str(e.reason))}); check the network "
                "and the base URL"
            ) from None
        except (http.client.HTTPException, OSError) as e:
            raise PappoError(
                f"{what}: the connection to {self.base} failed ({type(e).__name__}: "
                f"{self.scrub(str(e))}); try again"
            ) from None
        if not raw.strip():
            return {}
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise PappoError(
                f"{what}: Zenodo answered {status} with something that is not a JSON object "
                f"({self.scrub(raw[:120].decode(errors='replace'))!r}); check the base URL "
                f"({self.base}) and try again later"
            )
        return data

    def _timeout(self, what: str) -> str:
        return f"{what}: no answer from {self.base} within {self.timeout:g} s (timed out); try again later or raise the timeout"

    def _refused(self, what: str, code: int, body: bytes) -> str:
        said = self.scrub(_server_message(body))
        said = f": Zenodo says {said!r}" if said else ""
        if code == 401:
            fix = (
                f"Zenodo refused the token (401 Unauthorized){said}; set {TOKEN_ENV} to a valid personal "
                f"access token of {self.base} (sandbox and zenodo.org tokens differ)"
            )
        elif code == 403:
            fix = (
                f"the token may not do this (403 Forbidden){said}; it needs the deposit:write and "
                "deposit:actions scopes"
            )
        elif code in (400, 422):
            fix = f"Zenodo rejected the request ({code}){said}; check .zenodo.json against schemas/zenodo_deposit.schema.json"
        elif code == 404:
            fix = f"not found (404){said}; check the base URL ({self.base})"
        elif code >= 500:
            fix = f"Zenodo had a server error ({code}){said}; try again later"
        else:
            fix = f"Zenodo answered {code}{said}"
        return f"{what}: {fix}"


def _body(e: urllib.error.HTTPError) -> bytes:
    try:
        return e.read() or b""
    except (OSError, http.client.HTTPException):
        return b""


def _server_message(body: bytes) -> str:
    """Zenodo's own words from an error body: message plus field errors, shortened."""
    try:
        data = json.loads(body)
    except ValueError:
        return body[:200].decode(errors="replace").strip()
    if not isinstance(data, dict):
        return str(data)[:200]
    parts = [str(data.get("message", "")).strip()]
    parts += [
        f"{e.get('field', '?')}: {e.get('message', e.get('messages', ''))}"
        for e in data.get("errors") or []
        if isinstance(e, dict)
    ]
    return "; ".join(p for p in parts if p)[:300]


def _get(data: dict[str, Any], *keys: str, what: str) -> Any:
    node: Any = data
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            raise PappoError(
                f"{what}: Zenodo's answer has no {'.'.join(keys)}; is the base URL a Zenodo server?"
            )
        node = node[key]
    return node


def _put_file(api: _Api, bucket: str, bundle: Path) -> None:
    """PUT the bundle into the bucket; the md5 Zenodo computed must be the local one."""
    local, size = file_digest(bundle, "md5"), bundle.stat().st_size  # Zenodo reports md5
    url = f"{bucket.rstrip('/')}/{urllib.parse.quote(bundle.name)}"
    log.info("zenodo: uploading %s (%d bytes, md5 %s)", bundle.name, size, local)
    with open(bundle, "rb") as f:
        answer = api.call("PUT", url, f"upload {bundle.name}", f, "application/octet-stream", size)
    checksum = str(answer.get("checksum", ""))
    if checksum != f"md5:{local}":
        raise PappoError(
            f"upload {bundle.name}: Zenodo stored checksum {api.scrub(checksum)!r} but the file's md5 is "
            f"{local}: the transfer was corrupted; try again"
        )


def _discard(api: _Api, dep_id: Any) -> str:
    """Delete the draft; what happened, for the error message."""
    try:
        api.call("DELETE", f"{api.base}/api/deposit/depositions/{dep_id}", f"delete draft {dep_id}")
    except PappoError as e:
        log.warning("zenodo: could not delete draft %s: %s", dep_id, e)
        return f"the draft deposition {dep_id} could NOT be deleted ({e}); delete it at {api.base}/deposit/{dep_id}"
    log.info("zenodo: deleted draft deposition %s", dep_id)
    return f"the draft deposition {dep_id} was deleted; nothing was published"


def upload(
    bundle: Path, metadata: dict[str, Any], base_url: str, token: str, publish: bool, timeout: float
) -> dict[str, Any]:
    """Create a draft, upload `bundle`, set `metadata`, publish if asked; the last answer from Zenodo.

    Without `publish` the complete draft is left for review in Zenodo's web interface.
    """
    bundle = Path(bundle)
    if not bundle.is_file():
        raise PappoError(f"{bundle} is missing: build it with `pappo release` first")
    api = _Api(base_url, token, timeout)
    depositions = f"{api.base}/api/deposit/depositions"
    draft = api.call("POST", depositions, "create the draft deposition", b"{}")
    dep_id = _get(draft, "id", what="create the draft deposition")
    log.info("zenodo: created draft deposition %s", dep_id)
    try:
        _put_file(api, str(_get(draft, "links", "bucket", what="create the draft deposition")), bundle)
        body = json.dumps({"metadata": metadata}).encode()
        answer = api.call("PUT", f"{depositions}/{dep_id}", f"set the metadata of draft {dep_id}", body)
        log.info("zenodo: metadata set on draft %s", dep_id)
        if publish:
            answer = api.call(
                "POST", f"{depositions}/{dep_id}/actions/publish", f"publish draft {dep_id}", b""
            )
            log.info("zenodo: published deposition %s (doi %s)", dep_id, answer.get("doi"))
        return answer
    except BaseException as e:
        message = str(e) if isinstance(e, PappoError) else f"{type(e).__name__}: {api.scrub(str(e))}"
        outcome = _discard(api, dep_id)
        if not isinstance(e, Exception):
            raise
        raise PappoError(f"{message}\n{outcome}") from None
