"""Correct code written the way textbooks write it is never FORBIDDEN, and real autograd still is.

The static scan proves only names that resolve to a forbidden object; a method of a value whose
type the source does not show is the run-time tripwires' to judge (grader.pipeline.static,
grader.sandbox.tripwires). The scenarios (tests/fixtures/submissions/<name>/, built by
tests/scenarios.py):

- textbook_layer_classes: an object-oriented layer with its own forward/backward methods for
  every manual-gradient exercise (CS231n, d2l.ai style);
- textbook_value_class: a micrograd-style Value class whose methods are named relu, sigmoid,
  tanh, softmax, log_softmax, logsumexp, backward, and a TLU class with heaviside/sign methods;
- requires_grad_false: requires_grad=False on torch.zeros(...), requires_grad_(False), reading it;
- autograd_routes: real autograd by every route, each caught statically where the source proves
  it and at run time where it does not;
- kernels_by_other_names: the library's own kernels through out= overloads and siblings, every net in
  the child blinded: the kernel's count catches them;
- autograd_past_the_engine: PyTorch's derivative formulas without the engine (a graph's nodes called
  directly, forward-mode AD) with every net inside the child blinded: the kernel's count catches them;
- kernels_other_layouts: the same computation's kernel for another layout or backend (a sparse
  softmax, MKL-DNN's sigmoid, tanh, convolution and pools), every net in the child blinded: the
  kernel's count catches them (each rule's family names them);
- derivative_kernels: autograd's derivative kernels (sigmoid_backward, threshold_backward,
  mse_loss_backward, ...) called as ATen operators by built names, with no engine or graph;
- optimizer_internals: torch.optim's update loops (_single_tensor_sgd, _single_tensor_adam) called through
  their modules by built names;
- quantization_layers: the quantization toolkit's float LSTM (torch.ao.nn.quantizable), made of
  Linear layers, so that no recurrent kernel runs: a library LSTM all the same;
- count_undone: the same, with the kernel's count undone in the child's memory first (libtorch's code
  pages dropped, in the child and in a helper it forks; its code written back from the file): the
  system-call filter and the code's seal refuse it, and the count catches the kernel;
- tensor_method_shortcuts: PyTorch's activation as a method of the input tensor (z.relu());
- calls_beyond_the_contract: a function called with an extra keyword of the student's own, or with
  arguments the contract's function does not take, by another exercise's code: the student's own
  function answers, not the grader's stand-in;
- checks_at_import: a module whose top level checks its answer against PyTorch's own function, as
  a notebook's last cell does: not charged, in it or in a module importing it;
- dead_code_checks: a check against PyTorch's own function (or autograd) kept under `if DEBUG:`
  with DEBUG False, an earlier version left after the `return`, an `if False:` branch: code that
  never runs proves no use;
- textbook_encoding_float32: the positional encoding in the Annotated Transformer's float32
  arithmetic, which the transformer adds through `attention.positional_encoding` (its own, not the
  grader's stand-in): a float64 model on a float32 encoding, as the contract has it;
- torch_parameters: results wrapped in torch's own nn.Parameter (a fixed encoding, updated weights):
  a Parameter is a tensor's values, where a subclass of the student's own is refused;
- own_nn_modules: nn.Linear layers (and an nn.Module of them) loaded with the given weights, where
  autograd is allowed: the outputs require grad, and are right.
"""
import pytest

import scenarios
from grader.catalog import catalog
from grader.sandbox import native_watch

# Every manual-gradient exercise: autograd is forbidden there.
MANUAL_GRADIENTS = sorted(i for i, s in catalog().items() if "autograd" in {r.name for r in s.forbidden}
                          and i != "mlp.train_xor")   # judged by training, with the course's mlp_backward
