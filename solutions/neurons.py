"""Neurons: threshold logic units (TLUs) and the perceptron.

The oldest model of a neuron adds up its weighted inputs and fires when the sum reaches a
threshold. A layer of such units is a perceptron, written in the course's row-vector
convention as

    Y = step(X @ W + b)        X (n, d) instances, W (d, k), b (k,), Y (n, k)

one column per output unit. The running story: is a pizza a soup, a sandwich or a salad?
Three output units, one per answer, each learning its own yes/no line through feature space.
A single line cannot separate XOR, and that is why the next chapter stacks layers.

Allowed: any tensor operation (`@`, comparisons, `torch.where`, `.to(dtype)`, `torch.outer`, ...).
Forbidden: `torch.heaviside` in `heaviside` and `torch.sign`/`torch.sgn` in `sign` (each is the
exercise itself). Functions must not modify their inputs in place.
"""
import torch


def heaviside(z):
    """The Heaviside step: the classic TLU activation.

    Each output unit of the pizza perceptron answers one yes/no question ("is it a soup?"):
    it fires (1) when its weighted sum reaches the threshold and stays quiet (0) otherwise.

        heaviside(z) = 1   if z >= 0
                       0   if z <  0

    Note the convention at exactly 0: the unit fires (1), as torch.heaviside(z, 1.0) does.

    Args:
        z: tensor of any shape (...), floating point.

    Returns:
        tensor of the same shape and dtype as z, holding 0.0 and 1.0 (not bools).

    Forbidden: torch.heaviside (this is the thing itself).
    Hint: a comparison gives a bool tensor; `.to(z.dtype)` turns it into 0.0/1.0.
    """
    ### BEGIN SOLUTION
    return (z >= 0).to(z.dtype)
    ### END SOLUTION


def sign(z):
    """The sign function, the other classic TLU step: answers -1 (no) / +1 (yes), and 0
    when the weighted sum sits exactly on the threshold.

        sign(z) = -1  if z < 0
                   0  if z == 0
                  +1  if z > 0

    Args:
        z: tensor of any shape (...), floating point.

    Returns:
        tensor of the same shape and dtype as z with values -1.0, 0.0 or 1.0.

    Forbidden: torch.sign, torch.sgn, Tensor.sign (this is the thing itself).
    Hint: the difference of two 0/1 masks, (z > 0) and (z < 0), is exactly the sign.
    """
    ### BEGIN SOLUTION
    return (z > 0).to(z.dtype) - (z < 0).to(z.dtype)
    ### END SOLUTION


def perceptron_forward(X, W, b, step=heaviside):
    """A perceptron: a layer of k TLUs reading the same d inputs.

        Y = step(X @ W + b)
        X: (n, d)   W: (d, k)   b: (k,)   ->   Y: (n, k)

    Column j of Y is output unit j's answer for every instance (in the pizza story, column 0
    says "soup?", column 1 "sandwich?", column 2 "salad?").

    Args:
        X: (n, d) instances, one per row.
        W: (d, k) weights, one column per output unit.
        b: (k,) biases, broadcast over the n rows.
        step: the activation applied elementwise (heaviside by default; the grader also
              passes sign). Use the one you are given.

    Returns:
        (n, k) outputs, same dtype as X.

    Nothing is forbidden here: apply whichever step you are given.
    Hint: one matrix product, one broadcast addition, one call of step.
    """
    ### BEGIN SOLUTION
    return step(X @ W + b)
    ### END SOLUTION


def perceptron_update(W, b, x, y, lr):
    """One step of the perceptron learning rule, for a single training instance.

        y_hat = heaviside(x @ W + b)                 (k,)  the current prediction
        W_new = W + lr * outer(x, y - y_hat)         (d, k)
        b_new = b + lr * (y - y_hat)                 (k,)

    Each output unit whose prediction was wrong is nudged towards the right answer: when it
    said 0 but should have said 1, its weights move towards x; when it said 1 but should
    have said 0, they move away. A correct prediction (y == y_hat) changes nothing.
    The bias learns too: it is the weight of an input that is always 1.

    Args:
        W: (d, k) weights.   b: (k,) biases.
        x: (d,) one instance.   y: (k,) its target, 0.0 or 1.0 per output unit.
        lr: learning rate (float).

    Returns:
        (W_new, b_new): new tensors of shapes (d, k) and (k,). Do not modify W and b in
        place (no `W += ...`): build new tensors.

    Note the sign: the error is (y - y_hat), target minus prediction.
    Nothing is forbidden here beyond changing W and b in place.
    Hint: torch.outer(x, e) is the (d, k) matrix x_i * e_j; you may call your heaviside
    (the grader checks this function with its own heaviside, so a bug there counts once).
    """
    ### BEGIN SOLUTION
    y_hat = heaviside(x @ W + b)          # (k,)
    err = y - y_hat                        # (k,) in {-1, 0, 1}
    return W + lr * torch.outer(x, err), b + lr * err
    ### END SOLUTION


def perceptron_fit(X, Y, lr, epochs):
    """Train a perceptron with the perceptron rule: pizza, soup, sandwich or salad?

    Start from W = 0 (d, k) and b = 0 (k,) in the dtype of X. Then, `epochs` times, go
    through the instances in order, i = 0, 1, ..., n-1, and apply perceptron_update with
    instance X[i] and target Y[i] (one update per instance, online, not one per epoch).

    On linearly separable data (the pizza menu) this reaches 100% training accuracy: the
    perceptron convergence theorem. On XOR it cannot: no single line puts (0,1) and (1,0)
    on one side and (0,0) and (1,1) on the other, whatever the number of epochs.

    Args:
        X: (n, d) instances.   Y: (n, k) targets in {0.0, 1.0}.
        lr: learning rate (float).   epochs: number of passes over the data (int).

    Returns:
        (W, b): (d, k) and (k,), the weights after the last update.

    The grader compares your weights with the rule's, step for step (the inputs are small
    integers and lr a power of two, so every correct implementation is exact), and checks
    the accuracy of your weights on the training data. Nothing is forbidden here.
    Hint: call your perceptron_update in a double loop (the grader runs this function with
    its own perceptron_update and heaviside, so a bug there counts once).
    """
    ### BEGIN SOLUTION
    n, d = X.shape
    k = Y.shape[1]
    W = torch.zeros(d, k, dtype=X.dtype)
    b = torch.zeros(k, dtype=X.dtype)
    for _ in range(epochs):
        for i in range(n):
            W, b = perceptron_update(W, b, X[i], Y[i], lr)
    return W, b
    ### END SOLUTION
