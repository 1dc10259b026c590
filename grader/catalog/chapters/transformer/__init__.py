"""Specs for the transformer chapter, in the course's order: the sub-layers and layers (layers),
the whole model and its capstone (model), greedy decoding (decode). The parent-side work of this
chapter runs on one intra-op thread (grader.catalog.spec.on_one_thread)."""
from grader.catalog.chapters.transformer.decode import GREEDY_DECODE_SPEC
from grader.catalog.chapters.transformer.layers import (ADD_AND_NORM_SPEC, DECODER_LAYER_SPEC, ENCODER_LAYER_SPEC,
                                                        FEED_FORWARD_SPEC, LAYER_NORM_SPEC)
from grader.catalog.chapters.transformer.model import TRANSFORMER_FORWARD_SPEC
from grader.catalog.spec import on_one_thread

SPECS = tuple(on_one_thread(s) for s in (LAYER_NORM_SPEC, ADD_AND_NORM_SPEC, FEED_FORWARD_SPEC, ENCODER_LAYER_SPEC,
                                         DECODER_LAYER_SPEC, TRANSFORMER_FORWARD_SPEC, GREEDY_DECODE_SPEC))
