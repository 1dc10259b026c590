"""Multilayer perceptrons, backpropagation by hand, optimizers, and XOR at last.

One perceptron cannot learn XOR. Stack layers with a nonlinearity between them and it can,
provided we can train the weights: backpropagation applies the chain rule from the loss
back to every weight, and an optimizer turns those gradients into weight updates.

Course conventions (row vectors, batch first):
    a layer:  Y = X @ W + b        X (B, d_in), W (d_in, d_out), b (d_out,), Y (B, d_out)
    params:   a list of (W, b) pairs, one per layer, input layer first
    grads:    a list of (dW, db) pairs with the same shapes as params

The backward pass of a layer, given dY = dL/dY (B, d_out):
    dX = dY @ W^T        (B, d_in)      -- passed on to the layer below
    dW = X^T @ dY        (d_in, d_out)  -- a sum over the batch
    db = dY.sum(0)       (d_out,)       -- a sum over the batch

Allowed: any tensor operation. Forbidden: torch.autograd, .backward() and requires_grad in
linear_backward, mlp_backward and train_xor (this chapter is backprop by hand); torch.optim
in the optimizer steps and train_xor; nn.Linear/F.linear in the forward passes;
nn.init.xavier_uniform_ in glorot_uniform; nn.utils.clip_grad_norm_ in clip_grad_norm.
No function may modify its inputs in place: return new tensors and new lists.
"""
import math

import torch


def linear_forward(X, W, b):
    """A fully connected layer: Y = X @ W + b.

    Args:
        X: (B, d_in) inputs, one instance per row.
        W: (d_in, d_out) weights (the course's row-vector layout, not PyTorch's (out, in)).
        b: (d_out,) bias, broadcast over the rows.
    Returns:
        Y: (B, d_out).

    The building block of every layer of the XOR network (and of the perceptron, minus the step).
    Forbidden: torch.nn.Linear, torch.nn.functional.linear.
    Hint: `@` multiplies (B, d_in) by (d_in, d_out); b broadcasts over the rows.
    """
    ### BEGIN SOLUTION
    return X @ W + b
    ### END SOLUTION


def linear_backward(X, W, dY):
    """Backward pass of Y = X @ W + b, given the upstream gradient dY = dL/dY.

        dX = dY @ W^T              (B, d_in)
        dW = X^T @ dY              (d_in, d_out)   sums the B per-instance outer products
        db = dY.sum(dim=0)         (d_out,)        sums over the batch

    This is one step of the reverse pass: the chain rule applied to one layer. The network's
    backward pass repeats it from the top layer down, each layer handing dX to the one below.
    Check the shapes: each gradient has the shape of the thing it is the gradient of.

    Args:
        X: (B, d_in) the layer's input (remembered from the forward pass).
        W: (d_in, d_out) weights.
        dY: (B, d_out) gradient of the loss with respect to the layer's output.
    Returns:
        (dX, dW, db) with shapes (B, d_in), (d_in, d_out), (d_out,).

    Forbidden: autograd (torch.autograd, .backward(), requires_grad).
    Hint: write each product so that the inner dimensions agree, and the shapes tell you the rest.
    """
    ### BEGIN SOLUTION
    return dY @ W.T, X.T @ dY, dY.sum(dim=0)
    ### END SOLUTION


def mlp_forward(X, params):
    """Forward pass of a multilayer perceptron: linear layers with ReLU between them.

        A_0 = X
        A_l = relu(A_{l-1} @ W_l + b_l)      for every layer but the last
        logits = A_{L-1} @ W_L + b_L         no activation after the last layer

    The last layer outputs logits (one score per class); softmax and the loss come after.

    Args:
        X: (B, d_0) inputs.
        params: list of L pairs (W_l, b_l), W_l (d_{l-1}, d_l), b_l (d_l,).
    Returns:
        logits: (B, d_L).

    Forbidden: torch.nn.Linear, torch.nn.functional.linear.
    Hint: loop over enumerate(params) and skip the ReLU on the last index.
    """
    ### BEGIN SOLUTION
    A = X
    for l, (W, b) in enumerate(params):
        A = A @ W + b
        if l < len(params) - 1:
            A = torch.clamp(A, min=0)
    return A
    ### END SOLUTION


