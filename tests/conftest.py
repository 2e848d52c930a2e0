"""Fixtures shared by every test folder."""
import pytest
import torch


@pytest.fixture
def one_torch_thread():
    """Tiny networks run far faster with one intra-op thread on a shared machine (see DESIGN)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
