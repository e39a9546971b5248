"""Auto-accept at a certified risk, the whole capability (issue 45): the threshold on a
judge's score above which it may accept alone, certified on labelled verdicts, and
everything around it.

- ``certify``: the statistics of a certified threshold (Learn then Test) and its
  coverage–risk curve; ``drift``: the CUSUM rule that stops a judge whose audits show it
  drifting; ``simulate``: both on synthetic judges (the tables of docs/validator.md).
- ``selectors``: the labelled verdicts each judge is certified on, and what a proposal
  would have done in shadow (database reads); ``gate``: the approved threshold the
  routing follows and why an accept goes to a person under it.
- ``services``: the writes: proposals, shadow, approval, stop, the drift record.
- ``recompute``: the background job's work (certify every judge, run the drift rule).
- ``overview`` and ``standing``: what the Trust page shows of each judge (threshold,
  curve, guarantee, state and next step); ``views``: the shadow, approve and stop
  controls of that page.
- ``bench``: judge_bench's figures at a certified threshold; ``demo``: the scripted
  history ``manage.py demo_autoaccept`` shows.

numpy and scipy load with ``certify``, ``drift``, ``simulate``, ``recompute`` and
``bench`` only: the job, the judge comparison and judge_bench import them, never a
module loaded at start-up. This file imports nothing, so that reading the gate does not
load them either."""
