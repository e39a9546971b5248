"""Pages: the task pages and the review queue (a task with its verdicts and evidence:
U1-U4), and the operator pages of the validator (U5, V5, V9, V10)."""

from __future__ import annotations

from django.urls import path

from evidence_app import (
    views,
    views_audits,
    views_judge,
    views_review,
    views_tasks,
    views_team,
    views_trace,
    views_trust,
)

ops_pages = [
    path("ops/", views.ops_index, name="ops_index"),
    path("ops/templates/", views.ops_templates, name="ops_templates"),
    path("ops/tasks/<int:task_id>/inputs/", views.ops_task_inputs, name="ops_task_inputs"),
    path("ops/requests/", views.ops_llm_requests, name="ops_llm_requests"),
    path("ops/requests/<int:request_id>/", views.ops_llm_request, name="ops_llm_request"),
    path(
        "ops/requests/validations/<int:snapshot_id>/",
        views.ops_validator_requests,
        name="ops_validator_requests",
    ),
    path("ops/validations/<int:snapshot_id>/", views.ops_validation, name="ops_validation"),
    path("ops/validations/<int:snapshot_id>/replay/", views.ops_replay, name="ops_replay"),
    path("ops/replay/", views.ops_bulk_replay, name="ops_bulk_replay"),
    path("ops/agreement/", views.ops_agreement, name="ops_agreement"),
    path("ops/charts/", views.ops_charts, name="ops_charts"),
    # The review team's figures (decisions, time per item, queue age, audits waiting).
    path("ops/team/", views_team.ops_team, name="ops_team"),
    path("ops/trust/", views_trust.ops_trust, name="ops_trust"),
    # Changing the judge: the gate and shadow mode.
    path("ops/judge/", views_judge.ops_judge, name="ops_judge"),
    path(
        "ops/judge/comparisons/<int:comparison_id>/default/",
        views_judge.ops_judge_default,
        name="ops_judge_default",
    ),
    path("ops/judge/shadow/", views_judge.ops_judge_shadow, name="ops_judge_shadow"),
]

task_pages = [
    path("", views_tasks.home, name="home"),
    path("tasks/mine/", views_tasks.my_tasks, name="my_tasks"),
    path("tasks/", views_tasks.task_list_all, name="task_list_all"),
    path("tasks/new/", views_tasks.task_new, name="task_new"),
    path("tasks/<int:task_id>/", views_tasks.task_detail, name="task_detail"),
    path("tasks/<int:task_id>/progress/", views_tasks.task_progress, name="task_progress"),
    path("tasks/<int:task_id>/feedback/", views_tasks.task_feedback, name="task_feedback"),
    path(
        "tasks/<int:task_id>/feedback/<int:feedback_id>/undo/",
        views_tasks.decision_undo,
        name="decision_undo",
    ),
    path("tasks/<int:task_id>/claim/", views_tasks.task_claim, name="task_claim"),
    path("tasks/<int:task_id>/notes/", views_tasks.task_note, name="task_note"),
    path(
        "tasks/<int:task_id>/sections/<slug:section>/",
        views_tasks.task_section,
        name="task_section",
    ),
    path(
        "tasks/<int:task_id>/validations/<int:snapshot_id>/<slug:section>/",
        views_tasks.snapshot_section,
        name="snapshot_section",
    ),
    path(
        "tasks/<int:task_id>/validations/<int:snapshot_id>/download/input.txt",
        views_tasks.snapshot_download,
        name="snapshot_download",
    ),
    path(
        "tasks/<int:task_id>/evidence/<int:evidence_id>/",
        views_tasks.evidence_content,
        name="evidence_content",
    ),
    path(
        "tasks/<int:task_id>/validations/<int:snapshot_id>/claims/<str:claim_id>/",
        views_tasks.claim_evidence,
        name="claim_evidence",
    ),
    path(
        "tasks/<int:task_id>/runs/<int:run_id>/transcript/",
        views_tasks.run_transcript,
        name="run_transcript",
    ),
    path(
        "tasks/<int:task_id>/trace/attempts/<int:attempt_index>/runs/",
        views_trace.trace_runs,
        name="trace_runs",
    ),
    path(
        "tasks/<int:task_id>/trace/runs/<int:run_id>/steps/",
        views_trace.trace_steps,
        name="trace_steps",
    ),
    path(
        "tasks/<int:task_id>/trace/calls/<int:call_id>/",
        views_trace.trace_call,
        name="trace_call",
    ),
    path(
        "tasks/<int:task_id>/trace/tools/<int:evidence_id>/",
        views_trace.trace_tool,
        name="trace_tool",
    ),
    path("tasks/<int:task_id>/assign/", views_review.task_assign, name="task_assign"),
    path("review/", views_review.review_queue, name="review_queue"),
    # The audit stream: blind audits of the validator's own decisions.
    path("review/audits/", views_audits.audit_queue, name="audit_queue"),
    path("review/audits/<int:audit_id>/", views_audits.audit_detail, name="audit_detail"),
]

urlpatterns = ops_pages + task_pages
