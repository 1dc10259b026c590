"""Forbidden-API rules shared by several chapters. One rule per constant, each with its rationale."""
from grader.catalog.spec import Forbidden

# Rationale: manual-backprop exercises are about deriving the gradient; autograd would compute it.
AUTOGRAD = Forbidden(
    name="autograd",
    rationale="this exercise is backprop by hand: compute the gradient with tensor operations, "
              "without torch.autograd, .backward() or requires_grad",
    static=("attr:backward", "torch.autograd", "kw:requires_grad", "attr:requires_grad_", "attr:requires_grad",
            "torch.func"),
    patch=("torch.Tensor.backward", "torch.autograd.backward", "torch.autograd.grad", "torch.Tensor.requires_grad_",
           "torch.autograd.functional.jacobian", "torch.autograd.functional.vjp", "torch.autograd.functional.vjp",
           "torch.func.grad", "torch.func.vjp"),
)

# Rationale: scaled_dot_product_attention is the exercise itself; PyTorch's fused kernel would skip it.
SDPA = Forbidden(
    name="torch.nn.functional.scaled_dot_product_attention",
    rationale="this exercise is scaled dot-product attention itself: write the scores, mask, softmax and "
              "weighted sum with tensor operations",
    static=("torch.nn.functional.scaled_dot_product_attention", "torch._C._nn.scaled_dot_product_attention"),
    patch=("torch.nn.functional.scaled_dot_product_attention", "torch._C._nn.scaled_dot_product_attention"),
    aten=("scaled_dot_product",),
)

# Rationale: nn.MultiheadAttention and its functional form do the projections, head split and merge.
MHA = Forbidden(
    name="torch.nn.MultiheadAttention",
    rationale="multi-head attention is to be built from your own projections, head split and merge "
              "(nn.MultiheadAttention and F.multi_head_attention_forward do all of it)",
    static=("torch.nn.MultiheadAttention", "torch.nn.modules.activation.MultiheadAttention",
            "torch.nn.functional.multi_head_attention_forward", "torch._native_multi_head_attention"),
    patch=("torch.nn.MultiheadAttention", "torch.nn.modules.activation.MultiheadAttention",
           "torch.nn.functional.multi_head_attention_forward", "torch._native_multi_head_attention"),
    aten=("_native_multi_head_attention",),
)
