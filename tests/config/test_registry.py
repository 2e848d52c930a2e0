"""Registry lookups, suggestions and duplicate names."""
import pytest

from sparring.config.registry import Registry, RegistryError, import_modules


def test_unknown_name_lists_closest_names():
    reg = Registry('env')
    for name in ('cartpole', 'acrobot', 'pendulum'):
        reg.register(name, type(name, (), {}))
    with pytest.raises(RegistryError) as err:
        reg.get('cartpol')
    message = str(err.value)
    assert "unknown env 'cartpol'" in message
    assert "Did you mean 'cartpole'" in message
    assert 'acrobot, cartpole, pendulum' in message


def test_register_decorator_and_duplicate_clash():
    reg = Registry('policy')

    @reg.register('ppo')
    class A:
        pass

    assert reg.get('ppo') is A and A.registry_name == 'ppo' and 'ppo' in reg
    with pytest.raises(RegistryError, match="already taken"):
        reg.register('ppo', type('B', (), {}))
    replacement = type('C', (), {})
    reg.register('ppo', replacement, force=True)
    assert reg.get('ppo') is replacement


def test_import_modules_errors_name_the_module():
    with pytest.raises(ModuleNotFoundError, match="no_such_module_xyz"):
        import_modules(['no_such_module_xyz'])
    with pytest.raises(TypeError, match='module names'):
        import_modules([3])
