"""Our SGD and Adam against torch.optim, step for step, in float64, with two parameter groups."""

import pytest
import torch

from matcond.optim import make_optimizer

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
