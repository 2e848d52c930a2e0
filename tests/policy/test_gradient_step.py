"""GradientStep / FlatAdam compute what zero_grad, backward, the finite guard, clip_grad_norm_ and Adam compute."""
import copy

import pytest
import torch

from sparring.policy.gradient_step import GradientStep, all_finite, read_rows


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))


def _cnn():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 4), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(96, 7))


def _inputs(make, step):
    g = torch.Generator().manual_seed(step)
    return torch.randn(32, 4, generator=g) if make is _mlp else torch.randn(16, 3, 6, 7, generator=g)


def _loss(net, make, step, scale=1.0):
    return net(_inputs(make, step)).pow(2).mean() * scale


def _reference_step(net, opt, loss, max_norm):
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if max_norm is not None:
        torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm)
    opt.step()


def _same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b))


def _state_tensors(opt):
    sd = opt.state_dict()
    return [sd['state'][i][k] for i in sorted(sd['state']) for k in ('step', 'exp_avg', 'exp_avg_sq')]


@pytest.mark.parametrize('make', [_mlp, _cnn])
@pytest.mark.parametrize('max_norm', [0.05, None])
def test_the_flat_step_is_bit_for_bit_torchs_adam(make, max_norm):
    ref_net = make()
    net = copy.deepcopy(ref_net)
    ref_opt = torch.optim.Adam(ref_net.parameters(), lr=1e-2, eps=1e-5)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2, eps=1e-5)
    stepper = GradientStep(net.parameters(), opt, max_norm)
    assert stepper.flat is not None
    for step in range(12):
        for group in ref_opt.param_groups + opt.param_groups:
            group['lr'] = 1e-2 * (1 - step / 12)
        scale = 100.0 if step % 5 == 0 else 1.0  # some steps clipped, some not
        _reference_step(ref_net, ref_opt, _loss(ref_net, make, step, scale), max_norm)
        assert stepper.step(_loss(net, make, step, scale))
        assert _same(ref_net.parameters(), net.parameters())
    assert _same(_state_tensors(ref_opt), _state_tensors(opt))


def test_loaded_cleared_and_partial_states_are_linked_again():
    ref_net, make = _mlp(), _mlp
    net = copy.deepcopy(ref_net)
    ref_opt = torch.optim.Adam(ref_net.parameters(), lr=1e-2)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    stepper = GradientStep(net.parameters(), opt, 0.5)
    for step in range(3):
        _reference_step(ref_net, ref_opt, _loss(ref_net, make, step), 0.5)
        stepper.step(_loss(net, make, step))
    # A checkpoint written now and loaded into a fresh optimiser continues identically.
    saved = copy.deepcopy(opt.state_dict())
    opt.load_state_dict(saved)
    for step in range(3, 5):
        _reference_step(ref_net, ref_opt, _loss(ref_net, make, step), 0.5)
        stepper.step(_loss(net, make, step))
    assert _same(ref_net.parameters(), net.parameters())
    # A loss that leaves a parameter without a gradient takes torch's own step (that parameter untouched).
    head_only = lambda n, s: n[2](torch.tanh(n[0](_inputs(make, s)).detach())).pow(2).mean()  # noqa: E731
    _reference_step(ref_net, ref_opt, head_only(ref_net, 5), 0.5)
    stepper.step(head_only(net, 5))
    assert _same(ref_net.parameters(), net.parameters())
    assert _same(_state_tensors(ref_opt), _state_tensors(opt))
    # Steps now differ between parameters: torch's step again, and the same numbers.
    _reference_step(ref_net, ref_opt, _loss(ref_net, make, 6), 0.5)
    stepper.step(_loss(net, make, 6))
    assert _same(ref_net.parameters(), net.parameters())
    # A reset optimiser starts afresh on both sides.
    ref_opt.state.clear()
    opt.state.clear()
    for step in range(7, 9):
        _reference_step(ref_net, ref_opt, _loss(ref_net, make, step), 0.5)
        stepper.step(_loss(net, make, step))
    assert _same(ref_net.parameters(), net.parameters())
    assert _same(_state_tensors(ref_opt), _state_tensors(opt))


def test_a_loss_or_gradient_that_is_not_finite_is_refused():
    net = _mlp()
    before = [p.detach().clone() for p in net.parameters()]
    stepper = GradientStep(net.parameters(), torch.optim.Adam(net.parameters()), 0.5)
    assert not stepper.step(_loss(net, _mlp, 0, scale=float('inf')))
    assert _same(before, net.parameters())
    assert all(p.grad is None for p in net.parameters())
    assert not all_finite(torch.tensor(1.0), [torch.ones(2), torch.tensor([0.0, float('nan')])])
    assert all_finite(torch.tensor(1.0), [torch.ones(2), torch.zeros(3)])


def test_other_optimisers_and_subsets_take_torchs_own_step():
    net = _mlp()
    assert GradientStep(net.parameters(), torch.optim.SGD(net.parameters(), lr=0.1), None).flat is not None
    sgd = GradientStep(net.parameters(), torch.optim.SGD(net.parameters(), lr=0.1), None)
    assert not sgd.flat.covers()
    assert GradientStep(net.parameters(), torch.optim.Adam(list(net.parameters())[:2]), None).flat is None


def test_read_rows_reads_figures_once_with_zeros_for_refused_steps():
    rows = [torch.tensor([1.0, 2.0], dtype=torch.float64), None, torch.tensor([0.5, 0.25], dtype=torch.float64)]
    assert read_rows(rows, 2) == [[1.0, 2.0], [0.0, 0.0], [0.5, 0.25]]
    assert read_rows([None], 3) == [[0.0, 0.0, 0.0]]