CORRECT = {
    "textbook_layer_classes": MANUAL_GRADIENTS + ["rnn.rnn_bptt", "tokens.embedding_backward"],
    "textbook_value_class": ["activations.sigmoid", "activations.sigmoid_grad", "activations.tanh",
                             "activations.tanh_grad", "activations.relu", "activations.relu_grad",
                             "activations.softmax", "activations.log_softmax", "neurons.heaviside", "neurons.sign"],
    "requires_grad_false": ["tokens.embedding_backward", "losses.mse_loss_grad"],
    "calls_beyond_the_contract": ["mlp.mlp_backward", "cnn.conv1d"],
    "checks_at_import": ["attention.scaled_dot_product_attention", "attention.multi_head_attention",
                         "transformer.encoder_layer", "transformer.transformer_forward"],
    "own_nn_modules": ["lstm.lstm_cell", "attention.multi_head_attention", "transformer.feed_forward"],
    "dead_code_checks": ["activations.softmax", "activations.sigmoid", "activations.relu",
                         "activations.sigmoid_grad"],
    "textbook_encoding_float32": ["attention.positional_encoding", "transformer.transformer_forward"],
    "torch_parameters": ["attention.positional_encoding", "mlp.sgd_step"],
}
# (exercise, how it is caught, the source line the message must quote)
AUTOGRAD_ROUTES = [
    ("losses.mse_loss_grad", "run", "loss.backward()"),
    ("losses.cross_entropy_grad", "run", "ce.backward()"),                        # x.requires_grad = True first
    ("activations.sigmoid_grad", "static", "(g,) = torch.autograd.grad(sigmoid(x).sum(), x)"),
    ("activations.tanh_grad", "static", "return torch.func.grad(lambda x: tanh(x).sum())(z)"),
    ("activations.relu_grad", "static", "_, pullback = vjp(relu, z)"),
    ("activations.leaky_relu_grad", "run", "self.out.backward(dout)"),            # inside the student's backward
    ("activations.elu_grad", "run", "(g,) = engine.grad(elu(x, alpha).sum(), x)"),
    ("activations.gelu_grad", "run", "_, pullback = transforms.vjp(gelu, z)"),
    ("rnn.rnn_bptt", "run", "(H * dH).sum().backward()"),
    ("tokens.embedding_backward", "run", "out.backward(d_out)"),
    ("mlp.linear_backward", "static", "b = torch.zeros(W.shape[1], dtype=X.dtype, requires_grad=True)"),
    ("mlp.mlp_backward", "run", "loss, pullback = func.vjp(loss_of, flat)"),
]
TENSOR_METHODS = [
    ("activations.sigmoid", "return z.sigmoid()", "torch.Tensor.sigmoid"),
    ("activations.tanh", "return z.tanh()", "torch.Tensor.tanh"),
    ("activations.relu", "return z.clone().relu_()", "torch.Tensor.relu_"),
    ("activations.softmax", "return z.softmax(dim)", "torch.Tensor.softmax"),
    ("activations.log_softmax", "return z - z.logsumexp(dim=dim, keepdim=True)", "torch.Tensor.logsumexp"),
    ("neurons.heaviside", "return z.heaviside(torch.ones_like(z))", "torch.Tensor.heaviside"),
    ("neurons.sign", "return z.sign()", "torch.Tensor.sign"),
]
CAUGHT = {"static": "uses a forbidden API: ", "run": "called a forbidden API while running: "}


@pytest.fixture(scope="module")
def graded(grade_dir):
    cache = {}

    def get(folder, ids):
        if folder not in cache:
            result = grade_dir(scenarios.submission(folder), *ids)
            cache[folder] = {e.id: e for e in result.exercises}
        return cache[folder]
    return get


def _line_of(folder, exercise, text):
    """The line of `text` in the built module (the scenario spliced into the solution)."""
    lines = [i for i, line in enumerate(scenarios.source(folder, exercise.split(".")[0]).splitlines(), 1)
             if line.strip() == text]
    assert len(lines) == 1, (folder, text, lines)
    return lines[0]


def test_every_manual_gradient_exercise_has_a_layer_class_fixture():
    assert set(MANUAL_GRADIENTS) <= set(CORRECT["textbook_layer_classes"])
    assert {"rnn.rnn_bptt", "tokens.embedding_backward", "losses.cross_entropy_grad", "mlp.mlp_backward",
            "activations.gelu_grad"} <= set(MANUAL_GRADIENTS)


@pytest.mark.parametrize("folder,exercise", [(f, i) for f, ids in CORRECT.items() for i in ids])
def test_textbook_code_scores_full_marks(graded, folder, exercise):
    e = graded(folder, CORRECT[folder])[exercise]
    assert e.status.value == "passed" and e.points == e.max_points > 0, (e.status, e.message)


