"""Activations and their derivatives.

Without a nonlinearity between them, stacked layers collapse into one linear map (XOR stays
out of reach). Each activation here comes with its derivative `<name>_grad(z)`, the factor
backprop multiplies by when it passes through the activation:

    A = f(Z)      dL/dZ = dL/dA * f'(Z)      (elementwise, any shape)

Conventions:
- every function is elementwise on a tensor `z` of any shape (...) and returns the same
  shape and dtype;
- at a kink (z = 0 for relu, leaky_relu, elu) the derivative is the left-hand one, as
  PyTorch's autograd computes it: relu_grad(0) = 0, leaky_relu_grad(0) = slope,
  elu_grad(0) = alpha;
- large inputs must not produce nan or inf where the true value is finite: an exponential of
  a large positive number overflows (float32 overflows above about 88.7), so arrange each
  formula to exponentiate only numbers <= 0.

Allowed: `torch.exp`, `torch.expm1`, `torch.log`, `torch.erf`, `torch.where`, `torch.clamp`,
`torch.maximum`, `amax`, ... Forbidden in each activation: PyTorch's own version of it
(`torch.sigmoid` in sigmoid, `torch.tanh` in tanh, `F.relu` in relu, `torch.softmax` in
softmax, ...). The `*_grad` exercises are backprop by hand: `torch.autograd`, `.backward()` and
`requires_grad` are forbidden there, but PyTorch's activations themselves may be used.
"""
import math

import torch


def sigmoid(z):
    """The logistic sigmoid, squashing any number into (0, 1): a smooth TLU step whose slope
    backprop can follow (the hard step has slope 0 everywhere, so nothing would flow back).

        sigmoid(z) = 1 / (1 + exp(-z))

    Numerical stability: for z = -1e4, exp(-z) overflows to inf (1 / inf = 0 is still right),
    but the equivalent exp(z) / (1 + exp(z)) gives inf / inf = nan for z = 1e4. Use a form
    whose exponentials never see a large positive argument, e.g. exp(-|z|) and two branches:

        z >= 0:  1 / (1 + exp(-z))          z < 0:  exp(z) / (1 + exp(z))

    Args:
        z: (...) any shape.
    Returns:
        (...) same shape and dtype, values in [0, 1].

    Forbidden: torch.sigmoid, torch.special.expit, F.sigmoid, Tensor.sigmoid.
    Hint: torch.where(cond, a, b) picks elementwise; compute e = exp(-|z|) once.
    """
    ### BEGIN SOLUTION
    e = torch.exp(-z.abs())                       # in (0, 1]: never overflows
    return torch.where(z >= 0, 1 / (1 + e), e / (1 + e))
    ### END SOLUTION


def sigmoid_grad(z):
    """Derivative of the sigmoid: d sigmoid(z) / dz = sigmoid(z) * (1 - sigmoid(z)).

    Args:
        z: (...) pre-activations.
    Returns:
        (...) same shape and dtype, values in [0, 0.25].

    The grader runs this with its own sigmoid in place of yours, so a bug there counts once.
    Forbidden: autograd (torch.autograd, .backward(), requires_grad).
    Hint: reuse sigmoid; exp(-z) / (1 + exp(-z))**2 is the same on paper but overflows.
    """
    ### BEGIN SOLUTION
    s = sigmoid(z)
    return s * (1 - s)
    ### END SOLUTION


def tanh(z):
    """The hyperbolic tangent, squashing into (-1, 1) and centred on 0 (the activation of the
    recurrent cells later in the course).

        tanh(z) = (exp(z) - exp(-z)) / (exp(z) + exp(-z))

    Written like that it overflows (inf / inf = nan) for |z| above about 89 in float32.
    Stable forms use only exp(-2|z|):  tanh(z) = sign(z) * (1 - exp(-2|z|)) / (1 + exp(-2|z|)),
    or the identity tanh(z) = 2 * sigmoid(2z) - 1 with a stable sigmoid.

    Args:
        z: (...) any shape.
    Returns:
        (...) same shape and dtype, values in [-1, 1].

    Forbidden: torch.tanh, F.tanh, Tensor.tanh (torch.sigmoid is allowed here).
    Hint: tanh is odd, tanh(-z) = -tanh(z): compute it for |z| and put the sign back.
    """
    ### BEGIN SOLUTION
    e = torch.exp(-2 * z.abs())                   # in (0, 1]
    t = (1 - e) / (1 + e)                          # tanh(|z|)
    return torch.where(z < 0, -t, t)
    ### END SOLUTION


