"""How many true statements of the demo handbook the embedded judge disputes.

Every Nth statement of ``demo/handbook`` (a sentence ending in a full stop) is judged as
a claim against the whole handbook, each document one tool result, the way
``offline:judge`` checks a supported claim against the rest of the evidence. A claim
is *disputed* when another sentence is read as stating something incompatible with it
about the same subject. The handbook holds a few deliberately stale copies (the FAQ's
meal allowance, the onboarding guide's leave days): those disputes are right; most of
the others are sentences about something else. Prints the count, by reason, and with
``--show`` each disputed claim beside the sentence that disputes it.

    python bench/handbook_disputes.py [--every 5] [--show]
"""

from __future__ import annotations

import argparse
import os
import re
from collections import Counter
from pathlib import Path

import django

from evidence_app.offline_judge import grounding
from evidence_app.offline_judge.answer_text import LETTERS_RE, split_lines
from evidence_app.offline_judge.meaning import with_meaning

HANDBOOK = Path(__file__).resolve().parents[1] / "demo" / "handbook"


def disputes(every: int) -> tuple[int, list[tuple[str, grounding.Sentence, grounding.Sentence]]]:
    """(claims judged, [(reason, claim, disputing sentence)])."""
    texts = {p.stem: p.read_text(encoding="utf-8") for p in sorted(HANDBOOK.glob("*.md"))}
    evidence = [grounding.sentence(s, name) for name, t in texts.items() for s in split_lines(t)]
    everything = "\n".join(texts.values())
    vocabulary = {w.lower() for w in LETTERS_RE.findall(everything)}
    claims = [s for s in evidence if re.search(r"\.\W*$", s.text)][::every]
    found = []
    for claim in claims:
        finding = grounding.check(claim.text, evidence, vocabulary, everything)
        finding = with_meaning(claim.text, finding, evidence)
        if finding.verdict == "supported" and finding.conflict is not None:
            found.append((finding.dispute, claim, finding.conflict))
    return len(claims), found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, default=5, help="judge every Nth statement")
    parser.add_argument("--show", action="store_true", help="print each dispute")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    django.setup()
    judged, found = disputes(args.every)
    print(f"disputed: {len(found)} of {judged} handbook statements")
    for reason, count in Counter(r for r, _c, _o in found).most_common():
        print(f"  {count:4d}  {reason}")
    if args.show:
        for reason, claim, other in found:
            print(f"\n[{reason}] {claim.source} | {other.source}")
            print(f"  claim: {claim.text}\n  other: {other.text}")


if __name__ == "__main__":
    main()