def test_what_the_top_level_called_at_import_is_said(graded):
    e = graded("checks_at_import", CORRECT["checks_at_import"])["attention.multi_head_attention"]
    line = _line_of("checks_at_import", "attention.x", "print(torch.nn.MultiheadAttention(8, 2, batch_first=True))")
    assert f"At import, your module called torch.nn.MultiheadAttention (line {line})" in " ".join(e.notes), e.notes


@pytest.mark.parametrize("exercise,how,line", AUTOGRAD_ROUTES, ids=[r[0] for r in AUTOGRAD_ROUTES])
def test_real_autograd_is_caught_by_every_route(graded, exercise, how, line):
    e = graded("autograd_routes", [r[0] for r in AUTOGRAD_ROUTES])[exercise]
    assert e.status.value == "forbidden" and e.points == 0, (e.status, e.message)
    assert e.message.startswith(CAUGHT[how]), e.message
    assert f"line {_line_of('autograd_routes', exercise, line)}: `{line}`" in e.message, e.message
    assert "Why: this exercise is backprop by hand: compute the gradient from its formula" in e.message


PAST_THE_ENGINE = ["activations.sigmoid_grad", "activations.tanh_grad", "losses.mse_loss_grad"]
UNDONE = ["activations.sigmoid", "activations.tanh", "cnn.max_pool2d"]
DERIVATIVE_KERNELS = ["activations.sigmoid_grad", "activations.relu_grad", "activations.tanh_grad",
                      "losses.mse_loss_grad", "losses.cross_entropy_grad"]
OTHER_LAYOUTS = ["activations.softmax", "activations.sigmoid", "activations.tanh", "cnn.conv2d", "cnn.max_pool2d",
                 "cnn.avg_pool2d"]
OTHER_NAMES = ["cnn.conv2d", "cnn.max_pool2d", "activations.sigmoid", "activations.softmax", "losses.mse_loss",
               "losses.cross_entropy", "transformer.layer_norm"]


@pytest.mark.skipif(bool(native_watch.unavailable()), reason=native_watch.unavailable() or "")
@pytest.mark.parametrize("exercise", PAST_THE_ENGINE)
def test_autograd_past_the_engine_is_counted_by_the_kernel(graded, exercise):
    e = graded("autograd_past_the_engine", PAST_THE_ENGINE)[exercise]
    assert e.status.value == "forbidden" and e.points == 0, (e.status, e.message, e.notes)
    assert e.message.startswith(CAUGHT["run"]) and "counted by the operating system" in e.message, e.message


@pytest.mark.skipif(bool(native_watch.unavailable()), reason=native_watch.unavailable() or "")
@pytest.mark.parametrize("exercise", OTHER_NAMES)
def test_library_kernels_by_other_names_are_counted_by_the_kernel(graded, exercise):
    """An out= overload, a sibling that computes the same (glu, huber, masked softmax, group norm), with
    the tripwires and the dispatch mode blinded: the kernel's count is the line that holds."""
    e = graded("kernels_by_other_names", OTHER_NAMES)[exercise]
    assert e.status.value == "forbidden" and e.points == 0, (e.status, e.message, e.notes)
    assert e.message.startswith(CAUGHT["run"]) and "counted by the operating system" in e.message, e.message


@pytest.mark.skipif(bool(native_watch.unavailable()), reason=native_watch.unavailable() or "")
@pytest.mark.parametrize("exercise", DERIVATIVE_KERNELS)
def test_autograds_derivative_kernels_called_directly_are_counted(graded, exercise):
    """torch.ops.aten.sigmoid_backward & co. by built names: the formula autograd runs, without its engine."""
    e = graded("derivative_kernels", DERIVATIVE_KERNELS)[exercise]
    assert e.status.value == "forbidden" and e.points == 0, (e.status, e.message, e.notes)
    assert "_backward" in e.message and "counted by the operating system" in e.message, e.message


@pytest.mark.parametrize("exercise", ["mlp.sgd_step", "mlp.adam_step"])
def test_torch_optims_update_loops_are_torch_optim(graded, exercise):
    """torch.optim.adam._single_tensor_adam & co., reached through their module by built names."""
    e = graded("optimizer_internals", ["mlp.sgd_step", "mlp.adam_step"])[exercise]
    assert e.status.value == "forbidden" and e.points == 0, (e.status, e.message)
    assert e.message.startswith(CAUGHT["run"]) and "_single_tensor_" in e.message, e.message


