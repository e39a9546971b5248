"""Pages: the task pages and the review queue (a task with its verdicts and evidence:
U1-U4), and the operator pages of the validator."""

from __future__ import annotations

from django.urls import path

from evidence_app.autoaccept import views as autoaccept_views
from evidence_app.judges import views as judge_views
from evidence_app.operator import charts, team_views, trust_views, validation_views
from evidence_app.operator import views as ops_views
from evidence_app.portal import views as portal_views
from evidence_app.review import (
    audit_views,
    decision_views,
    list_views,
    queue_views,
    section_views,
    task_views,
    trace_views,
)

ops_pages = [
    path("ops/", ops_views.ops_index, name="ops_index"),
    path("ops/templates/", ops_views.ops_templates, name="ops_templates"),
    path("ops/tasks/<id:task_id>/inputs/", ops_views.ops_task_inputs, name="ops_task_inputs"),
    path("ops/requests/", ops_views.ops_llm_requests, name="ops_llm_requests"),
    path("ops/requests/<id:request_id>/", ops_views.ops_llm_request, name="ops_llm_request"),
    path(
        "ops/requests/validations/<id:snapshot_id>/",
        ops_views.ops_validator_requests,
        name="ops_validator_requests",
    ),
    path(
        "ops/validations/<id:snapshot_id>/", validation_views.ops_validation, name="ops_validation"
    ),
    path(
        "ops/validations/<id:snapshot_id>/replay/", validation_views.ops_replay, name="ops_replay"
    ),
    path("ops/replay/", validation_views.ops_bulk_replay, name="ops_bulk_replay"),
    path("ops/agreement/", ops_views.ops_agreement, name="ops_agreement"),
    path("ops/charts/", charts.ops_charts, name="ops_charts"),
    # The review team's figures (decisions, time per item, queue age, audits waiting).
    path("ops/team/", team_views.ops_team, name="ops_team"),
    path("ops/trust/", trust_views.ops_trust, name="ops_trust"),
    path(
        "ops/trust/thresholds/<id:threshold_id>/",
        autoaccept_views.ops_threshold,
        name="ops_threshold",
    ),
    # Changing the judge: the gate and shadow mode.
    path("ops/judge/", judge_views.ops_judge, name="ops_judge"),
    path(
        "ops/judge/comparisons/<id:comparison_id>/default/",
        judge_views.ops_judge_default,
        name="ops_judge_default",
    ),
    path("ops/judge/shadow/", judge_views.ops_judge_shadow, name="ops_judge_shadow"),
]

task_pages = [
    path("", portal_views.home, name="home"),
    path("tasks/mine/", portal_views.my_tasks, name="my_tasks"),
    path("tasks/", portal_views.task_list_all, name="task_list_all"),
    path("tasks/new/", portal_views.task_new, name="task_new"),
    path("tasks/<id:task_id>/", task_views.task_detail, name="task_detail"),
    path("tasks/<id:task_id>/progress/", section_views.task_progress, name="task_progress"),
    path("tasks/<id:task_id>/feedback/", decision_views.task_feedback, name="task_feedback"),
    path(
        "tasks/<id:task_id>/feedback/<id:feedback_id>/undo/",
        decision_views.decision_undo,
        name="decision_undo",
    ),
    path("tasks/<id:task_id>/claim/", decision_views.task_claim, name="task_claim"),
    path("tasks/<id:task_id>/notes/", decision_views.task_note, name="task_note"),
    path(
        "tasks/<id:task_id>/sections/<slug:section>/",
        section_views.task_section,
        name="task_section",
    ),
    path("tasks/<id:task_id>/evidence/", list_views.evidence_list, name="evidence_list"),
    path(
        "tasks/<id:task_id>/validations/<id:snapshot_id>/<slug:section>/",
        section_views.snapshot_section,
        name="snapshot_section",
    ),
    path(
        "tasks/<id:task_id>/validations/<id:snapshot_id>/download/input.txt",
        section_views.snapshot_download,
        name="snapshot_download",
    ),
    path(
        "tasks/<id:task_id>/evidence/<id:evidence_id>/",
        section_views.evidence_content,
        name="evidence_content",
    ),
    path(
        "tasks/<id:task_id>/validations/<id:snapshot_id>/claims/<str:claim_id>/",
        section_views.claim_evidence,
        name="claim_evidence",
    ),
    path(
        "tasks/<id:task_id>/runs/<id:run_id>/transcript/",
        list_views.run_transcript,
        name="run_transcript",
    ),
    path(
        "tasks/<id:task_id>/trace/attempts/<id:attempt_index>/runs/",
        trace_views.trace_runs,
        name="trace_runs",
    ),
    path(
        "tasks/<id:task_id>/trace/runs/<id:run_id>/steps/",
        trace_views.trace_steps,
        name="trace_steps",
    ),
    path(
        "tasks/<id:task_id>/trace/calls/<id:call_id>/",
        trace_views.trace_call,
        name="trace_call",
    ),
    path(
        "tasks/<id:task_id>/trace/tools/<id:evidence_id>/",
        trace_views.trace_tool,
        name="trace_tool",
    ),
    path("tasks/<id:task_id>/assign/", queue_views.task_assign, name="task_assign"),
    path("review/", queue_views.review_queue, name="review_queue"),
    # The audit stream: blind audits of the validator's own decisions.
    path("review/audits/", audit_views.audit_queue, name="audit_queue"),
    path("review/audits/<id:audit_id>/", audit_views.audit_detail, name="audit_detail"),
    path(
        "review/audits/<id:audit_id>/sections/<slug:section>/",
        audit_views.audit_section,
        name="audit_section",
    ),
    path(
        "review/audits/<id:audit_id>/evidence/<id:evidence_id>/",
        audit_views.audit_evidence,
        name="audit_evidence",
    ),
]

urlpatterns = ops_pages + task_pages
