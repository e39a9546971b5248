"""The newcomer smoke (make smoke; CI runs it): what the README promises a new user.

``make run`` starts in the background on a free port, on the embedded defaults
(SQLite, the filesystem broker, the offline models) in a throwaway data folder; the
demo settles as the README says (task counts per status); the demo operator, through
HTTP, replays a validation and its page shows the replay side by side with the
original; ``/ready`` answers 200; then everything stops on Ctrl-C (SIGINT) and no
process is left. One line per step; exit 1 with the reason on the first failure.

Run from the repository root: ``.venv/bin/python bin/smoke.py``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
# The README: "8 are answered and accepted, 5 wait for review, and 1 fails on purpose".
EXPECTED = {"awaiting_feedback": 8, "needs_review": 5, "failed": 1}
SETTLED = {"awaiting_feedback", "needs_review", "failed", "satisfied", "abandoned"}
SETTLE_SECONDS = float(os.environ.get("SMOKE_SETTLE_SECONDS", "240"))


class SmokeFailed(Exception):
    pass


def step(message: str) -> None:
    print(f"smoke: {message}", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(what: str, check, seconds: float, every: float = 1.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    last: object = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except httpx.HTTPError as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(every)
    raise SmokeFailed(f"{what}: not within {seconds:.0f} s (last: {last!r})")


def log_in(client: httpx.Client, username: str, password: str) -> None:
    page = client.get("/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    if token is None:
        raise SmokeFailed("the login page has no CSRF token")
    response = client.post(
        "/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": token[1]},
        headers={"Referer": f"{client.base_url}/login/"},
    )
    if response.status_code != 302:
        raise SmokeFailed(f"logging in as {username}: HTTP {response.status_code}")


# The demo's 14 tasks (demo/tasks.json): the tasks demo_autoaccept adds later are not
# counted, whenever they arrive.
DEMO_TITLES = {spec["title"] for spec in json.loads((ROOT / "demo" / "tasks.json").read_text())}


def statuses(client: httpx.Client) -> Counter[str]:
    response = client.get("/api/v1/tasks", params={"limit": 100})
    response.raise_for_status()
    return Counter(
        item["status"] for item in response.json()["items"] if item["title"] in DEMO_TITLES
    )


def settled(client: httpx.Client) -> Counter[str] | None:
    counts = statuses(client)
    total = sum(counts.values())
    if total and set(counts) <= SETTLED:
        return counts
    return None


def replay_one(client: httpx.Client) -> None:
    tasks = client.get("/api/v1/tasks", params={"limit": 100, "status": "needs_review"}).json()
    task_id = tasks["items"][0]["id"]
    validations = client.get(f"/api/v1/tasks/{task_id}/validations").json()["items"]
    original = validations[0]["id"]
    page = client.get(f"/ops/validations/{original}/")
    token = client.cookies.get("csrftoken") or ""
    response = client.post(
        f"/ops/validations/{original}/replay/",
        data={"template": "", "model": "", "csrfmiddlewaretoken": token},
        headers={"Referer": str(page.url)},
    )
    if response.status_code != 302:
        raise SmokeFailed(f"queueing the replay: HTTP {response.status_code}")
    step(f"replay of validation #{original} (task #{task_id}) queued through the page")

    def shown() -> str | None:
        html = client.get(f"/ops/validations/{original}/").text
        if 'data-state="failed"' in html:
            reason = re.search(r"The replay failed</strong>(.*?)</p>", html, re.S)
            raise SmokeFailed(f"the replay failed: {reason[1] if reason else html[:300]}")
        done = 'id="replay-card"' in html and 'id="original-card"' in html
        return html if done and "The replay is" not in html else None

    html = wait_for("the replay shown beside the original", shown, 90)
    verdict = re.search(r'id="replay-changes">(.*?)</', html, re.S)
    step(
        "replay shown side by side with the original"
        + (f" ({verdict[1].strip()[:80]})" if verdict else "")
    )


def trust_shown(client: httpx.Client) -> None:
    """The README's trust walkthrough: half of the demo's audits judged from its labels
    and an estimate with its interval on Trust, a second judge disagreeing on one task,
    a candidate judging in shadow."""

    def estimate() -> dict[str, Any] | None:
        for group in client.get("/api/v1/trust").json()["items"]:
            rate = group["window"]["false_accepts"]
            if rate and rate["judged"] and rate["interval"]["estimate"] is not None:
                return {**rate, "open": group["window"]["outstanding"]}
        return None

    rate = wait_for("an estimate of the false-accept rate on Trust", estimate, 90, 2)
    interval = rate["interval"]
    step(
        f"trust: false accepts {interval['estimate']:.0%} "
        f"[{interval['low']:.0%}, {interval['high']:.0%}] from {rate['judged']} judged audits, "
        f"{rate['open']} open (both routes), {rate['audits_needed']} more for the target"
    )
    pairs = client.get("/api/v1/stats/agreement").json()["judge_pairs"]
    if not any(p["disagreements"] for p in pairs):
        raise SmokeFailed(f"no second judge disagreed on a demo task: {pairs}")
    step(f"second judge: {sum(p['disagreements'] for p in pairs)} disagreement sent to a person")
    page = client.get("/ops/judge/").text
    if "is judging in shadow" not in page:
        raise SmokeFailed("the judge page shows no candidate in shadow")
    step("judge page: a candidate judging in shadow")

    def auto_accept_shown() -> bool:
        trust = client.get("/ops/trust/").text
        # One judge certified (its approved threshold applies), the candidate stopped.
        return 'data-state="certified"' in trust and 'data-state="stopped"' in trust

    wait_for(
        "Trust showing an approved threshold and a judge stopped by drift",
        auto_accept_shown,
        150,
        3,
    )
    routed = Counter(
        item["status"]
        for item in client.get("/api/v1/tasks", params={"limit": 100}).json()["items"]
        if item["title"].startswith("Auto-accept demo:")
    )
    step(f"auto-accept: thresholds approved, one judge stopped by drift; {dict(routed)}")


def stop(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired as exc:
        os.killpg(process.pid, signal.SIGKILL)
        raise SmokeFailed("make run did not stop within 30 s of Ctrl-C") from exc
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            step("stopped cleanly: no process of make run is left")
            return
        time.sleep(0.5)
    os.killpg(process.pid, signal.SIGKILL)
    raise SmokeFailed("processes of make run were still running 20 s after it exited")


def main() -> int:
    port = free_port()
    data = Path(tempfile.mkdtemp(prefix="evidentia-smoke-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CELERY_"))}
    env.pop("REDIS_URL", None)
    env.update(PORT=str(port), EVIDENTIA_VAR_DIR=str(data))
    log_path = data / "make-run.log"
    step(f"make run on port {port}, data in {data} (log: {log_path})")
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            ["make", "run"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10)
    started = time.monotonic()
    try:
        wait_for("the login page", lambda: client.get("/login/").status_code == 200, 180)
        step(f"web answers ({time.monotonic() - started:.0f} s)")
        log_in(client, "operator", "operator-demo")
        counts = wait_for("the demo tasks settled", lambda: settled(client), SETTLE_SECONDS, 2)
        shown = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        step(f"demo settled in {time.monotonic() - started:.0f} s: {shown}")
        if dict(counts) != EXPECTED:
            raise SmokeFailed(f"the README promises {EXPECTED}, the demo gave {dict(counts)}")
        replay_one(client)
        trust_shown(client)
        ready = client.get("/ready")
        if ready.status_code != 200:
            raise SmokeFailed(f"/ready answered {ready.status_code}: {ready.text[:300]}")
        step("/ready answers 200")
    except SmokeFailed as exc:
        step(f"FAILED: {exc}")
        stop_quietly(process)
        print(log_path.read_text(errors="replace")[-4000:], file=sys.stderr)
        return 1
    try:
        stop(process)
    except SmokeFailed as exc:
        step(f"FAILED: {exc}")
        return 1
    step("passed")
    return 0


def stop_quietly(process: subprocess.Popen[bytes]) -> None:
    try:
        stop(process)
    except SmokeFailed as exc:
        step(str(exc))


if __name__ == "__main__":
    sys.exit(main())