def tanh_grad(z):
    """Derivative of tanh: d tanh(z) / dz = 1 - tanh(z)^2.

    Near 0 the slope is 1; for large |z| tanh saturates and the slope vanishes, one reason
    deep stacks of tanh units learn slowly (vanishing gradients).

    Args:
        z: (...) pre-activations.
    Returns:
        (...) same shape and dtype, values in [0, 1].

    The grader runs this with its own tanh in place of yours.
    Forbidden: autograd (torch.autograd, .backward(), requires_grad).
    Hint: call tanh once and reuse the result.
    """
    ### BEGIN SOLUTION
    t = tanh(z)
    return 1 - t * t
    ### END SOLUTION


def relu(z):
    """The rectified linear unit: relu(z) = max(z, 0).

    The usual choice for hidden layers, the XOR network of the mlp chapter included: cheap,
    and its slope is 1 wherever the unit is active, so gradients pass through undiminished.

    Args:
        z: (...) any shape.
    Returns:
        (...) same shape and dtype: z where z > 0, else 0.

    Forbidden: torch.relu, F.relu, Tensor.relu, nn.ReLU.
    Hint: torch.clamp(z, min=0) or torch.where.
    """
    ### BEGIN SOLUTION
    return torch.clamp(z, min=0)
    ### END SOLUTION


def relu_grad(z):
    """Derivative of relu: 1 where z > 0, else 0 (including at z = 0, as PyTorch does).

    Args:
        z: (...) pre-activations.
    Returns:
        (...) same shape and dtype, 0.0 or 1.0 (numbers, not bools).

    Forbidden: autograd (torch.autograd, .backward(), requires_grad).
    Hint: a strict comparison, converted with .to(z.dtype).
    """
    ### BEGIN SOLUTION
    return (z > 0).to(z.dtype)
    ### END SOLUTION


def leaky_relu(z, slope=0.01):
    """Leaky relu: z where z > 0, slope * z otherwise.

    A relu unit whose input stays negative gets no gradient and never recovers (a "dead"
    unit); the small slope on the negative side keeps a trickle of gradient flowing.

    Args:
        z: (...) any shape.   slope: the negative-side slope (float), 0.01 by default.
    Returns:
        (...) same shape and dtype.

    Forbidden: F.leaky_relu, nn.LeakyReLU.
    Hint: use the slope you are given; the grader passes other values than 0.01.
    """
    ### BEGIN SOLUTION
    return torch.where(z > 0, z, slope * z)
    ### END SOLUTION


def leaky_relu_grad(z, slope=0.01):
    """Derivative of leaky_relu: 1 where z > 0, slope where z <= 0 (z = 0 takes the left side).

    Args:
        z: (...) pre-activations.   slope: the negative-side slope (float).
    Returns:
        (...) same shape and dtype.

    Forbidden: autograd (torch.autograd, .backward(), requires_grad).
    Hint: torch.where(z > 0, torch.ones_like(z), torch.full_like(z, slope)) has the right dtype.
    """
    ### BEGIN SOLUTION
    return torch.where(z > 0, torch.ones_like(z), torch.full_like(z, slope))
    ### END SOLUTION


def elu(z, alpha=1.0):
    """Exponential linear unit: smooth below 0, saturating at -alpha (negative outputs pull the
    mean activation towards 0, which helps training).

        elu(z) = z                       if z > 0
                 alpha * (exp(z) - 1)    if z <= 0

    Only exponentiate the z <= 0 side: torch.where evaluates both branches, and exp of a
    large positive z is inf (harmless in the branch not taken, unless alpha is 0: 0 * inf = nan).

    Args:
        z: (...) any shape.   alpha: the saturation level (float), 1.0 by default.
    Returns:
        (...) same shape and dtype.

    Forbidden: F.elu, nn.ELU, F.celu, F.selu.
    Hint: torch.expm1(x) = exp(x) - 1, accurate near 0; clamp z to <= 0 before exponentiating.
    """
    ### BEGIN SOLUTION
    return torch.where(z > 0, z, alpha * torch.expm1(torch.clamp(z, max=0)))
    ### END SOLUTION


