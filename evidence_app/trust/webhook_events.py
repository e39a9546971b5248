"""The webhook events of evidence_app, sent through tasks_app's webhooks: an audit drawn
and judged, and a judge's auto-accept approved or stopped. Registered as tasks_app's
webhook events when Django starts (``registrations``), after tasks_app's own."""

from __future__ import annotations

from django.db import models

from tasks_app.actions import RegisteredEvent


class EvidenceEvent(models.TextChoices):
    # A verdict drawn for a blind audit, and a person's judgement of it.
    AUDIT_OPENED = "audit.opened", "Audit opened"
    AUDIT_JUDGED = "audit.judged", "Audit judged"
    # The audits of a judge's auto-accepts show it drifting: auto-accept stopped.
    AUTO_ACCEPT_STOPPED = "auto_accept.stopped", "Auto-accept stopped"
    # An operator approved a judge's certified threshold: it routes accepts from now.
    AUTO_ACCEPT_APPROVED = "auto_accept.approved", "Auto-accept threshold approved"


# The API names the audit events an endpoint may ask for; the auto-accept events reach
# the endpoints subscribed to every event (the default).
WEBHOOK_EVENTS = [
    RegisteredEvent(EvidenceEvent.AUDIT_OPENED.value, EvidenceEvent.AUDIT_OPENED.label),
    RegisteredEvent(EvidenceEvent.AUDIT_JUDGED.value, EvidenceEvent.AUDIT_JUDGED.label),
    RegisteredEvent(
        EvidenceEvent.AUTO_ACCEPT_STOPPED.value,
        EvidenceEvent.AUTO_ACCEPT_STOPPED.label,
        listed=False,
    ),
    RegisteredEvent(
        EvidenceEvent.AUTO_ACCEPT_APPROVED.value,
        EvidenceEvent.AUTO_ACCEPT_APPROVED.label,
        listed=False,
    ),
]
