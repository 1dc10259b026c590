"""Every pair of submissions of each module compared, ranked, and the pairs to review flagged.

Pairs are this term x this term and, with a previous term, this term x previous term (never
previous x previous: that class was checked in its own term). A pair is flagged when either
document's share found in the other reaches the threshold and the run of shared code is long
enough to mean something (Settings.min_matched); the side-by-side regions are worked out for
the flagged pairs among the module's first Settings.pages only (a class where hundreds of pairs
are flagged needs another threshold, not hundreds of pages).
"""
from __future__ import annotations

from dataclasses import replace
from itertools import combinations, product
from typing import Mapping, Sequence

from grader.similarity import fingerprints
from grader.similarity.records import Document, ModuleResult, Pair, Settings, Term


def page_name(module: str, rank: int) -> str:
    """A flagged pair's side-by-side page, relative to the output folder (no student text in it)."""
    return f"pairs/{module}-{rank}.html"


def rank_module(module: str, documents: Sequence[Document], starter: Sequence[str], settings: Settings) -> ModuleResult:
    """All pairs of `documents` (one module, both terms) with `starter` subtracted."""
    given = fingerprints.starter(list(starter), settings)
    prints = {}
    empty = []
    for doc in documents:
        fp = fingerprints.fingerprint(doc.text, settings, given)
        if fp.own > 0:
            prints[doc] = fp
        else:
            empty.append(doc.label)
    current = [d for d in prints if d.term is Term.CURRENT]
    previous = [d for d in prints if d.term is Term.PREVIOUS]
    pairs: list[Pair] = []
    compared = 0
    for a, b in [*combinations(current, 2), *product(current, previous)]:
        compared += 1
        m = fingerprints.compare(prints[a], prints[b])
        if max(m.share_a, m.share_b) < settings.floor:
            continue
        flagged = max(m.share_a, m.share_b) >= settings.threshold and m.matched >= settings.min_matched
        pairs.append(Pair(module, a, b, m.share_a, m.share_b, m.matched, flagged))
    pairs.sort(key=lambda p: (-p.score, -p.matched, p.a.student, p.b.student))
    for rank, p in enumerate(pairs[:settings.pages], 1):       # the best-ranked flagged pairs get a page
        if p.flagged:
            ra, rb = fingerprints.regions(prints[p.a], prints[p.b])
            pairs[rank - 1] = replace(p, regions_a=ra, regions_b=rb, page=page_name(module, rank))
    return ModuleResult(module, len(prints), compared, tuple(pairs), tuple(sorted(empty)))


def rank_class(documents: Sequence[Document], modules: Sequence[str], starter: Mapping[str, Sequence[str]],
               settings: Settings) -> tuple[ModuleResult, ...]:
    """rank_module for each module, in the course's order."""
    by_module: dict[str, list[Document]] = {m: [] for m in modules}
    for doc in documents:
        by_module.setdefault(doc.module, []).append(doc)
    return tuple(rank_module(m, by_module[m], starter.get(m, ()), settings) for m in modules)
