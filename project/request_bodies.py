"""Reading API request bodies with a per-endpoint size limit and gzip.

External attempts can be large (full tool results, whole transcripts): their endpoints
take up to ``EXTERNAL_ATTEMPT_MAX_BYTES`` (64 MB) instead of ``API_MAX_BODY_BYTES``, and
any API body may be sent with ``Content-Encoding: gzip``. The limit applies to the bytes
on the wire and to the decompressed bytes alike, and decompression stops as soon as it
is passed, so a small gzip bomb cannot expand into memory.
"""

from __future__ import annotations

import re
import zlib

from django.conf import settings
from django.http import HttpRequest

# POST /api/v1/tasks/{id}/attempts, .../attempts/{n}/events, .../attempts/{n}/finish
EXTERNAL_ATTEMPT_PATH = re.compile(r"^/api/v1/tasks/\d+/attempts(/\d+/(events|finish))?/?$")
# POST /api/v1/otlp/v1/traces: protobuf or JSON, often gzip.
OTLP_PATH = re.compile(r"^/api/v1/otlp/v1/traces/?$")
CHUNK = 1024 * 1024


class BodyTooLarge(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"Request body is larger than the limit of {limit} bytes.")
        self.limit = limit


class BadContentEncoding(Exception):
    pass


def body_limit(request: HttpRequest) -> int:
    if request.method == "POST" and EXTERNAL_ATTEMPT_PATH.match(request.path):
        return settings.EXTERNAL_ATTEMPT_MAX_BYTES
    if request.method == "POST" and OTLP_PATH.match(request.path):
        return settings.OTLP_MAX_BODY_BYTES
    return settings.API_MAX_BODY_BYTES


def is_otlp(request: HttpRequest) -> bool:
    """The OTLP endpoint answers in its own encoding and replaces a NUL in any text of a
    span itself (protobuf and JSON alike), so the API's NUL refusal (422) is not its."""
    return request.method == "POST" and bool(OTLP_PATH.match(request.path))


def needs_own_reading(request: HttpRequest) -> bool:
    """Bodies Django's own reader cannot handle: gzip, or a limit above Django's."""
    encoding = request.META.get("HTTP_CONTENT_ENCODING", "").strip().lower()
    return encoding not in ("", "identity") or body_limit(request) != settings.API_MAX_BODY_BYTES


def load_body(request: HttpRequest, limit: int) -> None:
    """Read the body (at most ``limit`` bytes, decompressed too) and leave the plain
    bytes where ``request.body`` finds them. Raises BodyTooLarge or BadContentEncoding."""
    raw = request.read(limit + 1)
    if len(raw) > limit:
        raise BodyTooLarge(limit)
    encoding = request.META.get("HTTP_CONTENT_ENCODING", "").strip().lower()
    if encoding in ("", "identity"):
        body = raw
    elif encoding in ("gzip", "x-gzip"):
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            body = decompressor.decompress(raw, limit + 1)
            if len(body) > limit or decompressor.unconsumed_tail:
                raise BodyTooLarge(limit)
            body += decompressor.flush()
        except zlib.error as exc:
            raise BadContentEncoding(f"The body is not valid gzip: {exc}") from None
        if len(body) > limit:
            raise BodyTooLarge(limit)
        if not decompressor.eof:
            raise BadContentEncoding("The gzip body is truncated.")
    else:
        raise BadContentEncoding(
            f"Content-Encoding '{encoding}' is not supported (send gzip or nothing)."
        )
    request._body = body  # what request.body returns from now on
