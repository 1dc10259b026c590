"""Specs for the mlp chapter, one module per part: the layers and their backprop (layers), the
optimizers (optim), gradient clipping (clip), Glorot's initialisation (glorot) and train_xor, a behavioural check."""
from grader.catalog.chapters.mlp.clip import CLIP_GRAD_NORM
from grader.catalog.chapters.mlp.glorot import GLOROT_UNIFORM
from grader.catalog.chapters.mlp.layers import LINEAR_BACKWARD, LINEAR_FORWARD, MLP_BACKWARD, MLP_FORWARD
from grader.catalog.chapters.mlp.optim import ADAM_STEP, MOMENTUM_STEP, SGD_STEP
from grader.catalog.chapters.mlp.train_xor import TRAIN_XOR

SPECS = (LINEAR_FORWARD, LINEAR_BACKWARD, MLP_FORWARD, MLP_BACKWARD, SGD_STEP, MOMENTUM_STEP, ADAM_STEP,
         GLOROT_UNIFORM, CLIP_GRAD_NORM, TRAIN_XOR)