def mlp_backward(X, targets, params):
    """Backpropagation through the whole MLP, with the cross-entropy loss on top.

    Forward, remembering what the backward pass needs:
        Z_l = A_{l-1} @ W_l + b_l,   A_l = relu(Z_l) (not after the last layer),   logits = Z_L
        loss = mean over the batch of -log softmax(logits)[b, targets[b]]
    Backward, from the top:
        dZ_L = (softmax(logits) - onehot(targets)) / B
        for l = L, ..., 1:
            dW_l = A_{l-1}^T @ dZ_l,   db_l = dZ_l.sum(0)
            dA_{l-1} = dZ_l @ W_l^T
            dZ_{l-1} = dA_{l-1} * (Z_{l-1} > 0)          the ReLU's derivative (0 at 0)

    Args:
        X: (B, d_0) inputs.   targets: int64 (B,) class labels.
        params: list of (W_l, b_l) as in mlp_forward.
    Returns:
        (loss, grads): loss a 0-d tensor; grads a list of (dW_l, db_l), same order and
        shapes as params.

    Forbidden: autograd (torch.autograd, .backward(), requires_grad).
    You may call your own linear_forward, linear_backward and mlp_forward (the grader runs
    this exercise with its own versions of those, so a bug there counts once).
    Hint: keep a list of the inputs A_{l-1} and pre-activations Z_l of every layer.
    """
    ### BEGIN SOLUTION
    B = X.shape[0]
    inputs, pre = [], []
    A = X
    for l, (W, b) in enumerate(params):
        inputs.append(A)
        Z = A @ W + b
        pre.append(Z)
        A = torch.clamp(Z, min=0) if l < len(params) - 1 else Z
    logits = A
    shifted = logits - logits.amax(dim=1, keepdim=True)
    e = torch.exp(shifted)
    log_p = shifted - torch.log(e.sum(dim=1, keepdim=True))
    loss = -log_p[torch.arange(B), targets].mean()

    dZ = e / e.sum(dim=1, keepdim=True)                 # softmax
    dZ[torch.arange(B), targets] -= 1
    dZ = dZ / B
    grads = [None] * len(params)
    for l in range(len(params) - 1, -1, -1):
        W = params[l][0]
        grads[l] = (inputs[l].T @ dZ, dZ.sum(dim=0))
        if l > 0:
            dZ = (dZ @ W.T) * (pre[l - 1] > 0).to(dZ.dtype)
    return loss, grads
    ### END SOLUTION


def sgd_step(params, grads, lr):
    """One step of plain gradient descent: every weight moves against its gradient (downhill
    on the loss), the last step of the course's training loop for each mini-batch.

        W <- W - lr * dW,    b <- b - lr * db       for every layer

    Args:
        params: list of (W, b).   grads: list of (dW, db), same shapes.   lr: learning rate.
    Returns:
        new_params: a new list of (W, b) (the inputs stay unchanged).

    The grader calls your step several times in a row, feeding each result into the next
    call, and compares the trajectory with torch.optim.SGD(lr=lr).
    Forbidden: torch.optim.
    Hint: a list comprehension over zip(params, grads), unpacking (W, b) and (dW, db).
    """
    ### BEGIN SOLUTION
    return [(W - lr * dW, b - lr * db) for (W, b), (dW, db) in zip(params, grads)]
    ### END SOLUTION


