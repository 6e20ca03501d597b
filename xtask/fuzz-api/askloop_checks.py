"""The check `cargo xtask fuzz-api` runs on every response schemathesis gets from askloop's
/graphql: no server error (HTTP 5xx), a JSON object for a body, and every GraphQL error with
`extensions.code` (docs/contract.md#errors), none of them `INTERNAL`, which is a fault inside
askloop behind the error door.

schemathesis's own GraphQL checks are not run: they count any error with a `path` (NOT_FOUND,
FORBIDDEN, ...) as a server failure, while askloop answers those on purpose.
"""

import schemathesis


@schemathesis.check
def askloop_error_door(ctx, response, case):
    """No 5xx; every GraphQL error carries extensions.code, and none is INTERNAL."""
    if response.status_code >= 500:
        raise AssertionError(f"server error: HTTP {response.status_code}: {response.text[:500]}")
    try:
        body = response.json()
    except ValueError:
        raise AssertionError(f"not JSON (HTTP {response.status_code}): {response.text[:500]}")
    if not isinstance(body, dict):
        raise AssertionError(f"not a GraphQL response object: {response.text[:500]}")
    errors = body.get("errors") or []
    if not isinstance(errors, list):
        raise AssertionError(f"`errors` is not a list: {errors!r}")
    for error in errors:
        extensions = error.get("extensions") if isinstance(error, dict) else None
        code = extensions.get("code") if isinstance(extensions, dict) else None
        if not isinstance(code, str) or not code:
            raise AssertionError(f"GraphQL error without extensions.code: {error!r}")
        if code == "INTERNAL":
            raise AssertionError(f"GraphQL INTERNAL error (a fault inside askloop): {error!r}")
