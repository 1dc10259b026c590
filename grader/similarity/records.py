"""What the similarity check hands to its reports: frozen records, nothing recomputed later.

A Document is one student's module as it was compared (the text shown in the side-by-side view,
offsets in Region refer to it); a Pair is two documents of one module with the share of each
that matches the other; a Report is every module's ranked pairs plus what was skipped and why.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Term(str, Enum):
    """Which class a submission belongs to: pairs are this term x this term, or this term x the previous one."""

    CURRENT = "this term"
    PREVIOUS = "previous term"


@dataclass(frozen=True)
class Settings:
    """How submissions are compared (docs/similarity.md explains each number)."""

    threshold: float = 0.5      # a pair is flagged for review when either share reaches this
    floor: float = 0.2          # pairs below this are left out of the table and the CSV
    noise: int = 25             # k: matches shorter than this many normalised characters are ignored
    guarantee: int = 30         # matches at least this long are always found (winnowing window = guarantee - noise + 1)
    min_matched: int = 60       # a flagged pair shares at least this many normalised characters
    starter_gram: int = 10      # runs of this many normalised characters found in the starter files are theirs
    pages: int = 50             # side-by-side pages per module, for its highest-ranked flagged pairs

    @property
    def window(self) -> int:
        return self.guarantee - self.noise + 1


@dataclass(frozen=True)
class Document:
    student: str
    term: Term
    module: str
    text: str                   # the code as compared and shown (a notebook: its code cells)
    origin: str                 # where it came from, for the reader

    @property
    def label(self) -> str:
        return self.student if self.term is Term.CURRENT else f"{self.student} ({self.term.value})"


@dataclass(frozen=True)
class Region:
    """A run of a document's text that matches the other document; `match` numbers the
    corresponding runs on both sides alike (1, 2, ... in the order of the first document)."""

    start: int
    end: int
    match: int


@dataclass(frozen=True)
class Pair:
    module: str
    a: Document
    b: Document
    share_a: float              # of a's code beyond the starter files, the part found in b
    share_b: float
    matched: int                # normalised characters of a that match b
    flagged: bool
    regions_a: tuple[Region, ...] = ()      # filled for pairs with a side-by-side page only
    regions_b: tuple[Region, ...] = ()
    page: str = ""                          # the side-by-side page, relative to the output folder ("": none)

    @property
    def score(self) -> float:
        return max(self.share_a, self.share_b)


@dataclass(frozen=True)
class ModuleResult:
    module: str
    documents: int                          # submissions of this module that were compared
    compared: int                           # pairs compared
    pairs: tuple[Pair, ...]                 # at or above the floor, highest score first
    starter_only: tuple[str, ...] = ()      # labels of submissions with nothing beyond the starter files

    @property
    def flagged(self) -> tuple[Pair, ...]:
        return tuple(p for p in self.pairs if p.flagged)

    @property
    def without_page(self) -> int:
        """Flagged pairs past Settings.pages: in the table and the CSV, without a page of their own."""
        return sum(1 for p in self.pairs if p.flagged and not p.page)


@dataclass(frozen=True)
class Report:
    settings: Settings
    modules: tuple[ModuleResult, ...]
    students: int                           # this term's students read
    previous: int = 0                       # previous term's students read (--against)
    boilerplate: tuple[str, ...] = ()       # what was subtracted as starter code
    notes: tuple[str, ...] = field(default=())   # students or files skipped, and why

    @property
    def flagged(self) -> tuple[Pair, ...]:
        return tuple(p for m in self.modules for p in m.flagged)
