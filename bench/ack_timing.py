"""Timing of the OTLP acknowledgement path in this process, for before/after comparisons
of a change to it: ``python -m bench.ack_timing [runs]``. Each run posts 20 protobuf
export requests of 510 spans (51 traces x 10, one SDK batch) through the endpoint, then
times ``spans_of`` and ``otlp_ingest`` alone on 20 more; the median of the runs is
printed. Uses ``DATABASE_URL`` (default the bench database) like ``python -m bench``."""

from __future__ import annotations

import os
import statistics
import sys
import time

from bench.common import setup_django

REQUESTS = 20


def _once() -> dict[str, float]:
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.test import Client

    from bench.otlp import ENDPOINT, _export_request
    from tasks_app.accounts.auth import api_token_create
    from tasks_app.intake.otlp.decode import parse_request, spans_of
    from tasks_app.intake.otlp.ingest import otlp_ingest
    from tasks_app.models import OtlpTrace

    user, _ = get_user_model().objects.get_or_create(username="bench-ack-timing")
    OtlpTrace.objects.filter(owner=user).delete()
    _, raw = api_token_create(user=user, name="timing")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    bodies = [_export_request(51, 10) for _ in range(2 * REQUESTS + 1)]
    client.post(ENDPOINT, bodies.pop(), content_type="application/x-protobuf", secure=True)
    started = time.perf_counter()
    for body in bodies[:REQUESTS]:
        response = client.post(ENDPOINT, body, content_type="application/x-protobuf", secure=True)
        assert response.status_code == 200, response.status_code
    endpoint = time.perf_counter() - started
    requests = [parse_request(body, "application/x-protobuf") for body in bodies[REQUESTS:]]
    started = time.perf_counter()
    decoded = [spans_of(request)[0] for request in requests]
    decode = time.perf_counter() - started
    started = time.perf_counter()
    for records in decoded:
        with transaction.atomic():
            otlp_ingest(user=user, records=records)
    ingest = time.perf_counter() - started
    OtlpTrace.objects.filter(owner=user).delete()
    return {"endpoint": endpoint, "spans_of": decode, "otlp_ingest": ingest}


def main(argv: list[str]) -> int:
    runs = int(argv[0]) if argv else 3
    os.environ.setdefault("OTLP_MAX_SPANS_PER_MINUTE", "100000000")
    setup_django(bench_models=False)
    results = [_once() for _ in range(runs)]
    print(f"{os.environ['DATABASE_URL'].split('@')[-1]}: {runs} runs, median seconds")
    for key in results[0]:
        values = [r[key] for r in results]
        figures = ", ".join(f"{v:.3f}" for v in values)
        print(f"  {key:12} {statistics.median(values):.3f}  ({figures})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
