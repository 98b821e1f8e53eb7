"""The trained models and their teachers, one class each, in one registry (:data:`MODELS`).

A model holds the trials of a block of seeds side by side: each parameter has a leading seed
axis (a layer is seeds x dim x dim), and every operation acts on each seed's slice alone, with
the kernels a single trial would use (matrix products are batched matmuls whose entries are
computed as one matrix product each), so that a trial's numbers do not depend on which seeds it
trains beside. A model maps inputs x (seeds x batch x in_dim, or seeds x batch x tokens x dim
for the attention block) to predictions of the same shape, exposes its parameter groups with
their learning-rate factors, and names the matrices whose components are recorded: ``product``
is the end-to-end matrix (W_eff for one layer, W_L ... W_1 for a deep linear net, W_2 W_1 for
the ReLU MLP, which is not its function), ``layer{l}`` each layer; the attention block records
the products that its function determines (see :class:`AttentionBlock`).

A registered class also says how a trial builds it (:meth:`Model.build`, from the spec and a
function that draws one initial layer), what its teacher is (:meth:`Model.teacher_weights`,
float64 matrices by name: the recorded ones plus any the teacher needs to run, drawn from the
trial's target streams; :meth:`Model.teacher`, the teacher's function) and the shape of one
input (:meth:`Model.input_shape`). Adding a model touches this registry, the schema's enum and
a test.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from matcond.condition_number.targets import TARGET_STREAM, TEACHER2_STREAM, make_target

Layer = Callable[[], torch.Tensor]


def _column_major(t: torch.Tensor) -> bool:
    return t.stride(-2) == 1 and t.stride(-1) == t.shape[-2]


class _Matmul(torch.autograd.Function):
    """a @ b for batches of matrices, whose backward computes each gradient as torch's 2-D
    product does (mm's backward): in the layout of its input, with the operands ordered to
    match. The batched product's generic backward returns some gradients transposed (and the
    copy into a parameter's layout cost more than the product at d >= 512) and orders others
    differently, which changes their last bits; this way a trial in a batch computes what it
    computed alone."""

    @staticmethod
    def forward(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        a, b = ctx.saved_tensors
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_a = (b @ grad.mT).mT if _column_major(a) else grad @ b.mT
        if ctx.needs_input_grad[1]:
            grad_b = (grad.mT @ a).mT if _column_major(b) else a.mT @ grad
        return grad_a, grad_b


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b, one product per seed (seeds x m x k and seeds x k x n), with the 2-D product's
    gradients (:class:`_Matmul`)."""
    return _Matmul.apply(a, b)


def apply(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """x @ w^T, one product per seed (x: seeds x rows x n, w: seeds x m x n)."""
    return matmul(x, w.mT)


Teacher = Callable[[torch.Tensor], torch.Tensor]


class Model(torch.nn.Module):
    """Base: subclasses set ``layers`` (a ParameterList) and may add multiplier parameters.

    ``residual_form``: the model is its one trained matrix W against a linear teacher W*, so
    that a step's residual and gradient are R = X (W - W*)^T - eps and R^T X / B, two products
    (:func:`matcond.condition_number.training.residual_step`); otherwise autograd computes them
    from the model's function and its teacher's."""

    layers: torch.nn.ParameterList
    residual_form = False

    def param_groups(self, lr: float, multiplier_lr_ratio: float) -> list[dict]:
        """Optimizer groups: the layers at ``lr``, multipliers at ``lr * multiplier_lr_ratio``."""
        groups = [{"params": list(self.layers), "lr": lr}]
        multipliers = self.multipliers()
        if multipliers:
            groups.append({"params": multipliers, "lr": lr * multiplier_lr_ratio})
        return groups

    def multipliers(self) -> list[torch.nn.Parameter]:
        """Parameters trained at the multipliers' learning rate (none by default)."""
        return []

    def select(self, keep: torch.Tensor) -> None:
        """Keep the trials at positions ``keep`` of the seed axis: every parameter is replaced
        by a new one holding those slices (autograd keeps a parameter's shape)."""
        for module in self.modules():
            for name, p in list(module.named_parameters(recurse=False)):
                slices = p.detach()[keep.to(p.device)]
                module.register_parameter(name, torch.nn.Parameter(slices))

    def effective(self) -> torch.Tensor:
        """The end-to-end matrix (``product``)."""
        raise NotImplementedError

    def matrices(self) -> dict[str, torch.Tensor]:
        """Every recorded matrix by name: ``product`` and, for several layers, ``layer{l}``."""
        out = {"product": self.effective()}
        if len(self.layers) > 1:
            out.update({f"layer{i + 1}": w for i, w in enumerate(self.layers)})
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return apply(x, self.effective())

    @classmethod
    def build(cls, spec: dict, layer: Layer, linear: type[Model]) -> Model:
        """The trials' model, its layers drawn by ``layer()`` (seeds x dim x dim) in order;
        ``linear``: the class of a single matrix, :class:`Linear` or the one a strategy puts
        in its place (``Strategy.model``, e.g. learnable multipliers)."""
        raise NotImplementedError

    @staticmethod
    def teacher_weights(spec: dict) -> dict[str, np.ndarray]:
        """The linear teacher W* (``product``), as matcond.condition_number.targets draws it."""
        return {"product": make_target(spec)}

    @staticmethod
    def teacher(weights: dict[str, torch.Tensor]) -> Teacher:
        """y = W* x (``weights``: seeds x ... tensors)."""
        return lambda x: apply(x, weights["product"])

    @staticmethod
    def input_shape(spec: dict) -> tuple[int, ...]:
        """The shape of one input."""
        return (spec["dim"],)


class Linear(Model):
    """y = W x; a strategy may wrap W (learnable multipliers,
    matcond.condition_number.strategies)."""

    residual_form = True

    def __init__(self, w0: torch.Tensor):
        super().__init__()
        self.layers = torch.nn.ParameterList([w0])

    def effective(self) -> torch.Tensor:
        return self.layers[0]

    @classmethod
    def build(cls, spec: dict, layer: Layer, linear: type[Model]) -> Model:
        return linear(layer())


class RowColumnMultipliers(Linear):
    """y = diag(r) W diag(c) x with learnable r, c (initialised to 1), as Velikanov et al."""

    residual_form = False

    def __init__(self, w0: torch.Tensor):
        super().__init__(w0)
        seeds, rows, cols = w0.shape
        self.r = torch.nn.Parameter(torch.ones(seeds, rows, dtype=w0.dtype, device=w0.device))
        self.c = torch.nn.Parameter(torch.ones(seeds, cols, dtype=w0.dtype, device=w0.device))

    def multipliers(self) -> list[torch.nn.Parameter]:
        return [self.r, self.c]

    def effective(self) -> torch.Tensor:
        return self.r[:, :, None] * self.layers[0] * self.c[:, None, :]


class SingularValueMultipliers(Linear):
    """y = U diag(m * s) V^T x with W = U diag(s) V^T and learnable m (initialised to 1)."""

    residual_form = False

    def __init__(self, w0: torch.Tensor):
        super().__init__(w0)
        seeds, rows, cols = w0.shape
        self.m = torch.nn.Parameter(
            torch.ones(seeds, min(rows, cols), dtype=w0.dtype, device=w0.device)
        )

    def multipliers(self) -> list[torch.nn.Parameter]:
        return [self.m]

    def effective(self) -> torch.Tensor:
        u, s, vh = torch.linalg.svd(self.layers[0], full_matrices=False)
        return matmul(u * (self.m * s)[:, None, :], vh)


class DeepLinear(Model):
    """y = W_L ... W_1 x, learning the same linear target as one matrix."""

    def __init__(self, ws: list[torch.Tensor]):
        super().__init__()
        self.layers = torch.nn.ParameterList(ws)

    def effective(self) -> torch.Tensor:
        out = self.layers[0]
        for w in self.layers[1:]:
            out = matmul(w, out)
        return out

    @classmethod
    def build(cls, spec: dict, layer: Layer, linear: type[Model]) -> Model:
        return cls([layer() for _ in range(spec["depth"])])


class ReluMLP(Model):
    """y = W_2 relu(W_1 x) (hidden width = the input dimension), learning a ReLU teacher."""

    def __init__(self, w1: torch.Tensor, w2: torch.Tensor):
        super().__init__()
        self.layers = torch.nn.ParameterList([w1, w2])

    def effective(self) -> torch.Tensor:
        return self.layers[1] @ self.layers[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return apply(torch.relu(apply(x, self.layers[0])), self.layers[1])

    @classmethod
    def build(cls, spec: dict, layer: Layer, linear: type[Model]) -> Model:
        return cls(layer(), layer())

    @staticmethod
    def teacher_weights(spec: dict) -> dict[str, np.ndarray]:
        """W1*, W2*: two independent draws of the spec's structure; ``product`` W2* W1*."""
        w1, w2 = make_target(spec), make_target(spec, TEACHER2_STREAM)
        return {"product": w2 @ w1, "layer1": w1, "layer2": w2}

    @staticmethod
    def teacher(weights: dict[str, torch.Tensor]) -> Teacher:
        """y = W2* relu(W1* x)."""
        return lambda x: apply(torch.relu(apply(x, weights["layer1"])), weights["layer2"])


class AttentionBlock(Model):
    """One single-head attention block with a ReLU MLP, on sequences x (batch x tokens x d).

    h = x + softmax(x W_Q^T (x W_K^T)^T / sqrt(d)) x W_V^T W_O^T and y = h + W_2 relu(W_1 h).
    The function fixes W_Q^T W_K and W_O W_V but not the factors (any invertible R gives
    W_Q -> R W_Q, W_K -> R^-T W_K the same block), so those products are recorded as ``qk``
    and ``ov``, beside the MLP's ``mlp1`` (W_1) and ``mlp2`` (W_2) (these two are fixed up to
    a permutation and positive scaling of the hidden units). Its teacher is a block of the same
    shape whose six matrices are independent draws of the spec's structure.
    """

    LAYERS = ("wq", "wk", "wv", "wo", "w1", "w2")
    STREAMS = (TARGET_STREAM, TEACHER2_STREAM, 4, 5, 6, 7)

    def __init__(self, wq, wk, wv, wo, w1, w2):
        super().__init__()
        self.layers = torch.nn.ParameterList([wq, wk, wv, wo, w1, w2])

    def matrices(self) -> dict[str, torch.Tensor]:
        wq, wk, wv, wo, w1, w2 = self.layers
        return {"qk": wq.mT @ wk, "ov": wo @ wv, "mlp1": w1, "mlp2": w2}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        wq, wk, wv, wo, w1, w2 = self.layers
        scores = _tokens(x, wq) @ _tokens(x, wk).mT / x.shape[-1] ** 0.5
        h = x + _tokens(torch.softmax(scores, dim=-1) @ _tokens(x, wv), wo)
        return h + _tokens(torch.relu(_tokens(h, w1)), w2)

    @classmethod
    def build(cls, spec: dict, layer: Layer, linear: type[Model]) -> Model:
        return cls(*(layer() for _ in cls.LAYERS))

    @classmethod
    def teacher_weights(cls, spec: dict) -> dict[str, np.ndarray]:
        """``qk``, ``ov``, ``mlp1``, ``mlp2`` and the six matrices as ``attention.{wq,...}``."""
        w = {name: make_target(spec, s) for name, s in zip(cls.LAYERS, cls.STREAMS, strict=True)}
        recorded = {"qk": w["wq"].T @ w["wk"], "ov": w["wo"] @ w["wv"]}
        recorded.update(mlp1=w["w1"].copy(), mlp2=w["w2"].copy())
        return {**recorded, **{f"attention.{k}": v for k, v in w.items()}}

    @classmethod
    def teacher(cls, weights: dict[str, torch.Tensor]) -> Teacher:
        """The teacher block's forward."""
        return cls(*(weights[f"attention.{name}"] for name in cls.LAYERS)).forward

    @staticmethod
    def input_shape(spec: dict) -> tuple[int, ...]:
        """A sequence of ``seq_len`` tokens of dimension ``dim``."""
        return (spec["seq_len"], spec["dim"])


def _tokens(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """x @ w^T for x of seeds x batch x tokens x dim: one product per seed over all its tokens,
    as a single trial's (batch x tokens x dim) @ (dim x dim) is computed."""
    return apply(x.flatten(1, -2), w).view(*x.shape[:-1], w.shape[-2])


MODELS: dict[str, type[Model]] = {
    "linear": Linear,
    "deep_linear": DeepLinear,
    "relu_mlp": ReluMLP,
    "attention": AttentionBlock,
}


def teacher_weights(spec: dict) -> dict[str, np.ndarray]:
    """The target matrices of a trial by name (its model's teacher)."""
    return MODELS[spec["model"]].teacher_weights(spec)
