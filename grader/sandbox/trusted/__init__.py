"""The only grader code a sandboxed child imports: substitutes, drivers and the child side of probes.

A child imports, before it is confined and before the student's module, exactly the modules named
by the graded exercise's `ExerciseSpec.depends` and `ExerciseSpec.driver` ("package.module:function",
always in this package), and whatever those modules import: torch, the standard library,
`grader.trees` and other modules of this package. Nothing else of the grader is importable there.
Whatever the child can reach, the student's code can call, so:

- one small module per purpose: a substitute (the grader's version of a function the graded one
  calls, so that one bug is charged once) or a driver (`driver(student_module, name, *args,
  **kwargs)`: how the student's function is called, e.g. a trajectory of optimizer steps);
- no module holds a reference, an expected value, or the substitute of the exercise it is imported
  for: grading X imports only modules that do not define X (tests/test_catalog_trusted.py checks it);
- nothing here imports grader.catalog, grader.pipeline or anything else of the parent;
- substitutes run under the graded exercise's forbidden-API tripwires: plain tensor operations only
  (conv1d forbids every convolution kernel, so the conv2d substitute is an unfold and a matmul).

This __init__ imports nothing, so importing one module does not bring in its siblings.

Substitutes (module: function, the curriculum's signature):
  steps: heaviside, sign                      perceptron_forward, perceptron_update
  activations: sigmoid, tanh, elu, softmax    linear: linear_forward, linear_backward
  mlp_forward                                 conv: conv2d
  rnn_cell, rnn_forward, lstm_cell, gru_cell  sdpa: scaled_dot_product_attention
  mha: multi_head_attention                   causal_mask, positional_encoding
  layer_norm, add_and_norm, feed_forward      encoder_layer, decoder_layer, transformer_forward
Drivers:
  perceptron (perceptron_forward with a named step), optim_trajectories (sgd, momentum, adam),
  glorot_draws, train_xor, capstone_training (transformer_forward: the capstone, or a traced call)
Helpers they share: params (the transformer's seeded weights), tracing (records the layers'
inputs for the parent's localiser).
"""
