"""Signals of the intake: what follows an OTLP trace's fate subscribes to it.

``trace_unusable`` is sent inside the transaction that marks a trace unusable, with
``trace`` (its ``task`` set when a span named one of its owner's tasks) and ``reason``.
Receivers connect in ``AppConfig.ready`` (the webhooks: ``trace.unusable``).
"""

from __future__ import annotations

from django.dispatch import Signal

trace_unusable = Signal()
