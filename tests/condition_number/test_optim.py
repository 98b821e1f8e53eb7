"""Our SGD and Adam against torch.optim, step for step, in float64, with two parameter groups."""

import pytest
import torch

from matcond.condition_number.optim import make_optimizer

REFERENCE = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}


@pytest.mark.parametrize("name", ["sgd", "adam"])
@pytest.mark.parametrize("weight_decay", [0.0, 0.05])
def test_matches_torch_optim(name, weight_decay):
    gen = torch.Generator().manual_seed(0)
    start = [
        torch.randn(5, 3, generator=gen, dtype=torch.float64),
        torch.randn(5, generator=gen, dtype=torch.float64),
    ]
    ours = [torch.nn.Parameter(t.clone()) for t in start]
    theirs = [torch.nn.Parameter(t.clone()) for t in start]

    def groups(params):
        return [
            {"params": [params[0]], "lr": 0.01, "weight_decay": weight_decay},
            {"params": [params[1]], "lr": 0.001, "weight_decay": 0.0},
        ]

    opt_ours = make_optimizer(name, groups(ours))
    opt_theirs = REFERENCE[name](groups(theirs))
    for _ in range(50):
        x = torch.randn(7, 3, generator=gen, dtype=torch.float64)
        for w, r in (ours, theirs):
            w.grad = r.grad = None
            (r[:, None] * (x @ w.T).T).sin().square().sum().backward()
        opt_ours.step()
        opt_theirs.step()
    for a, b, s in zip(ours, theirs, start, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)
        assert not torch.equal(a, s)


def test_unknown_optimizer():
    with pytest.raises(ValueError, match="rmsprop"):
        make_optimizer("rmsprop", [])


@pytest.mark.parametrize(("momentum", "nesterov"), [(0.9, False), (0.5, True)])
@pytest.mark.parametrize("weight_decay", [0.0, 0.05])
def test_momentum_matches_torch_sgd(momentum, nesterov, weight_decay):
    """SGD with momentum (dampening 0), with and without Nesterov, as torch.optim.SGD."""
    gen = torch.Generator().manual_seed(1)
    start = torch.randn(4, 3, generator=gen, dtype=torch.float64)
    ours, theirs = torch.nn.Parameter(start.clone()), torch.nn.Parameter(start.clone())
    group = {"lr": 0.02, "weight_decay": weight_decay}
    opt_ours = make_optimizer("sgd", [{**group, "params": [ours]}], momentum, nesterov)
    opt_theirs = torch.optim.SGD(
        [{**group, "params": [theirs]}], momentum=momentum, nesterov=nesterov
    )
    for _ in range(40):
        x = torch.randn(6, 3, generator=gen, dtype=torch.float64)
        for w in (ours, theirs):
            w.grad = None
            (x @ w.T).tanh().sum().backward()
        opt_ours.step()
        opt_theirs.step()
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-14)
    plain = torch.nn.Parameter(start.clone())  # momentum changes the path: the test has power
    opt_plain = make_optimizer("sgd", [{**group, "params": [plain]}])
    gen = torch.Generator().manual_seed(1)
    torch.randn(4, 3, generator=gen, dtype=torch.float64)
    for _ in range(40):
        x = torch.randn(6, 3, generator=gen, dtype=torch.float64)
        plain.grad = None
        (x @ plain.T).tanh().sum().backward()
        opt_plain.step()
    assert (plain - ours).abs().max() > 1e-3


def test_momentum_buffers_follow_the_kept_trials():
    """``select`` keeps each remaining trial's buffer: a trial trained beside another that
    stops is the trial trained alone."""
    gen = torch.Generator().manual_seed(2)
    start = torch.randn(3, 4, 4, generator=gen, dtype=torch.float64)  # three trials
    grads = torch.randn(30, 3, 4, 4, generator=gen, dtype=torch.float64)
    both = torch.nn.Parameter(start.clone())
    opt = make_optimizer("sgd", [{"params": [both], "lr": 0.1, "weight_decay": 0.0}], 0.9)
    alone = torch.nn.Parameter(start[2:].clone())
    opt_alone = make_optimizer("sgd", [{"params": [alone], "lr": 0.1, "weight_decay": 0.0}], 0.9)
    for step in range(30):
        if step == 10:  # trials 0 and 1 stop
            keep = torch.tensor([2])
            both = torch.nn.Parameter(both.detach()[keep].clone())
            opt.select(keep, [{"params": [both], "lr": 0.1, "weight_decay": 0.0}])
        both.grad = grads[step, 2:] if step >= 10 else grads[step]
        alone.grad = grads[step, 2:]
        opt.step()
        opt_alone.step()
    torch.testing.assert_close(both, alone, rtol=0, atol=0)


def test_nesterov_needs_momentum():
    with pytest.raises(ValueError, match="momentum > 0"):
        make_optimizer("sgd", [], 0.0, True)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_a_step_that_folds_the_gradients_product_is_the_step_on_that_gradient(momentum):
    """SGD.step_product (the residual form's step, the gradient scale * a @ b never formed)
    against SGD.step on the formed gradient, in float64, over steps with momentum's first."""
    gen = torch.Generator().manual_seed(2)
    start = torch.randn(3, 5, 5, generator=gen, dtype=torch.float64)
    folded, formed = torch.nn.Parameter(start.clone()), torch.nn.Parameter(start.clone())
    group = {"lr": 0.05, "weight_decay": 0.0}
    opt_folded = make_optimizer("sgd", [{**group, "params": [folded]}], momentum)
    opt_formed = make_optimizer("sgd", [{**group, "params": [formed]}], momentum)
    assert opt_folded.folds()
    for _ in range(10):
        a = torch.randn(3, 5, 7, generator=gen, dtype=torch.float64)
        b = torch.randn(3, 7, 5, generator=gen, dtype=torch.float64)
        opt_folded.step_product(a, b, 1 / 7)
        formed.grad = a @ b / 7
        opt_formed.step()
    torch.testing.assert_close(folded, formed, rtol=1e-12, atol=1e-14)
    assert not torch.equal(folded, start)


def test_only_plain_sgd_on_one_parameter_folds():
    p, q = (torch.nn.Parameter(torch.zeros(1, 2, 2)) for _ in range(2))
    plain = {"lr": 0.1, "weight_decay": 0.0}
    assert not make_optimizer("sgd", [{**plain, "params": [p, q]}]).folds()
    assert not make_optimizer("sgd", [{**plain, "weight_decay": 0.1, "params": [p]}]).folds()
    assert not make_optimizer("sgd", [{**plain, "params": [p]}], 0.9, nesterov=True).folds()
    assert not make_optimizer("adam", [{**plain, "params": [p]}]).folds()