@pytest.mark.parametrize("exercise,caught", [("lstm.lstm_cell", "run"), ("lstm.lstm_forward", "static")])
def test_the_quantization_toolkits_lstm_is_a_library_lstm(graded, exercise, caught):
    """torch.ao.nn.quantizable's LSTM is PyTorch's, built of Linear layers (no recurrent kernel runs)."""
    e = graded("quantization_layers", ["lstm.lstm_cell", "lstm.lstm_forward"])[exercise]
    assert e.status.value == "forbidden" and e.points == 0, (e.status, e.message)
    assert e.message.startswith(CAUGHT[caught]) and "quantizable" in e.message, e.message


@pytest.mark.skipif(bool(native_watch.unavailable()), reason=native_watch.unavailable() or "")
@pytest.mark.parametrize("exercise", OTHER_LAYOUTS)
def test_the_same_kernel_in_another_layout_or_backend_is_counted(graded, exercise):
    """A sparse tensor's softmax, MKL-DNN's sigmoid, tanh, convolution and pools never reach the dense
    kernel; with the in-child nets blinded, each rule's family (Forbidden.family) lists them for the count."""
    e = graded("kernels_other_layouts", OTHER_LAYOUTS)[exercise]
    assert e.status.value == "forbidden" and e.points == 0, (e.status, e.message, e.notes)
    assert e.message.startswith(CAUGHT["run"]) and "counted by the operating system" in e.message, e.message


@pytest.mark.skipif(bool(native_watch.unavailable()), reason=native_watch.unavailable() or "")
@pytest.mark.parametrize("exercise", UNDONE)
def test_the_kernels_count_cannot_be_undone_in_the_child(graded, exercise):
    e = graded("count_undone", UNDONE)[exercise]
    assert e.status.value == "forbidden" and e.points == 0, (e.status, e.message, e.notes)
    assert e.message.startswith(CAUGHT["run"]) and "counted by the operating system" in e.message, e.message


@pytest.mark.parametrize("exercise,line,via", TENSOR_METHODS, ids=[r[0] for r in TENSOR_METHODS])
def test_a_tensor_method_shortcut_is_caught_at_run_time(graded, exercise, line, via):
    e = graded("tensor_method_shortcuts", [r[0] for r in TENSOR_METHODS])[exercise]
    assert e.status.value == "forbidden" and e.points == 0, (e.status, e.message)
    n = _line_of("tensor_method_shortcuts", exercise, line)
    assert e.message.startswith(f"{CAUGHT['run']}{via} (line {n}): "), e.message
    assert f"line {n}: `{line}`" in e.message and ". Why: " in e.message, e.message


def test_the_message_quotes_each_line_once_and_names_another_module():
    """grader.pipeline.forbidden, pure: one call that trips three wires is one line quoted; a hit in a helper
    module the exercise imports names that file; a hit outside the submission's files keeps only its API."""
    from grader.pipeline.forbidden import runtime_message
    spec = catalog()["losses.mse_loss_grad"]
    sources = {"losses": "import torch\n\ndef mse_loss_grad(p, t):\n    loss.backward()\n",
               "helpers": "def f(x):\n    return x.relu()\n"}
    hits = [{"rule": "autograd", "via": v, "file": "losses.py", "line": 4}
            for v in ("torch.Tensor.backward", "torch.autograd.backward",
                      "torch.autograd.variable.Variable._execution_engine")]
    hits += [{"rule": "autograd", "via": "torch.autograd.grad", "file": "helpers.py", "line": 2},
             {"rule": "autograd", "via": "torch.func.vjp", "file": "3456.py", "line": 9}]
    message = runtime_message(spec, hits, sources)
    assert message.startswith("called a forbidden API while running: torch.Tensor.backward (line 4): autograd; "
                              "torch.autograd.grad (helpers.py, line 2): autograd; torch.func.vjp: autograd. "
                              "line 4: `loss.backward()`. helpers.py line 2: `return x.relu()`. Why: "), message
    assert message.count("torch.autograd.backward") == 0
