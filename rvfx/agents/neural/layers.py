"""One hidden layer of the ensemble's networks, forward and backward: the backprop of Algorithm 8's SGD
step, written once. `EnsembleMLP` runs it as Python over NumPy's passes (`fused`); with the fast extra,
numba compiles these same functions (`kernels` gives the passes they call numba implementations), for
`EnsembleMLP` and for the SGD step compiled whole (`compiled_step`), with the same bits.

Activations are (B, K, n): sample-major, member k's n units together, so that the bias add and ReLU run
over long contiguous rows and member k's product reads rows K * n apart.
"""
from __future__ import annotations

from rvfx.agents.neural.fused import bias_relu, member_products, relu, relu_grad_sum


def forward(z, bias, mask, weight, out) -> None:
    """z (B, K, n) <- relu(z + bias) with bias (K, n), its ReLU' into `mask` (B, K, n) unless that is empty
    (a pass with no backward after it), then the next layer's input out (B, K, n') <- z @ weight for each
    member (weight (K, n, n'))."""
    B, K, n = z.shape
    if mask.shape[0]:
        bias_relu(z.reshape(B, K * n), bias.reshape(K * n), mask.reshape(B, K * n))
    else:
        relu(z.reshape(B, K * n), bias.reshape(K * n))
    member_products(z.transpose(1, 0, 2), weight, out.transpose(1, 0, 2))


def backward(inp, mask, weight, d, weight_grad, bias_grad):
    """From d = dL/d(out) (K, B, n'), any strides, `forward`'s gradients: weight_grad (K, n, n') <- inp^T d
    for each member; then inp (the activation, read for the last time) <- d weight^T * relu'(mask), the
    gradient at the layer's pre-activation, and bias_grad (K, n) <- its sum over the batch. Returns that
    gradient as (K, B, n), the previous layer's d."""
    B, K, n = inp.shape
    member_products(inp.transpose(1, 2, 0), d, weight_grad)
    member_products(d, weight.transpose(0, 2, 1), inp.transpose(1, 0, 2))
    relu_grad_sum(inp.reshape(B, K * n), mask.reshape(B, K * n), bias_grad.reshape(K * n))
    return inp.transpose(1, 0, 2)