def momentum_step(params, grads, velocity, lr, momentum):
    """One step of gradient descent with momentum, PyTorch's formulation (no dampening):

        v <- momentum * v + g          (for every tensor: W with dW, b with db)
        p <- p - lr * v

    The velocity v accumulates past gradients, so steps along a consistent direction grow
    and oscillating directions cancel. On the first call velocity holds zeros.

    Args:
        params: list of (W, b).   grads: list of (dW, db).
        velocity: list of (vW, vb), same shapes (zeros at the start).
        lr: learning rate.   momentum: mu in [0, 1).
    Returns:
        (new_params, new_velocity): two new lists of pairs.

    Note: v accumulates the raw gradient g (not (1 - momentum) * g, not lr * g) and is
    returned as such; lr multiplies it only in the parameter update.
    The grader compares the trajectory over several calls with torch.optim.SGD(momentum=...).
    Forbidden: torch.optim.
    Hint: zip(params, grads, velocity) walks the three lists layer by layer.
    """
    ### BEGIN SOLUTION
    new_params, new_velocity = [], []
    for (W, b), (dW, db), (vW, vb) in zip(params, grads, velocity):
        vW, vb = momentum * vW + dW, momentum * vb + db
        new_velocity.append((vW, vb))
        new_params.append((W - lr * vW, b - lr * vb))
    return new_params, new_velocity
    ### END SOLUTION


def adam_step(params, grads, state, lr, betas=(0.9, 0.999), eps=1e-8):
    """One step of Adam (Kingma & Ba), as torch.optim.Adam computes it.

        t <- t + 1
        m <- beta1 * m + (1 - beta1) * g            first moment (mean of g)
        v <- beta2 * v + (1 - beta2) * g^2          second moment (mean of g^2)
        m_hat = m / (1 - beta1^t)                   bias corrections: m and v start at 0
        v_hat = v / (1 - beta2^t)
        p <- p - lr * m_hat / (sqrt(v_hat) + eps)   eps outside the square root

    Args:
        params: list of (W, b).   grads: list of (dW, db).
        state: dict with "m": list of (mW, mb), "v": list of (vW, vb), "t": int, the number
               of steps taken so far. The first call gets zeros for m and v and t = 0.
        lr: learning rate.   betas: (beta1, beta2).   eps: added to sqrt(v_hat).
    Returns:
        (new_params, new_state): new_state a new dict with the updated "m", "v" and "t"
        (t an int, one more than before).

    The grader runs several steps and compares the parameters with torch.optim.Adam's and
    the final m, v, t with its exp_avg, exp_avg_sq and step.
    Forbidden: torch.optim.
    Hint: the same few lines apply to every tensor (W and b of every layer): write them once,
    in an inner loop over the pairs (p, g, m, v).
    """
    ### BEGIN SOLUTION
    beta1, beta2 = betas
    t = state["t"] + 1
    c1, c2 = 1 - beta1 ** t, 1 - beta2 ** t
    new_params, new_m, new_v = [], [], []
    for (W, b), (dW, db), (mW, mb), (vW, vb) in zip(params, grads, state["m"], state["v"]):
        layer = []
        moments_m, moments_v = [], []
        for p, g, m, v in ((W, dW, mW, vW), (b, db, mb, vb)):
            m = beta1 * m + (1 - beta1) * g
            v = beta2 * v + (1 - beta2) * g * g
            layer.append(p - lr * (m / c1) / (torch.sqrt(v / c2) + eps))
            moments_m.append(m)
            moments_v.append(v)
        new_params.append(tuple(layer))
        new_m.append(tuple(moments_m))
        new_v.append(tuple(moments_v))
    return new_params, {"m": new_m, "v": new_v, "t": t}
    ### END SOLUTION


