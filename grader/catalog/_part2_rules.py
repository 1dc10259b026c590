"""Forbidden-API rules of the rnn, lstm, gru and tokens chapters. One rule per constant, each
with its rationale. ATen patterns are prefixes of operator names ("aten::lstm" matches
aten::lstm and aten::lstm_cell): no operator that correct tensor code reaches starts with them.
"""
from grader.catalog.spec import Forbidden

_FUNCTIONAL = ("rnn_tanh", "rnn_relu", "rnn_tanh_cell", "rnn_relu_cell", "lstm", "lstm_cell", "gru", "gru_cell",
               "mkldnn_rnn_layer", "_cudnn_rnn", "miopen_rnn", "quantized_lstm", "quantized_gru",
               "quantized_lstm_cell", "quantized_gru_cell", "quantized_rnn_tanh_cell", "quantized_rnn_relu_cell")
_MODULES = ("RNNBase", "RNNCellBase", "RNN", "RNNCell", "LSTM", "LSTMCell", "GRU", "GRUCell")

# Rationale: the cells and loops are the exercise; PyTorch's recurrent layers and their functional
# kernels (reached through torch.*, torch._VF or torch.ops.aten) would compute the whole answer.
RECURRENT = Forbidden(
    name="torch recurrent layers",
    rationale="the recurrent cells and loops are the exercise: write the gates and the time loop with tensor "
              "operations, without torch.nn.RNN/LSTM/GRU(Cell) or their functional kernels (torch.lstm, "
              "torch.gru_cell, torch._VF...)",
    static=(*(f"torch.nn.{m}" for m in _MODULES), *(f"torch.nn.modules.rnn.{m}" for m in _MODULES), "torch._VF",
            "torch._C._VariableFunctions", *(f"torch.{f}" for f in _FUNCTIONAL),
            *(f"torch.ops.aten.{f}" for f in _FUNCTIONAL)),
    patch=(*(f"torch.nn.{m}" for m in _MODULES), *(f"torch.nn.modules.rnn.{m}" for m in _MODULES),
           *(f"torch.{f}" for f in _FUNCTIONAL), *(f"torch._VF.{f}" for f in _FUNCTIONAL[:8])),
)

# Rationale: the run-time net for a fused LSTM kernel reached by a route the tripwires above cannot
# patch (getattr on torch._C._VariableFunctions, whose attributes are read-only). On CPU only a whole
# LSTM sequence reaches the dispatcher as one kernel (aten::mkldnn_rnn_layer); RNN and GRU layers and
# every cell decompose into matmuls and activations before a dispatch mode sees them. So this net is
# attached to lstm_forward only: elsewhere it could not fire, and entering a dispatch mode costs about a
# second per graded exercise (its first use imports torch._dynamo in the sandboxed child).
LSTM_KERNELS = Forbidden(
    name="torch recurrent kernels",
    rationale="a fused LSTM kernel ran inside your code: write the gates and the time loop with tensor operations",
    aten=("aten::lstm", "aten::mkldnn_rnn", "aten::_cudnn_rnn", "aten::miopen_rnn", "aten::_thnn_fused_lstm",
          "aten::quantized_lstm", "aten::_lstm_mps"),
)

# Rationale: F.embedding is the lookup itself, and its backward kernel is embedding_backward itself.
EMBEDDING = Forbidden(
    name="torch.nn.functional.embedding",
    rationale="looking up rows of E (and scattering their gradients back) is the exercise: use indexing, "
              "index_select, index_add_ or a one-hot product, not F.embedding, nn.Embedding or their kernels",
    static=("torch.nn.functional.embedding", "torch.nn.functional.embedding_bag", "torch.embedding",
            "torch.embedding_bag", "torch._embedding_bag", "torch.nn.Embedding", "torch.nn.EmbeddingBag",
            "torch.nn.modules.sparse.Embedding", "torch.nn.modules.sparse.EmbeddingBag",
            "torch.ops.aten.embedding", "torch.ops.aten.embedding_dense_backward",
            "torch.ops.aten.embedding_backward", "torch.ops.aten._embedding_bag"),
    patch=("torch.nn.functional.embedding", "torch.nn.functional.embedding_bag", "torch.embedding",
           "torch.embedding_bag", "torch.nn.Embedding", "torch.nn.EmbeddingBag",
           "torch.nn.modules.sparse.Embedding", "torch.nn.modules.sparse.EmbeddingBag"),
)

# Rationale: the run-time net for the embedding kernel reached through torch.ops.aten by a computed name.
# Attached to embedding_lookup, where the kernel is the whole answer (same dispatch-mode cost as above).
EMBEDDING_KERNELS = Forbidden(
    name="torch embedding kernels",
    rationale="an embedding kernel ran inside your code: index the rows of E yourself",
    aten=("aten::embedding", "aten::_embedding_bag"),
)
