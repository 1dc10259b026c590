"""Specs for the activations chapter: six activations and their derivatives (elementwise), then
softmax and log_softmax (softmax), in the course's order: each activation next to its derivative."""
from grader.catalog.chapters.activations.elementwise import SPECS_ACT, SPECS_GRAD
from grader.catalog.chapters.activations.softmax import LOG_SOFTMAX_SPEC, SOFTMAX_SPEC

SPECS = (SPECS_ACT[0], SPECS_GRAD[0], SPECS_ACT[1], SPECS_GRAD[1], SPECS_ACT[2], SPECS_GRAD[2],
         SPECS_ACT[3], SPECS_GRAD[3], SPECS_ACT[4], SPECS_GRAD[4], SPECS_ACT[5], SPECS_GRAD[5],
         SOFTMAX_SPEC, LOG_SOFTMAX_SPEC)
