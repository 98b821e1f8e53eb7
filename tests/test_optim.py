"""Our SGD and Adam against torch.optim, step for step, in float64."""

import pytest
import torch

from matcond.optim import make_optimizer

REFERENCE = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}


@pytest.mark.parametrize("name", ["sgd", "adam"])
@pytest.mark.parametrize("weight_decay", [0.0, 0.05])
def test_matches_torch_optim(name, weight_decay):
    gen = torch.Generator().manual_seed(0)
    start = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    ours = torch.nn.Parameter(start.clone())
    theirs = torch.nn.Parameter(start.clone())
    opt_ours = make_optimizer(name, [ours], lr=0.01, weight_decay=weight_decay)
    opt_theirs = REFERENCE[name]([theirs], lr=0.01, weight_decay=weight_decay)
    for _ in range(50):
        x = torch.randn(7, 3, generator=gen, dtype=torch.float64)
        for p in (ours, theirs):
            p.grad = None
            (x @ p.T).sin().square().sum().backward()
        opt_ours.step()
        opt_theirs.step()
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-14)
    assert not torch.equal(ours, start)


def test_unknown_optimizer():
    with pytest.raises(ValueError, match="rmsprop"):
        make_optimizer("rmsprop", [], 0.1, 0.0)