def glorot_uniform(fan_in, fan_out, generator=None):
    """Glorot (Xavier) uniform initialisation of a (fan_in, fan_out) weight matrix.

        W_ij ~ U(-a, a),   a = sqrt(6 / (fan_in + fan_out))

    so that Var(W_ij) = a^2 / 3 = 2 / (fan_in + fan_out): the variance of the activations
    (forward) and of the gradients (backward) stays about the same from layer to layer,
    which keeps them from vanishing or exploding. Random, not zero: identical weights
    would make every unit of a layer compute the same thing forever (symmetry).

    Args:
        fan_in: inputs of the layer (d_in).   fan_out: outputs of the layer (d_out).
        generator: a torch.Generator or None; pass it to the random call (torch.rand(...,
                   generator=generator)) so that a seeded generator gives reproducible weights.
    Returns:
        W: float32 (fan_in, fan_out).

    The grader draws many matrices with seeded generators and tests, with a false-fail rate
    below 1e-4, that every |W_ij| <= a, that the values are uniform on [-a, a], that their
    mean square is 2 / (fan_in + fan_out), and that the same seed gives the same W.
    Forbidden: torch.nn.init.xavier_uniform_ (and xavier_normal_).
    Hint: torch.rand gives U[0, 1); scale and shift it to U[-a, a).
    """
    ### BEGIN SOLUTION
    a = math.sqrt(6.0 / (fan_in + fan_out))
    return (torch.rand(fan_in, fan_out, generator=generator) * 2 - 1) * a
    ### END SOLUTION


def clip_grad_norm(grads, max_norm):
    """Clip gradients by their global L2 norm (a cure for exploding gradients).

        total = sqrt(sum over every tensor of every layer of sum(g^2))
        scale = min(1, max_norm / (total + 1e-6))
        every g <- g * scale

    One norm for all the gradients together, so the direction of the whole update is kept
    and only its length is capped. Gradients already within max_norm stay as they are
    (the 1e-6, as in torch.nn.utils.clip_grad_norm_, keeps the division finite).

    Args:
        grads: list of (dW, db).   max_norm: float > 0.
    Returns:
        a new list of (dW, db), same shapes.

    Forbidden: torch.nn.utils.clip_grad_norm_ (and clip_grads_with_norm_, get_total_norm).
    Hint: sum the squares of every tensor into one number, take its square root, then scale.
    """
    ### BEGIN SOLUTION
    total = math.sqrt(sum(float((g.double() ** 2).sum()) for layer in grads for g in layer))
    scale = min(1.0, max_norm / (total + 1e-6))
    return [tuple(g * scale for g in layer) for layer in grads]
    ### END SOLUTION


def train_xor(seed=0):
    """Train an MLP on XOR with your own building blocks, and return its parameters.

    The four points (0,0), (0,1), (1,0), (1,1) with classes 0, 1, 1, 0: the problem one
    perceptron cannot solve. A hidden layer of a few ReLU units can.

        X = [[0,0],[0,1],[1,0],[1,1]] (float32),   targets = [0, 1, 1, 0] (int64)
        params: two layers (or more), 2 inputs -> hidden -> 2 logits (one per class)

    Use a torch.Generator seeded with `seed` for the initialisation (glorot_uniform), then
    repeat: loss, grads = mlp_backward(X, targets, params); params = <your optimizer step>.

    Returns:
        params: list of (W, b) such that mlp_forward(X, params).argmax(dim=1) == [0, 1, 1, 0].

    The grader calls train_xor(seed) for seed 0 and a few other seeds (so make the training
    robust: 16 or more hidden units, enough steps), twice each: the same seed must give the
    same params. It checks that your mlp_backward and one of your step functions were
    called, and evaluates the returned params with its own forward pass. Each call must
    finish within a few seconds: a few hundred full-batch steps on 4 points is plenty.
    Forbidden: torch.autograd, .backward(), torch.optim.
    """
    ### BEGIN SOLUTION
    gen = torch.Generator().manual_seed(seed)
    X = torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    targets = torch.tensor([0, 1, 1, 0])
    sizes = (2, 32, 2)
    params = [(glorot_uniform(d_in, d_out, generator=gen), torch.zeros(d_out))
              for d_in, d_out in zip(sizes[:-1], sizes[1:])]
    zeros = [(torch.zeros_like(W), torch.zeros_like(b)) for W, b in params]
    state = {"m": zeros, "v": zeros, "t": 0}
    for _ in range(300):
        loss, grads = mlp_backward(X, targets, params)
        params, state = adam_step(params, grads, state, lr=0.05)
    return params
    ### END SOLUTION
