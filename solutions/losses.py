"""Losses: how wrong is the network, as one number, and which way to move its outputs.

Training needs a single number to minimise. Regression (predicting a price) uses the mean
squared error; classification (soup, sandwich or salad?) uses the cross-entropy of the
softmax probabilities. Each loss comes with its gradient with respect to the network's
output, the first step of the backward pass.

Both losses are means: the mean over every element for MSE, the mean over the batch for
cross-entropy. The 1/N of the mean appears in the gradients too.

Allowed: any tensor operation; in cross_entropy also torch.log_softmax, torch.logsumexp and
indexing/gather. Forbidden: F.mse_loss / nn.MSELoss in mse_loss, F.cross_entropy / F.nll_loss /
nn.CrossEntropyLoss in cross_entropy; autograd in the two `*_grad` exercises.
Losses return a 0-d tensor (a scalar tensor, `loss.dim() == 0`), in the dtype of the inputs.
"""
import torch


def mse_loss(y_pred, y_true):
    """Mean squared error over every element: the loss of regression, e.g. of a network that
    predicts tomorrow's dogecoin price.

        L = mean((y_pred - y_true)^2) = (1/N) * sum_i (y_pred_i - y_true_i)^2,   N = y_pred.numel()

    Args:
        y_pred: (B, ...) predictions.   y_true: same shape, targets.
    Returns:
        L: 0-d tensor, dtype of y_pred.

    Note: the mean is over every element (B * d of them for (B, d)), not over the batch only.
    Forbidden: F.mse_loss, nn.MSELoss.
    Hint: tensor.mean() with no dim averages over every element.
    """
    ### BEGIN SOLUTION
    diff = y_pred - y_true
    return (diff * diff).mean()
    ### END SOLUTION


def mse_loss_grad(y_pred, y_true):
    """Gradient of mse_loss with respect to y_pred.

        dL/dy_pred = 2 * (y_pred - y_true) / N,   N = y_pred.numel()

    Args:
        y_pred: (B, ...) predictions.   y_true: same shape.
    Returns:
        dy_pred: same shape and dtype as y_pred.

    Forbidden: autograd (torch.autograd, .backward(), requires_grad).
    Hint: differentiate (1/N) sum (y_pred_i - y_true_i)^2 with respect to one y_pred_i.
    """
    ### BEGIN SOLUTION
    return 2 * (y_pred - y_true) / y_pred.numel()
    ### END SOLUTION


def cross_entropy(logits, targets):
    """Cross-entropy of softmax(logits) against integer class labels, averaged over the batch:
    the loss of classification (is it soup, sandwich or salad?).

        log_p = log_softmax(logits, dim=1)                       (B, C)
        L = -(1/B) * sum_b log_p[b, targets[b]]

    The network is punished by minus the log of the probability it gave to the right class:
    near 0 when it was confident and right, large when it was confident and wrong.

    Args:
        logits: (B, C) scores, one row per instance.
        targets: int64 (B,), the correct class of each row, in 0..C-1.
    Returns:
        L: 0-d tensor, dtype of logits.

    Compute log_softmax stably (subtract each row's max): logits of 1e4 must not give nan or inf,
    and log(softmax(logits)) gives -inf when a probability underflows to 0.
    Forbidden: F.cross_entropy, F.nll_loss, nn.CrossEntropyLoss, nn.NLLLoss.
    Allowed: torch.log_softmax, torch.logsumexp.
    Hint: log_p[torch.arange(B), targets] picks one entry per row.
    """
    ### BEGIN SOLUTION
    shifted = logits - logits.amax(dim=1, keepdim=True)
    log_p = shifted - torch.log(torch.exp(shifted).sum(dim=1, keepdim=True))   # (B, C)
    B = logits.shape[0]
    return -log_p[torch.arange(B), targets].mean()
    ### END SOLUTION


def cross_entropy_grad(logits, targets):
    """Gradient of cross_entropy with respect to the logits.

        dL/dlogits = (softmax(logits) - onehot(targets)) / B           (B, C)

    The famous simple form: the predicted probabilities minus the one-hot truth, divided by B
    because the loss is a mean over the batch.

    Args:
        logits: (B, C).   targets: int64 (B,).
    Returns:
        dlogits: (B, C), dtype of logits.

    Use a stable softmax (subtract each row's max): logits of 1e4 must not give nan.
    Forbidden: autograd (torch.autograd, .backward(), requires_grad). Allowed: torch.softmax,
    torch.nn.functional.one_hot.
    Hint: compute the softmax, subtract 1 at [torch.arange(B), targets] (on a new tensor), divide by B.
    """
    ### BEGIN SOLUTION
    e = torch.exp(logits - logits.amax(dim=1, keepdim=True))
    p = e / e.sum(dim=1, keepdim=True)                        # (B, C)
    B = logits.shape[0]
    p[torch.arange(B), targets] -= 1                           # p is a new tensor: logits unchanged
    return p / B
    ### END SOLUTION