def elu_grad(z, alpha=1.0):
    """Derivative of elu: 1 where z > 0, alpha * exp(z) where z <= 0 (so alpha at z = 0).

    Args:
        z: (...) pre-activations.   alpha: as in elu.
    Returns:
        (...) same shape and dtype.

    The grader runs this with its own elu in place of yours.
    Forbidden: autograd (torch.autograd, .backward(), requires_grad).
    Hint: for z <= 0, alpha * exp(z) = elu(z) + alpha.
    """
    ### BEGIN SOLUTION
    return torch.where(z > 0, torch.ones_like(z), alpha * torch.exp(torch.clamp(z, max=0)))
    ### END SOLUTION


def gelu(z):
    """Gaussian error linear unit, exact form: z times the standard normal CDF of z.

    The activation of the transformer's feed-forward layers in many modern models: like relu
    for large |z|, smooth around 0.

        gelu(z) = z * Phi(z),   Phi(z) = 0.5 * (1 + erf(z / sqrt(2)))

    This is the exact GELU (PyTorch's default, approximate='none'), not the tanh
    approximation 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3))).

    Args:
        z: (...) any shape.
    Returns:
        (...) same shape and dtype.

    Forbidden: F.gelu, nn.GELU. Allowed: torch.erf, torch.special.ndtr.
    Hint: math.sqrt(2) is a Python float; erf of a tensor is torch.erf.
    """
    ### BEGIN SOLUTION
    return 0.5 * z * (1 + torch.erf(z / math.sqrt(2)))
    ### END SOLUTION


def gelu_grad(z):
    """Derivative of the exact gelu, by the product rule:

        gelu'(z) = Phi(z) + z * phi(z),   phi(z) = exp(-z^2 / 2) / sqrt(2 pi)   (the normal density)

    Args:
        z: (...) pre-activations.
    Returns:
        (...) same shape and dtype.

    Forbidden: autograd (torch.autograd, .backward(), requires_grad).
    Hint: compute Phi(z) and phi(z) as two tensors first; for large |z|, phi underflows to 0,
    which is right.
    """
    ### BEGIN SOLUTION
    cdf = 0.5 * (1 + torch.erf(z / math.sqrt(2)))
    pdf = torch.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    return cdf + z * pdf
    ### END SOLUTION


def softmax(z, dim=-1):
    """Softmax along `dim`: turns scores (logits) into probabilities that sum to 1.

        softmax(z)_i = exp(z_i) / sum_j exp(z_j)        (i, j along dim)

    The classifier's last step: with one output per class (soup, sandwich, salad), softmax
    gives the probability of each class.

    Numerical stability: exp(1e4) is inf. Softmax does not change when a constant is
    subtracted from every z_j along dim, so subtract the maximum along dim first: then
    every exponent is <= 0 and the largest term is exactly exp(0) = 1.

    Args:
        z: (...) logits of any shape.   dim: the dimension to normalise over (default: last).
    Returns:
        (...) same shape and dtype; sums to 1 along dim.

    Forbidden: torch.softmax, F.softmax, Tensor.softmax, torch.special.softmax (and log_softmax).
    Hint: z.amax(dim=dim, keepdim=True) keeps the reduced dimension, so it broadcasts back.
    """
    ### BEGIN SOLUTION
    e = torch.exp(z - z.amax(dim=dim, keepdim=True))   # every exponent <= 0
    return e / e.sum(dim=dim, keepdim=True)
    ### END SOLUTION


def log_softmax(z, dim=-1):
    """Log of the softmax along `dim`, computed stably (the input of the cross-entropy loss).

        log_softmax(z)_i = z_i - log(sum_j exp(z_j))
                         = (z_i - m) - log(sum_j exp(z_j - m)),   m = max_j z_j

    Do not take log(softmax(z)): a probability that underflows to 0 gives log(0) = -inf,
    where the true value (about -2e4 for logits 1e4 apart) is finite.

    Args:
        z: (...) logits of any shape.   dim: the dimension to normalise over (default: last).
    Returns:
        (...) same shape and dtype; exp of it sums to 1 along dim.

    Forbidden: torch.log_softmax, F.log_softmax, Tensor.log_softmax, torch.logsumexp (and softmax).
    Hint: the max trick again; the largest term of the sum is exactly 1, so its log is >= 0.
    """
    ### BEGIN SOLUTION
    shifted = z - z.amax(dim=dim, keepdim=True)
    return shifted - torch.log(torch.exp(shifted).sum(dim=dim, keepdim=True))
    ### END SOLUTION
