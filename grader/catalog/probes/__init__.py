"""Localisers: after a failed case, say where the student's function first goes wrong, in one
sentence. They run in the parent and may call the student's functions again through the sandbox
(a probe): gates (which gate of an LSTM or GRU cell), steps (which time step of a sequence),
sublayers (which sub-layer of a transformer layer, which stage of the model)."""
