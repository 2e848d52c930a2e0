"""torch's Adam step run once over flat buffers instead of once per parameter, with the same numbers.

``torch.optim.Adam`` on the CPU (its single-tensor form) loops in Python over the parameters: about ten
tensor operations each, so a 64-64 actor-critic's 13 parameters cost 130 dispatches per step, more than
its backward pass. Adam is element-wise, so the same operations on one flat tensor holding every
parameter (and one for each moment) give every element the same result in one pass (checked bit for bit
in the tests and by the golden runs).

:class:`FlatAdam` keeps the optimiser the source of truth: the parameters become views into one flat
buffer and the optimiser's state tensors views into flat moments, so ``state_dict`` / ``load_state_dict``,
checkpoints, device moves and parameter loading all keep working unchanged. Whenever those links were
broken (a loaded optimiser state, ``state.clear()``, a device move), the next step rebuilds them from the
current values. Anything it does not cover (several parameter groups, other Adam options, a parameter
without a gradient, mixed devices or dtypes) is left to ``optimizer.step()``.
"""
from __future__ import annotations

from typing import List, Optional, cast

import torch

_PLAIN_ADAM = dict(weight_decay=0, amsgrad=False, maximize=False, capturable=False, differentiable=False)


def _step_dtype() -> torch.dtype:
    # what torch.optim.Adam gives a fresh 'step' outside its fused form
    return torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32


class FlatAdam:
    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        self.optimizer = optimizer
        self.params: List[torch.nn.Parameter] = list(optimizer.param_groups[0]['params'])
        self.sizes = [p.numel() for p in self.params]
        self._links: Optional[tuple] = None  # (param data pointers, state objects) the flat buffers back

    def covers(self) -> bool:
        """Whether this optimiser and its parameters' gradients can take the flat step."""
        opt = self.optimizer
        if type(opt) is not torch.optim.Adam or len(opt.param_groups) != 1:
            return False
        group = opt.param_groups[0]
        if any(group.get(k, v) != v for k, v in _PLAIN_ADAM.items()) or group.get('fused') or group.get('foreach'):
            return False
        first = self.params[0]
        return all(p.grad is not None and not p.grad.is_sparse and p.dtype == first.dtype and p.device == first.device
                   for p in self.params)

    def flat_grad(self) -> torch.Tensor:
        grads = cast(List[torch.Tensor], [p.grad for p in self.params])  # all there: called once covers() held
        return torch.cat([g.reshape(-1) for g in grads])

    def views(self, flat: torch.Tensor) -> list:
        """``flat`` cut into tensors shaped like the parameters."""
        return [part.view_as(p) for part, p in zip(flat.split(self.sizes), self.params)]

    @torch.no_grad()
    def step(self, grad: torch.Tensor) -> None:
        """One Adam step with the flat gradient ``grad`` (in the parameters' order)."""
        param, exp_avg, exp_avg_sq, step_t = self._linked()
        group = self.optimizer.param_groups[0]
        beta1, beta2 = group['betas']
        lr, eps = group['lr'], group['eps']
        lr = lr.item() if isinstance(lr, torch.Tensor) else lr
        step_t += 1
        step = step_t.item()
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        param.addcdiv_(exp_avg, denom, value=-step_size)

    # -- the links between the flat buffers and the parameters / optimiser state -----------------
    def _current_links(self) -> tuple:
        """What a broken link changes: the parameters' storage (a device move, a swap), the state mapping
        (``load_state_dict`` replaces it, ``state.clear()`` empties it) and the first parameter's step count."""
        state = self.optimizer.state
        first = state.get(self.params[0]) if len(state) else None
        return (id(state), len(state), id(first.get('step')) if first else None,
                tuple(p.data_ptr() for p in self.params))

    def ready(self) -> bool:
        """Whether the flat buffers back the parameters and the optimiser state now (linked if needed)."""
        if self._links is None or self._current_links() != self._links[0]:
            return self._link()
        return True

    def release(self) -> None:
        """Before ``optimizer.step()`` runs instead: each parameter gets its own step count again (torch
        increments each), and the next flat step links afresh. The moments stay views: updated in place."""
        if self._links is not None:
            state = self.optimizer.state
            for p in self.params:
                if p in state and 'step' in state[p]:
                    state[p]['step'] = state[p]['step'].clone()
            self._links = None

    def _linked(self) -> tuple:
        if not self.ready():
            raise RuntimeError('FlatAdam.step: the optimiser state cannot be linked; check ready() first')
        assert self._links is not None  # ready() linked them
        return self._links[1]

    def _link(self) -> bool:
        """Flat buffers holding the current parameters and moments; parameters and state become their views.
        False (nothing changed) when the parameters' states are not alike: some fresh, or steps that differ."""
        state = self.optimizer.state
        fresh = [p not in state or 'step' not in state[p] for p in self.params]
        if any(fresh) and not all(fresh):
            return False
        if not all(fresh) and len({float(state[p]['step']) for p in self.params}) != 1:
            return False
        param = torch.cat([p.detach().reshape(-1) for p in self.params])
        if all(fresh):
            exp_avg, exp_avg_sq = torch.zeros_like(param), torch.zeros_like(param)
            step_t = torch.tensor(0.0, dtype=_step_dtype())
        else:
            exp_avg = torch.cat([state[p]['exp_avg'].reshape(-1) for p in self.params])
            exp_avg_sq = torch.cat([state[p]['exp_avg_sq'].reshape(-1) for p in self.params])
            step_t = state[self.params[0]]['step'].detach().clone()
        for p, p_view, m_view, v_view in zip(self.params, self.views(param), self.views(exp_avg),
                                             self.views(exp_avg_sq)):
            p.data = p_view
            state[p] = dict(step=step_t, exp_avg=m_view, exp_avg_sq=v_view)  # one step count, shared
        self._links = (self._current_links(), (param, exp_avg, exp_avg_sq, step_t))
        return True
